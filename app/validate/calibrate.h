// `warpsim calibrate`: config values proposed from measured microbenchmark figures. Each reference case that
// names a parameter in `tunes:` is a measurement that parameter determines; the value that makes the simulated
// figure equal the measured one is searched for (secant steps, bracketing once the root is straddled), per case,
// and the parameter's proposal is the median over its cases. Nothing is per-parameter: any numeric parameter of
// the config can be tuned by any metric that depends on it monotonically.
//
// Parameters are fitted one after another, in the order they first appear among the cases, each with the values
// already fitted applied: path latencies add up (an L2 hit = L1 + NoC + L2), so a file lists the L1 cases before
// the L2 ones before the DRAM ones, and the L2 fit then sees the fitted L1 latency.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/validate/runner.h"
#include "sim/config/schema.h"

namespace warpsim {

// How one tuned case came out.
struct CaseFit {
  ReferenceCase reference;  // reference.tunes is the parameter
  bool used = false;        // converged: its fitted value enters the parameter's median
  std::optional<double> fitted;            // the value where simulated = measured (used cases)
  std::optional<double> before, after;     // simulated with the config as it is / with every proposal applied
  std::string unit;                        // the metric's unit
  int simulations = 0;                     // points of the search (the first may be the "before" run)
  std::string reason;                      // why it is not used
};

struct ParameterProposal {
  std::string name;  // "section.key"
  ParamType type = ParamType::UInt;
  double old_value = 0, new_value = 0;    // base units
  std::vector<std::size_t> cases;         // indices into CalibrationResult::fits of the used cases
};

struct CalibrationResult {
  std::string gpu;                         // as given (--gpu)
  std::vector<CaseFit> fits;               // the cases with `tunes:`, in file order
  std::vector<ReferenceCase> untuned;      // selected cases without `tunes:`: not used
  std::vector<ParameterProposal> proposals;  // in fitting order; parameters none of whose cases was usable: absent
  std::optional<double> mape_before_pct, mape_after_pct;  // over the used cases
};

struct CalibrationOptions {
  unsigned jobs = 1;                   // worker processes for the cases of one parameter, as validate's -j
  std::uint64_t max_memory_bytes = 0;  // per simulation, as --max-memory
  int max_simulations_per_case = 8;    // the search's budget for one case
  std::function<void(const std::string& message)> on_progress;  // e.g. to log "fitting l1.hit_latency ..."
};

// Checks that every `tunes:` names a numeric parameter of `gpu`'s resolved config (InputError "FILE:LINE: case
// ID: tunes: ..." otherwise) and fits. `cases` are the selected cases (all on `gpu`).
CalibrationResult calibrate(const std::vector<ReferenceCase>& cases, const std::string& gpu,
                            const CalibrationOptions& options);

// The per-case table, the proposed changes, the MAPE before and after.
std::string calibration_table(const CalibrationResult& result);
// The same as JSON: {"gpu", "cases": [...], "not_used": [...], "proposals": [...], "mape_before_pct", "mape_after_pct"}
std::string calibration_json(const CalibrationResult& result);
// A config overlay: `base:` the calibrated config, then one line per changed parameter, its old value and the
// cases it was fitted to in a comment. `header` lines are written first as comments; `base` is what `base:` says.
std::string calibration_overlay(const CalibrationResult& result, const std::vector<std::string>& header,
                                const std::string& base);

}  // namespace warpsim
