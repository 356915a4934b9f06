// A whole GPU assembled from a validated Config (MGPUSim-style builder): clock domains, then each slot's
// implementation as the config names it (address map, DRAM channels, interconnect, L2 slices, SMs), and the
// kernel scheduler. run() replays every kernel of a trace source, one after another, and returns per-kernel
// results; observers (RunObserver) see kernels, CTAs and progress as they happen.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/run_observer.h"
#include "models/gpu/speed_of_light.h"
#include "models/power/energy_model.h"
#include "sim/config/config.h"
#include "sim/core/probe.h"
#include "sim/core/simulation.h"
#include "sim/stats/stats.h"
#include "sim/trace/retarget.h"
#include "sim/trace/source.h"

namespace warpsim {

// How a kernel sampled by CTA waves or rounds (sim.sample = waves) or run on a subset of the GPU (sim.subset) was
// simulated and extrapolated: its cycles (waves, rounds), counters and energy are estimates, not simulated figures.
struct KernelSampling {
  // "waves", "rounds" (a persistent kernel's: models/gpu/kernel_scheduler.h), "sms" (SM subsetting), "sms+waves" or
  // "sms+rounds"
  std::string method = "waves";
  std::uint64_t total_ctas = 0, simulated_ctas = 0;
  std::uint64_t wave_ctas = 0;                    // CTAs the GPU holds at once for the kernel
  // CTAs to run (the subset's share; all: total_ctas) / wave_ctas; rounds: the kernel's units / its CTAs
  double waves = 0.0;
  std::uint32_t warmup_waves = 0, measured_waves = 0;  // rounds when method has "rounds"
  std::uint64_t skipped_rounds = 0;               // rounds: those every CTA left out
  // The measured window: CTAs completed in it (rounds: unit heads issued, KernelInfo::unit_head_warps per unit), its
  // SM cycles.
  std::uint64_t window_ctas = 0, window_cycles = 0;
  std::uint64_t simulated_cycles = 0;             // the sample's own cycles, start to its last CTA's end
  std::uint64_t extrapolated_cycles = 0;          // added for the CTAs not simulated, at the window's rate
  // cycles / simulated_cycles: how far the kernel's time is from what was simulated.
  double extrapolation_factor = 1.0;
  // Counters (non-gauge) grew by their window's difference times counter_factor = (CTAs to run - simulated CTAs) /
  // window_ctas; warp and thread instructions are exact instead (the CTAs not run, read from the trace).
  double counter_factor = 0.0;
  bool instructions_exact = true;
  // SM subsetting (sim.subset = subset_divisor > 1; models/gpu/gpu_subset.h): the subset ran subset_ctas of the
  // grid (those its SMs would get in the GPU's dispatch passes, waves sampled among them); the counters (instructions exact) grew by subset_factor =
  // total / subset CTAs, as did the kernel's dynamic energy; the SMs' clock energy, leakage and the board's
  // constant power grew by hardware_factor = the GPU's SMs / the subset's, the HBM background power by
  // memory_factor = the GPU's HBM channels / the subset's. The per-instance statistics are the subset's units;
  // rates and fractions stand.
  unsigned subset_divisor = 1;
  std::uint64_t subset_ctas = 0;
  double subset_factor = 1.0, hardware_factor = 1.0, memory_factor = 1.0;
  // What the simulation itself measured (not written, not cached): the energy model's inputs for the sample.
  StatReport simulated_stats;
};

struct KernelResult {
  std::string name;
  Dim3 grid, block;
  std::uint32_t registers_per_thread = 0;
  std::uint32_t shared_mem_bytes = 0;
  std::uint32_t ctas_per_sm = 0;            // theoretical, from resources
  std::string occupancy_limiter;
  double theoretical_occupancy = 0.0;
  std::uint64_t start_cycle = 0;            // SM clock
  std::uint64_t cycles = 0;                 // SM clock
  double time_us = 0.0;
  // The GPU idle before this kernel, waiting for the host to submit it (launch.mode): the previous kernel was
  // shorter than the launch interval. Not part of `cycles`, which runs from the kernel's start to its end.
  std::uint64_t launch_wait_cycles = 0;
  double launch_wait_us = 0.0;
  std::uint64_t warp_instructions = 0;
  std::uint64_t thread_instructions = 0;
  double ipc = 0.0;                         // warp-instructions per SM per elapsed cycle (Nsight "Executed Ipc Elapsed")
  std::uint64_t flops = 0;                  // useful work (kernel info), or tensor operations counted
  std::optional<double> achieved_tflops;    // only for kernels that do matrix math
  std::uint64_t dram_bytes_read = 0, dram_bytes_written = 0;
  // Modified data the kernel leaves in L2: DRAM receives it later, when it is evicted (then counted as the
  // writing kernel's successor's dram_bytes_written), as on the hardware, which does not flush L2 between kernels.
  std::uint64_t l2_dirty_bytes_at_end = 0;
  double achieved_dram_gbps = 0.0;
  double occupancy = 0.0;                   // achieved: resident warps per active cycle / max warps
  double l1_hit_rate = 0.0, l2_hit_rate = 0.0;
  std::vector<std::pair<std::string, double>> utilization;   // unit -> fraction of peak
  std::vector<std::pair<std::string, std::uint64_t>> stalls; // Nsight warp state -> warp-cycles
  SpeedOfLight speed_of_light;  // every unit against its peak, the limiter verdict, useful tensor work
  StatReport stats;  // every component's counters and metrics: totals per kind, and per instance
  // Retargeting (sim/trace/retarget.h, filled by app/run_one.cpp): the arch the kernel was captured for when
  // it is newer than this GPU's arch, run_arch (else both ""), and what was rewritten (empty when nothing was).
  std::string captured_arch, run_arch;
  std::vector<RetargetMapping> retargeted;
  // Captured instructions the trace reader ran as untimed NOPs (TraceSource::untimed; filled by app/run_one.cpp).
  std::vector<UntimedOpcode> untimed;
  std::optional<EnergyResult> energy;  // with power.enabled (models/power/energy_model.h)
  std::optional<KernelSampling> sampling;  // set when the kernel was sampled (its figures extrapolated)
};

struct SimInfo {
  std::string driver;
  std::string version;       // warpsim version and source revision
  std::string config_files;  // the config and its bases, top first
  std::string config_hash;   // FNV-1a of the resolved configuration: equal hashes, equal hardware
  double wall_s = 0.0;
  double warp_instructions_per_s = 0.0;
  double peak_rss_mb = 0.0;
  std::uint64_t simulated_cycles = 0;
  // Component ticks per clock domain: where the simulator spent its activations.
  std::vector<std::pair<std::string, std::uint64_t>> domain_ticks;
};

// One CTA's residency on an SM, for the timeline.
struct CtaSpan {
  std::uint32_t kernel = 0, sm = 0;
  std::uint64_t cta = 0;
  std::uint64_t start_cycle = 0, end_cycle = 0;  // SM clock
};

// How the host submitted the kernels, and what waiting for it cost the run.
struct LaunchSummary {
  std::string mode;                  // launch.mode: eager or graph
  double us_per_kernel = 0.0;        // its interval between two kernels' submissions
  std::uint64_t wait_cycles = 0;     // the kernels' launch_wait_cycles summed
  double wait_us = 0.0;
  std::size_t kernels_waited = 0;    // kernels that started late for want of their submission
  // The GPU sat idle waiting for the host at least as long as it ran kernels: fewer launches (a CUDA graph,
  // fusion), not a faster GPU, would shorten the run.
  bool launch_bound = false;
  std::string verdict;               // "launch-bound: ..." / "not launch-bound: ..."
};

struct RunResult {
  std::string gpu;
  std::string trace;
  std::vector<KernelResult> kernels;
  std::uint64_t total_cycles = 0;    // the kernels' cycles and the launch waits between them
  double total_time_us = 0.0;
  LaunchSummary launch;
  double sm_clock_hz = 0.0;
  SpeedOfLight speed_of_light;  // over all kernels, weighted by their cycles
  std::vector<CtaSpan> timeline;
  std::optional<PowerSummary> power;  // with power.enabled: the run's energy, power, clock policy
  SimInfo sim;
};

struct RunOptions {
  // Observers of the run (progress display, tracers), told after the built-in ones (results, timeline).
  std::vector<RunObserver*> observers;
};

// Host memory the model of a GPU will take, estimated from its resolved config before anything is built (each
// implementation reports its instances' large state, ComponentType::estimate_bytes).
struct ModelMemoryEstimate {
  struct Part {
    std::string section;  // slot, e.g. "l1"
    unsigned instances = 0;
    std::uint64_t bytes = 0;  // all instances together
  };
  std::uint64_t total_bytes = 0;
  std::vector<Part> parts;  // largest first
};
ModelMemoryEstimate estimate_model_memory(const Config& config);

class Gpu {
 public:
  // A driver runs the simulation until `finished()` or until nothing is left to do, returning finished().
  using Driver = std::function<bool(Simulation&, const std::function<bool()>&)>;

  explicit Gpu(const Config& config);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  // Throws InputError for workload problems (e.g. a kernel that does not fit on an SM) and SimulationError
  // when the simulation stops making progress (with a diagnosis).
  RunResult run(TraceSource& trace, const Driver& driver, const RunOptions& options = {});

  const StatsRegistry& stats() const;
  // Every probe point of the built GPU by name, to listen to before run().
  ProbeRegistry& probes();
  const std::string& name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warpsim
