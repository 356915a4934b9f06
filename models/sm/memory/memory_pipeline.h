// An SM's memory pipeline: the LSU queue (MIO), address coalescing into sectors, the L1 slot with MSHRs that
// merge misses per line, shared memory (bandwidth-limited), L1-bypassing lines (cp.async.cg copies, atomics)
// tracked by id, stores acknowledged by L2, and the attach point of an asynchronous copy engine (async_copy.h).
// It tracks each memory instruction as a record until its data is back; the SM core owns the warps and learns
// of completed records in advance(). Shared-memory instructions take one data-path cycle per wavefront
// (smem_banks.h: bank conflicts replay).
#pragma once

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "sim/slots/mem_request.h"
#include "sim/slots/memory.h"
#include "sim/slots/async_copy.h"
#include "models/sm/memory/coalescer.h"
#include "models/sm/memory/smem_banks.h"
#include "sim/slots/l1_cache.h"
#include "sim/config/params.h"
#include "sim/core/component.h"
#include "sim/core/flat_map.h"
#include "sim/core/port.h"
#include "sim/core/ring_queue.h"
#include "sim/stats/stats.h"
#include "sim/trace/inst.h"

namespace warpsim {

class BuildContext;

// Atomic: read-modify-write performed at L2, returning the old value (RED, without a result, is a Store).
// AsyncCopy: cp.async (LDGSTS), counted in the warp's cp.async groups. BulkCopy: a copy engine's bulk copy
// (UTMALDG), completed on an mbarrier and in no cp.async group: the warp waits for it only at EXIT.
enum class MemKind : std::uint8_t { Load, Store, SharedLoad, SharedStore, AsyncCopy, BulkCopy, Atomic };

inline bool writes_registers(MemKind k) { return k == MemKind::Load || k == MemKind::SharedLoad || k == MemKind::Atomic; }

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
  SharedWavefronts shared;  // shared-memory wavefronts (computed at issue: Deltas addresses live for the batch only)
  bool remote_shared = false;  // another cluster CTA's shared memory: over the SM-to-SM network
  // Global accesses, from the kind and the cache operator: looked up in L1; missed sectors merged by line in the
  // MSHRs and allocated in L1 (else sent past it, tracked by record); the lines' eviction priority in L1 and L2.
  bool l1_lookup = true;
  bool l1_allocate = true;
  EvictPriority priority = EvictPriority::Normal;
};

// What the pipeline needs from the SM core.
class MemoryPipelineClient {
 public:
  virtual ~MemoryPipelineClient() = default;
  // The LSU queue was full and has room again from `now` on: warps held back by it may issue.
  virtual void lsu_has_room_again(Cycle now) = 0;
  // An asynchronous copy delivered `bytes` for an mbarrier of warp `warp_slot`'s CTA (see async_copy.h).
  virtual void mbarrier_transaction(std::uint32_t warp_slot, std::uint64_t mbarrier, std::uint32_t bytes, Cycle at) = 0;
  // The linear id of the CTA warp `warp_slot` belongs to.
  virtual std::uint64_t cta_of_warp(std::uint32_t warp_slot) const = 0;
};

class MemoryPipeline final : private AsyncCopyCompletions {
 public:
  // `sm`: the owning component (woken for LSU steps and completions); `sm_params`: its config section.
  MemoryPipeline(Component& sm, BuildContext& ctx, const Params& sm_params, unsigned index, MemoryPipelineClient& client);
  ~MemoryPipeline() override;

  // Start of a kernel: L1 gets what `shared_memory_in_use` leaves of the unified SRAM.
  void begin_kernel(std::uint64_t shared_memory_in_use) { l1_->begin_kernel(shared_memory_in_use); }

  // The GPU has distributed shared memory (smem.remote_latency > 0).
  bool has_distributed_shared_memory() const { return smem_remote_latency_ > 0 && smem_remote_bytes_per_cycle_ > 0; }

  // Whether a memory instruction may issue (the LSU queue is not full).
  bool has_room() const { return queued_ < queue_depth_; }

  // Takes a memory instruction of warp `warp_slot` at issue. `async_group`: the warp's open cp.async group
  // sequence number (used for LDGSTS). Returns its kind; the core marks its scoreboard and in-flight counts
  // accordingly, and releases them when `finish` of advance() reports the record.
  // `remote_shared`: a shared-memory access to another CTA of the cluster (distributed shared memory).
  MemKind issue(std::uint32_t warp_slot, const WarpInst& in, std::uint64_t async_group, Cycle now,
                bool remote_shared = false);

  // This cycle's work: L2 responses, then records whose data is complete by `now` (finish(record, cycle),
  // cycle <= now, in cycle order), then an LSU step if one is due.
  template <class Finish>
  void advance(Cycle now, Finish&& finish) {
    while (responses_.ready()) {
      on_response(responses_.front(), now);
      responses_.pop();
    }
    if (async_copy_) async_copy_->advance(now);
    while (!completions_.empty() && completions_.top().cycle <= now) {
      const Completion c = completions_.top();
      completions_.pop();
      finish(static_cast<const MemRecord&>(records_[c.record]), c.cycle);
      free_records_.push_back(c.record);
    }
    if (lsu_next_ <= now) lsu_step(now);
  }

