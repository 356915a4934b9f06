// The SM core (implementation `subpartitioned` of slot `sm`): sub-partitions (sm.subpartitions), each with a
// warp scheduler (a registered policy, models/sm/scheduler/), a register scoreboard and execution pipes
// (models/sm/exec/); CTA residency, barriers per id, cp.async groups and a drain at EXIT. Memory instructions go
// to the memory pipeline (models/sm/memory/), which reports back when their data is complete. Event-driven
// inside: a warp's earliest issue cycle is computed when its state changes, and the SM is ticked only in cycles
// where something can happen.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/slots/build_context.h"
#include "models/sm/core/warp.h"
#include "models/sm/exec/pipes.h"
#include "models/sm/fetch/instruction_fetch.h"
#include "models/sm/memory/memory_pipeline.h"
#include "models/sm/scheduler/warp_scheduler.h"
#include "sim/slots/cluster.h"
#include "sim/slots/grid_sync.h"
#include "sim/slots/sm.h"
#include "models/sm/stall_reason.h"
#include "sim/core/error.h"
#include "sim/core/text.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

class SubpartitionedSm final : public StreamingMultiprocessor, private MemoryPipelineClient {
 public:
  // Every hardware number is required: it comes from the GPU's config, where its source is named.
  static Schema schema() {
    Schema s("sm", "subpartitioned", "streaming multiprocessor: sub-partitions with warp schedulers, scoreboard, pipes; LSU with L1 and shared memory");
    const auto req = std::nullopt;
    s.uint("count", "SMs", req, "number of SMs", 1, 4096).unit_count();
    s.uint("subpartitions", "", req, "processing blocks per SM, each with its own scheduler and pipes", 1, 16);
    s.uint("max_warps", "warps", req, "resident warps per SM", 1, 1024);
    s.uint("max_threads", "threads", req, "resident threads per SM", 32, 65536);
    s.uint("max_ctas", "CTAs", req, "resident CTAs per SM", 1, 1024);
    s.uint("registers", "registers", req, "32-bit registers per SM", 1024, 1 << 24);
    s.uint("register_alloc_unit", "registers", req, "per-warp register allocation granularity", 1, 65536);
    s.uint("max_registers_per_thread", "registers", req, "most registers one thread may use", 1, 255);
    s.quantity("shared_memory", ParamType::Size, req, "shared memory per SM usable by CTAs", 0, 1ull << 30);
    s.quantity("shared_memory_per_cta", ParamType::Size, req, "largest shared-memory allocation of one CTA", 0, 1ull << 30);
    s.quantity("cta_reserved_shared_memory", ParamType::Size, req, "shared memory the system reserves per CTA", 0, 1ull << 20);
    s.uint("lsu_queue_depth", "instructions", req, "memory instructions that can wait for the LSU per SM (MIO queue depth)", 1, 4096);
    // Built when a config is loaded, after every policy has registered itself.
    std::string policies;
    for (const auto& p : scheduler_policies()) policies += (policies.empty() ? "" : ", ") + p.name + " (" + p.description + ")";
    s.choice("scheduler.policy", scheduler_policy_names(), req, "warp scheduling policy: " + policies);
    ExecutionTiming::declare(s);
    InstructionFetch::declare(s);
    return s;
  }

  // The per-warp state (fetch buffer, scoreboard) of every warp slot; its L1 reports its own.
  static std::uint64_t estimate_bytes(const Params& p, const Config&) {
    return std::uint64_t{p.u32("max_warps")} * sizeof(Warp) + std::uint64_t{p.u32("max_ctas")} * sizeof(Cta);
  }

  SubpartitionedSm(BuildContext& ctx, const Params& p, unsigned index)
      : StreamingMultiprocessor("sm[" + std::to_string(index) + "]", ctx.domain("sm")),
        index_(index),
        ctx_(ctx),
        timing_(ctx),
        limits_(SmLimits::from(p)),
        watchdog_cycles_(ctx.config.section("sim").u64("watchdog_cycles")) {
    subpartitions_ = p.u32("subpartitions");
    const std::string policy = p.str("scheduler.policy");
    if (!make_scheduler_policy(policy))  // the schema's choice list prevents this unless a policy unregistered
      p.fail("scheduler.policy", "unknown policy '" + policy + "'; known: " + join_names(scheduler_policy_names()));
    timing_.read(p);
    fetch_.read(p, subpartitions_);
    mem_ = std::make_unique<MemoryPipeline>(*this, ctx, p, index, static_cast<MemoryPipelineClient&>(*this));
    warps_.resize(limits_.max_warps);  // never resized again: the sub-partitions' candidate views point into it
    subs_.resize(subpartitions_);
    for (auto& sp : subs_) {
      sp.pipe_free.fill(0);
      sp.policy = make_scheduler_policy(policy);
      sp.candidates.emplace(sp.warps, warps_.data(), sp.pipe_free);
    }
    for (std::uint32_t i = 0; i < warps_.size(); ++i) free_warps_.push_back(static_cast<std::uint32_t>(warps_.size()) - 1 - i);
    register_stats(ctx.stats);
    ctx.probes.add(path() + ".issue", issue_probe_);
  }

  // ---- StreamingMultiprocessor -------------------------------------------------------------------------------
  void begin_kernel(const KernelInfo& k, const Occupancy& occ) override {
    timing_.begin_kernel(k, subpartitions_);
    fetch_.begin_kernel();
    // Shared memory and L1 share one SRAM: L1 keeps what the resident CTAs' shared memory leaves.
    mem_->begin_kernel(std::uint64_t{occ.ctas_per_sm} * occ.shared_memory_per_cta);
    max_ctas_ = occ.ctas_per_sm;
    kernel_ = &k;
  }

  bool can_launch() const override { return resident_ctas_ < max_ctas_; }
  std::uint32_t resident_ctas() const override { return resident_ctas_; }
  std::uint64_t issued() const override { return warp_instructions_; }

  void launch_cta(std::uint64_t cta_id, std::unique_ptr<CtaSource> src) override {
    const Cycle now = domain().now();
    std::uint32_t slot = 0;
    while (slot < ctas_.size() && ctas_[slot].active) ++slot;
    if (slot == ctas_.size()) ctas_.emplace_back();
    Cta& cta = ctas_[slot];
    cta = Cta{};
    cta.active = true;
    cta.id = cta_id;
    const std::uint32_t nwarps = src->num_warps();
    WARPSIM_ASSERT(nwarps <= free_warps_.size(), "CTA launched without free warp slots");
    account_residency(now);
    for (std::uint32_t w = 0; w < nwarps; ++w) {
      const std::uint32_t ws = free_warps_.back();
      free_warps_.pop_back();
      Warp& warp = warps_[ws];
      warp.reset();
      warp.cta = slot;
      warp.registers = kernel_->registers_per_thread;
      warp.sp = w % static_cast<std::uint32_t>(subs_.size());
      warp.stream = src->open_warp(w);
      warp.acct_since = now;
      warp.ready_cycle = now;
      cta.warps.push_back(ws);
      subs_[w % subs_.size()].warps.push_back(ws);
      evaluate(warp, now);
      wake_sub(subs_[w % subs_.size()], now);
    }
    cta.live_warps = nwarps;
    cta.source = std::move(src);
    resident_warps_ += nwarps;
    ++resident_ctas_;
    ++ctas_launched_;
    wake_at(now + 1);
  }

