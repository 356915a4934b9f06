// The set of clock domains of one simulation and a plain C++ driver for them. The production driver is the
// SystemC layer (sim/sc), which runs each domain from one SC_METHOD; this driver runs the same domains in the
// same global-time order without SystemC, for unit tests and for comparing the two.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/clock_domain.h"

namespace warpsim {

class Simulation {
 public:
  ClockDomain& add_domain(const std::string& name, double frequency_hz);
  ClockDomain* find_domain(const std::string& name) const;
  const std::vector<std::unique_ptr<ClockDomain>>& domains() const noexcept { return domains_; }

  // Earliest time at which any domain has work (kTimeNever when all sleep).
  TimeFs next_time() const;
  // Runs every domain that has a cycle starting exactly at `t`, in domain order.
  void run_at(TimeFs t);
  // Runs until `finished()` is true (checked after every time step) or no domain has work left.
  // Returns finished().
  bool run(const std::function<bool()>& finished);

 private:
  std::vector<std::unique_ptr<ClockDomain>> domains_;
};

// The plain C++ driver (no SystemC): Simulation::run, in the shape of a driver (sim/sc/sc_driver.h has the
// SystemC one). Same results, bit for bit.
inline bool run_without_systemc(Simulation& sim, const std::function<bool()>& finished) { return sim.run(finished); }

}  // namespace warpsim
