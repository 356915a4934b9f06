// The microbenchmark results of a run (SynthesizerInfo::metrics, traces/synth/registry.h): the simulated timing
// summed over the workload's kernels, handed to the synthesizer's derive function.
#pragma once

#include <string>
#include <vector>

#include "app/run_one.h"
#include "traces/synth/registry.h"

namespace warpsim {

struct SynthMetricValue {
  SynthMetric metric;
  double value = 0.0;
};

// cycles and time_us summed over kernels, the SM clock and SM count of the run's config.
WorkloadTiming workload_timing(const RunOutcome& run);

// The declared metrics of the run's synthesizer in declaration order; empty for a trace file or a synthesizer
// that declares none. `workload` is the one the run simulated.
std::vector<SynthMetricValue> synth_metrics(const WorkloadSpec& workload, const RunOutcome& run);

}  // namespace warpsim