  // ---- Component ---------------------------------------------------------------------------------------------
  Cycle tick(Cycle now) override {
    mem_->advance(now, [this](const MemRecord& r, Cycle t) { finish_memory(r, t); });
    if (!tcgen05_commits_.empty()) deliver_tcgen05_commits(now);
    for (auto& sp : subs_)
      if (sp.next <= now) schedule(sp, now);
    Cycle next = kSleep;
    for (const auto& sp : subs_) next = std::min(next, sp.next);
    for (const auto& commit : tcgen05_commits_) next = std::min(next, commit.at);
    next = std::min(next, mem_->next_event());
    return next <= now ? now + 1 : next;
  }

  Cycle last_known_completion() const override {
    Cycle last = 0;
    for (const auto& commit : tcgen05_commits_) last = std::max(last, commit.at);
    for (const auto& sp : subs_) {
      for (Cycle t : sp.pipe_free) last = std::max(last, t);
      for (std::uint32_t ws : sp.warps) {
        const Warp& w = warps_[ws];
        if (w.block == Block::None) last = std::max(last, w.ready_cycle);
        last = std::max(last, w.tcgen05_done);
        for (Cycle t : w.reg_ready)
          if (t != kPending) last = std::max(last, t);
      }
    }
    return last;
  }

  std::string describe_state() const override {
    if (!resident_ctas_) return {};
    // Warps by state, and the instruction the first warp in each state is stuck at.
    std::array<int, 8> count{};
    std::array<std::string, 8> example;
    for (const auto& sp : subs_)
      for (std::uint32_t ws : sp.warps) {
        const Warp& w = warps_[ws];
        const auto b = static_cast<std::size_t>(w.block);
        if (count[b]++ == 0) example[b] = waiting_at(w);
      }
    std::string s = std::to_string(resident_ctas_) + " CTAs resident;";
    for (std::size_t b = 0; b < count.size(); ++b)
      if (count[b]) s += " " + std::to_string(count[b]) + " warps " + block_name(static_cast<Block>(b)) +
                         (example[b].empty() ? "" : " (e.g. at " + example[b] + ")") + ";";
    return s + " " + mem_->describe_state();
  }

 private:
  struct SubPartition {
    std::vector<std::uint32_t> warps;  // warp slots in age order
    PipeFreeTimes pipe_free{};
    std::unique_ptr<WarpSchedulerPolicy> policy;  // one instance per sub-partition: it keeps its own state
    std::optional<IssueCandidates> candidates;    // what `policy` sees (refers to this sub-partition's members)
    Cycle next = kSleep;
  };

  void register_stats(StatsRegistry& stats) {
    StatGroup g(stats, path(), "sm");
    g.add("warp_instructions", "warp-instructions", "warp-instructions issued", warp_instructions_)
        .add("thread_instructions", "thread-instructions", "active lanes of issued instructions", thread_instructions_);
    timing_.add_stats(g);
    g.add("active_cycles", "cycles", "cycles with at least one resident warp", active_cycles_)
        .add("resident_warp_cycles", "warp-cycles", "sum over cycles of resident warps (occupancy numerator)", resident_warp_cycles_)
        .add("ctas_launched", "CTAs", "CTAs launched", ctas_launched_)
        .add("barrier_arrivals", "arrivals", "warp arrivals at named barriers (BAR.SYNC and BAR.ARV)", barrier_arrivals_)
        .add("barrier_arrive_only", "arrivals", "arrivals without waiting (BAR.ARV, bar.arrive)", barrier_arrive_only_)
        .add("barrier_phases", "phases", "named-barrier phases completed (barrier releases)", barrier_phases_)
        .add("mbarrier_arrivals", "arrivals", "mbarrier arrivals (mbarrier.arrive.expect_tx)", mbarrier_arrivals_)
        .add("mbarrier_tx_bytes", "bytes", "transaction bytes asynchronous copies delivered to mbarriers", mbarrier_bytes_)
        .add("mbarrier_phases", "phases", "mbarrier phases completed", mbarrier_phases_)
        .add("mbarrier_remote_arrivals", "arrivals", "arrivals on mbarriers of other CTAs of the cluster",
             mbarrier_remote_arrivals_)
        .add("setmaxnreg", "instructions", "setmaxnreg (USETMAXREG) instructions: registers moved between warps",
             setmaxnreg_)
        .add("tcgen05_mmas", "instructions", "tcgen05.mma (UTCMMA) instructions run on the SM's tensor core", tcgen05_mmas_)
        .add("tcgen05_commits", "commits", "tcgen05.commit (UTCBAR) arrivals issued", tcgen05_commits_issued_)
        .add("semaphore_arrivals", "arrivals",
             "REDs and ATOMGs of one thread (arrivals on grid-wide semaphores in global memory)", semaphore_arrivals_)
        .add("spin_polls", "polls",
             "spin-wait polls (LDG with a wait count) that found too few arrivals and were issued again", spin_polls_);
    mem_->add_stats(g);
    if (fetch_.enabled()) fetch_.add_stats(g);
    const double subpartition_cycles_per_s = static_cast<double>(domain().frequency_hz()) * subpartitions_;
    for (std::size_t i = 0; i < kPipeNames.size(); ++i) {
      const std::string pipe = kPipeNames[i];
      g.add("pipe_busy_" + pipe, "cycles", "sub-partition cycles the " + pipe + " pipe was busy", pipe_busy_[i])
          .utilization(pipe + "_utilization", "pipe_busy_" + pipe, subpartition_cycles_per_s,
                       "busy cycles of the " + pipe + " pipes against sub-partition cycles (sm__pipe_" + pipe + "_cycles_active)");
    }
    for (std::size_t i = 0; i < kStallNames.size(); ++i)
      g.add(std::string(kStallNames[i]), "warp-cycles", "warp-cycles in state " + std::string(kStallNames[i]), stalls_[i]);
  }

  // ---- warp state --------------------------------------------------------------------------------------------
  // What a stuck warp waits at, for diagnoses: its barrier and the arrivals so far (the BAR has already been
  // consumed, so the head instruction would be the one after it), else its head instruction ("" at the end).
  std::string waiting_at(const Warp& w) const {
    if (w.block == Block::Barrier) {
      const Cta& cta = ctas_[w.cta];
      const std::uint32_t expected = cta.barrier_expected[w.barrier];
      return "BAR id " + std::to_string(w.barrier) + ": " + std::to_string(cta.barrier_arrived[w.barrier]) + " of " +
             (expected ? std::to_string(expected) + " warps (bar.sync count " + std::to_string(expected * kWarpSize) +
                             " threads)"
                       : std::to_string(cta.live_warps) + " warps") +
             " arrived";
    }
    if (w.block == Block::Mbarrier && w.pos < w.len) {
      const WarpInst& in = w.buf[w.pos];
      const Mbarrier& m = ctas_[w.cta].mbarriers[in.group];
      return "mbarrier " + std::to_string(in.group) + " parity " + std::to_string(in.aux) + ": " +
             std::to_string(m.completed_phases) + " phases completed, " + std::to_string(m.pending_arrivals) +
             " arrivals and " + std::to_string(m.pending_bytes) + " transaction bytes pending" +
             (m.initialised ? "" : " (never initialised: no MBARRIER_INIT)");
    }
    if (w.pos < w.len) return std::string(opcode_info(w.buf[w.pos].op).name) + " pc=" + std::to_string(w.buf[w.pos].pc);
    return {};
  }

