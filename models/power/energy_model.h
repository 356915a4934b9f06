// Energy and power of a run (config section `power`), in the structure of AccelWattch and Accelergy: dynamic
// energy = events x energy per event, the events being what the simulator already does (warp-instructions by
// class and type and their register operands, heard at the SMs' `sm[i].issue` probe points; shared-memory
// wavefronts, L1, L2, crossbar and HBM traffic, HBM activates and refreshes, read from the kernel's own counters);
// clock power per SM cycle; leakage; and the board's constant power (VRM loss, HBM background).
//
// Per-event energies are given at `power.reference_clock` and `power.reference_voltage`; at another SM clock f
// the core voltage V(f) follows the configured V/f line, dynamic and clock energy scale with (V / Vref)^2 and
// leakage with V / Vref. The HBM, its background and the board's constant power do not scale with the SM clock.
//
// Peak power: the model also keeps, per `power.window` of each kernel, the issue events heard in it and the
// time-stamped activity that apportions the kernel's counters over its windows (L2 accesses at the
// `l2.slice[*].access` probes for L2 and crossbar energy, DRAM accesses at `hbm.channel[*].access` for HBM
// bursts and activates, load/store issues for shared memory and L1, CTA residency for SM clock power, time for
// static power). The windows' energies add up to the kernel's; the highest window's power is its peak. A kernel
// longer than 65536 windows keeps coarser ones (2x, 4x, ... power.window, merged pairwise), so memory stays
// bounded; its peak is then the highest power over those longer windows.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/clock_domain.h"
#include "sim/core/probe.h"
#include "sim/stats/stats.h"
#include "sim/trace/inst.h"

namespace warpsim {

class Simulation;

// The energy spent in a stretch of SM cycles: one window of a kernel, or a launch wait.
struct EnergySpan {
  std::uint64_t cycles = 0;
  double joules = 0.0;
};

// The highest average power over windows of `window_cycles` SM cycles laid end to end from the start of `spans`
// (taken one after another, power uniform within each span; `hz` the SM clock). A last window shorter than
// window_cycles joins the one before it, so the windows cover the whole and each is at least window_cycles long:
// the highest is never below the average. nullopt when the whole is shorter than two windows (one window: the
// average, which the caller has exactly).
std::optional<double> peak_windowed_power(const std::vector<EnergySpan>& spans, std::uint64_t window_cycles, double hz);

// Energy of one kernel (or of a whole run), in joules, by component.
struct EnergyResult {
  double joules = 0.0;
  double seconds = 0.0;      // the time it covers
  double average_w = 0.0;    // joules / seconds
  double peak_w = 0.0;       // the highest power over power.window (peak_windowed_power); average_w within one window
  double window_s = 0.0;     // power.window
  double sm_clock_hz = 0.0;  // the SM clock it was modelled at
  double voltage = 0.0;      // the core voltage at that clock (V/f line)
  std::optional<double> flops_per_joule;  // where the kernel's FLOPs are known
  // Components in a fixed order: "sm_issue", "int", "fp32", "fp64", "sfu", "tensor", "regfile", "smem", "l1",
  // "l2", "noc", "hbm", "sm_clock", "leakage", "constant".
  std::vector<std::pair<std::string, double>> breakdown;
  // The events counted from the issue probes (the rest are the kernel's counters in stats.json): warp-instructions
  // and active lanes per class, tensor FLOPs per type, warp-wide register operand accesses.
  std::vector<std::pair<std::string, std::uint64_t>> events;
  // A kernel's energy per power.window from its start (the last may be shorter), from which the run's windows
  // are made; not written to stats.json nor cached.
  std::vector<EnergySpan> windows;
};

// The run's power figures beside its kernels'.
struct PowerSummary {
  EnergyResult run;            // kernels and the launch waits between them
  double peak_kernel_w = 0.0;  // the largest kernel's average power
  double idle_w = 0.0;         // a GPU with nothing to do, at power.idle_clock
  double cap_w = 0.0;          // power.cap (0: none)
  // How the SM clock was decided: "configured" (clocks.sm, power.cap_mode report), "pinned" (--set clocks.sm),
  // "boost" (the highest step at which the modelled power meets the cap, power.cap_mode boost).
  std::string clock_policy;
  double sustained_clock_hz = 0.0;
  bool over_cap = false;       // the run's average power exceeds the cap at its clock
  std::vector<std::pair<double, double>> clock_search;  // boost: (SM clock Hz, average W) of each simulation
};

// The section's parameters, read once.
struct PowerParams {
  bool enabled = false;
  double reference_clock_hz = 0, reference_voltage = 0, min_clock_hz = 0, min_voltage = 0;
  double issue_j = 0, int_lane_j = 0, fp32_lane_j = 0, fp64_lane_j = 0, sfu_lane_j = 0;
  std::map<std::string, double> tensor_flop_j;  // by dtype name
  double regfile_j = 0, smem_wavefront_j = 0, l1_sector_j = 0, l2_sector_j = 0, noc_byte_j = 0, link_byte_j = 0;
  double hbm_activate_j = 0, hbm_read_burst_j = 0, hbm_write_burst_j = 0, hbm_refresh_j = 0;
  double sm_active_cycle_j = 0, sm_idle_cycle_j = 0;
  double leakage_w = 0, constant_w = 0, hbm_background_w = 0;
  double cap_w = 0, clock_step_hz = 0, idle_clock_hz = 0;
  double window_s = 0;  // power.window: the averaging time of the peak power
  std::string cap_mode;
  // power.technology: the figures above were given for a part at (reference node, voltage) and describe one at
  // (target node, voltage). Every per-event dynamic energy of the logic die (SM, L2, crossbar) is multiplied by
  // dynamic_scale = C(target) V_t^2 / (C(reference) V_r^2), leakage by static_scale = L(target) V_t /
  // (L(reference) V_r), C and L per node from power.technology.nodes; HBM and the board's constant power stay.
  struct Technology {
    std::uint64_t reference_nm = 0, target_nm = 0;  // 0: no scaling
    double reference_v = 0, target_v = 0;
    double dynamic_scale = 1.0, static_scale = 1.0;
  } technology;

