// SM subsetting (sim.subset = N > 1): the GPU simulated as 1/N of itself, the way one simulates one of N identical
// slices of a chip. Every count of units a model declares (Schema::unit_count: SMs, GPCs, L2 slices, HBM channels)
// is divided by N and rounded, and every total over units (Schema::total_over: L2 capacity and bandwidth, HBM
// bandwidth, the link between L2 partitions, the board's static power) keeps its value per unit; per-unit figures
// and latencies stay. A kernel runs on it the CTAs its SMs would get in the whole GPU's dispatch passes, about
// G x subset SMs / SMs of its G (whole clusters, as many per pass as the subset's GPCs hold;
// KernelScheduler::subset_share), so each unit sees the work it would
// see in the whole GPU: its time is the subset's, and its extensive results (counters, instructions, energy) are
// scaled to the whole grid (models/gpu/gpu.cpp). Error against whole-GPU
// simulation: README "Sampling".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/config/config.h"

namespace warpsim {

struct GpuSubset {
  unsigned divisor = 1;      // sim.subset
  unsigned gpu_sms = 0;      // the whole GPU's SMs (sm.count of the caller's config)
  struct Scaled {
    std::string key;            // "l2.slices"
    std::string full, subset;   // the values as config text
  };
  std::vector<Scaled> scaled;  // each parameter the subset changed: per-unit lists, then counts, then totals
  std::map<std::string, double> kept;  // of each unit count ("l2.slices"): the subset's over the GPU's
  bool active() const noexcept { return divisor > 1; }
  // The GPU's units of `count` per unit of the subset (1 when the GPU has no such count).
  double growth(const std::string& count) const {
    const auto it = kept.find(count);
    return it == kept.end() ? 1.0 : 1.0 / it->second;
  }
};

// The config of the subset GPU (`full` itself when sim.subset is 1), and what changed in `subset`. A subset the
// models reject (fewer GPCs than L2 partitions) is a ConfigError naming sim.subset and the model's complaint.
Config subset_config(const Config& full, GpuSubset& subset);

}  // namespace warpsim
