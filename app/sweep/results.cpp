#include "app/sweep/results.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "app/json_input.h"
#include "app/sweep/collect.h"
#include "app/sweep/plan.h"
#include "sim/config/input_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace warpsim::sweep {
namespace {

json read_json(const fs::path& file, const char* what) {
  return parse_json_input(read_input_file(file.string(), kNoSizeLimit, what), file.string());
}

}  // namespace

RunResults load_run_results(const std::string& run_dir) {
  RunResults r;
  r.run_dir = run_dir;
  r.manifest = read_manifest(run_dir);
  r.param_columns = r.manifest.at("param_columns").get<std::vector<std::string>>();
  r.workload_columns = r.manifest.at("workload_columns").get<std::vector<std::string>>();
  // Each job's results read once (aliases share their original's).
  std::map<std::string, std::pair<std::shared_ptr<const json>, double>> read;
  for (const json& job : r.manifest.at("jobs")) {
    JobResult j;
    j.name = job.at("name");
    j.candidate = job.at("candidate");
    j.alias_of = job.value("alias_of", "");
    j.runs_as = runs_as(job);
    j.config_hash = job.at("config_hash");
    j.workload = job.at("workload").at("label");
    j.workload_kind = job.at("workload").at("kind");
    j.design_point = job.at("design_point");
    j.workload_params = job.at("workload").at("params");
    const fs::path dir = fs::path(run_dir) / kJobsDir / j.runs_as;
    j.config_file = (dir / kJobConfigFile).string();
    j.state = j.alias_of.empty() ? job_state(dir) : JobState::alias;
    auto found = read.find(j.runs_as);
    if (found == read.end() && job_state(dir) == JobState::done)
      found = read.emplace(j.runs_as, std::pair{std::make_shared<const json>(read_json(dir / kStatsFile, "job results")),
                                                read_json(dir / kDoneMarker, "job done marker").value("wall_s", 0.0)})
                  .first;
    if (found != read.end()) std::tie(j.stats, j.wall_s) = found->second;
    r.jobs.push_back(std::move(j));
  }
  return r;
}

std::vector<std::pair<std::string, json>> job_columns(const JobResult& job) {
  std::vector<std::pair<std::string, json>> out;
  const json& s = *job.stats;
  out.emplace_back("job_total_cycles", s.at("total_cycles"));
  out.emplace_back("job_total_time_us", s.at("total_time_us"));
  out.emplace_back("wall_s", job.wall_s);
  if (const auto p = s.find("power"); p != s.end() && p->is_object()) {
    const json& e = p->value("energy", json::object());
    out.emplace_back("job_energy_j", e.value("joules", json()));
    out.emplace_back("job_average_power_w", e.value("average_w", json()));
    out.emplace_back("job_peak_kernel_power_w", p->value("peak_kernel_w", json()));
    out.emplace_back("job_peak_power_w", e.value("peak_w", json()));  // highest average over one power.window
    out.emplace_back("power_window_s", e.value("window_s", json()));
    out.emplace_back("idle_power_w", p->value("idle_w", json()));
    out.emplace_back("power_cap_w", p->value("cap_w", json()));
    out.emplace_back("clock_policy", p->value("clock_policy", json()));
    out.emplace_back("sm_clock_hz", p->value("sustained_sm_clock_hz", json()));
    out.emplace_back("over_power_cap", p->value("over_cap", false) ? 1 : 0);
  }
  // An LLM step's own figures (warpsim llm's stats.json "llm"): its numbers, booleans as 1 or 0.
  if (const auto l = s.find("llm"); l != s.end() && l->is_object())
    for (const auto& [key, value] : l->items()) {
      if (value.is_number()) out.emplace_back("llm." + key, value);
      else if (value.is_boolean()) out.emplace_back("llm." + key, value.get<bool>() ? 1 : 0);
    }
  return out;
}

std::vector<std::pair<std::string, json>> kernel_columns(const json& kernel) {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& [key, value] : kernel.items()) {
    if (value.is_number() || value.is_boolean()) out.emplace_back(key, value);
    else if ((key == "utilization" || key == "stalls") && value.is_object())
      for (const auto& [k, v] : value.items())
        if (v.is_number()) out.emplace_back(key + "." + k, v);
  }
  if (const auto sol = kernel.find("speed_of_light"); sol != kernel.end() && sol->is_object()) {
    for (const char* side : {"compute", "memory"})
      if (sol->contains(side) && (*sol)[side].contains("pct_of_peak")) out.emplace_back(fmt::format("speed_of_light.{}_pct", side), (*sol)[side]["pct_of_peak"]);
    if (sol->contains("limiter") && (*sol)["limiter"].is_string()) out.emplace_back("speed_of_light.limiter", (*sol)["limiter"]);
  }
  if (const auto e = kernel.find("energy"); e != kernel.end() && e->is_object()) {
    for (const auto& [key, column] : {std::pair{"joules", "energy_j"}, std::pair{"seconds", "energy_seconds"},
                                      std::pair{"average_w", "average_power_w"}, std::pair{"sm_clock_hz", "energy_sm_clock_hz"},
                                      std::pair{"voltage", "voltage_v"}, std::pair{"flops_per_joule", "flops_per_j"},
                                      std::pair{"peak_w", "peak_power_w"}})
      if (const auto v = e->find(key); v != e->end() && (v->is_number() || v->is_null())) out.emplace_back(column, *v);
    if (const auto b = e->find("breakdown_j"); b != e->end() && b->is_object())
      for (const auto& [component, v] : b->items())
        if (v.is_number()) out.emplace_back("energy_j." + component, v);
  }
  return out;
}

std::string candidate_label(const std::string& run_dir, const std::string& candidate, std::size_t runs) {
  if (runs <= 1) return candidate;
  std::string name = std::filesystem::path(run_dir).lexically_normal().filename().string();
  if (name.empty()) name = std::filesystem::path(run_dir).lexically_normal().parent_path().filename().string();
  return name + "/" + candidate;
}

FirstSeenOrder first_seen_order(const std::vector<RunResults>& runs, JobFilter which) {
  FirstSeenOrder order;
  std::map<std::string, std::size_t> candidate_index, workload_index;
  for (const RunResults& run : runs)
    for (const JobResult& job : run.jobs) {
      if (which == JobFilter::finished && !job.stats) continue;
      const std::string label = candidate_label(run.run_dir, job.candidate, runs.size());
      const auto c = candidate_index.emplace(label, order.candidates.size()).first;
      if (c->second == order.candidates.size()) order.candidates.push_back(label);
      const auto w = workload_index.emplace(job.workload, order.workloads.size()).first;
      if (w->second == order.workloads.size()) order.workloads.push_back(job.workload);
      order.jobs.push_back({&run, &job, c->second, w->second});
    }
  return order;
}

}  // namespace warpsim::sweep
