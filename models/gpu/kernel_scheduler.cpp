#include "models/gpu/kernel_scheduler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"

namespace warpsim {
namespace {

Schema launch_schema() {
  Schema s("launch", "launch", "how the host submits kernels: the interval between two kernels' submissions");
  s.choice("mode", {"eager", "graph"}, std::string("graph"),
           "eager: one launch call per kernel from the host (PyTorch eager); graph: the kernels replayed from a CUDA graph");
  s.real("eager_us_per_kernel", "us", std::nullopt,
         "host time per kernel launched back to back (eager): the host submits kernel i+1 this long after kernel i", 0.0, 1e6);
  s.real("graph_us_per_kernel", "us", std::nullopt,
         "time per kernel node of a CUDA graph replay: the front end starts node i+1 no sooner than this after node i", 0.0, 1e6);
  return s;
}

WARPSIM_REGISTER_SECTION("launch", &launch_schema, "kernel launch overhead (eager launches or CUDA graph)");

double launch_interval_cycles(const Config& config) {
  const Params& launch = config.section("launch");
  const double us = launch.real(launch.str("mode") == "graph" ? "graph_us_per_kernel" : "eager_us_per_kernel");
  return us * 1e-6 * config.section("clocks").real("sm");
}

}  // namespace

KernelScheduler::KernelScheduler(BuildContext& ctx, std::vector<StreamingMultiprocessor*> sms, SmLimits limits,
                                 std::function<std::uint64_t()> memory_progress,
                                 std::function<bool()> memory_pending)
    : Component("kernel_scheduler", ctx.domain("sm")),
      ctx_(ctx),
      sms_(std::move(sms)),
      limits_(limits),
      memory_progress_(std::move(memory_progress)),
      memory_pending_(std::move(memory_pending)),
      watchdog_cycles_(ctx.config.section("sim").u64("watchdog_cycles")),
      check_cycles_(ctx.config.section("sim").u64("progress_check_cycles")),
      launch_interval_cycles_(launch_interval_cycles(ctx.config)),
      gpcs_(gpc_layout(ctx.config)) {
  const Params& sim = ctx.config.section("sim");
  sample_waves_ = sim.str("sample") == "waves";
  sample_warmup_waves_ = sim.u32("sample_warmup_waves");
  sample_measured_waves_ = sim.u32("sample_measured_waves");
  sample_min_waves_ = sim.u32("sample_min_waves");
  // Round sampling counts the warps' unit heads as the SMs issue them (no listener, no cost, when not sampling).
  if (sample_waves_)
    ctx.probes.listen<InstIssue>("sm[*].issue", [this](const InstIssue& e) {
      if (sample_.rounds && e.inst.pc == unit_head_pc_) unit_started(e.sm, domain().now());
    });
  ctx.publish<ClusterDirectory>("clusters", {this});
  ctx.publish<GridSync>("grid_sync", {&grid_sync_});
  for (auto* sm : sms_)
    sm->on_cta_done([this](unsigned sm_index, std::uint64_t cta) {
      ++ctas_done_;
      resident_.erase(cta);
      if (sample_.rounds) sm_rounds_[sm_index].last_done = domain().now();
      if (sample_.active && !sample_.rounds) cta_finished_sampling(domain().now());
      for (RunObserver* o : observers_) o->cta_finished(kernel_index_, sm_index, cta, domain().now());
      schedule_work(domain().now() + 1);
    });
}

void KernelScheduler::start(TraceSource& trace, std::vector<RunObserver*> observers) {
  trace_ = &trace;
  observers_ = std::move(observers);
  next_kernel_ = 0;
  done_ = stuck_ = false;
  kernel_.reset();
  work_cycles_.clear();
  run_start_ = previous_end_ = domain().now();
  time_offset_ = 0;
  waiting_for_host_ = false;
  schedule_work(domain().now());
}

void KernelScheduler::schedule_work(Cycle cycle) {
  work_cycles_.insert(cycle);
  wake_at(cycle);
}

KernelLaunch KernelScheduler::launch(Cycle now) const {
  return KernelLaunch{kernel_index_, trace_->num_kernels(), &kernel_->info(), now, submitted_cycle(kernel_index_),
                      host_wait_, &sample_, time_offset_};
}

// Rounded per kernel from the exact product, so that the rounding does not accumulate over a long trace. On the
// simulated clock: the run's time less the cycles extrapolated for sampled kernels (no earlier than the run's start).
Cycle KernelScheduler::submitted_cycle(std::size_t index) const {
  const Cycle at = static_cast<Cycle>(std::llround(static_cast<double>(index) * launch_interval_cycles_));
  return run_start_ + (at > time_offset_ ? at - time_offset_ : 0);
}

Cycle KernelScheduler::tick(Cycle now) {
  if (!ctx_.error.empty() || stuck_ || !trace_) return kSleep;
  // Kernels end and start, and CTAs are dispatched, only in the ticks that a CTA's end (or start()) asked for:
  // a watchdog tick may fall in the same cycle after the SM that finished a CTA, and acting on it there would
  // make results depend on sim.progress_check_cycles.
  bool work_due = false;
  while (!work_cycles_.empty() && *work_cycles_.begin() <= now) {
    work_cycles_.erase(work_cycles_.begin());
    work_due = true;
  }
  if (work_due && !schedule_kernels_and_ctas(now)) return kSleep;
  if (now >= next_check_) check_progress(now);
  next_check_ = std::max(next_check_, now + 1);
  return std::min(next_check_, kSleep);
}

bool KernelScheduler::schedule_kernels_and_ctas(Cycle now) {
  if (kernel_ && ctas_done_ == total_ctas_) {
    if (sample_.active || sample_.subset()) count_skipped_instructions();
    if (sample_.rounds) {
      sample_.extrapolated_cycles = rounds_extrapolated(now);
    } else if (sample_.active) {
      // The CTAs not run, at the measured window's rate.
      const double per_unit = static_cast<double>(sample_.window_end_cycle - sample_.window_begin_cycle) /
                              static_cast<double>(sample_.window_end - sample_.window_begin);
      sample_.extrapolated_cycles =
          static_cast<Cycle>(std::llround(per_unit * static_cast<double>(sample_.skipped_units())));
    }
    for (RunObserver* o : observers_) o->kernel_finished(launch(now));
    time_offset_ += sample_.active ? sample_.extrapolated_cycles : 0;
    kernel_.reset();
    previous_end_ = now;
  }
  if (!kernel_) {
    // The front end idles until the host has submitted the next kernel.
    if (next_kernel_ < trace_->num_kernels() && now < submitted_cycle(next_kernel_)) {
      waiting_for_host_ = true;
      schedule_work(submitted_cycle(next_kernel_));
      return true;
    }
    waiting_for_host_ = false;
    host_wait_ = now - previous_end_;
    if (!open_next_kernel(now)) {
      done_ = true;
      return false;
    }
    next_cta_ = ctas_done_ = 0;
    if (sample_.active && sample_.window_begin == 0) sample_.window_begin_cycle = now;  // no warm-up
    for (RunObserver* o : observers_) o->kernel_started(launch(now));
    last_progress_cycle_ = now;
    last_issued_ = issued();
  }
  dispatch();
  return true;
}

bool KernelScheduler::open_next_kernel(Cycle) {
  if (next_kernel_ >= trace_->num_kernels()) return false;
  kernel_index_ = next_kernel_++;
  std::unique_ptr<KernelSource> k = trace_->open_kernel(kernel_index_);
  const KernelInfo& info = k->info();
  occupancy_ = compute_occupancy(info, limits_);
  if (occupancy_.ctas_per_sm == 0) {
    ctx_.fail("kernel '" + info.name + "' cannot run on " + ctx_.config.section("gpu").str("name") +
              ": one CTA exceeds the SM's " + occupancy_.limiter + " (block " + std::to_string(info.block.count()) +
              " threads, " + std::to_string(info.registers_per_thread) + " registers/thread, " +
              std::to_string(info.shared_mem_bytes) + " B shared memory)");
    return false;
  }
  if (info.grid.count() == 0) {
    ctx_.fail("kernel '" + info.name + "' has an empty grid");
    return false;
  }
  if (info.cluster.count() > 1) {
    // Some GPC must hold a whole cluster, or no cluster could ever start; clusters go to the GPCs with room
    // (uneven GPCs: a 16-CTA cluster runs on the H100's 18-SM GPCs only).
    const std::uint64_t largest_gpc = gpcs_.largest_gpc();
    if (info.cluster.count() > largest_gpc * occupancy_.ctas_per_sm) {
      ctx_.fail("kernel '" + info.name + "': a cluster of " + std::to_string(info.cluster.count()) +
                " CTAs does not fit on one GPC (the largest: " + std::to_string(largest_gpc) + " SMs x " +
                std::to_string(occupancy_.ctas_per_sm) + " CTAs; noc.gpcs = " + std::to_string(gpcs_.gpcs()) + ")");
      return false;
    }
  }
  grid_sync_.clear();
  for (auto* sm : sms_) sm->begin_kernel(info, occupancy_);
  plan_sample(*k);
  total_ctas_ = sample_.simulated_ctas;
  kernel_ = std::move(k);
  return true;
}

// The CTAs the GPU holds at once: every SM full; with clusters, whole clusters per GPC.
std::uint64_t KernelScheduler::wave_capacity(const KernelInfo& info) const {
  return gpcs_.resident_ctas(occupancy_.ctas_per_sm, info.cluster.count());
}

void KernelScheduler::plan_sample(KernelSource& source) {
  const KernelInfo& info = source.info();
  sample_ = SamplePlan{};
  sample_.total_ctas = info.grid.count();
  sample_.wave_ctas = wave_capacity(info);
  sample_.subset_ctas = sample_.simulated_ctas = subset_share(info);
  if (!sample_waves_ || sample_.wave_ctas == 0) return;
  if (info.persistent_units > 0) return plan_rounds(source);
  const std::uint64_t wave = sample_.wave_ctas, total = sample_.subset_ctas;
  if (total <= std::uint64_t{sample_min_waves_} * wave) return;  // a few waves: simulated whole
  // Warm-up and measured waves, one more wave that keeps the GPU full until the window closes, and the grid's
  // partial last wave: the sample leaves out whole waves only, so it ends the way the kernel does.
  const std::uint64_t run = (std::uint64_t{sample_warmup_waves_} + sample_measured_waves_ + 1) * wave + total % wave;
  if (run >= total) return;
  sample_.active = true;
  sample_.simulated_ctas = run;
  sample_.warmup_waves = sample_warmup_waves_;
  sample_.measured_waves = sample_measured_waves_;
  sample_.window_begin = std::uint64_t{sample_warmup_waves_} * wave;
  sample_.window_end = sample_.window_begin + std::uint64_t{sample_measured_waves_} * wave;
  if (l2_footprint_) footprint_at_start_ = l2_footprint_();
}

void KernelScheduler::plan_rounds(KernelSource& source) {
  const KernelInfo& info = source.info();
  // A persistent grid the GPU (or the subset) does not hold at once runs in waves after all: simulated whole.
  if (sample_.subset_ctas > sample_.wave_ctas) return;
  const std::uint64_t rounds = info.persistent_units / info.grid.count();  // every CTA has a unit in each
  if (rounds <= sample_min_waves_) return;
  const std::uint64_t kept = std::uint64_t{sample_warmup_waves_} + sample_measured_waves_ + 1;
  if (kept >= rounds || !source.skip_rounds(kept, rounds - kept)) return;
  sample_.active = sample_.rounds = true;
  sample_.skipped_rounds = rounds - kept;
  sample_.unit_head_warps = std::max<std::uint32_t>(1, info.unit_head_warps);
  sample_.warmup_waves = sample_warmup_waves_;
  sample_.measured_waves = sample_measured_waves_;
  // From the start of round `warm-up` by every CTA (the first warm-up rounds and that round's heads issued) to that
  // of round `warm-up + measured`.
  const std::uint64_t heads_per_round = sample_.subset_ctas * sample_.unit_head_warps;
  sample_.window_begin = (std::uint64_t{sample_warmup_waves_} + 1) * heads_per_round;
  sample_.window_end = sample_.window_begin + std::uint64_t{sample_measured_waves_} * heads_per_round;
  units_started_ = 0;
  unit_head_pc_ = info.unit_head_pc;
  sm_rounds_.assign(sms_.size(), SmRounds{});
}

void KernelScheduler::unit_started(unsigned sm, Cycle now) {
  ++units_started_;
  window_edge(now, units_started_ == sample_.window_begin, units_started_ == sample_.window_end);
  // The SM's own window: its CTAs' heads of rounds `warm-up` and `warm-up + measured` (all of them).
  SmRounds& r = sm_rounds_[sm];
  // Its CTAs are all resident from the kernel's start (one pass) until their last units: counted at its first head.
  if (r.heads++ == 0) r.per_round = std::uint64_t{sms_[sm]->resident_ctas()} * sample_.unit_head_warps;
  if (r.heads == (std::uint64_t{sample_.warmup_waves} + 1) * r.per_round) r.window_begin = now;
  if (r.heads == (std::uint64_t{sample_.warmup_waves} + 1 + sample_.measured_waves) * r.per_round) {
    r.window_end = now;
    r.measured = true;
  }
}

// Every SM's CTAs run their skipped rounds at the SM's own measured rate after the sample's end on it: the kernel
// ends with the last of them. Persistent CTAs drift apart over the rounds (an SM in a smaller GPC shares its
// crossbar port with fewer), so the CTAs that finish last in the whole kernel need not be those of the sample.
Cycle KernelScheduler::rounds_extrapolated(Cycle now) const {
  // An SM whose own window did not close (none should: every CTA runs the measured rounds) takes the kernel's.
  const double kernel_per_round =
      static_cast<double>(sample_.window_end_cycle - sample_.window_begin_cycle) / sample_.measured_waves;
  Cycle end = now;
  for (const SmRounds& r : sm_rounds_) {
    if (r.heads == 0) continue;  // no CTA
    const double per_round =
        r.measured ? static_cast<double>(r.window_end - r.window_begin) / sample_.measured_waves : kernel_per_round;
    const Cycle rest = static_cast<Cycle>(std::llround(per_round * static_cast<double>(sample_.skipped_rounds)));
    end = std::max(end, r.last_done + rest);
  }
  return end - now;
}

void KernelScheduler::extend_warmup_for_l2() {
  if (!l2_footprint_ || l2_bytes_ == 0) return;
  const L2Footprint now = l2_footprint_();
  const std::uint64_t written =
      now.dirty_bytes > footprint_at_start_.dirty_bytes ? now.dirty_bytes - footprint_at_start_.dirty_bytes : 0;
  const std::uint64_t brought = now.dram_read_bytes - footprint_at_start_.dram_read_bytes + written;
  const std::uint64_t room = l2_bytes_ > footprint_at_start_.dirty_bytes ? l2_bytes_ - footprint_at_start_.dirty_bytes : 0;
  const double waves = static_cast<double>(sample_.subset_ctas) / static_cast<double>(sample_.wave_ctas);
  // Modified data evicted to DRAM before the kernel ends: the kernel's later waves differ from its first ones.
  if (brought == 0 || static_cast<double>(written) * waves <= static_cast<double>(room)) return;
  const std::uint64_t fill_waves = (l2_bytes_ + brought - 1) / brought + 1;
  if (fill_waves <= sample_.warmup_waves) return;
  const std::uint64_t wave = sample_.wave_ctas, total = sample_.subset_ctas;
  const std::uint64_t run = (fill_waves + sample_.measured_waves + 1) * wave + total % wave;
  if (run >= total) {  // no saving left: the rest of the kernel is simulated
    sample_.active = false;
    sample_.simulated_ctas = total_ctas_ = total;
    return;
  }
  sample_.warmup_waves = static_cast<std::uint32_t>(fill_waves);
  sample_.simulated_ctas = total_ctas_ = run;
  sample_.window_begin = fill_waves * wave;
  sample_.window_end = sample_.window_begin + std::uint64_t{sample_.measured_waves} * wave;
}

void KernelScheduler::cta_finished_sampling(Cycle now) {
  // The first wave's worth of CTAs done: how much of the L2 the kernel fills per wave.
  if (ctas_done_ == sample_.wave_ctas) {
    extend_warmup_for_l2();
    if (!sample_.active) return;
  }
  window_edge(now, ctas_done_ == sample_.window_begin, ctas_done_ == sample_.window_end);
}

void KernelScheduler::window_edge(Cycle now, bool opens, bool closes) {
  if (!opens && !closes) return;
  (opens ? sample_.window_begin_cycle : sample_.window_end_cycle) = now;
  const KernelLaunch l = launch(now);
  if (opens)
    for (RunObserver* o : observers_) o->sample_window(l, false);
  if (closes)
    for (RunObserver* o : observers_) o->sample_window(l, true);
}

namespace {

// The first CTA (rank 0) of cluster q, clusters numbered x fastest over the grid of clusters.
std::uint64_t cluster_first_cta(const KernelInfo& k, std::uint64_t q) {
  const std::uint64_t clusters_x = k.grid.x / k.cluster.x, clusters_y = k.grid.y / k.cluster.y;
  return (q % clusters_x) * k.cluster.x +
         k.grid.x * ((q / clusters_x % clusters_y) * k.cluster.y +
                     std::uint64_t{k.grid.y} * (q / (clusters_x * clusters_y) * k.cluster.z));
}

}  // namespace

void KernelScheduler::count_skipped_instructions() {
  // Each CTA's place in the order of dispatch: the subset's share in order, then the rest of the grid.
  const KernelInfo& k = kernel_->info();
  const std::uint32_t size = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, k.cluster.count()));
  std::vector<std::uint64_t> order(sample_.total_ctas, kNotDispatched);
  for (std::uint64_t n = 0; n < sample_.subset_ctas / size; ++n) {
    const std::uint64_t q = grid_unit(n);
    if (size == 1) {
      order[q] = n;
      continue;
    }
    const std::uint64_t first = cluster_first_cta(k, q);
    for (std::uint32_t rank = 0; rank < size; ++rank) order[cluster_peer(k, first, rank)] = n * size + rank;
  }
  std::vector<WarpInst> batch(256);
  auto count = [&](std::uint64_t cta, std::uint64_t& warp, std::uint64_t& thread) {
    const std::unique_ptr<CtaSource> source = kernel_->open_cta(cta);
    for (std::uint32_t w = 0; w < source->num_warps(); ++w) {
      const std::unique_ptr<WarpStream> stream = source->open_warp(w);
      for (std::size_t n; (n = stream->read(batch.data(), batch.size())) > 0;) {
        warp += n;
        for (std::size_t i = 0; i < n; ++i) thread += static_cast<std::uint64_t>(batch[i].active_lanes());
      }
    }
  };
  // Rounds: the share's CTAs all ran, each without its skipped rounds: what those would have issued is the CTA's
  // whole stream less the sample's.
  std::uint64_t sampled_warp = 0, sampled_thread = 0;
  if (sample_.rounds) {
    for (std::uint64_t cta = 0; cta < sample_.total_ctas; ++cta)
      if (order[cta] != kNotDispatched) count(cta, sampled_warp, sampled_thread);
    kernel_->skip_rounds(0, 0);
  }
  for (std::uint64_t cta = 0; cta < sample_.total_ctas; ++cta) {
    const bool in_subset = order[cta] != kNotDispatched;
    if (in_subset && !sample_.rounds && order[cta] < sample_.simulated_ctas) continue;  // simulated
    count(cta, in_subset ? sample_.skipped_warp_instructions : sample_.beyond_subset_warp_instructions,
          in_subset ? sample_.skipped_thread_instructions : sample_.beyond_subset_thread_instructions);
  }
  sample_.skipped_warp_instructions -= sampled_warp;
  sample_.skipped_thread_instructions -= sampled_thread;
}

