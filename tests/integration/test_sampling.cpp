// CTA-wave sampling end to end (`warpsim run --sample waves|off`, sim.sample_*): a many-wave kernel sampled
// against the same kernel simulated whole, a few-wave kernel left whole, determinism, what stats.json says, and
// bad option values. A small H100 (4 SMs in 2 GPCs) makes a small GEMM span many waves, so each run takes under a
// second.
#include <catch2/catch.hpp>

#include <cmath>

#include "test_helpers.h"

using namespace wstest;

namespace {

const std::vector<std::string> kFourSmGpu = {"sm.count=4", "noc.gpcs=2", "l2.partitions=2", "l2.slices=4",
                                             "hbm.channels=4"};

struct SampleRun {
  std::string stats, out;
};

// The GEMM MxNxK, one CTA per tile (waves) unless `decomposition` says otherwise.
SampleRun run_sample_mode(const std::string& gemm, const std::string& mode, std::vector<std::string> sets = kFourSmGpu,
                          const std::string& decomposition = "data_parallel") {
  TempDir dir;
  const std::size_t x1 = gemm.find('x'), x2 = gemm.find('x', x1 + 1);
  std::vector<std::string> args = {"run", "--gpu", "h100_sxm", "--synth", "gemm", "--synth-key",
                                   "m=" + gemm.substr(0, x1), "--synth-key", "n=" + gemm.substr(x1 + 1, x2 - x1 - 1),
                                   "--synth-key", "k=" + gemm.substr(x2 + 1), "--synth-key",
                                   "decomposition=" + decomposition, "--sample", mode, "--driver", "plain",
                                   "--out", dir / "out", "--no-progress"};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  return {read_text(dir.path() / "out" / "stats.json"), r.out};
}

double sampled_number(const std::string& stats, const std::string& path) {
  const auto v = json::number(stats, path);
  if (!v) FAIL("stats.json has no number at " << path);
  return *v;
}

// 2048x1024 output in 128x256 tiles (the GEMM synthesizer's H100 tile, clusters of 2): 64 CTAs, one per SM: 16
// waves of 4, above sim.sample_min_waves' default.
const std::string kManyWaves = "2048x1024x256";

}  // namespace

TEST_CASE("sampling by waves: a many-wave GEMM within 5% of its full simulation, instructions exact", "[sampling]") {
  const SampleRun full = run_sample_mode(kManyWaves, "off");
  const SampleRun sampled = run_sample_mode(kManyWaves, "waves");
  // The full run is not sampled and says nothing of it.
  CHECK_FALSE(json::has(full.stats, "kernels[0].sampling"));
  CHECK_FALSE(json::has(full.stats, "sampling"));
  // The sampled run says so, with CTAs simulated out of the grid's.
  REQUIRE(json::has(sampled.stats, "kernels[0].sampling"));
  CHECK(json::string(sampled.stats, "kernels[0].sampling.method") == "waves");
  CHECK(json::raw(sampled.stats, "kernels[0].sampling.exact") == "false");
  CHECK(json::raw(sampled.stats, "sampling.exact") == "false");
  const double total = sampled_number(sampled.stats, "kernels[0].sampling.total_ctas");
  const double simulated = sampled_number(sampled.stats, "kernels[0].sampling.simulated_ctas");
  const double wave = sampled_number(sampled.stats, "kernels[0].sampling.wave_ctas");
  CHECK(total == 64);  // the grid: (2048/128) x (1024/256)
  CHECK(simulated < total);
  // The sample leaves out whole waves only: it ends with the kernel's own last (partial) wave.
  CHECK(std::fmod(total - simulated, wave) == 0);
  CHECK(sampled_number(sampled.stats, "kernels[0].sampling.extrapolation_factor") > 1.0);
  CHECK(contains(sampled.out, "ESTIMATE"));
  CHECK(contains(sampled.out, std::to_string(static_cast<int>(simulated)) + " of 64 CTAs simulated"));

  // Time within 5% of the full simulation (the README's table: the measured errors on full-size GPUs).
  const double t_full = sampled_number(full.stats, "total_time_us"), t_sampled = sampled_number(sampled.stats, "total_time_us");
  INFO("full " << t_full << " us, sampled " << t_sampled << " us");
  CHECK(std::abs(t_sampled - t_full) / t_full < 0.05);
  // Instructions are counted from the trace for the CTAs not simulated: exactly the full run's.
  CHECK(sampled_number(sampled.stats, "kernels[0].warp_instructions") == sampled_number(full.stats, "kernels[0].warp_instructions"));
  CHECK(sampled_number(sampled.stats, "kernels[0].thread_instructions") == sampled_number(full.stats, "kernels[0].thread_instructions"));
  // Useful work is the kernel's (from its shape, not extrapolated).
  CHECK(sampled_number(sampled.stats, "kernels[0].flops") == sampled_number(full.stats, "kernels[0].flops"));
}

