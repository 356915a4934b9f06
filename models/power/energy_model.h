// Energy and power of a run (config section `power`), in the structure of AccelWattch and Accelergy: dynamic
// energy = events x energy per event, the events being what the simulator already does (warp-instructions by
// class and type and their register operands, heard at the SMs' `sm[i].issue` probe points; shared-memory
// wavefronts, L1, L2, crossbar and HBM traffic, HBM activates and refreshes, read from the kernel's own counters);
// clock power per SM cycle; leakage; and the board's constant power (VRM loss, HBM background).
//
// Per-event energies are given at `power.reference_clock` and `power.reference_voltage`; at another SM clock f
// the core voltage V(f) follows the configured V/f line, dynamic and clock energy scale with (V / Vref)^2 and
// leakage with V / Vref. The HBM, its background and the board's constant power do not scale with the SM clock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/probe.h"
#include "sim/stats/stats.h"

namespace warpsim {

// Energy of one kernel (or of a whole run), in joules, by component.
struct EnergyResult {
  double joules = 0.0;
  double seconds = 0.0;      // the time it covers
  double average_w = 0.0;    // joules / seconds
  double sm_clock_hz = 0.0;  // the SM clock it was modelled at
  double voltage = 0.0;      // the core voltage at that clock (V/f line)
  std::optional<double> flops_per_joule;  // where the kernel's FLOPs are known
  // Components in a fixed order: "sm_issue", "int", "fp32", "fp64", "sfu", "tensor", "regfile", "smem", "l1",
  // "l2", "noc", "hbm", "sm_clock", "leakage", "constant".
  std::vector<std::pair<std::string, double>> breakdown;
  // The events counted from the issue probes (the rest are the kernel's counters in stats.json): warp-instructions
  // and active lanes per class, tensor FLOPs per type, warp-wide register operand accesses.
  std::vector<std::pair<std::string, std::uint64_t>> events;
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
  std::string cap_mode;

  static PowerParams from(const Config& config);
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
  EnergyModel(const Config& config, ProbeRegistry& probes);
  ~EnergyModel();

  // Kernel `index` of the run (in launch order) starts; index 0 starts a new run.
  void kernel_started(std::size_t index);
  void kernel_finished();

  // Energy of kernel `index` (in launch order) from its counters, time and FLOPs.
  EnergyResult kernel_energy(std::size_t index, const StatReport& counters, std::uint64_t cycles,
                             std::uint64_t flops) const;
  // Energy of `wait_cycles` SM cycles the GPU sat idle between kernels (launch waits).
  EnergyResult idle_energy(std::uint64_t wait_cycles) const;

  const PowerParams& params() const noexcept { return p_; }
  // Power of this GPU with nothing to do, at power.idle_clock.
  double idle_power() const { return p_.idle_power(p_.idle_clock_hz, sms_); }

 private:
  struct Counts;
  PowerParams p_;
  double sm_hz_;
  unsigned sms_;
  double hbm_granularity_;
  std::vector<Counts> kernels_;
  std::unique_ptr<Counts> current_;
};

}  // namespace warpsim
