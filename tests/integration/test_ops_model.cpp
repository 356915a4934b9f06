// Model-level properties of the memory-bound operator synthesizers (traces/synth/ops/), checked on the real
// `warpsim` executable. Expectations come from the configuration (config.resolved.yaml of the run) and the
// operator's compulsory traffic, never from simulator code.
#include <catch2/catch.hpp>

#include "test_helpers.h"

using namespace wstest;

TEST_CASE("a large softmax on a100_sxm is memory-bound", "[ops][roofline]") {
  // 8192 x 4096 fp16: 64 MiB in and 64 MiB out, three times the 40 MiB L2, so the output reaches DRAM too.
  // Block softmax (4096 columns > 1024): one 256-thread block per row, the row kept in shared memory: the kernel
  // reads each element from DRAM once and writes it once.
  const double rows = 8192, cols = 4096, elem_bytes = 2;
  TempDir out;
  const std::vector<std::string> args{"run", "--gpu", "a100_sxm", "--synth", "softmax", "--synth-key", "rows=8192",
                                      "--synth-key", "cols=4096", "--out", out.path().string(), "-q", "--no-progress"};
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  const std::string stats = read_text(out.path() / "stats.json");
  const auto config = read_flat_yaml(read_text(out.path() / "config.resolved.yaml"));
  const double hbm_gbps = config_number(config, "hbm.bandwidth") / 1e9;
  const auto achieved = json::number(stats, "kernels[0].achieved_dram_gbps");
  const auto time_us = json::number(stats, "kernels[0].time_us");
  REQUIRE(achieved);
  REQUIRE(time_us);
  const double compulsory_bytes = 2 * rows * cols * elem_bytes;
  INFO("achieved " << *achieved << " GB/s of " << hbm_gbps << " GB/s; " << *time_us << " us; memory bound "
                   << compulsory_bytes / (hbm_gbps * 1e9) * 1e6 << " us");
  CHECK(*achieved >= 0.5 * hbm_gbps);
  CHECK(*achieved <= hbm_gbps);
  // Never faster than moving the compulsory bytes at the configured bandwidth, and within 2x of it.
  CHECK(*time_us * 1e-6 >= compulsory_bytes / (hbm_gbps * 1e9) * (1 - 1e-9));
  CHECK(*time_us * 1e-6 <= 2 * compulsory_bytes / (hbm_gbps * 1e9));
}
