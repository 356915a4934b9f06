// Observers of a run (Akita's hooks at the level of the whole GPU): the kernel scheduler announces kernels,
// CTAs and progress, and whatever wants them — the per-kernel results, the CTA timeline, the progress display —
// listens without the scheduler knowing it exists.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/core/types.h"
#include "sim/trace/source.h"

namespace warpsim {

// CTA-wave sampling of one kernel (sim.sample = waves; models/gpu/kernel_scheduler.h): the first
// `simulated_ctas` CTAs in dispatch order are simulated, the rest extrapolated at the rate measured between two CTA
// completion counts. simulated_ctas leaves out a whole number of waves, so the sample ends with the kernel's own
// last wave (full or partial) and its tail is simulated, not extrapolated. A persistent kernel is sampled by rounds
// instead (`rounds` below): every CTA runs, whole rounds of its units are left out, the window counts unit heads.
struct SamplePlan {
  bool active = false;               // false: the kernel is simulated whole
  std::uint64_t total_ctas = 0;      // the grid
  // SM subsetting (sim.subset; models/gpu/gpu_subset.h): how many CTAs a subset of the GPU runs as its share of
  // the grid, the first subset_ctas in its dispatch order (KernelScheduler::grid_unit; = total_ctas on the whole
  // GPU). Wave sampling samples these.
  std::uint64_t subset_ctas = 0;
  std::uint64_t wave_ctas = 0;       // CTAs the GPU holds at once for this kernel (SMs x CTAs per SM)
  std::uint64_t simulated_ctas = 0;  // the first simulated_ctas in dispatch order run; = subset_ctas when not sampled
  std::uint32_t warmup_waves = 0, measured_waves = 0;
  // The measured window: from the window_begin-th CTA completion to the window_end-th, while the GPU is still
  // full (CTAs keep being dispatched until after window_end completions); rounds: unit heads issued.
  std::uint64_t window_begin = 0, window_end = 0;
  Cycle window_begin_cycle = 0, window_end_cycle = 0;  // SM clock, set as the window opens and closes
  // The cycles the CTAs not simulated add at the window's rate (set as the kernel ends).
  Cycle extrapolated_cycles = 0;
  // Of the CTAs not simulated, read from the trace (exact): what they would have issued. skipped_*: the subset's
  // share not simulated (dispatch positions simulated_ctas .. subset_ctas-1; rounds: the skipped rounds of its
  // CTAs); beyond_subset_*: the rest of the grid.
  std::uint64_t skipped_warp_instructions = 0, skipped_thread_instructions = 0;
  std::uint64_t beyond_subset_warp_instructions = 0, beyond_subset_thread_instructions = 0;
  // Round sampling of a persistent kernel (KernelInfo::persistent_units; one pass of CTAs, so no waves to leave
  // out): every CTA of the share runs, its rounds [warmup + measured + 1, + skipped_rounds) left out
  // (KernelSource::skip_rounds). The window counts unit heads issued (KernelInfo::unit_head_warps per CTA and unit)
  // where waves count CTA completions; warmup_waves and measured_waves are rounds.
  bool rounds = false;
  std::uint64_t skipped_rounds = 0;  // of every CTA's whole rounds, those left out
  // The work not simulated, in the window's units: CTAs (waves) or units (rounds).
  std::uint64_t skipped_units() const noexcept {
    return rounds ? skipped_rounds * subset_ctas * unit_head_warps : subset_ctas - simulated_ctas;
  }
  std::uint32_t unit_head_warps = 1;  // rounds: KernelInfo::unit_head_warps
  bool subset() const noexcept { return subset_ctas < total_ctas; }
};

struct KernelLaunch {
  std::size_t index = 0, count = 0;  // this kernel's position in the trace, and how many there are
  const KernelInfo* info = nullptr;
  Cycle cycle = 0;                   // SM clock
  Cycle submitted = 0;               // when the host had submitted it (launch.mode's interval after the previous)
  Cycle host_wait = 0;               // SM cycles the GPU sat idle before it, waiting for that submission
  const SamplePlan* sample = nullptr;  // how the kernel is sampled (sample->active false: simulated whole)
  // The extrapolated cycles of the sampled kernels before this one: the run's time (results, timeline) is the
  // simulated cycle plus this; `cycle` and `submitted` are on the simulated clock.
  Cycle time_offset = 0;
};

struct RunProgress {
  std::size_t kernel = 0, kernels = 0;
  std::uint64_t ctas_done = 0, ctas = 0;  // of the current kernel
  Cycle cycle = 0;                        // SM clock
  std::uint64_t warp_instructions = 0;    // issued so far in the run
  // Fraction of the run done: kernels finished plus the current kernel's finished CTAs (each kernel counts alike).
  double fraction() const {
    return kernels ? (static_cast<double>(kernel) + (ctas ? static_cast<double>(ctas_done) / ctas : 0.0)) / kernels : 0.0;
  }
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void kernel_started(const KernelLaunch&) {}
  virtual void kernel_finished(const KernelLaunch&) {}  // `cycle`: the cycle it finished
  virtual void cta_started(std::size_t kernel, unsigned sm, std::uint64_t cta, Cycle) {}
  virtual void cta_finished(std::size_t kernel, unsigned sm, std::uint64_t cta, Cycle) {}
  // A sampled kernel's measured window opens (`closing` false) or closes, at `cycle` (KernelLaunch::sample).
  virtual void sample_window(const KernelLaunch&, bool /*closing*/) {}
  // Every `sim.progress_check_cycles` SM cycles.
  virtual void progress(const RunProgress&) {}
};

}  // namespace warpsim
