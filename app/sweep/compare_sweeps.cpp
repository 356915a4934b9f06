#include "app/sweep/compare_sweeps.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "app/sweep/results.h"
#include "sim/core/error.h"

namespace warpsim::sweep {

namespace {

struct Cell {
  double time_us = 0;
  std::optional<double> joules;
};

}  // namespace

std::string compare_sweeps(const std::vector<std::string>& run_dirs) {
  std::vector<RunResults> runs;
  for (const auto& dir : run_dirs) runs.push_back(load_run_results(dir));
  for (const RunResults& run : runs)
    if (std::none_of(run.jobs.begin(), run.jobs.end(), [](const JobResult& job) { return job.stats != nullptr; }))
      throw InputError(fmt::format("compare: sweep '{}' has no finished job yet (warpsim sweep status {})", run.run_dir, run.run_dir));
  // Workloads and candidates in the order the manifests list them, the first sweep's first.
  const FirstSeenOrder order = first_seen_order(runs, JobFilter::all);
  const std::vector<std::string>& workloads = order.workloads;
  const std::vector<std::string>& candidates = order.candidates;
  std::map<std::string, std::map<std::string, Cell>> cells;  // workload -> candidate -> its job's results
  std::size_t missing = 0;
  for (const FirstSeenOrder::Job& j : order.jobs) {
    const JobResult& job = *j.result;
    if (!job.stats) {
      ++missing;
      continue;
    }
    Cell c;
    c.time_us = job.stats->at("total_time_us").get<double>();
    if (const auto p = job.stats->find("power"); p != job.stats->end() && p->is_object())
      if (const auto e = p->find("energy"); e != p->end() && e->is_object() && e->contains("joules") && (*e)["joules"].is_number())
        c.joules = (*e)["joules"].get<double>();
    cells[workloads[j.workload]][candidates[j.candidate]] = c;
  }

  std::string o;
  for (std::size_t r = 0; r < runs.size(); ++r)
    o += fmt::format("[{}] sweep {}: {} jobs\n", r, runs[r].run_dir, runs[r].jobs.size());
  const std::size_t width = std::max<std::size_t>(9, std::max_element(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
                                                       return a.size() < b.size();
                                                     })->size());
  for (const std::string& workload : workloads) {
    const auto& row = cells[workload];
    // The baseline of a workload: the first candidate that has its result.
    const auto base = std::find_if(candidates.begin(), candidates.end(), [&](const std::string& c) { return row.count(c); });
    o += fmt::format("\n{}\n  {:<{}} {:>12} {:>9} {:>12} {:>9}\n", workload, "candidate", width, "time_us", "speedup",
                     "energy_mJ", "energy");
    for (const std::string& candidate : candidates) {
      const auto it = row.find(candidate);
      if (it == row.end()) {
        o += fmt::format("  {:<{}} {:>12}\n", candidate, width, "-");
        continue;
      }
      const Cell& c = it->second;
      const Cell& b = row.at(*base);
      const std::string energy = c.joules ? fmt::format("{:.4g}", *c.joules * 1e3) : "-";
      const std::string ratio = c.joules && b.joules && *b.joules > 0 ? fmt::format("{:.3f}x", *c.joules / *b.joules) : "-";
      o += fmt::format("  {:<{}} {:>12.3f} {:>8.3f}x {:>12} {:>9}\n", candidate, width, c.time_us, b.time_us / c.time_us,
                       energy, ratio);
    }
  }
  o += fmt::format("\nspeedup and energy: against the first candidate listed with a result for the workload"
                   "{}; '-': no result (yet).\n", missing ? fmt::format(" ({} jobs have none)", missing) : "");
  return o;
}

}  // namespace warpsim::sweep
