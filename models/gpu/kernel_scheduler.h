// The GPU's front end: takes the kernels of a trace one after another, hands each kernel's CTAs to SMs as they
// have room, and watches that the run makes progress. A kernel can start only once the host has submitted it:
// the host submits kernel i at i launch intervals after the first (config `launch`: eager launches or a CUDA
// graph), so kernels longer than the interval hide it and shorter ones leave the GPU idle, launch-bound. What happens around it (results, timeline, progress
// display) hangs off RunObserver.
//
// CTA-wave sampling (sim.sample = waves): a kernel of more than sim.sample_min_waves waves (a wave: the CTAs the
// GPU holds at once) runs only its first (warm-up + measured + 1) waves plus its last partial wave's CTA count;
// dispatch then stops and the resident CTAs finish as at a kernel's end, so the next kernel starts on a drained
// memory system exactly as after a kernel of that many CTAs. The observers get the measured window (from the
// completion of warm-up waves' worth of CTAs to that of warm-up + measured waves' worth, the GPU full throughout)
// and extrapolate the CTAs not run (models/gpu/gpu.cpp). A kernel that writes more than the L2 holds (a large GEMM's
// output) runs slower once the L2 starts evicting its modified lines to DRAM: its warm-up lasts, beyond
// sim.sample_warmup_waves, until the data it brought into the L2 (DRAM reads and modified bytes, measured over the
// first wave) has filled the L2's capacity once, plus one wave; a kernel whose sample would then be the whole grid is
// simulated whole.
//
// A persistent kernel (KernelInfo::persistent_units: one pass of CTAs, each looping over units) is sampled by rounds
// instead when it has more than sim.sample_min_waves whole rounds and its source can skip rounds: every CTA runs its
// first (warm-up + measured + 1) rounds and its last partial one, the rounds between left out
// (KernelSource::skip_rounds); the window runs from the start of round `warm-up` to that of round `warm-up +
// measured` (counted as the CTAs' unit heads issue: the slowest CTA's) gives the counters' rate, and each SM's CTAs
// run the rounds left out at that SM's own rate, measured over the same rounds (rounds_extrapolated). Its warm-up is
// not lengthened for the L2: the CTAs open with the skip already set.

#pragma once

#include <functional>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "models/gpu/run_observer.h"
#include "sim/slots/cluster.h"
#include "sim/slots/gpc_layout.h"
#include "sim/slots/grid_sync.h"
#include "sim/slots/sm.h"
#include "sim/core/component.h"
#include "sim/trace/source.h"

namespace warpsim {

class BuildContext;

// Kernels with thread-block clusters: a cluster's CTAs start together on SMs of one GPC (GPCs of whole TPCs,
// sim/slots/gpc_layout.h, as the hierarchical interconnect places them; a GPU whose config names no GPCs is one),
// and only when that GPC has room for all of them. The scheduler is the cluster directory (slot "clusters").
class KernelScheduler final : public Component, public ClusterDirectory {
 public:
  // `memory_progress`: a count that grows while the memory system works; `memory_pending`: it has work scheduled.
  KernelScheduler(BuildContext& ctx, std::vector<StreamingMultiprocessor*> sms, SmLimits limits,
                  std::function<std::uint64_t()> memory_progress, std::function<bool()> memory_pending);

  // What CTA-wave sampling needs of the L2 (sim.sample = waves): `footprint()` the bytes read from DRAM so far (a
  // count) and the modified bytes the L2 holds now (a level); `l2_bytes` its capacity.
  struct L2Footprint {
    std::uint64_t dram_read_bytes = 0, dirty_bytes = 0;
  };
  void set_l2_footprint(std::function<L2Footprint()> footprint, std::uint64_t l2_bytes) {
    l2_footprint_ = std::move(footprint);
    l2_bytes_ = l2_bytes;
  }

  // SM subsetting (sim.subset; models/gpu/gpu_subset.h): these SMs stand for the GPU laid out as `gpu`, and each
  // kernel runs its share of the grid (subset_share), evenly spaced over the grid (grid_unit). Grid-wide semaphores
  // are off then (sim/slots/grid_sync.h): a wait may count on CTAs the subset does not run.
  void set_subset_of(GpcLayout gpu) {
    gpu_layout_ = std::move(gpu);
    grid_sync_.set_enabled(gpu_layout_.sms() == 0);
  }

  // Starts replaying `trace` at the current cycle; observers are told of everything that happens.
  void start(TraceSource& trace, std::vector<RunObserver*> observers);
  bool done() const noexcept { return done_; }
  bool stuck() const noexcept { return stuck_; }
  const Occupancy& occupancy() const noexcept { return occupancy_; }

  Cycle tick(Cycle now) override;
  std::string describe_state() const override;

  // ClusterDirectory
  const KernelInfo& kernel() const override { return kernel_->info(); }
  StreamingMultiprocessor* sm_of_cta(std::uint64_t cta) const override {
    const auto it = resident_.find(cta);
    return it == resident_.end() ? nullptr : it->second;
  }

