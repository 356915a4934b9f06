// warpsim sweep: a tiny sweep planned, run, interrupted (a job killed by SIGTERM, another left `unfinished` as a
// killed one leaves it), resubmitted and collected; bad specs. The expectations come from the configs and the
// spec, not from the sweep code: sm.count of the base is read from configs/h100_sxm.yaml.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <thread>

#include "test_helpers.h"

using namespace wstest;

namespace {

// Two candidates that come to the same hardware (h100 and h100_same: an override equal to the base's value)
// and one with more SMs, on two tiny GEMMs: 6 jobs, of which 2 are aliases.
std::string tiny_spec(const std::string& base) {
  return "name: tiny\nbase: " + base +
         "\ncandidates:\n  h100: {}\n  h100_same: {set: {sm.count: 132}}\n  more_sms: {set: {sm.count: 144}}\n"
         "workloads:\n  - synth: gemm\n    m: [128, 256]\n    n: 128\n    k: 128\n";
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream s(line);
  while (std::getline(s, cell, sep)) out.push_back(cell);
  return out;
}

fs::file_time_type mtime(const fs::path& p) { return fs::last_write_time(p); }

// sweep collect's CSV: its header, and each job's last row (cells in the header's order) by job name.
struct CollectedCsv {
  std::vector<std::string> header;
  std::map<std::string, std::vector<std::string>> rows;
  std::size_t column(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    INFO(name);
    REQUIRE(it != header.end());
    return static_cast<std::size_t>(it - header.begin());
  }
};

CollectedCsv read_collected(const std::string& file) {
  CollectedCsv c;
  std::istringstream lines(read_text(file));
  std::string line;
  std::getline(lines, line);
  c.header = split(line, ',');
  const std::size_t job = c.column("job");
  while (std::getline(lines, line)) {
    const auto cells = split(line, ',');
    c.rows[cells.at(job)] = cells;
  }
  return c;
}

}  // namespace

TEST_CASE("sweep: plan, an interrupted run, resubmit and collect lose nothing and rerun nothing", "[sweep]") {
  TempDir dir;
  const std::string spec = dir / "tiny.yaml", run = dir / "run";
  write_text(spec, tiny_spec(shipped_config("h100_sxm")));
  const std::string base_sms = read_flat_yaml(read_text(shipped_config("h100_sxm"))).at("sm.count");
  REQUIRE(base_sms == "132");  // the premise of the alias: h100_same sets the base's own value

  CmdResult r = run_warpsim({"sweep", "plan", spec, "-o", run});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const fs::path jobs = fs::path(run) / "jobs";
  std::size_t dirs = 0;
  for (const auto& e : fs::directory_iterator(jobs)) dirs += e.is_directory();
  CHECK(dirs == 4);  // the aliases have no directory
  const std::string manifest = read_text(fs::path(run) / "manifest.json");
  CHECK(contains(manifest, "\"alias_of\": \"h100__gemm_m128_n128_k128\""));
  CHECK(contains(manifest, "\"alias_of\": \"h100__gemm_m256_n128_k128\""));

  // One job run alone; another left as a killed run leaves it: `unfinished`, and a stats.json without `done`.
  const std::string first = "h100__gemm_m128_n128_k128", killed = "more_sms__gemm_m256_n128_k128";
  r = run_warpsim({"sweep", "run-jobs", run, first});
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(jobs / first / "done"));
  const auto first_done = mtime(jobs / first / "done");
  write_text(jobs / killed / "unfinished", "stopped by SIGTERM before the job finished\n");
  write_text(jobs / killed / "stats.json", "{\"truncated");
  r = run_warpsim({"sweep", "status", run});
  CHECK(contains(r.out, "2 pending, 0 running, 1 done, 0 failed, 1 unfinished, 2 alias"));

  r = run_warpsim({"sweep", "submit", run, "--backend", "local", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "0 pending, 0 running, 4 done, 0 failed, 0 unfinished, 2 alias"));
  CHECK(mtime(jobs / first / "done") == first_done);  // not run twice
  CHECK_FALSE(fs::exists(jobs / killed / "unfinished"));
  CHECK(fs::exists(jobs / killed / "done"));

  // A finished sweep: nothing to run.
  r = run_warpsim({"sweep", "submit", run});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "nothing to run"));
  CHECK(mtime(jobs / first / "done") == first_done);

  const std::string csv = dir / "results.csv";
  r = run_warpsim({"sweep", "collect", run, "-o", csv});
  REQUIRE(r.exit_code == 0);
  const CollectedCsv collected = read_collected(csv);
  const std::size_t sms = collected.column("sm.count"), m = collected.column("workload.m"),
                    cycles = collected.column("cycles"), alias = collected.column("alias_of");
  const auto& rows = collected.rows;
  REQUIRE(rows.size() == 6);  // one kernel per job; aliases too
  for (const auto& [name, cells] : rows) {
    INFO(name);
    CHECK(cells[sms] == (name.rfind("more_sms", 0) == 0 ? "144" : base_sms));
    CHECK(cells[m] == (contains(name, "_m128_") ? "128" : "256"));
  }
  // An alias reports its original's results under its own design point.
  CHECK(rows.at("h100_same__gemm_m128_n128_k128")[alias] == first);
  CHECK(rows.at("h100_same__gemm_m128_n128_k128")[cycles] == rows.at(first)[cycles]);
  // More SMs do not slow a GEMM down (first principles, not a number the code computed).
  CHECK(std::stod(rows.at("more_sms__gemm_m256_n128_k128")[cycles]) <= std::stod(rows.at("h100__gemm_m256_n128_k128")[cycles]));
  CHECK(read_text(fs::path(run) / "results.sqlite").rfind("SQLite format 3", 0) == 0);
}

