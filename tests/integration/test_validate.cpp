// `warpsim validate`: reference files and their errors (each an exit status 2 naming FILE:LINE and the case),
// unsupported cases, filters, worker processes (same results as one process; a killed worker is a failed case,
// not a hang), the JSON and CSV it writes, plots, and the summary statistics on a hand-worked example.
#include <catch2/catch.hpp>

#include <signal.h>

#include <regex>

#include "app/validate/runner.h"
#include "app/validate/summary.h"
#include "test_helpers.h"

using namespace wstest;

namespace {

std::string small_reference() { return (source_dir() / "tests" / "data" / "validate_small.yaml").string(); }

// One clear message: exit status 2 and exactly one "error:" line on stderr, containing every `expected` part.
void check_file_error(const CmdResult& r, const std::vector<std::string>& expected) {
  CHECK(r.exit_code == 2);
  CHECK(count_lines_containing(r.err, "error:") == 1);
  for (const std::string& e : expected) CHECK(contains(r.err, e));
}

// A reference file holding one case: `fields` replaces the fields of a good case.
std::string one_case(const std::string& fields) {
  return "- id: c1\n" + fields;
}

const std::string kGoodFields =
    "  gpu: a100_sxm\n"
    "  workload: {kind: gemm, m: 256, n: 256, k: 256}\n"
    "  metric: time_us\n"
    "  measured: 10\n"
    "  source: test\n";

}  // namespace

TEST_CASE("validate: errors of a reference file name the file, the line and the case", "[validate][errors]") {
  TempDir dir;
  const std::string f = dir / "ref.yaml";
  struct Bad {
    std::string text;
    std::vector<std::string> expected;  // in the one error line
  };
  const std::vector<Bad> bad = {
      // An unknown key of a registered kind, with a did-you-mean, at the line of the key.
      {one_case("  gpu: a100_sxm\n  workload:\n    kind: gemm\n    m: 256\n    n: 256\n    kk: 256\n  metric: time_us\n"
                "  measured: 10\n  source: test\n"),
       {f + ":7: case c1:", "no key 'kk'", "did you mean 'k'?"}},
      // A misspelt kind is an error, not an unsupported case.
      {one_case("  gpu: a100_sxm\n  workload: {kind: gemn, m: 256, n: 256, k: 256}\n  metric: time_us\n  measured: 10\n"
                "  source: test\n"),
       {f + ":3: case c1:", "unknown kind 'gemn'", "did you mean 'gemm'?"}},
      {one_case("  gpu: a100_sxm\n  workload: {kind: gemm, m: 256, n: 256, k: 256}\n  metric: time_ms\n  measured: 10\n"
                "  source: test\n"),
       {f + ":4: case c1:", "unknown metric 'time_ms'", "did you mean 'time_us'?"}},
      {one_case("  gpu: a100_sxn\n  workload: {kind: gemm, m: 256, n: 256, k: 256}\n  metric: time_us\n  measured: 10\n"
                "  source: test\n"),
       {f + ":2: case c1:", "a100_sxn", "did you mean 'a100_sxm'?"}},
      {one_case(kGoodFields) + one_case(kGoodFields), {f + ":7: case c1:", "duplicate id (first at line 1)"}},
      {one_case("  gpu: a100_sxm\n  workload: {kind: gemm, m: 256, n: 256, k: 256}\n  metric: time_us\n  source: test\n"),
       {f + ":1: case c1:", "'measured' is missing"}},
      {one_case("  gpu: a100_sxm\n  workload: {kind: gemm, m: 256, n: 256, k: 256}\n  metric: time_us\n"
                "  measured: fast\n  source: test\n"),
       {f + ":5: case c1:", "measured: expected a number", "'fast'"}},
      {one_case(kGoodFields + "  mesured: 3\n"), {f + ":7: case c1:", "unknown field 'mesured'", "did you mean 'measured'?"}},
      {one_case(kGoodFields + "  set: {hbm.bandwith: 2TB/s}\n"), {f + ":7: case c1:", "bandwith"}},
      {one_case(kGoodFields + "  note: a: b\n"), {f + ":7:", "YAML syntax error"}},
      {"id: c1\ngpu: a100_sxm\n", {f + ":1:", "expected a list of cases"}},
  };
  for (const Bad& b : bad) {
    write_text(f, b.text);
    RUN_WARPSIM(r, {"validate", "--reference", f});
    INFO(b.text);
    check_file_error(r, b.expected);
  }
  {
    RUN_WARPSIM(r, {"validate", "--reference", dir / "missing.yaml"});
    check_file_error(r, {"cannot open reference file '" + dir / "missing.yaml" + "': No such file or directory"});
  }
  {
    RUN_WARPSIM(r, {"validate"});
    check_file_error(r, {"--reference"});
  }
}

