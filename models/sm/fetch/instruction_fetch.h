// Instruction fetch of an SM: each sub-partition fetches through its own L0 instruction cache, backed by the SM's
// L1 instruction cache, backed by the memory system (a fixed latency). A warp whose next instruction's line is
// not in its sub-partition's L0 cannot issue until the line arrives: Nsight's stall_no_instruction. Warps of one
// sub-partition share its L0, so two warps running different code regions (a loop and another CTA's prologue)
// evict each other's lines, while warps running the same loop fetch it once.
//
// Code addresses are the traces' pc values (16 bytes per SASS instruction); the lines of different kernels never
// hit each other. Fills are not bandwidth-limited and nothing is prefetched (what the miss latencies were fitted
// with: sm.icache.* in the GPU configs).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "models/mem/sector_cache.h"
#include "sim/config/params.h"
#include "sim/config/schema.h"
#include "sim/core/types.h"
#include "sim/stats/stats.h"

namespace warpsim {

class InstructionFetch {
 public:
  // Declares the `sm` section's icache.* keys.
  static void declare(Schema& s);
  void read(const Params& sm, unsigned subpartitions);

  // False when sm.icache.l0_size is 0: every instruction is in place when the warp reaches it.
  bool enabled() const { return !l0_.empty(); }
  // Line of code address `pc` of the current kernel (unique across kernels run on this SM).
  std::uint64_t line_of(std::uint32_t pc) const { return kernel_tag_ | (pc >> line_shift_); }
  // A new kernel starts on the SM: its code is new.
  void begin_kernel() { kernel_tag_ += std::uint64_t{1} << 40; }

  // Cycle from which `line` is in sub-partition `sp`'s L0, looked up at `now` (a miss starts its fill).
  Cycle fetch(unsigned sp, std::uint64_t line, Cycle now);

  void add_stats(StatGroup& g) const;

 private:
  // A level: the tag array (models/mem's SectorCache, one sector per line, LRU) and the fills still under way,
  // with the cycle each completes (a resident line not in the map is complete). Lines are given by their address
  // (line << line_shift_), as SectorCache takes them.
  struct Level {
    SectorCache tags;
    std::unordered_map<std::uint64_t, Cycle> filling;
    // True when the line at `addr` is resident or on its way; `ready` is then the cycle it is complete (0: long since).
    bool lookup(std::uint64_t addr, Cycle& ready);
    // Allocates the line at `addr` (evicting the set's least recently used line), complete at `ready`; returns `ready`.
    Cycle fill(std::uint64_t addr, Cycle ready);
  };

  std::vector<Level> l0_;  // per sub-partition
  Level l1_;
  std::uint32_t line_shift_ = 7;
  Cycle l0_miss_latency_ = 0, l1_miss_latency_ = 0;
  std::uint64_t kernel_tag_ = 0;
  std::uint64_t lookups_ = 0, l0_misses_ = 0, l1_misses_ = 0;
};

}  // namespace warpsim
