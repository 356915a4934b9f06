// Model-level properties of synthesized GEMMs, checked on the real `warpsim` executable (one subprocess per
// simulation, into a temporary output directory; stats.json read back). Expectations are derived here from the
// configuration numbers (parsed from the config.resolved.yaml each run writes), never from simulator code:
//   - the roofline: no GEMM can beat max(2MNK / tensor peak, compulsory bytes / HBM bandwidth);
//   - sensitivities: more SMs / tensor throughput / HBM bandwidth help where (and only where) they should;
//   - determinism, driver equivalence, and the fp8-on-A100 input error.
// Each TEST_CASE runs at most a few simulations so that the suite stays quick on two cores.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "test_helpers.h"

using namespace wstest;

namespace {

struct Gemm {
  double m, n, k;
  std::string shape() const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.0fx%.0fx%.0f", m, n, k);
    return buf;
  }
  double flops() const { return 2.0 * m * n * k; }
  // Compulsory DRAM traffic in bf16: read A (MxK) and B (NxK) once, write C (MxN) once.
  double compulsory_bytes() const { return 2.0 * (m * k + n * k + m * n); }
};

// One finished simulation: stats.json text plus the resolved config it ran with.
struct Sim {
  std::string stats;
  std::map<std::string, std::string> config;
  double wall_s = 0.0;

  double num(const std::string& path) const {
    const auto v = json::number(stats, path);
    if (!v) FAIL("stats.json has no number at " << path << "\n" << stats);
    return *v;
  }
  // The whole workload: a split-K GEMM's helper kernels (zeroing, reduction) are part of its time.
  double time_s() const { return num("total_time_us") * 1e-6; }
  double cfg(const std::string& key) const { return config_number(config, key); }
  // Roofline terms from the configuration, in seconds.
  double compute_bound_s(const Gemm& g) const {
    const double peak = cfg("sm.count") * cfg("sm.tensor.flops_per_cycle.bf16") * cfg("clocks.sm");
    return g.flops() / peak;
  }
  double memory_bound_s(const Gemm& g) const { return g.compulsory_bytes() / cfg("hbm.bandwidth"); }
  double roofline_s(const Gemm& g) const { return std::max(compute_bound_s(g), memory_bound_s(g)); }
};

// `warpsim run WORKLOAD... --out TMP -q --no-progress`; requires exit 0. These tests are about the SM and memory
// model at one clock, so they run at the configured clocks.sm (power.cap_mode report): the clock a power cap leads to
// is test_power.cpp's subject (and under boost each what-if would search its own clock, up to four simulations each).
Sim simulate_run(const std::vector<std::string>& workload) {
  TempDir out;
  std::vector<std::string> args{"run"};
  args.insert(args.end(), workload.begin(), workload.end());
  for (const std::string& a : {std::string("--out"), out.path().string(), std::string("-q"), std::string("--no-progress"),
                               std::string("--set"), std::string("power.cap_mode=report")})
    args.push_back(a);
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  Sim s;
  s.stats = read_text(out.path() / "stats.json");
  s.config = read_flat_yaml(read_text(out.path() / "config.resolved.yaml"));
  s.wall_s = r.wall_s;
  return s;
}

// `--gemm SHAPE --dtype bf16 EXTRA...`
Sim simulate(const Gemm& g, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"--gemm", g.shape(), "--dtype", "bf16"};
  args.insert(args.end(), extra.begin(), extra.end());
  return simulate_run(args);
}

std::string report(const std::string& label, const Sim& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: time %.3f us, %.1f TFLOP/s, tensor util %.3f, l2 util %.3f, dram util %.3f (wall %.1f s)",
                label.c_str(), s.num("kernels[0].time_us"), json::number(s.stats, "kernels[0].achieved_tflops").value_or(-1),
                s.num("kernels[0].utilization.tensor"), s.num("kernels[0].utilization.l2"),
                s.num("kernels[0].utilization.dram"), s.wall_s);
  return buf;
}

