// `warpsim sweep pareto RUN_DIR...`: per workload, each candidate's cost (a design-point parameter such as
// sm.count, or a power column of the energy model) against a metric (by default the job's time), and which
// candidates are on the Pareto frontier: no other candidate is at least as good on both and better on one. Equal
// points dominate neither (both stay on the frontier). Lower cost is better; so is a lower metric, unless the metric
// is a rate (higher_is_better: llm.tokens_per_s, achieved TFLOP/s, a hit rate, ...).
#pragma once

#include <string>
#include <vector>

#include "app/sweep/results.h"

namespace warpsim::sweep {

inline constexpr const char* kDefaultParetoCost = "job_energy_j";
inline constexpr const char* kDefaultParetoMetric = "job_total_time_us";

struct ParetoPoint {
  std::string candidate;  // "<run dir name>/<candidate>" when several run directories are compared
  std::string job, run_dir;
  double cost = 0, metric = 0;
  bool on_frontier = true;
  std::string dominated_by;  // the first dominating candidate in the table's order
};

struct ParetoWorkload {
  std::string workload;
  std::vector<ParetoPoint> points;  // by cost, then metric, then candidate
};

// Whether a larger value of `column` is the better one: rates and efficiencies, by name (ending in per_s,
// per_s_per_gpu, tflops, gbps, flops_per_j, hit_rate, ipc or occupancy). Times, energies and costs: lower is better.
bool higher_is_better(const std::string& column);

struct ParetoResult {
  std::string cost, metric;
  bool metric_higher_is_better = false;
  std::vector<ParetoWorkload> workloads;  // first-seen order over the runs
  std::size_t jobs_without_results = 0;
};

// InputError (exit 2) for an unknown column (listing the known ones), a value that is not a number, or no job with
// results in any run directory.
ParetoResult pareto(const std::vector<RunResults>& runs, const std::string& cost, const std::string& metric);

std::string pareto_table(const ParetoResult& r);
std::string pareto_csv(const ParetoResult& r);  // workload,candidate,run_dir,job,<cost>,<metric>,on_frontier,dominated_by
std::string pareto_svg(const ParetoResult& r, std::size_t workload);

}  // namespace warpsim::sweep