 private:
  // Asks for the kernel and CTA work (schedule_kernels_and_ctas) to be done at `cycle`.
  void schedule_work(Cycle cycle);
  // Ends a finished kernel, opens the next, dispatches CTAs; false when the trace is done (or failed).
  bool schedule_kernels_and_ctas(Cycle now);
  bool open_next_kernel(Cycle now);
  void dispatch();
  void dispatch_clusters();
  void launch_on(std::size_t sm_index, std::uint64_t cta);
  std::uint64_t issued() const;
  Cycle last_known_completion() const;
  void check_progress(Cycle now);
  KernelLaunch launch(Cycle now) const;
  // sim.sample: how the kernel just opened (`source`) is sampled (sample_.active false: whole).
  void plan_sample(KernelSource& source);
  void plan_rounds(KernelSource& source);
  // Round sampling: a warp of a CTA on SM `sm` issued its unit-head instruction (KernelInfo::unit_head_pc).
  void unit_started(unsigned sm, Cycle now);
  // Round sampling, as the sample ends at `now`: the cycles the rounds left out add.
  Cycle rounds_extrapolated(Cycle now) const;
  // The window opens or closes at `now`: observers told.
  void window_edge(Cycle now, bool opens, bool closes);
  std::uint64_t wave_capacity(const KernelInfo& info) const;
  // The kernel's CTAs on a subset of the GPU (all of them on the whole GPU), in whole clusters: those the subset's
  // SMs would receive as the first of the GPU's SMs. The GPU dispatches breadth-first, one CTA per SM per pass
  // (with clusters: as many whole clusters as its GPCs hold at one CTA per SM), so of each of the GPU's passes the
  // subset runs the first of its own pass's units. So the subset's concurrent CTAs are neighbours as the GPU's are
  // (a GEMM's tiles that share operands, a grid-stride loop's adjacent chunks), its passes step through the grid
  // as the GPU's do (a persistent grid, one GPU pass, is one subset pass too), and a grid whose parts differ
  // (torch.cat's grid.y: one input each) is sampled across all of them.
  std::uint64_t subset_share(const KernelInfo& info);
  // The grid's unit (CTA, or cluster when the kernel has clusters) that the subset runs n-th (n on the whole GPU).
  std::uint64_t grid_unit(std::uint64_t n) const;
  std::uint64_t block_start(std::uint64_t block) const;  // the grid unit where the subset's block-th pass starts
  // Counts what the CTAs not simulated would issue, from the trace: those of the subset's share past the sample, and
  // the rest of the grid.
  void count_skipped_instructions();
  void cta_finished_sampling(Cycle now);
  // After the first wave: a kernel whose writes would overflow the L2 warms up until its footprint has filled it.
  void extend_warmup_for_l2();
  // SM cycle at which the host has submitted kernel `index` (the first at the run's start).
  Cycle submitted_cycle(std::size_t index) const;

  BuildContext& ctx_;
  std::vector<StreamingMultiprocessor*> sms_;
  SmLimits limits_;
  std::function<std::uint64_t()> memory_progress_;
  std::function<bool()> memory_pending_;
  Cycle watchdog_cycles_, check_cycles_;
  double launch_interval_cycles_;  // SM cycles between the host's submissions of two kernels (launch.mode's cost)
  // CTA-wave sampling (sim.sample, sim.sample_*: models/gpu/gpu.cpp declares them)
  bool sample_waves_ = false;
  std::uint32_t sample_warmup_waves_ = 0, sample_measured_waves_ = 0, sample_min_waves_ = 0;
  SamplePlan sample_;
  GpcLayout gpu_layout_;  // SM subsetting: the whole GPU's SMs and GPCs (no SMs: these SMs are the whole GPU)
  GridSync grid_sync_;          // the running kernel's semaphore arrivals (slot "grid_sync")
  // The kernel's units (CTAs or clusters), and those of one dispatch pass (one CTA per SM) of the subset and the GPU.
  std::uint64_t grid_units_ = 0, block_units_ = 1, gpu_pass_units_ = 1;
  static constexpr std::uint64_t kNotDispatched = ~std::uint64_t{0};
  std::function<L2Footprint()> l2_footprint_;
  std::uint64_t l2_bytes_ = 0;
  L2Footprint footprint_at_start_;  // at the sampled kernel's start
  std::uint64_t units_started_ = 0;  // round sampling: unit heads issued in the kernel so far
  std::uint32_t unit_head_pc_ = 0;
  struct SmRounds {  // round sampling, per SM: its heads (per round: its CTAs'), its own window, its last CTA's end
    std::uint64_t heads = 0, per_round = 0;
    Cycle window_begin = 0, window_end = 0, last_done = 0;
    bool measured = false;
  };
  std::vector<SmRounds> sm_rounds_;

  TraceSource* trace_ = nullptr;
  std::vector<RunObserver*> observers_;
  std::unique_ptr<KernelSource> kernel_;
  Occupancy occupancy_;
  std::size_t next_kernel_ = 0, kernel_index_ = 0;
  std::uint64_t total_ctas_ = 0, next_cta_ = 0, ctas_done_ = 0;  // total_ctas_: the CTAs to run (a sample's, if sampled)
  std::size_t rr_ = 0;
  Cycle run_start_ = 0, previous_end_ = 0;  // the run's first cycle; when the last kernel finished (or the run began)
  Cycle host_wait_ = 0;                      // the current kernel's cycles of GPU idle waiting for its submission
  // Extrapolated cycles of the sampled kernels so far: the run's time is ahead of the simulated clock by this much,
  // and the host's submissions (on the run's time) come that much earlier on the simulated clock.
  Cycle time_offset_ = 0;
  bool waiting_for_host_ = false;
  GpcLayout gpcs_;  // which SMs share a GPC (clusters are co-scheduled on one)
  std::unordered_map<std::uint64_t, StreamingMultiprocessor*> resident_;  // running CTAs of the kernel, by id
  bool done_ = false, stuck_ = false;
  std::set<Cycle> work_cycles_;  // when schedule_kernels_and_ctas was asked for and has not run yet
  // watchdog
  Cycle next_check_ = 0, last_progress_cycle_ = 0;
  std::uint64_t last_issued_ = 0, last_ctas_done_ = 0, last_memory_progress_ = 0;
};

}  // namespace warpsim