// Checks one GEMM against its roofline: never faster than the bound (a physical limit, for any config), at most
// `max_ratio` x slower (a plausibility limit, for real GPUs: 3x = at least a third of the bound's throughput;
// 0 skips it), and the reported time, cycles, FLOPs and TFLOP/s agree with each other.
void check_roofline(const Sim& s, const Gemm& g, double max_ratio = 3.0) {
  const double t = s.time_s();
  const double bound = s.roofline_s(g);
  INFO(report("run", s));
  INFO("compute bound " << s.compute_bound_s(g) * 1e6 << " us, memory bound " << s.memory_bound_s(g) * 1e6
                        << " us, simulated " << t * 1e6 << " us (" << t / bound << "x the bound)");
  CHECK(t >= bound * (1 - 1e-9));
  if (max_ratio > 0) CHECK(t <= max_ratio * bound);
  CHECK(s.num("kernels[0].flops") == Approx(g.flops()).epsilon(1e-12));
  CHECK(s.num("kernels[0].achieved_tflops") == Approx(g.flops() / t / 1e12).epsilon(1e-6));
  CHECK(s.num("kernels[0].cycles") / s.cfg("clocks.sm") == Approx(t).epsilon(1e-6));
  CHECK(s.num("total_time_us") == Approx(s.num("kernels[0].time_us")).epsilon(1e-12));
}

// "6.704TB/s" for twice h100's 3.352 TB/s: the value as the YAML would write it.
std::string bandwidth_text(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6gGB/s", bytes_per_s / 1e9);
  return buf;
}

}  // namespace

TEST_CASE("h100 4096^3 bf16 GEMM respects its roofline and reaches at least a third of it", "[gemm][roofline]") {
  const Gemm g{4096, 4096, 4096};
  const Sim s = simulate(g, {"--gpu", "h100_sxm"});
  // The parser read what the config file says: 132 SMs x 4096 FLOP/clk x 1.83 GHz = 989.4 TFLOP/s, 3.352 TB/s.
  const double peak = s.cfg("sm.count") * s.cfg("sm.tensor.flops_per_cycle.bf16") * s.cfg("clocks.sm");
  REQUIRE(peak == Approx(989.4e12).epsilon(0.005));
  REQUIRE(s.cfg("hbm.bandwidth") == Approx(3.352e12));
  // 4096^3 is compute-bound: 138.9 us of tensor work against 30 us of compulsory traffic.
  REQUIRE(s.compute_bound_s(g) > s.memory_bound_s(g));
  check_roofline(s, g);
}

// Doubling a resource must speed a GEMM up by what its bottleneck allows. The synthesized sm_90 GEMM loads each
// 4.2 MFLOP k-step (1024 cycles of tensor work) with two 16 KiB TMA copies per CTA (its A tile and half of the B
// tile it shares with the other CTA of its cluster by multicast): 32 KiB from L2 per SM and k-step, 32 B per
// cycle, so a GPC's 18 SMs ask 576 B per SM cycle of its crossbar port, whose noc.gpc_port_bandwidth (574 B per
// L2 clock = 533 B per SM clock, the measured all-SM L2 streaming limit) allows at most 92% of the tensor peak. On a stock H100 the tensor cores and
// the GPC ports thus co-limit it (tensor ~82% busy, slices ~40%). Twice the SMs (in the same GPCs) or twice the
// tensor throughput gain little until the L2 path, GPC ports included, is widened too; then the SMs help until
// latency, the tensor cores until the TMA units' per-copy cost binds, and a cheaper copy lets the doubling pay
// off further.
namespace {
std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// Twice H100's L2 path: the slices' data ports and every interconnect link.
const std::vector<std::string> kWideL2 = {"--set", "l2.bandwidth=37.48TB/s",         "--set", "noc.slice_port_bandwidth=256",
                                          "--set", "noc.slice_input_bandwidth=64",    "--set", "noc.sm_port_bandwidth=256",
                                          "--set", "noc.gpc_port_bandwidth=1148",     "--set", "noc.partition_link_bandwidth=5120"};
std::string l2_path(const Sim& s) { return json::string(s.stats, "kernels[0].speed_of_light.l2_path").value_or(""); }
}  // namespace

