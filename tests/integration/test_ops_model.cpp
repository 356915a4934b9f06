// Model-level properties of the memory-bound operator synthesizers (traces/synth/ops/), checked on the real
// `warpsim` executable. Expectations come from the configuration (config.resolved.yaml of the run) and the
// operator's compulsory traffic, never from simulator code.
#include <catch2/catch.hpp>

#include "test_helpers.h"

using namespace wstest;

namespace {

// A synthesized operator run on a100_sxm: its stats.json, the kernel's time and the configured HBM bandwidth.
struct OpRun {
  std::string stats;
  double time_us = 0, hbm_gbps = 0;
};

OpRun run_op(TempDir& out, const std::string& kind, const std::vector<std::string>& keys) {
  std::vector<std::string> args{"run", "--gpu", "a100_sxm", "--synth", kind};
  for (const std::string& k : keys) args.insert(args.end(), {"--synth-key", k});
  args.insert(args.end(), {"--out", out.path().string(), "-q", "--no-progress"});
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  const auto config = read_flat_yaml(read_text(out.path() / "config.resolved.yaml"));
  OpRun run{read_text(out.path() / "stats.json"), 0, config_number(config, "hbm.bandwidth") / 1e9};
  const auto time_us = json::number(run.stats, "kernels[0].time_us");
  REQUIRE(time_us);
  run.time_us = *time_us;
  return run;
}

}  // namespace

TEST_CASE("a large softmax on a100_sxm is memory-bound", "[ops][roofline]") {
  // 8192 x 4096 fp16: 64 MiB in and 64 MiB out, three times the 40 MiB L2, so the output reaches DRAM too.
  // Block softmax (4096 columns > 1024): one 256-thread block per row, the row kept in shared memory: the kernel
  // reads each element from DRAM once and writes it once.
  const double rows = 8192, cols = 4096, elem_bytes = 2;
  TempDir out;
  const OpRun run = run_op(out, "softmax", {"rows=8192", "cols=4096"});
  const double hbm_gbps = run.hbm_gbps;
  const auto achieved = json::number(run.stats, "kernels[0].achieved_dram_gbps");
  REQUIRE(achieved);
  const double compulsory_bytes = 2 * rows * cols * elem_bytes;
  INFO("achieved " << *achieved << " GB/s of " << hbm_gbps << " GB/s; " << run.time_us << " us; memory bound "
                   << compulsory_bytes / (hbm_gbps * 1e9) * 1e6 << " us");
  CHECK(*achieved >= 0.5 * hbm_gbps);
  CHECK(*achieved <= hbm_gbps);
  // Never faster than moving the compulsory bytes at the configured bandwidth, and within 2x of it.
  CHECK(run.time_us * 1e-6 >= compulsory_bytes / (hbm_gbps * 1e9) * (1 - 1e-9));
  CHECK(run.time_us * 1e-6 <= 2 * compulsory_bytes / (hbm_gbps * 1e9));
}

TEST_CASE("a sum of 16 MiB on a100_sxm reads it from DRAM once, at no more than the configured bandwidth", "[ops][roofline][reduction]") {
  // One output of 2^22 fp32: PyTorch's reduce_kernel splits it across CTAs (a global reduction), each thread
  // loading one 16-byte vector per loop iteration. The run starts on a cold L2 and reads each byte once, so all of
  // it comes from DRAM.
  const double elements = 4194304, elem_bytes = 4;
  TempDir out;
  const OpRun run = run_op(out, "reduction", {"op=sum", "outputs=1", "inputs=4194304", "dtype=fp32"});
  const double hbm_gbps = run.hbm_gbps;
  const auto read = json::number(run.stats, "kernels[0].dram_bytes_read");
  REQUIRE(read);
  const double compulsory_bytes = elements * elem_bytes;
  INFO("read " << *read << " B from DRAM in " << run.time_us << " us; " << hbm_gbps << " GB/s configured");
  CHECK(*read >= compulsory_bytes);
  CHECK(*read <= 1.01 * compulsory_bytes);  // the partials and the semaphores are a few KiB
  CHECK(run.time_us * 1e-6 >= compulsory_bytes / (hbm_gbps * 1e9));
  CHECK(run.time_us * 1e-6 <= 2 * compulsory_bytes / (hbm_gbps * 1e9));
}
