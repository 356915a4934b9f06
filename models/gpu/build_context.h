// What a component's constructor gets besides its own parameters: the whole validated config (for values it
// shares with others, e.g. clocks), the clock domains, the stats registry, and the already-built parts of the
// GPU it connects to. Built by models/gpu/gpu.cpp in dependency order: hbm, noc, l2, then SMs.
#pragma once

#include <string>
#include <vector>

#include "models/mem/interfaces.h"
#include "sim/config/config.h"
#include "sim/core/simulation.h"
#include "sim/stats/stats.h"

namespace warpsim {

class BuildContext {
 public:
  BuildContext(const Config& config, Simulation& sim, StatsRegistry& stats)
      : config(config), sim(sim), stats(stats) {}
  const Config& config;
  Simulation& sim;
  StatsRegistry& stats;
  ClockDomain* sm_domain = nullptr;
  ClockDomain* l2_domain = nullptr;
  ClockDomain* hbm_domain = nullptr;
  std::vector<DramChannel*> dram;
  std::vector<L2Slice*> l2;
  Interconnect* noc = nullptr;

  // A model found a problem with the workload mid-run (e.g. a data type this GPU cannot execute). The run
  // stops at the end of the current time step and reports this message as an input error.
  void fail(std::string message) {
    if (error.empty()) error = std::move(message);
  }
  std::string error;
};

// Channel that owns an address (shared by the L2 slices and tests). Interleaves `granularity`-byte chunks
// with an XOR fold of higher address bits, so that power-of-two strides spread over channels.
unsigned hash_interleave(std::uint64_t addr, std::uint64_t granularity, unsigned ways);

}  // namespace warpsim
