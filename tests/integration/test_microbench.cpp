// Microbenchmark synthesizers run end to end (`warpsim run --synth KIND`), each result checked against what the
// configured hardware parameters imply, read from the run's own config.resolved.yaml (first principles: the
// latencies on a load's path, the one bandwidth cap left, the pipe latency, the tensor peak).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "test_helpers.h"

using namespace wstest;

namespace {

using MicrobenchRun = SynthRun;

// At the configured clocks (power.cap_mode report), so that the expected cycles follow from the config alone. The L2
// runs on its own clock (clocks.l2: measured at 1.70 GHz on the H100 and H200 whatever the SM clock, Nsight; assumed
// equal to the SM clock on A100 and B200), so its legs take more SM cycles at a higher SM clock.
MicrobenchRun run_microbench(const std::string& gpu, const std::string& kind, const std::vector<std::string>& keys,
                             std::vector<std::string> sets = {}) {
  sets.push_back("power.cap_mode=report");
  return run_synth(gpu, kind, keys, sets);
}

double metric(const MicrobenchRun& run, const std::string& name) { return run.metric(name); }

}  // namespace

TEST_CASE("pointer_chase latencies are the configured latencies on each level's path", "[microbench]") {
  for (const std::string gpu : {"h100_sxm", "a100_sxm"}) {
    INFO(gpu);
    // L1: 16 KiB fits every configured L1; after the warm-up every load hits.
    const MicrobenchRun l1 = run_microbench(gpu, "pointer_chase", {"footprint=16KiB", "steps=4096"});
    const auto& cfg = l1.config;
    const double sm = config_number(cfg, "clocks.sm"), l2clk = config_number(cfg, "clocks.l2"),
                 hbm = config_number(cfg, "clocks.hbm");
    const double l1_path = config_number(cfg, "l1.hit_latency");
    // L2: the request crosses the NoC (SM -> GPC -> near partition), looks up L2, the data crosses back and goes
    // through L1 (SM cycles). The warm-up leaves copies of far-homed lines in the near partition: all near hits.
    const double noc_one_way = config_number(cfg, "noc.sm_to_gpc_latency") + config_number(cfg, "noc.gpc_to_partition_latency");
    const double l2_path = l1_path + (2 * noc_one_way + config_number(cfg, "l2.hit_latency")) * sm / l2clk;
    // DRAM: half the lines are homed in the far partition, whose misses also cross the partition link both ways.
    const double dram_path = l2_path + config_number(cfg, "hbm.latency") * sm / hbm +
                             config_number(cfg, "noc.partition_link_latency") * sm / l2clk;
    // The model adds one cycle from issue to the LSU taking the instruction; the warm-up and launch, amortised
    // over 4096 loads, add under 1% (README, "Microbenchmarks").
    const double got_l1 = metric(l1, "latency_cycles");
    CHECK(got_l1 >= l1_path);
    CHECK(got_l1 <= (l1_path + 1) * 1.01);
    CHECK(metric(l1, "latency_ns") == Approx(got_l1 / sm * 1e9).epsilon(1e-4));
    // L2: 512 KiB is beyond every configured L1 (l1.unified_size) and within L2. Above the path: the NoC's
    // transfer cycles and the LSU hop; at most 3% above.
    REQUIRE(config_number(cfg, "l1.unified_size") < 524288.0);
    const MicrobenchRun l2 = run_microbench(gpu, "pointer_chase", {"footprint=512KiB", "steps=8192"});
    CHECK(metric(l2, "latency_cycles") >= l2_path);
    CHECK(metric(l2, "latency_cycles") <= l2_path * 1.03);
    // DRAM: 1 GiB is beyond L2 (no warm-up): every load is a first touch. A load at a random time finds its
    // channel in an all-bank refresh with probability tRFC / tREFI and then waits tRFC / 2 on average; a chase
    // whose period locks to the refresh grid (every channel refreshes together) can wait the whole tRFC.
    const MicrobenchRun dram = run_microbench(gpu, "pointer_chase", {"footprint=1GiB", "steps=1024"});
    const double trfc_ns = config_number(cfg, "hbm.timing.tRFC"), trefi_ns = config_number(cfg, "hbm.timing.tREFI");
    REQUIRE(l1.config.at("hbm.refresh") == "all_bank");
    const double refresh_wait = trfc_ns * trfc_ns / trefi_ns * 1e-9 * sm;
    CHECK(metric(dram, "latency_cycles") >= dram_path);
    CHECK(metric(dram, "latency_cycles") <= (dram_path + refresh_wait) * 1.03);
    // ld.global.cg (cache operator bypass) over the L1-sized footprint: L1 is not looked up, every load is an L2
    // hit (measured on H100: 291.5 cycles against 32.7 with ld.ca, validation case h100m.lat.l2.cg.16KiB).
    const MicrobenchRun cg = run_microbench(gpu, "pointer_chase", {"footprint=16KiB", "steps=4096", "cache_op=bypass"});
    CHECK(metric(cg, "latency_cycles") >= l2_path);
    CHECK(metric(cg, "latency_cycles") <= l2_path * 1.03);
    // Shared memory: smem.latency (plus the LSU hop).
    const MicrobenchRun smem = run_microbench(gpu, "pointer_chase", {"footprint=4KiB", "space=shared", "steps=4096"});
    const double smem_latency = config_number(cfg, "smem.latency");
    CHECK(metric(smem, "latency_cycles") >= smem_latency);
    CHECK(metric(smem, "latency_cycles") <= (smem_latency + 1) * 1.01);
  }
}

