// Energy model (see energy_model.h). Every figure is a `power.*` parameter of the GPU's config, with its source
// there; nothing here is a hardware number.
#include "models/power/energy_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "sim/core/error.h"
#include "sim/core/simulation.h"
#include "sim/registry/registry.h"
#include "sim/slots/memory.h"
#include "sim/slots/sm.h"
#include "sim/trace/inst.h"

namespace warpsim {
namespace {

// The process nodes of power.technology.nodes: those of Stillmaker & Baas 2017 (their figures are in the configs).
constexpr std::array<unsigned, 11> kTechnologyNodes = {180, 130, 90, 65, 45, 32, 20, 16, 14, 10, 7};

std::string node_key(unsigned nm) { return "technology.nodes." + std::to_string(nm) + "nm"; }

Schema power_schema() {
  Schema s("power", "power", "energy per event, static and constant power, power cap and the clock it implies");
  const auto zero = std::string("0J");
  s.boolean("enabled", false, "model energy and power (per kernel and per run in stats.json and the summary)");
  s.quantity("reference_clock", ParamType::Frequency, std::string("1GHz"),
             "SM clock at which the per-event energies and leakage are given (the max boost clock): power.cap_mode boost starts here", 1e6, 1e11);
  s.real("reference_voltage", "V", 1.0, "core voltage at reference_clock", 0.1, 5.0);
  s.quantity("min_clock", ParamType::Frequency, std::string("1GHz"),
             "lowest SM clock of the V/f line: below it the voltage stays at min_voltage", 1e6, 1e11);
  s.real("min_voltage", "V", 1.0, "core voltage at and below min_clock (linear up to reference_voltage at reference_clock)", 0.1, 5.0);
  auto energy = [&](const std::string& key, const std::string& what) {
    s.quantity(key, ParamType::Energy, zero, what + " (at reference_voltage)", 0.0, 1.0);
  };
  energy("issue", "per warp-instruction issued: fetch, decode, scheduling, operand collection");
  energy("int_lane", "per active lane of an integer-pipe instruction");
  energy("fp32_lane", "per active lane of an FP32-pipe instruction (an FMA)");
  energy("fp64_lane", "per active lane of an FP64-pipe instruction");
  energy("sfu_lane", "per active lane of a special-function (MUFU) instruction");
  for (DType t : kTensorDTypes)
    energy("tensor." + std::string(dtype_name(t)), "per tensor-core " + std::string(dtype_name(t)) + " FLOP (2 per multiply-add)");
  energy("regfile", "per warp-wide register operand access (32 lanes x 4 B read or written; scaled by active lanes)");
  energy("smem_wavefront", "per shared-memory wavefront (one pass through the banks: LSU and TMA writes)");
  energy("l1_sector", "per 32 B sector through the L1 data path (global and local accesses)");
  energy("l2_sector", "per L2 sector access (read, write or atomic)");
  energy("noc_byte", "per byte through the SM <-> L2 crossbar (SM ports, both directions)");
  energy("partition_link_byte", "per byte across the link between L2 partitions");
  energy("hbm_activate", "per HBM row activation (with its precharge)");
  energy("hbm_read_burst", "per HBM read burst of hbm.access_granularity bytes (array, TSVs and I/O)");
  energy("hbm_write_burst", "per HBM write burst of hbm.access_granularity bytes");
  energy("hbm_refresh", "per refresh command of one pseudo-channel");
  energy("sm_active_cycle", "per SM per SM cycle with a resident warp: clock tree, schedulers, pipeline registers");
  energy("sm_idle_cycle", "per SM per SM cycle without a resident warp (clock-gated)");
  s.quantity("leakage", ParamType::Power, std::string("0W"), "static (leakage) power of the GPU die at reference_voltage; scales with V", 0.0, 1e5)
      .total_over("sm.count");
  s.quantity("constant", ParamType::Power, std::string("0W"), "the board's constant power: VRM loss, fans, other parts", 0.0, 1e5)
      .total_over("sm.count");
  s.quantity("hbm_background", ParamType::Power, std::string("0W"), "HBM stacks' and PHYs' background power (standby, clocks)", 0.0, 1e5)
      .total_over("hbm.channels");
  s.quantity("cap", ParamType::Power, std::string("0W"), "board power limit (0: none)", 0.0, 1e5).total_over("sm.count");
  s.choice("cap_mode", {"report", "boost"}, std::string("report"),
           "report: the SM runs at clocks.sm and the run says whether its power exceeds the cap; boost: the SM clock is a "
           "result, the highest step from reference_clock down at which the run's average power meets the cap (several "
           "simulations); --set clocks.sm=... pins the clock in either mode");
  s.quantity("clock_step", ParamType::Frequency, std::string("15MHz"), "SM clock step of the boost controller", 1e5, 1e10);
  s.quantity("idle_clock", ParamType::Frequency, std::string("1GHz"), "SM clock of a GPU with nothing to do (for the idle power)", 1e6, 1e11);
  for (const char* end : {"reference", "target"}) {
    const std::string part = std::string(end) == "reference" ? "the part the figures above were given for"
                                                             : "the part to describe (its figures are scaled from the reference's)";
    s.uint(std::string("technology.") + end + ".node_nm", "nm", 0,
           "process node of " + part + ": one of power.technology.nodes; 0 (both ends): no technology scaling", 0, 1000);
    s.real(std::string("technology.") + end + ".vdd_v", "V", 0.0, "core supply voltage of " + part + " at power.reference_clock", 0.0, 5.0);
  }
  for (unsigned nm : kTechnologyNodes) {
    s.real(node_key(nm) + ".capacitance", "per V^2", 0.0,
           "switched capacitance of the " + std::to_string(nm) + " nm node, relative: dynamic energy per event = capacitance x Vdd^2 (0: no figure)");
    s.real(node_key(nm) + ".leakage", "per V", 0.0,
           "static power of the " + std::to_string(nm) + " nm node, relative: leakage = figure x Vdd (0: no figure)");
  }
  s.quantity("window", ParamType::Duration, std::string("10us"),
             "averaging time of the peak power (per kernel and per run: the highest power over windows this long laid "
             "end to end; a run shorter than two windows has its average as peak). 10us is a modelling choice, not a "
             "hardware figure: it resolves a kernel's phases (a wave of a large H100 GEMM lasts tens of us, a tail a "
             "few) with thousands of SM cycles per window. The board's own sensor, which nvidia-smi and the power "
             "limiter read, averages far longer (on A100/H100 it samples 25 ms of every 100 ms: Yang et al., "
             "\"Part-time Power Measurements: nvidia-smi's Lack of Attention\", arXiv 2312.02741, SC'24); set 25ms to "
             "see what it would read, i.e. the average of any shorter run",
             1e-7, 1e3);
  return s;
}

WARPSIM_REGISTER_SECTION("power", &power_schema, "energy and power model, power cap");

double counter(const StatReport& r, const std::string& name) {
  const StatValue* v = r.find(name);
  return v ? v->value : 0.0;
}

// power.technology: checks both ends and scales the figures read (see PowerParams::Technology).
void apply_technology(const Params& s, PowerParams& p) {
  PowerParams::Technology& t = p.technology;
  t.reference_nm = s.u64("technology.reference.node_nm");
  t.target_nm = s.u64("technology.target.node_nm");
  t.reference_v = s.real("technology.reference.vdd_v");
  t.target_v = s.real("technology.target.vdd_v");
  if (t.reference_nm == 0 && t.target_nm == 0) return;
  std::vector<std::string> known;
  for (unsigned nm : kTechnologyNodes)
    if (s.real(node_key(nm) + ".capacitance") > 0 && s.real(node_key(nm) + ".leakage") > 0) known.push_back(std::to_string(nm));
  struct Figures { double capacitance, leakage; };
  auto figures = [&](const char* end, std::uint64_t nm, double v) {
    const std::string key = std::string("technology.") + end;
    if (nm == 0)
      s.fail(key + ".node_nm", "power.technology needs both ends: give the " + std::string(end) + " part's node as well");
    const auto* it = std::find(kTechnologyNodes.begin(), kTechnologyNodes.end(), nm);
    const bool listed = it != kTechnologyNodes.end() && std::find(known.begin(), known.end(), std::to_string(nm)) != known.end();
    if (!listed)
      s.fail(key + ".node_nm", fmt::format("no technology figures for {} nm: power.technology.nodes has {} nm (Stillmaker & "
                                           "Baas 2017); nodes outside the table are not extrapolated", nm, fmt::join(known, ", ")));
    if (v <= 0) s.fail(key + ".vdd_v", "a supply voltage above 0 V is needed with a node");
    return Figures{s.real(node_key(static_cast<unsigned>(nm)) + ".capacitance"), s.real(node_key(static_cast<unsigned>(nm)) + ".leakage")};
  };
  const Figures r = figures("reference", t.reference_nm, t.reference_v);
  const Figures g = figures("target", t.target_nm, t.target_v);
  t.dynamic_scale = (g.capacitance * t.target_v * t.target_v) / (r.capacitance * t.reference_v * t.reference_v);
  t.static_scale = (g.leakage * t.target_v) / (r.leakage * t.reference_v);
  for (double* j : {&p.issue_j, &p.int_lane_j, &p.fp32_lane_j, &p.fp64_lane_j, &p.sfu_lane_j, &p.regfile_j,
                    &p.smem_wavefront_j, &p.l1_sector_j, &p.l2_sector_j, &p.noc_byte_j, &p.link_byte_j,
                    &p.sm_active_cycle_j, &p.sm_idle_cycle_j})
    *j *= t.dynamic_scale;
  for (auto& [type, j] : p.tensor_flop_j) j *= t.dynamic_scale;
  p.leakage_w *= t.static_scale;
}

}  // namespace

std::string PowerParams::technology_text() const {
  const Technology& t = technology;
  if (t.reference_nm == 0 && t.target_nm == 0) return {};
  auto e = [](double j) { return fmt::format("{:.4g}pJ", j * 1e12); };
  std::string o = fmt::format("# power.technology: {} nm at {:g} V -> {} nm at {:g} V: dynamic energies (SM, L2, crossbar) x{:.4g}, "
                              "leakage x{:.4g}; HBM and constant power unscaled. The power figures in effect:\n",
                              t.reference_nm, t.reference_v, t.target_nm, t.target_v, t.dynamic_scale, t.static_scale);
  o += fmt::format("#   issue {}, int_lane {}, fp32_lane {}, fp64_lane {}, sfu_lane {}, regfile {}\n", e(issue_j), e(int_lane_j),
                   e(fp32_lane_j), e(fp64_lane_j), e(sfu_lane_j), e(regfile_j));
  o += "#   tensor";
  for (DType d : kTensorDTypes) o += fmt::format(" {} {}", dtype_name(d), e(tensor_flop_j.at(std::string(dtype_name(d)))));
  o += fmt::format("\n#   smem_wavefront {}, l1_sector {}, l2_sector {}, noc_byte {}, partition_link_byte {}\n", e(smem_wavefront_j),
                   e(l1_sector_j), e(l2_sector_j), e(noc_byte_j), e(link_byte_j));
  o += fmt::format("#   sm_active_cycle {}, sm_idle_cycle {}, leakage {:.4g}W\n", e(sm_active_cycle_j), e(sm_idle_cycle_j),
                   leakage_w);
  return o;
}

PowerParams PowerParams::from(const Config& config) {
  PowerParams p;
  if (!config.has_section("power")) return p;
  const Params& s = config.section("power");
  p.enabled = s.boolean("enabled");
  p.reference_clock_hz = s.real("reference_clock");
  p.reference_voltage = s.real("reference_voltage");
  p.min_clock_hz = s.real("min_clock");
  p.min_voltage = s.real("min_voltage");
  p.issue_j = s.real("issue");
  p.int_lane_j = s.real("int_lane");
  p.fp32_lane_j = s.real("fp32_lane");
  p.fp64_lane_j = s.real("fp64_lane");
  p.sfu_lane_j = s.real("sfu_lane");
  for (DType t : kTensorDTypes) p.tensor_flop_j[std::string(dtype_name(t))] = s.real("tensor." + std::string(dtype_name(t)));
  p.regfile_j = s.real("regfile");
  p.smem_wavefront_j = s.real("smem_wavefront");
  p.l1_sector_j = s.real("l1_sector");
  p.l2_sector_j = s.real("l2_sector");
  p.noc_byte_j = s.real("noc_byte");
  p.link_byte_j = s.real("partition_link_byte");
  p.hbm_activate_j = s.real("hbm_activate");
  p.hbm_read_burst_j = s.real("hbm_read_burst");
  p.hbm_write_burst_j = s.real("hbm_write_burst");
  p.hbm_refresh_j = s.real("hbm_refresh");
  p.sm_active_cycle_j = s.real("sm_active_cycle");
  p.sm_idle_cycle_j = s.real("sm_idle_cycle");
  p.leakage_w = s.real("leakage");
  p.constant_w = s.real("constant");
  p.hbm_background_w = s.real("hbm_background");
  p.cap_w = s.real("cap");
  p.cap_mode = s.str("cap_mode");
  p.clock_step_hz = s.real("clock_step");
  p.idle_clock_hz = s.real("idle_clock");
  p.window_s = s.real("window");
  if (!p.enabled) return p;
  apply_technology(s, p);
  if (p.min_clock_hz > p.reference_clock_hz)
    s.fail("min_clock", "the V/f line's lowest clock must not exceed power.reference_clock");
  if (p.min_voltage > p.reference_voltage)
    s.fail("min_voltage", "the voltage at power.min_clock must not exceed power.reference_voltage");
  // A cap the GPU cannot meet even at its lowest clock with nothing running is a wrong number, not a throttle.
  const double floor_w = p.leakage_w * p.min_voltage / p.reference_voltage + p.constant_w + p.hbm_background_w;
  if (p.cap_w > 0 && p.cap_w <= floor_w)
    s.fail("cap", fmt::format("a power cap of {:.4g} W is at or below the GPU's static and constant power at its lowest "
                              "clock ({:.4g} W: power.leakage at min_voltage + constant + hbm_background)", p.cap_w, floor_w));
  if (p.cap_mode == "boost" && p.cap_w <= 0) s.fail("cap_mode", "boost needs a power.cap above 0 W");
  return p;
}

double PowerParams::voltage(double hz) const {
  if (hz <= min_clock_hz || reference_clock_hz <= min_clock_hz) return hz >= reference_clock_hz ? reference_voltage : min_voltage;
  return min_voltage + (reference_voltage - min_voltage) * (hz - min_clock_hz) / (reference_clock_hz - min_clock_hz);
}

double PowerParams::idle_power(double hz, unsigned sms) const {
  const double v = voltage(hz) / reference_voltage;
  return leakage_w * v + constant_w + hbm_background_w + sms * sm_idle_cycle_j * v * v * hz;
}

struct EnergyModel::Counts {
  std::array<std::uint64_t, static_cast<std::size_t>(OpClass::Count)> instructions{}, lanes{};
  std::array<std::uint64_t, kDTypeCount> tensor_flops{};  // by DType
  std::uint64_t register_lane_accesses = 0;       // (sources + destinations) x active lanes