  static PowerParams from(const Config& config);
  // With power.technology: YAML comment lines naming the scaling and the figures in effect after it (for
  // `warpsim config`); empty without.
  std::string technology_text() const;
  // Core voltage at SM clock `hz` on the V/f line (min_voltage at and below min_clock, reference_voltage at
  // reference_clock, linear between).
  double voltage(double hz) const;
  // Power of a GPU doing nothing at SM clock `hz` (leakage, constant, HBM background, idle SM clocks).
  double idle_power(double hz, unsigned sms) const;
};

// Counts the events of each kernel at the SMs' issue probes (`sm[*].issue`, listened to from construction) and,
// after the run, turns them and each kernel's counters into energy. The assembler (models/gpu) tells it where
// kernels start and end, as an observer of the run.
class EnergyModel final {
 public:
  // `sim`: its clock domains ("sm", "l2", "hbm") place the events in time.
  EnergyModel(const Config& config, ProbeRegistry& probes, const Simulation& sim);
  ~EnergyModel();

  // Kernel `index` of the run (in launch order) starts at SM cycle `cycle`; index 0 starts a new run.
  void kernel_started(std::size_t index, Cycle cycle);
  void kernel_finished(Cycle cycle);
  // SM `sm` starts or finishes holding a CTA: its clock power follows its residency over the kernel's windows.
  void cta_started(unsigned sm, Cycle cycle);
  void cta_finished(unsigned sm, Cycle cycle);

  // Energy of kernel `index` (in launch order) from its counters, time and FLOPs.
  EnergyResult kernel_energy(std::size_t index, const StatReport& counters, std::uint64_t cycles,
                             std::uint64_t flops) const;
  // Energy of `wait_cycles` SM cycles the GPU sat idle between kernels (launch waits).
  EnergyResult idle_energy(std::uint64_t wait_cycles) const;

  const PowerParams& params() const noexcept { return p_; }
  // Power of this GPU with nothing to do, at power.idle_clock.
  double idle_power() const { return p_.idle_power(p_.idle_clock_hz, sms_); }
  // power.window in SM cycles (at least 1).
  std::uint64_t window_cycles() const noexcept { return window_cycles_; }

 private:
  struct Counts;
  struct Traffic;
  struct Window;
  struct Record;
  EnergyResult energy_of(const Counts& c, const Traffic& t, std::uint64_t cycles, double active_sm_cycles) const;
  std::vector<EnergySpan> window_energies(const Record& k, const Traffic& t, std::uint64_t cycles, double active) const;
  Window& window_at(Cycle sm_cycle);
  Cycle window_end_after(Cycle cycle) const;
  static void coarsen_to_fit(Record& k, std::size_t windows_needed);
  void add_residency(Cycle from, Cycle to);
  void add_tensor_flops(unsigned sm, DType type, std::uint64_t flops);
  PowerParams p_;
  double sm_hz_;
  unsigned sms_;
  double hbm_granularity_;
  const ClockDomain& sm_domain_;
  const ClockDomain& l2_domain_;
  const ClockDomain& hbm_domain_;
  std::uint64_t window_cycles_ = 1;
  std::vector<Record> kernels_;
  std::unique_ptr<Record> current_;
  bool in_kernel_ = false;
  std::vector<unsigned> resident_ctas_;  // per SM, of the current kernel
  std::vector<Cycle> resident_since_;
  std::array<double, kDTypeCount> tensor_flops_per_cycle_{};  // sm.tensor.flops_per_cycle by DType (0: not limited)
  std::vector<double> tensor_free_at_;              // per SM: the SM cycle its tensor pipe finishes the MMAs heard
};

}  // namespace warpsim
