// SM subsetting end to end (`warpsim run --subset N`, sim.subset): a memory-bound stream and a GEMM run on half of
// a half H100 against the same kernels on all of it, what stats.json and the summary say, determinism, and bad
// values. The half H100 (66 SMs in 4 GPCs, 40 slices, 80 channels, and their totals) keeps the shipped GPU's
// proportions and each run to a second or two.
#include <catch2/catch.hpp>

#include <cmath>

#include "test_helpers.h"

using namespace wstest;

namespace {

const std::vector<std::string> kHalfH100 = {"sm.count=66",     "noc.gpcs=4",          "l2.slices=40",
                                           "hbm.channels=80",  "l2.size=25MiB",       "hbm.bandwidth=1.676TB/s",
                                           "l2.bandwidth=8.705TB/s", "noc.partition_link_bandwidth=640"};

struct SubsetRun {
  std::string stats, out;
};

SubsetRun subset_cli_run(std::vector<std::string> workload, const std::string& subset) {
  TempDir dir;
  std::vector<std::string> args = {"run", "--gpu", "h100_sxm", "--subset", subset, "--driver", "plain",
                                   "--out", dir / "out", "--no-progress"};
  for (const std::string& s : kHalfH100) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), workload.begin(), workload.end());  // after the GPU: its --set may change it
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  return {read_text(dir.path() / "out" / "stats.json"), r.out};
}

double subset_relative(double a, double b) { return std::abs(a - b) / b; }

const std::vector<std::string> kStream = {"--synth", "stream", "--synth-key", "op=copy", "--synth-key", "bytes=16MiB"};

}  // namespace

TEST_CASE("SM subsetting: a memory-bound stream on half the GPU, its time and traffic as on the whole", "[subset]") {
  const SubsetRun whole = subset_cli_run(kStream, "1");
  const SubsetRun half = subset_cli_run(kStream, "2");
  CHECK_FALSE(json::has(whole.stats, "kernels[0].sampling"));
  REQUIRE(json::has(half.stats, "kernels[0].sampling"));
  CHECK(json::string(half.stats, "kernels[0].sampling.method") == "sms");
  CHECK(json::raw(half.stats, "kernels[0].sampling.exact") == "false");
  CHECK(stats_number(half.stats, "kernels[0].sampling.subset_divisor") == 2);
  // The stream's grid is 2 CTAs per SM of the whole GPU: 132, of which the half runs 66.
  CHECK(stats_number(half.stats, "kernels[0].sampling.total_ctas") == 132);
  CHECK(stats_number(half.stats, "kernels[0].sampling.subset_ctas") == 66);
  CHECK(stats_number(half.stats, "kernels[0].sampling.subset_factor") == 2);
  CHECK(contains(half.out, "1/2 of the GPU"));
  CHECK(contains(half.out, "ESTIMATE"));

  const double t_whole = stats_number(whole.stats, "total_time_us"), t_half = stats_number(half.stats, "total_time_us");
  INFO("whole " << t_whole << " us, half " << t_half << " us");
  CHECK(subset_relative(t_half, t_whole) < 0.03);
  // Instructions counted from the trace for the CTAs the subset left out: exactly the whole run's.
  CHECK(stats_number(half.stats, "kernels[0].warp_instructions") == stats_number(whole.stats, "kernels[0].warp_instructions"));
  CHECK(stats_number(half.stats, "kernels[0].thread_instructions") ==
        stats_number(whole.stats, "kernels[0].thread_instructions"));
  // DRAM traffic scaled to the grid: the source array read, the destination written back or left modified in the
  // L2 (how much of it is evicted during the kernel depends on the moment the L2 fills: not compared).
  CHECK(subset_relative(stats_number(half.stats, "kernels[0].dram_bytes_read"),
                        stats_number(whole.stats, "kernels[0].dram_bytes_read")) < 0.02);
  auto written = [](const std::string& stats) {
    return stats_number(stats, "kernels[0].dram_bytes_written") + stats_number(stats, "kernels[0].l2_dirty_bytes_at_end");
  };
  CHECK(subset_relative(written(half.stats), written(whole.stats)) < 0.02);
  // Energy: the work's grows with the grid, the hardware's (leakage, clocks, board) with the GPU.
  CHECK(subset_relative(stats_number(half.stats, "kernels[0].energy.joules"), stats_number(whole.stats, "kernels[0].energy.joules")) < 0.05);
  CHECK(subset_relative(stats_number(half.stats, "power.idle_w"), stats_number(whole.stats, "power.idle_w")) < 0.01);
}