  Counts& operator+=(const Counts& o) {
    for (std::size_t i = 0; i < instructions.size(); ++i) instructions[i] += o.instructions[i], lanes[i] += o.lanes[i];
    for (std::size_t i = 0; i < tensor_flops.size(); ++i) tensor_flops[i] += o.tensor_flops[i];
    register_lane_accesses += o.register_lane_accesses;
    return *this;
  }
};

// The memory-side events of a kernel (from its counters) or of one of its windows (its share of them).
struct EnergyModel::Traffic {
  double smem_wavefronts = 0, l1_sectors = 0, l2_sectors = 0, noc_bytes = 0, link_bytes = 0, activates = 0,
         read_bursts = 0, write_bursts = 0, refreshes = 0;
};

// One power.window of a kernel: the issue events heard in it, and the activity that apportions the kernel's
// counters over its windows.
struct EnergyModel::Window {
  Counts issued;
  double l2_sectors = 0, dram_read_bytes = 0, dram_write_bytes = 0, resident_sm_cycles = 0;
  Window& operator+=(const Window& o) {
    issued += o.issued;
    l2_sectors += o.l2_sectors;
    dram_read_bytes += o.dram_read_bytes;
    dram_write_bytes += o.dram_write_bytes;
    resident_sm_cycles += o.resident_sm_cycles;
    return *this;
  }
};

struct EnergyModel::Record {
  Counts total;
  std::vector<Window> windows;
  Cycle start = 0;
  std::uint64_t window_cycles = 1;  // power.window, doubled each time the kernel outlasts kMaxWindowsPerKernel
};

namespace {
// A bound on memory, not a hardware figure: a kernel longer than this many power.windows (0.66 s at 10 us) keeps
// its windows at twice, four times, ... the length, merged pairwise, so a kernel of any length holds at most this
// many (a legal but enormous MMA of 8.3 x 10^11 cycles once asked for ~4.5 x 10^7 windows).
constexpr std::size_t kMaxWindowsPerKernel = std::size_t{1} << 16;
}  // namespace

// Halves the kernel's window count by merging neighbours until `windows_needed` windows of its length fit.
void EnergyModel::coarsen_to_fit(Record& k, std::size_t windows_needed) {
  while (windows_needed > kMaxWindowsPerKernel) {
    std::vector<Window>& w = k.windows;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (i % 2 == 0) w[i / 2] = w[i];
      else w[i / 2] += w[i];
    }
    w.resize((w.size() + 1) / 2);
    k.window_cycles *= 2;
    windows_needed = (windows_needed + 1) / 2;
  }
}

