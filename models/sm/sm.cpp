// The SM model: sub-partitions (sm.subpartitions), each with a warp scheduler (GTO or LRR), a register
// scoreboard and functional-unit pipes timed by per-class (or per-opcode) latency and issue interval, the
// tensor pipe by MMA shape and type; one LSU that coalesces into sectors and feeds L1 (cacheable loads, merged
// per line in MSHRs), L2 directly (cp.async copies, atomics, stores acknowledged by L2) and shared memory;
// CTA barriers per id, cp.async groups, and a drain at EXIT. Event-driven inside: a warp's earliest issue
// cycle is computed when its state changes, and the SM is ticked only in cycles where something can happen.
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <queue>
#include <string>
#include <vector>

#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"
#include "models/mem/sector_cache.h"
#include "models/sm/coalescer.h"
#include "models/sm/scheduler_policy.h"
#include "models/sm/sm.h"
#include "models/sm/stall_reason.h"
#include "sim/core/error.h"
#include "sim/core/flat_map.h"
#include "sim/registry/registry.h"

namespace warpsim {

SmLimits SmLimits::from(const Params& sm) {
  SmLimits l;
  l.max_warps = sm.u32("max_warps");
  l.max_threads = sm.u32("max_threads");
  l.max_ctas = sm.u32("max_ctas");
  l.registers = sm.u32("registers");
  l.register_alloc_unit = sm.u32("register_alloc_unit");
  l.max_registers_per_thread = sm.u32("max_registers_per_thread");
  l.shared_memory = sm.u64("shared_memory");
  l.shared_memory_per_cta = sm.u64("shared_memory_per_cta");
  l.cta_reserved_shared_memory = sm.u64("cta_reserved_shared_memory");
  return l;
}

Occupancy compute_occupancy(const KernelInfo& k, const SmLimits& l) {
  Occupancy o;
  const std::uint32_t warps = k.warps_per_cta();
  const std::uint64_t threads = k.block.count();
  const std::uint64_t regs_per_warp =
      (std::uint64_t{k.registers_per_thread} * kWarpSize + l.register_alloc_unit - 1) / l.register_alloc_unit *
      l.register_alloc_unit;
  o.registers_per_cta = regs_per_warp * warps;
  o.shared_memory_per_cta = k.shared_mem_bytes + l.cta_reserved_shared_memory;
  struct Limit {
    const char* name;
    std::uint64_t ctas;
  };
  const auto per = [](std::uint64_t have, std::uint64_t need) { return need ? have / need : ~std::uint64_t{0}; };
  const Limit limits[] = {
      {"ctas", l.max_ctas},
      {"warps", per(l.max_warps, warps)},
      {"threads", per(l.max_threads, threads)},
      {"registers", per(l.registers, o.registers_per_cta)},
      {"shared_memory", k.shared_mem_bytes > l.shared_memory_per_cta ? 0 : per(l.shared_memory, o.shared_memory_per_cta)},
      {"registers_per_thread", k.registers_per_thread > l.max_registers_per_thread ? 0 : ~std::uint64_t{0}},
  };
  std::uint64_t best = ~std::uint64_t{0};
  for (const auto& lim : limits)
    if (lim.ctas < best) {
      best = lim.ctas;
      o.limiter = lim.name;
    }
  o.ctas_per_sm = static_cast<std::uint32_t>(best);
  return o;
}

namespace {

constexpr int kRegs = 256;          // architectural registers per thread tracked by the scoreboard (R255 = RZ)
constexpr Cycle kPending = kSleep;  // register written by an instruction whose completion time is not known yet
constexpr std::size_t kFetchBatch = 32;
constexpr std::uint32_t kBarriers = 16;  // named barriers per CTA (PTX bar.sync 0..15)

// Pipes a warp-instruction can occupy, one of each per sub-partition.
enum class Pipe : std::uint8_t { Int, Fp32, Fp64, Sfu, Tensor, Ldst, Branch, None, Count };
constexpr std::array<const char*, 7> kPipeNames = {"int", "fp32", "fp64", "sfu", "tensor", "ldst", "branch"};

Pipe pipe_of(OpClass c) {
  switch (c) {
    case OpClass::Int: return Pipe::Int;
    case OpClass::Fp32: return Pipe::Fp32;
    case OpClass::Fp64: return Pipe::Fp64;
    case OpClass::Sfu: return Pipe::Sfu;
    case OpClass::Tensor: return Pipe::Tensor;
    case OpClass::Ldst: return Pipe::Ldst;
    case OpClass::Branch: return Pipe::Branch;
    default: return Pipe::None;
  }
}

bool is_power_of_two(std::uint64_t v) { return v && !(v & (v - 1)); }

// Opcodes whose timing can be overridden one by one: those of the fixed-latency pipes. Tensor instructions are
// timed from their shape and the tensor throughput; memory instructions by the LSU and memory system.
bool has_opcode_override(Opcode op) {
  const OpClass c = op_class(op);
  return c == OpClass::Int || c == OpClass::Fp32 || c == OpClass::Fp64 || c == OpClass::Sfu || c == OpClass::Branch;
}

constexpr std::array<DType, 6> kTensorTypes = {DType::F16, DType::BF16, DType::TF32, DType::FP8, DType::I8, DType::F64};

// All filled from the config by read_spec (no hardware numbers here).
struct SmSpec {
  unsigned subpartitions = 0;
  SchedulerPolicy policy = SchedulerPolicy::Gto;
  std::array<Cycle, 7> pipe_latency{}, pipe_interval{};
  // Per-opcode timing (the pipe's unless overridden by sm.opcodes.<OP>.*), indexed by Opcode.
  std::array<Cycle, static_cast<std::size_t>(Opcode::Count)> op_latency{}, op_interval{};
  Cycle tensor_latency = 0;
  std::array<double, 8> tensor_flops_per_cycle{};  // per SM, indexed by DType
  std::size_t lsu_queue_depth = 0;
  // L1 / shared memory
  std::uint64_t l1_unified_size = 0;
  std::uint32_t line_bytes = 0, sector_bytes = 0, l1_assoc = 0, l1_bandwidth = 0, l1_mshrs = 0;
  Cycle l1_hit_latency = 0, smem_latency = 0;
  std::uint32_t smem_bandwidth = 0;
  SmLimits limits;
};

class SubpartitionedSm final : public StreamingMultiprocessor {
 public:
  // Every hardware number is required: it comes from the GPU's config, where its source is named.
  static Schema schema() {
    Schema s("sm", "subpartitioned", "streaming multiprocessor: sub-partitions with warp schedulers, scoreboard, pipes; LSU with L1 and shared memory");
    const auto req = std::nullopt;
    s.uint("count", "SMs", req, "number of SMs", 1, 4096);
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
    s.choice("scheduler.policy", {"gto", "lrr"}, req, "warp scheduling policy: greedy-then-oldest or loose round-robin");
    // Fixed-latency pipes; the tensor pipe is timed from tensor.* and the MMA shape, the LSU by the memory system.
    for (std::size_t i = 0; i < kPipeNames.size(); ++i) {
      const std::string pipe = kPipeNames[i];
      if (pipe == "tensor") continue;
      if (pipe != "ldst")
        s.uint("pipes." + pipe + ".latency", "cycles", req, "cycles from issue to a dependent instruction's issue, " + pipe + " pipe", 1, 10000);
      s.uint("pipes." + pipe + ".issue_interval", "cycles", req, "cycles the " + pipe + " pipe of a sub-partition is busy per warp-instruction", 1, 10000);
    }
    for (std::size_t o = 0; o < static_cast<std::size_t>(Opcode::Count); ++o) {
      const Opcode op = static_cast<Opcode>(o);
      if (!has_opcode_override(op)) continue;
      const std::string name(opcode_info(op).name);
      s.uint("opcodes." + name + ".latency", "cycles", 0, "latency of " + name + " if it differs from its pipe's (0 = the pipe's)", 0, 10000);
      s.uint("opcodes." + name + ".issue_interval", "cycles", 0, "issue interval of " + name + " if it differs from its pipe's (0 = the pipe's)", 0, 10000);
    }
    s.uint("tensor.latency", "cycles", req, "cycles from issue of an m16n8k16 MMA to its result; larger MMAs add their extra pipe occupancy", 1, 10000);
    for (DType t : kTensorTypes)
      s.uint("tensor.flops_per_cycle." + std::string(dtype_name(t)), "FLOP/cycle", req,
             "dense tensor-core " + std::string(dtype_name(t)) + " operations per cycle per SM (0 = unsupported)", 0, 1 << 20);
    return s;
  }