TEST_CASE("SM subsetting: a GEMM on half the GPU within 5% of the whole, instructions and FLOPs exact", "[subset]") {
  // 128 CTAs of 128x256 in clusters of 2: two waves on the whole GPU and on the half.
  const std::vector<std::string> gemm = {"--synth", "gemm", "--synth-key", "m=2048", "--synth-key", "n=2048",
                                         "--synth-key", "k=1024", "--synth-key", "decomposition=data_parallel"};
  const SubsetRun whole = subset_cli_run(gemm, "1");
  const SubsetRun half = subset_cli_run(gemm, "2");
  const double t_whole = stats_number(whole.stats, "total_time_us"), t_half = stats_number(half.stats, "total_time_us");
  INFO("whole " << t_whole << " us, half " << t_half << " us");
  CHECK(subset_relative(t_half, t_whole) < 0.05);
  CHECK(stats_number(half.stats, "kernels[0].warp_instructions") == stats_number(whole.stats, "kernels[0].warp_instructions"));
  CHECK(stats_number(half.stats, "kernels[0].flops") == stats_number(whole.stats, "kernels[0].flops"));
  CHECK(subset_relative(stats_number(half.stats, "kernels[0].achieved_tflops"), stats_number(whole.stats, "kernels[0].achieved_tflops")) < 0.05);
  // The tensor pipe's counted operations, scaled to the grid, are the whole GPU's.
  CHECK(subset_relative(stats_number(half.stats, "kernels[0].counters[\"sm.tensor_flops\"]"),
                 stats_number(whole.stats, "kernels[0].counters[\"sm.tensor_flops\"]")) < 0.01);
}

TEST_CASE("SM subsetting: a persistent grid, one pass of the whole GPU, is one pass of the subset", "[subset]") {
  // The half H100 holds 33 two-CTA clusters (GPCs of 18, 16, 16, 16 SMs): the persistent grid is 66 CTAs, each
  // looping over 3-4 of the 256 tiles. Its half (GPCs of 17 and 16 SMs) holds 16 clusters: it must run those 16,
  // not a 17th in a second pass (twice the time), though 16 of 33 is less than half of the SMs' share.
  const std::vector<std::string> gemm = {"--synth", "gemm", "--synth-key", "m=2048", "--synth-key", "n=4096",
                                         "--synth-key", "k=1024", "--synth-key", "decomposition=persistent"};
  const SubsetRun whole = subset_cli_run(gemm, "1");
  const SubsetRun half = subset_cli_run(gemm, "2");
  REQUIRE(json::string(whole.stats, "kernels[0].grid") == "66x1x1");
  CHECK(stats_number(half.stats, "kernels[0].sampling.subset_ctas") == 32);
  const double t_whole = stats_number(whole.stats, "total_time_us"), t_half = stats_number(half.stats, "total_time_us");
  INFO("whole " << t_whole << " us, half " << t_half << " us");
  CHECK(subset_relative(t_half, t_whole) < 0.10);  // measured +5.4%
  CHECK(stats_number(half.stats, "kernels[0].warp_instructions") == stats_number(whole.stats, "kernels[0].warp_instructions"));
}

TEST_CASE("SM subsetting: a grid whose rows differ is sampled across them (torch.cat: one input per grid row)",
          "[subset]") {
  // Grid X x 2: row 0 copies a 32 KiB input (a few CTAs' work), row 1 an 8 MiB one. The half must run the first
  // half of each row, not the grid's first half (row 0 alone: almost nothing).
  const std::vector<std::string> cat = {"--synth", "cat", "--synth-key", "inputs=1x8x16x128,1x8x4096x128",
                                        "--synth-key", "dim=2"};
  const SubsetRun whole = subset_cli_run(cat, "1");
  const SubsetRun half = subset_cli_run(cat, "2");
  REQUIRE(contains(json::string(half.stats, "kernels[0].grid").value_or(""), "x2x1"));
  CHECK(stats_number(half.stats, "kernels[0].sampling.subset_ctas") ==
        stats_number(half.stats, "kernels[0].sampling.total_ctas") / 2);
  const double t_whole = stats_number(whole.stats, "total_time_us"), t_half = stats_number(half.stats, "total_time_us");
  INFO("whole " << t_whole << " us, half " << t_half << " us");
  CHECK(subset_relative(t_half, t_whole) < 0.05);
  CHECK(subset_relative(stats_number(half.stats, "kernels[0].dram_bytes_read"),
                        stats_number(whole.stats, "kernels[0].dram_bytes_read")) < 0.05);
  CHECK(stats_number(half.stats, "kernels[0].warp_instructions") == stats_number(whole.stats, "kernels[0].warp_instructions"));
}