TEST_CASE("sweep: SIGTERM stops a job as unfinished, without results that look complete", "[sweep]") {
  TempDir dir;
  const std::string spec = dir / "big.yaml", run = dir / "run";
  // Long enough (several seconds) that it is still simulating when the signal comes.
  write_text(spec, "base: " + shipped_config("h100_sxm") + "\nworkloads:\n  - synth: gemm\n    m: 8192\n    n: 8192\n    k: 1024\n");
  REQUIRE(run_warpsim({"sweep", "plan", spec, "-o", run}).exit_code == 0);
  const std::string name = "h100_sxm__gemm_m8192_n8192_k1024";
  const fs::path job = fs::path(run) / "jobs" / name;
  REQUIRE(fs::exists(job / "job.yaml"));
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string bin = warpsim_binary();
    freopen("/dev/null", "w", stderr);
    execl(bin.c_str(), bin.c_str(), "sweep", "run-jobs", run.c_str(), name.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  CHECK(fs::exists(job / "unfinished"));
  CHECK_FALSE(fs::exists(job / "done"));
  CHECK_FALSE(fs::exists(job / "stats.json"));
  CHECK_FALSE(fs::exists(job / "running"));
  const CmdResult r = run_warpsim({"sweep", "status", run});
  CHECK(contains(r.out, "1 unfinished"));
}

TEST_CASE("sweep: an LLM step sweeps kv_dtype and ep as warpsim llm's options, its figures are job columns, and "
          "pareto ranks tokens/s higher-is-better", "[sweep][llm]") {
  TempDir dir;
  const std::string spec = dir / "llm.yaml", run = dir / "run";
  const std::string model = (source_dir() / "tests" / "data" / "llm" / "tiny_mixtral.json").string();
  // slow_big: more SMs at half the clock, so slower and costlier in SMs.
  write_text(spec, "name: moe\nbase: " + shipped_config("h100_sxm") +
                       "\ncandidates:\n  h100: {}\n  slow_big: {set: {sm.count: 144, clocks.sm: 0.915 GHz}}\n"
                       "workloads:\n  - llm: " + model +
                       "\n    name: moe\n    phase: decode\n    batch: 4\n    context: 256\n    kv_dtype: fp8\n    ep: [1, 4]\n");
  CmdResult r = run_warpsim({"sweep", "plan", spec, "-o", run});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = run_warpsim({"sweep", "submit", run, "--backend", "local", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "4 done, 0 failed"));
  for (const char* ep : {"1", "4"}) {
    const std::string job = std::string("h100__moe_ep") + ep;
    INFO(job);
    const std::string stats = read_text(fs::path(run) / "jobs" / job / "stats.json");
    CHECK(json::string(stats, "llm.scenario.kv_dtype").value_or("") == "fp8");
    CHECK(json::number(stats, "llm.scenario.ep").value_or(0) == std::stod(ep));
  }
  const std::string csv = dir / "results.csv";
  REQUIRE(run_warpsim({"sweep", "collect", run, "-o", csv}).exit_code == 0);
  const CollectedCsv collected = read_collected(csv);
  const std::size_t tokens = collected.column("llm.tokens_per_s"), fits = collected.column("llm.fits_in_hbm");
  const auto& rows = collected.rows;
  REQUIRE(rows.size() == 4);
  for (const auto& [name, cells] : rows) {
    INFO(name);
    CHECK(cells[fits] == "1");
    const std::string stats = read_text(fs::path(run) / "jobs" / name / "stats.json");
    CHECK(std::stod(cells[tokens]) == Approx(json::number(stats, "llm.tokens_per_s").value_or(-1)).epsilon(1e-12));
  }
  r = run_warpsim({"sweep", "pareto", run, "--cost", "sm.count", "--metric", "llm.tokens_per_s"});
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "higher metric are better"));
  // Fewer tokens/s from more SMs: slow_big is dominated in both workloads (lower-is-better would keep it).
  std::size_t dominated = 0;
  for (std::size_t at = r.out.find("dominated by h100"); at != std::string::npos; at = r.out.find("dominated by h100", at + 1))
    ++dominated;
  CHECK(dominated == 2);
}