TEST_CASE("stream read bandwidth reaches the HBM bandwidth when HBM is the only bottleneck", "[microbench]") {
  // 100 GB/s of HBM is far below every other configured path (L2, NoC, L1): the 4 MiB read (first touches, so all
  // from DRAM) is paced by it. The latency of the first lines (< 1 us) is under 2% of the 42 us. With two L2
  // partitions it ends about 4% short of the bound (99% with l2.partitions=1): left to explain (the far-homed
  // half's misses go through two slices' MSHRs, but more MSHRs do not change it).
  // hbm_simple: a bus at the configured bandwidth.
  const MicrobenchRun simple = run_microbench("h100_sxm", "stream", {"op=read", "bytes=4MiB"}, {"hbm.bandwidth=100GB/s", "hbm.impl=hbm_simple"});
  const double cap_gbps = config_number(simple.config, "hbm.bandwidth") / 1e9;
  REQUIRE(cap_gbps == Approx(100.0));
  CHECK(metric(simple, "bandwidth_gbps") <= cap_gbps);
  CHECK(metric(simple, "bandwidth_gbps") >= cap_gbps * 0.95);
  // hbm_detailed (the shipped model) with all-bank refresh: a row-hit stream loses tRFC of every tREFI.
  const MicrobenchRun detailed = run_microbench("h100_sxm", "stream", {"op=read", "bytes=4MiB"}, {"hbm.bandwidth=100GB/s", "hbm.refresh=all_bank"});
  const double refresh_free = 1.0 - config_number(detailed.config, "hbm.timing.tRFC") / config_number(detailed.config, "hbm.timing.tREFI");
  CHECK(metric(detailed, "bandwidth_gbps") <= cap_gbps * refresh_free);
  CHECK(metric(detailed, "bandwidth_gbps") >= cap_gbps * refresh_free * 0.95);
}

TEST_CASE("smem_bandwidth without conflicts reaches smem.bandwidth per SM", "[microbench]") {
  const MicrobenchRun run = run_microbench("h100_sxm", "smem_bandwidth", {"iterations=4096"}, {"sm.count=2"});
  const double peak = config_number(run.config, "smem.bandwidth");
  CHECK(metric(run, "bandwidth_bytes_per_clk_per_sm") <= peak);
  CHECK(metric(run, "bandwidth_bytes_per_clk_per_sm") >= peak * 0.97);
  const double sm = config_number(run.config, "clocks.sm"), sms = config_number(run.config, "sm.count");
  CHECK(metric(run, "bandwidth_gbps") == Approx(metric(run, "bandwidth_bytes_per_clk_per_sm") * sms * sm / 1e9).epsilon(1e-3));
}

// One wavefront (a pass over the 32 banks) per SM cycle: an n-way conflict replays n times, so n times fewer bytes
// per cycle (CUDA C++ Programming Guide, shared memory of cc 5.x+).
TEST_CASE("smem_bandwidth with n-way bank conflicts is n times slower", "[microbench]") {
  const MicrobenchRun free = run_microbench("h100_sxm", "smem_bandwidth", {"iterations=1024"}, {"sm.count=1"});
  const MicrobenchRun four = run_microbench("h100_sxm", "smem_bandwidth", {"iterations=1024", "conflict_ways=4"}, {"sm.count=1"});
  CHECK(metric(four, "bandwidth_bytes_per_clk_per_sm") ==
        Approx(metric(free, "bandwidth_bytes_per_clk_per_sm") / 4).epsilon(0.05));
}

