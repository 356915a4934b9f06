// warpsim report, sweep pareto and the energy columns of sweep collect, on a tiny sweep (2 candidates x 2 GEMMs
// of 128x128x128-sized problems): the expectations come from the jobs' own stats.json and resolved configs, read
// with the test helpers' own readers, not from the report code.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "test_helpers.h"

using namespace wstest;

namespace {

const char* kH100 = "h100__gemm_m128_n128_k128";

// h100 and a candidate with more SMs at half the clock: slower (its SMs run at half the rate on the same work)
// and costlier in SMs, so it is dominated on (sm.count, time).
std::string report_spec(const std::string& base) {
  return "name: rep\nbase: " + base +
         "\ncandidates:\n  h100: {}\n  slow_big: {set: {sm.count: 144, clocks.sm: 0.915 GHz}}\n"
         "workloads:\n  - synth: gemm\n    m: [128, 256]\n    n: 128\n    k: 128\n";
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream s(line);
  while (std::getline(s, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

// A CSV file as rows of column -> cell.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& file) {
  std::istringstream lines(read_text(file));
  std::string line;
  std::getline(lines, line);
  const auto header = split_csv(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    const auto cells = split_csv(line);
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

double total_time_us(const fs::path& run, const std::string& job) {
  const auto t = json::number(read_text(run / "jobs" / job / "stats.json"), "total_time_us");
  REQUIRE(t);
  return *t;
}

bool is_png(const fs::path& file) {
  const std::string bytes = read_text(file);
  return bytes.size() > 1000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

}  // namespace

TEST_CASE("sweep report: collect's energy columns, the Pareto frontier and a self-contained HTML report", "[sweep][report]") {
  TempDir dir;
  const std::string spec = dir / "rep.yaml", run = dir / "run";
  write_text(spec, report_spec(shipped_config("h100_sxm")));
  CmdResult r = run_warpsim({"sweep", "plan", spec, "-o", run});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  // Nothing finished yet: one clear error each, naming the run directory.
  for (const auto& args : std::vector<std::vector<std::string>>{{"report", run, "-o", dir / "early.html"}, {"sweep", "pareto", run}}) {
    r = run_warpsim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, run));
    CHECK(contains(r.err, "no finished jobs"));
  }
  r = run_warpsim({"sweep", "submit", run, "--backend", "local", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  // --- collect: energy and power columns equal to stats.json's ---------------------------------------------
  const std::string csv = dir / "results.csv";
  REQUIRE(run_warpsim({"sweep", "collect", run, "-o", csv}).exit_code == 0);
  const auto rows = read_csv(csv);
  REQUIRE(rows.size() == 4);  // one kernel per job
  for (const auto& row : rows) {
    const std::string job = row.at("job");
    INFO(job);
    const std::string stats = read_text(fs::path(run) / "jobs" / job / "stats.json");
    for (const auto& [column, path] : std::vector<std::pair<std::string, std::string>>{
             {"job_energy_j", "power.energy.joules"},
             {"job_average_power_w", "power.energy.average_w"},
             {"job_peak_kernel_power_w", "power.peak_kernel_w"},
             {"job_peak_power_w", "power.energy.peak_w"},
             {"peak_power_w", "kernels[0].energy.peak_w"},
             {"power_cap_w", "power.cap_w"},
             {"sm_clock_hz", "power.sustained_sm_clock_hz"},
             {"energy_j", "kernels[0].energy.joules"},
             {"average_power_w", "kernels[0].energy.average_w"},
             {"energy_sm_clock_hz", "kernels[0].energy.sm_clock_hz"},
             {"energy_j.leakage", "kernels[0].energy.breakdown_j.leakage"},
             {"energy_j.tensor", "kernels[0].energy.breakdown_j.tensor"}}) {
      INFO(column);
      const auto expected = json::number(stats, path);
      REQUIRE(expected);
      REQUIRE(row.count(column));
      CHECK(std::stod(row.at(column)) == Approx(*expected).epsilon(1e-12));
    }
    CHECK(row.at("clock_policy") == *json::string(stats, "power.clock_policy"));
  }
  // The clock each job held: slow_big sets clocks.sm, which pins it (its resolved config runs the cap in report
  // mode); the stock H100's is a result of its power cap (boost), at most the max boost clock.
  for (const auto& row : rows) {
    INFO(row.at("job"));
    const auto cfg = read_flat_yaml(read_text(fs::path(run) / "jobs" / row.at("job") / "config.resolved.yaml"));
    if (row.at("candidate") == "slow_big") {
      CHECK(row.at("clock_policy") == "configured");
      CHECK(std::stod(row.at("sm_clock_hz")) == Approx(config_number(cfg, "clocks.sm")));
      CHECK(config_number(cfg, "clocks.sm") == Approx(0.915e9));
    } else {
      CHECK(row.at("clock_policy") == "boost");
      CHECK(std::stod(row.at("sm_clock_hz")) <= config_number(cfg, "power.reference_clock"));
    }
  }

  // --- pareto: slow_big is slower and has more SMs, so it is dominated ----------------------------------------
  for (const char* workload : {"gemm_m128_n128_k128", "gemm_m256_n128_k128"}) {
    INFO(workload);
    REQUIRE(total_time_us(run, std::string("slow_big__") + workload) > total_time_us(run, std::string("h100__") + workload));
  }
  const std::string pareto_csv = dir / "pareto.csv";
  r = run_warpsim({"sweep", "pareto", run, "--cost", "sm.count", "-o", pareto_csv});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "dominated by h100"));
  const auto points = read_csv(pareto_csv);
  REQUIRE(points.size() == 4);
  for (const auto& p : points) {
    INFO(p.at("job"));
    const bool slow = p.at("candidate") == "slow_big";
    CHECK(p.at("on_frontier") == (slow ? "0" : "1"));
    CHECK(p.at("dominated_by") == (slow ? "h100" : ""));
    CHECK(std::stod(p.at("sm.count")) == (slow ? 144 : 132));
    CHECK(std::stod(p.at("job_total_time_us")) == Approx(total_time_us(run, p.at("job"))).epsilon(1e-12));
  }
  r = run_warpsim({"sweep", "pareto", run, "--cost", "sm.cuont"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--cost: unknown column 'sm.cuont'"));
  CHECK(contains(r.err, "did you mean 'sm.count'"));

  // --- the HTML report -----------------------------------------------------------------------------------------
  const fs::path out = fs::path(dir.path()) / "out";
  fs::create_directories(out);
  const std::string html_file = (out / "report.html").string();
  r = run_warpsim({"report", run, "-o", html_file, "--cost", "sm.count"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string html = read_text(html_file);
  for (const char* section : {"id='design'", "id='speedup'", "id='stalls'", "id='utilization'", "id='roofline'", "id='sensitivity'",
                              "id='pareto'", "id='energy'"})
    CHECK(contains(html, section));
  // Self-contained: no address but the SVG namespace, nothing loaded from elsewhere.
  std::string rest = html;
  for (std::size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;) rest.erase(at, 26);
  CHECK_FALSE(contains(rest, "http://"));
  CHECK_FALSE(contains(rest, "https://"));
  CHECK_FALSE(contains(html, "<script"));
  CHECK_FALSE(contains(html, "<link"));
  CHECK_FALSE(contains(html, "src="));
  CHECK(contains(html, "<svg"));
  // Speed-ups from the jobs' own times: slow_big runs its SMs at half the clock, so it is slower (below 1x).
  for (const char* workload : {"gemm_m128_n128_k128", "gemm_m256_n128_k128"}) {
    const double speedup = total_time_us(run, std::string("h100__") + workload) / total_time_us(run, std::string("slow_big__") + workload);
    CHECK(speedup < 1);
    char text[32];
    std::snprintf(text, sizeof text, "<td>%.3fx</td>", speedup);
    INFO(workload << " " << text);
    CHECK(contains(html, text));
  }
  CHECK(contains(html, "<td>1.000x</td>"));  // the base against itself
  // Stall names as stats.json spells them; the roofline's peak from the config and the clock the job held (under
  // boost a result, not clocks.sm): FLOP/cycle/SM x SMs x clock.
  CHECK(contains(html, "stall_long_scoreboard"));
  const auto cfg = read_flat_yaml(read_text(fs::path(run) / "jobs" / kH100 / "config.resolved.yaml"));
  const double held_hz = *json::number(read_text(fs::path(run) / "jobs" / kH100 / "stats.json"), "power.sustained_sm_clock_hz");
  const double peak_tflops =
      config_number(cfg, "sm.tensor.flops_per_cycle.bf16") * config_number(cfg, "sm.count") * held_hz / 1e12;
  char peak[32];
  std::snprintf(peak, sizeof peak, "<td>%.4g</td>", peak_tflops);
  INFO("peak " << peak);
  CHECK(contains(html, peak));
  CHECK(contains(html, "dominated by h100"));
  CHECK(contains(html, "configured"));  // how the clock was decided, in the energy table
  for (const char* figure : {"speedup", "stall_mix", "utilization", "roofline", "pareto_1", "pareto_2", "energy_breakdown"}) {
    INFO(figure);
    CHECK(contains(read_text(out / "report_files" / (std::string(figure) + ".svg")), "</svg>"));
    CHECK(is_png(out / "report_files" / (std::string(figure) + ".png")));
  }

  // Two run directories: one report, candidates labelled by run directory; the copy's h100 equals the base.
  const std::string copy = dir / "run_b";
  fs::copy(run, copy, fs::copy_options::recursive);
  r = run_warpsim({"report", run, copy, "-o", out / "both.html"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string both = read_text(out / "both.html");
  CHECK(contains(both, "run/slow_big"));
  CHECK(contains(both, "run_b/h100"));
  CHECK(count_lines_containing(both, "<td>1.000x</td>") >= 2);
  CHECK(is_png(out / "both_files" / "speedup.png"));

  // compare given sweep run directories: every candidate of both per workload, with its job's own time and the
  // speed-up over the first sweep's first candidate; a sweep mixed with a single run is one error.
  r = run_warpsim({"compare", run, copy});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* workload : {"gemm_m128_n128_k128", "gemm_m256_n128_k128"}) {
    INFO(workload);
    const std::string block = r.out.substr(r.out.find(std::string("\n") + workload + "\n"));
    const double base_us = total_time_us(run, std::string("h100__") + workload);
    const double slow_us = total_time_us(run, std::string("slow_big__") + workload);
    char row[160];
    std::snprintf(row, sizeof row, "%-14s %12.3f %8.3fx", "run/slow_big", slow_us, base_us / slow_us);
    CHECK(contains(block, row));
    std::snprintf(row, sizeof row, "%-14s %12.3f %8.3fx", "run_b/h100", base_us, 1.0);
    CHECK(contains(block, row));
  }
  r = run_warpsim({"compare", run, copy + "/jobs/h100__gemm_m128_n128_k128"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "is a sweep run directory"));
  r = run_warpsim({"report", dir / "no_such_run", "-o", out / "x.html"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "no_such_run"));
  r = run_warpsim({"report", run});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "-o report.html"));
  r = run_warpsim({"report", run, "-o", out / "x.html", "--cost", "area_mm2"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "unknown column 'area_mm2'"));
}

TEST_CASE("sweep report: a sensitivity sweep's tornado", "[sweep][report]") {
  TempDir dir;
  const std::string spec = dir / "sens.yaml", run = dir / "run";
  write_text(spec, "base: " + shipped_config("h100_sxm") +
                       "\nsensitivity:\n  step: 50%\n  parameters: [sm.count]\n"
                       "workloads:\n  - synth: gemm\n    m: 128\n    n: 128\n    k: 128\n");
  REQUIRE(run_warpsim({"sweep", "plan", spec, "-o", run}).exit_code == 0);
  CmdResult r = run_warpsim({"sweep", "submit", run, "--backend", "local", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string html_file = dir / "sens.html";
  r = run_warpsim({"report", run, "-o", html_file});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string html = read_text(html_file);
  const std::string tornado = read_text(fs::path(dir.path()) / "sens_files" / "sensitivity_1.svg");
  CHECK(contains(tornado, "sm.count"));
  CHECK(contains(html, "Time change with each parameter -50%"));
  CHECK(is_png(fs::path(dir.path()) / "sens_files" / "sensitivity_1.png"));
}