std::uint64_t KernelScheduler::subset_share(const KernelInfo& info) {
  // Units: CTAs, or clusters (CUDA: a grid is whole clusters).
  const std::uint64_t cluster = std::max<std::uint64_t>(1, info.cluster.count());
  grid_units_ = info.grid.count() / cluster;
  block_units_ = std::max<std::uint64_t>(1, gpcs_.resident_ctas(1, cluster) / cluster);
  if (gpu_layout_.sms() == 0 || grid_units_ == 0) return info.grid.count();
  gpu_pass_units_ = std::max<std::uint64_t>(1, gpu_layout_.resident_ctas(1, cluster) / cluster);
  // As many blocks as the GPU makes passes over the grid (a persistent grid, one pass, is one block), each the
  // subset's pass; of the GPU's partial last pass, the subset's share of it.
  const std::uint64_t passes = (grid_units_ + gpu_pass_units_ - 1) / gpu_pass_units_;
  const std::uint64_t last_pass = grid_units_ - (passes - 1) * gpu_pass_units_;
  const std::uint64_t last_share = (last_pass * block_units_ + gpu_pass_units_ - 1) / gpu_pass_units_;
  return ((passes - 1) * block_units_ + std::min(block_units_, last_share)) * cluster;
}

std::uint64_t KernelScheduler::block_start(std::uint64_t block) const {
  // Spaced as the subset's SMs are among the GPU's (the GPU's pass of one CTA per SM), no further apart than the
  // GPU's passes of whole clusters, so the last block ends inside the grid.
  const std::uint64_t by_sms =
      static_cast<std::uint64_t>(static_cast<unsigned __int128>(block) * block_units_ * gpu_layout_.sms() / sms_.size());
  return std::min(by_sms, block * gpu_pass_units_);
}