TEST_CASE("twice the SMs help by what the bottleneck allows", "[gemm][sensitivity]") {
  // 4096x4096x2048: 32x16 = 512 CTAs of 128x256 at one CTA per SM (register-limited): 4 waves on 132 SMs,
  // 2 on 264, so a perfect machine gains 2.0x (2.1 allows timing noise in the tail). At 264 SMs it is still
  // compute-bound on the roofline (34.7 us of tensor work vs 20 us of compulsory DRAM traffic).
  const Gemm g{4096, 4096, 2048};
  const Sim base = simulate(g);
  const Sim more = simulate(g, {"--set", "sm.count=264"});
  REQUIRE(more.cfg("sm.count") == 2 * base.cfg("sm.count"));
  const double speedup = base.time_s() / more.time_s();
  INFO(report("132 SMs", base));
  INFO(report("264 SMs", more));
  INFO("speedup " << speedup);
  CHECK(speedup <= 2.1);
  // Stock H100: tensor-bound with the GPC ports close behind; 264 SMs in the same 8 GPCs put twice the traffic on
  // each GPC port, which binds, while the slices keep room.
  CHECK(base.num("kernels[0].utilization.tensor") >= 0.75);  // 0.798 since the slices' flit input (0.80 before)
  CHECK(base.num("kernels[0].utilization.l2") < 0.5);
  CHECK(speedup < 1.3);
  CHECK(l2_path(more).rfind("bound by GPC ports towards the SMs", 0) == 0);
  check_roofline(more, g, 0);  // a hypothetical GPU: only the physical bound applies

  // Twice the L2 path, GPC ports included: the doubled SMs pay off, and the path carries their traffic.
  const Sim wide = simulate(g, kWideL2);
  const Sim wide_more = simulate(g, with(kWideL2, {"--set", "sm.count=264"}));
  const double wide_speedup = wide.time_s() / wide_more.time_s();
  INFO(report("132 SMs, 2x L2", wide));
  INFO(report("264 SMs, 2x L2", wide_more));
  INFO("speedup with twice the L2 path " << wide_speedup);
  CHECK(wide.time_s() <= base.time_s() * 1.01);  // a wider path never costs time
  CHECK(wide_speedup >= 1.3);
  CHECK(wide_speedup <= 2.1);
  CHECK(wide_more.num("kernels[0].utilization.l2") >= 1.5 * wide.num("kernels[0].utilization.l2"));
}

