// The speed-of-light verdict rule and the run's weighting (models/gpu/speed_of_light.h) on hand-made statistics:
// the 60% threshold on both sides, the busiest unit named, the top stall other than "selected", peaks from the
// config, kernels weighted by their cycles.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/validate/metrics.h"
#include "models/gpu/speed_of_light.h"
#include "sim/config/config.h"
#include "sim/registry/registry.h"

using namespace warpsim;

namespace {

Config h100(const std::vector<std::string>& overrides = {}) {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml", overrides, Registry::instance());
}

StatValue metric(std::string name, double value, double max = -1) {
  return StatValue{std::move(name), "fraction of peak", value, max < 0 ? value : max, false};
}

using Stalls = std::vector<std::pair<std::string, std::uint64_t>>;
const Stalls kStalls = {{"selected", 500}, {"stall_long_scoreboard", 300}, {"stall_barrier", 200}};

StatReport report(double l2, double dram, double tensor, double slice_port_max) {
  StatReport r;
  r.totals = {metric("sm.tensor_utilization", tensor), metric("sm.fp32_utilization", 0.01),
              metric("l2.utilization", l2), metric("hbm.utilization", dram),
              metric("noc.slice_port.to_sm_utilization", 0.05, slice_port_max)};
  return r;
}

}  // namespace

TEST_CASE("limiter: the busiest unit at 60% of its peak or more bounds, below it the top warp state is named", "[sol]") {
  const Config cfg = h100();
  const std::uint64_t cycles = 1000, warp_instructions = 132 * 1000 / 10;  // IPC 0.1 of 4 issue slots
  SECTION("at the threshold: bound by it") {
    const SpeedOfLight sol = kernel_speed_of_light(report(0.60, 0.30, 0.10, 0.20), cfg, cycles, warp_instructions, 0, kStalls);
    CHECK(sol.limiter.throughput_bound);
    CHECK(sol.limiter.verdict == "bound by L2 slices: 60% busy");
    CHECK(sol.memory()->key == "l2");
    CHECK(sol.compute()->key == "tensor");
    // Peaks are the config's: l2.bandwidth (GB/s), hbm.bandwidth 3.352 TB/s.
    const double l2_gbps = cfg.section("l2").real("bandwidth") / 1e9;
    CHECK(sol.find("l2")->peak == Approx(l2_gbps));
    CHECK(sol.find("l2")->achieved == Approx(0.60 * l2_gbps));
    CHECK(sol.find("dram")->peak == Approx(3352.0));
    CHECK(sol.find("issue")->peak == 4.0);
    CHECK(sol.find("issue")->achieved == Approx(0.1));
  }
  SECTION("just below: latency bound, naming the top stall (selected is not a stall) and the top unit") {
    const SpeedOfLight sol = kernel_speed_of_light(report(0.59, 0.30, 0.10, 0.20), cfg, cycles, warp_instructions, 0, kStalls);
    CHECK_FALSE(sol.limiter.throughput_bound);
    CHECK(sol.limiter.stall == "stall_long_scoreboard");
    CHECK(sol.limiter.verdict == "latency bound: 30% of warp-cycles stall_long_scoreboard; top unit L2 slices at 59%");
  }
  SECTION("a crossbar port counts by its busiest instance, not the mean") {
    const SpeedOfLight sol = kernel_speed_of_light(report(0.40, 0.30, 0.10, 0.97), cfg, cycles, warp_instructions, 0, kStalls);
    CHECK(sol.limiter.verdict == "bound by L2 slice ports towards the SMs (busiest): 97% busy");
    CHECK(sol.find("noc_slice_ports_to_sm")->peak == cfg.section("noc").real("slice_port_bandwidth"));
    CHECK(sol.l2_path == "bound by L2 slice ports towards the SMs (busiest): 97% busy");
  }
}

