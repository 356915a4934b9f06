// The partitioned L2 and its interconnect (models/noc/hierarchical.cpp, models/mem/l2_slice.cpp) end to end:
// what each configured hop costs, which cap binds a stream, the unreachable-bandwidth warning, and GH100 with two
// memory systems running a compute-bound GEMM in the same time. Expectations come from the config's parameters.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "test_helpers.h"

using namespace wstest;

namespace {

// A figure as the warning prints it ({:.4g}).
std::string fmt_tbps(double tbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", tbps);
  return buf;
}

}  // namespace

TEST_CASE("a far-partition hit costs the partition link's round trip - near hits do not cross it", "[l2][partitions]") {
  // One SM chases 8 MiB (within its near partition's capacity: after the warm-up every far-homed line has a near
  // copy), 40 MiB (beyond one partition's 25 MiB, within the 50 MiB L2: the near partition misses every time, the
  // lines homed near come from DRAM, those homed far are hits in the far partition) and 1 GiB (all DRAM).
  // Adding 100 cycles to the link, each way, leaves the near chase alone and adds 2 x 100 to the far-homed half
  // of the others: +100 L2 cycles per load on average, in SM cycles x clocks.sm / clocks.l2 (the SM clock is the
  // boost policy's result, the L2 clock stays).
  const SynthRun far = run_synth("h100_sxm", "pointer_chase", {"footprint=40MiB", "steps=16384"});
  const std::string link_plus_100 =
      "noc.partition_link_latency=" + std::to_string(static_cast<int>(far.cfg("noc.partition_link_latency")) + 100);
  const std::vector<std::string> slower = {link_plus_100};
  const SynthRun near = run_synth("h100_sxm", "pointer_chase", {"footprint=8MiB", "steps=16384"});
  const SynthRun near_slow = run_synth("h100_sxm", "pointer_chase", {"footprint=8MiB", "steps=16384"}, slower);
  const SynthRun far_slow = run_synth("h100_sxm", "pointer_chase", {"footprint=40MiB", "steps=16384"}, slower);
  // The DRAM pair runs on hbm_simple (a fixed access latency): with the detailed HBM model, shifting every request
  // by the link's extra latency also moves it against refresh and row state, which adds its own +17 cycles per load
  // (measured: 744.7 -> 861.5 detailed, 710.0 -> 811.5 hbm_simple), and this test is about the link.
  const std::vector<std::string> simple = {"hbm.impl=hbm_simple"};
  const std::vector<std::string> simple_slower = {"hbm.impl=hbm_simple", link_plus_100};
  const SynthRun dram = run_synth("h100_sxm", "pointer_chase", {"footprint=1GiB", "steps=2048"}, simple);
  const SynthRun dram_slow = run_synth("h100_sxm", "pointer_chase", {"footprint=1GiB", "steps=2048"}, simple_slower);
  const double added = (far_slow.cfg("noc.partition_link_latency") - far.cfg("noc.partition_link_latency")) *
                       far.cfg("clocks.sm") / far.cfg("clocks.l2");
  REQUIRE(added >= 100.0);  // the SM clock (config 1.83 GHz) is above the L2's (1.70 GHz)
  CHECK(near_slow.metric("latency_cycles") == Approx(near.metric("latency_cycles")).margin(1.0));
  // Half of the lines, twice each: the warm-up pass of the 40 MiB chase crosses the link too (it is part of the
  // time), so allow 10%.
  CHECK(far_slow.metric("latency_cycles") - far.metric("latency_cycles") == Approx(added).epsilon(0.10));
  CHECK(dram_slow.metric("latency_cycles") - dram.metric("latency_cycles") == Approx(added).epsilon(0.05));
  // And the plateau sits between the near hit and DRAM, a link round trip above their mean.
  const double mean = (near.metric("latency_cycles") + dram.metric("latency_cycles")) / 2;
  CHECK(far.metric("latency_cycles") > mean);
  CHECK(far.metric("latency_cycles") < mean + 2 * added);
}

