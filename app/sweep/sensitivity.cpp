#include "app/sweep/sensitivity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "app/sweep/collect.h"
#include "app/sweep/plan.h"
#include "app/sweep/results.h"
#include "app/sweep/svg_chart.h"
#include "sim/config/config.h"
#include "sim/core/error.h"

using nlohmann::json;

namespace warpsim::sweep {

double ParameterEffect::magnitude() const { return std::max(std::fabs(change_down), std::fabs(change_up)); }

SensitivityResult read_sensitivity(const std::string& run_dir) {
  const RunResults results = load_run_results(run_dir);
  const json& m = results.manifest;
  if (!m.contains("sensitivity"))
    throw InputError(fmt::format("'{}' is not a sensitivity sweep: its spec has no sensitivity: section "
                                 "(configs/sweeps/README.md)", run_dir));
  const json& s = m.at("sensitivity");
  SensitivityResult r;
  r.step = s.at("step").get<double>();
  // candidate -> (key, direction, value) of the perturbed ones
  struct Point { std::string key; int direction; double value; };
  std::map<std::string, Point> points;
  std::vector<std::string> keys;
  for (const json& p : s.at("points")) {
    points[p.at("candidate")] = Point{p.at("key"), p.at("direction").get<int>(), p.at("value").get<double>()};
    if (std::find(keys.begin(), keys.end(), p.at("key").get<std::string>()) == keys.end()) keys.push_back(p.at("key"));
  }
  const std::string base = s.at("base");

  std::map<std::string, std::size_t> workload_index;
  std::map<std::string, std::map<std::string, double>> times;  // workload -> candidate -> total time
  std::size_t missing = 0;
  for (const JobResult& job : results.jobs) {
    if (!workload_index.count(job.workload)) {
      workload_index[job.workload] = r.workloads.size();
      r.workloads.push_back({job.workload, 0, {}});
    }
    if (!job.stats) {  // its job (or the one it is an alias of) has not finished
      ++missing;
      continue;
    }
    times[job.workload][job.candidate] = job.stats->at("total_time_us").get<double>();
  }
  if (missing)
    throw InputError(fmt::format("{} jobs of '{}' have no results yet: warpsim sweep submit {} runs them", missing, run_dir, run_dir));

  for (WorkloadSensitivity& w : r.workloads) {
    const auto& t = times[w.workload];
    w.base_time_us = t.at(base);
    for (const std::string& key : keys) {
      ParameterEffect e;
      e.key = key;
      for (const auto& [candidate, p] : points) {
        if (p.key != key) continue;
        const double time = t.at(candidate);
        (p.direction < 0 ? e.value_down : e.value_up) = p.value;
        (p.direction < 0 ? e.time_down_us : e.time_up_us) = time;
        (p.direction < 0 ? e.change_down : e.change_up) = time / w.base_time_us - 1;
      }
      w.effects.push_back(e);
    }
    std::stable_sort(w.effects.begin(), w.effects.end(),
                     [](const ParameterEffect& a, const ParameterEffect& b) { return a.magnitude() > b.magnitude(); });
  }
  return r;
}

namespace {

std::string percent(double change) { return fmt::format("{:+.1f}%", 100 * change); }

// A bar of `width` characters for `fraction` of the largest effect, growing left (negative) or right.
std::string bar(double change, double largest, int width, bool left) {
  const int n = largest > 0 ? static_cast<int>(std::lround(std::fabs(change) / largest * width)) : 0;
  const bool shown = left ? change < 0 : change > 0;
  const std::string body(static_cast<std::size_t>(shown ? n : 0), '#');
  return left ? fmt::format("{:>{}}", body, width) : fmt::format("{:<{}}", body, width);
}

}  // namespace

std::string sensitivity_table(const SensitivityResult& r) {
  constexpr int kBarWidth = 20;
  const std::string step = fmt::format("{:g}%", 100 * r.step);
  std::string out = fmt::format("time change when each parameter is {} lower / higher than the base (negative: faster)\n", step);
  for (const WorkloadSensitivity& w : r.workloads) {
    out += fmt::format("\n{} (base {:.2f} us)\n", w.workload, w.base_time_us);
    std::size_t width = 9;
    for (const ParameterEffect& e : w.effects) width = std::max(width, e.key.size());
    const double largest = w.effects.empty() ? 0 : w.effects.front().magnitude();
    out += fmt::format("  {:<{}}  {:>8}  {:>8}  faster <{}|{}> slower\n", "parameter", width, "-" + step, "+" + step,
                       std::string(kBarWidth - 7, ' '), std::string(kBarWidth - 7, ' '));
    for (const ParameterEffect& e : w.effects) {
      // Both changes share one axis: each bar grows from the centre toward faster (left) or slower (right).
      std::string left(kBarWidth, ' '), right(kBarWidth, ' ');
      for (double c : {e.change_down, e.change_up}) {
        const std::string l = bar(c, largest, kBarWidth, true), rt = bar(c, largest, kBarWidth, false);
        for (int i = 0; i < kBarWidth; ++i) {
          if (l[i] == '#') left[i] = '#';
          if (rt[i] == '#') right[i] = '#';
        }
      }
      out += fmt::format("  {:<{}}  {:>8}  {:>8}  {}|{}\n", e.key, width, percent(e.change_down), percent(e.change_up), left, right);
    }
  }
  return out;
}

std::string sensitivity_csv(const SensitivityResult& r) {
  std::string out = "workload,rank,parameter,step,value_down,value_up,base_time_us,time_down_us,time_up_us,change_down,change_up\n";
  for (const WorkloadSensitivity& w : r.workloads)
    for (std::size_t i = 0; i < w.effects.size(); ++i) {
      const ParameterEffect& e = w.effects[i];
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", w.workload, i + 1, e.key, format_number(r.step),
                         format_number(e.value_down), format_number(e.value_up), format_number(w.base_time_us),
                         format_number(e.time_down_us), format_number(e.time_up_us), format_number(e.change_down),
                         format_number(e.change_up));
    }
  return out;
}

std::string sensitivity_svg(const SensitivityResult& r) {
  const std::string step = fmt::format("{:g}%", 100 * r.step);
  std::vector<svg::TornadoPanel> panels;
  for (const WorkloadSensitivity& w : r.workloads) {
    svg::TornadoPanel panel{fmt::format("{} (base {:.2f} us)", w.workload, w.base_time_us), {}};
    for (const ParameterEffect& e : w.effects) panel.rows.push_back({e.key, e.change_down, e.change_up});
    panels.push_back(std::move(panel));
  }
  return svg::tornado(fmt::format("Time change with each parameter -{0} (blue) or +{0} (orange); left of the axis: faster", step),
                      panels, "-" + step, "+" + step);
}

}  // namespace warpsim::sweep
