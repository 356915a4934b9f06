// Speed of light (Nsight Compute's "GPU Speed Of Light Throughput" section): every unit's throughput as a
// fraction of its peak, the peaks derived from the GPU's config and the achieved figures from the components'
// own counters and utilisation metrics (sim/stats). "Compute (SM) Throughput" is the largest fraction among the
// SM's units (issue slots, execution pipes), "Memory Throughput" the largest among the memory units (LSU data
// path, L1, shared memory, crossbar ports, L2 slices, `lts` = Nsight's lts__throughput, DRAM). The limiter verdict names the busiest unit when it
// is at or above kThroughputBoundFraction of its peak, and otherwise calls the kernel latency bound, naming the
// warp state (sm/stall_reason.h) that took most warp-cycles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/config.h"
#include "sim/stats/stats.h"

namespace warpsim {

// Nsight Compute's SOL rule: "achieved compute throughput and/or memory bandwidth below 60% of peak typically
// indicate latency issues" (Kernel Profiling Guide, SOLBottleneck rule). At or above it, the busiest unit bounds.
inline constexpr double kThroughputBoundFraction = 0.60;

struct SolUnit {
  std::string key;              // short, stable: "tensor", "l2", "noc_slice_ports_to_sm" (the summary's table)
  std::string name;             // in words: "tensor pipe", "L2 slice ports towards the SMs"
  std::string group;            // "compute" (SM) or "memory"
  std::string metric;           // the Nsight Compute metric it corresponds to
  double fraction = 0.0;        // achieved / peak
  double achieved = 0.0, peak = 0.0;
  std::string unit_of_measure;  // of achieved and peak
};

// Tensor work that the problem needed beside what the tensor pipes executed: padded tile rows (a 16-row decode
// GEMM in 64-row tiles) keep the pipe busy without useful work.
struct TensorWork {
  std::optional<std::uint64_t> problem_flops;  // the workload's own count (KernelInfo::flops); unknown for traces without it
  std::uint64_t executed_flops = 0;            // MMA operations issued, padding included
  double pipe_busy = 0.0;                      // tensor pipe busy fraction (= the tensor unit's)
  double peak_flops_per_cycle_per_sm = 0.0;    // sm.tensor.flops_per_cycle of the type the MMAs ran at
  std::string dtype;                           // that type, or "mixed" (then the executed MMAs' mean rate)
  std::optional<double> useful;                // problem_flops / (peak x SMs x cycles): unknown without problem_flops
};

struct Limiter {
  bool throughput_bound = false;
  // Only for a run: the GPU sat idle waiting for the host's kernel launches at least as long as it ran kernels
  // (RunResult::launch); `verdict` then says so and `evidence` keeps the kernels' own verdict.
  bool launch_bound = false;
  std::string unit;          // the busiest unit's name
  std::string key;           // and key
  double fraction = 0.0;     // its fraction of peak
  std::string stall;         // the warp state with most warp-cycles ("selected" excluded)
  double stall_share = 0.0;  // its share of all warp-cycles
  std::string verdict;       // "bound by L2 slice ports towards the SMs: 97% busy" / "latency bound: ..."
  std::string evidence;      // the figures behind it, in words
};

struct SpeedOfLight {
  std::vector<SolUnit> units;
  const SolUnit* compute() const;  // the busiest compute unit (Compute (SM) Throughput); null if none
  const SolUnit* memory() const;   // the busiest memory unit (Memory Throughput)
  const SolUnit* find(const std::string& key) const;
  std::optional<TensorWork> tensor;  // when tensor-core work ran
  Limiter limiter;
  // The busiest cap between the SMs and the L2 data (interconnect links, slice data ports) and whether it bound:
  // "bound by L2 slice ports towards the SMs: 97% busy" / "no cap bound it (busiest: L2 slices, 40% busy)".
  std::string l2_path;
  // Configured bandwidths that another cap in their path keeps from being reached, checked on the config alone:
  // "l2.bandwidth 14.6 TB/s is unreachable: noc slice ports (80 slices x 64 B/clk) cap the path at 9.37 TB/s".
  std::vector<std::string> warnings;
};

// One kernel's units, from its statistics (`stats`, over `cycles` SM cycles), its warp-instructions and warp
// states, and `problem_flops` (0: unknown).
SpeedOfLight kernel_speed_of_light(const StatReport& stats, const Config& config, std::uint64_t cycles,
                                   std::uint64_t warp_instructions, std::uint64_t problem_flops,
                                   const std::vector<std::pair<std::string, std::uint64_t>>& stalls);

// The limiter verdict of `units` (the busiest at or above kThroughputBoundFraction, else latency bound, naming the
// warp state with most warp-cycles).
Limiter limiter_of(const std::vector<SolUnit>& units, const std::vector<std::pair<std::string, std::uint64_t>>& stalls);

// The whole run: every unit's fraction and achieved figure weighted by its kernels' cycles, warp states summed.
struct KernelSol {
  const SpeedOfLight* sol;
  std::uint64_t cycles;
  const std::vector<std::pair<std::string, std::uint64_t>>* stalls;
};
SpeedOfLight run_speed_of_light(const std::vector<KernelSol>& kernels);

}  // namespace warpsim
