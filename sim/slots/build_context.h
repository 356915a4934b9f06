// What a component's constructor gets besides its own parameters: the whole validated config (for values it
// shares with others, e.g. clocks), the clock domains, the stats and probe registries, and typed, named
// lookups of the parts already built (the assembler in models/gpu publishes each slot's instances as it builds
// them). A model asks for what it connects to by slot name, so a new slot needs no new field here.
#pragma once

#include <any>
#include <map>
#include <string>
#include <typeinfo>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/core/probe.h"
#include "sim/core/simulation.h"
#include "sim/stats/stats.h"

namespace warpsim {

class BuildContext {
 public:
  BuildContext(const Config& config, Simulation& sim, StatsRegistry& stats, ProbeRegistry& probes)
      : config(config), sim(sim), stats(stats), probes(probes) {}
  const Config& config;
  Simulation& sim;
  StatsRegistry& stats;
  ProbeRegistry& probes;

  // The clock domain of that name ("sm", "l2", "hbm"); a missing one is a programming error.
  ClockDomain& domain(const std::string& name) const {
    ClockDomain* d = sim.find_domain(name);
    WARPSIM_ASSERT(d != nullptr, "no clock domain '" + name + "' (the assembler adds domains before components)");
    return *d;
  }

  // The builder publishes the instances of a slot (in index order) once they exist...
  template <class Interface>
  void publish(const std::string& slot, std::vector<Interface*> instances) {
    WARPSIM_ASSERT(parts_.count(slot) == 0, "slot '" + slot + "' published twice");
    parts_[slot] = std::move(instances);
  }
  // ...and components look them up by slot name and interface type.
  template <class Interface>
  const std::vector<Interface*>& all(const std::string& slot) const {
    auto it = parts_.find(slot);
    WARPSIM_ASSERT(it != parts_.end(), "slot '" + slot + "' is not built yet (the assembler builds in dependency "
                                       "order: address_map, hbm, noc, l2, l1, sm)");
    const auto* v = std::any_cast<std::vector<Interface*>>(&it->second);
    WARPSIM_ASSERT(v != nullptr, "slot '" + slot + "' does not implement the interface " + typeid(Interface).name());
    return *v;
  }
  // The single instance of a slot (e.g. "noc", "address_map").
  template <class Interface>
  Interface& get(const std::string& slot) const {
    const auto& v = all<Interface>(slot);
    WARPSIM_ASSERT(v.size() == 1, "slot '" + slot + "' has " + std::to_string(v.size()) + " instances, not one");
    return *v.front();
  }

  // A model found a problem with the workload mid-run (e.g. a data type this GPU cannot execute). The run
  // stops at the end of the current time step and reports this message as an input error.
  void fail(std::string message) {
    if (error.empty()) error = std::move(message);
  }
  std::string error;

 private:
  std::map<std::string, std::any> parts_;
};

}  // namespace warpsim
