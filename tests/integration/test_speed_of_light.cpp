// The speed-of-light section (stats.json kernels[].speed_of_light, the run's speed_of_light, the summary's
// lines): the limiter verdict of kernels whose bottleneck is known by construction (a DRAM stream, an L2-resident
// stream, a tensor-core chain benchmark, a DRAM pointer chase), units' % of peak recomputed from the run's
// counters and its config.resolved.yaml, and useful tensor work of a decode GEMM whose 16 rows fill a quarter of
// its 64-row tiles.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "test_helpers.h"

using namespace wstest;

namespace {

struct SolRun {
  std::string stats, summary, csv;
  std::map<std::string, std::string> config;
};

SolRun run_sol(const std::vector<std::string>& workload, const std::vector<std::string>& sets = {}) {
  TempDir dir;
  std::vector<std::string> args = {"run", "--gpu", "h100_sxm", "--out", dir / "out", "--no-progress"};
  args.insert(args.end(), workload.begin(), workload.end());
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  return SolRun{read_text(dir.path() / "out" / "stats.json"), r.out, read_text(dir.path() / "out" / "stats.csv"),
                read_flat_yaml(read_text(dir.path() / "out" / "config.resolved.yaml"))};
}

std::string str(const std::string& stats, const std::string& path) {
  const auto v = json::string(stats, path);
  if (!v) FAIL("no string at " << path);
  return *v;
}

// The % of peak of the unit `key` in the section at `sol` ("kernels[0].speed_of_light").
double unit_pct(const std::string& stats, const std::string& sol, const std::string& key) {
  for (std::size_t i = 0; json::has(stats, sol + ".units[" + std::to_string(i) + "]"); ++i) {
    const std::string u = sol + ".units[" + std::to_string(i) + "]";
    if (str(stats, u + ".key") == key) return stats_number(stats, u + ".pct_of_peak");
  }
  FAIL("no unit '" << key << "' in " << sol);
  return 0;
}

// Every unit's % of peak is in [0, 100] (the peaks are the configured maxima, so none may exceed them beyond
// rounding), each has its Nsight metric, and Compute (SM) / Memory Throughput are the maxima of their groups.
void check_section(const std::string& stats, const std::string& sol) {
  double max_of[2] = {-1, -1};
  const char* groups[2] = {"compute", "memory"};
  std::size_t units = 0;
  for (std::size_t i = 0; json::has(stats, sol + ".units[" + std::to_string(i) + "]"); ++i, ++units) {
    const std::string u = sol + ".units[" + std::to_string(i) + "]";
    INFO(u << " " << str(stats, u + ".unit"));
    const double pct = stats_number(stats, u + ".pct_of_peak");
    CHECK(pct >= 0.0);
    CHECK(pct <= 100.5);
    CHECK(pct == Approx(100 * stats_number(stats, u + ".achieved") / stats_number(stats, u + ".peak")).margin(1e-9));
    CHECK(!str(stats, u + ".metric").empty());
    for (int g = 0; g < 2; ++g)
      if (str(stats, u + ".group") == groups[g]) max_of[g] = std::max(max_of[g], pct);
  }
  CHECK(units >= 15);  // issue, 7 pipes, LSU, L1, smem, 4 crossbar ports, L2, DRAM
  CHECK(stats_number(stats, sol + ".compute.pct_of_peak") == max_of[0]);
  CHECK(stats_number(stats, sol + ".memory.pct_of_peak") == max_of[1]);
  CHECK(stats_number(stats, sol + ".limiter.pct_of_peak") == std::max(max_of[0], max_of[1]));
}

}  // namespace

