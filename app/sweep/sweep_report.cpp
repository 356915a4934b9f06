#include "app/sweep/sweep_report.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "app/result_set.h"
#include "app/sweep/pareto.h"
#include "app/sweep/results.h"
#include "app/sweep/sensitivity.h"
#include "app/sweep/svg_chart.h"
#include "sim/config/config.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace warpsim::sweep {
namespace {

const double kNaN = std::nan("");

struct ReportCandidate {
  std::string label, run_dir, name;
  json design_point;
  std::string gpu;
  std::size_t jobs = 0, done = 0;
};

// A finished job as the report uses it.
struct Entry {
  const JobResult* job;
  std::size_t candidate, workload;
};

std::string html(const std::string& s) { return svg::escape(s); }

std::string number_text(double v, const char* format = "{:.4g}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : "&ndash;";
}

std::string cell_text(const json& v) {
  if (v.is_null()) return "&ndash;";
  if (v.is_number()) return html(format_number(v.get<double>()));
  return html(v.is_string() ? v.get<std::string>() : v.dump());
}

// An object member by reference (an empty object when absent): safe to iterate, unlike json::value's copy.
const json& member(const json& object, const char* key) {
  static const json empty = json::object();
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : empty;
}

double number(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : kNaN;
}

// A quantity of a job's config.resolved.yaml ("hbm.bandwidth"), in base units; NaN when absent.
class ResolvedConfig {
 public:
  explicit ResolvedConfig(const std::string& file) : file_(file) {
    try {
      root_ = YAML::LoadFile(file);
    } catch (const YAML::Exception& e) {
      throw InputError(fmt::format("{}: cannot read the job's resolved config: {}", file, e.what()));
    }
  }
  double quantity(const std::string& section, const std::string& key, ParamType type) const {
    const YAML::Node node = root_[section][key];
    if (!node || !node.IsScalar()) return kNaN;
    double out = 0;
    std::string error;
    if (!parse_quantity(node.as<std::string>(), type, out, error))
      throw InputError(fmt::format("{}: {}.{}: {}", file_, section, key, error));
    return out;
  }

 private:
  std::string file_;
  YAML::Node root_;
};

// The HTML page and the figure files beside it.
class Report {
 public:
  Report(fs::path figures_dir, std::string figures_link) : dir_(std::move(figures_dir)), link_(std::move(figures_link)) {}

  // Writes the plot as <name>.svg and <name>.png and returns its HTML (the SVG inline, a caption).
  std::string figure(const std::string& name, const std::string& svg_text, const std::string& caption) {
    const fs::path svg_file = dir_ / (name + ".svg"), png_file = dir_ / (name + ".png");
    write_file_atomically(svg_file, svg_text);
    svg::write_png(svg_text, png_file.string());
    written_.push_back(svg_file.string());
    // The document's own XML declaration would be invalid inside HTML; the SVG element is all there is.
    return fmt::format("<figure>\n{}<figcaption>{} <span class='files'>({}/{}.svg, .png)</span></figcaption>\n</figure>\n", svg_text,
                       caption, html(link_), html(name));
  }
  const std::vector<std::string>& written() const { return written_; }