  static const char* block_name(Block b) {
    switch (b) {
      case Block::None: return "ready or waiting on a fixed latency";
      case Block::MemDep: return "waiting for memory data";
      case Block::Barrier: return "waiting at barrier";
      case Block::DepBar: return "waiting for cp.async groups";
      case Block::Drain: return "draining at EXIT (memory operations in flight)";
      case Block::Exited: return "exited";
      case Block::Mbarrier: return "waiting for an mbarrier phase";
      case Block::Registers: return "waiting for registers (setmaxnreg.inc)";
    }
    return "?";
  }

  // Stall accounting: each warp's state holds from acct_since until the next change; changes happen at issue,
  // at scheduler ticks and at wake-up events, so idle cycles cost nothing to account.
  void close_interval(Warp& w, Cycle t) {
    if (t > w.acct_since) {
      stalls_[static_cast<std::size_t>(w.acct_reason)] += t - w.acct_since;
      w.acct_since = t;
    }
  }
  void set_reason(Warp& w, Cycle t, StallReason r) {
    close_interval(w, t);
    w.acct_reason = r;
  }
  static bool is_dependency(StallReason r) {
    return r == StallReason::Wait || r == StallReason::LongScoreboard || r == StallReason::ShortScoreboard ||
           r == StallReason::Drain || r == StallReason::Gmma || r == StallReason::NoInstruction;
  }
  // A warp whose operands became ready at ready_cycle, in a stretch where its sub-partition was not ticked
  // because nothing could issue: from ready_cycle on it was held back by a busy pipe.
  void settle_dependency(Warp& w) {
    if (is_dependency(w.acct_reason) && w.ready_cycle > w.acct_since) {
      close_interval(w, w.ready_cycle);
      w.acct_reason = throttle_reason(w);
    }
  }

  // Head instruction, refilling the fetch buffer from the trace; nullptr at the end of the stream.
  const WarpInst* head(Warp& w) {
    if (w.pos == w.len) {
      if (w.stream_end) return nullptr;
      w.len = static_cast<std::uint32_t>(w.stream->read(w.buf.data(), w.buf.size()));
      w.pos = 0;
      if (w.len == 0) {
        w.stream_end = true;
        return nullptr;
      }
    }
    return &w.buf[w.pos];
  }

  bool depbar_satisfied(Warp& w, std::uint32_t allowed) {
    while (!w.groups.empty() && w.groups.front() == 0) {
      w.groups.pop_front();
      ++w.groups_retired;
    }
    if (w.groups.size() <= allowed) return true;
    for (std::size_t i = 0; i + allowed < w.groups.size(); ++i)
      if (w.groups[i] != 0) return false;
    return true;
  }

  bool pipe_busy(const Warp& w, Cycle t) const {
    return w.head_pipe != Pipe::None && subs_[w.sp].pipe_free[static_cast<std::size_t>(w.head_pipe)] > t;
  }

  // Computes when the head instruction can issue, from time `earliest` on, and labels the wait.
  void evaluate(Warp& w, Cycle earliest) {
    const WarpInst* in = head(w);
    w.head_pipe = in ? timing_.pipe(in->op) : Pipe::None;
    w.head_ldst = w.head_pipe == Pipe::Ldst;
    if (in && fetch_.enabled()) {
      // The fetch of a new line starts when the warp reaches it, whatever else the warp waits for.
      const std::uint64_t line = fetch_.line_of(in->pc);
      if (line != w.fetch_line) {
        w.fetch_line = line;
        w.fetch_ready = fetch_.fetch(w.sp, line, earliest);
      }
    }
    if (!in || in->op == Opcode::EXIT) {
      evaluate_exit(w, earliest);
      return;
    }
    if (in->op == Opcode::USETMAXREG && in->active_mask != 0 && !registers_available(w, *in)) {
      w.block = Block::Registers;
      set_reason(w, earliest, StallReason::Misc);
      fail_if_registers_never_come(w);
      return;
    }
    if (in->op == Opcode::DEPBAR && !depbar_satisfied(w, in->aux)) {
      w.block = Block::DepBar;
      set_reason(w, earliest, StallReason::LongScoreboard);
      return;
    }
    Cycle ready = std::max(earliest, w.fetch_ready);
    StallReason why = ready > earliest ? StallReason::NoInstruction : StallReason::Wait;
    auto check = [&](std::uint16_t r) {
      if (r >= kRegs - 1) return true;  // kNoReg or RZ
      if (w.reg_ready[r] == kPending) {
        why = w.reg_reason[r];
        return false;
      }
      if (w.reg_ready[r] > ready) {
        ready = w.reg_ready[r];
        why = w.reg_reason[r];
      }
      return true;
    };
    bool known = true;
    if (in->op == Opcode::HGMMA) {
      // Asynchronous: HGMMAs into the same accumulator are chained inside the tensor pipe (in order), so only
      // operands that are not its accumulator (A from registers) are waited for; ordering against other writers
      // of the accumulator is the program's wgmma.fence (WARPGROUP_ARRIVE).
      for (int i = 0; i < in->num_src && known; ++i)
        if (std::find(in->dst.begin(), in->dst.begin() + in->num_dst, in->src[i]) == in->dst.begin() + in->num_dst)
          known = check(in->src[i]);
    } else if (in->op == Opcode::WARPGROUP_ARRIVE) {
      // wgmma.fence: the warp's register writes by other instructions complete first; HGMMAs still executing
      // do not hold it (a pipelined main loop fences while the previous k-tile's MMAs run).
      for (int r = 0; r < kRegs - 1 && known; ++r)
        if (w.reg_reason[r] != StallReason::Gmma) known = check(static_cast<std::uint16_t>(r));
    } else if (in->op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT && in->active_mask != 0) {
      // mbarrier.try_wait.parity P: done once the phase of parity P has completed, i.e. the completed phases'
      // count has the other parity (a fresh barrier counts as having completed the phase of parity 1).
      // Predicated off (no active lane), it waits for nothing.
      const Mbarrier& m = ctas_[w.cta].mbarriers[in->group];
      if ((m.completed_phases & 1u) == in->aux) {
        w.block = Block::Mbarrier;
        set_reason(w, earliest, StallReason::LongScoreboard);
        return;
      }
      if (m.last_completion > ready) {
        ready = m.last_completion;
        why = StallReason::LongScoreboard;
      }
    } else if (in->op == Opcode::WARPGROUP_DEPBAR) {
      // wgmma.wait_group N: until at most N committed groups are executing (completion times known at issue).
      while (!w.wgmma_groups.empty() && w.wgmma_groups.front() <= earliest) w.wgmma_groups.pop_front();
      if (w.wgmma_groups.size() > in->aux) {
        ready = w.wgmma_groups[w.wgmma_groups.size() - 1 - in->aux];
        why = StallReason::Gmma;
      }
    } else {
      for (int i = 0; i < in->num_src && known; ++i) known = check(in->src[i]);
      // Write after write: a fixed-latency pipe's result only has to land after the register's pending write, as
      // the in-order pipeline guarantees without a stall (a compiler's ISETPs into one predicate, back to back);
      // results of unknown time (memory) and of the tensor pipe are waited for.
      const Pipe pipe = w.head_pipe;
      const bool fixed = pipe == Pipe::Int || pipe == Pipe::Fp32 || pipe == Pipe::Fp64 || pipe == Pipe::Sfu ||
                         pipe == Pipe::Branch;
      for (int i = 0; i < in->num_dst && known; ++i) {
        const std::uint16_t r = in->dst[i];
        if (!fixed || r >= kRegs - 1 || w.reg_ready[r] == kPending) {
          known = check(r);
          continue;
        }
        const Cycle lands_after = w.reg_ready[r] + 1, latency = timing_.fixed_latency(in->op);
        if (lands_after > ready + latency) {
          ready = lands_after - latency;
          why = w.reg_reason[r];
        }
      }
    }
    if (!known) {
      w.block = Block::MemDep;
      set_reason(w, earliest, why);
      return;
    }
    w.block = Block::None;
    w.ready_cycle = ready;
    w.dep_reason = why;
    StallReason label = StallReason::NotSelected;
    if (ready > earliest) label = why;
    else if (pipe_busy(w, earliest)) label = throttle_reason(w);
    set_reason(w, earliest, label);
  }