namespace {

const ClockDomain& domain_named(const Simulation& sim, const char* name) {
  const ClockDomain* d = sim.find_domain(name);
  WARPSIM_ASSERT(d != nullptr, std::string("the energy model needs the '") + name + "' clock domain");
  return *d;
}

}  // namespace

std::optional<double> peak_windowed_power(const std::vector<EnergySpan>& spans, std::uint64_t window_cycles, double hz) {
  WARPSIM_ASSERT(window_cycles > 0 && hz > 0, "peak_windowed_power: empty window or clock");
  std::uint64_t total = 0;
  for (const EnergySpan& s : spans) total += s.cycles;
  const std::uint64_t windows = total / window_cycles;  // the last takes the remainder
  if (windows < 2) return std::nullopt;
  double peak = 0.0, joules = 0.0;
  std::uint64_t at = 0, window = 0;  // cycles done; index of the window being filled
  auto window_end = [&](std::uint64_t w) { return w + 1 == windows ? total : (w + 1) * window_cycles; };
  for (const EnergySpan& s : spans) {
    std::uint64_t done = 0;  // of this span
    while (done < s.cycles) {
      const std::uint64_t take = std::min(s.cycles - done, window_end(window) - at);
      joules += s.joules * static_cast<double>(take) / static_cast<double>(s.cycles);
      done += take;
      at += take;
      if (at == window_end(window)) {
        const std::uint64_t length = window + 1 == windows ? total - window * window_cycles : window_cycles;
        peak = std::max(peak, joules / (static_cast<double>(length) / hz));
        joules = 0.0;
        ++window;
      }
    }
  }
  return peak;
}

