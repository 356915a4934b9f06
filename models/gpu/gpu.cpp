#include "models/gpu/gpu.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "models/gpu/build_context.h"
#include "models/sm/sm.h"
#include "models/sm/stall_reason.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

Schema gpu_schema() {
  Schema s("gpu", "gpu", "identity of the modelled GPU");
  s.string("name", std::nullopt, "marketing name, printed in results");
  s.string("arch", std::nullopt, "compute capability the synthesizers target (sm_80, sm_90, sm_100)");
  return s;
}

Schema clocks_schema() {
  Schema s("clocks", "clocks", "clock domains: SM (graphics), L2 + crossbar, HBM interface");
  s.quantity("sm", ParamType::Frequency, std::nullopt, "SM clock", 1e6, 1e11);
  s.quantity("l2", ParamType::Frequency, std::nullopt, "L2 and crossbar clock", 1e6, 1e11);
  s.quantity("hbm", ParamType::Frequency, std::nullopt, "HBM interface clock", 1e6, 1e11);
  return s;
}

Schema sim_schema() {
  Schema s("sim", "sim", "simulator settings (not hardware)");
  s.uint("watchdog_cycles", "cycles", 5'000'000, "SM cycles without any instruction issued or CTA finished before the run is declared stuck", 1000, ~0u);
  s.uint("progress_check_cycles", "cycles", 65536, "SM cycles between checks of the no-progress watchdog and the progress display", 1, ~0u);
  return s;
}

WARPSIM_REGISTER_SECTION("gpu", &gpu_schema, "GPU identity");
WARPSIM_REGISTER_SECTION("clocks", &clocks_schema, "clock domains");
WARPSIM_REGISTER_SECTION("sim", &sim_schema, "simulator settings");

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

}  // namespace

bool run_without_systemc(Simulation& sim, const std::function<bool()>& finished) { return sim.run(finished); }

// Hands CTAs of the current kernel to SMs breadth-first (one per SM per pass, like the hardware's CTA
// scheduler fills an empty GPU), moves to the next kernel when the last CTA finishes, and watches progress.
class CtaDispatcher final : public Component {
 public:
  CtaDispatcher(ClockDomain& domain, std::vector<StreamingMultiprocessor*> sms, const Params& sim_params,
                BuildContext& ctx)
      : Component("gpu.dispatcher", domain),
        sms_(std::move(sms)),
        ctx_(ctx),
        watchdog_cycles_(sim_params.u64("watchdog_cycles")),
        check_cycles_(sim_params.u64("progress_check_cycles")) {
    for (auto* sm : sms_) sm->on_cta_done([this](unsigned sm_index, std::uint64_t cta) {
        ++ctas_done_;
        if (on_cta_end) on_cta_end(sm_index, cta, this->domain().now());
        wake_next();
      });
  }

  std::function<void(Cycle)> on_kernel_start, on_kernel_end;
  std::function<void(unsigned sm, std::uint64_t cta, Cycle)> on_cta_start, on_cta_end;
  std::function<bool()> next_kernel;  // opens the next kernel; false when there is none
  KernelSource* kernel = nullptr;
  std::uint64_t total_ctas = 0;
  bool progress = true;
  bool done = false;
  std::function<std::uint64_t()> memory_progress;  // a count that grows while the memory system works
  std::function<bool()> memory_pending;            // the memory system has work scheduled
  std::size_t kernel_index = 0, kernel_count = 0;

  Cycle tick(Cycle now) override {
    if (!ctx_.error.empty() || stuck) return kSleep;
    if (kernel && ctas_done_ == total_ctas) {
      on_kernel_end(now);
      kernel = nullptr;
    }
    if (!kernel) {
      if (!next_kernel()) {
        done = true;
        return kSleep;
      }
      next_cta_ = ctas_done_ = 0;
      on_kernel_start(now);
      last_progress_cycle_ = now;
      last_issued_ = issued();
    }
    dispatch();
    if (now >= next_check_) check_progress(now);
    next_check_ = std::max(next_check_, now + 1);
    return std::min(next_check_, kSleep);
  }