TEST_CASE("sweep: a bad spec is one error naming the file and the key", "[sweep][bad-input]") {
  TempDir dir;
  const std::string base = shipped_config("h100_sxm");
  const std::string workloads = "workloads:\n  - synth: gemm\n    m: 128\n    n: 128\n    k: 128\n";
  struct Case {
    std::string spec, error;
  };
  const std::vector<Case> cases{
      {"base: " + base + "\ncandidats:\n  a: {}\n" + workloads, "spec.yaml:2:1: candidats: unknown key (did you mean 'candidates'?)"},
      {"base: " + base + "\ncandidates:\n  a: {set: {sm.cont: 3}}\n" + workloads, "sm.cont: unknown parameter; did you mean 'count'?"},
      {"base: " + base + "\nparameters:\n  grid:\n    sm.count: [0]\n" + workloads, "sm.count: expected unsigned integer in [1, 4096], got 0"},
      {"base: " + base + "\nworkloads:\n  - synth: gemm\n    m: 128\n    n: 128\n    kk: 128\n", "spec.yaml:3: workloads[0]: gemm: unknown key 'kk'; did you mean 'k'?"},
      {"base: " + base + "\nparameters:\n  zip:\n    - {sm.count: [66, 132], l2.slices: [40]}\n" + workloads,
       "parameters.zip[0].l2.slices: 1 values, but sm.count has 2"},
      {"base: " + base + "\nworkloads:\n  - llm: llama-3-8b\n    batchh: 8\n", "spec.yaml:4:5: workloads[0].batchh: unknown key (did you mean 'batch'?)"},
      {"base: " + base + "\nworkloads:\n  - llm: llama-3-8b\n    phase: decoding\n", "workloads[0]: phase: expected decode or prefill, got 'decoding'"},
  };
  for (const Case& c : cases) {
    const std::string spec = dir / "spec.yaml";
    write_text(spec, c.spec);
    const CmdResult r = run_warpsim({"sweep", "plan", spec, "-o", dir / "run"});
    INFO(c.spec << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, spec));
    CHECK(contains(r.err, c.error));
    CHECK_FALSE(fs::exists(dir / "run"));
  }
}