std::uint64_t KernelScheduler::grid_unit(std::uint64_t n) const {
  if (gpu_layout_.sms() == 0) return n;
  return block_start(n / block_units_) + n % block_units_;
}

void KernelScheduler::launch_on(std::size_t s, std::uint64_t cta) {
  sms_[s]->launch_cta(cta, kernel_->open_cta(cta));
  resident_[cta] = sms_[s];
  for (RunObserver* o : observers_) o->cta_started(kernel_index_, static_cast<unsigned>(s), cta, domain().now());
}

// Breadth-first, one CTA per SM per pass, as the hardware's CTA scheduler fills an empty GPU.
void KernelScheduler::dispatch() {
  if (kernel_->info().cluster.count() > 1) return dispatch_clusters();
  bool launched = true;
  while (launched && next_cta_ < total_ctas_) {
    launched = false;
    for (std::size_t i = 0; i < sms_.size() && next_cta_ < total_ctas_; ++i) {
      const std::size_t s = (rr_ + i) % sms_.size();
      StreamingMultiprocessor* sm = sms_[s];
      if (!sm->can_launch()) continue;
      launch_on(s, grid_unit(next_cta_));
      ++next_cta_;
      launched = true;
    }
    rr_ = (rr_ + 1) % sms_.size();
  }
}