TEST_CASE("twice the tensor throughput helps by what the bottleneck allows", "[gemm][sensitivity]") {
  // Same GEMM (compute-bound on the roofline also with doubled tensor cores: 34.7 us vs 20 us). Doubling MMA
  // throughput halves the main loop at best; prologue, epilogue and memory latency do not shrink.
  const Gemm g{4096, 4096, 2048};
  const std::vector<std::string> fast_tc = {"--set", "sm.tensor.flops_per_cycle.bf16=8192"};
  const Sim base = simulate(g);
  const Sim fast = simulate(g, fast_tc);
  REQUIRE(fast.cfg("sm.tensor.flops_per_cycle.bf16") == 2 * base.cfg("sm.tensor.flops_per_cycle.bf16"));
  const double speedup = base.time_s() / fast.time_s();
  INFO(report("bf16 4096 FLOP/clk/SM", base));
  INFO(report("bf16 8192 FLOP/clk/SM", fast));
  INFO("speedup " << speedup);
  // Stock H100: the GPC ports bind as soon as the tensor cores speed up (see above).
  CHECK(base.num("kernels[0].utilization.tensor") >= 0.75);  // as above
  CHECK(speedup < 1.2);
  CHECK(l2_path(fast).rfind("bound by GPC ports towards the SMs", 0) == 0);
  check_roofline(fast, g, 0);

  // Twice the L2 path as well: the doubling pays off until the TMA units bind (a k-step's two copies cost
  // 2 x (copy_cycles + 16 KiB / issue_bytes_per_cycle) = 758 cycles against 512 of tensor work), short of 2x.
  const Sim wide_fast = simulate(g, with(kWideL2, fast_tc));
  const double wide_speedup = base.time_s() / wide_fast.time_s();
  INFO(report("2x L2, 2x tensor", wide_fast));
  INFO("speedup with twice the L2 path " << wide_speedup);
  CHECK(wide_speedup >= 1.2);
  CHECK(wide_speedup < 1.8);
  CHECK(wide_fast.num("kernels[0].counters[\"tma.utilization\"]") >= 0.75);
  CHECK(wide_fast.num("kernels[0].utilization.l2") < 0.7);  // not the slices

  // A TMA unit without the per-copy cost: the same doubling pays off further.
  const std::vector<std::string> free_copies = {"--set", "async_copy.copy_cycles=0"};
  const Sim free_fast = simulate(g, with(with(kWideL2, fast_tc), free_copies));
  const double free_speedup = base.time_s() / free_fast.time_s();
  INFO(report("2x L2, 2x tensor, copy_cycles 0", free_fast));
  INFO("speedup without the per-copy cost " << free_speedup);
  CHECK(free_speedup > 1.05 * wide_speedup);  // the TMA units held the doubling back
  CHECK(free_speedup <= 2.1);
}

TEST_CASE("a100: twice the SMs or tensor throughput help a tensor-bound GEMM", "[gemm][sensitivity]") {
  // On A100 the synthesized sm_80 GEMM is closer to tensor-bound (tensor utilisation ~0.73 at 4096x4096x1024:
  // 1024 CTAs, 2 per SM, 4.7 waves on 108 SMs; k = 2048 gives 0.77 at twice the CI time). Doubling SMs then runs
  // into the shared L2, doubling tensor cores into the LSU's shared-memory bandwidth (ldmatrix traffic): both help,
  // neither 2x (1.51x and 1.16x when written).
  const Gemm g{4096, 4096, 1024};
  const Sim base = simulate(g, {"--gpu", "a100_sxm"});
  const Sim more = simulate(g, {"--gpu", "a100_sxm", "--set", "sm.count=216"});
  const Sim fast = simulate(g, {"--gpu", "a100_sxm", "--set", "sm.tensor.flops_per_cycle.bf16=4096"});
  INFO(report("a100", base));
  INFO(report("a100 216 SMs", more));
  INFO(report("a100 2x tensor", fast));
  CHECK(base.num("kernels[0].utilization.tensor") >= 0.7);
  const double sm_speedup = base.time_s() / more.time_s();
  const double tc_speedup = base.time_s() / fast.time_s();
  INFO("speedups: SMs " << sm_speedup << ", tensor " << tc_speedup);
  CHECK(sm_speedup >= 1.15);
  CHECK(sm_speedup <= 2.1);
  CHECK(tc_speedup >= 1.1);
  CHECK(tc_speedup <= 2.1);
}

