// A sweep's results read back once for `sweep collect`, `sweep pareto` and `warpsim report`: every job of the
// manifest with its design point, workload and (when done) its stats.json, and the columns a job and a kernel
// give to the tables.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "app/sweep/job_runner.h"

namespace warpsim::sweep {

struct JobResult {
  std::string name, candidate, alias_of, runs_as, config_hash, workload, workload_kind;
  nlohmann::json design_point, workload_params;  // the manifest's, base units
  JobState state = JobState::pending;
  std::shared_ptr<const nlohmann::json> stats;   // stats.json of runs_as; null when it has no results yet
  double wall_s = 0;
  std::string config_file;                       // runs_as's config.resolved.yaml
};

struct RunResults {
  std::string run_dir;
  nlohmann::json manifest;
  std::vector<std::string> param_columns, workload_columns;
  std::vector<JobResult> jobs;  // the manifest's order
};

// InputError when RUN_DIR or its manifest is missing (read_manifest's message).
RunResults load_run_results(const std::string& run_dir);

// The columns one job gives every row of its kernels, in this order: job_total_cycles, job_total_time_us, wall_s,
// then the run's power section (stats.json "power") when the GPU models energy: job_energy_j,
// job_average_power_w, job_peak_kernel_power_w, idle_power_w, power_cap_w, clock_policy (configured, pinned or
// boost: how the clock was decided), sm_clock_hz (the clock the run held), over_power_cap (1 or 0).
std::vector<std::pair<std::string, nlohmann::json>> job_columns(const JobResult& job);

// A kernel's headline stats, in stats.json's order: its numbers, utilization.*, stalls.*,
// speed_of_light.compute_pct / memory_pct / limiter, then its energy (stats.json kernels[i].energy) when the GPU
// models it: energy_j, energy_seconds, average_power_w, energy_sm_clock_hz, voltage_v, flops_per_j,
// energy_j.<component> (sm_issue, ..., leakage, constant: the breakdown, summing to energy_j).
std::vector<std::pair<std::string, nlohmann::json>> kernel_columns(const nlohmann::json& kernel);

}  // namespace warpsim::sweep
