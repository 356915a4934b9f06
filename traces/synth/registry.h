// Registry of workload synthesizers: each kind (gemm, later attention, norms, ...) registers its name, what it
// generates, the keys it takes (declared as config parameters are: name, type, unit, default, range,
// description) and a factory. `warpsim synth KIND --key value` and `warpsim run --synth KIND` look kinds up
// here, so a new synthesizer is one file with one WARPSIM_REGISTER_SYNTHESIZER.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/schema.h"
#include "sim/trace/source.h"

namespace warpsim {

class Config;

// The validated keys of one synthesizer call: every declared key is present (given, or its default).
class SynthArgs {
 public:
  SynthArgs(std::string kind, std::map<std::string, std::string> values, std::map<std::string, double> numbers)
      : kind_(std::move(kind)), values_(std::move(values)), numbers_(std::move(numbers)) {}
  const std::string& kind() const noexcept { return kind_; }
  // The value as written (a Choice or String key, or any key for messages).
  const std::string& text(const std::string& key) const;
  // A numeric key (UInt, Real, Size, ...) in base units.
  double number(const std::string& key) const;
  std::uint64_t u64(const std::string& key) const { return static_cast<std::uint64_t>(number(key)); }

 private:
  std::string kind_;
  std::map<std::string, std::string> values_;
  std::map<std::string, double> numbers_;
};

// The target GPU is passed as its Config so that a synthesizer can fit its kernel to the architecture and the
// SM's resource limits.
using SynthFactory = std::function<std::unique_ptr<TraceSource>(const SynthArgs&, const Config&)>;

// What a simulation measured of a synthesized workload, for the results a microbenchmark defines beyond the
// kernel fields of stats.json (a pointer chase's latency per load, a stream's bandwidth). Sums over the
// workload's kernels. Kept to plain numbers: workloads do not see the hardware models.
struct WorkloadTiming {
  std::uint64_t cycles = 0;   // SM clock cycles, summed over kernels
  double time_us = 0.0;       // summed over kernels
  double sm_clock_hz = 0.0;   // the config's SM clock
  std::uint32_t sm_count = 0; // SMs of the config
};

// A result a synthesizer derives from WorkloadTiming: declared with its unit, as parameters are, so that
// `warpsim synth --help`, `validate` and `calibrate` can list and check metric names.
struct SynthMetric {
  std::string name;         // e.g. "latency_cycles", "bandwidth_gbps"
  std::string unit;         // e.g. "cycles", "GB/s"
  std::string description;
};

using SynthMetricFn =
    std::function<std::map<std::string, double>(const SynthArgs&, const Config&, const WorkloadTiming&)>;

struct SynthesizerInfo {
  std::string name;         // the KIND on the command line
  std::string description;  // one line: what the kernel is
  std::vector<ParamSpec> keys;
  SynthFactory factory;
  // Microbenchmarks only: the results they define and how they follow from the timing. `derive` returns one
  // value per entry of `metrics`, by name. Empty for ordinary kernels, whose results are stats.json's.
  std::vector<SynthMetric> metrics;
  SynthMetricFn derive;
};

class SynthRegistry {
 public:
  static SynthRegistry& instance();

  void add(SynthesizerInfo info);  // asserts that the name is new
  const SynthesizerInfo* find(const std::string& kind) const;
  // The registered kind, or InputError naming `kind` with a did-you-mean (or the known kinds).
  const SynthesizerInfo& get(const std::string& kind) const;
  std::vector<std::string> kinds() const;  // sorted

  // Checks `given` (key -> text) against the kind's keys: unknown keys (with a did-you-mean), missing required
  // keys, wrong types, out-of-range values and choices each throw InputError naming "KIND KEY". Fills defaults.
  SynthArgs validate(const std::string& kind, const std::map<std::string, std::string>& given) const;
  // validate(), then the kind's factory.
  std::unique_ptr<TraceSource> make(const std::string& kind, const std::map<std::string, std::string>& given,
                                    const Config& config) const;

 private:
  std::map<std::string, SynthesizerInfo> kinds_;
};

// Whether the GPU config has a TMA unit (async_copy.issue_bytes_per_cycle and max_outstanding > 0), which the sm_90
// kernels' main loops (the GEMM's tma loop, FlashAttention-3) need.
bool gpu_has_tma(const Config& config);
// Whether gpu.arch runs the sm_90 kernels (warpgroup MMA, TMA, clusters): sm_90, and sm_100 (which runs them for now).
bool is_hopper_arch(const std::string& arch);

namespace detail {
struct SynthRegistration {
  explicit SynthRegistration(SynthesizerInfo info) { SynthRegistry::instance().add(std::move(info)); }
};
}  // namespace detail

// At namespace scope in the synthesizer's own file: WARPSIM_REGISTER_SYNTHESIZER(gemm, make_gemm_info());
#define WARPSIM_REGISTER_SYNTHESIZER(id, info_expr) \
  static const ::warpsim::detail::SynthRegistration warpsim_synth_registration_##id{info_expr}

}  // namespace warpsim