TEST_CASE("twice the HBM bandwidth speeds up a memory-bound GEMM but not a compute-bound one", "[gemm][sensitivity]") {
  // Memory-bound: a decode-style skinny GEMM, 64 tokens against a 65536x2048 weight. It has 256 CTAs of 64x256
  // (the narrow tile for M <= 64; about 2 waves on 132 SMs, so every SM streams), 269 MB of compulsory traffic =
  // 80 us at 3.352 TB/s against 17 us of useful tensor work (35 us even if the 64 rows were padded to 128).
  const Gemm mem{64, 65536, 2048};
  // Compute-bound: 2048^3, 17.4 us of tensor work against 7.5 us of compulsory traffic.
  const Gemm cmp{2048, 2048, 2048};

  const Sim mem_base = simulate(mem);
  const std::string twice = bandwidth_text(2 * mem_base.cfg("hbm.bandwidth"));
  const Sim mem_fast = simulate(mem, {"--set", "hbm.bandwidth=" + twice});
  REQUIRE(mem_fast.cfg("hbm.bandwidth") == Approx(2 * mem_base.cfg("hbm.bandwidth")));
  const double padded_compute_s = mem_base.compute_bound_s(Gemm{128, mem.n, mem.k});
  REQUIRE(mem_base.memory_bound_s(mem) > 2 * padded_compute_s);
  check_roofline(mem_base, mem);
  check_roofline(mem_fast, mem, 0);  // hypothetical GPU
  const double mem_speedup = mem_base.time_s() / mem_fast.time_s();
  INFO(report("memory-bound 1x HBM", mem_base));
  INFO(report("memory-bound 2x HBM", mem_fast));
  INFO("memory-bound speedup " << mem_speedup);
  CHECK(mem_speedup > 1.2);

  const Sim cmp_base = simulate(cmp);
  const Sim cmp_fast = simulate(cmp, {"--set", "hbm.bandwidth=" + twice});
  REQUIRE(cmp_base.compute_bound_s(cmp) > 2 * cmp_base.memory_bound_s(cmp));
  const double cmp_speedup = cmp_base.time_s() / cmp_fast.time_s();
  INFO(report("compute-bound 1x HBM", cmp_base));
  INFO(report("compute-bound 2x HBM", cmp_fast));
  INFO("compute-bound speedup " << cmp_speedup);
  CHECK(cmp_speedup < 1.15);
  CHECK(cmp_speedup > 1 / 1.15);
}

// The synthesizer's shape-aware default tiling (traces/synth/README.md, "Tiling heuristic") gives this shape a
// 64-row tile (one consumer warpgroup) and split-K 8: 32 x 1 x 8 = 256 CTAs of 16 k-tiles, reduced into an fp32 C
// with RED, so every SM streams weights (about 44.6 us at 1x HBM, 27.1 us at 2x). With the old 128x256 tiling
// and no split it had 32 CTAs, tensor-bound on 32 SMs (73.7 us), and 2x HBM gave 1.00x.
TEST_CASE("a GEMV-like decode GEMM 64x8192x8192 is HBM-bound", "[gemm][sensitivity]") {
  // The common LLM decode shape: 64 tokens through an 8192x8192 weight. 134 MB of weights = 40 us at 3.352 TB/s
  // against 8.7 us of tensor work, so real GPUs run it near HBM bandwidth (libraries pick split-K or narrow
  // tiles to occupy every SM). It must respond to 2x HBM bandwidth and take at most 2x its roofline.
  const Gemm g{64, 8192, 8192};
  const Sim base = simulate(g);
  const Sim fast = simulate(g, {"--set", "hbm.bandwidth=" + bandwidth_text(2 * base.cfg("hbm.bandwidth"))});
  const double speedup = base.time_s() / fast.time_s();
  INFO(report("1x HBM", base));
  INFO(report("2x HBM", fast));
  INFO("memory bound " << base.memory_bound_s(g) * 1e6 << " us; speedup " << speedup);
  CHECK(base.time_s() >= base.roofline_s(g) * (1 - 1e-9));
  CHECK(base.time_s() <= 2 * base.roofline_s(g));
  CHECK(speedup > 1.2);
}

