// Energy, power and the power cap end to end (models/power, app/run_one.cpp): expectations from first
// principles (a GEMM's 2MNK FLOPs, bytes read / burst size, power x time) and from the configured figures, not
// from the model's code.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "test_helpers.h"

using namespace wstest;

namespace {

// A small H100 (8 SMs) so that a GEMM is quick; its GPC count must divide the SMs.
const std::vector<std::string> kSmallPowerGpu = {"sm.count=8", "noc.gpcs=2", "l2.slices=4", "hbm.channels=4"};

CmdResult run_gpu(const std::string& gpu, const std::vector<std::string>& extra, const std::string& out) {
  std::vector<std::string> args = {"run", "--gpu", gpu, "--synth", "gemm", "--synth-key", "m=512", "--synth-key", "n=512",
                                   "--synth-key", "k=512", "--out", out, "--no-progress", "-q"};
  for (const std::string& s : kSmallPowerGpu) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), extra.begin(), extra.end());
  return run_warpsim(args);
}

// A GPU config (the H100's, reference clock = its 1.83 GHz clock, so V = Vref and nothing scales) whose power
// figures are all 0 but `nonzero` (key -> value, "tensor.bf16" for a tensor type).
std::string only_power(const TempDir& dir, const std::string& name, const std::map<std::string, std::string>& nonzero) {
  std::map<std::string, std::string> v;
  for (const char* k : {"issue", "int_lane", "fp32_lane", "fp64_lane", "sfu_lane", "regfile", "smem_wavefront", "l1_sector",
                        "l2_sector", "noc_byte", "partition_link_byte", "hbm_activate", "hbm_read_burst", "hbm_write_burst",
                        "hbm_refresh", "sm_active_cycle", "sm_idle_cycle", "tensor.f16", "tensor.bf16", "tensor.tf32",
                        "tensor.fp8", "tensor.i8", "tensor.f64"})
    v[k] = "0J";
  for (const char* k : {"leakage", "constant", "hbm_background", "cap"}) v[k] = "0W";
  for (const auto& [k, x] : nonzero) v[k] = x;
  std::string yaml = "base: " + shipped_config("h100_sxm") +
                     "\npower:\n  enabled: true\n  cap_mode: report\n  reference_clock: 1.83GHz\n  min_clock: 1GHz\n  tensor:\n";
  for (const auto& [k, x] : v)
    if (k.rfind("tensor.", 0) == 0) yaml += "    " + k.substr(7) + ": " + x + "\n";
  for (const auto& [k, x] : v)
    if (k.rfind("tensor.", 0) != 0) yaml += "  " + k + ": " + x + "\n";
  const std::string path = dir / name;
  write_text(path, yaml);
  return path;
}