TEST_CASE("speed of light: a stream from DRAM is bound by DRAM, at the bandwidth its bytes and time give", "[sol]") {
  const SolRun run = run_sol({"--synth", "stream", "--synth-key", "op=read", "--synth-key", "bytes=16MiB"});
  const std::string k = "kernels[0]";
  check_section(run.stats, k + ".speed_of_light");
  const std::string verdict = str(run.stats, k + ".speed_of_light.limiter.verdict");
  CHECK(verdict.rfind("bound by DRAM", 0) == 0);
  CHECK(str(run.stats, k + ".speed_of_light.limiter.bound") == "throughput");
  // DRAM % of peak = bytes moved / kernel time / hbm.bandwidth.
  const double bytes = stats_number(run.stats, k + ".dram_bytes_read") + stats_number(run.stats, k + ".dram_bytes_written");
  const double seconds = stats_number(run.stats, k + ".cycles") / config_number(run.config, "clocks.sm");
  const double dram_pct = 100 * bytes / seconds / config_number(run.config, "hbm.bandwidth");
  CHECK(unit_pct(run.stats, k + ".speed_of_light", "dram") == Approx(dram_pct).epsilon(1e-9));
  CHECK(dram_pct >= 60.0);
  CHECK(verdict == "bound by DRAM (HBM): " + std::to_string(static_cast<int>(dram_pct + 0.5)) + "% busy");
  CHECK(str(run.stats, k + ".speed_of_light.memory.unit") == "DRAM (HBM)");
  // The summary prints the verdict; the CSV has it in its column; the run's section equals its only kernel's.
  CHECK(contains(run.summary, "limiter     " + verdict + "\n"));
  CHECK(contains(run.csv, ",limiter_verdict,"));
  CHECK(contains(run.csv, "," + verdict + ","));
  CHECK(str(run.stats, "speed_of_light.limiter.verdict") == verdict);
  check_section(run.stats, "speed_of_light");
  // No tensor work: no tensor figures.
  CHECK(json::raw(run.stats, k + ".speed_of_light.tensor") == std::optional<std::string>("null"));
}

TEST_CASE("speed of light: a stream over L2-resident arrays is bound by the L2 slices", "[sol]") {
  // 8 MiB fits the 50 MiB L2: after the first pass every read hits. The stock slices (18.7 TB/s) are beyond what
  // the stream's loads in flight reach (about 3 TB/s), so their data ports are narrowed to 2 TB/s, below the
  // crossbar's ports and the SMs' L1s: then they are the limit.
  const SolRun run = run_sol({"--synth", "stream", "--synth-key", "op=read", "--synth-key", "bytes=8MiB", "--synth-key", "passes=8"},
                             {"l2.bandwidth=2TB/s"});
  const std::string sol = "kernels[0].speed_of_light";
  check_section(run.stats, sol);
  CHECK(str(run.stats, sol + ".limiter.verdict").rfind("bound by L2 slices: ", 0) == 0);
  CHECK(unit_pct(run.stats, sol, "l2") > unit_pct(run.stats, sol, "dram"));
}

TEST_CASE("speed of light: enough MMA chains keep the tensor pipe at its peak, all of it useful", "[sol]") {
  // Warpgroup MMA: on Hopper only wgmma reaches the tensor peak (mma.sync is capped at its measured rate).
  const SolRun run = run_sol({"--synth", "tensor_throughput", "--synth-key", "instruction=wgmma", "--synth-key", "warps=4",
                              "--synth-key", "wgmma_pending=1", "--synth-key", "iterations=256"},
                             {"sm.count=4"});
  const std::string sol = "kernels[0].speed_of_light";
  check_section(run.stats, sol);
  CHECK(str(run.stats, sol + ".limiter.verdict").rfind("bound by tensor pipe: ", 0) == 0);
  CHECK(str(run.stats, sol + ".compute.unit") == "tensor pipe");
  CHECK(stats_number(run.stats, sol + ".compute.pct_of_peak") >= 98.0);
  CHECK(stats_number(run.stats, sol + ".compute.pct_of_peak") <= 100.0 + 1e-9);
  // Every executed MMA is the benchmark's work: useful = FLOPs / (flops_per_cycle.f16 x SMs x cycles).
  const double peak = config_number(run.config, "sm.tensor.flops_per_cycle.f16") * config_number(run.config, "sm.count") *
                      stats_number(run.stats, "kernels[0].cycles");
  const double flops = stats_number(run.stats, "kernels[0].flops");
  CHECK(stats_number(run.stats, sol + ".tensor.useful_pct_of_peak") == Approx(100 * flops / peak).epsilon(1e-9));
  CHECK(stats_number(run.stats, sol + ".tensor.useful_pct_of_peak") >= 98.0);
  CHECK(contains(str(run.stats, sol + ".tensor.dtype"), "f16"));

  // mma.sync on the same GPU keeps the pipe busy at its own capped rate: busy, but only cap / peak of the peak's
  // work is done (sm.tensor.mma_sync_flops_per_cycle.f16 over sm.tensor.flops_per_cycle.f16).
  const SolRun mma = run_sol({"--synth", "tensor_throughput", "--synth-key", "warps=16", "--synth-key", "ilp=4",
                              "--synth-key", "iterations=256"},
                             {"sm.count=4"});
  const double cap = config_number(mma.config, "sm.tensor.mma_sync_flops_per_cycle.f16") /
                     config_number(mma.config, "sm.tensor.flops_per_cycle.f16");
  CHECK(stats_number(mma.stats, sol + ".tensor.useful_pct_of_peak") == Approx(100 * cap).epsilon(0.02));
  CHECK(contains(str(mma.stats, sol + ".tensor.dtype"), "f16"));
}