  std::string describe_state() const override {
    if (!kernel) return {};
    return "kernel '" + kernel->info().name + "': " + std::to_string(next_cta_) + " of " + std::to_string(total_ctas) +
           " CTAs launched, " + std::to_string(ctas_done_) + " finished";
  }

 private:
  void dispatch() {
    bool launched = true;
    while (launched && next_cta_ < total_ctas) {
      launched = false;
      for (std::size_t i = 0; i < sms_.size() && next_cta_ < total_ctas; ++i) {
        StreamingMultiprocessor* sm = sms_[(rr_ + i) % sms_.size()];
        if (!sm->can_launch()) continue;
        sm->launch_cta(next_cta_, kernel->open_cta(next_cta_));
        if (on_cta_start) on_cta_start(static_cast<unsigned>((rr_ + i) % sms_.size()), next_cta_, domain().now());
        ++next_cta_;
        launched = true;
      }
      rr_ = (rr_ + 1) % sms_.size();
    }
  }

  std::uint64_t issued() const {
    std::uint64_t n = 0;
    for (auto* sm : sms_) n += sm->issued();
    return n;
  }

  void check_progress(Cycle now) {
    next_check_ = now + check_cycles_;
    const std::uint64_t n = issued();
    // Progress is an issued instruction, a finished CTA, or work done by the memory system (a slow but
    // legal memory configuration can leave every warp waiting for a long time).
    const std::uint64_t mem = memory_progress ? memory_progress() : 0;
    if (n != last_issued_ || ctas_done_ != last_ctas_done_ || mem != last_memory_progress_) {
      last_issued_ = n;
      last_ctas_done_ = ctas_done_;
      last_memory_progress_ = mem;
      last_progress_cycle_ = now;
    } else if (now - last_progress_cycle_ >= watchdog_cycles_) {
      // Work still scheduled in the memory system (e.g. one access of a very slow memory) is slow progress,
      // not a deadlock: a deadlock leaves nothing scheduled there.
      if (memory_pending && memory_pending()) {
        last_progress_cycle_ = now;
      } else {
        stuck = true;  // the run loop builds the diagnosis from every component's state
        return;
      }
    }
    if (!progress) return;
    const auto wall = std::chrono::steady_clock::now();
    if (wall - last_report_ < std::chrono::seconds(3)) return;
    if (first_report_) {  // stay quiet during the first seconds: short runs print nothing
      first_report_ = false;
      last_report_ = wall;
      return;
    }
    last_report_ = wall;
    std::fprintf(stderr, "[warpsim] kernel %zu/%zu: %3.0f%% of %llu CTAs done, %llu SM cycles, %.1f M warp-instructions\n",
                 kernel_index + 1, kernel_count, 100.0 * static_cast<double>(ctas_done_) / static_cast<double>(total_ctas),
                 static_cast<unsigned long long>(total_ctas), static_cast<unsigned long long>(now), static_cast<double>(n) / 1e6);
  }

 public:
  bool stuck = false;

 private:
  std::vector<StreamingMultiprocessor*> sms_;
  BuildContext& ctx_;
  Cycle watchdog_cycles_, check_cycles_;
  std::uint64_t next_cta_ = 0, ctas_done_ = 0, last_ctas_done_ = 0, last_issued_ = 0, last_memory_progress_ = 0;
  std::size_t rr_ = 0;
  Cycle next_check_ = 0, last_progress_cycle_ = 0;
  std::chrono::steady_clock::time_point last_report_ = std::chrono::steady_clock::now();
  bool first_report_ = true;
};