// Lane i reads 4-byte word i*s: bank (i*s) % 32, so gcd(s, 32) distinct words per bank used. Each doubling of the
// stride (2, 4, ... 32) doubles the conflict degree and halves the bytes per cycle: smem.banks * 4 / s. An odd
// stride touches every bank once; LDS.128 with 16-byte lanes contiguous is 4 conflict-free quarter-warp passes.
TEST_CASE("smem_bandwidth --stride: bytes per cycle halve each time the conflict degree doubles", "[microbench]") {
  const auto run = [](std::vector<std::string> keys) {
    keys.push_back("iterations=1024");
    return run_microbench("a100_sxm", "smem_bandwidth", keys, {"sm.count=1"});
  };
  const MicrobenchRun two = run({"stride=2"});
  const double row_bytes = config_number(two.config, "smem.banks") * 4;
  CHECK(metric(two, "bandwidth_bytes_per_clk_per_sm") == Approx(row_bytes / 2).epsilon(0.01));
  for (int stride : {4, 8, 16, 32}) {
    INFO("stride " << stride);
    CHECK(metric(run({"stride=" + std::to_string(stride)}), "bandwidth_bytes_per_clk_per_sm") ==
          Approx(row_bytes / stride).epsilon(0.01));
  }
  CHECK(metric(run({"stride=3"}), "bandwidth_bytes_per_clk_per_sm") >= row_bytes * 0.9);
  CHECK(metric(run({"width=16"}), "bandwidth_bytes_per_clk_per_sm") >= row_bytes * 0.97);
  // LDS.128 with lanes 32 B apart: a quarter-warp spans 256 B, two lanes per bank quad, 2-way.
  CHECK(metric(run({"width=16", "stride=2"}), "bandwidth_bytes_per_clk_per_sm") == Approx(row_bytes / 2).epsilon(0.01));
}

// ldmatrix.x4 of a 16x16 fp16 block from 128-byte rows: swizzled, each 8x8 matrix's rows hit 8 bank groups, one
// wavefront; row-major, all 8 rows hit the same 4 banks, 8 wavefronts.
TEST_CASE("smem_bandwidth ldmatrix: the swizzled tile runs at the bank rate, the linear one 8 times slower", "[microbench]") {
  const MicrobenchRun swizzled =
      run_microbench("h100_sxm", "smem_bandwidth", {"op=ldmatrix", "layout=swizzled", "iterations=1024"}, {"sm.count=1"});
  const MicrobenchRun linear =
      run_microbench("h100_sxm", "smem_bandwidth", {"op=ldmatrix", "layout=linear", "iterations=1024"}, {"sm.count=1"});
  const double row_bytes = config_number(swizzled.config, "smem.banks") * 4;
  CHECK(metric(swizzled, "bandwidth_bytes_per_clk_per_sm") >= row_bytes * 0.97);
  CHECK(metric(linear, "bandwidth_bytes_per_clk_per_sm") == Approx(row_bytes / 8).epsilon(0.01));
}

TEST_CASE("dep_chain: one dependent chain runs at the configured latency, many at the issue rate", "[microbench]") {
  const std::map<std::string, std::string> pipe_of = {{"ffma", "fp32"}, {"hfma2", "fp32"}, {"iadd3", "int"},
                                                      {"imad", "int"}, {"dfma", "fp64"}, {"mufu", "sfu"}};
  for (const auto& [op, pipe] : pipe_of) {
    INFO(op);
    const MicrobenchRun run = run_microbench("a100_sxm", "dep_chain", {"op=" + op, "length=2048"}, {"sm.count=1"});
    std::string upper = op;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    const double own = config_number(run.config, "sm.opcodes." + upper + ".latency");
    const double latency = own > 0 ? own : config_number(run.config, "sm.pipes." + pipe + ".latency");
    // Launch and EXIT add a few cycles over 2048 instructions.
    CHECK(metric(run, "latency_cycles") >= latency);
    CHECK(metric(run, "latency_cycles") <= latency * 1.01);
  }
  // FFMA throughput: each sub-partition issues one per pipes.fp32.issue_interval cycles.
  for (const std::string gpu : {"a100_sxm", "h100_sxm"}) {
    const MicrobenchRun run = run_microbench(gpu, "dep_chain", {"op=ffma", "ilp=8", "warps=32", "length=512"}, {"sm.count=1"});
    const double peak = config_number(run.config, "sm.subpartitions") / config_number(run.config, "sm.pipes.fp32.issue_interval");
    CHECK(metric(run, "throughput_per_clk_per_sm") <= peak);
    CHECK(metric(run, "throughput_per_clk_per_sm") >= peak * 0.98);
  }
}