TEST_CASE("a stream whose far-homed half crosses a narrow partition link is limited by the link", "[l2][partitions]") {
  // A read stream from DRAM (first touches): every line homed in the other partition than its reader's crosses
  // the link once, from the home partition towards the reader. SMs are spread evenly over the GPCs and the GPCs
  // over the partitions, so about half of each partition's reads are far: each direction carries a quarter of
  // the bytes (at most 68 of the 132 H100 SMs sit on one partition: 68/132/2 = 25.8%). A 16 B/clk link then caps
  // the stream at 16 x 1.83 GHz / 0.258 = 114 GB/s, far below HBM, the slices and the ports. Each message
  // reserves the links of its path when it is sent, in the order it is sent, so a link kept busy from several
  // sources keeps gaps that later messages for earlier times cannot fill: about 60% of the cap is reached.
  const SynthRun r = run_synth("h100_sxm", "stream", {"op=read", "bytes=16MiB"}, {"noc.partition_link_bandwidth=16"});
  const double link = r.cfg("noc.partition_link_bandwidth") * r.cfg("clocks.l2");
  const double sms = r.cfg("sm.count"), gpcs = r.cfg("noc.gpcs");
  const double busiest_partition_sms = std::ceil(gpcs / 2) * std::ceil(sms / gpcs);
  const double cap_gbps = link / (busiest_partition_sms / sms / 2) / 1e9;
  INFO(r.out);
  CHECK(r.metric("bandwidth_gbps") <= cap_gbps * 1.02);
  CHECK(r.metric("bandwidth_gbps") >= cap_gbps * 0.5);
  CHECK(r.text("kernels[0].speed_of_light.l2_path").rfind("bound by link between the L2 partitions", 0) == 0);
}

TEST_CASE("twice l2.bandwidth doubles what the L2 delivers, or the run says which cap binds", "[l2][caps]") {
  // An L2-resident read stream (16 MiB, 8 passes) with the slices' data ports narrowed until they bind: 0.4 TB/s.
  const std::vector<std::string> keys = {"op=read", "bytes=16MiB", "passes=8"};
  const SynthRun base = run_synth("h100_sxm", "stream", keys, {"l2.bandwidth=0.4TB/s"});
  const SynthRun twice = run_synth("h100_sxm", "stream", keys, {"l2.bandwidth=0.8TB/s"});
  INFO(base.out << twice.out);
  CHECK(base.text("kernels[0].speed_of_light.l2_path").rfind("bound by L2 slices", 0) == 0);
  CHECK(twice.metric("bandwidth_gbps") / base.metric("bandwidth_gbps") == Approx(2.0).epsilon(0.08));
  CHECK_FALSE(contains(twice.out, "WARNING: l2.bandwidth"));  // (HBM behind 0.8 TB/s of slices is, rightly, warned about)

  // With the slice ports narrowed to 8 B/clk (80 x 8 x 1.83 GHz = 1.17 TB/s), 2.4 TB/s of data ports cannot be
  // reached: the model says so when it is built, and the run names the ports as what bound it.
  const SynthRun capped = run_synth("h100_sxm", "stream", keys, {"noc.slice_port_bandwidth=8", "l2.bandwidth=1.2TB/s"});
  const SynthRun capped_twice = run_synth("h100_sxm", "stream", keys, {"noc.slice_port_bandwidth=8", "l2.bandwidth=2.4TB/s"});
  INFO(capped.out << capped_twice.out);
  const double ports_tbps = capped.cfg("l2.slices") * capped.cfg("noc.slice_port_bandwidth") * capped.cfg("clocks.l2") / 1e12;
  REQUIRE(ports_tbps < 1.2);
  const std::string warning = "l2.bandwidth 2.4 TB/s is unreachable: noc slice ports (80 slices x 8 B/clk) cap the path at " +
                              fmt_tbps(ports_tbps) + " TB/s";
  CHECK(contains(capped_twice.out, "WARNING: " + warning));
  CHECK(contains(capped_twice.stats, warning));
  CHECK(capped_twice.text("kernels[0].speed_of_light.l2_path").rfind("bound by L2 slice ports towards the SMs", 0) == 0);
  CHECK(capped_twice.metric("bandwidth_gbps") <= ports_tbps * 1e3 * 1.01);
  CHECK(capped_twice.metric("bandwidth_gbps") / capped.metric("bandwidth_gbps") < 1.5);  // far from the 2x asked for
}

