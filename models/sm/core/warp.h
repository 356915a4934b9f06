// State the SM core keeps per resident warp (fetch buffer, register scoreboard, what it is blocked on, stall
// accounting, cp.async groups) and per resident CTA (its warps and barrier arrivals).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/sm/exec/pipes.h"
#include "models/sm/stall_reason.h"
#include "sim/core/ring_queue.h"
#include "sim/core/types.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"

namespace warpsim {

inline constexpr int kRegs = 256;          // architectural registers per thread tracked by the scoreboard (R255 = RZ)
inline constexpr Cycle kPending = kSleep;  // register written by an instruction whose completion time is not known yet
inline constexpr std::size_t kFetchBatch = 32;
inline constexpr std::uint32_t kBarriers = kNamedBarriers;  // named barriers per CTA (PTX bar.sync 0..15)

// What a warp waits for besides fixed latencies and pipes (those are in ready_cycle and the pipes' free times).
enum class Block : std::uint8_t { None, MemDep, Barrier, DepBar, Drain, Exited, Mbarrier, Registers };

struct Warp {
  // What the scheduler reads every time it looks at the warp comes first, in one cache line; the fetch
  // buffer and the scoreboard arrays follow.
  Cycle ready_cycle = 0;
  Block block = Block::None;
  Pipe head_pipe = Pipe::None;  // of the head instruction, cached when it becomes the head
  bool head_ldst = false;
  StallReason dep_reason = StallReason::Wait;
  StallReason acct_reason = StallReason::Wait;  // stall accounting: reason in force since acct_since
  bool stream_end = false;
  std::uint32_t pos = 0, len = 0;
  std::uint32_t sp = 0;  // sub-partition
  std::uint32_t cta = 0;
  std::uint32_t barrier = 0;  // id of the barrier it waits at
  Cycle acct_since = 0;
  // Instruction fetch: the code line of the head instruction and when it is in the sub-partition's L0.
  std::uint64_t fetch_line = ~std::uint64_t{0};
  Cycle fetch_ready = 0;
  std::uint32_t loads_in_flight = 0;
  std::uint32_t stores_in_flight = 0;  // store lines not yet acknowledged by L2
  // cp.async groups: LDGSTS instructions still in flight per committed group, oldest first, plus the open group
  std::uint32_t open_group = 0;
  std::uint64_t groups_retired = 0;  // sequence number of groups.front()
  RingQueue<std::uint32_t> groups;
  // Bulk copies of the copy engine (UTMALDG) in flight: completed on mbarriers, in no cp.async group; EXIT drains them.
  std::uint32_t bulk_copies_in_flight = 0;
  // wgmma groups: completion cycle of each committed group still executing, oldest first (they complete in order:
  // one in-order tensor pipe per sub-partition), and of the HGMMAs issued since the last commit.
  RingQueue<Cycle> wgmma_groups;
  Cycle wgmma_open_done = 0;
  Cycle tcgen05_done = 0;  // completion of the last tcgen05.mma (UTCMMA) the warp issued (what UTCBAR waits for)
  Cycle spin_since = kSleep;  // the first poll of the spin-wait the warp is in (kSleep: none)
  std::uint32_t registers = 0;  // per thread, as launched or as setmaxnreg last set
  std::unique_ptr<WarpStream> stream;
  std::array<WarpInst, kFetchBatch> buf{};
  std::array<Cycle, kRegs> reg_ready{};
  std::array<StallReason, kRegs> reg_reason{};

  // Sequence number of the open cp.async group (the one LDGSTS issued now joins).
  std::uint64_t open_group_seq() const { return groups_retired + groups.size(); }

  // wgmma.commit_group at cycle `now`: closes the group of the HGMMAs issued since the last commit (an empty
  // group is complete at once). Groups complete in order (wait_group counts the oldest ones), so a small-N group
  // after a large-N one completes no earlier than it. Groups complete by `now` are dropped first: a program that
  // commits and never waits keeps only those still executing.
  void commit_wgmma_group(Cycle now) {
    while (!wgmma_groups.empty() && wgmma_groups.front() <= now) wgmma_groups.pop_front();
    const Cycle done = std::max(wgmma_open_done, now + 1);
    wgmma_groups.push_back(wgmma_groups.empty() ? done : std::max(done, wgmma_groups.back()));
    wgmma_open_done = 0;
  }

  void reset() {
    stream.reset();
    pos = len = 0;
    stream_end = false;
    reg_ready.fill(0);
    reg_reason.fill(StallReason::Wait);
    ready_cycle = 0;
    block = Block::None;
    fetch_line = ~std::uint64_t{0};
    fetch_ready = 0;
    groups.clear();
    groups_retired = 0;
    wgmma_groups.clear();
    wgmma_open_done = 0;
    tcgen05_done = 0;
    spin_since = kSleep;
    open_group = 0;
    bulk_copies_in_flight = 0;
    loads_in_flight = 0;
    stores_in_flight = 0;
  }
};

using PipeFreeTimes = std::array<Cycle, static_cast<std::size_t>(Pipe::Count)>;  // per sub-partition

// Cycle from which the warp could issue if its scheduler picked it, given its sub-partition's pipes (kSleep
// while it waits for an event: memory data, a barrier, cp.async groups, the drain at EXIT).
inline Cycle earliest_issue(const Warp& w, const PipeFreeTimes& pipe_free) {
  if (w.block != Block::None) return kSleep;
  if (w.pos == w.len) return w.ready_cycle;  // end of stream: retires as soon as it is picked
  const Pipe p = w.head_pipe;
  Cycle t = w.ready_cycle;
  if (p != Pipe::None) t = std::max(t, pipe_free[static_cast<std::size_t>(p)]);
  return t;
}

// A transaction barrier (mbarrier) in the CTA's shared memory: a phase completes when its expected arrivals have
// arrived and the transaction bytes they announced (expect_tx) have been delivered by asynchronous copies.
struct Mbarrier {
  bool initialised = false;
  std::uint32_t arrivals_per_phase = 0;
  std::uint32_t pending_arrivals = 0;
  std::int64_t pending_bytes = 0;     // announced by expect_tx minus delivered (delivery may come first)
  std::uint64_t completed_phases = 0;
  Cycle last_completion = 0;          // cycle the last phase completed (data in shared memory by then)
};

struct Cta {
  bool active = false;
  std::uint64_t id = 0;
  std::vector<std::uint32_t> warps;
  std::uint32_t live_warps = 0;
  std::array<std::uint32_t, kBarriers> barrier_arrived{};  // per barrier id: arrivals (BAR, BAR_ARV) this phase
  std::array<std::uint32_t, kBarriers> barrier_expected{};  // per barrier id: warps this phase expects (the
                                                            // arrivals' `group`; 0 = every live warp), set by its
                                                            // first arrival
  std::array<Mbarrier, kMbarriers> mbarriers{};
  std::uint64_t free_registers = 0;  // released by setmaxnreg.dec and not yet taken by an inc (registers, x 32 lanes)
  std::unique_ptr<CtaSource> source;
};

}  // namespace warpsim