TEST_CASE("a100 2048^3 bf16 GEMM respects its roofline and is slower than on h100", "[gemm][roofline]") {
  const Gemm g{2048, 2048, 2048};
  const Sim a100 = simulate(g, {"--gpu", "a100_sxm"});
  // 108 SMs x 2048 FLOP/clk x 1.41 GHz = 311.9 TFLOP/s; 2.039 TB/s.
  REQUIRE(a100.cfg("sm.count") * a100.cfg("sm.tensor.flops_per_cycle.bf16") * a100.cfg("clocks.sm") ==
          Approx(311.9e12).epsilon(0.005));
  REQUIRE(a100.cfg("hbm.bandwidth") == Approx(2.039e12));
  check_roofline(a100, g);
  const Sim h100 = simulate(g, {"--gpu", "h100_sxm"});
  check_roofline(h100, g);
  INFO(report("a100", a100));
  INFO(report("h100", h100));
  CHECK(a100.time_s() > h100.time_s());
}

TEST_CASE("results are deterministic and identical under both drivers", "[gemm][determinism]") {
  // 2048x4096x512: 256 CTAs (two waves on 132 SMs), enough for queues, L2 and HBM contention to matter.
  const Gemm g{2048, 4096, 512};
  TempDir a, b, c;
  auto run = [&](const TempDir& out, const std::string& driver) {
    // At the configured clock: under boost the simulations after the first use the plain driver (test_power.cpp).
    const std::vector<std::string> args{"run", "--gemm", g.shape(), "--driver", driver, "--out", out.path().string(),
                                        "-q", "--no-progress", "--set", "power.cap_mode=report"};
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    REQUIRE(r.exit_code == 0);
    return read_text(out.path() / "stats.json");
  };
  const std::string first = run(a, "systemc"), second = run(b, "systemc"), plain = run(c, "plain");
  REQUIRE(json::string(first, "sim.driver") == std::string("systemc"));
  REQUIRE(json::string(plain, "sim.driver") == std::string("plain"));
  // Everything but the "sim" object (wall time, RSS, driver name) must be byte-identical.
  const std::string x = json::without_member(first, "sim");
  REQUIRE(x.size() + 100 < first.size());
  REQUIRE(json::has(x, "kernels[0].cycles"));
  CHECK(x == json::without_member(second, "sim"));
  CHECK(x == json::without_member(plain, "sim"));
  CHECK(json::raw(first, "kernels") == json::raw(plain, "kernels"));
  CHECK(read_text(a.path() / "stats.csv") == read_text(b.path() / "stats.csv"));
  CHECK(read_text(a.path() / "stats.csv") == read_text(c.path() / "stats.csv"));
}

TEST_CASE("a 30522-column vocabulary projection is synthesized for H100 and A100", "[gemm][tails]") {
  // n = 30522 is not a multiple of 8: the tiles past column 30522 are masked, C stored with 4-byte accesses.
  // Grid by hand, one CTA per tile: ceil(30522 / tile_n) x ceil(4096 / tile_m) (A100 128x128 tiles, H100 128x256);
  // the H100's default is the persistent grid of its 132 resident CTAs looping over those 3840 tiles.
  struct Case {
    const char* gpu;
    const char* decomposition;
    const char* grid;
  };
  for (const Case c : {Case{"a100_sxm", "auto", "grid 239x32x1"}, Case{"h100_sxm", "data_parallel", "grid 120x32x1"},
                       Case{"h100_sxm", "auto", "grid 132x1x1"}}) {
    const std::vector<std::string> args{"synth", "gemm", "--gpu", c.gpu, "--m", "4096", "--n", "30522", "--k", "4096",
                                        "--decomposition", c.decomposition};
    const CmdResult r = run_warpsim(args);
    INFO(describe(args, r));
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "(4096x30522x4096)"));
    CHECK(contains(r.out, c.grid));
  }
}