  SubpartitionedSm(BuildContext& ctx, const Params& p, unsigned index)
      : StreamingMultiprocessor("sm[" + std::to_string(index) + "]", ctx.domain("sm")),
        index_(index),
        ctx_(ctx),
        noc_(ctx.get<Interconnect>("noc")),
        address_map_(ctx.get<AddressMap>("address_map")),
        // Bounded by this SM's own MSHRs and store records: every response answers a request it sent.
        responses_(path() + ".responses", 1, Port<MemRequest>::kUnbounded) {
    read_spec(p, ctx.config.section("l1"), ctx.config.section("smem"));
    responses_.bind(nullptr, this);
    responses_.add_probes(ctx.probes);
    // L1-bypassing lines only complete their instruction later: taken when sent, no tick at arrival.
    responses_.take_on_send([this](const MemRequest& resp, Cycle arrival) {
      if (!resp.bypass_l1) return false;
      bypass_arrivals_.push(arrival);
      complete_at(resp.id, arrival + spec_.l1_hit_latency);
      if (lsu_blocked_ && arrival < lsu_next_) {  // an LSU waiting for an MSHR goes on when this line arrives
        lsu_next_ = arrival;
        wake_at(arrival);
      }
      return true;
    });
    ctx.get<Interconnect>("noc").attach_sm(index, &responses_);
    subs_.resize(spec_.subpartitions);
    for (auto& sp : subs_) sp.pipe_free.fill(0);
    warps_.resize(spec_.limits.max_warps);
    for (std::uint32_t i = 0; i < warps_.size(); ++i) free_warps_.push_back(static_cast<std::uint32_t>(warps_.size()) - 1 - i);
    register_stats(ctx.stats);
  }

  // ---- StreamingMultiprocessor -------------------------------------------------------------------------------
  void begin_kernel(const KernelInfo& k, const Occupancy& occ) override {
    const double per_sp = 1.0 / spec_.subpartitions;
    tensor_rate_.fill(0.0);
    last_mma_ = LastMma{};
    for (DType t : kTensorTypes) tensor_rate_[static_cast<std::size_t>(t)] = spec_.tensor_flops_per_cycle[static_cast<std::size_t>(t)] * per_sp;
    // Shared memory and L1 share one SRAM: L1 keeps what the resident CTAs' shared memory leaves.
    const std::uint64_t smem_used = std::uint64_t{occ.ctas_per_sm} * occ.shared_memory_per_cta;
    const std::uint64_t l1_size = spec_.l1_unified_size > smem_used ? spec_.l1_unified_size - smem_used : 0;
    l1_ = SectorCache(l1_size, spec_.line_bytes, spec_.sector_bytes, spec_.l1_assoc);
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
    while (responses_.ready()) {
      on_response(responses_.front(), now);
      responses_.pop();
    }
    while (!completions_.empty() && completions_.top().cycle <= now) {
      const Completion c = completions_.top();
      completions_.pop();
      finish_record(c.record, c.cycle);
    }
    if (lsu_next_ <= now) lsu_step(now);
    for (auto& sp : subs_)
      if (sp.next <= now) schedule(sp, now);
    Cycle next = kSleep;
    for (const auto& sp : subs_) next = std::min(next, sp.next);
    if (!completions_.empty()) next = std::min(next, completions_.top().cycle);
    if (!lsu_queue_.empty()) next = std::min(next, lsu_next_);
    return next <= now ? now + 1 : next;
  }

