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
#include <vector>

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
  // A set-associative cache of code lines with LRU replacement; each line knows when its fill completes.
  class LineCache {
   public:
    void configure(std::uint64_t bytes, std::uint32_t line_bytes, std::uint32_t ways);
    // The way holding `line`, or nullptr.
    struct Way {
      std::uint64_t line = kInvalid;
      Cycle ready = 0;
      std::uint64_t last_use = 0;
    };
    Way* find(std::uint64_t line);
    // Puts `line` in its set, evicting the least recently used way, and returns it.
    Way& insert(std::uint64_t line, Cycle ready);

   private:
    static constexpr std::uint64_t kInvalid = ~std::uint64_t{0};
    std::uint32_t sets_ = 0, ways_ = 0;
    std::uint64_t uses_ = 0;
    std::vector<Way> ways_storage_;
  };

  std::vector<LineCache> l0_;  // per sub-partition
  LineCache l1_;
  std::uint32_t line_shift_ = 7;
  Cycle l0_miss_latency_ = 0, l1_miss_latency_ = 0;
  std::uint64_t kernel_tag_ = 0;
  std::uint64_t lookups_ = 0, l0_misses_ = 0, l1_misses_ = 0;
};

}  // namespace warpsim