TEST_CASE("an L2 write stream is bounded by the slices' flit input, half the read side", "[l2][caps]") {
  // All-SM stores over an L2-resident 8 MiB, as mem_bench's L2 write kernel (264 CTAs of 1024 threads, 32 B per
  // thread per pass): every sector enters its slice through the slice's input, one flit of
  // noc.slice_input_bandwidth bytes per L2 clock (Nsight: one write sector per lts__xbar2lts active cycle), so the
  // stream cannot pass slices x flit x clock, and twice the flit width lifts that cap towards the read side's.
  const std::vector<std::string> keys = {"op=write", "bytes=8MiB", "passes=32", "ctas_per_sm=2", "threads=1024"};
  const SynthRun base = run_synth("h100_sxm", "stream", keys);
  const SynthRun wide = run_synth("h100_sxm", "stream", keys, {"noc.slice_input_bandwidth=64"});
  INFO(base.out << wide.out);
  const double input_gbps = base.cfg("l2.slices") * base.cfg("noc.slice_input_bandwidth") * base.cfg("clocks.l2") / 1e9;
  const double gbps = base.metric("bandwidth_gbps");
  CHECK(gbps <= input_gbps * 1.01);
  CHECK(gbps >= input_gbps * 0.85);  // the input, not another cap, sets the rate
  CHECK(base.text("kernels[0].speed_of_light.l2_path").rfind("bound by L2 slice ports from the crossbar", 0) == 0);
  CHECK(wide.metric("bandwidth_gbps") >= 1.4 * gbps);
}

TEST_CASE("H100 and H200 (same GH100, other HBM) run a compute-bound GEMM in the same time", "[l2][gemm]") {
  // 4096x4096x1024 bf16: 34.4 GFLOP = 35 us of tensor work against 67 MB of compulsory traffic (20 us at the
  // H100's 3.35 TB/s). Both GPUs have the same SMs, clocks and crossbar; only HBM, the L2 size and the number of
  // slices differ, and neither L2 limits this GEMM (their shared GPC ports may). The TMA main loop refills a stage only once the wgmma that read
  // it has completed (as CUTLASS does), so part of the memory latency shows: the HBMs' difference moves the time by
  // a few percent (H100 46.5 us, H200 47.1 us), not more.
  // At the configured SM clock: under the power cap (boost) the two would settle at their own clocks, the H200's
  // HBM3e drawing other power than the H100's HBM3, and this test is about the memory systems.
  const std::vector<std::string> keys = {"m=4096", "n=4096", "k=1024", "dtype=bf16"};
  const SynthRun h100 = run_synth("h100_sxm", "gemm", keys, {"power.cap_mode=report"});
  const SynthRun h200 = run_synth("h200_sxm", "gemm", keys, {"power.cap_mode=report"});
  INFO(h100.out << h200.out);
  const double t100 = *json::number(h100.stats, "total_time_us"), t200 = *json::number(h200.stats, "total_time_us");
  CHECK(t200 == Approx(t100).epsilon(0.05));
  // What bounds it is on the die both share: the tensor pipe, or the GPC crossbar ports that carry its tiles (the
  // measured all-SM L2 streaming limit, which the cuBLAS kernel ran near too); never the slices or HBM, which differ.
  const std::string limiter = h100.text("kernels[0].speed_of_light.limiter.key");
  CHECK((limiter == "tensor" || limiter == "noc_gpc_ports_to_sm"));
  CHECK(h200.text("kernels[0].speed_of_light.limiter.key") == limiter);
}