TEST_CASE("sampling by rounds: a persistent GEMM within 12% of its full simulation, instructions exact", "[sampling]") {
  // The same 64 tiles on 4 persistent CTAs: 16 rounds, of which 1 warm-up + 2 measured + 1 run, 12 extrapolated.
  const SampleRun full = run_sample_mode(kManyWaves, "off", kFourSmGpu, "persistent");
  const SampleRun sampled = run_sample_mode(kManyWaves, "waves", kFourSmGpu, "persistent");
  CHECK_FALSE(json::has(full.stats, "kernels[0].sampling"));
  REQUIRE(json::has(sampled.stats, "kernels[0].sampling"));
  CHECK(json::string(sampled.stats, "kernels[0].sampling.method") == "rounds");
  CHECK(sampled_number(sampled.stats, "kernels[0].sampling.total_ctas") == 4);
  CHECK(sampled_number(sampled.stats, "kernels[0].sampling.simulated_ctas") == 4);  // every CTA, fewer rounds
  CHECK(sampled_number(sampled.stats, "kernels[0].sampling.skipped_rounds") == 12);
  CHECK(sampled_number(sampled.stats, "kernels[0].sampling.extrapolation_factor") > 2.0);
  CHECK(contains(sampled.out, "12 of the 16.0 rounds of each of its 4 CTAs left out"));
  // Four CTAs vary more from round to round than a full GPU's 132 (README "Sampling": within 2% there), and on four
  // SMs the second round is still warming up: the sample reads +10.2% with one warm-up round, +1.6% with two
  // (sim.sample_warmup_waves=2; +4.6% with one before the kernel's setmaxnreg moved the consumers' start a few
  // cycles). The bound is the default's.
  const double t_full = sampled_number(full.stats, "total_time_us"), t_sampled = sampled_number(sampled.stats, "total_time_us");
  INFO("full " << t_full << " us, sampled " << t_sampled << " us");
  CHECK(std::abs(t_sampled - t_full) / t_full < 0.12);
  // The rounds left out are counted from the trace (each CTA's whole stream less its sample): exact.
  CHECK(sampled_number(sampled.stats, "kernels[0].warp_instructions") == sampled_number(full.stats, "kernels[0].warp_instructions"));
  CHECK(sampled_number(sampled.stats, "kernels[0].thread_instructions") == sampled_number(full.stats, "kernels[0].thread_instructions"));
  // Deterministic.
  const SampleRun again = run_sample_mode(kManyWaves, "waves", kFourSmGpu, "persistent");
  CHECK(json::without_member(again.stats, "sim") == json::without_member(sampled.stats, "sim"));
}

TEST_CASE("sampling by waves: a kernel of few waves is simulated whole, identical to --sample off", "[sampling]") {
  // 512x512 output: 8 CTAs on 4 SMs, two waves.
  const SampleRun off = run_sample_mode("512x512x256", "off");
  const SampleRun waves = run_sample_mode("512x512x256", "waves");
  CHECK_FALSE(json::has(waves.stats, "kernels[0].sampling"));
  CHECK_FALSE(json::has(waves.stats, "sampling"));
  // Everything but the simulator's own figures (wall time, and the config hash, which sim.sample enters).
  CHECK(json::without_member(off.stats, "sim") == json::without_member(waves.stats, "sim"));
}

TEST_CASE("sampling by waves: the threshold is sim.sample_min_waves, and sampled runs are deterministic", "[sampling]") {
  // Raising the threshold above the kernel's waves: simulated whole.
  std::vector<std::string> high = kFourSmGpu;
  high.push_back("sim.sample_min_waves=1000");
  const SampleRun whole = run_sample_mode(kManyWaves, "waves", high);
  CHECK_FALSE(json::has(whole.stats, "kernels[0].sampling"));
  // Two sampled runs: bit-identical results.
  const SampleRun a = run_sample_mode(kManyWaves, "waves"), b = run_sample_mode(kManyWaves, "waves");
  REQUIRE(json::has(a.stats, "kernels[0].sampling"));
  CHECK(json::without_member(a.stats, "sim") == json::without_member(b.stats, "sim"));
}

TEST_CASE("sampling option: a bad value is one error naming the option, for run and llm", "[sampling]") {
  TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--gemm", "64x64x64", "--sample", "sms", "--out", dir / "out", "--no-progress"},
        std::vector<std::string>{"llm", "--model", "llama-3-8b", "--sample", "all", "--no-cache", "--out", dir / "llm"}}) {
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "--sample: expected waves"));
  }
  // The config key checks its value too.
  const std::vector<std::string> args = {"run", "--gemm", "64x64x64", "--set", "sim.sample=some", "--out", dir / "x",
                                         "--no-progress"};
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "sim.sample"));
}
