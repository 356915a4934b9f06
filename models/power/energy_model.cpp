// Energy model (see energy_model.h). Every figure is a `power.*` parameter of the GPU's config, with its source
// there; nothing here is a hardware number.
#include "models/power/energy_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/slots/sm.h"
#include "sim/trace/inst.h"

namespace warpsim {
namespace {

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
  s.quantity("leakage", ParamType::Power, std::string("0W"), "static (leakage) power of the GPU die at reference_voltage; scales with V", 0.0, 1e5);
  s.quantity("constant", ParamType::Power, std::string("0W"), "the board's constant power: VRM loss, fans, other parts", 0.0, 1e5);
  s.quantity("hbm_background", ParamType::Power, std::string("0W"), "HBM stacks' and PHYs' background power (standby, clocks)", 0.0, 1e5);
  s.quantity("cap", ParamType::Power, std::string("0W"), "board power limit (0: none)", 0.0, 1e5);
  s.choice("cap_mode", {"report", "boost"}, std::string("report"),
           "report: the SM runs at clocks.sm and the run says whether its power exceeds the cap; boost: the SM clock is a "
           "result, the highest step from reference_clock down at which the run's average power meets the cap (several "
           "simulations); --set clocks.sm=... pins the clock in either mode");
  s.quantity("clock_step", ParamType::Frequency, std::string("15MHz"), "SM clock step of the boost controller", 1e5, 1e10);
  s.quantity("idle_clock", ParamType::Frequency, std::string("1GHz"), "SM clock of a GPU with nothing to do (for the idle power)", 1e6, 1e11);
  return s;
}

WARPSIM_REGISTER_SECTION("power", &power_schema, "energy and power model, power cap");

double counter(const StatReport& r, const std::string& name) {
  const StatValue* v = r.find(name);
  return v ? v->value : 0.0;
}

}  // namespace

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
  if (!p.enabled) return p;
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
  std::array<std::uint64_t, 8> tensor_flops{};  // by DType
  std::uint64_t register_lane_accesses = 0;       // (sources + destinations) x active lanes
};

EnergyModel::EnergyModel(const Config& config, ProbeRegistry& probes)
    : p_(PowerParams::from(config)),
      sm_hz_(config.section("clocks").real("sm")),
      sms_(config.section("sm").u32("count")),
      hbm_granularity_(config.section("hbm").real("access_granularity")),
      current_(std::make_unique<Counts>()) {
  const std::size_t matched = probes.listen<InstIssue>("sm[*].issue", [this](const InstIssue& e) {
    Counts& c = *current_;
    const auto cls = static_cast<std::size_t>(op_class(e.inst.op));
    const auto lanes = static_cast<std::uint64_t>(e.inst.active_lanes());
    ++c.instructions[cls];
    c.lanes[cls] += lanes;
    c.register_lane_accesses += (e.inst.num_src + e.inst.num_dst) * lanes;
    if (op_class(e.inst.op) == OpClass::Tensor) c.tensor_flops[static_cast<std::size_t>(e.inst.dtype)] += mma_flops_per_warp(e.inst);
  });
  WARPSIM_ASSERT(matched == sms_, "the energy model found " + std::to_string(matched) + " sm[*].issue probe points for " +
                                      std::to_string(sms_) + " SMs");
}

EnergyModel::~EnergyModel() = default;

void EnergyModel::kernel_started(std::size_t index) {
  if (index == 0) kernels_.clear();  // a new run of the same GPU
  *current_ = Counts{};
}
void EnergyModel::kernel_finished() { kernels_.push_back(*current_); }