  // Next cycle the pipeline has work of its own (kSleep if none).
  Cycle next_event() const {
    Cycle next = kSleep;
    if (!completions_.empty()) next = completions_.top().cycle;
    if (queued_ && lsu_next_ < next) next = lsu_next_;
    if (async_copy_) next = std::min(next, async_copy_->next_event());
    return next;
  }

  std::string describe_state() const;
  void add_stats(StatGroup& g) const;

 private:
  // Keyed by (cycle, record): unique while the record is in flight, so the order of completions does not
  // depend on the order in which they were announced.
  struct Completion {
    Cycle cycle;
    std::uint32_t record;
    bool operator>(const Completion& o) const { return cycle != o.cycle ? cycle > o.cycle : record > o.record; }
  };
  struct Miss {  // a missed line of L1 (allocating loads), merging the requests for it
    std::uint32_t requested = 0;
    EvictPriority priority = EvictPriority::Normal;  // the first missing access's: the line's when it is filled
    // (record, sectors it still needs): nearly always one or two, kept inline in the table entry
    boost::container::small_vector<std::pair<std::uint32_t, std::uint32_t>, 2> waiters;
  };

  // Helpers of lsu_step() and on_response(), used in memory_pipeline.cpp only: `inline` lets the compiler
  // fold them into their callers as it did when they were private to one class in one file.
  inline std::uint32_t new_record();
  void lsu_step(Cycle now);
  inline void pop_lsu(Cycle now, Cycle busy);
  inline std::size_t outstanding_misses(Cycle now);
  inline void send_to_l2(const LineAccess& line, MemOp op, Cycle when, std::uint32_t record, EvictPriority priority,
                         bool bypass_l1 = false);
  void on_response(const MemRequest& resp, Cycle now);
  inline void block_lsu(Cycle now, Cycle t);
  inline void unblock_lsu(Cycle now);
  void complete_at(std::uint32_t record, Cycle cycle);
  // AsyncCopyCompletions
  void copy_done(std::uint32_t record, Cycle at) override { complete_at(record, at); }
  void transaction_bytes(std::uint32_t warp_slot, std::uint64_t mbarrier, std::uint32_t bytes, Cycle at) override {
    client_.mbarrier_transaction(warp_slot, mbarrier, bytes, at);
  }
  std::uint64_t cta_of(std::uint32_t warp_slot) const override { return client_.cta_of_warp(warp_slot); }

  Component& sm_;
  unsigned index_;
  MemoryPipelineClient& client_;
  Interconnect& noc_;
  const AddressMap& address_map_;
  std::unique_ptr<L1Cache> l1_;
  L1Cache::Geometry l1g_;  // copied: read on every line
  std::unique_ptr<AsyncCopyEngine> async_copy_;  // none unless an implementation of `async_copy` is registered
  std::size_t queue_depth_ = 0;
  Cycle smem_latency_ = 0;
  std::uint32_t smem_bandwidth_ = 0;
  Cycle smem_remote_latency_ = 0;
  double smem_remote_bytes_per_cycle_ = 0, remote_port_free_ = 0, smem_remote_busy_ = 0;
  std::uint64_t smem_remote_requests_ = 0, smem_remote_bytes_ = 0, smem_remote_busy_cycles_ = 0;
  SharedBankGeometry smem_banks_;
  Port<MemRequest> responses_;
  RingQueue<std::uint32_t> queue_;  // records waiting for the LSU, in issue order
  std::size_t queued_ = 0;           // queue_.size(), asked at every scheduling decision
  Cycle lsu_next_ = kSleep;
  bool lsu_blocked_ = false;
  std::vector<MemRecord> records_;
  std::vector<std::uint32_t> free_records_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> completions_;
  // Delivery cycles of L1-bypassing lines announced but not yet arrived (their MSHR frees on arrival).
  std::priority_queue<Cycle, std::vector<Cycle>, std::greater<Cycle>> bypass_arrivals_;
  FlatMap64<Miss> misses_;            // L1 MSHRs by line address
  std::size_t bypass_in_flight_ = 0;  // L1-bypassing line requests in flight (they hold an MSHR too)
  std::array<std::uint64_t, static_cast<std::size_t>(CacheOp::Count)> cache_op_instructions_{};  // global accesses
  std::uint64_t lsu_busy_cycles_ = 0, l1_bytes_ = 0, shared_bytes_ = 0, l1_read_sectors_ = 0, l1_hit_sectors_ = 0,
                l2_requests_ = 0;
  // Nsight Compute's l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st} and
  // l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}; requests: shared-memory instructions.
  std::uint64_t smem_wavefronts_ld_ = 0, smem_wavefronts_st_ = 0, smem_conflicts_ld_ = 0, smem_conflicts_st_ = 0,
                smem_requests_ld_ = 0, smem_requests_st_ = 0, smem_busy_cycles_ = 0;
};

}  // namespace warpsim