TEST_CASE("validate: unsupported kinds and LLM metrics are counted with their reason - --json and --csv", "[validate]") {
  TempDir dir;
  RUN_WARPSIM(r, {"validate", "--reference", small_reference(), "--json", dir / "v.json", "--csv", dir / "v.csv"});
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir / "v.json");
  CHECK(json::string(j, "reference[0]") == small_reference());
  // File order, every field of the shared design.
  const std::vector<std::string> ids = {"a100.gemm.bf16.256", "h100.gemm.bf16.256", "h100.gemm.bf16.256x512x256.tflops",
                                        "h100.batched_gemm.qk", "h100.llm.decode"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string c = "cases[" + std::to_string(i) + "]";
    CHECK(json::string(j, c + ".id") == ids[i]);
    for (const char* key : {"gpu", "category", "kind", "metric", "measured", "simulated", "error_pct", "status", "reason",
                            "source", "unit"})
      CHECK(json::has(j, c + "." + key));
  }
  CHECK(json::string(j, "cases[0].status") == "ok");
  CHECK(json::string(j, "cases[0].unit") == "us");
  CHECK(json::string(j, "cases[2].unit") == "TFLOP/s");
  CHECK(json::string(j, "cases[2].category") == "gemm_rate");
  CHECK(json::string(j, "cases[0].category") == "gemm");  // the kind when not given
  CHECK(json::string(j, "cases[3].status") == "unsupported");
  CHECK(contains(*json::string(j, "cases[3].reason"), "batched_gemm"));
  CHECK(json::raw(j, "cases[3].simulated") == "null");
  CHECK(json::string(j, "cases[4].status") == "unsupported");
  CHECK(contains(*json::string(j, "cases[4].reason"), "LLM"));
  // error_pct as defined: (simulated - measured) / measured * 100.
  for (int i = 0; i < 3; ++i) {
    const std::string c = "cases[" + std::to_string(i) + "]";
    const double measured = *json::number(j, c + ".measured"), simulated = *json::number(j, c + ".simulated");
    CHECK(simulated > 0);
    CHECK(*json::number(j, c + ".error_pct") == Approx((simulated - measured) / measured * 100));
  }
  CHECK(json::number(j, "summary.overall.cases") == 5);
  CHECK(json::number(j, "summary.overall.ok") == 3);
  CHECK(json::number(j, "summary.overall.unsupported") == 2);
  CHECK(json::number(j, "summary.overall.failed") == 0);
  CHECK(json::number(j, "summary.by_gpu.a100_sxm.cases") == 1);
  CHECK(json::number(j, "summary.by_gpu.h100_sxm.cases") == 4);
  CHECK(json::raw(j, "summary.by_category.batched_gemm.mape_pct") == "null");  // no ok case
  CHECK(json::raw(j, "summary.by_category.gemm.correlation") != "null");   // two ok cases
  CHECK(json::number(j, "summary.by_gpu_category.h100_sxm/gemm.cases") == 1);
  // The table: one row per case, and the summaries.
  for (const std::string& id : ids) CHECK(count_lines_containing(r.out, id) >= 1);
  CHECK(count_lines_containing(r.out, "unsupported: workload kind 'batched_gemm'") == 1);
  CHECK(contains(r.out, "by GPU:"));
  CHECK(contains(r.out, "by category:"));
  // The CSV: the header, then one row per case, in order.
  const std::string csv = read_text(dir / "v.csv");
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  CHECK(line == "id,gpu,category,kind,metric,measured,simulated,error_pct,status,reason,source");
  for (const std::string& id : ids) {
    REQUIRE(std::getline(lines, line));
    CHECK(line.rfind(id + ",", 0) == 0);
  }
  CHECK_FALSE(std::getline(lines, line));
}

TEST_CASE("validate: --only and --gpu select cases - a bad regular expression is an error naming --only", "[validate]") {
  TempDir dir;
  {
    RUN_WARPSIM(r, {"validate", "--reference", small_reference(), "--only", "^h100\\.gemm\\.bf16\\.256$", "--json", dir / "o.json"});
    REQUIRE(r.exit_code == 0);
    const std::string j = read_text(dir / "o.json");
    CHECK(json::number(j, "summary.overall.cases") == 1);
    CHECK(json::string(j, "cases[0].id") == "h100.gemm.bf16.256");
  }
  {
    // A path to the shipped file is the same GPU as its name.
    RUN_WARPSIM(r, {"validate", "--reference", small_reference(), "--gpu", shipped_config("a100_sxm"), "--json", dir / "g.json"});
    REQUIRE(r.exit_code == 0);
    const std::string j = read_text(dir / "g.json");
    CHECK(json::number(j, "summary.overall.cases") == 1);
    CHECK(json::string(j, "cases[0].gpu") == "a100_sxm");
  }
  {
    RUN_WARPSIM(r, {"validate", "--reference", small_reference(), "--only", "(unclosed"});
    check_file_error(r, {"--only"});
  }
  {
    RUN_WARPSIM(r, {"validate", "--reference", small_reference(), "--only", "nothing-matches-this"});
    check_file_error(r, {"no case"});
  }
}