// All the digits a double needs to read back as itself.
std::string digits17(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace

TEST_CASE("power: a kernel's energy is its counted events times the configured energies", "[power]") {
  // Every energy 0 but three, and the reference clock at the run's clock (so V = Vref, no scaling): the tensor
  // part must be 2MNK x 1 pJ, the HBM part (bytes read / 32 B) x 1 nJ, and leakage 100 W x the time.
  TempDir dir;
  const std::string gpu = dir / "gpu.yaml";
  write_text(gpu, "base: " + shipped_config("h100_sxm") +
                      "\npower:\n  enabled: true\n  cap_mode: report\n  reference_clock: 1.83GHz\n  min_clock: 1GHz\n"
                      "  issue: 0pJ\n  int_lane: 0pJ\n  fp32_lane: 0pJ\n  fp64_lane: 0pJ\n  sfu_lane: 0pJ\n"
                      "  tensor: {f16: 0pJ, bf16: 1pJ, tf32: 0pJ, fp8: 0pJ, i8: 0pJ, f64: 0pJ}\n"
                      "  regfile: 0pJ\n  smem_wavefront: 0pJ\n  l1_sector: 0pJ\n  l2_sector: 0pJ\n  noc_byte: 0pJ\n"
                      "  partition_link_byte: 0pJ\n  hbm_activate: 0pJ\n  hbm_read_burst: 1nJ\n  hbm_write_burst: 0nJ\n"
                      "  hbm_refresh: 0nJ\n  sm_active_cycle: 0nJ\n  sm_idle_cycle: 0nJ\n  leakage: 100W\n  constant: 0W\n"
                      "  hbm_background: 0W\n  cap: 0W\n");
  const CmdResult r = run_gpu(gpu, {}, dir / "out");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string stats = read_text(dir.path() / "out" / "stats.json");
  double tensor = 0, hbm = 0, leakage = 0, total = 0, expected_total = 0;
  for (int i = 0; json::has(stats, "kernels[" + std::to_string(i) + "]"); ++i) {
    const std::string k = "kernels[" + std::to_string(i) + "]";
    const double seconds = stats_number(stats, k + ".time_us") * 1e-6;
    const double read_bursts = std::ceil(stats_number(stats, k + ".dram_bytes_read") / 32.0);
    CHECK(stats_number(stats, k + ".energy.breakdown_j.hbm") == Approx(read_bursts * 1e-9).epsilon(1e-9));
    CHECK(stats_number(stats, k + ".energy.breakdown_j.leakage") == Approx(100.0 * seconds).epsilon(1e-9));
    tensor += stats_number(stats, k + ".energy.breakdown_j.tensor");
    hbm += read_bursts * 1e-9;
    leakage += 100.0 * seconds;
    total += stats_number(stats, k + ".energy.joules");
    CHECK(stats_number(stats, k + ".energy.average_w") == Approx(stats_number(stats, k + ".energy.joules") / seconds).epsilon(1e-9));
  }
  expected_total = 2.0 * 512 * 512 * 512 * 1e-12 + hbm + leakage;
  CHECK(tensor == Approx(2.0 * 512 * 512 * 512 * 1e-12).epsilon(1e-12));
  CHECK(total == Approx(expected_total).epsilon(1e-9));
  // The run: its kernels plus the launch waits, which cost leakage only here.
  const double waits = stats_number(stats, "launch.wait_us") * 1e-6;
  CHECK(stats_number(stats, "power.energy.joules") == Approx(total + 100.0 * waits).epsilon(1e-9));
  CHECK(stats_number(stats, "power.energy.flops_per_joule") > 0);
}

TEST_CASE("power: a cap lowers a compute-bound GEMM's clock and raises its time, and a pinned clock stays", "[power]") {
  TempDir dir;
  const std::string top = "clocks.sm=1980MHz";  // h100_sxm power.reference_clock, the max boost clock
  const CmdResult free_run = run_gpu("h100_sxm", {"--set", top}, dir / "free");
  REQUIRE(free_run.exit_code == 0);
  const std::string free_stats = read_text(dir.path() / "free" / "stats.json");
  const double free_w = stats_number(free_stats, "power.energy.average_w");
  const double idle_w = stats_number(free_stats, "power.idle_w");
  REQUIRE(free_w > idle_w + 20);
  // A cap between idle and the uncapped power: the clock found is lower, the power at or under the cap.
  const double cap = std::round((free_w + idle_w) / 2 + 10);
  const std::string cap_set = "power.cap=" + std::to_string(static_cast<int>(cap)) + "W";
  const CmdResult capped = run_gpu("h100_sxm", {"--set", cap_set, "--set", "power.cap_mode=boost"}, dir / "capped");
  INFO(capped.err);
  REQUIRE(capped.exit_code == 0);
  const std::string capped_stats = read_text(dir.path() / "capped" / "stats.json");
  CHECK(stats_number(capped_stats, "power.sustained_sm_clock_hz") < 1.98e9);
  CHECK(stats_number(capped_stats, "power.energy.average_w") <= cap);
  CHECK(*json::string(capped_stats, "power.clock_policy") == "boost");
  CHECK(stats_number(capped_stats, "total_time_us") > stats_number(free_stats, "total_time_us") * 1.02);
  // The first simulation of the search is at the max boost clock, and reproduces the uncapped run's power.
  CHECK(stats_number(capped_stats, "power.clock_search[0].sm_clock_hz") == 1.98e9);
  CHECK(stats_number(capped_stats, "power.clock_search[0].average_w") == Approx(free_w).epsilon(1e-9));
  // Pinned: the same cap and mode, but --set clocks.sm keeps the clock (and says it exceeds the cap).
  const CmdResult pinned = run_gpu("h100_sxm", {"--set", cap_set, "--set", "power.cap_mode=boost", "--set", top}, dir / "pinned");
  REQUIRE(pinned.exit_code == 0);
  const std::string pinned_stats = read_text(dir.path() / "pinned" / "stats.json");
  CHECK(stats_number(pinned_stats, "power.sustained_sm_clock_hz") == 1.98e9);
  CHECK(*json::string(pinned_stats, "power.clock_policy") == "pinned");
  CHECK(pinned_stats.find("\"over_cap\": true") != std::string::npos);
}

TEST_CASE("power: a bad power figure is one error naming its key", "[power][bad input]") {
  TempDir dir;
  struct Case {
    std::string set, key;
  };
  for (const Case& c : {Case{"power.hbm_read_burst=-1pJ", "power.hbm_read_burst"},
                        Case{"power.cap=50W", "power.cap"},  // below leakage x 0.7 + constant + HBM background
                        Case{"power.tensor.bf16=3", "power.tensor.bf16"}}) {
    const CmdResult r = run_gpu("h100_sxm", {"--set", c.set}, dir / "out");
    INFO(c.set << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.key) != std::string::npos);
  }
}