TEST_CASE("all-SM L2-resident streams are bounded by the GPC crossbar ports, as measured on the H100", "[l2][caps]") {
  // Every SM streams an L2-resident footprint: TMA 16 KiB box copies (32 passes over 128 KiB per CTA, the first from
  // DRAM) and plain loads (8 passes over 8 MiB, 2 CTAs of 1024 threads per SM). The work is split evenly over the
  // SMs, and the GPCs hold whole TPCs, so the busiest GPC, ceil(sms / sms_per_tpc / gpcs) TPCs, finishes last: at most
  //   gpcs x noc.gpc_port_bandwidth x clocks.l2 x (sms/gpcs) / (its SMs)
  // of read data (answers carry only data towards the SMs). The slices (l2.bandwidth, and their crossbar ports) and
  // the TMA units allow more, so the ports bind, the run says so, and twice the port width moves the stream.
  const std::vector<std::string> tma_keys = {"box_rows=128", "box_row_bytes=128", "stages=8", "footprint=128KiB", "iterations=256"};
  const SynthRun tma = run_synth("h100_sxm", "tma_bandwidth", tma_keys);
  const SynthRun loads = run_synth("h100_sxm", "stream", {"op=read", "bytes=8MiB", "passes=8", "ctas_per_sm=2", "threads=1024"});
  INFO(tma.out << loads.out);
  const double sms = tma.cfg("sm.count"), gpcs = tma.cfg("noc.gpcs"), tpc = tma.cfg("noc.sms_per_tpc");
  const double busiest_gpc = std::ceil(sms / tpc / gpcs) * tpc;
  const double cap_gbps = gpcs * tma.cfg("noc.gpc_port_bandwidth") * tma.cfg("clocks.l2") * (sms / gpcs) / busiest_gpc / 1e9;
  REQUIRE(cap_gbps < tma.cfg("l2.bandwidth") / 1e9);
  const double hbm_gbps = tma.cfg("hbm.bandwidth") / 1e9;
  for (const auto& [r, passes] : {std::pair<const SynthRun*, double>{&tma, 32}, {&loads, 8}}) {
    CHECK(r->metric("bandwidth_gbps") <= cap_gbps * 1.01);
    // The first pass comes from DRAM: if it ran at no more than HBM's peak, after it the ports' cap, the stream
    // reaches cap / (1 + (cap/hbm - 1) / passes); 5% more for filling and draining the pipeline.
    CHECK(r->metric("bandwidth_gbps") >= 0.95 * cap_gbps / (1 + (cap_gbps / hbm_gbps - 1) / passes));
    CHECK(r->text("kernels[0].speed_of_light.l2_path").rfind("bound by GPC ports towards the SMs", 0) == 0);
    CHECK(*json::number(r->stats, "kernels[0].counters[\"noc.gpc_port.to_sm_wait_cycles\"]") > 0);
  }
  // The slices' aggregate is out of the SMs' reach with these ports, and the run says so.
  CHECK(contains(tma.out, "WARNING: l2.bandwidth " + fmt_tbps(tma.cfg("l2.bandwidth") / 1e12) +
                              " TB/s is unreachable: noc GPC ports"));
  const SynthRun wide = run_synth("h100_sxm", "tma_bandwidth", tma_keys,
                                  {"noc.gpc_port_bandwidth=" + std::to_string(2 * static_cast<int>(tma.cfg("noc.gpc_port_bandwidth")))});
  INFO(wide.out);
  // Twice the GPC ports: the stream moves up to the next cap of its path, the slices' crossbar ports (64 B per L2
  // clock each, measured with Nsight), and stays under it.
  const double slice_cap_gbps = tma.cfg("l2.slices") * tma.cfg("noc.slice_port_bandwidth") * tma.cfg("clocks.l2") / 1e9;
  REQUIRE(slice_cap_gbps > 1.1 * cap_gbps);
  CHECK(wide.metric("bandwidth_gbps") > 1.1 * tma.metric("bandwidth_gbps"));
  CHECK(wide.metric("bandwidth_gbps") <= slice_cap_gbps * 1.01);
}