TEST_CASE("validate: -j 2 gives the same cases as -j 1, in file order", "[validate][jobs]") {
  TempDir dir;
  RUN_WARPSIM(serial, {"validate", "--reference", small_reference(), "-j", "1", "--json", dir / "1.json"});
  RUN_WARPSIM(parallel, {"validate", "--reference", small_reference(), "-j", "2", "--json", dir / "2.json"});
  REQUIRE(serial.exit_code == 0);
  REQUIRE(parallel.exit_code == 0);
  const std::string a = read_text(dir / "1.json"), b = read_text(dir / "2.json");
  CHECK(json::raw(a, "cases") == json::raw(b, "cases"));
  CHECK(json::raw(a, "summary") == json::raw(b, "summary"));
  CHECK(serial.out == parallel.out);
}

TEST_CASE("validate: a worker process that dies makes its case failed, the others still run", "[validate][jobs]") {
  warpsim::ReferenceCase c;
  c.gpu = "a100_sxm";
  c.kind = "gemm";
  c.keys = {{"m", "256"}, {"n", "256"}, {"k", "256"}};
  c.metric = "time_us";
  c.measured = 10;
  c.source = "test";
  std::vector<warpsim::ReferenceCase> cases(3, c);
  cases[0].id = "survives.0";
  cases[1].id = "killed";
  cases[1].keys["m"] = "128";  // a workload of its own: cases of one workload share a simulation (and a worker)
  cases[2].id = "survives.2";
  cases[2].overrides = {"sm.count=54"};  // and one more: the same GEMM on half the SMs
  warpsim::ValidateOptions options;
  options.jobs = 2;
  options.before_simulation = [](const warpsim::ReferenceCase& rc) {
    if (rc.id == "killed") ::raise(SIGKILL);
  };
  const std::vector<warpsim::CaseResult> results = warpsim::run_cases(cases, options);
  REQUIRE(results.size() == 3);
  CHECK(results[0].status == warpsim::CaseStatus::Ok);
  CHECK(results[1].status == warpsim::CaseStatus::Failed);
  CHECK(contains(results[1].reason, "signal 9"));
  CHECK(results[2].status == warpsim::CaseStatus::Ok);
  CHECK(results[2].simulated > 0);
}

TEST_CASE("validate: cases of one workload share one simulation, with the results of separate runs",
          "[validate][jobs]") {
  warpsim::ReferenceCase c;
  c.gpu = "a100_sxm";
  c.kind = "gemm";
  c.keys = {{"m", "256"}, {"n", "256"}, {"k", "256"}};
  c.measured = 10;
  c.source = "test";
  std::vector<warpsim::ReferenceCase> cases;
  for (const char* metric : {"time_us", "cycles", "dram_bytes_read"}) {
    c.id = std::string("shared.") + metric;
    c.metric = metric;
    cases.push_back(c);
  }
  c.id = "other";
  c.metric = "time_us";
  c.keys["m"] = "128";
  cases.insert(cases.begin() + 1, c);  // interleaved: grouping must not depend on order
  int simulations = 0;
  warpsim::ValidateOptions options;
  options.before_simulation = [&](const warpsim::ReferenceCase&) { ++simulations; };
  const std::vector<warpsim::CaseResult> together = warpsim::run_cases(cases, options);
  CHECK(simulations == 2);
  REQUIRE(together.size() == cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].id);
    CHECK(together[i].reference.id == cases[i].id);
    const warpsim::CaseResult alone = warpsim::run_case(cases[i], warpsim::ValidateOptions{});
    REQUIRE(together[i].status == warpsim::CaseStatus::Ok);
    CHECK(together[i].simulated == alone.simulated);
  }
  CHECK(together[0].simulated != together[1].simulated);  // the other workload is not answered from the shared run
}

TEST_CASE("validate: a case's own set: wins over the overrides applied to every case", "[validate]") {
  warpsim::ReferenceCase c;
  c.id = "own";
  c.gpu = "a100_sxm";
  c.kind = "gemm";
  c.keys = {{"m", "256"}, {"n", "1024"}, {"k", "256"}};
  c.metric = "time_us";
  c.measured = 10;
  c.source = "test";
  c.overrides = {"sm.count=16"};
  warpsim::ValidateOptions every_case;
  every_case.extra_overrides = {"sm.count=64", "hbm.latency=400"};
  const warpsim::CaseResult both = warpsim::run_case(c, every_case);
  warpsim::ReferenceCase expected = c;
  expected.overrides = {"hbm.latency=400", "sm.count=16"};
  const warpsim::CaseResult alone = warpsim::run_case(expected, warpsim::ValidateOptions{});
  warpsim::ReferenceCase wider = c;
  wider.overrides = {"hbm.latency=400", "sm.count=64"};
  const warpsim::CaseResult on_64 = warpsim::run_case(wider, warpsim::ValidateOptions{});
  REQUIRE(both.status == warpsim::CaseStatus::Ok);
  CHECK(both.simulated == alone.simulated);
  CHECK(both.simulated != on_64.simulated);  // the SM count matters here, so the check above can fail
}