  std::string describe_state() const override {
    if (!resident_ctas_) return {};
    // Warps by state, and the instruction the first warp in each state is stuck at.
    std::array<int, 6> count{};
    std::array<std::string, 6> example;
    for (const auto& sp : subs_)
      for (std::uint32_t ws : sp.warps) {
        const Warp& w = warps_[ws];
        const auto b = static_cast<std::size_t>(w.block);
        if (count[b]++ == 0 && w.pos < w.len)
          example[b] = std::string(opcode_info(w.buf[w.pos].op).name) + " pc=" + std::to_string(w.buf[w.pos].pc);
      }
    std::string s = std::to_string(resident_ctas_) + " CTAs resident;";
    for (std::size_t b = 0; b < count.size(); ++b)
      if (count[b]) s += " " + std::to_string(count[b]) + " warps " + block_name(static_cast<Block>(b)) +
                         (example[b].empty() ? "" : " (e.g. at " + example[b] + ")") + ";";
    s += " LSU queue " + std::to_string(lsu_queue_.size()) + ", L1 misses outstanding " + std::to_string(misses_.size());
    return s;
  }

 private:
  enum class Block : std::uint8_t { None, MemDep, Barrier, DepBar, Drain, Exited };

  struct Warp {
    // What the scheduler reads every time it looks at the warp comes first, in one cache line; the fetch
    // buffer and the scoreboard arrays follow.
    Cycle ready_cycle = 0;
    Block block = Block::None;
    Pipe head_pipe = Pipe::None;   // of the head instruction, cached when it becomes the head
    bool head_ldst = false;
    StallReason dep_reason = StallReason::Wait;
    StallReason acct_reason = StallReason::Wait;  // stall accounting: reason in force since acct_since
    bool stream_end = false;
    std::uint32_t pos = 0, len = 0;
    std::uint32_t sp = 0;          // sub-partition
    std::uint32_t cta = 0;
    std::uint32_t barrier = 0;     // id of the barrier it waits at
    Cycle acct_since = 0;
    std::uint32_t loads_in_flight = 0;
    std::uint32_t stores_in_flight = 0;  // store lines not yet acknowledged by L2
    // cp.async groups: LDGSTS instructions still in flight per committed group, oldest first, plus the open group
    std::uint32_t open_group = 0;
    std::uint64_t groups_retired = 0;  // sequence number of groups.front()
    std::deque<std::uint32_t> groups;
    std::unique_ptr<WarpStream> stream;
    std::array<WarpInst, kFetchBatch> buf{};
    std::array<Cycle, kRegs> reg_ready{};
    std::array<StallReason, kRegs> reg_reason{};
    void reset() {
      stream.reset();
      pos = len = 0;
      stream_end = false;
      reg_ready.fill(0);
      reg_reason.fill(StallReason::Wait);
      ready_cycle = 0;
      block = Block::None;
      groups.clear();
      groups_retired = 0;
      open_group = 0;
      loads_in_flight = 0;
      stores_in_flight = 0;
    }
  };

  struct Cta {
    bool active = false;
    std::uint64_t id = 0;
    std::vector<std::uint32_t> warps;
    std::uint32_t live_warps = 0;
    std::array<std::uint32_t, kBarriers> barrier_arrived{};  // per barrier id
    std::unique_ptr<CtaSource> source;
  };

  struct SubPartition {
    std::vector<std::uint32_t> warps;  // warp slots in age order
    std::array<Cycle, static_cast<std::size_t>(Pipe::Count)> pipe_free{};
    SchedulerState sched;
    Cycle next = kSleep;
  };

  // Atomic: read-modify-write performed at L2, returning the old value (RED, without a result, is a Store).
  enum class MemKind : std::uint8_t { Load, Store, SharedLoad, SharedStore, AsyncCopy, Atomic };

  // One memory instruction in the LSU and until its data is back.
  struct MemRecord {
    std::uint32_t warp = 0;
    MemKind kind = MemKind::Load;
    std::uint32_t remaining = 0;  // lines (or shared-memory accesses) not completed yet
    std::uint64_t group = 0;      // AsyncCopy: group sequence number
    Cycle done = 0;               // latest line completion so far
    std::array<std::uint16_t, kMaxDst> dst{kNoReg, kNoReg, kNoReg, kNoReg};
    std::vector<LineAccess> lines;
    std::size_t next_line = 0;
    std::uint32_t shared_bytes = 0;
    bool cacheable = true;
  };

  // Keyed by (cycle, record): unique while the record is in flight, so the order of completions does not
  // depend on the order in which they were announced.
  struct Completion {
    Cycle cycle;
    std::uint32_t record;
    bool operator>(const Completion& o) const { return cycle != o.cycle ? cycle > o.cycle : record > o.record; }
  };

  struct Miss {  // a missed line of L1 (cacheable loads), merging the requests for it
    std::uint32_t requested = 0;
    // (record, sectors it still needs): nearly always one or two, kept inline in the table entry
    boost::container::small_vector<std::pair<std::uint32_t, std::uint32_t>, 2> waiters;
  };

