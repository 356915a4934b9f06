// A clock domain: a frequency, its own cycle count, and a timing wheel of the components due in it.
// The domain runs a cycle by ticking exactly the components due then (idle components cost nothing), always
// in construction order, so results never depend on who asked to be woken first; each tick returns the next
// cycle the component needs, or kSleep.
// A driver (the SystemC layer in sim/sc, or Simulation::run for plain C++) decides when each domain runs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/timing_wheel.h"
#include "sim/core/types.h"

namespace warpsim {

class Component;

class ClockDomain {
 public:
  ClockDomain(std::string name, double frequency_hz);

  const std::string& name() const noexcept { return name_; }
  std::uint64_t frequency_hz() const noexcept { return freq_hz_; }
  // Conversions between this domain's cycles and global time (exact integer arithmetic: cycle c starts at
  // floor(c * 1e15 / f) fs).
  TimeFs time_of(Cycle c) const noexcept;
  Cycle cycle_at_or_before(TimeFs t) const noexcept;  // the cycle in progress at time t
  Cycle cycle_at_or_after(TimeFs t) const noexcept;   // first cycle starting at or after t

  // The cycle being run, or the last one run.
  Cycle now() const noexcept { return now_; }
  // Global time "now" in this domain's view.
  TimeFs now_fs() const noexcept { return time_of(now_); }

  // Schedule `c` to tick at `cycle` (>= now; == now only before the domain starts running that cycle).
  void schedule(Component* c, Cycle cycle);
  // Earliest cycle with a due component, or kSleep.
  Cycle next_cycle() const { return wheel_.next_cycle(); }
  TimeFs next_time() const;
  // Runs all components due at `cycle` (must equal next_cycle()).
  void run_cycle(Cycle cycle);

  // Called when a component is scheduled earlier than the earliest cycle the driver knows about, so that a
  // sleeping driver (SystemC process) can re-arm itself earlier. Set by the driver.
  void set_wake_listener(std::function<void(TimeFs)> listener) { wake_listener_ = std::move(listener); }

  // Called by each Component's constructor: its position in the fixed order of ticks within a cycle.
  std::uint32_t register_component(Component* c) { return wheel_.add_member(c); }

  // Number of cycles in which at least one component ran (activity, for speed statistics).
  std::uint64_t active_cycles() const noexcept { return active_cycles_; }
  std::uint64_t ticks() const noexcept { return ticks_; }

 private:
  std::string name_;
  std::uint64_t freq_hz_;
  // period = period_num_ / period_den_ fs, reduced, so conversions are mostly 64-bit arithmetic
  std::uint64_t period_num_ = 1, period_den_ = 1;
  // Conversions repeat the same instant many times in a row (every message of a cycle): remember the last.
  mutable TimeFs memo_time_ = kTimeNever;
  mutable Cycle memo_cycle_ = 0;
  Cycle now_ = 0;
  bool running_ = false;
  TimingWheel wheel_;
  std::vector<Component*> due_;
  std::function<void(TimeFs)> wake_listener_;
  TimeFs armed_time_ = kTimeNever;  // earliest time the driver was told about
  std::uint64_t active_cycles_ = 0;
  std::uint64_t ticks_ = 0;
  friend class Simulation;
};

}  // namespace warpsim
