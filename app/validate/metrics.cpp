#include "app/validate/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "sim/core/error.h"

namespace warpsim {
namespace {

using Aggregate = std::function<std::optional<double>(const std::vector<KernelResult>&)>;

struct KernelMetric {
  const char* name;
  const char* unit;
  Aggregate value;  // nullopt: the run has no such figure
};

template <typename Field>
double sum(const std::vector<KernelResult>& ks, Field field) {
  double total = 0;
  for (const KernelResult& k : ks) total += static_cast<double>(field(k));
  return total;
}

// Hit rates and occupancies do not add up over kernels: the kernel that takes most of the time stands for them.
template <typename Field>
Aggregate of_longest(Field field) {
  return [field](const std::vector<KernelResult>& ks) -> std::optional<double> {
    if (ks.empty()) return std::nullopt;
    const auto longest = std::max_element(ks.begin(), ks.end(), [](const KernelResult& a, const KernelResult& b) {
      return a.cycles < b.cycles;
    });
    return static_cast<double>(field(*longest));
  };
}

// A speed-of-light fraction of the whole workload: the run's speed of light as the simulator itself reports it
// (run_speed_of_light: each kernel's fraction weighted by its cycles, a unit a kernel lacks counting as idle
// there), so that validate and stats.json cannot disagree on a multi-kernel workload.
template <typename Unit>
Aggregate run_sol(Unit unit) {
  return [unit](const std::vector<KernelResult>& ks) -> std::optional<double> {
    std::vector<KernelSol> sols;
    sols.reserve(ks.size());
    for (const KernelResult& k : ks) sols.push_back(KernelSol{&k.speed_of_light, k.cycles, &k.stalls});
    if (sols.empty()) return std::nullopt;
    const SpeedOfLight run = run_speed_of_light(sols);
    const SolUnit* u = unit(run);
    if (!u) return std::nullopt;
    return u->fraction;
  };
}

template <typename Field>
Aggregate summed(Field field) {
  return [field](const std::vector<KernelResult>& ks) -> std::optional<double> {
    if (ks.empty()) return std::nullopt;
    return sum(ks, field);
  };
}

const std::vector<KernelMetric>& kernel_metrics() {
  static const std::vector<KernelMetric> metrics = {
      {"time_us", "us", summed([](const KernelResult& k) { return k.time_us; })},
      {"cycles", "cycles", summed([](const KernelResult& k) { return k.cycles; })},
      {"warp_instructions", "instructions", summed([](const KernelResult& k) { return k.warp_instructions; })},
      {"thread_instructions", "instructions", summed([](const KernelResult& k) { return k.thread_instructions; })},
      {"flops", "FLOP", summed([](const KernelResult& k) { return k.flops; })},
      {"dram_bytes_read", "B", summed([](const KernelResult& k) { return k.dram_bytes_read; })},
      {"dram_bytes_written", "B", summed([](const KernelResult& k) { return k.dram_bytes_written; })},
      // Rates of the whole workload: totals over total time (cycles), as a profiler timing the sequence reports.
      {"achieved_tflops", "TFLOP/s",
       [](const std::vector<KernelResult>& ks) -> std::optional<double> {
         double flops = 0, time_us = sum(ks, [](const KernelResult& k) { return k.time_us; });
         bool matrix_math = false;
         for (const KernelResult& k : ks)
           if (k.achieved_tflops) {
             matrix_math = true;
             flops += static_cast<double>(k.flops);
           }
         if (!matrix_math || time_us <= 0) return std::nullopt;
         return flops / (time_us * 1e-6) / 1e12;
       }},
      {"achieved_dram_gbps", "GB/s",
       [](const std::vector<KernelResult>& ks) -> std::optional<double> {
         const double bytes = sum(ks, [](const KernelResult& k) { return k.dram_bytes_read + k.dram_bytes_written; });
         const double time_us = sum(ks, [](const KernelResult& k) { return k.time_us; });
         if (ks.empty() || time_us <= 0) return std::nullopt;
         return bytes / (time_us * 1e-6) / 1e9;
       }},
      // Warp-instructions per SM per cycle of the whole workload: each kernel's IPC weighted by its cycles.
      {"ipc", "warp-instructions/cycle/SM",
       [](const std::vector<KernelResult>& ks) -> std::optional<double> {
         const double cycles = sum(ks, [](const KernelResult& k) { return k.cycles; });
         if (ks.empty() || cycles <= 0) return std::nullopt;
         return sum(ks, [](const KernelResult& k) { return k.ipc * static_cast<double>(k.cycles); }) / cycles;
       }},
      {"occupancy", "fraction", of_longest([](const KernelResult& k) { return k.occupancy; })},
      {"theoretical_occupancy", "fraction", of_longest([](const KernelResult& k) { return k.theoretical_occupancy; })},
      {"l1_hit_rate", "fraction", of_longest([](const KernelResult& k) { return k.l1_hit_rate; })},
      {"l2_hit_rate", "fraction", of_longest([](const KernelResult& k) { return k.l2_hit_rate; })},
      // Speed of light (stats.json `speed_of_light`): why a kernel runs at its speed, unit by unit.
      {"compute_throughput", "fraction", run_sol([](const SpeedOfLight& s) { return s.compute(); })},
      {"memory_throughput", "fraction", run_sol([](const SpeedOfLight& s) { return s.memory(); })},
      {"tensor_pipe_utilization", "fraction", run_sol([](const SpeedOfLight& s) { return s.find("tensor"); })},
      {"l2_throughput", "fraction", run_sol([](const SpeedOfLight& s) { return s.find("lts"); })},
      {"dram_throughput", "fraction", run_sol([](const SpeedOfLight& s) { return s.find("dram"); })},
  };
  return metrics;
}

// The results of a serving simulation (issue: LLM inference), named now so that reference files can carry them.
const std::vector<MetricInfo>& llm_metrics() {
  static const std::vector<MetricInfo> metrics = {
      {"ttft_ms", "ms", MetricSource::Llm},
      {"ms_per_token", "ms", MetricSource::Llm},
      {"tokens_per_s", "tokens/s", MetricSource::Llm},
  };
  return metrics;
}

// The metrics synthesizers declare: of `kind` when it is registered, else of every registered kind.
std::vector<MetricInfo> synthesizer_metrics(const std::string& kind) {
  const SynthRegistry& synths = SynthRegistry::instance();
  std::vector<MetricInfo> out;
  auto add = [&](const SynthesizerInfo& info) {
    for (const SynthMetric& m : info.metrics) out.push_back({m.name, m.unit, MetricSource::Synthesizer});
  };
  if (const SynthesizerInfo* info = synths.find(kind)) {
    add(*info);
  } else {
    for (const std::string& k : synths.kinds()) add(*synths.find(k));
  }
  return out;
}

std::vector<MetricInfo> all_metrics(const std::string& kind) {
  std::vector<MetricInfo> out;
  for (const KernelMetric& m : kernel_metrics()) out.push_back({m.name, m.unit, MetricSource::Kernel});
  for (MetricInfo& m : synthesizer_metrics(kind)) out.push_back(std::move(m));
  for (const MetricInfo& m : llm_metrics()) out.push_back(m);
  return out;
}

}  // namespace

std::optional<MetricInfo> find_metric(const std::string& kind, const std::string& name) {
  for (MetricInfo& m : all_metrics(kind))
    if (m.name == name) return std::move(m);
  return std::nullopt;
}

std::vector<std::string> metric_names(const std::string& kind) {
  std::vector<std::string> names;
  for (const MetricInfo& m : all_metrics(kind))
    if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
  return names;
}

double kernel_metric(const RunResult& result, const std::string& name) {
  for (const KernelMetric& m : kernel_metrics()) {
    if (name != m.name) continue;
    if (const std::optional<double> v = m.value(result.kernels)) return *v;
    throw InputError(result.kernels.empty() ? fmt::format("{}: the workload ran no kernel", name)
                                            : fmt::format("{}: no kernel of the workload does matrix math", name));
  }
  throw InputError(fmt::format("'{}' is not a kernel metric", name));
}

}  // namespace warpsim