  // ---- configuration -----------------------------------------------------------------------------------------
  void read_spec(const Params& p, const Params& l1, const Params& smem) {
    spec_.subpartitions = p.u32("subpartitions");
    spec_.policy = p.str("scheduler.policy") == "gto" ? SchedulerPolicy::Gto : SchedulerPolicy::Lrr;
    for (std::size_t i = 0; i < kPipeNames.size(); ++i) {
      const std::string pipe = kPipeNames[i];
      if (pipe == "tensor") continue;  // timed by tensor_timing()
      if (pipe != "ldst") spec_.pipe_latency[i] = p.u64("pipes." + pipe + ".latency");
      spec_.pipe_interval[i] = p.u64("pipes." + pipe + ".issue_interval");
    }
    for (std::size_t o = 0; o < static_cast<std::size_t>(Opcode::Count); ++o) {
      const Opcode op = static_cast<Opcode>(o);
      const Pipe pipe = pipe_of(op_class(op));
      if (pipe == Pipe::None) continue;
      spec_.op_latency[o] = spec_.pipe_latency[static_cast<std::size_t>(pipe)];
      spec_.op_interval[o] = spec_.pipe_interval[static_cast<std::size_t>(pipe)];
      if (!has_opcode_override(op)) continue;
      const std::string key = "opcodes." + std::string(opcode_info(op).name);
      if (const auto v = p.u64(key + ".latency")) spec_.op_latency[o] = v;
      if (const auto v = p.u64(key + ".issue_interval")) spec_.op_interval[o] = v;
    }
    spec_.tensor_latency = p.u64("tensor.latency");
    for (DType t : kTensorTypes)
      spec_.tensor_flops_per_cycle[static_cast<std::size_t>(t)] = static_cast<double>(p.u64("tensor.flops_per_cycle." + std::string(dtype_name(t))));
    spec_.lsu_queue_depth = p.u32("lsu_queue_depth");
    spec_.limits = SmLimits::from(p);
    spec_.l1_unified_size = l1.u64("unified_size");
    spec_.line_bytes = l1.u32("line_size");
    spec_.sector_bytes = l1.u32("sector_size");
    if (!is_power_of_two(spec_.sector_bytes)) l1.fail("sector_size", "must be a power of two");
    if (!is_power_of_two(spec_.line_bytes) || spec_.line_bytes < spec_.sector_bytes ||
        spec_.line_bytes / spec_.sector_bytes > 32)
      l1.fail("line_size", "must be a power of two, at least sector_size and at most 32 sectors");
    const Params& l2 = ctx_.config.section("l2");
    if (l2.u32("line_size") != spec_.line_bytes || l2.u32("sector_size") != spec_.sector_bytes)
      l1.fail("line_size", "L1 and L2 must use the same line and sector sizes (l2.line_size " + std::to_string(l2.u32("line_size")) +
                               " B, l2.sector_size " + std::to_string(l2.u32("sector_size")) + " B)");
    spec_.l1_assoc = l1.u32("assoc");
    spec_.l1_hit_latency = l1.u64("hit_latency");
    spec_.l1_bandwidth = l1.u32("bandwidth");
    spec_.l1_mshrs = l1.u32("mshrs");
    spec_.smem_latency = smem.u64("latency");
    spec_.smem_bandwidth = smem.u32("bandwidth");
    if (spec_.l1_unified_size < spec_.limits.shared_memory)
      l1.fail("unified_size", "is smaller than sm.shared_memory (" + std::to_string(spec_.limits.shared_memory) + " bytes)");
  }

  void register_stats(StatsRegistry& stats) {
    StatGroup g(stats, path(), "sm");
    g.add("warp_instructions", "warp-instructions", "warp-instructions issued", warp_instructions_)
        .add("thread_instructions", "thread-instructions", "active lanes of issued instructions", thread_instructions_)
        .add("tensor_flops", "FLOP", "tensor-core operations performed", tensor_flops_)
        .add("active_cycles", "cycles", "cycles with at least one resident warp", active_cycles_)
        .add("resident_warp_cycles", "warp-cycles", "sum over cycles of resident warps (occupancy numerator)", resident_warp_cycles_)
        .add("ctas_launched", "CTAs", "CTAs launched", ctas_launched_)
        .add("lsu_busy_cycles", "cycles", "cycles the LSU data path was busy", lsu_busy_cycles_)
        .add("l1_bytes", "bytes", "global/local bytes moved through the L1 data path", l1_bytes_)
        .add("shared_bytes", "bytes", "shared-memory bytes accessed", shared_bytes_)
        .add("l1_read_sectors", "sectors", "global-load sectors looked up in L1", l1_read_sectors_)
        .add("l1_hit_sectors", "sectors", "global-load sectors that hit in L1", l1_hit_sectors_)
        .add("l2_requests", "requests", "line requests sent to L2", l2_requests_);
    for (std::size_t i = 0; i < kPipeNames.size(); ++i)
      g.add(std::string("pipe_busy_") + kPipeNames[i], "cycles", std::string("sub-partition cycles the ") + kPipeNames[i] + " pipe was busy", pipe_busy_[i]);
    for (std::size_t i = 0; i < kStallNames.size(); ++i)
      g.add(std::string(kStallNames[i]), "warp-cycles", "warp-cycles in state " + std::string(kStallNames[i]), stalls_[i]);
  }