  // EXIT (or the end of the stream) retires only when the warp's memory operations have completed and its
  // last results are written, as the hardware drains a warp before freeing it.
  void evaluate_exit(Warp& w, Cycle earliest) {
    bool async_pending = w.open_group != 0;
    for (std::uint32_t g : w.groups) async_pending |= g != 0;
    if (w.loads_in_flight || w.stores_in_flight || w.bulk_copies_in_flight || async_pending) {
      w.block = Block::Drain;
      set_reason(w, earliest, StallReason::Drain);
      return;
    }
    // Its tcgen05.mmas complete first (the program waits for them through an mbarrier; a stream that does not is
    // held here, as the hardware does not free a CTA with tensor-core work in flight).
    Cycle ready = std::max({earliest, w.fetch_ready, w.tcgen05_done});
    for (Cycle r : w.reg_ready) ready = std::max(ready, r);
    w.block = Block::None;
    w.ready_cycle = ready;
    w.dep_reason = StallReason::Drain;
    set_reason(w, earliest, ready > earliest ? StallReason::Drain : StallReason::NotSelected);
  }

  void wake_sub(SubPartition& sp, Cycle at) {
    sp.next = std::min(sp.next, at);
    wake_at(std::max(at, domain().now() + 1));
  }
  SubPartition& sub_of(std::uint32_t warp_slot) { return subs_[warps_[warp_slot].sp]; }
  void unblock(std::uint32_t warp_slot, Cycle t) {
    Warp& w = warps_[warp_slot];
    evaluate(w, t);
    wake_sub(sub_of(warp_slot), std::max(t, w.ready_cycle));
  }

  // ---- issue -------------------------------------------------------------------------------------------------
  Cycle issue_time(const SubPartition& sp, const Warp& w) const { return earliest_issue(w, sp.pipe_free); }

  // Inlined into tick() as it was before policies were separate files: a call per decision costs ~1% of a run.
  [[gnu::always_inline]] inline void schedule(SubPartition& sp, Cycle now) {
    sp.next = kSleep;
    if (sp.warps.empty()) return;
    const std::uint32_t pick = sp.policy->pick(sp.candidates->at(now, mem_->has_room()));
    const auto pipe_free_before = sp.pipe_free;
    if (pick != kNoWarp) issue(sp, pick, now);
    // Account this cycle for the others and find when this sub-partition next has something to do.
    const bool lsu_room = mem_->has_room();
    for (std::uint32_t ws : sp.warps) {
      Warp& w = warps_[ws];
      if (w.block != Block::None || ws == pick) continue;
      const bool waits_for_lsu = w.head_ldst && !lsu_room;
      const Cycle t = issue_time(sp, w);
      if (w.ready_cycle <= now) {  // operands ready: a busy pipe, a full LSU queue, or another warp won
        settle_dependency(w);
        const bool pipe_was_busy =
            w.head_pipe != Pipe::None && pipe_free_before[static_cast<std::size_t>(w.head_pipe)] > now;
        StallReason r = StallReason::NotSelected;
        if (waits_for_lsu || pipe_was_busy) r = throttle_reason(w);
        set_reason(w, now, r);
        // From the next cycle on (until this sub-partition runs again) it waits for its pipe, if busy.
        if (!waits_for_lsu) set_reason(w, now + 1, pipe_busy(w, now + 1) ? throttle_reason(w) : StallReason::NotSelected);
      }
      if (!waits_for_lsu) sp.next = std::min(sp.next, std::max(t, now + 1));  // else lsu_has_room_again wakes us
    }
    if (pick != kNoWarp && warps_[pick].block == Block::None)
      sp.next = std::min(sp.next, std::max(issue_time(sp, warps_[pick]), now + 1));
    // Remove warps that exited this cycle.
    const std::size_t before = sp.warps.size();
    sp.warps.erase(std::remove_if(sp.warps.begin(), sp.warps.end(), [&](std::uint32_t ws) { return warps_[ws].block == Block::Exited; }), sp.warps.end());
    if (sp.warps.size() != before) sp.policy->warps_removed(sp.warps.size());
  }

  // Held back by a busy unit: Nsight calls it mio_throttle / lg_throttle for the memory pipe (shared and
  // global/local instructions), math_pipe_throttle for the others.
  StallReason throttle_reason(const Warp& w) const {
    if (!w.head_ldst) return StallReason::MathPipeThrottle;
    return w.buf[w.pos].space == MemSpace::Shared ? StallReason::MioThrottle : StallReason::LgThrottle;
  }

