#include "app/sweep/pareto.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "app/sweep/collect.h"
#include "app/sweep/svg_chart.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/core/text.h"

using nlohmann::json;

namespace warpsim::sweep {
namespace {

// A job's value of `column`: a design-point parameter or one of its job columns; null when it has none.
json column_value(const JobResult& job, const std::string& column) {
  if (const auto p = job.design_point.find(column); p != job.design_point.end()) return *p;
  for (auto& [name, value] : job_columns(job))
    if (name == column) return value;
  return nullptr;
}

// Every column a job of these runs can be ranked by: numeric design-point parameters and job columns.
std::vector<std::string> known_columns(const std::vector<RunResults>& runs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const RunResults& run : runs)
    for (const JobResult& job : run.jobs) {
      if (!job.stats) continue;
      for (const auto& [name, value] : job.design_point.items())
        if (value.is_number() && seen.insert(name).second) out.push_back(name);
      for (const auto& [name, value] : job_columns(job))
        if (value.is_number() && seen.insert(name).second) out.push_back(name);
    }
  return out;
}

}  // namespace

bool higher_is_better(const std::string& column) {
  for (const char* rate : {"per_s", "per_s_per_gpu", "tflops", "gbps", "flops_per_j", "hit_rate", "ipc", "occupancy"})
    if (text::ends_with(column, rate)) return true;
  return false;
}

ParetoResult pareto(const std::vector<RunResults>& runs, const std::string& cost, const std::string& metric) {
  ParetoResult r;
  r.cost = cost;
  r.metric = metric;
  r.metric_higher_is_better = higher_is_better(metric);
  const std::vector<std::string> known = known_columns(runs);
  if (known.empty()) {
    std::vector<std::string> dirs;
    for (const RunResults& run : runs) dirs.push_back(run.run_dir);
    throw InputError(fmt::format("{} {} no finished jobs: `warpsim sweep submit RUN_DIR` runs them", fmt::join(dirs, ", "),
                                 dirs.size() == 1 ? "has" : "have"));
  }
  for (const auto& [option, column] : {std::pair{"--cost", &cost}, std::pair{"--metric", &metric}})
    if (std::find(known.begin(), known.end(), *column) == known.end()) {
      const std::string hint = did_you_mean(*column, known);
      throw InputError(fmt::format("{}: unknown column '{}'{}; expected a numeric design-point parameter or job column: {}", option,
                                   *column, hint.empty() ? "" : "; did you mean '" + hint + "'?", fmt::join(known, ", ")));
    }
  const FirstSeenOrder order = first_seen_order(runs, JobFilter::finished);
  for (const RunResults& run : runs) r.jobs_without_results += run.jobs.size();
  r.jobs_without_results -= order.jobs.size();
  for (const std::string& workload : order.workloads) r.workloads.push_back({workload, {}});
  for (const FirstSeenOrder::Job& j : order.jobs) {
    ParetoPoint p;
    p.candidate = order.candidates[j.candidate];
    p.job = j.result->name;
    p.run_dir = j.run->run_dir;
    for (const auto& [column, out] : {std::pair{&cost, &p.cost}, std::pair{&metric, &p.metric}}) {
      const json v = column_value(*j.result, *column);
      if (!v.is_number())
        throw InputError(fmt::format("{}: job {} has no number in column '{}' (got {})", j.run->run_dir, j.result->name,
                                     *column, v.is_null() ? "nothing" : v.dump()));
      *out = v.get<double>();
    }
    r.workloads[j.workload].points.push_back(std::move(p));
  }
  // Ranked as "lower is better": a rate's metric negated.
  const double sign = r.metric_higher_is_better ? -1.0 : 1.0;
  for (ParetoWorkload& w : r.workloads) {
    std::stable_sort(w.points.begin(), w.points.end(), [sign](const ParetoPoint& a, const ParetoPoint& b) {
      return std::make_tuple(a.cost, sign * a.metric, a.candidate) < std::make_tuple(b.cost, sign * b.metric, b.candidate);
    });
    for (ParetoPoint& p : w.points)
      for (const ParetoPoint& q : w.points)
        if (q.cost <= p.cost && sign * q.metric <= sign * p.metric && (q.cost < p.cost || sign * q.metric < sign * p.metric)) {
          p.on_frontier = false;
          p.dominated_by = q.candidate;
          break;
        }
  }
  return r;
}

std::string pareto_table(const ParetoResult& r) {
  std::string out = fmt::format("cost {} against {} ({}); * on the Pareto frontier\n", r.cost, r.metric,
                                r.metric_higher_is_better ? "lower cost and higher metric are better" : "lower is better for both");
  for (const ParetoWorkload& w : r.workloads) {
    std::size_t width = 9;
    for (const ParetoPoint& p : w.points) width = std::max(width, p.candidate.size());
    const std::size_t cw = std::max<std::size_t>(r.cost.size(), 12), mw = std::max<std::size_t>(r.metric.size(), 12);
    out += fmt::format("\n{}\n    {:<{}}  {:>{}}  {:>{}}\n", w.workload, "candidate", width, r.cost, cw, r.metric, mw);
    for (const ParetoPoint& p : w.points)
      out += fmt::format("  {} {:<{}}  {:>{}}  {:>{}}{}\n", p.on_frontier ? '*' : ' ', p.candidate, width, fmt::format("{:.6g}", p.cost), cw,
                         fmt::format("{:.6g}", p.metric), mw, p.on_frontier ? "" : "  dominated by " + p.dominated_by);
  }
  if (r.jobs_without_results) out += fmt::format("\n{} jobs have no results yet (not shown)\n", r.jobs_without_results);
  return out;
}

std::string pareto_csv(const ParetoResult& r) {
  std::string out = fmt::format("workload,candidate,run_dir,job,{},{},on_frontier,dominated_by\n", csv_cell(r.cost), csv_cell(r.metric));
  for (const ParetoWorkload& w : r.workloads)
    for (const ParetoPoint& p : w.points)
      out += fmt::format("{},{},{},{},{},{},{},{}\n", csv_cell(w.workload), csv_cell(p.candidate), csv_cell(p.run_dir), csv_cell(p.job),
                         format_number(p.cost), format_number(p.metric), p.on_frontier ? 1 : 0, csv_cell(p.dominated_by));
  return out;
}

std::string pareto_svg(const ParetoResult& r, std::size_t workload) {
  const ParetoWorkload& w = r.workloads.at(workload);
  svg::ScatterSeries frontier{"Pareto frontier", 0, {}, true, true, false, true};
  svg::ScatterSeries dominated{"dominated", 3, {}, true, false, false, true};
  for (const ParetoPoint& p : w.points) (p.on_frontier ? frontier : dominated).points.push_back({p.cost, p.metric, p.candidate, p.on_frontier});
  std::vector<svg::ScatterSeries> series{frontier};
  if (!dominated.points.empty()) series.push_back(dominated);
  return svg::scatter(fmt::format("Pareto: {} ({} against {})", w.workload, r.metric, r.cost), {r.cost, false}, {r.metric, false}, series);
}

}  // namespace warpsim::sweep