EnergyModel::EnergyModel(const Config& config, ProbeRegistry& probes, const Simulation& sim)
    : p_(PowerParams::from(config)),
      sm_hz_(config.section("clocks").real("sm")),
      sms_(config.section("sm").u32("count")),
      hbm_granularity_(config.section("hbm").real("access_granularity")),
      sm_domain_(domain_named(sim, "sm")),
      l2_domain_(domain_named(sim, "l2")),
      hbm_domain_(domain_named(sim, "hbm")),
      window_cycles_(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(p_.window_s * sm_hz_)))),
      current_(std::make_unique<Record>()),
      resident_ctas_(sms_, 0),
      resident_since_(sms_, 0),
      tensor_free_at_(sms_, 0.0) {
  const Params& sm = config.section("sm");
  for (DType d : kTensorDTypes) {
    const std::string key = "tensor.flops_per_cycle." + std::string(dtype_name(d));
    tensor_flops_per_cycle_[static_cast<std::size_t>(d)] = sm.has(key) ? sm.real(key) : 0.0;
  }
  const std::size_t matched = probes.listen<InstIssue>("sm[*].issue", [this](const InstIssue& e) {
    Counts& c = window_at(sm_domain_.now()).issued;  // tensor FLOPs: add_tensor_flops places them in time
    const auto cls = static_cast<std::size_t>(op_class(e.inst.op));
    const auto lanes = static_cast<std::uint64_t>(e.inst.active_lanes());
    ++c.instructions[cls];
    c.lanes[cls] += lanes;
    c.register_lane_accesses += (e.inst.num_src + e.inst.num_dst) * lanes;
    if (op_class(e.inst.op) == OpClass::Tensor) add_tensor_flops(e.sm, e.inst.dtype, mma_flops_per_warp(e.inst));
  });
  WARPSIM_ASSERT(matched == sms_, "the energy model found " + std::to_string(matched) + " sm[*].issue probe points for " +
                                      std::to_string(sms_) + " SMs");
  // When the memory side works, for the kernel's windows (the energies themselves come from its counters).
  auto sm_cycle_of = [this](const ClockDomain& d, Cycle c) { return sm_domain_.cycle_at_or_before(d.time_of(c)); };
  probes.listen<L2Access>("l2.slice[*].access", [this, sm_cycle_of](const L2Access& a) {
    if (!in_kernel_ || a.req.op == MemOp::Invalidate) return;
    window_at(sm_cycle_of(l2_domain_, a.cycle)).l2_sectors += __builtin_popcount(a.req.sector_mask);
  });
  probes.listen<DramAccess>("hbm.channel[*].access", [this, sm_cycle_of](const DramAccess& a) {
    if (!in_kernel_) return;
    Window& w = window_at(sm_cycle_of(hbm_domain_, a.cycle));
    (a.req.op == MemOp::Read ? w.dram_read_bytes : w.dram_write_bytes) += a.req.bytes;
  });
}