TEST_CASE("tensor_throughput: one MMA chain at the configured latency, enough chains at the tensor peak", "[microbench]") {
  const MicrobenchRun one = run_microbench("h100_sxm", "tensor_throughput", {"warps=1", "ctas=1", "iterations=512"});
  CHECK(metric(one, "latency_cycles") >= config_number(one.config, "sm.tensor.latency"));
  CHECK(metric(one, "latency_cycles") <= config_number(one.config, "sm.tensor.latency") * 1.01);
  // mma.sync: 16 warps x 4 chains = 16 MMAs in flight per sub-partition, more than latency / issue interval (24 / 5.9
  // on H100): the tensor pipes never wait. Its rate on Hopper is sm.tensor.mma_sync_flops_per_cycle.
  const MicrobenchRun mma = run_microbench("h100_sxm", "tensor_throughput", {"warps=16", "ilp=4", "iterations=256"}, {"sm.count=4"});
  const double mma_peak = config_number(mma.config, "sm.count") * config_number(mma.config, "sm.tensor.mma_sync_flops_per_cycle.f16") *
                          config_number(mma.config, "clocks.sm") / 1e12;
  CHECK(metric(mma, "tflops") <= mma_peak * 1.0001);
  CHECK(metric(mma, "tflops") >= mma_peak * 0.98);
  // Sparse mma.sp: sm.tensor.mma_sync_sparse_speedup times that (measured: 722.8 TFLOPS, h800pcie.tp.mma_fp16_sp.luo24,
  // against 494.4 dense).
  const MicrobenchRun sp = run_microbench("h100_sxm", "tensor_throughput", {"warps=16", "ilp=4", "iterations=256", "sparse=true"}, {"sm.count=4"});
  CHECK(metric(sp, "tflops") <= mma_peak * config_number(sp.config, "sm.tensor.mma_sync_sparse_speedup") * 1.0001);
  CHECK(metric(sp, "tflops") / metric(mma, "tflops") == Approx(722.8 / 494.4).epsilon(0.02));
  // wgmma (m64n256k16): one group executing while the next issues, or two warpgroups per SM: the warpgroup-MMA
  // peak, SMs x flops_per_cycle x SM clock.
  for (const auto& keys : {std::vector<std::string>{"instruction=wgmma", "warps=8", "iterations=256"},
                           std::vector<std::string>{"instruction=wgmma", "warps=4", "wgmma_pending=1", "iterations=256"}}) {
    const MicrobenchRun run = run_microbench("h100_sxm", "tensor_throughput", keys, {"sm.count=4"});
    const double peak_tflops = config_number(run.config, "sm.count") * config_number(run.config, "sm.tensor.flops_per_cycle.f16") *
                               config_number(run.config, "clocks.sm") / 1e12;
    CHECK(metric(run, "tflops") <= peak_tflops * 1.0001);
    CHECK(metric(run, "tflops") >= peak_tflops * 0.98);
    // Measured on an H100 SXM5 (validation/data/h100_sxm_2026-11-23/microbench.txt): mma.sync m16n8k16 f16 647.0
    // TFLOPS, wgmma m64n256k16 f16 974.6 on the same GPU in the same run: mma.sync reaches 0.664 of wgmma (Luo et
    // al. found 494.4 / 729.3 = 0.678 on an H800 PCIe, h800pcie.tp.mma_fp16.luo24 and h800pcie.tp.wgmma_fp16.luo24).
    CHECK(metric(mma, "tflops") / metric(run, "tflops") == Approx(647.0 / 974.6).epsilon(0.02));
  }
}

TEST_CASE("tensor_throughput wgmma: a dependent chain takes the configured latency for its N, as measured", "[microbench]") {
  // One warpgroup, each iteration fence + HGMMA + commit + wait_group 0: the MMA's latency plus 2 issue cycles
  // (the fence and the next HGMMA after the wait). Measured on an H100 SXM5 with the same loop
  // (validation/data/h100_sxm_2026-11-23/microbench.txt, wgmma.m64nNk16.f32.f16.f16.ss.latency): 86.0, 118.0 and
  // 197.4 cycles per iteration for N = 64, 128, 256; the config's integer line through them is within 5%.
  for (const auto& [n, measured] : {std::pair<int, double>{64, 86.0}, {128, 118.0}, {256, 197.4}}) {
    INFO("N = " << n);
    const MicrobenchRun run = run_microbench("h100_sxm", "tensor_throughput",
                                             {"instruction=wgmma", "shape=m64n" + std::to_string(n) + "k16", "warps=4",
                                              "ctas=1", "iterations=256"});
    const double configured = config_number(run.config, "sm.tensor.wgmma.latency_fixed") +
                              config_number(run.config, "sm.tensor.wgmma.latency_per_n8") * n / 8;
    CHECK(metric(run, "latency_cycles") - 2 >= configured);
    CHECK(metric(run, "latency_cycles") - 2 <= configured + 0.1);
    CHECK(metric(run, "latency_cycles") == Approx(measured).epsilon(0.05));
  }
}

