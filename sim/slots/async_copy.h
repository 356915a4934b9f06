// Seam for an asynchronous copy engine beside the LSU (Hopper's Tensor Memory Accelerator: cp.async.bulk,
// cp.async.bulk.tensor) and for the transaction-count barriers (mbarrier) its copies complete on. The shipped
// engine is `tma` (models/sm/memory/tma_engine.cpp, UTMALDG). An engine registered as an implementation of
// config section `async_copy` is created by the SM's memory pipeline (one per SM) and offered every memory
// instruction at issue, before the LSU.
//
// Protocol:
//  * At issue (the cycle the warp scheduler picks the instruction), MemoryPipeline::issue() asks handles();
//    if true the instruction bypasses the LSU queue and start() gets it with a record id the pipeline has
//    already opened. The engine then owns its timing: it generates its own L2 traffic through the "noc" slot (ctx.get<Interconnect>("noc")) (with
//    MemRequest::sm = its SM and an id it chooses) and its responses come back through receive_response().
//  * Completion: the engine calls AsyncCopyCompletions::copy_done(record, cycle) once for the instruction,
//    when its last byte is in shared memory. The pipeline completes the record like an LDGSTS line: an LDGSTS
//    an engine takes stays in the warp's cp.async group (DEPBAR); any other copy (UTMALDG, completed on an
//    mbarrier) is in no cp.async group, and only the drain at EXIT waits for it.
//  * Time: the engine sends each request at the cycle it leaves the engine, never stamped in the future (a
//    future stamp would reserve the SM's NoC port ahead of the LSU's requests). For work due later it returns
//    that cycle from next_event(); the pipeline wakes the SM then and calls advance().
//  * mbarrier: for copies that signal an mbarrier (complete_tx::bytes), the engine also reports the bytes with
//    transaction_bytes(); the pipeline forwards them to the SM core, which owns the CTA's barriers and wakes
//    warps waiting on that mbarrier's phase (SYNCS_PHASECHK_TRANS64_TRYWAIT).
#pragma once

#include <cstdint>

#include "sim/slots/mem_request.h"
#include "sim/slots/memory.h"
#include "sim/core/types.h"
#include "sim/trace/inst.h"

namespace warpsim {

// Implemented by the memory pipeline; how an engine reports back.
class AsyncCopyCompletions {
 public:
  virtual ~AsyncCopyCompletions() = default;
  // The copy of record `record` has all its data at SM cycle `at` (>= the current cycle).
  virtual void copy_done(std::uint32_t record, Cycle at) = 0;
  // `bytes` arrived for mbarrier `mbarrier` (its shared-memory address) of the issuing warp's CTA.
  virtual void transaction_bytes(std::uint32_t warp_slot, std::uint64_t mbarrier, std::uint32_t bytes, Cycle at) = 0;
  // The linear id of warp `warp_slot`'s CTA (a multicast copy's destinations are its cluster's CTAs).
  virtual std::uint64_t cta_of(std::uint32_t warp_slot) const = 0;
};

// One asynchronous copy engine per SM (config section `async_copy`, when an implementation is registered).
class AsyncCopyEngine {
 public:
  virtual ~AsyncCopyEngine() = default;
  // Called for every memory instruction at issue; true to take it instead of the LSU.
  virtual bool handles(const WarpInst& in) const = 0;
  // Starts the copy of `in`, issued by warp slot `warp_slot` at SM cycle `now`; report through `done`.
  virtual void start(const WarpInst& in, std::uint32_t record, std::uint32_t warp_slot, Cycle now,
                     AsyncCopyCompletions& done) = 0;
  // An L2 response addressed to the engine (it recognises its own request ids); false if not its own.
  virtual bool receive_response(const MemRequest& resp, Cycle now) = 0;
  // The next SM cycle at which the engine has work of its own (kSleep if none), and that work, done at `now`.
  virtual Cycle next_event() const { return kSleep; }
  virtual void advance(Cycle now) { (void)now; }
};

}  // namespace warpsim