EnergyModel::~EnergyModel() = default;

EnergyModel::Window& EnergyModel::window_at(Cycle sm_cycle) {
  Record& k = *current_;
  const Cycle since = sm_cycle > k.start ? sm_cycle - k.start : 0;
  if (since / k.window_cycles >= kMaxWindowsPerKernel) coarsen_to_fit(k, since / k.window_cycles + 1);
  const std::size_t i = since / k.window_cycles;
  if (i >= k.windows.size()) k.windows.resize(i + 1);
  return k.windows[i];
}

// The first SM cycle after `cycle` that starts a window of the current kernel.
Cycle EnergyModel::window_end_after(Cycle cycle) const {
  const Record& k = *current_;
  return k.start + ((cycle - std::min(cycle, k.start)) / k.window_cycles + 1) * k.window_cycles;
}

// An MMA's FLOPs are spent while the SM's tensor pipe works on them, not when the warp issues it (a wgmma
// issued ahead of the pipe, asynchronously, would otherwise put more FLOPs in a window than the pipe can do):
// each starts when the pipe is free, at or after its issue, and takes FLOPs / sm.tensor.flops_per_cycle cycles,
// its FLOPs split over the windows those cycles fall in (whole FLOPs, the remainder to the last).
void EnergyModel::add_tensor_flops(unsigned sm, DType type, std::uint64_t flops) {
  const auto t = static_cast<std::size_t>(type);
  const double rate = tensor_flops_per_cycle_[t];
  const double now = static_cast<double>(sm_domain_.now());
  if (rate <= 0 || sm >= sms_ || flops == 0) {
    window_at(sm_domain_.now()).issued.tensor_flops[t] += flops;
    return;
  }
  double& free_at = tensor_free_at_[sm];
  const double start = std::max(now, free_at), end = start + static_cast<double>(flops) / rate;
  free_at = end;
  std::uint64_t left = flops;
  for (double at = start; left > 0;) {
    const auto cycle = static_cast<Cycle>(at);
    const double until = std::min(end, static_cast<double>(window_end_after(cycle)));
    auto part = until >= end ? left : std::min(left, static_cast<std::uint64_t>(std::llround(static_cast<double>(flops) * (until - at) / (end - start))));
    window_at(cycle).issued.tensor_flops[t] += part;
    left -= part;
    at = until;
  }
}