TEST_CASE("tma_bandwidth: an L2-resident TMA load takes its setup latency more than a load, as measured", "[microbench][tma]") {
  // One CTA, one stage, one 128-byte box reloaded (an L2 hit after the first): per box the TMA path (async_copy.latency,
  // the NoC both ways, L2, the L1TEX data path) plus the issue of the arrive and of the copy after the wait.
  const MicrobenchRun tma = run_microbench("h100_sxm", "tma_bandwidth",
                                           {"box_rows=1", "box_row_bytes=128", "stages=1", "footprint=128B", "ctas=1", "iterations=1024"});
  const MicrobenchRun load = run_microbench("h100_sxm", "pointer_chase", {"footprint=512KiB", "steps=8192"});
  const auto& cfg = tma.config;
  const double noc_one_way = config_number(cfg, "noc.sm_to_gpc_latency") + config_number(cfg, "noc.gpc_to_partition_latency");
  const double l2_path = config_number(cfg, "l1.hit_latency") + (2 * noc_one_way + config_number(cfg, "l2.hit_latency")) *
                                                                    config_number(cfg, "clocks.sm") / config_number(cfg, "clocks.l2");
  const double tma_path = config_number(cfg, "async_copy.latency") + l2_path;
  // Above the path: the arrive and the copy issued after the wait, the box's 128 B through the NoC ports,
  // rounding at the clock-domain crossings: under 10 cycles.
  CHECK(metric(tma, "latency_cycles") >= tma_path);
  CHECK(metric(tma, "latency_cycles") <= tma_path + 10);
  // Measured on H800 PCIe: TMA 365 cycles (h800pcie.lat.tma.raw) against 264.5 for loads (h800pcie.lat.l2.raw):
  // TMA is 100.5 cycles slower. The model's difference, TMA minus the pointer-chase L2 load:
  CHECK(metric(tma, "latency_cycles") - metric(load, "latency_cycles") == Approx(365.0 - 264.5).epsilon(0.08));
}

TEST_CASE("tma_bandwidth: from DRAM TMA reaches the bandwidth loads reach - from L2 its own limits", "[microbench][tma]") {
  // Every SM streams 8 KiB boxes from DRAM, 4 in flight (69 MB in all): HBM is the bottleneck. Measured on H800
  // PCIe, h800pcie.bw.tma.raw 1826 GB/s is likewise a DRAM-bound figure (90% of h100pcie.spec.hbm_peak_bw 2039 GB/s).
  // hbm_simple: the DRAM bus at its configured bandwidth, so that the check is about TMA's protocol and depth.
  // (With hbm_detailed, refresh and row switches add DRAM latency and this run reaches ~76% of peak, below the
  // 89-94% measured for TMA bulk copies on H100 SXM5: 4 boxes in flight per SM are too few for that latency.)
  const MicrobenchRun tma = run_microbench("h100_sxm", "tma_bandwidth", {"iterations=64"}, {"hbm.impl=hbm_simple"});
  const double hbm_gbps = config_number(tma.config, "hbm.bandwidth") / 1e9;
  CHECK(metric(tma, "bandwidth_gbps") <= hbm_gbps);
  CHECK(metric(tma, "bandwidth_gbps") >= 0.9 * hbm_gbps);
  // L2-resident (each CTA reloads one 64 KiB region): per SM at most what its NoC port delivers, what the unit
  // generates (a box's bytes at issue_bytes_per_cycle plus copy_cycles per box, one box after another), and what
  // its in-flight limit allows (async_copy.max_outstanding lines per L2 round trip: the NoC both ways and the
  // slice's hit latency, L2 clock = SM clock); the smallest of the three is the bottleneck.
  const MicrobenchRun l2 = run_microbench("h100_sxm", "tma_bandwidth", {"footprint=64KiB", "iterations=512", "ctas=1"}, {"sm.count=1"});
  const auto& cfg = l2.config;
  const double box = 64.0 * 128;  // the synthesizer's default box: 64 rows of 128 B
  const double port = config_number(cfg, "noc.sm_port_bandwidth") * config_number(cfg, "clocks.l2");
  const double issue_rate = config_number(cfg, "async_copy.issue_bytes_per_cycle");
  const double issue = box / (box / issue_rate + config_number(cfg, "async_copy.copy_cycles")) * config_number(cfg, "clocks.sm");
  const double round_trip = 2 * (config_number(cfg, "noc.sm_to_gpc_latency") + config_number(cfg, "noc.gpc_to_partition_latency")) +
                            config_number(cfg, "l2.hit_latency");
  const double in_flight = config_number(cfg, "async_copy.max_outstanding") * config_number(cfg, "l2.line_size") /
                           round_trip * config_number(cfg, "clocks.l2");
  const double cap_gbps = std::min({port, issue, in_flight}) / 1e9;
  CHECK(metric(l2, "bandwidth_gbps") <= cap_gbps * 1.01);
  CHECK(metric(l2, "bandwidth_gbps") >= 0.85 * cap_gbps);
}