  void issue(SubPartition& sp, std::uint32_t ws, Cycle now) {
    Warp& w = warps_[ws];
    const WarpInst* in = head(w);
    if (in && in->op == Opcode::USETMAXREG && in->active_mask != 0 && !registers_available(w, *in)) {
      evaluate(w, now);  // another warp took the released registers first: it waits again (stall_misc), no issue
      return;
    }
    settle_dependency(w);
    set_reason(w, now, StallReason::Selected);
    set_reason(w, now + 1, StallReason::Wait);
    if (!in) {
      exit_warp(ws, now);
      return;
    }
    ++warp_instructions_;
    thread_instructions_ += static_cast<std::uint64_t>(in->active_lanes());
    if (issue_probe_.active()) issue_probe_.notify(InstIssue{*in, index_});
    const OpClass cls = op_class(in->op);
    const Pipe pipe = timing_.pipe(in->op);
    Cycle result = now + 1;
    StallReason result_reason = StallReason::Wait;
    if (pipe != Pipe::None) {
      const std::size_t pi = static_cast<std::size_t>(pipe);
      Cycle interval = 0, latency = 0;
      timing_.timing(*in, pipe, w.sp, interval, latency);
      sp.pipe_free[pi] = now + interval;
      pipe_busy_[pi] += interval;
      result = now + latency;
      if (cls == OpClass::Sfu) result_reason = StallReason::ShortScoreboard;
    }
    switch (cls) {
      case OpClass::Ldst:
        if (in->op == Opcode::LDG && in->aux != 0 && in->active_mask != 0 && !semaphore_reached(w, *in, now)) {
          // A spin-wait poll that finds too few arrivals: the load goes to memory and the warp polls again once
          // its value is back (the destination register is pending until then), as `while (ld(flag) < n)` does.
          ++spin_polls_;
          issue_memory(w, ws, *in, now);
          evaluate(w, now + 1);
          return;
        }
        // One thread's atomic on a word: an arrival on a grid-wide semaphore.
        if ((in->op == Opcode::RED || in->op == Opcode::ATOMG) && in->active_lanes() == 1) {
          grid_sync().arrive(in->lane_address(__builtin_ctz(in->active_mask)), now);
          ++semaphore_arrivals_;
        }
        issue_memory(w, ws, *in, now);
        break;
      case OpClass::Sync:
        if (in->op == Opcode::BAR) {
          ++w.pos;
          arrive_barrier(ws, *in, now);
          return;
        }
        // bar.arrive: no wait, the warp goes on below. Predicated off (no active lane), it does not arrive.
        if (in->op == Opcode::BAR_ARV && in->active_mask != 0) arrive_barrier(ws, *in, now);
        if (in->op == Opcode::LDGDEPBAR) {
          w.groups.push_back(w.open_group);
          w.open_group = 0;
        }
        // A predicated-off init or arrive (no active lane, e.g. the non-elected warps of a producer) does nothing.
        if ((in->op == Opcode::MBARRIER_INIT || in->op == Opcode::SYNCS_ARRIVE_TRANS64) && in->active_mask != 0)
          mbarrier_op(w, *in, now);
        if (in->op == Opcode::WARPGROUP_COMMIT) w.commit_wgmma_group(now);
        if (in->op == Opcode::UTCBAR && in->active_mask != 0) commit_tcgen05(w, *in, now);
        if (in->op == Opcode::USETMAXREG && in->active_mask != 0) set_max_registers(w, *in, now);
        if (in->op == Opcode::LDTM) {
          require_tcgen05("an LDTM (tcgen05.ld)");
          write_destinations(w, *in, now + timing_.tmem_load_latency(), StallReason::ShortScoreboard);
        }
        if (in->op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT && in->active_mask != 0 &&
            !ctas_[w.cta].mbarriers[in->group].initialised)
          fail_uninitialised_mbarrier(w.cta, in->group, "SYNCS_PHASECHK_TRANS64_TRYWAIT (mbarrier.try_wait) on");
        break;
      case OpClass::Exit:
        ++w.pos;
        exit_warp(ws, now);
        return;
      default:
        if (in->op == Opcode::UTCMMA) {
          if (in->active_mask != 0) issue_tcgen05_mma(w, *in, now);
          break;
        }
        if (in->op == Opcode::HGMMA) {  // asynchronous: its group's completion is what WARPGROUP_DEPBAR waits for
          result_reason = StallReason::Gmma;
          w.wgmma_open_done = std::max(w.wgmma_open_done, result);
        }
        write_destinations(w, *in, result, result_reason);
        break;
    }
    ++w.pos;
    evaluate(w, now + 1);
  }

