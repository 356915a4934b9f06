#include "app/synth_metrics.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/core/error.h"

namespace warpsim {

WorkloadTiming workload_timing(const RunOutcome& run) {
  WorkloadTiming t;
  for (const KernelResult& k : run.result.kernels) {
    t.cycles += k.cycles;
    t.time_us += k.time_us;
  }
  t.sm_clock_hz = run.result.sm_clock_hz;
  t.sm_count = run.config.section("sm").u32("count");
  return t;
}

std::vector<SynthMetricValue> synth_metrics(const WorkloadSpec& workload, const RunOutcome& run) {
  std::vector<SynthMetricValue> out;
  if (workload.synthesizer.empty()) return out;
  const SynthRegistry& synths = SynthRegistry::instance();
  const SynthesizerInfo& info = synths.get(workload.synthesizer);
  if (info.metrics.empty()) return out;
  const SynthArgs args = synths.validate(workload.synthesizer, workload.synth_keys);
  const WorkloadTiming timing = workload_timing(run);
  // Every derived result is a rate or a time per operation: without simulated time there is none (not 0).
  if (timing.cycles == 0 || !(timing.time_us > 0) || !(timing.sm_clock_hz > 0))
    throw SimulationError(fmt::format("the {} workload took no simulated time: none of its results can be derived",
                                      info.name));
  const auto values = info.derive(args, run.config, timing);
  for (const SynthMetric& m : info.metrics) {
    const auto it = values.find(m.name);
    WARPSIM_ASSERT(it != values.end(), "synthesizer '" + info.name + "' did not derive its metric '" + m.name + "'");
    if (!std::isfinite(it->second))
      throw SimulationError(fmt::format("the {} synthesizer derived {} = {} (not a number)", info.name, m.name, it->second));
    out.push_back(SynthMetricValue{m, it->second});
  }
  return out;
}

}  // namespace warpsim
