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
// boost: how the clock was decided), sm_clock_hz (the clock the run held), over_power_cap (1 or 0); and for an LLM
// step, the numbers of its stats.json "llm" section as llm.<key> (llm.step_ms, llm.tokens_per_s,
// llm.energy_per_token_j, llm.fits_in_hbm as 1 or 0, ...).
std::vector<std::pair<std::string, nlohmann::json>> job_columns(const JobResult& job);

// A kernel's headline stats, in stats.json's order: its numbers, utilization.*, stalls.*,
// speed_of_light.compute_pct / memory_pct / limiter, then its energy (stats.json kernels[i].energy) when the GPU
// models it: energy_j, energy_seconds, average_power_w, energy_sm_clock_hz, voltage_v, flops_per_j,
// energy_j.<component> (sm_issue, ..., leakage, constant: the breakdown, summing to energy_j).
std::vector<std::pair<std::string, nlohmann::json>> kernel_columns(const nlohmann::json& kernel);

// The label of a candidate of `run_dir` when `runs` run directories are shown together: the candidate's name, or
// "<run dir name>/<candidate>" when there are several.
std::string candidate_label(const std::string& run_dir, const std::string& candidate, std::size_t runs);

// Which jobs first_seen_order() takes: all of them, or only the finished ones (those with a stats.json).
enum class JobFilter { all, finished };

// The jobs of run directories shown together (`sweep compare`, `sweep pareto`, `warpsim report`): runs in the
// order given, each run's jobs in its manifest's order, and the candidates (by candidate_label) and workloads
// of those jobs in the order they first appear.
struct FirstSeenOrder {
  struct Job {
    const RunResults* run;
    const JobResult* result;
    std::size_t candidate, workload;  // indices into `candidates` and `workloads`
  };
  std::vector<std::string> candidates, workloads;
  std::vector<Job> jobs;
};
FirstSeenOrder first_seen_order(const std::vector<RunResults>& runs, JobFilter which);

}  // namespace warpsim::sweep