// SM-cycles of residency [from, to) of one SM, split over the windows they fall in.
void EnergyModel::add_residency(Cycle from, Cycle to) {
  while (from < to) {
    const Cycle until = std::min(to, window_end_after(from));
    window_at(from).resident_sm_cycles += static_cast<double>(until - from);
    from = until;
  }
}

void EnergyModel::kernel_started(std::size_t index, Cycle cycle) {
  if (index == 0) kernels_.clear();  // a new run of the same GPU
  std::fill(tensor_free_at_.begin(), tensor_free_at_.end(), 0.0);
  *current_ = Record{};
  current_->start = cycle;
  current_->window_cycles = window_cycles_;
  std::fill(resident_ctas_.begin(), resident_ctas_.end(), 0u);
  in_kernel_ = true;
}

void EnergyModel::cta_started(unsigned sm, Cycle cycle) {
  if (sm < sms_ && resident_ctas_[sm]++ == 0) resident_since_[sm] = cycle;
}

void EnergyModel::cta_finished(unsigned sm, Cycle cycle) {
  if (sm < sms_ && resident_ctas_[sm] > 0 && --resident_ctas_[sm] == 0) add_residency(resident_since_[sm], cycle);
}

void EnergyModel::kernel_finished(Cycle cycle) {
  for (unsigned sm = 0; sm < sms_; ++sm)
    if (resident_ctas_[sm] > 0) add_residency(resident_since_[sm], cycle);
  Record& k = *current_;
  // One window per power.window of the kernel's time; anything heard at its very end joins the last.
  const Cycle cycles = cycle > k.start ? cycle - k.start : 0;
  auto windows_of = [&k](Cycle c) { return std::max<std::size_t>(1, (c + k.window_cycles - 1) / k.window_cycles); };
  coarsen_to_fit(k, windows_of(cycles));
  const std::size_t windows = windows_of(cycles);
  if (k.windows.size() < windows) k.windows.resize(windows);
  while (k.windows.size() > windows) {
    const Window extra = k.windows.back();
    k.windows.pop_back();
    k.windows.back() += extra;
  }
  for (const Window& w : k.windows) k.total += w.issued;
  kernels_.push_back(std::move(k));
  in_kernel_ = false;
}