// Measured on H100 SXM5 with tools/hw_bench/tma_bench.cu on 2026-11-23 (validation/data/h100_sxm_2026-11-23/,
// tma_bench_inflight.txt and microbench.txt), L2-resident sources, bytes per SM cycle per SM:
//   one SM, 4 KiB copies, rings of 8 to 128 KiB:          15.08-15.19
//   all 132 SMs, 8 KiB copies (16 MiB footprint):          26.19-26.45
//   all 132 SMs, 16 KiB copies:                            27.31-27.73 (7.14-7.19 TB/s: the GPU's L2 streaming limit,
//                                                          which plain loads (7.24) and cp.async (7.09) also reach)
//   one copy from issue to its mbarrier completing:        372 cycles (1 KiB), 508 (16 KiB)
// The configs take issue_bytes_per_cycle and copy_cycles from the one-SM rate and the two latencies; the other
// figures check them.
namespace {
double bytes_per_sm_cycle(const MicrobenchRun& r, double ctas) {
  return metric(r, "bandwidth_gbps") * 1e9 / config_number(r.config, "clocks.sm") / ctas;
}
}  // namespace

TEST_CASE("tma_bandwidth: a per-copy cost bounds one SM's TMA rate as measured on H100", "[microbench][tma]") {
  // One SM, 4 KiB boxes (32 rows of 128 B) from a 64 KiB L2-resident region: the rate does not depend on the copies
  // in flight (2 or 16 stages), as measured, and is the measured 15.15 B/clk.
  for (const char* stages : {"stages=2", "stages=16"}) {
    INFO(stages);
    const MicrobenchRun r = run_microbench("h100_sxm", "tma_bandwidth",
                                           {"box_rows=32", "box_row_bytes=128", stages, "footprint=64KiB", "ctas=1", "iterations=512"},
                                           {"sm.count=1"});
    CHECK(bytes_per_sm_cycle(r, 1) == Approx(15.15).epsilon(0.10));
  }
  // One copy's latency (one stage, a box reloaded from L2), 1 KiB and 16 KiB, against 372 and 508 cycles.
  for (const auto& [rows, measured] : {std::pair<int, double>{8, 372}, {128, 508}}) {
    INFO(rows << " rows of 128 B");
    const MicrobenchRun r = run_microbench("h100_sxm", "tma_bandwidth",
                                           {"box_rows=" + std::to_string(rows), "box_row_bytes=128", "stages=1",
                                            "footprint=" + std::to_string(rows * 128) + "B", "ctas=1", "iterations=256"},
                                           {"sm.count=1"});
    CHECK(metric(r, "latency_cycles") == Approx(measured).epsilon(0.10));
  }
  // One SM's 16 KiB copies: at least the per-SM rate every SM reached at once (27.3-27.7 B/clk; one SM alone can
  // only be faster), i.e. the unit is not what held the measured GPU-wide figure.
  const MicrobenchRun one16 = run_microbench("h100_sxm", "tma_bandwidth",
                                             {"box_rows=128", "box_row_bytes=128", "stages=8", "footprint=128KiB", "ctas=1", "iterations=256"},
                                             {"sm.count=1"});
  CHECK(bytes_per_sm_cycle(one16, 1) >= 27.3);
  // Every SM, 8 KiB boxes (64 rows of 128 B) from 128 KiB per CTA, 512 per CTA (the first pass from DRAM): the
  // measured 26.2-26.4 B/clk per SM, within 10%.
  const MicrobenchRun all8 = run_microbench("h100_sxm", "tma_bandwidth",
                                            {"box_rows=64", "box_row_bytes=128", "stages=8", "footprint=128KiB", "iterations=512"});
  CHECK(bytes_per_sm_cycle(all8, config_number(all8.config, "sm.count")) == Approx(26.3).epsilon(0.10));
}

