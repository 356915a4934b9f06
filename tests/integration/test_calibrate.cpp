// `warpsim calibrate`: config values recovered from figures the simulator itself produced with a known value set
// (first principles: the value the "measurement" was made with is the answer), cases that cannot determine their
// parameter reported rather than used, the overlay it writes loading as a config, and its input errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>
#include <string>

#include "test_helpers.h"

using namespace wstest;

namespace {

// A config value as `warpsim config` resolves it (base units).
double config_value(const std::string& gpu, const std::string& key) {
  RUN_WARPSIM(r, {"config", "--gpu", gpu});
  REQUIRE(r.exit_code == 0);
  return config_number(read_flat_yaml(r.out), key);
}

std::string reference_case(const std::string& id, const std::string& workload, const std::string& metric,
                           const std::string& measured, const std::string& extra) {
  return "- id: " + id + "\n  gpu: a100_sxm\n  workload: " + workload + "\n  metric: " + metric +
         "\n  measured: " + measured + "\n  source: test\n" + extra;
}

// What the simulator gives for a workload with `set` applied: validate's JSON holds the simulated figure exactly.
double simulated_with(const TempDir& dir, const std::string& workload, const std::string& metric, const std::string& set) {
  const std::string ref = dir / "truth.yaml";
  write_text(ref, reference_case("truth", workload, metric, "1", "  set: {" + set + "}\n"));
  RUN_WARPSIM(r, {"validate", "--reference", ref, "--json", dir / "truth.json"});
  REQUIRE(r.exit_code == 0);
  const std::optional<double> simulated = json::number(read_text(dir.path() / "truth.json"), "cases[0].simulated");
  REQUIRE(simulated);
  return *simulated;
}

std::string exact(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

const std::string kL1Chase = "{kind: pointer_chase, footprint: 16KiB, steps: 1024}";
const std::string kStream = "{kind: stream, op: read, bytes: 4MiB}";

void check_one_error(const CmdResult& r, const std::vector<std::string>& expected) {
  CHECK(r.exit_code == 2);
  CHECK(count_lines_containing(r.err, "error:") == 1);
  for (const std::string& e : expected) CHECK(contains(r.err, e));
}

}  // namespace

TEST_CASE("calibrate recovers an L1 latency the measurement was simulated with, and reports a case that cannot "
          "determine its parameter", "[calibrate]") {
  TempDir dir;
  const double l1 = config_value("a100_sxm", "l1.hit_latency");
  const double target = l1 + 13;
  const double measured = simulated_with(dir, kL1Chase, "latency_cycles", "l1.hit_latency: " + exact(target));
  const std::string ref = dir / "micro.yaml";
  // The second case is an L1-resident chase said to tune the DRAM latency: only its few cold misses reach DRAM,
  // so it cannot determine hbm.latency and must not be used (though it matches at the configured value).
  write_text(ref, reference_case("l1.chase", kL1Chase, "latency_cycles", exact(measured), "  tunes: l1.hit_latency\n") +
                      reference_case("l1.chase.as_dram", kL1Chase, "latency_cycles", exact(measured), "  tunes: hbm.latency\n") +
                      reference_case("untuned", kL1Chase, "latency_cycles", exact(measured), ""));
  const std::string overlay = dir / "overlay.yaml";
  RUN_WARPSIM(r, {"calibrate", "--reference", ref, "--gpu", "a100_sxm", "--out", overlay, "--json", dir / "cal.json"});
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir.path() / "cal.json");
  INFO(j);
  CHECK(json::string(j, "proposals[0].parameter") == "l1.hit_latency");
  CHECK(json::number(j, "proposals[0].old") == l1);
  CHECK(json::number(j, "proposals[0].new") == target);
  CHECK(!json::has(j, "proposals[1]"));  // nothing proposed for hbm.latency
  REQUIRE(json::number(j, "cases[0].error_after_pct"));
  CHECK(std::abs(*json::number(j, "cases[0].error_after_pct")) < 1e-9);
  CHECK(std::abs(*json::number(j, "cases[0].error_before_pct")) > 1);
  CHECK(json::raw(j, "cases[1].used") == "false");
  CHECK(contains(*json::string(j, "cases[1].reason"), "hardly depends on hbm.latency"));
  CHECK(json::string(j, "not_used[0].id") == "untuned");
  CHECK(contains(r.out, "not used: no tunes:"));
  CHECK(contains(r.out, "l1.hit_latency"));

  // The overlay is a config: it loads, and gives the recovered value.
  const std::string text = read_text(overlay);
  INFO(text);
  CHECK(contains(text, "base: a100_sxm"));
  CHECK(contains(text, "fitted to l1.chase"));
  CHECK(config_value(overlay, "l1.hit_latency") == target);
  CHECK(config_value(overlay, "hbm.latency") == config_value("a100_sxm", "hbm.latency"));

  // An existing overlay is replaced only with --force.
  RUN_WARPSIM(again, {"calibrate", "--reference", ref, "--gpu", "a100_sxm", "--out", overlay});
  check_one_error(again, {"--out", "exists", "--force"});
  RUN_WARPSIM(forced, {"calibrate", "--reference", ref, "--gpu", "a100_sxm", "--out", overlay, "--force"});
  CHECK(forced.exit_code == 0);
}