// Energy of `cycles` SM cycles holding the events `c` and `t`, `active_sm_cycles` of them SM-cycles with a
// resident warp: the one formula for kernels and their windows.
EnergyResult EnergyModel::energy_of(const Counts& c, const Traffic& t, std::uint64_t cycles, double active) const {
  EnergyResult e;
  e.sm_clock_hz = sm_hz_;
  e.voltage = p_.voltage(sm_hz_);
  e.seconds = static_cast<double>(cycles) / sm_hz_;
  const double v = e.voltage / p_.reference_voltage, dyn = v * v;
  auto lanes = [&](OpClass k) { return static_cast<double>(c.lanes[static_cast<std::size_t>(k)]); };
  double instructions = 0;
  for (auto i : c.instructions) instructions += static_cast<double>(i);
  double tensor = 0;
  for (DType d : kTensorDTypes)
    tensor += static_cast<double>(c.tensor_flops[static_cast<std::size_t>(d)]) * p_.tensor_flop_j.at(std::string(dtype_name(d)));
  const double idle = std::max(0.0, static_cast<double>(sms_) * static_cast<double>(cycles) - active);
  e.breakdown = {
      {"sm_issue", instructions * p_.issue_j * dyn},
      {"int", lanes(OpClass::Int) * p_.int_lane_j * dyn},
      {"fp32", lanes(OpClass::Fp32) * p_.fp32_lane_j * dyn},
      {"fp64", lanes(OpClass::Fp64) * p_.fp64_lane_j * dyn},
      {"sfu", lanes(OpClass::Sfu) * p_.sfu_lane_j * dyn},
      {"tensor", tensor * dyn},
      {"regfile", static_cast<double>(c.register_lane_accesses) / 32.0 * p_.regfile_j * dyn},
      {"smem", t.smem_wavefronts * p_.smem_wavefront_j * dyn},
      {"l1", t.l1_sectors * p_.l1_sector_j * dyn},
      {"l2", t.l2_sectors * p_.l2_sector_j},
      {"noc", t.noc_bytes * p_.noc_byte_j + t.link_bytes * p_.link_byte_j},
      {"hbm", t.activates * p_.hbm_activate_j + t.read_bursts * p_.hbm_read_burst_j + t.write_bursts * p_.hbm_write_burst_j +
                  t.refreshes * p_.hbm_refresh_j + p_.hbm_background_w * e.seconds},
      {"sm_clock", (active * p_.sm_active_cycle_j + idle * p_.sm_idle_cycle_j) * dyn},
      {"leakage", p_.leakage_w * v * e.seconds},
      {"constant", p_.constant_w * e.seconds},
  };
  for (const auto& [name, j] : e.breakdown) e.joules += j;
  e.average_w = e.seconds > 0 ? e.joules / e.seconds : 0.0;
  e.window_s = p_.window_s;
  return e;
}

// The kernel's energy per window: each window's own issue events, and its share of the kernel's counters by the
// activity heard in it (L2 sectors for L2 and crossbar, DRAM bytes for bursts and activates, load/store issues
// for shared memory and L1, CTA residency for clock power, time for refresh); a measure that heard nothing
// shares by time. The shares add up to 1, so the windows' energies add up to the kernel's.
std::vector<EnergySpan> EnergyModel::window_energies(const Record& k, const Traffic& t, std::uint64_t cycles,
                                                     double active) const {
  constexpr auto kLdst = static_cast<std::size_t>(OpClass::Ldst);
  Window sum;
  for (const Window& w : k.windows) {
    sum.l2_sectors += w.l2_sectors;
    sum.dram_read_bytes += w.dram_read_bytes;
    sum.dram_write_bytes += w.dram_write_bytes;
    sum.resident_sm_cycles += w.resident_sm_cycles;
  }
  const double ldst = static_cast<double>(k.total.instructions[kLdst]);
  std::vector<EnergySpan> spans;
  for (std::size_t i = 0; i < k.windows.size(); ++i) {
    const Window& w = k.windows[i];
    const std::uint64_t length = std::min<std::uint64_t>(k.window_cycles, cycles - std::min<std::uint64_t>(cycles, i * k.window_cycles));
    const double time_share = cycles ? static_cast<double>(length) / static_cast<double>(cycles) : 0.0;
    auto share = [time_share](double part, double whole) { return whole > 0 ? part / whole : time_share; };
    const double by_ldst = share(static_cast<double>(w.issued.instructions[kLdst]), ldst);
    const double by_l2 = share(w.l2_sectors, sum.l2_sectors);
    Traffic part;
    part.smem_wavefronts = t.smem_wavefronts * by_ldst;
    part.l1_sectors = t.l1_sectors * by_ldst;
    part.l2_sectors = t.l2_sectors * by_l2;
    part.noc_bytes = t.noc_bytes * by_l2;
    part.link_bytes = t.link_bytes * by_l2;
    part.activates = t.activates * share(w.dram_read_bytes + w.dram_write_bytes, sum.dram_read_bytes + sum.dram_write_bytes);
    part.read_bursts = t.read_bursts * share(w.dram_read_bytes, sum.dram_read_bytes);
    part.write_bursts = t.write_bursts * share(w.dram_write_bytes, sum.dram_write_bytes);
    part.refreshes = t.refreshes * time_share;
    spans.push_back({length, energy_of(w.issued, part, length, active * share(w.resident_sm_cycles, sum.resident_sm_cycles)).joules});
  }
  return spans;
}

