// The SM's memory pipeline (see memory_pipeline.h): LSU, L1 with MSHRs, shared memory, L1-bypassing lines.
#include "models/sm/memory/memory_pipeline.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/slots/build_context.h"
#include "sim/registry/registry.h"

namespace warpsim {

namespace {
// The eviction priority of a cache operator's lines (ld.cs and ld.lu stream: first to go; the others keep normal
// priority where they allocate).
EvictPriority eviction_priority(CacheOp op) {
  switch (op) {
    case CacheOp::EvictFirst: return EvictPriority::First;
    case CacheOp::EvictLast: return EvictPriority::Last;
    default: return EvictPriority::Normal;
  }
}
}  // namespace

MemoryPipeline::MemoryPipeline(Component& sm, BuildContext& ctx, const Params& sm_params, unsigned index,
                               MemoryPipelineClient& client)
    : sm_(sm),
      index_(index),
      client_(client),
      noc_(ctx.get<Interconnect>("noc")),
      address_map_(ctx.get<AddressMap>("address_map")),
      // Bounded by this SM's own MSHRs and store records: every response answers a request it sent.
      responses_(sm.path() + ".responses", 1, Port<MemRequest>::kUnbounded) {
  const Registry& registry = Registry::instance();
  l1_ = registry.create<L1Cache>("l1", ctx.config.section("l1"), ctx, index);
  l1g_ = l1_->geometry();
  if (registry.find("async_copy"))
    async_copy_ = registry.create<AsyncCopyEngine>("async_copy", ctx.config.section("async_copy"), ctx, index);
  queue_depth_ = sm_params.u32("lsu_queue_depth");
  const Params& smem = ctx.config.section("smem");
  smem_latency_ = smem.u64("latency");
  smem_bandwidth_ = smem.u32("bandwidth");
  smem_banks_.banks = smem.u32("banks");
  smem_banks_.bank_bytes = smem.u32("bank_bytes");
  smem_remote_latency_ = smem.u64("remote_latency");
  smem_remote_bytes_per_cycle_ = smem.real("remote_bytes_per_cycle");
  if (smem_banks_.bank_bytes != 4 && smem_banks_.bank_bytes != 8) smem.fail("bank_bytes", "must be 4 or 8");
  responses_.bind(nullptr, &sm);
  responses_.add_probes(ctx.probes);
  // L1-bypassing lines only complete their instruction later: taken when sent, no tick at arrival.
  responses_.take_on_send([this](const MemRequest& resp, Cycle arrival) {
    if (!resp.bypass_l1) return false;
    bypass_arrivals_.push(arrival);
    complete_at(resp.id, arrival + l1g_.hit_latency);
    if (lsu_blocked_ && arrival < lsu_next_) {  // an LSU waiting for an MSHR goes on when this line arrives
      lsu_next_ = arrival;
      sm_.wake_at(arrival);
    }
    return true;
  });
  noc_.attach_sm(index, &responses_);
}

MemoryPipeline::~MemoryPipeline() = default;

void MemoryPipeline::add_stats(StatGroup& g) const {
  g.add("lsu_busy_cycles", "cycles", "cycles the LSU data path was busy", lsu_busy_cycles_)
      .add("l1_bytes", "bytes", "global/local bytes moved through the L1 data path", l1_bytes_)
      .add("shared_bytes", "bytes", "shared-memory bytes accessed", shared_bytes_)
      .add("l1_read_sectors", "sectors", "global-load sectors looked up in L1", l1_read_sectors_)
      .add("l1_hit_sectors", "sectors", "global-load sectors that hit in L1", l1_hit_sectors_)
      .add("l2_requests", "requests", "line requests sent to L2", l2_requests_)
      .add("global_evict_first_instructions", "instructions",
           "LDG/STG with an evict-first cache operator (.EF, .LU; ld.cs): evicted first in L1 and L2",
           cache_op_instructions_[static_cast<std::size_t>(CacheOp::EvictFirst)])
      .add("global_evict_last_instructions", "instructions", "LDG/STG with L1::evict_last (.EL): evicted last in L1",
           cache_op_instructions_[static_cast<std::size_t>(CacheOp::EvictLast)])
      .add("global_no_allocate_instructions", "instructions",
           "LDG/STG with L1::no_allocate (.NA): loads look L1 up but do not fill it",
           cache_op_instructions_[static_cast<std::size_t>(CacheOp::NoAllocate)])
      .add("global_l1_bypass_instructions", "instructions",
           "LDG/STG whose cache operator goes past L1 (ld.cg/.cv, .STRONG.GPU/.SYS)",
           cache_op_instructions_[static_cast<std::size_t>(CacheOp::Bypass)])
      .add("smem_requests_ld", "requests", "shared-memory load instructions (LDS, LDSM) executed", smem_requests_ld_)
      .add("smem_requests_st", "requests", "shared-memory store instructions (STS) executed", smem_requests_st_)
      .add("smem_wavefronts_ld", "wavefronts",
           "shared-memory load wavefronts: conflict-free passes through the banks "
           "(l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld)", smem_wavefronts_ld_)
      .add("smem_wavefronts_st", "wavefronts",
           "shared-memory store wavefronts (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st)", smem_wavefronts_st_)
      .add("smem_bank_conflicts_ld", "wavefronts",
           "shared-memory load wavefronts beyond the ideal for the words accessed "
           "(l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld)", smem_conflicts_ld_)
      .add("smem_bank_conflicts_st", "wavefronts",
           "shared-memory store wavefronts beyond the ideal (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st)",
           smem_conflicts_st_)
      .add("smem_busy_cycles", "cycles",
           "shared-memory data-path cycles: wavefronts x smem.banks x smem.bank_bytes / smem.bandwidth", smem_busy_cycles_)
      .add("smem_remote_requests", "instructions",
           "loads and stores of other cluster CTAs' shared memory (distributed shared memory)", smem_remote_requests_)
      .add("smem_remote_bytes", "bytes", "bytes of those accesses, over the SM-to-SM network", smem_remote_bytes_)
      .add("smem_remote_busy_cycles", "cycles",
           "cycles this SM's distributed-shared-memory bytes occupy its share of the SM-to-SM network "
           "(bytes / smem.remote_bytes_per_cycle)", smem_remote_busy_cycles_);
  // Derived metrics, each against this SM's own peak.
  const double hz = static_cast<double>(sm_.domain().frequency_hz());
  g.ratio("l1_hit_rate", "l1_hit_sectors", "l1_read_sectors", "global-load sector hit rate in L1 (l1tex__t_sector_hit_rate)")
      .utilization("lsu_utilization", "lsu_busy_cycles", hz, "LSU data path busy cycles against SM cycles")
      .utilization("l1_utilization", "l1_bytes", hz * l1g_.bandwidth, "L1 data-path bytes against l1.bandwidth per SM cycle")
      .utilization("dsmem_utilization", "smem_remote_busy_cycles", hz,
                   "SM-to-SM network cycles of this SM's distributed-shared-memory accesses against SM cycles")
      .utilization("smem_utilization", "smem_busy_cycles", hz,
                   "shared-memory data-path cycles (wavefronts) against SM cycles "
                   "(l1tex__data_pipe_lsu_wavefronts_mem_shared)");
}

std::string MemoryPipeline::describe_state() const {
  return "LSU queue " + std::to_string(queue_.size()) + ", L1 misses outstanding " + std::to_string(misses_.size());
}

inline std::uint32_t MemoryPipeline::new_record() {
  if (!free_records_.empty()) {
    const std::uint32_t r = free_records_.back();
    free_records_.pop_back();
    return r;
  }
  records_.emplace_back();
  return static_cast<std::uint32_t>(records_.size() - 1);
}

MemKind MemoryPipeline::issue(std::uint32_t warp_slot, const WarpInst& in, std::uint64_t async_group, Cycle now,
                              bool remote_shared) {
  const std::uint32_t id = new_record();
  MemRecord& r = records_[id];
  r.warp = warp_slot;
  r.next_line = 0;
  r.done = 0;
  r.lines.clear();
  r.dst = in.dst;
  r.shared_bytes = 0;
  r.remote_shared = false;
  r.l1_lookup = r.l1_allocate = true;
  r.priority = eviction_priority(in.cache);
  if (async_copy_ && async_copy_->handles(in)) {  // completed by the engine through copy_done()
    r.kind = in.op == Opcode::LDGSTS ? MemKind::AsyncCopy : MemKind::BulkCopy;
    r.l1_lookup = r.l1_allocate = false;
    r.group = async_group;
    r.remaining = 1;
    async_copy_->start(in, id, warp_slot, now, *this);
    return r.kind;
  }
  const bool store = opcode_info(in.op).is_store;
  // Every record is completed exactly once (an instruction without active lanes one cycle after issue), so
  // the core raises the warp's in-flight counts at issue unconditionally and lowers them when it is finished.
  if (in.space == MemSpace::Shared) {
    r.kind = store ? MemKind::SharedStore : MemKind::SharedLoad;
    r.shared_bytes = static_cast<std::uint32_t>(in.active_lanes()) * std::max<std::uint32_t>(in.access_bytes, 1);
    r.shared = shared_wavefronts(in, smem_banks_);
    r.remote_shared = remote_shared;
    r.remaining = 1;
  } else {
    coalesce(in, l1g_.line_bytes, l1g_.sector_bytes, r.lines);
    r.remaining = static_cast<std::uint32_t>(r.lines.size());
    if (in.op == Opcode::LDGSTS) {
      r.kind = MemKind::AsyncCopy;
      r.l1_lookup = r.l1_allocate = false;  // cp.async.cg bypasses L1, as CUTLASS uses it for 16-byte copies
      r.group = async_group;
    } else if (in.op == Opcode::ATOMG) {
      r.kind = MemKind::Atomic;
      r.l1_lookup = r.l1_allocate = false;  // performed at L2
    } else {
      r.kind = store ? MemKind::Store : MemKind::Load;
      r.l1_lookup = in.cache != CacheOp::Bypass;  // ld.cg/.cv and gpu-scope strong loads read L2 (L1 is not coherent)
      r.l1_allocate = r.l1_lookup && in.cache != CacheOp::NoAllocate;
    }
    ++cache_op_instructions_[static_cast<std::size_t>(in.cache)];
  }
  const MemKind kind = r.kind;
  if (r.remaining == 0) {  // no active lanes: nothing to wait for
    r.remaining = 1;
    r.lines.clear();
    complete_at(id, now + 1);
    return kind;
  }
  queue_.push_back(id);
  ++queued_;
  if (lsu_next_ == kSleep && !lsu_blocked_) {
    lsu_next_ = now + 1;
    sm_.wake_at(lsu_next_);
  }
  return kind;
}

// Processes one wavefront of the instruction at the head of the LSU queue.
void MemoryPipeline::lsu_step(Cycle now) {
  lsu_blocked_ = false;  // set again below if there is still no MSHR
  if (queue_.empty()) {
    lsu_next_ = kSleep;
    return;
  }
  const std::uint32_t id = queue_.front();
  MemRecord& r = records_[id];
  if (r.kind == MemKind::SharedLoad || r.kind == MemKind::SharedStore) {
    // One wavefront moves one bank row (smem.banks x smem.bank_bytes); the data path moves smem.bandwidth bytes
    // per cycle, so a bank row per cycle on every shipped GPU.
    const std::uint64_t wavefront_bytes = std::uint64_t{r.shared.wavefronts} * smem_banks_.row_bytes();
    const Cycle busy = (wavefront_bytes + smem_bandwidth_ - 1) / smem_bandwidth_;
    shared_bytes_ += r.shared_bytes;
    smem_busy_cycles_ += busy;
    if (r.kind == MemKind::SharedLoad) {
      ++smem_requests_ld_;
      smem_wavefronts_ld_ += r.shared.wavefronts;
      smem_conflicts_ld_ += r.shared.conflicts();
    } else {
      ++smem_requests_st_;
      smem_wavefronts_st_ += r.shared.wavefronts;
      smem_conflicts_st_ += r.shared.conflicts();
    }
    if (r.remote_shared) {
      // Distributed shared memory: after the local data path, the bytes cross the SM-to-SM network at this SM's
      // share of it, then the remote latency (in place of the local one).
      const double start = std::max(static_cast<double>(now + busy - 1), remote_port_free_);
      const double crossing = r.shared_bytes / smem_remote_bytes_per_cycle_;
      remote_port_free_ = start + crossing;
      smem_remote_busy_ += crossing;
      smem_remote_busy_cycles_ = static_cast<std::uint64_t>(smem_remote_busy_);
      ++smem_remote_requests_;
      smem_remote_bytes_ += r.shared_bytes;
      const Cycle crossed = static_cast<Cycle>(std::ceil(remote_port_free_ - 1e-9));
      complete_at(id, crossed + (r.kind == MemKind::SharedLoad ? smem_remote_latency_ : smem_remote_latency_ / 2));
    } else if (r.kind == MemKind::SharedLoad) {
      complete_at(id, now + busy - 1 + smem_latency_);
    } else {
      complete_at(id, now + busy);
    }
    pop_lsu(now, busy);
    return;
  }
  // All lines of the instruction in one step: line j goes through the data path at cycle t_j, one
  // wavefront (l1.bandwidth bytes) per cycle, and its request leaves for L2 at that cycle.
  Cycle t = now;
  for (; r.next_line < r.lines.size(); ++r.next_line) {
    const LineAccess& line = r.lines[r.next_line];
    const Cycle busy = std::max<Cycle>(1, (line.bytes + l1g_.bandwidth - 1) / l1g_.bandwidth);
    if (r.kind == MemKind::Store) {
      l1_->invalidate(line.line_addr, line.sector_mask);
      send_to_l2(line, MemOp::Write, t, id, r.priority);  // completes when L2 acknowledges it
    } else {
      const std::uint32_t hit = r.l1_lookup ? l1_->lookup(line.line_addr, line.sector_mask, r.priority) : 0;
      const std::uint32_t missing = line.sector_mask & ~hit;
      if (!missing) {
        complete_at(id, t + l1g_.hit_latency);
      } else if (!r.l1_allocate) {
        // L1-bypassing copy, atomic or non-allocating load: no merging by line, the response finds its instruction
        // by id.
        if (outstanding_misses(now) >= l1g_.mshrs) {
          block_lsu(now, t);
          return;
        }
        ++bypass_in_flight_;
        send_to_l2(LineAccess{line.line_addr, missing, 0}, r.kind == MemKind::Atomic ? MemOp::Atomic : MemOp::Read, t,
                   id, r.priority, /*bypass_l1=*/true);
      } else {
        Miss* miss = misses_.find(line.line_addr);
        if (!miss) {
          if (outstanding_misses(now) >= l1g_.mshrs) {  // wait for a fill to free an entry
            block_lsu(now, t);
            return;
          }
          miss = &misses_.insert(line.line_addr);
        }
        Miss& m = *miss;
        m.priority = r.priority;  // the latest access's: the line's when it is filled
        m.waiters.emplace_back(id, missing);
        const std::uint32_t fetch = missing & ~m.requested;
        if (fetch) {
          m.requested |= fetch;
          send_to_l2(LineAccess{line.line_addr, fetch, 0}, MemOp::Read, t, 0, m.priority);
        }
      }
      if (r.l1_lookup) {  // counted once the line has gone through, not each time it waited for an MSHR
        l1_read_sectors_ += static_cast<std::uint64_t>(__builtin_popcount(line.sector_mask));
        l1_hit_sectors_ += static_cast<std::uint64_t>(__builtin_popcount(hit));
      }
    }
    l1_bytes_ += line.bytes;
    t += busy;
  }
  pop_lsu(now, t - now);
}

inline void MemoryPipeline::pop_lsu(Cycle now, Cycle busy) {
  const bool was_full = !has_room();
  queue_.pop_front();
  --queued_;
  lsu_busy_cycles_ += busy;
  lsu_next_ = now + busy;
  if (queue_.empty()) lsu_next_ = kSleep;
  if (was_full) client_.lsu_has_room_again(now + 1);
}

// MSHRs in use at `now`: missed lines merged by address, plus L1-bypassing lines not yet arrived.
inline std::size_t MemoryPipeline::outstanding_misses(Cycle now) {
  while (!bypass_arrivals_.empty() && bypass_arrivals_.top() <= now) {
    bypass_arrivals_.pop();
    --bypass_in_flight_;
  }
  return misses_.size() + bypass_in_flight_;
}

inline void MemoryPipeline::send_to_l2(const LineAccess& line, MemOp op, Cycle when, std::uint32_t record,
                                       EvictPriority priority, bool bypass_l1) {
  MemRequest req;
  req.line_addr = line.line_addr;
  req.sector_mask = line.sector_mask;
  req.bytes = static_cast<std::uint32_t>(__builtin_popcount(line.sector_mask)) * l1g_.sector_bytes;
  req.op = op;
  req.sm = static_cast<std::uint16_t>(index_);
  req.id = record;
  req.bypass_l1 = bypass_l1;
  // ld.cs (evict-first) applies to L1 and L2; L1::evict_last is an L1 policy (PTX ISA, "Cache Operators" and
  // "Cache Eviction Priority Hints"): L2 keeps such lines at normal priority.
  req.priority = priority == EvictPriority::Last ? EvictPriority::Normal : priority;
  req.slice = static_cast<std::uint16_t>(address_map_.slice_of(line.line_addr));
  ++l2_requests_;
  noc_.send_request(req, sm_.domain().time_of(when));
}

void MemoryPipeline::on_response(const MemRequest& resp, Cycle now) {
  if (async_copy_ && async_copy_->receive_response(resp, now)) return;
  if (resp.op != MemOp::Read) {  // L2 acknowledged a store line
    complete_at(resp.id, now);
    return;
  }
  Miss* miss = misses_.find(resp.line_addr);
  if (!miss) return;
  Miss& m = *miss;
  l1_->fill(resp.line_addr, resp.sector_mask, m.priority);
  m.requested &= ~resp.sector_mask;
  auto& ws = m.waiters;
  for (auto& waiter : ws) waiter.second &= ~resp.sector_mask;
  auto done = std::stable_partition(ws.begin(), ws.end(), [](const auto& x) { return x.second != 0; });
  for (auto d = done; d != ws.end(); ++d) complete_at(d->first, now + l1g_.hit_latency);
  ws.erase(done, ws.end());
  if (ws.empty()) {
    misses_.erase(resp.line_addr);
    unblock_lsu(now);
  }
}

// No MSHR free: the LSU waits for a fill (on_response unblocks it) or for the next bypassing line to arrive.
inline void MemoryPipeline::block_lsu(Cycle now, Cycle t) {
  lsu_busy_cycles_ += t - now;
  lsu_blocked_ = true;
  lsu_next_ = bypass_arrivals_.empty() ? kSleep : bypass_arrivals_.top();
  if (lsu_next_ != kSleep) sm_.wake_at(std::max(lsu_next_, now + 1));
}

// An MSHR freed up: an LSU waiting for one continues next cycle.
inline void MemoryPipeline::unblock_lsu(Cycle now) {
  if (!lsu_blocked_) return;
  lsu_blocked_ = false;
  lsu_next_ = now + 1;
  sm_.wake_at(now + 1);
}

// One line (or shared-memory access) of a memory instruction has its data at `cycle`. The instruction
// completes when its last line does: only then is an event scheduled.
void MemoryPipeline::complete_at(std::uint32_t record, Cycle cycle) {
  MemRecord& r = records_[record];
  r.done = std::max(r.done, cycle);
  if (--r.remaining > 0) return;
  completions_.push(Completion{r.done, record});
  sm_.wake_at(std::max(r.done, sm_.domain().now() + 1));
}

namespace {

Schema smem_schema() {
  Schema s("smem", "smem", "shared memory: banks, bank conflicts replayed as wavefronts (models/sm/memory/smem_banks.h)");
  const auto req = std::nullopt;
  s.uint("latency", "cycles", req, "SM cycles, load-to-use of a shared-memory load", 1, 10000);
  s.uint("bandwidth", "B/cycle", req,
         "bytes per SM cycle of the shared-memory data path: one wavefront (banks x bank_bytes) takes "
         "banks x bank_bytes / bandwidth cycles", 1, 4096);
  s.uint("banks", "banks", req, "shared-memory banks: successive bank_bytes words map to successive banks", 1,
         kMaxSharedBanks);
  s.uint("bank_bytes", "bytes", 4,
         "width of one bank: 4 bytes (CUDA C++ Programming Guide, shared memory of compute capability 5.x and later)",
         4, 8);
  // Distributed shared memory (sm_90 clusters): LDS/STS on another CTA of the cluster cross the SM-to-SM network.
  s.uint("remote_latency", "cycles", 0,
         "SM cycles, load-to-use of a load from another cluster CTA's shared memory (distributed shared memory; "
         "in place of latency); 0 = no distributed shared memory: such an access is an error", 0, 100000);
  s.real("remote_bytes_per_cycle", "B/cycle", 0.0,
         "bytes per SM cycle an SM's accesses to other CTAs' shared memory move over the SM-to-SM network", 0.0, 4096.0);
  return s;
}

WARPSIM_REGISTER_SECTION("smem", &smem_schema, "shared memory of each SM");

}  // namespace

}  // namespace warpsim