  // ---- grid-wide semaphores (sim/slots/grid_sync.h) ----------------------------------------------------------
  GridSync& grid_sync() {
    if (!grid_sync_) grid_sync_ = &ctx_.get<GridSync>("grid_sync");  // published by the scheduler, built after us
    return *grid_sync_;
  }
  // Whether the spin-wait poll `in` (LDG, aux = arrivals awaited) issued now finds its arrivals. A wait that has
  // seen no new arrival for sim.watchdog_cycles is a deadlock (the CTAs it counts on never arrive): an input error
  // naming the word, rather than polling forever (polls keep the memory system busy, so the scheduler's watchdog
  // would see progress).
  bool semaphore_reached(Warp& w, const WarpInst& in, Cycle now) {
    GridSync& sync = grid_sync();
    const std::uint64_t word = in.lane_address(__builtin_ctz(in.active_mask));
    const GridSync::Seen seen = sync.arrivals_before(word, now);
    if (!sync.enabled() || seen.count >= in.aux) {
      w.spin_since = kSleep;
      return true;
    }
    if (w.spin_since == kSleep) w.spin_since = now;
    const Cycle quiet_since = std::max(w.spin_since, seen.last);
    if (now - quiet_since > watchdog_cycles_)
      ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(ctas_[w.cta].id) + ", pc " +
                std::to_string(in.pc) + ": a spin-wait on global word " + text::hex(word) + " waits for " +
                std::to_string(in.aux) + " arrivals and has seen " + std::to_string(seen.count) + ", none for " +
                std::to_string(now - quiet_since) + " cycles (sim.watchdog_cycles " + std::to_string(watchdog_cycles_) +
                "): the CTAs it counts on never arrive (arrivals are REDs and ATOMGs of one thread on that word, "
                "in the same kernel)");
    return false;
  }

  // The scoreboard: `in`'s destination registers (RZ aside) are ready at `at` (kPending: when memory says), and a
  // reader waiting for them until then is in state `reason`.
  void write_destinations(Warp& w, const WarpInst& in, Cycle at, StallReason reason) {
    for (int i = 0; i < in.num_dst; ++i)
      if (in.dst[i] < kRegs - 1) {
        w.reg_ready[in.dst[i]] = at;
        w.reg_reason[in.dst[i]] = reason;
      }
  }

  // Whether `in` accesses another cluster CTA's shared memory (an LDS/STS with the CTA's bit in its cluster mask:
  // distributed shared memory); its own rank's bit is its own shared memory.
  bool remote_shared(const Warp& w, const WarpInst& in) {
    const std::uint32_t mask = in.cluster_cta_mask();
    if (in.space != MemSpace::Shared || mask == 0 || in.active_mask == 0) return false;
    const std::uint64_t own = ctas_[w.cta].id;
    const auto rank = static_cast<std::uint32_t>(__builtin_ctz(mask));
    std::string why;
    if (rank >= kernel_->cluster.count())
      why = "names rank " + std::to_string(rank) + " beyond its cluster of " + std::to_string(kernel_->cluster.count()) +
            " CTAs";
    else if (!mem_->has_distributed_shared_memory())
      why = "is to another CTA's shared memory, but this GPU has no distributed shared memory (smem.remote_latency "
            "or smem.remote_bytes_per_cycle is 0)";
    if (!why.empty()) {
      ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(own) + ": " +
                std::string(opcode_info(in.op).name) + " at pc " + std::to_string(in.pc) + " " + why);
      return false;
    }
    return rank != cluster_rank(*kernel_, own);
  }

  // ---- memory instructions: the scoreboard side ----------------------------------------------------------------
  // Every record is completed exactly once, so the warp's in-flight counts are raised here unconditionally and
  // lowered in finish_memory.
  void issue_memory(Warp& w, std::uint32_t ws, const WarpInst& in, Cycle now) {
    const MemKind kind = mem_->issue(ws, in, w.open_group_seq(), now, remote_shared(w, in));
    if (kind == MemKind::Store || kind == MemKind::SharedStore) ++w.stores_in_flight;
    if (kind == MemKind::AsyncCopy) ++w.open_group;
    if (kind == MemKind::BulkCopy) ++w.bulk_copies_in_flight;
    if (writes_registers(kind)) {
      write_destinations(w, in, kPending,
                         kind == MemKind::SharedLoad ? StallReason::ShortScoreboard : StallReason::LongScoreboard);
      ++w.loads_in_flight;
    }
  }

  // The memory pipeline has all data of record `r` at cycle `t`.
  void finish_memory(const MemRecord& r, Cycle t) {
    Warp& w = warps_[r.warp];
    switch (r.kind) {
      case MemKind::Load:
      case MemKind::SharedLoad:
      case MemKind::Atomic:
        --w.loads_in_flight;
        for (std::uint16_t d : r.dst)
          if (d < kRegs - 1) w.reg_ready[d] = t;
        break;
      case MemKind::Store:
      case MemKind::SharedStore:
        --w.stores_in_flight;
        break;
      case MemKind::AsyncCopy: {
        if (r.group == w.open_group_seq()) --w.open_group;
        else --w.groups[r.group - w.groups_retired];
        break;
      }
      case MemKind::BulkCopy:
        --w.bulk_copies_in_flight;
        break;
    }
    if (w.block == Block::MemDep || w.block == Block::DepBar || w.block == Block::Drain) unblock(r.warp, t);
  }

  // MemoryPipelineClient
  void lsu_has_room_again(Cycle at) override {
    for (auto& sp : subs_) wake_sub(sp, at);
  }
  // An asynchronous copy (TMA) delivered `bytes` for mbarrier `mbarrier` of the issuing warp's CTA at `at`.
  void mbarrier_transaction(std::uint32_t warp_slot, std::uint64_t mbarrier, std::uint32_t bytes, Cycle at) override {
    add_transaction_bytes(warps_[warp_slot].cta, static_cast<std::uint32_t>(mbarrier % kMbarriers), bytes, at);
  }
  std::uint64_t cta_of_warp(std::uint32_t warp_slot) const override { return ctas_[warps_[warp_slot].cta].id; }
  void add_transaction_bytes(std::uint32_t cta_slot, std::uint32_t id, std::uint32_t bytes, Cycle at) {
    Mbarrier& m = ctas_[cta_slot].mbarriers[id];
    if (!m.initialised)
      fail_uninitialised_mbarrier(cta_slot, id, "a UTMALDG (TMA copy) delivered " + std::to_string(bytes) + " bytes to");
    mbarrier_bytes_ += bytes;
    m.pending_bytes -= bytes;
    complete_mbarrier_phase_if_done(cta_slot, id, at);
  }

  // ---- mbarriers (the CTA's transaction barriers in shared memory) ----------------------------------------------
  void mbarrier_op(Warp& w, const WarpInst& in, Cycle now) {
    Mbarrier& m = ctas_[w.cta].mbarriers[in.group];
    if (in.op == Opcode::MBARRIER_INIT) {
      m = Mbarrier{};
      m.initialised = true;
      m.arrivals_per_phase = m.pending_arrivals = in.aux;
      return;
    }
    arrive_masked(w.cta, in.group, in.aux, in.cluster_cta_mask(), now + 1, "SYNCS_ARRIVE_TRANS64");
  }

  // An arrival (announcing `tx` bytes) on mbarrier `id` of CTA slot `cta_slot`, or with a mask on those of the CTAs
  // of its cluster in the mask (mapa + mbarrier.arrive.cluster): the peers' through the cluster directory, at the
  // same cycle (no latency of its own in this model).
  void arrive_masked(std::uint32_t cta_slot, std::uint32_t id, std::uint32_t tx, std::uint32_t mask, Cycle at,
                     const char* what) {
    if (!mask) {
      arrive(cta_slot, id, tx, at);
      return;
    }
    if (!clusters_) clusters_ = &ctx_.get<ClusterDirectory>("clusters");
    const std::uint64_t own = ctas_[cta_slot].id;
    if (mask >> kernel_->cluster.count()) {
      ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(own) + ": " + what + "'s CTA mask " +
                std::to_string(mask) + " names ranks beyond its cluster of " + std::to_string(kernel_->cluster.count()) +
                " CTAs");
      return;
    }
    for (std::uint32_t rank = 0; rank < kernel_->cluster.count(); ++rank) {
      if (!(mask >> rank & 1u)) continue;
      const std::uint64_t peer = cluster_peer(*kernel_, own, rank);
      if (peer == own) {
        arrive(cta_slot, id, tx, at);
      } else if (StreamingMultiprocessor* sm = clusters_->sm_of_cta(peer)) {
        ++mbarrier_remote_arrivals_;
        sm->cluster_arrive(peer, id, at);
      } else {
        ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(own) + ": " + what + " names CTA " +
                  std::to_string(peer) + " of its cluster, which is not running");
      }
    }
  }

  // ---- setmaxnreg: registers moved between the CTA's warps ----------------------------------------------------
  // The CTA keeps its launch allocation; a dec releases the difference to the CTA, an inc takes its growth from what
  // was released (waiting, stall_misc, until enough is). A warp that exits releases its registers too.
  bool registers_available(const Warp& w, const WarpInst& in) const {
    if (in.group == 0 || in.aux <= w.registers) return true;
    return std::uint64_t{in.aux - w.registers} * kWarpSize <= ctas_[w.cta].free_registers;
  }
  void set_max_registers(Warp& w, const WarpInst& in, Cycle now) {
    Cta& cta = ctas_[w.cta];
    const bool inc = in.group == 1;
    if (inc ? in.aux < w.registers : in.aux > w.registers) {
      ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(cta.id) + ": setmaxnreg." +
                (inc ? "inc" : "dec") + " to " + std::to_string(in.aux) + " registers from " +
                std::to_string(w.registers) + " (an inc must not lower the count, a dec must not raise it)");
      return;
    }
    ++setmaxnreg_;
    if (in.aux > w.registers) cta.free_registers -= std::uint64_t{in.aux - w.registers} * kWarpSize;
    else release_registers(w.cta, std::uint64_t{w.registers - in.aux} * kWarpSize, now);
    w.registers = in.aux;
  }
  void release_registers(std::uint32_t cta_slot, std::uint64_t registers, Cycle now) {
    Cta& cta = ctas_[cta_slot];
    cta.free_registers += registers;
    if (registers == 0) return;
    for (std::uint32_t ws : cta.warps)
      if (warps_[ws].block == Block::Registers) unblock(ws, now + 1);
  }
  // An inc that waits while no live warp of its CTA could still release registers never proceeds: the program asks
  // for more than the CTA was launched with.
  void fail_if_registers_never_come(const Warp& w) {
    const Cta& cta = ctas_[w.cta];
    if (cta.live_warps == 0) return;  // still being launched: its other warps are not there yet
    for (std::uint32_t ws : cta.warps) {
      const Warp& other = warps_[ws];
      if (other.block != Block::Registers && other.block != Block::Exited) return;
      // A waiting warp whose (smaller) increase the released registers cover goes on, and may release more later.
      if (other.block == Block::Registers && &other != &w && registers_available(other, other.buf[other.pos])) return;
    }
    const WarpInst& in = w.buf[w.pos];
    ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(cta.id) + ": setmaxnreg.inc to " +
              std::to_string(in.aux) + " registers per thread (from " + std::to_string(w.registers) + ") waits for " +
              std::to_string(std::uint64_t{in.aux - w.registers} * kWarpSize) + " registers, but the CTA has " +
              std::to_string(cta.free_registers) + " released and no warp left that could release more (its launch "
              "allocation, " + std::to_string(kernel_->registers_per_thread) + " per thread, is too small)");
  }

  // ---- tcgen05: the SM's tensor core and its commits ----------------------------------------------------------
  // A tcgen05.mma queues at the SM's tensor core: it starts when the MMAs issued before it (by any warp of the SM)
  // are done and occupies every sub-partition's tensor pipe for its work at the SM's rate.
  void issue_tcgen05_mma(Warp& w, const WarpInst& in, Cycle now) {
    double occupancy = 0;
    Cycle latency = 0;
    timing_.tcgen05_timing(in, occupancy, latency);
    const double start = std::max(static_cast<double>(now + 1), tensor_core_free_);
    tensor_core_free_ = start + occupancy;
    w.tcgen05_done = std::max(w.tcgen05_done, static_cast<Cycle>(std::ceil(tensor_core_free_ - 1e-9)) + latency);
    const auto before = static_cast<std::uint64_t>(tcgen05_busy_);
    tcgen05_busy_ += occupancy * subpartitions_;
    pipe_busy_[static_cast<std::size_t>(Pipe::Tensor)] += static_cast<std::uint64_t>(tcgen05_busy_) - before;
    ++tcgen05_mmas_;
  }
  // A tcgen05 instruction (`what`) on a GPU without tcgen05 tensor cores and tensor memory fails the run.
  void require_tcgen05(const char* what) {
    if (!timing_.has_tcgen05())
      ctx_.fail("kernel '" + kernel_->name + "' has " + what + ", but this GPU has no tcgen05 tensor cores or tensor "
                "memory (sm.tensor.tcgen05.latency is 0)");
  }
  // tcgen05.commit: the arrivals happen when the warp's MMAs so far are done (at once if they are).
  void commit_tcgen05(Warp& w, const WarpInst& in, Cycle now) {
    require_tcgen05("a UTCBAR (tcgen05.commit)");
    ++tcgen05_commits_issued_;
    const Cycle at = std::max(now + 1, w.tcgen05_done);
    tcgen05_commits_.push_back(Tcgen05Commit{at, w.cta, ctas_[w.cta].id, in.group, in.cluster_cta_mask()});
    wake_at(at);
  }
  void deliver_tcgen05_commits(Cycle now) {
    for (std::size_t i = 0; i < tcgen05_commits_.size();) {
      const Tcgen05Commit c = tcgen05_commits_[i];
      if (c.at > now) {
        ++i;
        continue;
      }
      tcgen05_commits_[i] = tcgen05_commits_.back();
      tcgen05_commits_.pop_back();
      if (ctas_[c.cta_slot].active && ctas_[c.cta_slot].id == c.cta_id)
        arrive_masked(c.cta_slot, c.mbarrier, 0, c.mask, now, "UTCBAR (tcgen05.commit)");
    }
  }

  // One arrival on mbarrier `id` of CTA slot `cta_slot`, announcing `tx_bytes` more transaction bytes.
  void arrive(std::uint32_t cta_slot, std::uint32_t id, std::uint32_t tx_bytes, Cycle at) {
    Mbarrier& m = ctas_[cta_slot].mbarriers[id];
    if (!m.initialised || m.pending_arrivals == 0) {
      ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(ctas_[cta_slot].id) +
                ": an arrival (SYNCS_ARRIVE_TRANS64 or UTCBAR) on mbarrier " + std::to_string(id) +
                (m.initialised ? ", which has no arrivals pending" : ", which no MBARRIER_INIT initialised"));
      return;
    }
    ++mbarrier_arrivals_;
    --m.pending_arrivals;
    m.pending_bytes += tx_bytes;
    complete_mbarrier_phase_if_done(cta_slot, id, at);
  }

  // The slot of resident CTA `cta` (its linear id); a peer that names a CTA not here is a programming error of
  // the directory.
  std::uint32_t slot_of_cta(std::uint64_t cta) const {
    for (std::uint32_t slot = 0; slot < ctas_.size(); ++slot)
      if (ctas_[slot].active && ctas_[slot].id == cta) return slot;
    WARPSIM_ASSERT(false, "cluster peer CTA " + std::to_string(cta) + " is not resident on " + path());
    return 0;
  }

  void cluster_transaction_bytes(std::uint64_t cta, std::uint32_t mbarrier, std::uint32_t bytes, Cycle at) override {
    const std::uint32_t slot = slot_of_cta(cta);
    add_transaction_bytes(slot, mbarrier % kMbarriers, bytes, at);
  }
  void cluster_arrive(std::uint64_t cta, std::uint32_t mbarrier, Cycle at) override {
    arrive(slot_of_cta(cta), mbarrier % kMbarriers, 0, at);
  }

  // An mbarrier used before any MBARRIER_INIT: the program is wrong (its phases and byte counts are undefined).
  void fail_uninitialised_mbarrier(std::uint32_t cta_slot, std::uint32_t id, const std::string& what) {
    ctx_.fail("kernel '" + kernel_->name + "', CTA " + std::to_string(ctas_[cta_slot].id) + ": " + what + " mbarrier " +
              std::to_string(id) + ", which no MBARRIER_INIT initialised");
  }

  void complete_mbarrier_phase_if_done(std::uint32_t cta_slot, std::uint32_t id, Cycle at) {
    Cta& cta = ctas_[cta_slot];
    Mbarrier& m = cta.mbarriers[id];
    if (!m.initialised || m.pending_arrivals != 0 || m.pending_bytes != 0) return;
    ++m.completed_phases;
    ++mbarrier_phases_;
    m.last_completion = std::max(m.last_completion, at);
    m.pending_arrivals = m.arrivals_per_phase;
    for (std::uint32_t ws : cta.warps)
      if (warps_[ws].block == Block::Mbarrier && warps_[ws].buf[warps_[ws].pos].group == id) unblock(ws, at);
  }

  // ---- barriers and CTA residency -----------------------------------------------------------------------------
  // BAR (bar.sync) and BAR_ARV (bar.arrive) arrive on barrier `aux` of the warp's CTA; BAR then waits for the
  // phase to complete, BAR_ARV goes on. A phase expects `group` warps (PTX's thread count / 32), counting both
  // kinds of arrival, whatever other warps do (an exited warp does not lower it); `group` 0 (bar.sync without a
  // count, __syncthreads) expects every live warp of the CTA, so a warp that exits no longer holds it. The
  // first arrival of a phase fixes its count: another count in the same phase is an error, as PTX leaves it
  // undefined.
  void arrive_barrier(std::uint32_t ws, const WarpInst& in, Cycle now) {
    Warp& w = warps_[ws];
    Cta& cta = ctas_[w.cta];
    std::uint32_t id = in.aux;
    const std::uint32_t expected = in.group;
    const char* name = in.op == Opcode::BAR_ARV ? "BAR_ARV (bar.arrive)" : "BAR (bar.sync)";
    auto where = [&] { return "kernel '" + kernel_->name + "', CTA " + std::to_string(cta.id) + ": "; };
    if (id >= kBarriers) {
      ctx_.fail(where() + name + " with barrier id " + std::to_string(id) + "; ids 0.." + std::to_string(kBarriers - 1) +
                " exist");
      id = 0;
    }
    if (expected > cta.warps.size())
      ctx_.fail(where() + name + " on barrier " + std::to_string(id) + " expects " + std::to_string(expected) +
                " warps (" + std::to_string(expected * kWarpSize) + " threads), but the CTA has " +
                std::to_string(cta.warps.size()));
    if (cta.barrier_arrived[id] != 0 && cta.barrier_expected[id] != expected) {
      auto count = [](std::uint32_t warps) {
        return warps ? std::to_string(warps * kWarpSize) + " threads" : std::string("the whole CTA (no count)");
      };
      ctx_.fail(where() + "the arrivals on barrier " + std::to_string(id) + " disagree on its count within one phase: " +
                std::to_string(cta.barrier_arrived[id]) + " arrived expecting " +
                count(cta.barrier_expected[id]) + ", then a " + name + " expecting " + count(expected));
    }
    if (in.op == Opcode::BAR) {
      w.block = Block::Barrier;
      w.barrier = id;
      set_reason(w, now + 1, StallReason::Barrier);
    } else {
      ++barrier_arrive_only_;
    }
    ++barrier_arrivals_;
    if (cta.barrier_arrived[id]++ == 0) cta.barrier_expected[id] = expected;
    release_barriers_if_complete(cta, now);
  }

  void release_barriers_if_complete(Cta& cta, Cycle now) {
    for (std::uint32_t id = 0; id < kBarriers; ++id) {
      const std::uint32_t arrived = cta.barrier_arrived[id];
      const std::uint32_t expected = cta.barrier_expected[id] ? cta.barrier_expected[id] : cta.live_warps;
      if (arrived == 0 || arrived < expected) continue;
      cta.barrier_arrived[id] = 0;
      cta.barrier_expected[id] = 0;
      ++barrier_phases_;
      for (std::uint32_t ws : cta.warps)
        if (warps_[ws].block == Block::Barrier && warps_[ws].barrier == id) unblock(ws, now + 1);
    }
  }

  void exit_warp(std::uint32_t ws, Cycle now) {
    Warp& w = warps_[ws];
    close_interval(w, now + 1);
    w.block = Block::Exited;
    Cta& cta = ctas_[w.cta];
    account_residency(now + 1);
    --cta.live_warps;
    --resident_warps_;
    w.stream.reset();
    release_barriers_if_complete(cta, now);
    // Its registers go back to the CTA; the warps waiting for some are evaluated again (and a wait that can no
    // longer end is reported there).
    if (cta.live_warps > 0) release_registers(w.cta, std::uint64_t{w.registers} * kWarpSize, now);
    if (cta.live_warps == 0) finish_cta(w.cta);
  }

  void finish_cta(std::uint32_t slot) {
    Cta& cta = ctas_[slot];
    cta.active = false;
    for (std::uint32_t ws : cta.warps) free_warps_.push_back(ws);
    cta.source.reset();
    --resident_ctas_;
    if (cta_done_) cta_done_(index_, cta.id);
  }

  void account_residency(Cycle now) {
    if (now > residency_since_) {
      resident_warp_cycles_ += std::uint64_t{resident_warps_} * (now - residency_since_);
      if (resident_warps_) active_cycles_ += now - residency_since_;
    }
    residency_since_ = std::max(residency_since_, now);
  }

  unsigned index_;
  BuildContext& ctx_;
  ExecutionTiming timing_;
  InstructionFetch fetch_;
  SmLimits limits_;
  unsigned subpartitions_ = 0;
  std::unique_ptr<MemoryPipeline> mem_;
  std::vector<SubPartition> subs_;
  std::vector<Warp> warps_;
  std::vector<std::uint32_t> free_warps_;
  std::vector<Cta> ctas_;
  std::uint32_t resident_ctas_ = 0, resident_warps_ = 0, max_ctas_ = 0;
  Cycle residency_since_ = 0;
  const KernelInfo* kernel_ = nullptr;
  // stats
  ProbePoint<InstIssue> issue_probe_;  // sm[i].issue
  std::uint64_t warp_instructions_ = 0, thread_instructions_ = 0, active_cycles_ = 0, resident_warp_cycles_ = 0,
                ctas_launched_ = 0, mbarrier_arrivals_ = 0, mbarrier_bytes_ = 0, mbarrier_phases_ = 0,
                mbarrier_remote_arrivals_ = 0, barrier_arrivals_ = 0, barrier_arrive_only_ = 0, barrier_phases_ = 0,
                semaphore_arrivals_ = 0, spin_polls_ = 0;
  const ClusterDirectory* clusters_ = nullptr;  // looked up at the first cluster arrive (built after the SMs)
  GridSync* grid_sync_ = nullptr;               // looked up at the first semaphore operation (built after the SMs)
  Cycle watchdog_cycles_;                       // sim.watchdog_cycles: a spin-wait without arrivals this long is stuck
  std::array<std::uint64_t, kTimedPipes> pipe_busy_{};
  std::array<std::uint64_t, kStallNames.size()> stalls_{};
  // tcgen05: when the SM's tensor core is next free (exact cycles), its busy sub-partition-cycles, and the
  // commits waiting for their MMAs (a handful at most: one per stage and accumulator buffer).
  double tensor_core_free_ = 0, tcgen05_busy_ = 0;
  struct Tcgen05Commit {
    Cycle at;
    std::uint32_t cta_slot;
    std::uint64_t cta_id;
    std::uint32_t mbarrier, mask;
  };
  std::vector<Tcgen05Commit> tcgen05_commits_;
  std::uint64_t tcgen05_mmas_ = 0, tcgen05_commits_issued_ = 0, setmaxnreg_ = 0;
};

WARPSIM_REGISTER_COMPONENT(StreamingMultiprocessor, SubpartitionedSm, "sm", "subpartitioned",
                           "SM with sub-partitioned warp schedulers, scoreboard, pipes, LSU/L1/shared memory");

}  // namespace
}  // namespace warpsim
