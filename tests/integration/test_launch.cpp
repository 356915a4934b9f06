// Kernel launch overhead end to end: `warpsim run --launch eager|graph`, the per-kernel waits and the run's
// launch section in stats.json, and the summary's launch-bound lines. Expectations from config.resolved.yaml.
#include <catch2/catch.hpp>

#include <cmath>

#include "test_helpers.h"

using namespace wstest;

namespace {

// A split-K GEMM on a small H100: the atomic reduction's zeroing kernel (tiny) runs before the GEMM, so the GEMM
// waits for its submission; three kernels in all.
const std::vector<std::string> kSmallGpu = {"sm.count=8", "l2.slices=4", "hbm.channels=4"};
const std::vector<std::string> kSplitKGemm = {"m=64", "n=256", "k=4096"};

}  // namespace

TEST_CASE("run: launch waits follow the configured interval, graph by default, eager on request", "[launch]") {
  const SynthRun eager = run_synth("h100_sxm", "gemm", kSplitKGemm, [] {
    auto s = kSmallGpu;
    s.push_back("launch.mode=eager");
    return s;
  }());
  REQUIRE(json::has(eager.stats, "kernels[2]"));
  CHECK(eager.text("launch.mode") == "eager");
  const double clock = eager.cfg("clocks.sm");
  const double interval = eager.cfg("launch.eager_us_per_kernel") * 1e-6 * clock;  // SM cycles
  // The zeroing kernel is shorter than the interval: the GEMM starts at its own submission, one interval in.
  REQUIRE(*json::number(eager.stats, "kernels[0].cycles") < interval);
  CHECK(*json::number(eager.stats, "kernels[1].start_cycle") == std::round(interval));
  CHECK(*json::number(eager.stats, "kernels[1].launch_wait_cycles") ==
        std::round(interval) - *json::number(eager.stats, "kernels[0].cycles"));
  CHECK(*json::number(eager.stats, "kernels[0].launch_wait_cycles") == 0);
  double waits = 0, kernels = 0;
  for (int i = 0; i < 3; ++i) {
    waits += *json::number(eager.stats, "kernels[" + std::to_string(i) + "].launch_wait_cycles");
    kernels += *json::number(eager.stats, "kernels[" + std::to_string(i) + "].cycles");
  }
  CHECK(*json::number(eager.stats, "launch.wait_cycles") == waits);
  CHECK(*json::number(eager.stats, "total_cycles") == waits + kernels);
  CHECK(contains(eager.out, "launch-bound: the GPU sat idle"));
  CHECK(contains(eager.out, "  launch: "));

  const SynthRun graph = run_synth("h100_sxm", "gemm", kSplitKGemm, kSmallGpu);
  CHECK(graph.text("launch.mode") == "graph");
  CHECK(*json::number(graph.stats, "launch.us_per_kernel") == graph.cfg("launch.graph_us_per_kernel"));
  CHECK(*json::number(graph.stats, "launch.wait_cycles") < *json::number(eager.stats, "launch.wait_cycles"));
}

TEST_CASE("run --launch sets launch.mode - a bad mode is one error naming the key", "[launch]") {
  TempDir dir;
  std::vector<std::string> args = {"run", "--gpu", "h100_sxm", "--gemm", "64x64x64", "--launch", "eager",
                                   "--out", dir / "out", "--no-progress", "-q"};
  CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  CHECK(json::string(read_text(dir.path() / "out" / "stats.json"), "launch.mode") == "eager");
  args[6] = "greedy";
  r = run_warpsim(args);
  INFO(describe(args, r));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "launch.mode: expected one of 'eager', 'graph'"));
}