struct Gpu::Impl {
  const Config config;  // a copy: the Gpu must not depend on the lifetime of the caller's Config
  Simulation sim;
  StatsRegistry stats;
  BuildContext ctx{config, sim, stats};
  std::string name;
  std::vector<std::unique_ptr<DramChannel>> dram;
  std::vector<std::unique_ptr<L2Slice>> l2;
  std::unique_ptr<Interconnect> noc;
  std::vector<std::unique_ptr<StreamingMultiprocessor>> sms;
  std::unique_ptr<CtaDispatcher> dispatcher;
  SmLimits limits;

  explicit Impl(const Config& c) : config(c) {
    const Registry& reg = Registry::instance();
    name = config.section("gpu").str("name");
    const Params& clocks = config.section("clocks");
    ctx.sm_domain = &sim.add_domain("sm", clocks.real("sm"));
    ctx.l2_domain = &sim.add_domain("l2", clocks.real("l2"));
    ctx.hbm_domain = &sim.add_domain("hbm", clocks.real("hbm"));
    const Params& hbm = config.section("hbm");
    for (unsigned i = 0; i < hbm.u32("channels"); ++i) {
      dram.push_back(reg.create<DramChannel>("hbm", hbm, ctx, i));
      ctx.dram.push_back(dram.back().get());
    }
    const Params& l2p = config.section("l2");
    noc = reg.create<Interconnect>("noc", config.section("noc"), ctx, 0);
    ctx.noc = noc.get();
    for (unsigned i = 0; i < l2p.u32("slices"); ++i) {
      l2.push_back(reg.create<L2Slice>("l2", l2p, ctx, i));
      ctx.l2.push_back(l2.back().get());
      noc->attach_slice(i, &l2.back()->request_port());
      for (auto* ch : ctx.dram) ch->attach_slice(i, &l2.back()->dram_response_port());
    }
    const Params& smp = config.section("sm");
    limits = SmLimits::from(smp);
    std::vector<StreamingMultiprocessor*> sm_ptrs;
    for (unsigned i = 0; i < smp.u32("count"); ++i) {
      sms.push_back(reg.create<StreamingMultiprocessor>("sm", smp, ctx, i));
      sm_ptrs.push_back(sms.back().get());
    }
    dispatcher = std::make_unique<CtaDispatcher>(*ctx.sm_domain, sm_ptrs, config.section("sim"), ctx);
    dispatcher->memory_progress = [this] {
      const StatSnapshot now = stats.snapshot();
      const StatSnapshot zero(now.size(), 0);
      return stats.sum("l2", "bytes_served", zero, now) + stats.sum("hbm", "requests", zero, now);
    };
    dispatcher->memory_pending = [this] {
      return ctx.l2_domain->next_time() != kTimeNever || ctx.hbm_domain->next_time() != kTimeNever;
    };
  }

  std::string diagnosis() const {
    std::string d = "simulation stopped making progress";
    d += " (no instruction issued and no CTA finished for " +
         std::to_string(config.section("sim").u64("watchdog_cycles")) + " SM cycles). State:";
    int shown = 0;
    auto add = [&](const Component& c) {
      const std::string s = c.describe_state();
      if (s.empty() || shown >= 12) return;
      ++shown;
      d += "\n  " + c.path() + ": " + s;
    };
    add(*dispatcher);
    for (const auto& s : sms) add(*s);
    for (const auto& s : l2) add(*s);
    for (const auto& s : dram) add(*s);
    return d;
  }
};

Gpu::Gpu(const Config& config) : impl_(std::make_unique<Impl>(config)) {}
Gpu::~Gpu() = default;
const StatsRegistry& Gpu::stats() const { return impl_->stats; }
const std::string& Gpu::name() const { return impl_->name; }