TEST_CASE("tensor_throughput refuses wgmma and fp8 on sm_80 with one clear error", "[microbench]") {
  TempDir dir;
  for (const std::string key : {"instruction=wgmma", "dtype=fp8"}) {
    const std::vector<std::string> args = {"run", "--gpu", "a100_sxm", "--synth", "tensor_throughput", "--synth-key", key,
                                           "--out", dir / "out", "--no-progress"};
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    CHECK(r.exit_code == 2);
    CHECK(count_lines_containing(r.err, "error:") == 1);
    CHECK(contains(r.err, key == "dtype=fp8" ? "no FP8" : "sm_90 only"));
  }
}

TEST_CASE("synth --help lists every microbenchmark with its keys and metrics", "[microbench]") {
  const CmdResult r = run_warpsim({"synth", "--help"});
  REQUIRE(r.exit_code == 0);
  for (const char* kind : {"pointer_chase:", "stream:", "smem_bandwidth:", "dep_chain:", "tensor_throughput:", "tma_bandwidth:"})
    CHECK(contains(r.out, kind));
  for (const char* metric : {"latency_cycles", "latency_ns", "bandwidth_gbps", "bandwidth_bytes_per_clk_per_sm",
                             "throughput_per_clk_per_sm", "tflops"})
    CHECK(contains(r.out, metric));
  CHECK(contains(r.out, "[GB/s]"));
}

// The A100 stream read against its measurement (../shared/calibration/hw_calibration.yaml a100_80.bw.stream_read.gb,
// 1769 GB/s, 87% of the 2039 GB/s peak): the shortfall from peak comes from hbm_detailed's mechanisms (all-bank
// refresh, row switches), not a derate. 256 MiB is five times the L2; 1024 threads per CTA as the measurement (the
// maximum over block sizes, see validation/microbenchmarks.yaml).
TEST_CASE("a100 stream read is within 10% of the measured HBM stream bandwidth", "[microbench][calibration]") {
  const std::string yaml = std::string(WARPSIM_SHARED_DIR) + "/calibration/hw_calibration.yaml";
  std::ifstream in(yaml);
  if (!in) {
    WARN("warpsim-skip: " << yaml << " is absent");
    return;
  }
  double measured = 0;
  for (std::string line; std::getline(in, line);) {
    if (line != "- id: a100_80.bw.stream_read.gb") continue;
    while (std::getline(in, line) && line.rfind("- id:", 0) != 0)
      if (line.rfind("  value: ", 0) == 0) measured = std::stod(line.substr(9));
    break;
  }
  REQUIRE(measured > 0);
  const MicrobenchRun run = run_microbench("a100_sxm", "stream", {"op=read", "bytes=256MiB", "threads=1024"});
  CHECK(metric(run, "bandwidth_gbps") == Approx(measured).epsilon(0.10));
  CHECK(metric(run, "bandwidth_gbps") < 0.95 * config_number(run.config, "hbm.bandwidth") / 1e9);
}

TEST_CASE("tensor_throughput tcgen05: one thread's MMAs run back to back on the SM's tensor core at its rate",
          "[microbench][tcgen05]") {
  // m128n256k16: 2 x 128 x 256 x 16 / 8192 = 128 cycles each, queued in order: the SM's f16 peak.
  const MicrobenchRun big = run_microbench("b200", "tensor_throughput", {"instruction=tcgen05", "iterations=256"}, {"sm.count=4"});
  const double peak = big.cfg("sm.count") * big.cfg("sm.tensor.flops_per_cycle.f16") * big.cfg("clocks.sm") / 1e12;
  CHECK(big.metric("tflops") <= peak * 1.0001);
  CHECK(big.metric("tflops") >= peak * 0.98);
  // An m64 MMA uses half of the 128 TMEM lanes and takes as long as an m128 one: m64n8k16 occupies
  // 2 x 128 x 8 x 16 / 8192 = 4 cycles. Measured on a B200 (b200.tp.tcgen05_fp16_fp16acc.jarm, Jarmusch &
  // Chandrasekaran, m64n8k16 back to back): 964.8 TFLOPS, 4.66 cycles per MMA; the model leaves out a per-instruction
  // cost of about 0.66 cycles, which an m128n256 MMA's 128 cycles hide, and reads 17% faster.
  const MicrobenchRun small = run_microbench("b200", "tensor_throughput",
                                             {"instruction=tcgen05", "shape=m64n8k16", "iterations=4096"});
  const double rows = small.cfg("sm.tensor.tcgen05.datapath_rows");
  CHECK(small.metric("latency_cycles") >= 2 * rows * 8 * 16 / small.cfg("sm.tensor.flops_per_cycle.f16"));
  CHECK(small.metric("latency_cycles") <= 2 * rows * 8 * 16 / small.cfg("sm.tensor.flops_per_cycle.f16") * 1.01);
  CHECK(small.metric("tflops") / 964.8 >= 1.0);
  CHECK(small.metric("tflops") / 964.8 <= 1.2);
  // One MMA alone completes its occupancy plus sm.tensor.tcgen05.latency after issue (the commit's arrival
  // releases the waiting warp): one CTA, one m128n256k16 MMA.
  const MicrobenchRun one = run_microbench("b200", "tensor_throughput", {"instruction=tcgen05", "iterations=1", "ctas=1"});
  CHECK(one.metric("latency_cycles") >= 128 + one.cfg("sm.tensor.tcgen05.latency"));
  CHECK(one.metric("latency_cycles") <= 128 + one.cfg("sm.tensor.tcgen05.latency") + 20);  // launch, init, issue
}

