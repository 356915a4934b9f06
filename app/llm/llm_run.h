// One inference step of an LLM on one GPU: the plan's kernels simulated (each distinct workload once, through
// WorkloadCache), the estimates' roofline times, the communication estimates, laid out on one stream with the
// config's launch interval (launch.mode), and the results: TTFT or time per output token, the per-kernel and
// per-layer tables with simulated beside roofline time, and the report files (stats.json with an `llm` section,
// stats.csv, timeline.json).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "app/workload_cache.h"
#include "models/node/collective.h"

namespace warpsim::llm {

// The hardware figures the roofline and the estimates use, all from the resolved config.
struct Peaks {
  double hbm_bytes_per_s = 0.0;     // hbm.bandwidth
  double hbm_capacity_bytes = 0.0;  // hbm.capacity
  double alu_flops_per_s = 0.0;     // sm.count x fp32 lanes (subpartitions x 32 / pipes.fp32.issue_interval) x 2 x clocks.sm
  double sm_clock_hz = 0.0;         // clocks.sm
  double launch_us_per_kernel = 0.0;  // launch.graph_us_per_kernel or eager_us_per_kernel, as launch.mode says
  std::string launch_mode;
  CollectiveParams collectives;     // node.*: the collective model's figures (models/node/collective.h)
  double idle_w = 0.0;              // the GPU's power with nothing to do at clocks.sm (power.*), 0 without power.enabled
  // sm.count x sm.tensor.flops_per_cycle.<dtype> x clocks.sm; InputError when the config has no such rate.
  double tensor_flops_per_s(const std::string& dtype) const;
  std::map<std::string, double> tensor_flops_per_cycle_per_sm;  // sm.tensor.flops_per_cycle.*
  double sm_count = 0.0;
  std::string gpu;
};
Peaks peaks_of(const Config& config);

// Roofline time of one call of a plan entry (max of compute and memory time; communication: the collective
// model's estimate, models/node/collective.h), and which side bounds it ("compute", "memory", "communication").
struct Roofline {
  double us = 0.0;
  std::string bound;
  std::optional<CollectiveEstimate> collective;  // communication entries: the algorithm and protocol chosen, link bytes
};
Roofline roofline(const PlanEntry& e, const Peaks& peaks);

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
  double nvlink_j = 0.0;           // link energy of the step's collectives (node.link_energy_per_bit)
  // Of simulated_us, the time of kernels sampled by CTA waves or rounds (sim.sample = waves): extrapolated, an estimate.
  double sampled_us = 0.0;
  std::size_t sampled_workloads = 0;  // distinct simulated workloads with at least one sampled kernel
  std::string sample_mode;            // the config's sim.sample
  unsigned subset_divisor = 1;        // the config's sim.subset (SM subsetting: every kernel an estimate)
  std::vector<double> entry_us;    // per plan entry: simulated (or estimated) time of all its calls
  std::vector<Roofline> entry_roofline;  // per plan entry: one call
  std::size_t distinct_workloads = 0;  // distinct simulated workloads of the plan
  std::size_t simulated_calls = 0;     // calls of simulated entries (each a lookup of its distinct workload)
  Peaks peaks;                     // at the step's SM clock
  // How the step's SM clock was decided: "configured" (clocks.sm), "pinned" (--set clocks.sm), "boost" (one clock
  // for the whole step under power.cap, app/boost_clock.h; step_clock_search lists (Hz, W) of each step simulated).
  std::string clock_policy;
  double step_clock_hz = 0.0;
  std::vector<std::pair<double, double>> step_clock_search;
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
// The step's collectives (layer 0 and outside the layers), each with the algorithm and protocol the model chose
// and the candidates' times; empty without communication. InputError when the config cannot estimate them.
std::string collectives_text(const std::vector<PlanEntry>& plan, const Peaks& peaks);

std::string llm_summary(const LlmModel& model, const Scenario& scenario, const std::vector<PlanEntry>& plan,
                        const LlmResult& r);

}  // namespace warpsim::llm