TEST_CASE("sweep sensitivity: each parameter perturbed alone, ranked by its effect on the workload's time",
          "[sweep][sensitivity]") {
  TempDir dir;
  const std::string spec = dir / "sens.yaml", run = dir / "run";
  // A copy of 4 Mi fp16 elements: 8 MiB read from DRAM (cold L2), so HBM bandwidth should dominate the SM count.
  write_text(spec, "base: " + shipped_config("a100_sxm") +
                       "\nsensitivity:\n  step: 50%\n  parameters: [sm.count, hbm.bandwidth]\n"
                       "workloads:\n  - synth: elementwise\n    op: copy\n    elements: 4194304\n");
  CmdResult r = run_warpsim({"sweep", "plan", spec, "-o", run});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Before the jobs ran, the analysis says what is missing.
  r = run_warpsim({"sweep", "sensitivity", run});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "5 jobs of"));
  r = run_warpsim({"sweep", "submit", run, "--backend", "local", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string csv = dir / "effects.csv", svg = dir / "tornado.svg";
  r = run_warpsim({"sweep", "sensitivity", run, "-o", csv, "--svg", svg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "hbm.bandwidth"));

  // Rows: workload,rank,parameter,step,value_down,value_up,base_time_us,time_down_us,time_up_us,change_down,change_up
  std::istringstream lines(read_text(csv));
  std::string line;
  std::getline(lines, line);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(lines, line)) rows.push_back(split(line, ','));
  REQUIRE(rows.size() == 2);
  const auto cfg = read_flat_yaml(run_warpsim({"config", "--gpu", "a100_sxm"}).out);
  const double hbm = config_number(cfg, "hbm.bandwidth"), sms = config_number(cfg, "sm.count");
  // A memory-bound copy: bandwidth ranks first; half of it costs more than one and a half gains.
  CHECK(rows[0][2] == "hbm.bandwidth");
  CHECK(rows[0][1] == "1");
  CHECK(std::stod(rows[0][4]) == Approx(0.5 * hbm).epsilon(1e-9));
  CHECK(std::stod(rows[0][5]) == Approx(1.5 * hbm).epsilon(1e-9));
  const double down = std::stod(rows[0][9]), up = std::stod(rows[0][10]);
  CHECK(down > 0);
  CHECK(up < 0);
  CHECK(down > -up);
  CHECK(std::fabs(down) > std::fabs(std::stod(rows[1][9])));
  CHECK(rows[1][2] == "sm.count");
  CHECK(std::stod(rows[1][4]) == std::round(0.5 * sms));
  // The plot is one SVG document with a bar per parameter and direction.
  const std::string plot = read_text(svg);
  CHECK(contains(plot, "<svg"));
  CHECK(contains(plot, "</svg>"));
  std::size_t bars = 0;
  for (std::size_t at = plot.find("<rect x="); at != std::string::npos; at = plot.find("<rect x=", at + 1)) ++bars;
  CHECK(bars == 4);

  // A sweep without a sensitivity section has nothing to rank; bad sensitivity sections are one error each.
  const std::string plain = dir / "plain.yaml";
  write_text(plain, tiny_spec(shipped_config("h100_sxm")));
  REQUIRE(run_warpsim({"sweep", "plan", plain, "-o", dir / "plain"}).exit_code == 0);
  r = run_warpsim({"sweep", "sensitivity", dir / "plain"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "not a sensitivity sweep"));
  const std::string base = "base: " + shipped_config("a100_sxm") + "\n";
  const std::string work = "workloads:\n  - synth: gemm\n    m: 128\n    n: 128\n    k: 128\n";
  for (const auto& [text, error] : std::vector<std::pair<std::string, std::string>>{
           {base + "candidates:\n  a: {}\nsensitivity:\n  step: 10%\n  parameters: [sm.count]\n" + work, "candidates: a spec with sensitivity:"},
           {base + "sensitivity:\n  step: 150%\n  parameters: [sm.count]\n" + work, "sensitivity.step: expected a fraction in (0, 1)"},
           {base + "sensitivity:\n  step: 10%\n  parameters: [gpu.name]\n" + work, "gpu.name: a string parameter cannot be scaled"},
           {base + "sensitivity:\n  step: 0.1%\n  parameters: [sm.count]\n" + work, "leaves its value 108 unchanged"}}) {
    const std::string bad = dir / "bad.yaml";
    write_text(bad, text);
    r = run_warpsim({"sweep", "plan", bad, "-o", dir / "bad"});
    INFO(text << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, bad));
    CHECK(contains(r.err, error));
  }
}