// Clusters in order (x fastest over the grid of clusters), each onto the first GPC, round robin, with room for all
// of its CTAs; within the GPC its CTAs go breadth-first over the SMs with room. next_cta_ counts clusters' CTAs.
void KernelScheduler::dispatch_clusters() {
  const KernelInfo& k = kernel_->info();
  const std::uint32_t size = static_cast<std::uint32_t>(k.cluster.count());
  auto room = [&](std::size_t s) -> std::uint32_t {
    const std::uint32_t resident = sms_[s]->resident_ctas();
    return resident < occupancy_.ctas_per_sm ? occupancy_.ctas_per_sm - resident : 0;
  };
  bool launched = true;
  while (launched && next_cta_ < total_ctas_) {
    launched = false;
    for (unsigned i = 0; i < gpcs_.gpcs() && next_cta_ < total_ctas_; ++i) {
      const unsigned g = static_cast<unsigned>((rr_ + i) % gpcs_.gpcs());
      const std::vector<unsigned>& gpc = gpcs_.sms_of(g);
      std::uint64_t free_slots = 0;
      for (unsigned s : gpc) free_slots += room(s);
      if (free_slots < size) continue;
      const std::uint64_t first = cluster_first_cta(k, grid_unit(next_cta_ / size));
      std::uint32_t rank = 0;
      while (rank < size)
        for (std::size_t j = 0; j < gpc.size() && rank < size; ++j)
          if (room(gpc[j]) > 0) launch_on(gpc[j], cluster_peer(k, first, rank++));
      next_cta_ += size;
      launched = true;
    }
    rr_ = (rr_ + 1) % gpcs_.gpcs();
  }
}