TEST_CASE("power: peak power over windows - a GEMM then its reduction, constant power, a window longer than the run",
          "[power]") {
  TempDir dir;
  // Only tensor energy (1 pJ per bf16 FLOP): power is the tensor FLOP rate x 1 pJ. A split-K GEMM is a
  // compute-bound kernel followed by a memory-bound reduction that does no tensor work.
  const std::string tensor_only = only_power(dir, "tensor.yaml", {{"tensor.bf16", "1pJ"}});
  const std::vector<std::string> split = {"--synth-key", "split_k=4", "--set", "launch.mode=graph"};
  auto with = [&](std::vector<std::string> a, const std::vector<std::string>& b) { a.insert(a.end(), b.begin(), b.end()); return a; };
  const CmdResult r = run_gpu(tensor_only, with(split, {"--set", "power.window=500ns"}), dir / "short");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string s = read_text(dir.path() / "short" / "stats.json");
  // The kernels: zero the partial sums, the GEMM (the only tensor work), add the partial sums.
  int gemm = -1, kernels = 0;
  for (; json::has(s, "kernels[" + std::to_string(kernels) + "]"); ++kernels)
    if (stats_number(s, "kernels[" + std::to_string(kernels) + "].energy.breakdown_j.tensor") > 0) gemm = kernels;
  REQUIRE(gemm >= 0);
  REQUIRE(kernels > 1);
  const std::string g = "kernels[" + std::to_string(gemm) + "]";
  const double flops = 2.0 * 512 * 512 * 512;
  const double gemm_s = stats_number(s, g + ".time_us") * 1e-6, run_s = stats_number(s, "total_time_us") * 1e-6;
  REQUIRE(gemm_s > 10 * 500e-9);  // the GEMM spans many windows
  // The GEMM's windows cover it, so its peak is at least its average tensor rate; no window can beat the
  // tensor pipes' peak: 8 SMs x 4096 bf16 FLOP/clk (h100_sxm sm.tensor.flops_per_cycle.bf16) x 1.83 GHz x 1 pJ.
  const double tensor_peak_w = 8 * 4096 * 1.83e9 * 1e-12;
  CHECK(stats_number(s, g + ".energy.average_w") == Approx(flops * 1e-12 / gemm_s).epsilon(1e-6));
  CHECK(stats_number(s, g + ".energy.peak_w") >= flops * 1e-12 / gemm_s * (1 - 1e-9));
  CHECK(stats_number(s, g + ".energy.peak_w") <= tensor_peak_w * 1.001);
  CHECK(stats_number(s, g + ".energy.window_s") == Approx(500e-9));
  // The other kernels do no tensor work: 0 W throughout.
  for (int i = 0; i < kernels; ++i)
    if (i != gemm) CHECK(stats_number(s, "kernels[" + std::to_string(i) + "].energy.peak_w") == 0.0);
  // The run: all its energy is the GEMM's, spread over the GEMM, the reduction and the waits between.
  const double run_avg = stats_number(s, "power.energy.average_w");
  CHECK(run_avg == Approx(flops * 1e-12 / run_s).epsilon(1e-6));
  CHECK(stats_number(s, "power.energy.peak_w") >= flops * 1e-12 / gemm_s * 0.95);  // a window inside the GEMM
  CHECK(stats_number(s, "power.energy.peak_w") > run_avg * (0.95 * run_s / gemm_s));
  REQUIRE(run_s > 1.2 * gemm_s);

  // A window longer than the run: one window, peak = average, for every kernel and the run.
  const CmdResult whole = run_gpu(tensor_only, with(split, {"--set", "power.window=1s"}), dir / "long");
  REQUIRE(whole.exit_code == 0);
  const std::string w = read_text(dir.path() / "long" / "stats.json");
  CHECK(stats_number(w, "power.energy.peak_w") == stats_number(w, "power.energy.average_w"));
  for (int i = 0; i < kernels; ++i)
    CHECK(stats_number(w, "kernels[" + std::to_string(i) + "].energy.peak_w") == stats_number(w, "kernels[" + std::to_string(i) + "].energy.average_w"));

  // Constant power (only the board's constant 100 W): every window is 100 W, kernels, waits and run alike.
  const std::string constant = only_power(dir, "constant.yaml", {{"constant", "100W"}});
  const CmdResult c = run_gpu(constant, with(split, {"--set", "power.window=500ns"}), dir / "constant");
  REQUIRE(c.exit_code == 0);
  const std::string k = read_text(dir.path() / "constant" / "stats.json");
  CHECK(stats_number(k, g + ".energy.peak_w") == Approx(100.0).epsilon(1e-9));
  CHECK(stats_number(k, "power.energy.peak_w") == Approx(100.0).epsilon(1e-9));
  CHECK(stats_number(k, "power.energy.average_w") == Approx(100.0).epsilon(1e-9));
  // The summary and stats.csv say it too.
  CHECK(read_text(dir.path() / "constant" / "stats.csv").find(",peak_power_w,power_window_s") != std::string::npos);
}