  // ---- warp state --------------------------------------------------------------------------------------------
  static const char* block_name(Block b) {
    switch (b) {
      case Block::None: return "ready or waiting on a fixed latency";
      case Block::MemDep: return "waiting for memory data";
      case Block::Barrier: return "waiting at barrier";
      case Block::DepBar: return "waiting for cp.async groups";
      case Block::Drain: return "draining at EXIT (memory operations in flight)";
      case Block::Exited: return "exited";
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
           r == StallReason::Drain;
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
    w.head_pipe = in ? pipe_of(op_class(in->op)) : Pipe::None;
    w.head_ldst = w.head_pipe == Pipe::Ldst;
    if (!in || in->op == Opcode::EXIT) {
      evaluate_exit(w, earliest);
      return;
    }
    if (in->op == Opcode::DEPBAR && !depbar_satisfied(w, in->aux)) {
      w.block = Block::DepBar;
      set_reason(w, earliest, StallReason::LongScoreboard);
      return;
    }
    Cycle ready = earliest;
    StallReason why = StallReason::Wait;
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
    for (int i = 0; i < in->num_src && known; ++i) known = check(in->src[i]);
    for (int i = 0; i < in->num_dst && known; ++i) known = check(in->dst[i]);
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
    if (w.loads_in_flight || w.stores_in_flight || async_pending) {
      w.block = Block::Drain;
      set_reason(w, earliest, StallReason::Drain);
      return;
    }
    Cycle ready = earliest;
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
  bool lsu_has_room() const { return lsu_queue_.size() < spec_.lsu_queue_depth; }

  // Cycle from which the warp could issue if the scheduler picked it (kSleep when it waits for an event).
  Cycle issue_time(const SubPartition& sp, const Warp& w) const {
    if (w.block != Block::None) return kSleep;
    if (w.pos == w.len) return w.ready_cycle;  // end of stream: retires as soon as it is picked
    const Pipe p = w.head_pipe;
    Cycle t = w.ready_cycle;
    if (p != Pipe::None) t = std::max(t, sp.pipe_free[static_cast<std::size_t>(p)]);
    return t;
  }

  void schedule(SubPartition& sp, Cycle now) {
    sp.next = kSleep;
    if (sp.warps.empty()) return;
    auto eligible = [&](std::uint32_t ws) {
      const Warp& w = warps_[ws];
      if (issue_time(sp, w) > now) return false;
      return !(w.head_ldst && !lsu_has_room());
    };
    const std::uint32_t pick = pick_warp(spec_.policy, sp.warps, eligible, sp.sched);
    const auto pipe_free_before = sp.pipe_free;
    if (pick != kNoWarp) issue(sp, pick, now);
    // Account this cycle for the others and find when this sub-partition next has something to do.
    for (std::uint32_t ws : sp.warps) {
      Warp& w = warps_[ws];
      if (w.block != Block::None || ws == pick) continue;
      const bool waits_for_lsu = w.head_ldst && !lsu_has_room();
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
      if (!waits_for_lsu) sp.next = std::min(sp.next, std::max(t, now + 1));  // else pop_lsu wakes us
    }
    if (pick != kNoWarp && warps_[pick].block == Block::None)
      sp.next = std::min(sp.next, std::max(issue_time(sp, warps_[pick]), now + 1));
    // Remove warps that exited this cycle.
    sp.warps.erase(std::remove_if(sp.warps.begin(), sp.warps.end(), [&](std::uint32_t ws) { return warps_[ws].block == Block::Exited; }), sp.warps.end());
    if (sp.sched.rr_next >= sp.warps.size()) sp.sched.rr_next = 0;
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
    settle_dependency(w);
    set_reason(w, now, StallReason::Selected);
    set_reason(w, now + 1, StallReason::Wait);
    if (!in) {
      exit_warp(ws, now);
      return;
    }
    ++warp_instructions_;
    thread_instructions_ += static_cast<std::uint64_t>(in->active_lanes());
    const OpClass cls = op_class(in->op);
    const Pipe pipe = pipe_of(cls);
    Cycle result = now + 1;
    StallReason result_reason = StallReason::Wait;
    if (pipe != Pipe::None) {
      const std::size_t pi = static_cast<std::size_t>(pipe);
      Cycle interval = spec_.op_interval[static_cast<std::size_t>(in->op)];
      Cycle latency = spec_.op_latency[static_cast<std::size_t>(in->op)];
      if (pipe == Pipe::Tensor) tensor_timing(*in, interval, latency);
      sp.pipe_free[pi] = now + interval;
      pipe_busy_[pi] += interval;
      result = now + latency;
      if (cls == OpClass::Sfu) result_reason = StallReason::ShortScoreboard;
    }
    switch (cls) {
      case OpClass::Ldst:
        enqueue_memory(w, ws, *in, now);
        break;
      case OpClass::Sync:
        if (in->op == Opcode::BAR) {
          ++w.pos;
          arrive_barrier(ws, in->aux, now);
          return;
        }
        if (in->op == Opcode::LDGDEPBAR) {
          w.groups.push_back(w.open_group);
          w.open_group = 0;
        }
        break;
      case OpClass::Exit:
        ++w.pos;
        exit_warp(ws, now);
        return;
      default:
        for (int i = 0; i < in->num_dst; ++i)
          if (in->dst[i] < kRegs - 1) {
            w.reg_ready[in->dst[i]] = result;
            w.reg_reason[in->dst[i]] = result_reason;
          }
        break;
    }
    ++w.pos;
    evaluate(w, now + 1);
  }

  // Tensor pipe occupancy from the instruction's work and the SM's tensor throughput for its type; the result
  // latency grows by the extra occupancy over the m16n8k16 instruction the configured latency refers to.
  void tensor_timing(const WarpInst& in, Cycle& interval, Cycle& latency) {
    const double rate = tensor_rate_[static_cast<std::size_t>(in.dtype)];
    const bool tensor_type = std::find(kTensorTypes.begin(), kTensorTypes.end(), in.dtype) != kTensorTypes.end();
    if (!tensor_type || rate <= 0.0 || mma_flops_per_warp(in) == 0) {
      std::string why = !tensor_type ? std::string(dtype_name(in.dtype)) + " is not a tensor-core operand type"
                        : mma_flops_per_warp(in) == 0 ? "its MMA shape is empty"
                        : "this GPU's sm.tensor.flops_per_cycle." + std::string(dtype_name(in.dtype)) + " is 0 (unsupported)";
      ctx_.fail("kernel '" + kernel_->name + "' has a " + std::string(opcode_info(in.op).name) + " on " +
                std::string(dtype_name(in.dtype)) + " operands, but " + why);
      interval = latency = 1;
      return;
    }
    const std::uint64_t flops = mma_flops_per_warp(in);
    tensor_flops_ += flops;
    // Kernels repeat one MMA shape and type: remember the last timing.
    if (in.dtype == last_mma_.dtype && flops == last_mma_.flops) {
      interval = last_mma_.interval;
      latency = last_mma_.latency;
      return;
    }
    interval = std::max<Cycle>(1, static_cast<Cycle>(std::ceil(static_cast<double>(flops) / rate)));
    const Cycle reference = std::max<Cycle>(1, static_cast<Cycle>(std::ceil(2.0 * 16 * 8 * 16 / rate)));
    latency = spec_.tensor_latency + (interval > reference ? interval - reference : 0);
    last_mma_ = LastMma{in.dtype, flops, interval, latency};
  }

  // BAR id: waits until every live warp of the CTA has arrived at barrier `id` (a named barrier with a
  // thread count is not expressible in the trace format yet).
  void arrive_barrier(std::uint32_t ws, std::uint32_t id, Cycle now) {
    Warp& w = warps_[ws];
    Cta& cta = ctas_[w.cta];
    if (id >= kBarriers) {
      ctx_.fail("kernel '" + kernel_->name + "': BAR with barrier id " + std::to_string(id) + "; ids 0.." +
                std::to_string(kBarriers - 1) + " exist");
      id = 0;
    }
    w.block = Block::Barrier;
    w.barrier = id;
    set_reason(w, now + 1, StallReason::Barrier);
    ++cta.barrier_arrived[id];
    release_barriers_if_complete(cta, now);
  }

  void release_barriers_if_complete(Cta& cta, Cycle now) {
    for (std::uint32_t id = 0; id < kBarriers; ++id) {
      if (cta.barrier_arrived[id] == 0 || cta.barrier_arrived[id] < cta.live_warps) continue;
      cta.barrier_arrived[id] = 0;
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
    if (cta.live_warps == 0) finish_cta(w.cta, now);
  }

  void finish_cta(std::uint32_t slot, Cycle now) {
    Cta& cta = ctas_[slot];
    cta.active = false;
    for (std::uint32_t ws : cta.warps) free_warps_.push_back(ws);
    cta.source.reset();
    --resident_ctas_;
    if (cta_done_) cta_done_(index_, cta.id);
    (void)now;
  }

  void account_residency(Cycle now) {
    if (now > residency_since_) {
      resident_warp_cycles_ += std::uint64_t{resident_warps_} * (now - residency_since_);
      if (resident_warps_) active_cycles_ += now - residency_since_;
    }
    residency_since_ = std::max(residency_since_, now);
  }

  // ---- LSU, L1, shared memory --------------------------------------------------------------------------------
  std::uint32_t new_record() {
    if (!free_records_.empty()) {
      const std::uint32_t r = free_records_.back();
      free_records_.pop_back();
      return r;
    }
    records_.emplace_back();
    return static_cast<std::uint32_t>(records_.size() - 1);
  }

  void enqueue_memory(Warp& w, std::uint32_t ws, const WarpInst& in, Cycle now) {
    const std::uint32_t id = new_record();
    MemRecord& r = records_[id];
    r.warp = ws;
    r.next_line = 0;
    r.done = 0;
    r.lines.clear();
    r.dst = in.dst;
    r.shared_bytes = 0;
    r.cacheable = true;
    const bool store = opcode_info(in.op).is_store;
    // Every record is completed exactly once (an instruction without active lanes one cycle after issue), so
    // the warp's in-flight counts are raised here unconditionally and lowered in finish_record.
    if (in.space == MemSpace::Shared) {
      r.kind = store ? MemKind::SharedStore : MemKind::SharedLoad;
      r.shared_bytes = static_cast<std::uint32_t>(in.active_lanes()) * std::max<std::uint32_t>(in.access_bytes, 1);
      r.remaining = 1;
      if (store) ++w.stores_in_flight;
    } else {
      coalesce(in, spec_.line_bytes, spec_.sector_bytes, r.lines);
      r.remaining = static_cast<std::uint32_t>(r.lines.size());
      if (in.op == Opcode::LDGSTS) {
        r.kind = MemKind::AsyncCopy;
        r.cacheable = false;  // cp.async.cg bypasses L1, as CUTLASS uses it for 16-byte copies
        r.group = w.groups_retired + w.groups.size();
        ++w.open_group;
      } else if (in.op == Opcode::ATOMG) {
        r.kind = MemKind::Atomic;
        r.cacheable = false;  // performed at L2
      } else {
        r.kind = store ? MemKind::Store : MemKind::Load;
        if (store) ++w.stores_in_flight;
      }
    }
    const bool writes_registers = r.kind == MemKind::Load || r.kind == MemKind::SharedLoad || r.kind == MemKind::Atomic;
    if (writes_registers) {
      for (int i = 0; i < in.num_dst; ++i)
        if (in.dst[i] < kRegs - 1) {
          w.reg_ready[in.dst[i]] = kPending;
          w.reg_reason[in.dst[i]] = r.kind == MemKind::SharedLoad ? StallReason::ShortScoreboard : StallReason::LongScoreboard;
        }
      ++w.loads_in_flight;
    }
    if (r.remaining == 0) {  // no active lanes: nothing to wait for
      r.remaining = 1;
      r.lines.clear();
      complete_at(id, now + 1);
      return;
    }
    lsu_queue_.push_back(id);
    if (lsu_next_ == kSleep && !lsu_blocked_) {
      lsu_next_ = now + 1;
      wake_at(lsu_next_);
    }
  }

  // Processes one wavefront of the instruction at the head of the LSU queue.
  void lsu_step(Cycle now) {
    lsu_blocked_ = false;  // set again below if there is still no MSHR
    if (lsu_queue_.empty()) {
      lsu_next_ = kSleep;
      return;
    }
    const std::uint32_t id = lsu_queue_.front();
    MemRecord& r = records_[id];
    Cycle busy = 1;
    if (r.kind == MemKind::SharedLoad || r.kind == MemKind::SharedStore) {
      busy = (r.shared_bytes + spec_.smem_bandwidth - 1) / spec_.smem_bandwidth;
      shared_bytes_ += r.shared_bytes;
      if (r.kind == MemKind::SharedLoad) complete_at(id, now + busy - 1 + spec_.smem_latency);
      else complete_at(id, now + busy);
      pop_lsu(now, busy);
      return;
    }
    // All lines of the instruction in one step: line j goes through the data path at cycle t_j, one
    // wavefront (l1.bandwidth bytes) per cycle, and its request leaves for L2 at that cycle.
    Cycle t = now;
    for (; r.next_line < r.lines.size(); ++r.next_line) {
      const LineAccess& line = r.lines[r.next_line];
      const Cycle busy = std::max<Cycle>(1, (line.bytes + spec_.l1_bandwidth - 1) / spec_.l1_bandwidth);
      if (r.kind == MemKind::Store) {
        l1_.invalidate(line.line_addr, line.sector_mask);
        send_to_l2(line, MemOp::Write, t, id);  // completes when L2 acknowledges it
      } else {
        const std::uint32_t hit = r.cacheable ? l1_.lookup(line.line_addr, line.sector_mask) : 0;
        const std::uint32_t missing = line.sector_mask & ~hit;
        if (!missing) {
          complete_at(id, t + spec_.l1_hit_latency);
        } else if (!r.cacheable) {
          // L1-bypassing copy or atomic: no merging by line, the response finds its instruction by id.
          if (outstanding_misses(now) >= spec_.l1_mshrs) {
            block_lsu(now, t);
            return;
          }
          ++bypass_in_flight_;
          send_to_l2(LineAccess{line.line_addr, missing, 0}, r.kind == MemKind::Atomic ? MemOp::Atomic : MemOp::Read, t,
                     id, /*bypass_l1=*/true);
        } else {
          Miss* miss = misses_.find(line.line_addr);
          if (!miss) {
            if (outstanding_misses(now) >= spec_.l1_mshrs) {  // wait for a fill to free an entry
              block_lsu(now, t);
              return;
            }
            miss = &misses_.insert(line.line_addr);
          }
          Miss& m = *miss;
          m.waiters.emplace_back(id, missing);
          const std::uint32_t fetch = missing & ~m.requested;
          if (fetch) {
            m.requested |= fetch;
            send_to_l2(LineAccess{line.line_addr, fetch, 0}, MemOp::Read, t, 0);
          }
        }
        if (r.cacheable) {  // counted once the line has gone through, not each time it waited for an MSHR
          l1_read_sectors_ += static_cast<std::uint64_t>(__builtin_popcount(line.sector_mask));
          l1_hit_sectors_ += static_cast<std::uint64_t>(__builtin_popcount(hit));
        }
      }
      l1_bytes_ += line.bytes;
      t += busy;
    }
    pop_lsu(now, t - now);
  }

  void advance_lsu(Cycle now, Cycle busy) {
    lsu_busy_cycles_ += busy;
    lsu_next_ = now + busy;
  }

  void pop_lsu(Cycle now, Cycle busy) {
    const bool was_full = !lsu_has_room();
    lsu_queue_.pop_front();
    advance_lsu(now, busy);
    if (lsu_queue_.empty()) lsu_next_ = kSleep;
    if (was_full)  // warps held back by a full LSU queue may issue again
      for (auto& sp : subs_) wake_sub(sp, now + 1);
  }

  // MSHRs in use at `now`: missed lines merged by address, plus L1-bypassing lines not yet arrived.
  std::size_t outstanding_misses(Cycle now) {
    while (!bypass_arrivals_.empty() && bypass_arrivals_.top() <= now) {
      bypass_arrivals_.pop();
      --bypass_in_flight_;
    }
    return misses_.size() + bypass_in_flight_;
  }

  void send_to_l2(const LineAccess& line, MemOp op, Cycle when, std::uint32_t record, bool bypass_l1 = false) {
    MemRequest req;
    req.line_addr = line.line_addr;
    req.sector_mask = line.sector_mask;
    req.bytes = static_cast<std::uint32_t>(__builtin_popcount(line.sector_mask)) * spec_.sector_bytes;
    req.op = op;
    req.sm = static_cast<std::uint16_t>(index_);
    req.id = record;
    req.bypass_l1 = bypass_l1;
    req.slice = static_cast<std::uint16_t>(address_map_.slice_of(line.line_addr));
    ++l2_requests_;
    noc_.send_request(req, domain().time_of(when));
  }

  void on_response(const MemRequest& resp, Cycle now) {
    if (resp.op != MemOp::Read) {  // L2 acknowledged a store line
      complete_at(resp.id, now);
      return;
    }
    Miss* miss = misses_.find(resp.line_addr);
    if (!miss) return;
    Miss& m = *miss;
    l1_.fill(resp.line_addr, resp.sector_mask, false);
    m.requested &= ~resp.sector_mask;
    auto& ws = m.waiters;
    for (auto& waiter : ws) waiter.second &= ~resp.sector_mask;
    auto done = std::stable_partition(ws.begin(), ws.end(), [](const auto& x) { return x.second != 0; });
    for (auto d = done; d != ws.end(); ++d) complete_at(d->first, now + spec_.l1_hit_latency);
    ws.erase(done, ws.end());
    if (ws.empty()) {
      misses_.erase(resp.line_addr);
      unblock_lsu(now);
    }
  }

  // No MSHR free: the LSU waits for a fill (on_response unblocks it) or for the next bypassing line to arrive.
  void block_lsu(Cycle now, Cycle t) {
    lsu_busy_cycles_ += t - now;
    lsu_blocked_ = true;
    lsu_next_ = bypass_arrivals_.empty() ? kSleep : bypass_arrivals_.top();
    if (lsu_next_ != kSleep) wake_at(std::max(lsu_next_, now + 1));
  }

  // An MSHR freed up: an LSU waiting for one continues next cycle.
  void unblock_lsu(Cycle now) {
    if (!lsu_blocked_) return;
    lsu_blocked_ = false;
    lsu_next_ = now + 1;
    wake_at(now + 1);
  }

  // One line (or shared-memory access) of a memory instruction has its data at `cycle`. The instruction
  // completes when its last line does: only then is an event scheduled.
  void complete_at(std::uint32_t record, Cycle cycle) {
    MemRecord& r = records_[record];
    r.done = std::max(r.done, cycle);
    if (--r.remaining > 0) return;
    completions_.push(Completion{r.done, record});
    wake_at(std::max(r.done, domain().now() + 1));
  }

  void finish_record(std::uint32_t id, Cycle t) {
    MemRecord& r = records_[id];
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
        --w.stores_in_flight;
        break;
      case MemKind::AsyncCopy: {
        const std::uint64_t open_seq = w.groups_retired + w.groups.size();
        if (r.group == open_seq) --w.open_group;
        else --w.groups[r.group - w.groups_retired];
        break;
      }
      case MemKind::SharedStore:
        --w.stores_in_flight;
        break;
    }
    free_records_.push_back(id);
    if (w.block == Block::MemDep || w.block == Block::DepBar || w.block == Block::Drain) unblock(r.warp, t);
  }

  unsigned index_;
  BuildContext& ctx_;
  Interconnect& noc_;
  const AddressMap& address_map_;
  SmSpec spec_;
  Port<MemRequest> responses_;
  std::vector<SubPartition> subs_;
  std::vector<Warp> warps_;
  std::vector<std::uint32_t> free_warps_;
  std::vector<Cta> ctas_;
  std::uint32_t resident_ctas_ = 0, resident_warps_ = 0, max_ctas_ = 0;
  Cycle residency_since_ = 0;
  const KernelInfo* kernel_ = nullptr;
  std::array<double, 8> tensor_rate_{};
  struct LastMma {
    DType dtype = DType::None;
    std::uint64_t flops = 0;
    Cycle interval = 0, latency = 0;
  } last_mma_;
  SectorCache l1_;
  std::deque<std::uint32_t> lsu_queue_;
  Cycle lsu_next_ = kSleep;
  bool lsu_blocked_ = false;
  std::vector<MemRecord> records_;
  std::vector<std::uint32_t> free_records_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> completions_;
  // Delivery cycles of L1-bypassing lines announced but not yet arrived (their MSHR frees on arrival).
  std::priority_queue<Cycle, std::vector<Cycle>, std::greater<Cycle>> bypass_arrivals_;
  FlatMap64<Miss> misses_;  // L1 MSHRs by line address
  std::size_t bypass_in_flight_ = 0;  // L1-bypassing line requests in flight (they hold an MSHR too)
  // stats
  std::uint64_t warp_instructions_ = 0, thread_instructions_ = 0, tensor_flops_ = 0, active_cycles_ = 0,
                resident_warp_cycles_ = 0, ctas_launched_ = 0, lsu_busy_cycles_ = 0, l1_bytes_ = 0,
                shared_bytes_ = 0, l1_read_sectors_ = 0, l1_hit_sectors_ = 0, l2_requests_ = 0;
  std::array<std::uint64_t, 7> pipe_busy_{};
  std::array<std::uint64_t, kStallNames.size()> stalls_{};
};

Schema l1_schema() {
  Schema s("l1", "l1", "per-SM L1 data cache, sharing one SRAM with shared memory");
  const auto req = std::nullopt;
  s.quantity("unified_size", ParamType::Size, req, "L1 + shared memory SRAM per SM; L1 gets what resident CTAs' shared memory leaves", 0, 64ull << 20);
  s.quantity("line_size", ParamType::Size, req, "cache line size (power of two; equal to l2.line_size)", 32, 4096);
  s.quantity("sector_size", ParamType::Size, req, "sector size (power of two; equal to l2.sector_size)", 8, 4096);
  s.uint("assoc", "ways", req, "associativity", 1, 1024);
  s.uint("hit_latency", "cycles", req, "SM cycles, load-to-use of an L1 hit", 1, 10000);
  s.uint("bandwidth", "B/cycle", req, "bytes per SM cycle through the L1 data path for global/local accesses", 1, 4096);
  s.uint("mshrs", "lines", req, "outstanding missed lines per SM", 1, 1 << 20);
  return s;
}

Schema smem_schema() {
  Schema s("smem", "smem", "shared memory (bank-conflict-free first cut: bandwidth-limited)");
  const auto req = std::nullopt;
  s.uint("latency", "cycles", req, "SM cycles, load-to-use of a shared-memory load", 1, 10000);
  s.uint("bandwidth", "B/cycle", req, "bytes per SM cycle", 1, 4096);
  s.uint("banks", "banks", req, "shared-memory banks (used by the bank-conflict model of a later version)", 1, 1024);
  return s;
}

WARPSIM_REGISTER_COMPONENT(StreamingMultiprocessor, SubpartitionedSm, "sm", "subpartitioned",
                           "SM with sub-partitioned warp schedulers, scoreboard, pipes, LSU/L1/shared memory");
WARPSIM_REGISTER_SECTION("l1", &l1_schema, "L1 data cache of each SM");
WARPSIM_REGISTER_SECTION("smem", &smem_schema, "shared memory of each SM");

}  // namespace
}  // namespace warpsim
