// A memory request between the SMs, the L2 slices and HBM: one cache line and the sectors of it touched.
#pragma once

#include <cstdint>

namespace warpsim {

// Invalidate: a home L2 slice tells a slice of another partition to drop its copy of a line (l2.partitions > 1).
enum class MemOp : std::uint8_t { Read, Write, Atomic, Invalidate };

// Eviction priority of the lines an access touches, from its cache operator (PTX evict_first / evict_last, ld.cs):
// a cache evicts evict-first lines before normal ones and normal ones before evict-last ones, least recently used
// first within each; the latest access to a line sets its priority.
enum class EvictPriority : std::uint8_t { First, Normal, Last };

struct MemRequest {
  std::uint64_t line_addr = 0;   // line-aligned byte address
  std::uint32_t sector_mask = 0; // bit i = sector i of the line
  std::uint32_t bytes = 0;       // payload bytes (sectors * sector size)
  MemOp op = MemOp::Read;
  bool bypass_l1 = false;        // requester tracks it by `id`, not by line (e.g. cp.async.cg copies)
  EvictPriority priority = EvictPriority::Normal;  // of the line in L2 (the access's cache operator)
  std::uint16_t sm = 0;          // requesting SM
  std::uint16_t slice = 0;       // L2 slice (filled in by the interconnect / slice)
  std::uint32_t id = 0;          // requester-private tag (SM: the memory instruction's record, for stores,
                                 // atomics and L1-bypassing lines; 0 for misses merged by line)
  // Partitioned L2 (l2.partitions > 1): the near-partition slice that asked the line's home slice for it (the
  // answer goes back to that slice's fill port, not to the SM); kNoSlice for a request from an SM.
  static constexpr std::uint16_t kNoSlice = 0xffff;
  std::uint16_t copy_slice = kNoSlice;
};

}  // namespace warpsim