TEST_CASE("power: technology scaling - same node and voltage change nothing, half V^2 halves dynamic energy", "[power]") {
  TempDir dir;
  auto tech = [](const std::string& ref_nm, const std::string& ref_v, const std::string& nm, const std::string& v) {
    return std::vector<std::string>{"--set", "power.technology.reference.node_nm=" + ref_nm, "--set",
                                    "power.technology.reference.vdd_v=" + ref_v, "--set",
                                    "power.technology.target.node_nm=" + nm, "--set", "power.technology.target.vdd_v=" + v};
  };
  const CmdResult plain = run_gpu("h100_sxm", {}, dir / "plain");
  REQUIRE(plain.exit_code == 0);
  const CmdResult same = run_gpu("h100_sxm", tech("7", "0.75", "7", "0.75"), dir / "same");
  REQUIRE(same.exit_code == 0);
  // V / sqrt(2): V^2 halves.
  const CmdResult half = run_gpu("h100_sxm", tech("7", "0.75", "7", digits17(0.75 / std::sqrt(2.0))), dir / "half");
  INFO(half.err);
  REQUIRE(half.exit_code == 0);
  const std::string p = read_text(dir.path() / "plain" / "stats.json"), s = read_text(dir.path() / "same" / "stats.json"),
                    h = read_text(dir.path() / "half" / "stats.json");
  // Bit for bit: the same numbers printed.
  CHECK(*json::raw(p, "power") == *json::raw(s, "power"));
  CHECK(*json::raw(p, "kernels[0].energy") == *json::raw(s, "kernels[0].energy"));
  // Half V^2 at a fixed node: every SM, L2 and crossbar energy halves, leakage goes with V (1/sqrt 2), HBM and the
  // board's constant power stay, and so does the time.
  CHECK(stats_number(h, "total_cycles") == stats_number(p, "total_cycles"));
  for (const char* part : {"sm_issue", "int", "fp32", "tensor", "regfile", "smem", "l1", "l2", "noc", "sm_clock"}) {
    INFO(part);
    CHECK(stats_number(h, std::string("power.energy.breakdown_j.") + part) ==
          Approx(0.5 * stats_number(p, std::string("power.energy.breakdown_j.") + part)).epsilon(1e-9));
  }
  CHECK(stats_number(h, "power.energy.breakdown_j.leakage") == Approx(stats_number(p, "power.energy.breakdown_j.leakage") / std::sqrt(2.0)).epsilon(1e-9));
  CHECK(stats_number(h, "power.energy.breakdown_j.hbm") == stats_number(p, "power.energy.breakdown_j.hbm"));
  CHECK(stats_number(h, "power.energy.breakdown_j.constant") == stats_number(p, "power.energy.breakdown_j.constant"));
  // warpsim config shows the figures in effect: h100_sxm power.issue 15 pJ, halved.
  const std::vector<std::string> t = tech("7", "0.75", "7", digits17(0.75 / std::sqrt(2.0)));
  std::vector<std::string> args = {"config", "--gpu", "h100_sxm"};
  args.insert(args.end(), t.begin(), t.end());
  const CmdResult config = run_warpsim(args);
  REQUIRE(config.exit_code == 0);
  CHECK(config.out.find("# power.technology: 7 nm at 0.75 V -> 7 nm at") != std::string::npos);
  CHECK(config.out.find("issue 7.5pJ") != std::string::npos);
}

