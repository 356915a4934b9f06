// power.cap_mode boost: the SM clock a workload sustains under the board's power cap, as GPU Boost sets it.
//
// Policy. The controller moves the SM clock at most every ~100 ms (this project's H100 SXM5 under cuBLAS GEMMs:
// validation/data/h100_sxm_2026-11-23/clocks_gemm.csv, nvidia-smi every 50 ms, shows each clock held for at
// least two samples while the power limiter is active, throttle reason 0x4) and reads a board sensor that
// averages far longer still (Yang et al., arXiv 2312.02741: 25 ms of every 100 ms). A kernel, and an LLM
// step of a few to tens of ms, is shorter than that interval, so the controller sees the workload repeated, as
// in a benchmark loop or a serving engine: its steady state. The policy gives the whole workload one SM clock,
// the highest power.clock_step below power.reference_clock (the max boost clock) at which its modelled average
// power is at or under power.cap. What a controller does within its interval (the measured clock swings
// 1380-1965 MHz around its average under a GEMM) is not modelled: the result is the clock it averages to.
//
// Search. The clock is a fixed point of re-simulations: simulate at the max boost clock; if over the cap,
// predict the clock that meets it (energies rescaled by the V/f line; time first taken as compute-bound,
// t ~ 1/f, then fitted t = a + b/f per part through the two simulations nearest the answer) and simulate
// there; stop when the prediction through the bracket names the fastest simulated clock under the cap, when two
// simulated clocks are adjacent steps, or after kMaxBoostSimulations. The result is the fastest simulated clock
// that met the cap (or, if none did, the slowest tried).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/gpu/gpu.h"
#include "models/power/energy_model.h"

namespace warpsim {

inline constexpr int kMaxBoostSimulations = 4;

// One part of a workload simulated at one clock (a run; for an LLM step, one distinct kernel) and how many
// times it occurs in the workload.
struct BoostPart {
  const EnergyResult* energy = nullptr;  // its energy and time, by component
  double sm_clock_hz = 0.0;              // the clock it was simulated at
  double weight = 1.0;
};

struct BoostSearch {
  std::size_t chosen = 0;  // index of the simulation chosen, in the order made
  std::vector<std::pair<double, double>> clock_search;  // (SM clock Hz, average W) of each simulation
};

// The override that pins the SM clock at `hz` (as `--set clocks.sm=...`), for a simulation at one search step.
std::string sm_clock_override(double hz);

// Searches the clock as above. `simulate(hz)` simulates every part at SM clock hz and returns them (in the same
// order each time); what they point to must live until the search returns.
BoostSearch search_boost_clock(const PowerParams& p, const std::function<std::vector<BoostPart>(double hz)>& simulate);

}  // namespace warpsim