TEST_CASE("speed of light: a pointer chase through DRAM is latency bound on long scoreboard stalls", "[sol]") {
  const SolRun run = run_sol({"--synth", "pointer_chase", "--synth-key", "footprint=1GiB", "--synth-key", "steps=1024"},
                             {"sm.count=4"});
  const std::string sol = "kernels[0].speed_of_light";
  check_section(run.stats, sol);
  CHECK(str(run.stats, sol + ".limiter.bound") == "latency");
  CHECK(str(run.stats, sol + ".limiter.top_stall") == "stall_long_scoreboard");
  CHECK(stats_number(run.stats, sol + ".limiter.top_stall_pct_of_warp_cycles") >= 90.0);
  const std::string verdict = str(run.stats, sol + ".limiter.verdict");
  CHECK(verdict.rfind("latency bound: ", 0) == 0);
  CHECK(contains(verdict, "% of warp-cycles stall_long_scoreboard; top unit "));
  CHECK(stats_number(run.stats, sol + ".limiter.pct_of_peak") < 60.0);
}

TEST_CASE("speed of light: a 16-row decode GEMM keeps the tensor pipe busier than its useful work", "[sol]") {
  const SolRun run = run_sol({"--gemm", "16x4096x4096", "--dtype", "bf16"});
  // Split-K on H100 runs a zeroing kernel before the GEMM and a conversion after it: the GEMM is the kernel with
  // the tensor work.
  std::string k0 = "kernels[0]";
  for (int i = 0; json::number(run.stats, "kernels[" + std::to_string(i) + "].cycles"); ++i)
    if (json::number(run.stats, "kernels[" + std::to_string(i) + "].flops").value_or(0) > 0) k0 = "kernels[" + std::to_string(i) + "]";
  const std::string sol = k0 + ".speed_of_light";
  check_section(run.stats, sol);
  const double problem = 2.0 * 16 * 4096 * 4096;
  CHECK(stats_number(run.stats, sol + ".tensor.problem_flops") == problem);
  const double peak = config_number(run.config, "sm.tensor.flops_per_cycle.bf16") * config_number(run.config, "sm.count") *
                      stats_number(run.stats, k0 + ".cycles");
  const double useful = stats_number(run.stats, sol + ".tensor.useful_pct_of_peak");
  CHECK(useful == Approx(100 * problem / peak).epsilon(1e-9));
  // The GEMM's tiles have 64 rows (its name says), of which 16 are the problem's: the pipe executes 4x the work.
  REQUIRE(contains(str(run.stats, k0 + ".name"), "_tn_64x"));
  CHECK(stats_number(run.stats, sol + ".tensor.executed_flops") == 4 * problem);
  CHECK(stats_number(run.stats, sol + ".tensor.pipe_busy_pct") == Approx(4 * useful).epsilon(1e-6));
  CHECK(stats_number(run.stats, sol + ".tensor.pipe_busy_pct") == unit_pct(run.stats, sol, "tensor"));
  CHECK(contains(run.summary, "    tensor      pipe busy "));
}

TEST_CASE("speed of light is deterministic: two runs give the same section", "[sol]") {
  const std::vector<std::string> gemm = {"--gemm", "256x256x512", "--dtype", "bf16"};
  const SolRun a = run_sol(gemm), b = run_sol(gemm);
  CHECK(json::raw(a.stats, "kernels[0].speed_of_light") == json::raw(b.stats, "kernels[0].speed_of_light"));
  CHECK(json::raw(a.stats, "speed_of_light") == json::raw(b.stats, "speed_of_light"));
}
