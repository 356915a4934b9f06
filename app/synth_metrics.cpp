#include "app/synth_metrics.h"

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
  const auto values = info.derive(args, run.config, workload_timing(run));
  for (const SynthMetric& m : info.metrics) {
    const auto it = values.find(m.name);
    WARPSIM_ASSERT(it != values.end(), "synthesizer '" + info.name + "' did not derive its metric '" + m.name + "'");
    out.push_back(SynthMetricValue{m, it->second});
  }
  return out;
}

}  // namespace warpsim