TEST_CASE("validate: a case the synthesizer refuses is failed with the reason", "[validate]") {
  TempDir dir;
  const std::string f = dir / "ref.yaml";
  write_text(f, "- id: zero\n  gpu: a100_sxm\n  workload: {kind: gemm, m: 0, n: 256, k: 256}\n  metric: time_us\n"
                "  measured: 10\n  source: test\n");
  RUN_WARPSIM(r, {"validate", "--reference", f, "--json", dir / "v.json"});
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir / "v.json");
  CHECK(json::string(j, "cases[0].status") == "failed");
  CHECK(contains(*json::string(j, "cases[0].reason"), "m"));
  CHECK(json::number(j, "summary.overall.failed") == 1);
}

TEST_CASE("validate: summary statistics of a hand-worked example", "[validate][summary]") {
  // measured 100, 200, 400; simulated 110, 160, 400: errors +10%, -20%, 0%.
  //   MAPE = (10 + 20 + 0) / 3 = 10%; mean signed error = (10 - 20 + 0) / 3 = -3.333%; worst: b at -20%.
  //   Pearson: means 233.33 and 223.33; deviations (-133.33, -33.33, 166.67) and (-113.33, -63.33, 176.67);
  //   covariance sum 46666.7, variance sums 46666.7 and 48066.7: r = 46666.7 / sqrt(46666.7 * 48066.7) = 0.98533.
  // A fourth case, unsupported, counts but takes no part in the figures.
  std::vector<warpsim::CaseResult> results(4);
  const double measured[] = {100, 200, 400, 50}, simulated[] = {110, 160, 400, 0};
  const char* ids[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    results[i].reference.id = ids[i];
    results[i].reference.measured = measured[i];
    results[i].simulated = simulated[i];
    results[i].error_pct = (simulated[i] - measured[i]) / measured[i] * 100;
    results[i].status = i < 3 ? warpsim::CaseStatus::Ok : warpsim::CaseStatus::Unsupported;
  }
  const warpsim::ValidationSummary s = warpsim::summarize(results);
  CHECK(s.cases == 4);
  CHECK(s.ok == 3);
  CHECK(s.unsupported == 1);
  CHECK(*s.mape_pct == Approx(10.0));
  CHECK(*s.mean_signed_error_pct == Approx(-10.0 / 3));
  CHECK(s.worst_id == "b");
  CHECK(*s.worst_error_pct == Approx(-20.0));
  CHECK(*s.correlation == Approx(0.98533).epsilon(1e-4));
  // One ok case: no correlation; none: no figures.
  const warpsim::ValidationSummary one = warpsim::summarize(std::vector<warpsim::CaseResult>{results[0]});
  CHECK_FALSE(one.correlation.has_value());
  const warpsim::ValidationSummary none = warpsim::summarize(std::vector<warpsim::CaseResult>{results[3]});
  CHECK_FALSE(none.mape_pct.has_value());
}

TEST_CASE("validate: --plots draws a PNG and an SVG per category", "[validate][plots]") {
  TempDir dir;
  RUN_WARPSIM(r, {"validate", "--reference", small_reference(), "--only", "gemm", "--plots", dir / "plots"});
  if (r.exit_code == 2 && contains(r.err, "matplotlib")) {
    WARN("warpsim-skip: python3 with matplotlib is not available");
    return;
  }
  REQUIRE(r.exit_code == 0);
  for (const char* category : {"gemm", "gemm_rate"})
    for (const char* ext : {".png", ".svg"}) {
      const fs::path p = fs::path(dir / "plots") / (std::string(category) + ext);
      CHECK(fs::exists(p));
      CHECK(fs::file_size(p) > 1000);
    }
  CHECK(fs::exists(dir / "plots/validation.json"));
}

TEST_CASE("validate: --help describes the command and the reference format", "[validate][help]") {
  RUN_WARPSIM(r, {"validate", "--help"});
  CHECK(r.exit_code == 0);
  for (const char* s : {"usage: warpsim validate", "--reference", "--gpu", "--only", "--json", "--csv", "--plots", "--jobs",
                        "measured:", "Exit status"})
    CHECK(contains(r.out, s));
}