std::uint64_t KernelScheduler::issued() const {
  std::uint64_t n = 0;
  for (auto* sm : sms_) n += sm->issued();
  return n;
}

Cycle KernelScheduler::last_known_completion() const {
  Cycle last = 0;
  for (auto* sm : sms_) last = std::max(last, sm->last_known_completion());
  return last;
}

void KernelScheduler::check_progress(Cycle now) {
  next_check_ = now + check_cycles_;
  const std::uint64_t n = issued();
  // Progress is an issued instruction, a finished CTA, or work done by the memory system (a slow but legal
  // memory configuration can leave every warp waiting for a long time).
  const std::uint64_t mem = memory_progress_ ? memory_progress_() : 0;
  // Waiting for the host's next submission is progress too (it comes at a known cycle).
  if (n != last_issued_ || ctas_done_ != last_ctas_done_ || mem != last_memory_progress_ || waiting_for_host_) {
    last_issued_ = n;
    last_ctas_done_ = ctas_done_;
    last_memory_progress_ = mem;
    last_progress_cycle_ = now;
  } else if (now >= last_progress_cycle_ + watchdog_cycles_) {
    // Work still scheduled in the memory system (e.g. one access of a very slow memory) is slow progress, not a
    // deadlock: a deadlock leaves nothing scheduled there.
    if (memory_pending_ && memory_pending_()) {
      last_progress_cycle_ = now;
    } else if (const Cycle completion = last_known_completion(); completion > now) {
      // An instruction with a long but known latency (a legal MMA can take ~10^11 cycles) completes then: that
      // is progress. No checks in between, where nothing can happen but such completions.
      last_progress_cycle_ = completion;
      next_check_ = std::max(next_check_, completion);
    } else {
      stuck_ = true;  // the run loop builds the diagnosis from every component's state
      return;
    }
  }
  const RunProgress p{kernel_index_, trace_->num_kernels(), ctas_done_, total_ctas_, now, n};
  for (RunObserver* o : observers_) o->progress(p);
}

std::string KernelScheduler::describe_state() const {
  if (waiting_for_host_) return "waiting for the host to submit kernel " + std::to_string(next_kernel_);
  if (!kernel_) return {};
  const std::string sample =
      sample_.active || sample_.subset() ? " (a sample of " + std::to_string(sample_.total_ctas) + ")" : std::string();
  return "kernel '" + kernel_->info().name + "': " + std::to_string(next_cta_) + " of " + std::to_string(total_ctas_) +
         " CTAs launched" + sample + ", " + std::to_string(ctas_done_) + " finished";
}

}  // namespace warpsim