TEST_CASE("fp8 on a100 is an input error naming fp8", "[gemm][errors]") {
  TempDir out;
  const std::vector<std::string> args{"run", "--gpu", "a100_sxm", "--gemm", "256x256x256", "--dtype", "fp8", "--out",
                                      out / "res", "-q", "--no-progress"};
  const CmdResult r = run_warpsim(args);
  INFO(describe(args, r));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "fp8"));
  CHECK(contains(r.err, "key 'dtype'"));
  CHECK(contains(r.err, "A100"));
  CHECK(count_lines_containing(r.err, "error:") == 1);
  CHECK_FALSE(fs::exists(out.path() / "res" / "stats.json"));

  // The same GEMM in fp8 is fine on the H100 (sm_90 has fp8 tensor cores): the error is about the A100.
  const std::vector<std::string> h100{"run", "--gpu", "h100_sxm", "--gemm", "256x256x256", "--dtype", "fp8", "--out",
                                      out / "h100", "-q", "--no-progress"};
  const CmdResult ok = run_warpsim(h100);
  INFO(describe(h100, ok));
  CHECK(ok.exit_code == 0);
}

TEST_CASE("a100: stream-K recovers the idle slots of a partial wave", "[gemm][streamk]") {
  // 2176x128x2048: 17 tiles of 128x128 (64 k-tiles each) on 8 SMs with 2 CTAs each (16 slots). Data-parallel: 16
  // tiles at two per SM, then one tile alone. Stream-K: 16 CTAs share the 17 x 64 iterations, 68 each (1.0625
  // tiles), all at two per SM. With T the time of a tile two to an SM and T/r alone (1 <= r <= 2: the lone CTA
  // gets at most the whole SM), the ideal ratio is 1.0625 T / (T + T/r), between 0.53 and 0.71; the partial-tile
  // fixup and a second pipeline fill per CTA cost something on top.
  auto run = [](const std::string& decomposition) {
    return simulate_run({"--gpu", "a100_sxm", "--synth", "gemm", "--synth-key", "m=2176", "--synth-key", "n=128",
                         "--synth-key", "k=2048", "--synth-key", "decomposition=" + decomposition, "--set",
                         "sm.count=8"});
  };
  const Sim dp = run("data_parallel"), sk = run("stream_k");
  INFO("data-parallel " << dp.time_s() * 1e6 << " us, stream-K " << sk.time_s() * 1e6 << " us (memset and GEMM)");
  // Stream-K: the arrival counters' memset, then the GEMM.
  REQUIRE(json::string(sk.stats, "kernels[0].name")->find("warpsim_gemm_streamk_zero") == 0);
  REQUIRE(json::string(sk.stats, "kernels[1].name")->find("_streamk16 (") != std::string::npos);
  const double ratio = sk.time_s() / dp.time_s();
  CHECK(ratio > 0.53);
  CHECK(ratio < 0.85);
  CHECK(sk.num("kernels[1].utilization.tensor") > dp.num("kernels[0].utilization.tensor"));
  // The same MMAs, every (tile, k-tile) computed once either way: 2 x 2176 x 128 x 2048 FLOP executed. Data-parallel
  // leaves one SM with 3 of the 17 tiles; stream-K gives every SM the same 136 iterations.
  const double flops = 2.0 * 2176 * 128 * 2048;
  CHECK(sk.num("kernels[1].speed_of_light.tensor.executed_flops") == flops);
  CHECK(dp.num("kernels[0].speed_of_light.tensor.executed_flops") == flops);
  auto busiest_sm = [](const Sim& s, int kernel) {
    double most = 0;
    for (int i = 0; i < 8; ++i)
      most = std::max(most, s.num("kernels[" + std::to_string(kernel) + "].instances[\"sm[" + std::to_string(i) +
                                  "].tensor_flops\"]"));
    return most;
  };
  CHECK(busiest_sm(dp, 0) == flops * 3 / 17);
  CHECK(busiest_sm(sk, 1) == flops / 8);
}

