// One inference step of an LLM on one GPU: the plan's kernels simulated (each distinct workload once, through
// WorkloadCache), the estimates' roofline times, the communication estimates, laid out on one stream with the
// config's launch interval (launch.mode), and the results: TTFT or time per output token, the per-kernel and
// per-layer tables with simulated beside roofline time, and the report files (stats.json with an `llm` section,
// stats.csv, timeline.json).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "app/workload_cache.h"

namespace warpsim::llm {

// The hardware figures the roofline and the estimates use, all from the resolved config.
struct Peaks {
  double hbm_bytes_per_s = 0.0;     // hbm.bandwidth
  double alu_flops_per_s = 0.0;     // sm.count x fp32 lanes (subpartitions x 32 / pipes.fp32.issue_interval) x 2 x clocks.sm
  double sm_clock_hz = 0.0;         // clocks.sm
  double launch_us_per_kernel = 0.0;  // launch.graph_us_per_kernel or eager_us_per_kernel, as launch.mode says
  std::string launch_mode;
  double link_bytes_per_s = 0.0, collective_base_us = 0.0, link_hop_us = 0.0;  // node.*
  // sm.count x sm.tensor.flops_per_cycle.<dtype> x clocks.sm; InputError when the config has no such rate.
  double tensor_flops_per_s(const std::string& dtype) const;
  std::map<std::string, double> tensor_flops_per_cycle_per_sm;  // sm.tensor.flops_per_cycle.*
  double sm_count = 0.0;
  std::string gpu;
};
Peaks peaks_of(const Config& config);

// Roofline time of one call of a plan entry (max of compute and memory time; communication: the ring estimate),
// and which side bounds it ("compute", "memory", "communication").
struct Roofline {
  double us = 0.0;
  std::string bound;
};
Roofline roofline(const PlanEntry& e, const Peaks& peaks, std::uint64_t tp);

// One kernel on the step's stream, in order.
struct StepKernel {
  std::size_t entry = 0;       // index into the plan
  std::string name;
  double start_us = 0.0, time_us = 0.0, launch_wait_us = 0.0;
  const KernelResult* simulated = nullptr;  // into LlmResult::workloads; null for estimates and communication
};

struct LlmResult {
  RunResult run;                   // the step as one run of its simulated and estimated kernels (report writers)
  std::vector<StepKernel> stream;  // every kernel, communication included
  std::map<std::string, RunResult> workloads;  // the distinct simulated workloads' results, by cache key
  double step_us = 0.0, simulated_us = 0.0, estimated_us = 0.0, communication_us = 0.0, launch_wait_us = 0.0;
  double roofline_step_us = 0.0;
  // Of simulated_us, the time of kernels sampled by CTA waves (sim.sample = waves): extrapolated, an estimate.
  double sampled_us = 0.0;
  std::size_t sampled_workloads = 0;  // distinct simulated workloads with at least one sampled kernel
  std::string sample_mode;            // the config's sim.sample
  std::vector<double> entry_us;    // per plan entry: simulated (or estimated) time of all its calls
  std::vector<Roofline> entry_roofline;  // per plan entry: one call
  std::size_t distinct_workloads = 0;  // distinct simulated workloads of the plan
  std::size_t simulated_calls = 0;     // calls of simulated entries (each a lookup of its distinct workload)
  Peaks peaks;
  WorkloadCache::Counts cache;
  double wall_s = 0.0;
};

// Simulates the plan on `base`'s GPU config (gpu, overrides, driver, max_memory; its workload is ignored).
LlmResult run_llm(const LlmModel& model, const Scenario& scenario, const std::vector<PlanEntry>& plan,
                  const RunSpec& base, WorkloadCache& cache);

std::string llm_stats_json(const LlmModel& model, const Scenario& scenario, const std::vector<PlanEntry>& plan,
                           const LlmResult& r, const std::string& cache_dir);
std::string llm_stats_csv(const LlmResult& r);
std::string llm_timeline(const std::vector<PlanEntry>& plan, const LlmResult& r);
std::string llm_summary(const LlmModel& model, const Scenario& scenario, const std::vector<PlanEntry>& plan,
                        const LlmResult& r);

}  // namespace warpsim::llm
