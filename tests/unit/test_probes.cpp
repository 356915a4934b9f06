// Probe points: an observer attached by name sees every event a component announces, without editing it, and
// what it sees agrees with the component's own counters.
#include <catch2/catch.hpp>

#include <algorithm>

#include "models/gpu/gpu.h"
#include "sim/registry/registry.h"
#include "sim/slots/memory.h"
#include "traces/synth/gemm_synthesizer.h"

using namespace warpsim;

namespace {

Config small_gpu() {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml",
                      {"sm.count=8", "l2.slices=4", "hbm.channels=4"}, Registry::instance());
}

}  // namespace

TEST_CASE("Probe points report DRAM accesses, L2 accesses and port traffic to listeners", "[probes]") {
  const Config cfg = small_gpu();
  Gpu gpu(cfg);
  std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0, l2_reads = 0, l2_hit_sectors = 0, response_messages = 0;
  CHECK(gpu.probes().listen<DramAccess>("hbm.channel[*].access", [&](const DramAccess& a) {
    (a.req.op == MemOp::Read ? dram_read_bytes : dram_write_bytes) += a.req.bytes;
  }) == 4);
  CHECK(gpu.probes().listen<L2Access>("l2.slice[*].access", [&](const L2Access& a) {
    if (a.req.op == MemOp::Write) return;
    ++l2_reads;
    l2_hit_sectors += static_cast<std::uint64_t>(__builtin_popcount(a.hit_sectors));
  }) == 4);
  CHECK(gpu.probes().listen<PortEvent<MemRequest>>("sm[*].responses.send", [&](const PortEvent<MemRequest>&) {
    ++response_messages;
  }) == 8);
  // A name that matches nothing attaches nothing (the caller can tell a typo).
  CHECK(gpu.probes().listen<DramAccess>("hbm.chanel[*].access", [](const DramAccess&) {}) == 0);

  GemmProblem p;
  p.m = p.n = p.k = 256;
  auto trace = make_gemm_for_gpu(p, cfg);
  RunOptions opt;
  const RunResult r = gpu.run(*trace, run_without_systemc, opt);
  REQUIRE(r.kernels.size() == 1);
  const KernelResult& k = r.kernels[0];
  // Both operands (256x256 bf16 each) are read from DRAM once.
  CHECK(dram_read_bytes == 2u * 256 * 256 * 2);
  CHECK(dram_read_bytes == k.dram_bytes_read);
  CHECK(dram_write_bytes == k.dram_bytes_written);
  CHECK(l2_reads > 0);
  CHECK(static_cast<double>(l2_hit_sectors) == k.stats.find("l2.read_hit_sectors")->value);
  // Every L2 request is answered (reads with data, stores with an acknowledgement): the LSU's and, the H100 GEMM
  // loading its tiles with TMA, the TMA units' line requests.
  CHECK(k.stats.find("tma.requests")->value > 0);
  CHECK(static_cast<double>(response_messages) ==
        k.stats.find("sm.l2_requests")->value + k.stats.find("tma.requests")->value);
}

TEST_CASE("A probe listener of the wrong event type is a programming error", "[probes]") {
  const Config cfg = small_gpu();
  Gpu gpu(cfg);
  CHECK_THROWS(gpu.probes().listen<L2Access>("hbm.channel[0].access", [](const L2Access&) {}));
  const auto names = gpu.probes().names();
  CHECK(std::count(names.begin(), names.end(), "hbm.channel[3].requests.send") == 1);
}