TEST_CASE("h100: stream-K's persistent kernel gives every SM a share of a partial wave", "[gemm][streamk][persistent]") {
  // 2048x1536x4096: 16 x 6 = 96 tiles of 128x256 (64 k-tiles each) on 132 SMs. The persistent data-parallel kernel
  // runs 96 CTAs of one tile and leaves 36 SMs idle; stream-K (CUTLASS 3's PersistentTileSchedulerSm90StreamK) cuts
  // the 48 cluster work tiles' 3072 iterations into 66 cluster shares, so 132 CTAs each compute 0.73 of a tile and
  // fix up through the workspace (measured: 65,145 against 74,911 cycles, tensor 73% against 64%; the GPC ports,
  // 89% busy, keep it from the ideal 0.73).
  auto run = [](const std::string& decomposition) {
    return simulate_run({"--gpu", "h100_sxm", "--synth", "gemm", "--synth-key", "m=2048", "--synth-key", "n=1536",
                         "--synth-key", "k=4096", "--synth-key", "decomposition=" + decomposition});
  };
  const Sim dp = run("auto"), sk = run("stream_k");
  const double dp_cycles = dp.num("kernels[0].cycles"), sk_cycles = sk.num("kernels[1].cycles");
  INFO("persistent " << dp_cycles << " cycles, stream-K " << sk_cycles);
  REQUIRE(json::string(dp.stats, "kernels[0].name")->find("_persistent (") != std::string::npos);
  REQUIRE(json::string(sk.stats, "kernels[0].name")->find("warpsim_gemm_streamk_zero") == 0);
  REQUIRE(json::string(sk.stats, "kernels[1].name")->find("_streamk132_persistent (") != std::string::npos);
  CHECK(json::string(dp.stats, "kernels[0].grid") == "96x1x1");
  CHECK(json::string(sk.stats, "kernels[1].grid") == "132x1x1");
  CHECK(sk_cycles < 0.93 * dp_cycles);
  CHECK(sk_cycles > 0.70 * dp_cycles);  // no better than every SM sharing the work evenly
  CHECK(sk.num("kernels[1].utilization.tensor") > dp.num("kernels[0].utilization.tensor") + 0.05);
  const double flops = 2.0 * 2048 * 1536 * 4096;
  CHECK(sk.num("kernels[1].speed_of_light.tensor.executed_flops") == flops);
  CHECK(sk.num("kernels[1].counters[\"sm.semaphore_arrivals\"]") > 0);
}

TEST_CASE("a100: stream-K's turnstile waits poll until the CTAs before have arrived (both drivers alike) and pass at "
          "once under SM subsetting", "[gemm][streamk][semaphore]") {
  // 64x512x8192 on 4 SMs: 4 tiles of 64x128 (256 k-tiles each) shared by 12 CTAs of about 85 k-tiles, so 3 or 4
  // CTAs per tile: the later CTAs of a tile reach their fixup while the one before is still computing, and poll.
  auto run = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--gpu", "a100_sxm", "--synth", "gemm", "--synth-key", "m=64", "--synth-key", "n=512",
                                  "--synth-key", "k=8192", "--synth-key", "decomposition=stream_k", "--set", "sm.count=4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return simulate_run(args);
  };
  const Sim plain = run({}), systemc = run({"--driver", "systemc"}), subset = run({"--subset", "2"});
  REQUIRE(json::string(plain.stats, "kernels[1].name")->find("_streamk12 (") != std::string::npos);
  // One arrival per tile part but the last: one per boundary between the 12 CTAs' ranges that falls inside a tile
  // (at most 11), and at least 2 per tile (256 k-tiles over ranges of about 85).
  const double arrivals = plain.num("kernels[1].counters[\"sm.semaphore_arrivals\"]");
  CHECK(arrivals >= 8);
  CHECK(arrivals <= 11);
  CHECK(plain.num("kernels[1].counters[\"sm.spin_polls\"]") > 0);
  // The waits depend only on the order of issue cycles: both drivers give the same statistics.
  CHECK(json::raw(plain.stats, "kernels") == json::raw(systemc.stats, "kernels"));
  // SM subsetting runs some of each tile's CTAs only: a wait could count on one not simulated, so none waits.
  CHECK(subset.num("kernels[1].counters[\"sm.spin_polls\"]") == 0);
}