 private:
  fs::path dir_;
  std::string link_;
  std::vector<std::string> written_;
};

const char* kStyle = R"(
body { font-family: 'DejaVu Sans', 'Liberation Sans', Arial, sans-serif; margin: 24px auto; max-width: 1180px; color: #222; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 34px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.note, figcaption { color: #555; font-size: 13px; }
span.files { color: #888; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
tr.dominated td { color: #999; }
figure { margin: 12px 0 22px; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
nav a { margin-right: 12px; font-size: 13px; }
div.wide { overflow-x: auto; }
)";

}  // namespace

ReportSummary write_sweep_report(const std::vector<std::string>& run_dirs, const std::string& html_path, const ReportOptions& options) {
  if (run_dirs.empty()) throw InputError("report: give at least one sweep run directory (RUN_DIR)");
  std::vector<RunResults> runs;
  for (const std::string& dir : run_dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw InputError(fmt::format("report: '{}': no such run directory (warpsim sweep plan SPEC -o DIR makes one)", dir));
    runs.push_back(load_run_results(dir));
    if (std::none_of(runs.back().jobs.begin(), runs.back().jobs.end(), [](const JobResult& j) { return j.stats != nullptr; }))
      throw InputError(fmt::format("report: '{}' has no finished jobs yet (warpsim sweep status {}; warpsim sweep submit {} runs them)",
                                   dir, dir, dir));
  }

  std::vector<std::string> params;
  for (const RunResults& run : runs)
    for (const std::string& p : run.param_columns)
      if (std::find(params.begin(), params.end(), p) == params.end()) params.push_back(p);
  // Candidates and workloads in first-seen order; the first candidate is the base of the speed-ups.
  const FirstSeenOrder order = first_seen_order(runs, JobFilter::all);
  const std::vector<std::string>& workloads = order.workloads;
  std::vector<ReportCandidate> candidates(order.candidates.size());
  std::vector<Entry> entries;
  ReportSummary summary;
  for (const FirstSeenOrder::Job& j : order.jobs) {
    const JobResult& job = *j.result;
    ReportCandidate& cand = candidates[j.candidate];
    if (cand.jobs == 0) cand = {order.candidates[j.candidate], j.run->run_dir, job.candidate, job.design_point, "", 0, 0};
    ++cand.jobs;
    if (!job.stats) {
      ++summary.jobs_without;
      continue;
    }
    ++summary.jobs_with_results;
    ++cand.done;
    if (cand.gpu.empty()) cand.gpu = job.stats->value("gpu", "");
    entries.push_back({&job, j.candidate, j.workload});
  }
  // Tables and per-job plots list jobs by workload, then candidate.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.workload, a.candidate) < std::tie(b.workload, b.candidate);
  });

  const fs::path html_file = html_path;
  const std::string figures_name = html_file.stem().string() + "_files";
  const fs::path figures_dir = html_file.parent_path() / figures_name;
  std::error_code ec;
  fs::create_directories(figures_dir, ec);
  if (ec) throw InputError(fmt::format("report: cannot create '{}': {}", figures_dir.string(), ec.message()));
  Report report(figures_dir, figures_name);
  summary.figures_dir = figures_dir.string();

  std::string body;
  std::vector<std::string> dirs;
  for (const RunResults& run : runs) dirs.push_back(fmt::format("{} ({})", run.run_dir, run.manifest.value("name", "")));
  body += fmt::format("<h1>warpsim sweep report</h1>\n<p class='note'>{} {}: {} candidates, {} workloads, {} finished jobs{}.</p>\n",
                      runs.size() == 1 ? "Run directory" : "Run directories", html(fmt::format("{}", fmt::join(dirs, ", "))),
                      candidates.size(), workloads.size(), summary.jobs_with_results,
                      summary.jobs_without ? fmt::format(", {} without results yet (not shown)", summary.jobs_without) : "");
  body += "<nav><a href='#design'>Design points</a><a href='#speedup'>Speed-up</a><a href='#stalls'>Stall mix</a>"
          "<a href='#utilization'>Utilisation</a><a href='#roofline'>Roofline</a><a href='#sensitivity'>Sensitivity</a>"
          "<a href='#pareto'>Pareto</a><a href='#energy'>Energy and power</a></nav>\n";

  // --- design points -----------------------------------------------------------------------------------------
  body += "<section id='design'><h2>Design points</h2>\n<div class='wide'><table><tr><th class='text'>candidate</th><th class='text'>GPU</th>";
  for (const std::string& p : params) body += fmt::format("<th>{}</th>", html(p));
  body += "<th>jobs done</th></tr>\n";
  for (const ReportCandidate& c : candidates) {
    body += fmt::format("<tr><td class='text'>{}</td><td class='text'>{}</td>", html(c.label), html(c.gpu));
    for (const std::string& p : params) body += fmt::format("<td>{}</td>", cell_text(c.design_point.value(p, json())));
    body += fmt::format("<td>{} / {}</td></tr>\n", c.done, c.jobs);
  }
  body += "</table></div>\n<p class='note'>Parameters in base units (Hz, B/s, bytes, counts); a candidate without a value keeps the "
          "base config's.</p></section>\n";

  // --- speed-up ------------------------------------------------------------------------------------------------
  // time[c][w]: the job's total time (us), NaN without results.
  std::vector<std::vector<double>> time(candidates.size(), std::vector<double>(workloads.size(), kNaN));
  for (const Entry& e : entries) time[e.candidate][e.workload] = e.job->stats->at("total_time_us").get<double>();
  {
    std::vector<svg::BarSeries> series;
    // One row per candidate (sweeps have more candidates than workloads), a time and a speed-up per workload.
    body += fmt::format("<section id='speedup'><h2>Speed-up over {}</h2>\n<div class='wide'><table><tr><th class='text'>candidate</th>",
                        html(candidates[0].label));
    for (const std::string& w : workloads) body += fmt::format("<th>{}<br>time (us)</th><th>speed-up</th>", html(w));
    body += "</tr>\n";
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      series.push_back({candidates[c].label, {}});
      for (std::size_t w = 0; w < workloads.size(); ++w) series.back().values.push_back(time[0][w] / time[c][w]);
    }
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      body += fmt::format("<tr><td class='text'>{}</td>", html(candidates[c].label));
      for (std::size_t w = 0; w < workloads.size(); ++w)
        body += fmt::format("<td>{}</td><td>{}</td>", number_text(time[c][w], "{:.3f}"), number_text(series[c].values[w], "{:.3f}x"));
      body += "</tr>\n";
    }
    body += "</table></div>\n";
    body += report.figure("speedup",
                          svg::grouped_bars(fmt::format("Speed-up over {} (its time / the candidate's time)", candidates[0].label),
                                            "speed-up (x)", workloads, series, 1.0, "{:.2f}"),
                          "Each job's total time (stats.json total_time_us) against the base candidate's on the same workload; "
                          "above the dashed line: faster.");
    body += "</section>\n";
  }

  // --- stall mix -----------------------------------------------------------------------------------------------
  {
    std::vector<std::string> stall_names, rows;
    std::vector<std::vector<double>> shares;
    for (const Entry& e : entries)
      for (const json& k : e.job->stats->at("kernels"))
        for (const auto& [name, v] : member(k, "stalls").items())
          if (std::find(stall_names.begin(), stall_names.end(), name) == stall_names.end()) stall_names.push_back(name);
    for (const Entry& e : entries) {
        std::vector<double> cycles(stall_names.size(), 0);
        double total = 0;
        for (const json& k : e.job->stats->at("kernels"))
          for (std::size_t s = 0; s < stall_names.size(); ++s) {
            const double v = number(member(k, "stalls"), stall_names[s].c_str());
            if (std::isfinite(v)) cycles[s] += v, total += v;
          }
        for (double& v : cycles) v = total > 0 ? v / total : 0;
        rows.push_back(fmt::format("{} | {}", workloads[e.workload], candidates[e.candidate].label));
        shares.push_back(std::move(cycles));
      }
    body += "<section id='stalls'><h2>Stall mix</h2>\n";
    body += report.figure("stall_mix", svg::stacked_bars("Warp states (share of warp-cycles, all kernels of the job)", rows, stall_names, shares),
                          "Per job: each warp state's warp-cycles summed over the job's kernels (stats.json kernels[].stalls, "
                          "Nsight Compute's names), as a share of the total.");
    body += "</section>\n";
  }

  // --- utilisation -----------------------------------------------------------------------------------------------
  {
    std::vector<std::string> units;
    for (const Entry& e : entries)
      for (const json& k : e.job->stats->at("kernels"))
        for (const auto& [name, v] : member(k, "utilization").items())
          if (std::find(units.begin(), units.end(), name) == units.end()) units.push_back(name);
    std::vector<svg::BarSeries> series;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      std::vector<double> weighted(units.size(), 0);
      double total_time = 0;
      for (const Entry& e : entries) {
        if (e.candidate != c) continue;
        for (const json& k : e.job->stats->at("kernels")) {
          const double t = number(k, "time_us");
          if (!(t > 0)) continue;
          total_time += t;
          for (std::size_t u = 0; u < units.size(); ++u) {
            const double v = number(member(k, "utilization"), units[u].c_str());
            if (std::isfinite(v)) weighted[u] += 100 * v * t;
          }
        }
      }
      for (double& v : weighted) v = total_time > 0 ? v / total_time : kNaN;
      series.push_back({candidates[c].label, std::move(weighted)});
    }
    body += "<section id='utilization'><h2>Utilisation per unit</h2>\n";
    body += report.figure("utilization", svg::grouped_bars("Utilisation per unit (% of peak, time-weighted over all kernels)", "% of peak",
                                                           units, series, std::nullopt, "{:.1f}"),
                          "Each unit's busy share (stats.json kernels[].utilization) averaged over every kernel of the candidate's "
                          "jobs, weighted by kernel time.");
    body += "</section>\n";
  }

  // --- roofline ---------------------------------------------------------------------------------------------------
  {
    // A job's point: FLOP / DRAM bytes and FLOP / kernel time. Its roof: tensor peak (FLOP/cycle/SM of the job's data
    // type, stats.json) x sm.count x the SM clock the job ran at, and hbm.bandwidth (config.resolved.yaml).
    struct Roof {
      double peak, bandwidth;
      std::size_t candidate;
      bool operator<(const Roof& o) const { return std::tie(candidate, peak, bandwidth) < std::tie(o.candidate, o.peak, o.bandwidth); }
    };
    std::set<Roof> roofs;
    std::vector<svg::ScatterSeries> points(candidates.size());
    for (std::size_t c = 0; c < candidates.size(); ++c) points[c] = {candidates[c].label, c, {}, true, false, false, true};
    std::string rows;
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const Entry& e : entries) {
      const json& stats = *e.job->stats;
      double flops = 0, bytes = 0, seconds = 0, peak_per_sm = 0;
      for (const json& k : stats.at("kernels")) {
        const double f = number(k, "flops"), t = number(k, "time_us");
        flops += std::isfinite(f) ? f : 0;
        bytes += std::max(0.0, number(k, "dram_bytes_read")) + std::max(0.0, number(k, "dram_bytes_written"));
        seconds += std::isfinite(t) ? t * 1e-6 : 0;
        const json tensor = k.value("speed_of_light", json::object()).value("tensor", json());
        if (tensor.is_object() && f > 0) peak_per_sm = std::max(peak_per_sm, number(tensor, "peak_flops_per_cycle_per_sm"));
      }
      if (!(flops > 0) || !(bytes > 0) || !(seconds > 0)) continue;  // no arithmetic intensity to place
      const ResolvedConfig config(e.job->config_file);
      const double sms = config.quantity("sm", "count", ParamType::UInt), bandwidth = config.quantity("hbm", "bandwidth", ParamType::Bandwidth);
      double clock = config.quantity("clocks", "sm", ParamType::Frequency);
      if (const auto power = stats.find("power"); power != stats.end() && power->is_object()) clock = number(*power, "sustained_sm_clock_hz");
      const double intensity = flops / bytes, achieved = flops / seconds, peak = peak_per_sm * sms * clock;
      points[e.candidate].points.push_back({intensity, achieved, workloads[e.workload], true});
      lo = std::min(lo, intensity);
      hi = std::max(hi, intensity);
      if (peak > 0 && bandwidth > 0) roofs.insert({peak, bandwidth, e.candidate});
      rows += fmt::format("<tr><td class='text'>{}</td><td class='text'>{}</td><td>{:.4g}</td><td>{:.4g}</td><td>{:.4g}</td><td>{}</td><td>{}</td></tr>\n",
                          html(workloads[e.workload]), html(candidates[e.candidate].label), flops, bytes, intensity, number_text(achieved / 1e12),
                          peak > 0 ? number_text(peak / 1e12) : "&ndash;");
    }
    body += "<section id='roofline'><h2>Roofline</h2>\n";
    if (rows.empty()) {
      body += "<p class='note'>No job both computes (FLOP &gt; 0) and reads or writes DRAM: no point to place.</p>\n";
    } else {
      for (const Roof& r : roofs) {
        const double ridge = r.peak / r.bandwidth;
        lo = std::min(lo, ridge), hi = std::max(hi, ridge);
      }
      lo /= 4, hi *= 4;
      std::vector<svg::ScatterSeries> series;
      for (const Roof& r : roofs) {
        const double ridge = r.peak / r.bandwidth;
        series.push_back({candidates[r.candidate].label + " roof", r.candidate,
                          {{lo, r.bandwidth * lo, "", true}, {ridge, r.peak, "", true}, {hi, r.peak, "", true}}, false, true, true, false});
      }
      for (auto& p : points)
        if (!p.points.empty()) series.push_back(p);
      body += report.figure("roofline",
                            svg::scatter("Roofline: achieved FLOP/s against arithmetic intensity (FLOP per DRAM byte)",
                                         {"arithmetic intensity (FLOP / DRAM byte)", true}, {"achieved FLOP/s", true}, series),
                            "Points: each job's FLOP over its kernels' DRAM bytes and time. Dashed roofs, one per candidate: "
                            "hbm.bandwidth x intensity up to the tensor peak (the job's data type, FLOP/cycle/SM x sm.count x SM clock).");
      body += "<table><tr><th class='text'>workload</th><th class='text'>candidate</th><th>FLOP</th><th>DRAM bytes</th>"
              "<th>FLOP/byte</th><th>achieved TFLOP/s</th><th>peak TFLOP/s</th></tr>\n" + rows + "</table>\n";
    }
    body += "</section>\n";
  }

  // --- sensitivity -----------------------------------------------------------------------------------------------
  body += "<section id='sensitivity'><h2>Sensitivity</h2>\n";
  bool any_sensitivity = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].manifest.contains("sensitivity")) continue;
    any_sensitivity = true;
    try {
      const SensitivityResult s = read_sensitivity(runs[i].run_dir);
      body += report.figure(fmt::format("sensitivity_{}", i + 1), sensitivity_svg(s),
                            fmt::format("{}: each parameter alone at the base's value x (1 -/+ {:g}%).", html(runs[i].run_dir), 100 * s.step));
    } catch (const InputError& e) {
      body += fmt::format("<p class='note'>{}</p>\n", html(e.what()));
    }
  }
  if (!any_sensitivity)
    body += "<p class='note'>No run directory is a sensitivity sweep (a spec with <code>sensitivity:</code>, configs/sweeps/README.md).</p>\n";
  body += "</section>\n";

  // --- Pareto ------------------------------------------------------------------------------------------------------
  body += "<section id='pareto'><h2>Pareto frontier</h2>\n";
  {
    std::string cost = options.pareto_cost, metric = options.pareto_metric.empty() ? kDefaultParetoMetric : options.pareto_metric;
    if (cost.empty()) {
      const bool energy = std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return e.job->stats->contains("power"); });
      if (energy) cost = kDefaultParetoCost;
      else
        for (const std::string& p : params)
          if (std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.job->design_point.value(p, json()).is_number(); })) {
            cost = p;
            break;
          }
    }
    if (cost.empty()) {
      body += "<p class='note'>No cost column: the GPU models no energy and no design parameter is numeric.</p>\n";
    } else {
      const ParetoResult pr = pareto(runs, cost, metric);
      body += fmt::format("<p class='note'>Cost <b>{}</b> against <b>{}</b>, lower is better for both; filled: on the frontier "
                          "(no candidate at least as good on both and better on one), hollow: dominated.</p>\n", html(cost), html(metric));
      for (std::size_t w = 0; w < pr.workloads.size(); ++w) {
        const ParetoWorkload& pw = pr.workloads[w];
        body += fmt::format("<h3>{}</h3>\n<table><tr><th class='text'>candidate</th><th>{}</th><th>{}</th><th class='text'>frontier</th></tr>\n",
                            html(pw.workload), html(cost), html(metric));
        for (const ParetoPoint& p : pw.points)
          body += fmt::format("<tr{}><td class='text'>{}</td><td>{:.6g}</td><td>{:.6g}</td><td class='text'>{}</td></tr>\n",
                              p.on_frontier ? "" : " class='dominated'", html(p.candidate), p.cost, p.metric,
                              p.on_frontier ? "on the frontier" : "dominated by " + html(p.dominated_by));
        body += "</table>\n";
        body += report.figure(fmt::format("pareto_{}", w + 1), pareto_svg(pr, w), fmt::format("{}: {} against {}.", html(pw.workload), html(metric), html(cost)));
      }
    }
  }
  body += "</section>\n";

  // --- energy and power --------------------------------------------------------------------------------------------
  body += "<section id='energy'><h2>Energy and power</h2>\n";
  {
    std::string rows;
    std::vector<std::string> components, bar_rows;
    std::vector<std::vector<double>> shares;
    for (const Entry& e : entries) {
      const auto power = e.job->stats->find("power");
      if (power == e.job->stats->end() || !power->is_object()) continue;
      const json energy = power->value("energy", json::object());
      rows += fmt::format("<tr><td class='text'>{}</td><td class='text'>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                          "<td class='text'>{}</td><td class='text'>{}</td><td>{}</td></tr>\n",
                          html(workloads[e.workload]), html(candidates[e.candidate].label), number_text(number(*e.job->stats, "total_time_us"), "{:.3f}"),
                          number_text(number(energy, "joules") * 1e3, "{:.4g}"), number_text(number(energy, "average_w"), "{:.1f}"),
                          number_text(number(*power, "peak_kernel_w"), "{:.1f}"), number_text(number(*power, "sustained_sm_clock_hz") / 1e9, "{:.3f}"),
                          html(power->value("clock_policy", "")), power->value("over_cap", false) ? "over the cap" : "within",
                          number_text(number(*power, "cap_w"), "{:.0f}"));
      const json breakdown = energy.value("breakdown_j", json::object());
      for (const auto& [name, v] : breakdown.items())
        if (std::find(components.begin(), components.end(), name) == components.end()) components.push_back(name);
      std::vector<double> share(components.size(), 0);
      const double total = number(energy, "joules");
      for (std::size_t i = 0; i < components.size(); ++i) {
        const double v = number(breakdown, components[i].c_str());
        share[i] = total > 0 && std::isfinite(v) ? v / total : 0;
      }
      bar_rows.push_back(fmt::format("{} | {}", workloads[e.workload], candidates[e.candidate].label));
      shares.push_back(std::move(share));
    }
    if (rows.empty()) {
      body += "<p class='note'>The GPU configs of these runs model no energy (no power: section).</p>\n";
    } else {
      body += "<table><tr><th class='text'>workload</th><th class='text'>candidate</th><th>time (us)</th><th>energy (mJ)</th>"
              "<th>average (W)</th><th>peak kernel (W)</th><th>SM clock (GHz)</th><th class='text'>clock decided by</th>"
              "<th class='text'>power cap</th><th>cap (W)</th></tr>\n" + rows + "</table>\n";
      for (auto& s : shares) s.resize(components.size(), 0);
      body += report.figure("energy_breakdown", svg::stacked_bars("Energy per component (share of the job's energy)", bar_rows, components, shares),
                            "stats.json power.energy.breakdown_j of each job; the clock policy says whether the SM clock was the "
                            "config's (configured), pinned by --set clocks.sm (pinned) or the highest step under the power cap (boost).");
    }
  }
  body += "</section>\n";

  const std::string page = fmt::format("<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n<title>warpsim report: {}</title>\n"
                                       "<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                                       html(fmt::format("{}", fmt::join(run_dirs, ", "))), kStyle, body);
  write_file_atomically(html_file, page);
  summary.figures = report.written();
  return summary;
}

}  // namespace warpsim::sweep