namespace {

// Per-kernel metrics from the counters' differences between kernel start and end, and the config's peaks.
KernelResult summarize(const KernelInfo& info, const Occupancy& occ, const Config& cfg, const StatsRegistry& st,
                       const StatSnapshot& a, const StatSnapshot& b, Cycle start, Cycle end, const SmLimits& limits) {
  KernelResult k;
  k.name = info.name;
  k.grid = info.grid;
  k.block = info.block;
  k.registers_per_thread = info.registers_per_thread;
  k.shared_mem_bytes = info.shared_mem_bytes;
  k.ctas_per_sm = occ.ctas_per_sm;
  k.occupancy_limiter = occ.limiter;
  k.theoretical_occupancy = std::min(1.0, static_cast<double>(occ.ctas_per_sm) * info.warps_per_cta() / limits.max_warps);
  k.start_cycle = start;
  k.cycles = end - start;
  const Params& sm = cfg.section("sm");
  const double sm_hz = cfg.section("clocks").real("sm");
  const double sms = sm.u32("count");
  const double subs = sm.u32("subpartitions");
  const double cycles = std::max<double>(1.0, static_cast<double>(k.cycles));
  const double seconds = cycles / sm_hz;
  k.time_us = seconds * 1e6;
  auto sum = [&](const char* kind, const std::string& name) { return st.sum(kind, name, a, b); };
  k.warp_instructions = sum("sm", "warp_instructions");
  k.thread_instructions = sum("sm", "thread_instructions");
  k.ipc = static_cast<double>(k.warp_instructions) / sms / cycles;
  const std::uint64_t tensor_flops = sum("sm", "tensor_flops");
  k.flops = info.flops ? info.flops : tensor_flops;
  if (tensor_flops > 0) k.achieved_tflops = static_cast<double>(k.flops) / seconds / 1e12;
  k.dram_bytes_read = sum("hbm", "bytes_read");
  k.dram_bytes_written = sum("hbm", "bytes_written");
  k.achieved_dram_gbps = static_cast<double>(k.dram_bytes_read + k.dram_bytes_written) / seconds / 1e9;
  const double active = static_cast<double>(sum("sm", "active_cycles"));
  k.occupancy = active > 0 ? static_cast<double>(sum("sm", "resident_warp_cycles")) / active / limits.max_warps : 0.0;
  const double l1_reads = static_cast<double>(sum("sm", "l1_read_sectors"));
  k.l1_hit_rate = l1_reads > 0 ? static_cast<double>(sum("sm", "l1_hit_sectors")) / l1_reads : 0.0;
  const double l2_reads = static_cast<double>(sum("l2", "read_sectors"));
  k.l2_hit_rate = l2_reads > 0 ? static_cast<double>(sum("l2", "read_hit_sectors")) / l2_reads : 0.0;
  const double pipe_capacity = cycles * sms * subs;
  const Params& l1 = cfg.section("l1");
  k.utilization = {
      {"tensor", static_cast<double>(sum("sm", "pipe_busy_tensor")) / pipe_capacity},
      {"fp32", static_cast<double>(sum("sm", "pipe_busy_fp32")) / pipe_capacity},
      {"int", static_cast<double>(sum("sm", "pipe_busy_int")) / pipe_capacity},
      {"lsu", static_cast<double>(sum("sm", "lsu_busy_cycles")) / (cycles * sms)},
      {"l1", static_cast<double>(sum("sm", "l1_bytes")) / (cycles * sms * l1.u32("bandwidth"))},
      {"smem", static_cast<double>(sum("sm", "shared_bytes")) / (cycles * sms * cfg.section("smem").u32("bandwidth"))},
      {"l2", static_cast<double>(sum("l2", "bytes_served")) / seconds / cfg.section("l2").real("bandwidth")},
      {"dram", static_cast<double>(k.dram_bytes_read + k.dram_bytes_written) / seconds / cfg.section("hbm").real("bandwidth")},
  };
  for (std::size_t i = 0; i < kStallNames.size(); ++i)
    k.stalls.emplace_back(std::string(kStallNames[i]), sum("sm", std::string(kStallNames[i])));
  return k;
}

}  // namespace

