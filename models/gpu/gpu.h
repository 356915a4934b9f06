// A whole GPU assembled from a validated Config (MGPUSim-style builder): clock domains, HBM channels, L2
// slices, the crossbar, SMs and the CTA dispatcher. run() replays every kernel of a trace source, one after
// another, and returns per-kernel results.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/simulation.h"
#include "sim/stats/stats.h"
#include "sim/trace/source.h"

namespace warpsim {

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
  std::uint64_t warp_instructions = 0;
  std::uint64_t thread_instructions = 0;
  double ipc = 0.0;                         // warp-instructions per SM per elapsed cycle (Nsight "Executed Ipc Elapsed")
  std::uint64_t flops = 0;                  // useful work (kernel info), or tensor operations counted
  std::optional<double> achieved_tflops;    // only for kernels that do matrix math
  std::uint64_t dram_bytes_read = 0, dram_bytes_written = 0;
  double achieved_dram_gbps = 0.0;
  double occupancy = 0.0;                   // achieved: resident warps per active cycle / max warps
  double l1_hit_rate = 0.0, l2_hit_rate = 0.0;
  std::vector<std::pair<std::string, double>> utilization;   // unit -> fraction of peak
  std::vector<std::pair<std::string, std::uint64_t>> stalls; // Nsight warp state -> warp-cycles
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

struct RunResult {
  std::string gpu;
  std::string trace;
  std::vector<KernelResult> kernels;
  std::uint64_t total_cycles = 0;
  double total_time_us = 0.0;
  double sm_clock_hz = 0.0;
  std::vector<CtaSpan> timeline;
  SimInfo sim;
};

struct RunOptions {
  bool progress = true;  // progress lines on stderr for runs longer than a few seconds
};

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
  const std::string& name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The plain C++ driver (no SystemC), for unit tests.
bool run_without_systemc(Simulation& sim, const std::function<bool()>& finished);

}  // namespace warpsim