TEST_CASE("SM subsetting composes with wave sampling: waves sampled among the subset's CTAs, instructions exact",
          "[subset][sampling]") {
  // An 8-SM GPU and its half: 64 CTAs of 128x256 in 2048x1024, 8 waves of 8 and 8 waves of 4 among the half's 32,
  // sampled above 4 waves; the output (4 MiB) fits the L2 (8 MiB, 4 MiB in the half), so no warm-up is added.
  const std::vector<std::string> gemm = {"--synth", "gemm", "--synth-key", "m=2048", "--synth-key", "n=1024",
                                         "--synth-key", "k=256", "--synth-key", "decomposition=data_parallel",
                                         "--set", "sm.count=8", "--set", "noc.gpcs=4",
                                         "--set", "l2.slices=8", "--set", "hbm.channels=8", "--set", "l2.size=8MiB",
                                         "--set", "sim.sample_min_waves=4"};
  std::vector<std::string> sampled_args = gemm;
  sampled_args.insert(sampled_args.end(), {"--sample", "waves"});
  const SubsetRun whole = subset_cli_run(gemm, "1");
  const SubsetRun both = subset_cli_run(sampled_args, "2");
  REQUIRE(json::has(both.stats, "kernels[0].sampling"));
  CHECK(json::string(both.stats, "kernels[0].sampling.method") == "sms+waves");
  const double subset_ctas = stats_number(both.stats, "kernels[0].sampling.subset_ctas");
  CHECK(subset_ctas == 32);
  CHECK(stats_number(both.stats, "kernels[0].sampling.simulated_ctas") < subset_ctas);
  CHECK(stats_number(both.stats, "kernels[0].sampling.extrapolation_factor") > 1.0);
  CHECK(contains(both.out, "of 32 CTAs simulated"));
  const double t_whole = stats_number(whole.stats, "total_time_us"), t_both = stats_number(both.stats, "total_time_us");
  INFO("whole " << t_whole << " us, half and sampled " << t_both << " us");
  CHECK(subset_relative(t_both, t_whole) < 0.08);
  CHECK(stats_number(both.stats, "kernels[0].warp_instructions") == stats_number(whole.stats, "kernels[0].warp_instructions"));
}

TEST_CASE("SM subsetting: units cut by different fractions grow back by their own (a third of a B200)", "[subset]") {
  // 148 SMs -> 49 (0.331), 256 HBM channels -> 85 (0.332), 253 L2 slices -> 84 (0.332): the DRAM peak and the idle
  // power must come back to the whole GPU's exactly, each part by its own units.
  auto run = [](const std::string& subset) {
    TempDir dir;
    const std::vector<std::string> args = {"run", "--gpu", "b200", "--subset", subset, "--driver", "plain", "--out",
                                           dir / "out", "--no-progress", "-q", "--synth", "stream", "--synth-key",
                                           "bytes=1MiB"};
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    REQUIRE(r.exit_code == 0);
    return read_text(dir.path() / "out" / "stats.json");
  };
  const std::string whole = run("1"), third = run("3");
  CHECK(stats_number(third, "power.idle_w") == Approx(stats_number(whole, "power.idle_w")).epsilon(1e-9));
  CHECK(stats_number(third, "power.cap_w") == Approx(stats_number(whole, "power.cap_w")).epsilon(1e-9));
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string unit = "kernels[0].speed_of_light.units[" + std::to_string(i) + "]";
    const std::string key = json::string(whole, unit + ".key").value_or("");
    if (key != "dram" && key != "l2") continue;
    INFO(key);
    CHECK(json::string(third, unit + ".key").value_or("") == key);
    CHECK(stats_number(third, unit + ".peak") == Approx(stats_number(whole, unit + ".peak")).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("SM subsetting: runs are deterministic", "[subset]") {
  const SubsetRun a = subset_cli_run(kStream, "2"), b = subset_cli_run(kStream, "2");
  CHECK(json::without_member(a.stats, "sim") == json::without_member(b.stats, "sim"));
}

TEST_CASE("SM subsetting: a bad divisor is one error naming sim.subset", "[subset]") {
  TempDir dir;
  for (const char* bad : {"0", "x", "65"}) {
    const std::vector<std::string> args = {"run", "--gemm", "64x64x64", "--subset", bad, "--out", dir / "out",
                                           "--no-progress"};
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "sim.subset"));
  }
  // A divisor above the GPU's GPCs.
  const std::vector<std::string> args = {"run", "--gemm", "64x64x64", "--subset", "16", "--out", dir / "out",
                                         "--no-progress"};
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "noc.gpcs"));
}