TEST_CASE("power: a technology node outside the table, or one end missing, is one error naming the key",
          "[power][bad input]") {
  TempDir dir;
  struct Case {
    std::vector<std::string> sets;
    std::string key, says;
  };
  for (const Case& c : {Case{{"power.technology.reference.node_nm=7", "power.technology.reference.vdd_v=0.75",
                              "power.technology.target.node_nm=5", "power.technology.target.vdd_v=0.7"},
                             "power.technology.target.node_nm", "no technology figures for 5 nm"},
                        Case{{"power.technology.target.node_nm=7", "power.technology.target.vdd_v=0.7"},
                             "power.technology.reference.node_nm", "both ends"}}) {
    std::vector<std::string> args = {"config", "--gpu", "h100_sxm"};
    for (const std::string& set : c.sets) args.insert(args.end(), {"--set", set});
    const CmdResult r = run_warpsim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.key) != std::string::npos);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

TEST_CASE("power: the timeline's power counter track holds each kernel's windows, adding up to its energy", "[power]") {
  // A split-K GEMM on the small H100 (zeroing, GEMM, reduction) with 500 ns windows at the configured clock.
  TempDir dir;
  const CmdResult r = run_gpu("h100_sxm", {"--synth-key", "split_k=4", "--set", "power.window=500ns", "--set",
                                           "power.cap_mode=report"}, dir / "out");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string stats = read_text(dir.path() / "out" / "stats.json");
  // The counter samples and the kernels' spans, from the timeline's one-event-per-line form.
  const std::regex sample_re(R"re("name":"power \(W\)","ph":"C","pid":0,"ts":([-+0-9.eE]+),"args":\{"W":([-+0-9.eE]+)\})re");
  const std::regex kernel_re(R"re("cat":"kernel","ph":"X","pid":0,"tid":0,"ts":([-+0-9.eE]+),"dur":([-+0-9.eE]+))re");
  std::vector<std::pair<double, double>> samples;  // (us, W)
  std::vector<std::pair<double, double>> kernels;  // (start us, duration us)
  std::istringstream lines(read_text(dir.path() / "out" / "timeline.json"));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, sample_re)) samples.emplace_back(std::stod(m[1]), std::stod(m[2]));
    else if (std::regex_search(line, m, kernel_re)) kernels.emplace_back(std::stod(m[1]), std::stod(m[2]));
  }
  REQUIRE(kernels.size() >= 3);
  REQUIRE(samples.size() > kernels.size());
  for (std::size_t i = 1; i < samples.size(); ++i) CHECK(samples[i].first >= samples[i - 1].first);
  // The track's value held over each kernel, integrated, is the kernel's energy in stats.json; its highest value
  // there is at least the kernel's peak (which joins a short last window to the one before it).
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    INFO("kernel " << k);
    const double start = kernels[k].first, end = start + kernels[k].second;
    double joules = 0.0, highest = 0.0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double from = std::max(samples[i].first, start);
      const double to = std::min(i + 1 < samples.size() ? samples[i + 1].first : end, end);
      if (to <= from) continue;
      joules += samples[i].second * (to - from) * 1e-6;
      highest = std::max(highest, samples[i].second);
    }
    const std::string kp = "kernels[" + std::to_string(k) + "].energy";
    CHECK(joules == Approx(stats_number(stats, kp + ".joules")).epsilon(1e-6));
    CHECK(highest >= stats_number(stats, kp + ".peak_w") * (1 - 1e-9));
  }
  // After the run: the idle GPU.
  CHECK(samples.back().second == Approx(stats_number(stats, "power.idle_w")));
}
