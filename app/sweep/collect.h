// Reading a sweep's results back: `warpsim sweep status` (jobs per state) and `warpsim sweep collect` (a long
// CSV table and RUN_DIR/results.sqlite).
//
// CSV: one row per kernel of every job with results (an alias gives rows under its own design point, with its
// original's results); columns:
//   job, candidate, alias_of, config_hash, workload, workload_kind,
//   <every design-point parameter, dotted config key, base units: Hz, B/s, bytes, counts>,
//   workload.<every key of the workload's synthesizer, base units>,
//   kernel (index), kernel_name, job_total_cycles, job_total_time_us, wall_s,
//   <the run's power columns when the GPU models energy: job_energy_j, job_average_power_w, ... (results.h)>,
//   <every headline stat of the kernel in stats.json: its numbers, utilization.*, stalls.*,
//    speed_of_light.compute_pct / memory_pct, its energy: energy_j, average_power_w, energy_j.<component>, ...>
// SQLite (schema in README.md "Sweeps"):
//   jobs(name PK, candidate, alias_of, runs_as, state, config_hash, workload, workload_kind, wall_s,
//        total_cycles, total_time_us)
//   params(job, kind 'design'|'workload', name, value REAL, text TEXT)   value for numbers, text otherwise
//   job_stats(job, name, value REAL, text TEXT)   the job's columns (total time, power)
//   kernels(job, kernel, name)
//   stats(job, kernel, name, value REAL)   the CSV's stats plus every statistics counter (counters.*)
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace warpsim::sweep {

// The job whose directory holds a manifest job's results: itself, or its original (an alias).
std::string runs_as(const nlohmann::json& job);

// A CSV cell: numbers as they read back, text quoted when it must be, null empty.
std::string csv_cell(const nlohmann::json& value);

// The status report: counts per state, then each failed or unfinished job with the last line of its marker or
// log. `all_done` is set when nothing is left to run.
std::string status_report(const std::string& run_dir, bool& all_done);

struct CollectSummary {
  std::size_t rows = 0, jobs_with_results = 0, jobs_without = 0;
};

// Writes the CSV to `csv_path` and RUN_DIR/results.sqlite, each through a temporary renamed into place.
CollectSummary collect_results(const std::string& run_dir, const std::string& csv_path);

}  // namespace warpsim::sweep