EnergyResult EnergyModel::kernel_energy(std::size_t index, const StatReport& r, std::uint64_t cycles,
                                        std::uint64_t flops) const {
  WARPSIM_ASSERT(index < kernels_.size(), "energy of a kernel the model did not see");
  const Counts& c = kernels_[index];
  EnergyResult e;
  e.sm_clock_hz = sm_hz_;
  e.voltage = p_.voltage(sm_hz_);
  e.seconds = static_cast<double>(cycles) / sm_hz_;
  const double v = e.voltage / p_.reference_voltage, dyn = v * v;
  auto lanes = [&](OpClass k) { return static_cast<double>(c.lanes[static_cast<std::size_t>(k)]); };
  double instructions = 0;
  for (auto i : c.instructions) instructions += static_cast<double>(i);
  double tensor = 0;
  for (DType t : kTensorDTypes)
    tensor += static_cast<double>(c.tensor_flops[static_cast<std::size_t>(t)]) * p_.tensor_flop_j.at(std::string(dtype_name(t)));
  const double smem = counter(r, "sm.smem_wavefronts_ld") + counter(r, "sm.smem_wavefronts_st") + counter(r, "tma.smem_wavefronts");
  const double l1_sectors = counter(r, "sm.l1_bytes") / 32.0;
  const double l2_sectors = counter(r, "l2.read_sectors") + counter(r, "l2.write_sectors") + counter(r, "l2.atomic_sectors");
  const double noc_bytes = counter(r, "noc.sm_port.to_l2_bytes") + counter(r, "noc.sm_port.to_sm_bytes");
  const double link_bytes = counter(r, "noc.partition_link.bytes");
  const double activates = counter(r, "hbm.row_misses") + counter(r, "hbm.row_conflicts");
  const double read_bursts = std::ceil(counter(r, "hbm.bytes_read") / hbm_granularity_);
  const double write_bursts = std::ceil(counter(r, "hbm.bytes_written") / hbm_granularity_);
  const double active = counter(r, "sm.active_cycles");
  const double idle = std::max(0.0, static_cast<double>(sms_) * static_cast<double>(cycles) - active);
  e.breakdown = {
      {"sm_issue", instructions * p_.issue_j * dyn},
      {"int", lanes(OpClass::Int) * p_.int_lane_j * dyn},
      {"fp32", lanes(OpClass::Fp32) * p_.fp32_lane_j * dyn},
      {"fp64", lanes(OpClass::Fp64) * p_.fp64_lane_j * dyn},
      {"sfu", lanes(OpClass::Sfu) * p_.sfu_lane_j * dyn},
      {"tensor", tensor * dyn},
      {"regfile", static_cast<double>(c.register_lane_accesses) / 32.0 * p_.regfile_j * dyn},
      {"smem", smem * p_.smem_wavefront_j * dyn},
      {"l1", l1_sectors * p_.l1_sector_j * dyn},
      {"l2", l2_sectors * p_.l2_sector_j},
      {"noc", noc_bytes * p_.noc_byte_j + link_bytes * p_.link_byte_j},
      {"hbm", activates * p_.hbm_activate_j + read_bursts * p_.hbm_read_burst_j + write_bursts * p_.hbm_write_burst_j +
                  counter(r, "hbm.refreshes") * p_.hbm_refresh_j + p_.hbm_background_w * e.seconds},
      {"sm_clock", (active * p_.sm_active_cycle_j + idle * p_.sm_idle_cycle_j) * dyn},
      {"leakage", p_.leakage_w * v * e.seconds},
      {"constant", p_.constant_w * e.seconds},
  };
  for (const auto& [name, j] : e.breakdown) e.joules += j;
  e.average_w = e.seconds > 0 ? e.joules / e.seconds : 0.0;
  if (flops > 0 && e.joules > 0) e.flops_per_joule = static_cast<double>(flops) / e.joules;
  for (std::size_t k = 0; k < c.instructions.size(); ++k) {
    if (!c.instructions[k]) continue;
    const std::string cls(op_class_name(static_cast<OpClass>(k)));
    e.events.emplace_back("warp_instructions." + cls, c.instructions[k]);
    e.events.emplace_back("lanes." + cls, c.lanes[k]);
  }
  for (DType t : kTensorDTypes)
    if (c.tensor_flops[static_cast<std::size_t>(t)])
      e.events.emplace_back("tensor_flops." + std::string(dtype_name(t)), c.tensor_flops[static_cast<std::size_t>(t)]);
  e.events.emplace_back("register_lane_accesses", c.register_lane_accesses);
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
  return e;
}

}  // namespace warpsim