TEST_CASE("gemm sm_100 runs its MMAs on tcgen05: every FLOP executed once, every stage committed", "[gemm][tcgen05]") {
  // 256 x 512 x 1024 bf16 on 8 SMs of a B200: 2 x 2 output tiles of 128 x 256, 16 k-tiles of 64, 4 MMAs of k16 each.
  const SynthRun run =
      run_synth("b200", "gemm", {"m=256", "n=512", "k=1024", "split_k=1"}, {"power.cap_mode=report", "sm.count=8"});
  CHECK(run.text("kernels[0].name").find("_tcgen05") != std::string::npos);
  auto counter = [&](const std::string& key) { return stats_number(run.stats, "kernels[0].counters[\"" + key + "\"]"); };
  CHECK(counter("sm.tensor_flops") == 2.0 * 256 * 512 * 1024);
  CHECK(counter("sm.tcgen05_mmas") == 4.0 * 16 * 4);
  // A commit per k-tile (its stage) and per tile (its accumulator).
  CHECK(counter("sm.tcgen05_commits") == 4.0 * (16 + 1));
  // The tensor pipe's busy time is the MMAs' work at the SM's rate, on every sub-partition.
  CHECK(counter("sm.pipe_busy_tensor") == Approx(2.0 * 256 * 512 * 1024 / run.cfg("sm.tensor.flops_per_cycle.bf16") *
                                                 run.cfg("sm.subpartitions")).epsilon(1e-6));
}

TEST_CASE("smem_bandwidth cluster: distributed shared memory at the measured SM-to-SM latency and ring bandwidth",
          "[microbench][dsmem]") {
  // A pointer chase through the next cluster CTA's shared memory, one warp per SM: Luo et al. measured 180 cycles
  // remote where their test read local shared memory in 33 (h800pcie.lat.dsm.raw, cluster size 2).
  const MicrobenchRun remote = run_microbench("h100_sxm", "smem_bandwidth",
                                              {"cluster=2", "chain=true", "threads=32", "ctas_per_sm=1", "iterations=1024"});
  const MicrobenchRun local = run_microbench("h100_sxm", "smem_bandwidth",
                                             {"chain=true", "threads=32", "ctas_per_sm=1", "iterations=1024"});
  CHECK(remote.metric("latency_cycles") == Approx(180.0).epsilon(0.05));
  // The remote path replaces smem.latency by smem.remote_latency and adds the warp's 128 bytes at this SM's share of
  // the network.
  const double port = 32 * 4 / remote.cfg("smem.remote_bytes_per_cycle");
  CHECK(remote.metric("latency_cycles") - local.metric("latency_cycles") ==
        Approx(remote.cfg("smem.remote_latency") - remote.cfg("smem.latency") + port).margin(1.0));
  // Every SM reading its neighbour's shared memory: h800pcie.bw.dsm.luo24, 3.27 TB/s over 114 SMs at 1.755 GHz =
  // 16.3 B/cycle/SM at cluster size 2.
  const MicrobenchRun ring = run_microbench("h100_sxm", "smem_bandwidth", {"cluster=2", "iterations=256"}, {"sm.count=8"});
  CHECK(ring.metric("bandwidth_bytes_per_clk_per_sm") == Approx(3.27e12 / 114 / 1.755e9).epsilon(0.05));
  CHECK(ring.metric("bandwidth_bytes_per_clk_per_sm") <= ring.cfg("smem.remote_bytes_per_cycle") * 1.0001);
  CHECK(ring.text("kernels[0].speed_of_light.limiter.key") == "dsmem");
}