RunResult Gpu::run(TraceSource& trace, const Driver& driver, const RunOptions& options) {
  Impl& g = *impl_;
  RunResult result;
  result.gpu = g.name;
  result.trace = trace.description();
  CtaDispatcher& d = *g.dispatcher;
  d.progress = options.progress;
  d.kernel_count = trace.num_kernels();
  std::unique_ptr<KernelSource> kernel;
  std::size_t next = 0;
  Occupancy occ;
  StatSnapshot at_start;
  Cycle start_cycle = 0;

  d.next_kernel = [&]() {
    if (next >= trace.num_kernels()) return false;
    kernel = trace.open_kernel(next);
    d.kernel_index = next++;
    const KernelInfo& info = kernel->info();
    occ = compute_occupancy(info, g.limits);
    if (occ.ctas_per_sm == 0) {
      g.ctx.fail("kernel '" + info.name + "' cannot run on " + g.name + ": one CTA exceeds the SM's " + occ.limiter +
                 " (block " + std::to_string(info.block.count()) + " threads, " + std::to_string(info.registers_per_thread) +
                 " registers/thread, " + std::to_string(info.shared_mem_bytes) + " B shared memory)");
      return false;
    }
    if (info.grid.count() == 0) {
      g.ctx.fail("kernel '" + info.name + "' has an empty grid");
      return false;
    }
    for (auto& sm : g.sms) sm->begin_kernel(info, occ);
    d.kernel = kernel.get();
    d.total_ctas = info.grid.count();
    return true;
  };
  d.on_kernel_start = [&](Cycle now) {
    at_start = g.stats.snapshot();
    start_cycle = now;
  };
  d.on_kernel_end = [&](Cycle now) {
    result.kernels.push_back(summarize(kernel->info(), occ, g.config, g.stats, at_start, g.stats.snapshot(), start_cycle, now, g.limits));
  };

  // CTA residency for the timeline: start recorded at launch, completed at finish.
  std::map<std::pair<unsigned, std::uint64_t>, std::size_t> open_spans;
  d.on_cta_start = [&](unsigned sm, std::uint64_t cta, Cycle now) {
    open_spans[{sm, cta}] = result.timeline.size();
    result.timeline.push_back(CtaSpan{static_cast<std::uint32_t>(d.kernel_index), sm, cta, now, now});
  };
  d.on_cta_end = [&](unsigned sm, std::uint64_t cta, Cycle now) {
    auto it = open_spans.find({sm, cta});
    if (it == open_spans.end()) return;
    result.timeline[it->second].end_cycle = now;
    open_spans.erase(it);
  };
  result.sm_clock_hz = static_cast<double>(g.ctx.sm_domain->frequency_hz());

  const auto wall_start = std::chrono::steady_clock::now();
  d.wake_at(0);
  const bool finished = driver(g.sim, [&]() { return d.done || d.stuck || !g.ctx.error.empty(); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  if (d.stuck) throw SimulationError(g.diagnosis());
  if (!g.ctx.error.empty()) throw InputError(g.ctx.error);
  if (!finished) throw SimulationError("simulation ran out of events before finishing: " + g.diagnosis());

  for (const auto& k : result.kernels) {
    result.total_cycles += k.cycles;
    result.total_time_us += k.time_us;
  }
  std::uint64_t warp_instructions = 0;
  for (const auto& k : result.kernels) warp_instructions += k.warp_instructions;
  result.sim.wall_s = wall;
  result.sim.warp_instructions_per_s = wall > 0 ? static_cast<double>(warp_instructions) / wall : 0.0;
  result.sim.peak_rss_mb = peak_rss_mb();
  result.sim.simulated_cycles = g.ctx.sm_domain->now();
  for (const auto& dom : g.sim.domains()) result.sim.domain_ticks.emplace_back(dom->name(), dom->ticks());
  return result;
}

}  // namespace warpsim
