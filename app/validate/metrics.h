// The metrics a validation case compares: where each comes from, its unit, and its value from a simulation.
//   - kernel metrics: numeric per-kernel fields of stats.json, over the whole workload (time_us, cycles and the
//     counts are summed over its kernels; rates are the totals' ratios; hit rates and occupancies are the
//     longest kernel's);
//   - microbenchmark metrics: those a synthesizer declares (SynthesizerInfo::metrics) and derives from the
//     simulated timing (latency_cycles, bandwidth_gbps, ...);
//   - LLM metrics (ttft_ms, ms_per_token, tokens_per_s): known names, not simulated yet.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/config/config.h"
#include "traces/synth/registry.h"

namespace warpsim {

enum class MetricSource { Kernel, Synthesizer, Llm };

struct MetricInfo {
  std::string name, unit;
  MetricSource source = MetricSource::Kernel;
};

// The metric `name` for a workload of `kind`; nullopt when it is none of the kernel metrics, the LLM metrics,
// or the metrics `kind` declares. For a kind that is not registered, any registered kind's declared metric is
// known (the case will be unsupported anyway; a misspelt name is still caught).
std::optional<MetricInfo> find_metric(const std::string& kind, const std::string& name);

// Every metric name find_metric accepts for `kind` (for messages and did-you-mean).
std::vector<std::string> metric_names(const std::string& kind);

// A kernel metric over the whole run. Throws InputError when the run has no such figure (achieved_tflops of a
// workload without matrix math; any metric of a run without kernels).
double kernel_metric(const RunResult& result, const std::string& name);

}  // namespace warpsim
