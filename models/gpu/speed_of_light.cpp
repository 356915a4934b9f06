#include "models/gpu/speed_of_light.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "models/sm/exec/pipes.h"

namespace warpsim {
namespace {

// The execution pipes (models/sm/exec/pipes.h, kPipeNames) and the Nsight Compute metric of each.
struct PipeMetric {
  const char* pipe;
  const char* name;
  const char* metric;
};
constexpr PipeMetric kPipes[] = {
    {"tensor", "tensor pipe", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"},
    {"fp32", "FP32 pipe", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"},
    {"int", "integer pipe", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed"},
    {"fp64", "FP64 pipe", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"},
    {"sfu", "SFU pipe", "sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_elapsed"},
    {"ldst", "LSU issue (ldst pipe)", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed"},
    {"branch", "branch pipe", "sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_elapsed"},
};

// Every pipe of kPipeNames has its row above (and no other): a new pipe does not go missing from the report.
constexpr bool same_name(const char* a, const char* b) { return *a == *b && (*a == '\0' || same_name(a + 1, b + 1)); }
constexpr bool every_pipe_has_a_metric() {
  for (const char* name : kPipeNames) {
    bool found = false;
    for (const PipeMetric& p : kPipes) found = found || same_name(name, p.pipe);
    if (!found) return false;
  }
  return true;
}
static_assert(std::size(kPipes) == kPipeNames.size() && every_pipe_has_a_metric(),
              "kPipes must list each pipe of kPipeNames (models/sm/exec/pipes.h) exactly once");

// Nsight's lts__throughput: a summary of the L2's own units below (their means), shown and validated but never the
// busiest unit, which its parts are (their busiest instances; a run's average of kernels' maxima could otherwise
// exceed every averaged part).
constexpr const char* kLtsKey = "lts";

// Interconnect links, per kind and direction: the busiest instance of each (the `max` of the metric) is the
// limit. `peak` names the noc parameter with its bytes per L2 cycle (the hierarchical interconnect's), `shared_peak`
// the crossbar's one parameter for both sides.
struct PortMetric {
  const char* key;
  const char* stat;  // "noc.sm_port.to_l2_utilization"
  const char* name;
  const char* metric;  // the Nsight Compute metric, where one exists
  const char* peak;
  const char* shared_peak;
  bool l2_side = false;  // a slice's own port: one of the sub-units Nsight's lts__throughput takes the busiest of
};
constexpr PortMetric kPorts[] = {
    {"noc_sm_ports_to_l2", "noc.sm_port.to_l2_utilization", "crossbar SM ports towards L2 (busiest)",
     "l1tex__m_l1tex2xbar_throughput.max.pct_of_peak_sustained_elapsed", "sm_port_bandwidth", "port_bandwidth"},
    {"noc_sm_ports_to_sm", "noc.sm_port.to_sm_utilization", "crossbar SM ports towards the SMs (busiest)",
     "l1tex__m_xbar2l1tex_throughput.max.pct_of_peak_sustained_elapsed", "sm_port_bandwidth", "port_bandwidth"},
    {"noc_gpc_ports_to_l2", "noc.gpc_port.to_l2_utilization", "GPC ports towards L2 (busiest)",
     "none (no Nsight metric for a GPC's crossbar port)", "gpc_port_bandwidth", nullptr},
    {"noc_gpc_ports_to_sm", "noc.gpc_port.to_sm_utilization", "GPC ports towards the SMs (busiest)",
     "none (no Nsight metric for a GPC's crossbar port)", "gpc_port_bandwidth", nullptr},
    {"noc_slice_ports_to_l2", "noc.slice_port.to_l2_utilization", "L2 slice ports from the crossbar (busiest)",
     "lts__xbar2lts_cycles_active.max.pct_of_peak_sustained_elapsed", "slice_input_bandwidth", "port_bandwidth", true},
    {"noc_slice_ports_to_sm", "noc.slice_port.to_sm_utilization", "L2 slice ports towards the SMs (busiest)",
     "lts__lts2xbar_cycles_active.max.pct_of_peak_sustained_elapsed", "slice_port_bandwidth", "port_bandwidth", true},
    {"noc_partition_link", "noc.partition_link.utilization", "link between the L2 partitions (busier direction)",
     "lts__t_sectors_srcunit_ltcfabric (L2 fabric traffic; Nsight gives no % of peak)", "partition_link_bandwidth", nullptr},
};

// The noc key that holds a port kind's bandwidth: its own (hierarchical: sm_port_bandwidth, ...) or the one every
// port shares (crossbar: port_bandwidth); nullptr when the interconnect has neither.
const char* port_bandwidth_key(const Params& noc, const char* key, const char* shared) {
  if (noc.has(key)) return key;
  return shared && noc.has(shared) ? shared : nullptr;
}

// The caps on bytes between the SMs and L2 (and DRAM behind it), device-wide per second, from the config alone.
struct PathCap {
  std::string what;  // in words, for the warning
  double bytes_per_second;
};
std::vector<PathCap> l2_path_caps(const Config& config) {
  std::vector<PathCap> caps;
  if (!config.has_section("noc")) return caps;
  const Params& noc = config.section("noc");
  const double hz = config.section("clocks").real("l2");
  const double sms = config.section("sm").u32("count"), slices = config.section("l2").u32("slices");
  auto per_port = [&](const char* key, const char* shared) {
    const char* k = port_bandwidth_key(noc, key, shared);
    return k ? noc.real(k) : 0.0;
  };
  if (const double bw = per_port("sm_port_bandwidth", "port_bandwidth"))
    caps.push_back({fmt::format("noc SM ports ({:.0f} SMs x {:.0f} B/clk)", sms, bw), sms * bw * hz});
  if (const double bw = per_port("gpc_port_bandwidth", nullptr))
    caps.push_back({fmt::format("noc GPC ports ({} GPCs x {:.0f} B/clk)", noc.u32("gpcs"), bw), noc.u32("gpcs") * bw * hz});
  if (const double bw = per_port("slice_port_bandwidth", "port_bandwidth"))
    caps.push_back({fmt::format("noc slice ports ({:.0f} slices x {:.0f} B/clk)", slices, bw), slices * bw * hz});
  return caps;
}

// A configured bandwidth that another cap in its path keeps from being reached (models/gpu/speed_of_light.h).
std::vector<std::string> unreachable_bandwidths(const Config& config) {
  std::vector<std::string> warnings;
  std::vector<PathCap> caps = l2_path_caps(config);
  auto check = [&](const std::string& key, double configured) {
    const PathCap* binding = nullptr;
    for (const PathCap& c : caps)
      if (!binding || c.bytes_per_second < binding->bytes_per_second) binding = &c;
    if (binding && configured > binding->bytes_per_second * (1 + 1e-3))  // 0.1%: configs round their figures
      warnings.push_back(fmt::format("{} {:.4g} TB/s is unreachable: {} cap the path at {:.4g} TB/s", key,
                                     configured / 1e12, binding->what, binding->bytes_per_second / 1e12));
  };
  const double l2 = config.section("l2").real("bandwidth");
  check("l2.bandwidth", l2);
  caps.push_back({"the L2 slices' data ports (l2.bandwidth)", l2});  // DRAM data pass through the slices
  check("hbm.bandwidth", config.section("hbm").real("bandwidth"));
  return warnings;
}

// Which cap of the L2 path (interconnect links, the slices' data ports) was busiest in the kernel.
std::string l2_path_verdict(const std::vector<SolUnit>& units) {
  const SolUnit* top = nullptr;
  for (const SolUnit& u : units)
    if ((u.key == "l2" || u.key.compare(0, 4, "noc_") == 0) && (!top || u.fraction > top->fraction)) top = &u;
  if (!top) return {};
  if (top->fraction >= kThroughputBoundFraction) return fmt::format("bound by {}: {:.0f}% busy", top->name, 100 * top->fraction);
  return fmt::format("no cap bound it (busiest: {}, {:.0f}% busy)", top->name, 100 * top->fraction);
}

std::string pct(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

const SolUnit* busiest(const std::vector<SolUnit>& units, const char* group) {
  const SolUnit* best = nullptr;
  for (const SolUnit& u : units)  // the first of equals: deterministic
    if ((!group || u.group == group) && u.key != kLtsKey && (!best || u.fraction > best->fraction)) best = &u;
  return best;
}

}  // namespace

Limiter limiter_of(const std::vector<SolUnit>& units, const std::vector<std::pair<std::string, std::uint64_t>>& stalls) {
  Limiter l;
  std::uint64_t total = 0;
  const std::pair<std::string, std::uint64_t>* top = nullptr;
  for (const auto& s : stalls) {
    total += s.second;
    if (s.first != "selected" && (!top || s.second > top->second)) top = &s;
  }
  if (top && total > 0) {
    l.stall = top->first;
    l.stall_share = static_cast<double>(top->second) / static_cast<double>(total);
  }
  const SolUnit* unit = busiest(units, nullptr);
  if (unit) {
    l.unit = unit->name;
    l.key = unit->key;
    l.fraction = unit->fraction;
  }
  const std::string stall_text =
      l.stall.empty() ? "no warp activity" : fmt::format("{} of warp-cycles {}", pct(l.stall_share), l.stall);
  l.throughput_bound = unit && unit->fraction >= kThroughputBoundFraction;
  if (l.throughput_bound) {
    l.verdict = fmt::format("bound by {}: {} busy", l.unit, pct(l.fraction));
    l.evidence = fmt::format("{} is at {} of its peak ({:.4g} of {:.4g} {}), at or above the {} throughput-bound "
                             "threshold; top warp state: {}",
                             l.unit, pct(l.fraction), unit->achieved, unit->peak, unit->unit_of_measure,
                             pct(kThroughputBoundFraction), stall_text);
  } else {
    l.verdict = fmt::format("latency bound: {}; top unit {} at {}", stall_text, unit ? l.unit : "none", pct(l.fraction));
    l.evidence = fmt::format("every unit is below {} of its peak (the busiest, {}, at {}): the warps wait more than "
                             "the units work",
                             pct(kThroughputBoundFraction), unit ? l.unit : "none", pct(l.fraction));
  }
  return l;
}

const SolUnit* SpeedOfLight::compute() const { return busiest(units, "compute"); }
const SolUnit* SpeedOfLight::memory() const { return busiest(units, "memory"); }
const SolUnit* SpeedOfLight::find(const std::string& key) const {
  for (const SolUnit& u : units)
    if (u.key == key) return &u;
  return nullptr;
}

SpeedOfLight kernel_speed_of_light(const StatReport& stats, const Config& config, std::uint64_t cycles_count,
                                   std::uint64_t warp_instructions, std::uint64_t problem_flops,
                                   const std::vector<std::pair<std::string, std::uint64_t>>& stalls) {
  SpeedOfLight sol;
  const Params& sm = config.section("sm");
  const double sms = sm.u32("count"), subpartitions = sm.u32("subpartitions");
  const double cycles = std::max<double>(1.0, static_cast<double>(cycles_count));  // as the utilisation metrics
  auto stat = [&](const std::string& name) { return stats.find(name); };
  auto add = [&](std::string key, std::string name, const char* group, std::string metric, double fraction, double peak,
                 std::string unit) {
    sol.units.push_back(SolUnit{std::move(key), std::move(name), group, std::move(metric), fraction, fraction * peak,
                                peak, std::move(unit)});
  };

  // Issue slots: one warp-instruction per sub-partition per cycle.
  const double ipc = static_cast<double>(warp_instructions) / sms / cycles;
  sol.units.push_back(SolUnit{"issue", "issue slots", "compute", "sm__inst_issued.avg.pct_of_peak_sustained_elapsed",
                              ipc / subpartitions, ipc, subpartitions, "warp-instructions/cycle/SM"});
  // Pipes: busy cycles against cycles, averaged over sub-partitions (the SM model's <pipe>_utilization).
  for (const PipeMetric& p : kPipes)
    if (const StatValue* v = stat(std::string("sm.") + p.pipe + "_utilization"))
      add(p.pipe, p.name, "compute", p.metric, v->value, 1.0, "busy cycles per cycle, mean over sub-partitions");

  if (const StatValue* v = stat("sm.lsu_utilization"))
    add("lsu", "LSU data path", "memory", "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", v->value,
        1.0, "busy cycles per cycle, mean over SMs");
  if (const StatValue* v = stat("sm.l1_utilization"))
    add("l1", "L1 data path", "memory", "l1tex__t_bytes.avg.pct_of_peak_sustained_elapsed", v->value,
        config.section("l1").real("bandwidth"), "B/cycle/SM");
  if (const StatValue* v = stat("sm.smem_utilization"))
    add("smem", "shared memory", "memory", "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
        v->value, config.section("smem").real("bandwidth"), "B/cycle/SM");
  // Distributed shared memory: each SM's share of the SM-to-SM network (smem.remote_bytes_per_cycle).
  const double dsmem_peak = config.section("smem").real("remote_bytes_per_cycle");
  if (const StatValue* v = stat("sm.dsmem_utilization"); v && dsmem_peak > 0)
    add("dsmem", "SM-to-SM network (distributed shared memory)", "memory", "(none: this SM's remote shared-memory bytes "
        "over smem.remote_bytes_per_cycle)", v->value, dsmem_peak, "B/cycle/SM");
  // The TMA unit's request generation (models/sm/memory/tma_engine.cpp): a per-copy cost besides the bytes, so a
  // pipeline of small boxes can be bound by it. Nsight Compute has no metric of its own for it.
  if (const StatValue* v = stat("tma.utilization"))
    add("tma", "TMA unit (request generation)", "memory", "(none: the TMA unit's busy cycles, mean over SMs)", v->value,
        1.0, "busy cycles per cycle, mean over SMs");
  if (config.has_section("noc"))
    for (const PortMetric& p : kPorts) {
      const Params& noc = config.section("noc");
      const char* peak = port_bandwidth_key(noc, p.peak, p.shared_peak);
      if (const StatValue* v = stat(p.stat); v && peak)
        add(p.key, p.name, "memory", p.metric, v->max, noc.real(peak), "B/cycle (L2 clock) of the busiest port");
    }
  if (const StatValue* v = stat("l2.utilization"))
    add("l2", "L2 slices", "memory", "lts__t_sectors.avg.pct_of_peak_sustained_elapsed", v->value,
        config.section("l2").real("bandwidth") / 1e9, "GB/s");
  // Nsight's lts__throughput: the busiest of the L2's own sub-units, each as its mean over the slices (the slices'
  // data, lts__t_sectors; their crossbar input and output ports, lts__xbar2lts / lts__lts2xbar), where the port
  // units above give the busiest slice's. bf16 GEMMs read 55% on an H100, fp8 83% (ncu_h100.csv).
  {
    const SolUnit* slices = sol.find("l2");
    double busiest = slices ? slices->fraction : 0.0;
    bool any = slices != nullptr;
    for (const PortMetric& p : kPorts)
      if (const StatValue* v = stat(p.stat); v && p.l2_side && sol.find(p.key)) {
        busiest = std::max(busiest, v->value);  // the mean over the slices' ports, not the busiest one's
        any = true;
      }
    if (any)
      add(kLtsKey, "L2 throughput (busiest L2 sub-unit, mean over slices)", "memory",
          "lts__throughput.avg.pct_of_peak_sustained_elapsed", busiest, 1.0, "fraction of its peak");
  }
  if (const StatValue* v = stat("hbm.utilization"))
    add("dram", "DRAM (HBM)", "memory", "dram__throughput.avg.pct_of_peak_sustained_elapsed", v->value,
        config.section("hbm").real("bandwidth") / 1e9, "GB/s");

  // Tensor work. The pipe is busy for each MMA its operations / sm.tensor.flops_per_cycle.<type> per sub-partition,
  // so executed operations over busy time give the rate of the type the MMAs ran at; the config names the type.
  const StatValue* executed = stat("sm.tensor_flops");
  const StatValue* busy = stat("sm.pipe_busy_tensor");
  const SolUnit* tensor_pipe = sol.find("tensor");
  if (executed && busy && tensor_pipe && executed->value > 0 && busy->value > 0) {
    TensorWork t;
    t.executed_flops = static_cast<std::uint64_t>(executed->value);
    t.pipe_busy = tensor_pipe->fraction;
    const double rate = executed->value / busy->value * subpartitions;  // per SM per cycle
    t.peak_flops_per_cycle_per_sm = rate;
    // Types of equal rate (f16 and bf16) cannot be told apart by it: all are named ("bf16/f16"). The rate is the
    // type's peak, or its mma.sync rate where the config caps mma.sync below it (Hopper): the peak is the type's.
    const std::string prefix = "tensor.flops_per_cycle.", capped = "tensor.mma_sync_flops_per_cycle.";
    // Fractional pipe times are given out in whole cycles: the executed rate matches its type within 0.2%.
    auto near = [rate](double r) { return r > 0 && std::abs(r - rate) <= 2e-3 * r; };
    for (const auto& [key, value] : sm.values()) {
      if (key.compare(0, prefix.size(), prefix) != 0 || value.number <= 0) continue;
      const std::string type = key.substr(prefix.size());
      const double cap = sm.has(capped + type) ? sm.real(capped + type) : 0.0;
      if (near(value.number) || (cap < value.number && near(cap))) {
        t.dtype += (t.dtype.empty() ? "" : "/") + type;
        t.peak_flops_per_cycle_per_sm = value.number;
      }
    }
    if (t.dtype.empty()) t.dtype = "mixed";
    if (problem_flops > 0) {
      t.problem_flops = problem_flops;
      t.useful = static_cast<double>(problem_flops) / (t.peak_flops_per_cycle_per_sm * sms * cycles);
    }
    sol.tensor = t;
  }
  sol.limiter = limiter_of(sol.units, stalls);
  sol.l2_path = l2_path_verdict(sol.units);
  sol.warnings = unreachable_bandwidths(config);
  return sol;
}

SpeedOfLight run_speed_of_light(const std::vector<KernelSol>& kernels) {
  SpeedOfLight run;
  double total_cycles = 0;
  for (const KernelSol& k : kernels) total_cycles += std::max<double>(1.0, static_cast<double>(k.cycles));
  std::vector<std::pair<std::string, std::uint64_t>> stalls;
  bool tensor_known = true;
  TensorWork tensor;
  double useful = 0.0, rate_weight = 0.0;
  for (const KernelSol& k : kernels) {
    const double w = std::max<double>(1.0, static_cast<double>(k.cycles)) / total_cycles;
    for (const SolUnit& u : k.sol->units) {
      auto it = std::find_if(run.units.begin(), run.units.end(), [&](const SolUnit& r) { return r.key == u.key; });
      if (it == run.units.end()) {
        SolUnit r = u;
        r.fraction = r.achieved = 0.0;
        it = run.units.insert(run.units.end(), r);
      }
      it->fraction += w * u.fraction;
      it->achieved += w * u.achieved;
    }
    for (const auto& s : *k.stalls) {
      auto it = std::find_if(stalls.begin(), stalls.end(), [&](const auto& r) { return r.first == s.first; });
      if (it == stalls.end()) stalls.push_back(s);
      else it->second += s.second;
    }
    if (const auto& t = k.sol->tensor) {
      tensor.executed_flops += t->executed_flops;
      tensor.pipe_busy += w * t->pipe_busy;
      tensor.problem_flops = tensor.problem_flops.value_or(0) + t->problem_flops.value_or(0);
      tensor_known = tensor_known && t->useful.has_value();
      useful += w * t->useful.value_or(0.0);
      if (tensor.dtype.empty() || tensor.dtype == t->dtype) tensor.dtype = t->dtype;
      else tensor.dtype = "mixed";
      rate_weight += w;
      tensor.peak_flops_per_cycle_per_sm += w * t->peak_flops_per_cycle_per_sm;
    }
  }
  if (tensor.executed_flops > 0) {
    tensor.peak_flops_per_cycle_per_sm /= rate_weight;
    if (tensor_known) tensor.useful = useful;
    else tensor.problem_flops.reset();
    run.tensor = tensor;
  }
  run.limiter = limiter_of(run.units, stalls);
  run.l2_path = l2_path_verdict(run.units);
  if (!kernels.empty()) run.warnings = kernels.front().sol->warnings;  // from the config: the same for every kernel
  return run;
}

}  // namespace warpsim
