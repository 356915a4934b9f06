// Simulating validation cases: each case of a reference file runs as `warpsim run` would run it (run_one's
// prepare_run + simulate, the plain driver, no progress lines), and its metric is read from the results
// (app/validate/metrics.h). `validate`, `calibrate` (trial overrides) and importers of measurements (Nsight
// Compute) share this entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "app/validate/reference.h"

namespace warpsim {

class WorkloadCache;

enum class CaseStatus {
  Ok,           // simulated: `simulated` and `error_pct` hold
  Unsupported,  // the workload kind is not built yet, or the metric is not simulated yet (LLM): `reason` says
  Failed,       // the synthesizer or the simulation refused the input, or the worker died: `reason` is the error
  Skipped,      // not simulated in this run: over ValidateOptions::max_warp_instructions (`reason` says by how much)
};
const char* status_name(CaseStatus status);  // "ok", "unsupported", "failed", "skipped"

struct CaseResult {
  ReferenceCase reference;
  CaseStatus status = CaseStatus::Failed;
  double simulated = 0;  // Ok only, in the metric's unit
  double error_pct = 0;  // Ok only: (simulated - measured) / measured * 100, signed
  std::string unit;      // the metric's unit ("us", "TFLOP/s", ...)
  std::string reason;    // Unsupported and Failed: why
};

struct ValidateOptions {
  // Applied to every case before its own `set:`, which wins (calibrate's fitted values), "section.key=value" as --set.
  std::vector<std::string> extra_overrides;
  // 1: the cases run in this process, one after another. N > 1: in up to N worker processes at a time, each
  // case in its own (fork), its result sent back as JSON through a pipe; a worker that crashes or is killed
  // makes its case Failed with the signal or exit status as reason. The results are the same either way.
  unsigned jobs = 1;
  std::uint64_t max_memory_bytes = 0;  // per simulation, as --max-memory; 0: default_memory_limit()
  // Cases whose workload is estimated (estimate_warp_instructions) above this many warp-instructions are Skipped
  // instead of simulated, so that a report fits a time budget; 0: no limit.
  std::uint64_t max_warp_instructions = 0;
  // Simulations go through this cache (app/workload_cache.h) when set: a workload already simulated on the same
  // resolved config, in this run or (with a cache directory) an earlier one, is read back instead. Worker
  // processes share only its directory.
  WorkloadCache* cache = nullptr;
  // Told before each case starts (with its index) and when it is finished, in this process, e.g. to log progress.
  std::function<void(std::size_t index, const ReferenceCase&)> on_start;
  std::function<void(std::size_t index, const CaseResult&)> on_finish;
  // Called where the case runs (in the worker when jobs > 1) just before it simulates; for tests of worker deaths.
  std::function<void(const ReferenceCase&)> before_simulation;
};

// Runs one case here. Never throws for the case's own problems: they make it Failed or Unsupported.
CaseResult run_case(const ReferenceCase& reference, const ValidateOptions& options);

// Runs every case; the results are in the order of `cases`.
std::vector<CaseResult> run_cases(const std::vector<ReferenceCase>& cases, const ValidateOptions& options);

}  // namespace warpsim