TEST_CASE("the run's speed of light weights kernels by their cycles and sums their warp states", "[sol]") {
  const Config cfg = h100();
  const SpeedOfLight a = kernel_speed_of_light(report(0.90, 0.10, 0.0, 0.0), cfg, 1000, 0, 0, kStalls);
  const Stalls memory_waits = {{"selected", 10}, {"stall_long_scoreboard", 10}, {"stall_barrier", 2000}};
  const SpeedOfLight b = kernel_speed_of_light(report(0.10, 0.50, 0.0, 0.0), cfg, 3000, 0, 0, memory_waits);
  const SpeedOfLight run = run_speed_of_light({{&a, 1000, &kStalls}, {&b, 3000, &memory_waits}});
  CHECK(run.find("l2")->fraction == Approx(0.25 * 0.90 + 0.75 * 0.10));
  CHECK(run.find("dram")->fraction == Approx(0.25 * 0.10 + 0.75 * 0.50));
  CHECK(run.find("l2")->peak == a.find("l2")->peak);
  CHECK_FALSE(run.limiter.throughput_bound);  // DRAM at 40%, L2 at 30%
  CHECK(run.limiter.stall == "stall_barrier");  // 2200 of 3020 warp-cycles
  CHECK(run.limiter.verdict == "latency bound: 73% of warp-cycles stall_barrier; top unit DRAM (HBM) at 40%");
}

TEST_CASE("lts is Nsight's lts__throughput: the largest mean over the slices of their data and ports", "[sol][validate]") {
  const Config cfg = h100();
  // Slices' data 40% busy; their ports towards the SMs 70% on average, 97% at the busiest slice.
  StatReport r = report(0.40, 0.30, 0.10, 0.97);
  r.totals.push_back(metric("noc.slice_port.to_l2_utilization", 0.20, 0.30));
  for (StatValue& v : r.totals)
    if (v.name == "noc.slice_port.to_sm_utilization") v.value = 0.70;
  const SpeedOfLight sol = kernel_speed_of_light(r, cfg, 1000, 0, 0, kStalls);
  REQUIRE(sol.find("lts"));
  CHECK(sol.find("lts")->fraction == Approx(0.70));                   // the port's mean, not its busiest slice
  CHECK(sol.find("noc_slice_ports_to_sm")->fraction == Approx(0.97));  // the unit of the busiest stays
  CHECK(sol.find("lts")->metric == "lts__throughput.avg.pct_of_peak_sustained_elapsed");
  CHECK(sol.memory()->key == "noc_slice_ports_to_sm");
  // Where the slices' data is the busiest of them, it is that; validate's l2_throughput is this unit.
  const SpeedOfLight data = kernel_speed_of_light(report(0.85, 0.30, 0.10, 0.97), cfg, 1000, 0, 0, kStalls);
  CHECK(data.find("lts")->fraction == Approx(0.85));
  RunResult run;
  run.kernels.resize(1);
  run.kernels[0].cycles = 1000;
  run.kernels[0].speed_of_light = sol;
  CHECK(kernel_metric(run, "l2_throughput") == Approx(0.70));
  // Over a run, each unit is averaged over the kernels; an average of the kernels' lts (each a maximum) can exceed
  // every averaged part, and still it is not the busiest unit: its parts are.
  StatReport ra = report(0.45, 0.10, 0.10, 0.56), rb = report(0.60, 0.10, 0.10, 0.31);
  for (StatReport* x : {&ra, &rb})
    for (StatValue& v : x->totals)
      if (v.name == "noc.slice_port.to_sm_utilization") v.value = x == &ra ? 0.55 : 0.30;
  const SpeedOfLight ka = kernel_speed_of_light(ra, cfg, 1000, 0, 0, kStalls);
  const SpeedOfLight kb = kernel_speed_of_light(rb, cfg, 1000, 0, 0, kStalls);
  const SpeedOfLight both = run_speed_of_light({{&ka, 1000, &kStalls}, {&kb, 1000, &kStalls}});
  CHECK(both.find("lts")->fraction == Approx(0.575));
  CHECK(both.find("l2")->fraction == Approx(0.525));
  CHECK(both.memory()->key == "l2");
  CHECK(both.limiter.unit == "L2 slices");
}

TEST_CASE("validate's speed-of-light metrics of a multi-kernel run are the run's own section", "[sol][validate]") {
  // Kernel a keeps DRAM 80% busy for 1000 cycles; kernel b has no DRAM unit at all (3000 cycles): over the run,
  // DRAM was busy 800 of 4000 cycles. Averaging only over the kernels that have the unit would say 80%.
  SpeedOfLight a, b;
  a.units.push_back(SolUnit{"dram", "DRAM (HBM)", "memory", "dram__throughput", 0.8, 0.8, 1.0, "fraction"});
  RunResult run;
  run.kernels.resize(2);
  run.kernels[0].cycles = 1000;
  run.kernels[0].speed_of_light = a;
  run.kernels[1].cycles = 3000;
  run.kernels[1].speed_of_light = b;
  CHECK(kernel_metric(run, "dram_throughput") == Approx(800.0 / 4000.0));
  const SpeedOfLight own = run_speed_of_light({{&a, 1000, &run.kernels[0].stalls}, {&b, 3000, &run.kernels[1].stalls}});
  CHECK(kernel_metric(run, "dram_throughput") == Approx(own.find("dram")->fraction));
}

