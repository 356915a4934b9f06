// LSU address coalescing: a warp's active lanes become the set of cache lines touched, each with the mask of
// 32-byte sectors it needs, in order of first touch. Accesses that straddle a sector or line boundary touch
// both.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/trace/inst.h"

namespace warpsim {

struct LineAccess {
  std::uint64_t line_addr;
  std::uint32_t sector_mask;
  std::uint32_t bytes;  // bytes the lanes asked for within this line (for bandwidth accounting)
};

// line_bytes and sector_bytes are powers of two. Remembered per address pattern (lane_pattern.h): the base enters
// modulo the line.
void coalesce(const WarpInst& inst, std::uint32_t line_bytes, std::uint32_t sector_bytes,
              std::vector<LineAccess>& out);
// The same, worked out lane by lane (what the memo remembers; tests compare the two).
void coalesce_lanes(const WarpInst& inst, std::uint32_t line_bytes, std::uint32_t sector_bytes,
                    std::vector<LineAccess>& out);

}  // namespace warpsim