TEST_CASE("calibrate recovers an HBM bandwidth from a stream measurement within 1%", "[calibrate]") {
  TempDir dir;
  const double bandwidth = config_value("a100_sxm", "hbm.bandwidth");
  const double target = bandwidth * 0.8;
  // On hbm_simple, whose bus time is exactly proportional to 1 / hbm.bandwidth (hbm_detailed rounds a burst to
  // whole HBM clocks, so its bandwidth moves in steps that a 1% fit cannot resolve).
  const double measured = simulated_with(dir, kStream, "bandwidth_gbps", "hbm.impl: hbm_simple, hbm.bandwidth: " + exact(target / 1e9) + "GB/s");
  const std::string ref = dir / "micro.yaml";
  write_text(ref, reference_case("stream", kStream, "bandwidth_gbps", exact(measured), "  set: {hbm.impl: hbm_simple}\n  tunes: hbm.bandwidth\n"));
  const std::string overlay = dir / "overlay.yaml";
  RUN_WARPSIM(r, {"calibrate", "--reference", ref, "--gpu", "a100_sxm", "--out", overlay, "--json", dir / "cal.json"});
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir.path() / "cal.json");
  INFO(j);
  const std::optional<double> proposed = json::number(j, "proposals[0].new");
  REQUIRE(proposed);
  CHECK(std::abs(*proposed / target - 1) < 0.01);
  CHECK(std::abs(*json::number(j, "cases[0].error_after_pct")) < 1);
  // The overlay writes the value in its unit and loads.
  CHECK(std::regex_search(read_text(overlay), std::regex("\nhbm\\.bandwidth: [0-9.]+[GT]B/s +# was ")));
  CHECK(std::abs(config_value(overlay, "hbm.bandwidth") / target - 1) < 0.01);
}

TEST_CASE("calibrate: bad tunes, an overlay into the shipped configs, nothing to fit: one error each", "[calibrate][errors]") {
  TempDir dir;
  const std::string ref = dir / "micro.yaml";
  const std::string out = dir / "overlay.yaml";
  const auto calibrate = [&](const std::string& text, const std::string& gpu = "a100_sxm",
                              const std::string& overlay = "", bool force = false) {
    write_text(ref, text);
    std::vector<std::string> args{"calibrate", "--reference", ref, "--gpu", gpu, "--out", overlay.empty() ? out : overlay};
    if (force) args.push_back("--force");
    return run_warpsim(args);
  };
  const std::string good = reference_case("c1", kL1Chase, "latency_cycles", "40", "  tunes: l1.hit_latency\n");
  {
    const CmdResult r = calibrate(reference_case("c1", kL1Chase, "latency_cycles", "40", "  tunes: l1.hit_latncy\n"));
    check_one_error(r, {ref + ":1: case c1: tunes:", "no parameter 'l1.hit_latncy'", "did you mean 'l1.hit_latency'?"});
  }
  {
    const CmdResult r = calibrate(reference_case("c1", kL1Chase, "latency_cycles", "40", "  tunes: gpu.name\n"));
    check_one_error(r, {ref + ":1: case c1: tunes:", "gpu.name is a string parameter", "numeric"});
  }
  {
    const CmdResult r = calibrate(reference_case("c1", kL1Chase, "latency_cycles", "40", ""));
    check_one_error(r, {"none of the 1 cases on a100_sxm has `tunes:`", "nothing to fit"});
  }
  {
    // Cases with tunes:, none of which can determine its parameter: the table says why, and no overlay.
    const CmdResult r = calibrate(reference_case("c1", kL1Chase, "latency_cycles", "40", "  tunes: smem.latency\n"));
    check_one_error(r, {"none of the 1 cases with tunes: could be fitted", "no overlay written"});
    CHECK(contains(r.out, "does not depend on smem.latency"));
  }
  {
    const CmdResult r = calibrate(good, "h100_sxm");
    check_one_error(r, {"calibrate: no case runs on --gpu h100_sxm"});
  }
  {
    const std::string shipped = (source_dir() / "configs" / "calibrated_test.yaml").string();
    const CmdResult r = calibrate(good, "a100_sxm", shipped);
    check_one_error(r, {"shipped configs directory", "never edits a shipped config"});
    CHECK(!fs::exists(shipped));
    const CmdResult over = calibrate(good, "a100_sxm", shipped_config("a100_sxm"), true);
    check_one_error(over, {"shipped configs directory"});
  }
  CHECK(!fs::exists(out));  // no error wrote an overlay
}

TEST_CASE("calibrate --help describes the command and warpsim --help lists it", "[calibrate][help]") {
  RUN_WARPSIM(help, {"calibrate", "--help"});
  CHECK(help.exit_code == 0);
  for (const char* text : {"usage: warpsim calibrate", "--reference", "--gpu", "--out", "--force", "--json", "tunes:", "median"})
    CHECK(contains(help.out, text));
  RUN_WARPSIM(all, {"--help"});
  CHECK(contains(all.out, "calibrate"));
}