TEST_CASE("a configured bandwidth that another cap of its path keeps from being reached is reported", "[sol]") {
  const StatReport stats = report(0.40, 0.30, 0.10, 0.20);
  // Stock H100: the GPC ports (gpcs x noc.gpc_port_bandwidth per L2 clock, the measured all-SM streaming limit) keep
  // the SMs from the slices' aggregate data ports (l2.bandwidth), and the config says so.
  const Config stock = h100();
  const double gpcs = stock.section("noc").u32("gpcs"), gpc_port = stock.section("noc").real("gpc_port_bandwidth");
  const double gpc_cap_tbps = gpcs * gpc_port * stock.section("clocks").real("l2") / 1e12;
  REQUIRE(gpc_cap_tbps < stock.section("l2").real("bandwidth") / 1e12);
  const std::vector<std::string> stock_warnings = kernel_speed_of_light(stats, stock, 1000, 0, 0, kStalls).warnings;
  REQUIRE(stock_warnings.size() == 1);
  CHECK(stock_warnings[0] == fmt::format("l2.bandwidth {:.4g} TB/s is unreachable: noc GPC ports ({:.0f} GPCs x {:.0f} B/clk) "
                                         "cap the path at {:.4g} TB/s", stock.section("l2").real("bandwidth") / 1e12, gpcs,
                                         gpc_port, gpc_cap_tbps));
  // GPC ports wide enough not to bind: the slices' crossbar ports (64 B per L2 clock, measured) are next, below the
  // slices' data ports, and said so; with those ports as wide as the data ports (128 B), nothing is left to report.
  const std::vector<std::string> wide_gpc =
      kernel_speed_of_light(stats, h100({"noc.gpc_port_bandwidth=4352"}), 1000, 0, 0, kStalls).warnings;
  REQUIRE(wide_gpc.size() == 1);
  CHECK(wide_gpc[0].find("is unreachable: noc slice ports") != std::string::npos);
  CHECK(kernel_speed_of_light(stats, h100({"noc.gpc_port_bandwidth=4352", "noc.slice_port_bandwidth=128"}), 1000, 0, 0,
                              kStalls).warnings.empty());
  // Twice the slice data ports: the slice ports (slices x noc.slice_port_bandwidth per L2 clock) now bind first.
  const Config wide = h100({"l2.bandwidth=37.48TB/s", "noc.gpc_port_bandwidth=4352"});
  const double slices = wide.section("l2").u32("slices"), port = wide.section("noc").real("slice_port_bandwidth");
  const double cap_tbps = slices * port * wide.section("clocks").real("l2") / 1e12;
  REQUIRE(cap_tbps < 37.48);
  const SpeedOfLight sol = kernel_speed_of_light(stats, wide, 1000, 0, 0, kStalls);
  REQUIRE(sol.warnings.size() == 1);
  CHECK(sol.warnings[0] == fmt::format("l2.bandwidth 37.48 TB/s is unreachable: noc slice ports ({:.0f} slices x {:.0f} B/clk) "
                                       "cap the path at {:.4g} TB/s", slices, port, cap_tbps));
  // DRAM data pass through the same path: an HBM faster than it is unreachable too.
  const SpeedOfLight fast_hbm = kernel_speed_of_light(stats, h100({"hbm.bandwidth=25TB/s", "noc.gpc_port_bandwidth=4352", "noc.slice_port_bandwidth=128"}), 1000, 0, 0, kStalls);
  REQUIRE(fast_hbm.warnings.size() == 1);
  CHECK(fast_hbm.warnings[0].rfind("hbm.bandwidth 25 TB/s is unreachable: ", 0) == 0);
  // The run carries the config's warnings.
  const SpeedOfLight run = run_speed_of_light({{&sol, 1000, &kStalls}});
  CHECK(run.warnings == sol.warnings);
}