EnergyResult EnergyModel::kernel_energy(std::size_t index, const StatReport& r, std::uint64_t cycles,
                                        std::uint64_t flops) const {
  WARPSIM_ASSERT(index < kernels_.size(), "energy of a kernel the model did not see");
  const Record& k = kernels_[index];
  const Counts& c = k.total;
  Traffic t;
  t.smem_wavefronts = counter(r, "sm.smem_wavefronts_ld") + counter(r, "sm.smem_wavefronts_st") + counter(r, "tma.smem_wavefronts");
  t.l1_sectors = counter(r, "sm.l1_bytes") / 32.0;
  t.l2_sectors = counter(r, "l2.read_sectors") + counter(r, "l2.write_sectors") + counter(r, "l2.atomic_sectors");
  t.noc_bytes = counter(r, "noc.sm_port.to_l2_bytes") + counter(r, "noc.sm_port.to_sm_bytes");
  t.link_bytes = counter(r, "noc.partition_link.bytes");
  t.activates = counter(r, "hbm.row_misses") + counter(r, "hbm.row_conflicts");
  t.read_bursts = std::ceil(counter(r, "hbm.bytes_read") / hbm_granularity_);
  t.write_bursts = std::ceil(counter(r, "hbm.bytes_written") / hbm_granularity_);
  t.refreshes = counter(r, "hbm.refreshes");
  const double active = counter(r, "sm.active_cycles");
  EnergyResult e = energy_of(c, t, cycles, active);
  if (flops > 0 && e.joules > 0) e.flops_per_joule = static_cast<double>(flops) / e.joules;
  for (std::size_t i = 0; i < c.instructions.size(); ++i) {
    if (!c.instructions[i]) continue;
    const std::string cls(op_class_name(static_cast<OpClass>(i)));
    e.events.emplace_back("warp_instructions." + cls, c.instructions[i]);
    e.events.emplace_back("lanes." + cls, c.lanes[i]);
  }
  for (DType d : kTensorDTypes)
    if (c.tensor_flops[static_cast<std::size_t>(d)])
      e.events.emplace_back("tensor_flops." + std::string(dtype_name(d)), c.tensor_flops[static_cast<std::size_t>(d)]);
  e.events.emplace_back("register_lane_accesses", c.register_lane_accesses);
  e.windows = window_energies(k, t, cycles, active);
  e.peak_w = peak_windowed_power(e.windows, window_cycles_, sm_hz_).value_or(e.average_w);
  return e;
}

EnergyResult EnergyModel::idle_energy(std::uint64_t wait_cycles) const {
  EnergyResult e;
  e.sm_clock_hz = sm_hz_;
  e.voltage = p_.voltage(sm_hz_);
  e.seconds = static_cast<double>(wait_cycles) / sm_hz_;
  const double v = e.voltage / p_.reference_voltage;
  e.breakdown = {{"hbm", p_.hbm_background_w * e.seconds},
                 {"sm_clock", static_cast<double>(sms_) * static_cast<double>(wait_cycles) * p_.sm_idle_cycle_j * v * v},
                 {"leakage", p_.leakage_w * v * e.seconds},
                 {"constant", p_.constant_w * e.seconds}};
  for (const auto& [name, j] : e.breakdown) e.joules += j;
  e.average_w = e.seconds > 0 ? e.joules / e.seconds : 0.0;
  e.peak_w = e.average_w;  // constant power
  e.window_s = p_.window_s;
  if (wait_cycles > 0) e.windows = {{wait_cycles, e.joules}};
  return e;
}

}  // namespace warpsim
