// L1 data cache slot of an SM (config section `l1`; `l1.impl` picks the implementation, one instance per SM,
// created by the SM's memory pipeline through the registry). It holds tags and state only: the memory
// pipeline decides what to look up, fill and invalidate, merges misses in its MSHRs and sends them to L2.
#pragma once

#include <cstdint>

#include "sim/core/types.h"
#include "sim/slots/mem_request.h"

namespace warpsim {

class L1Cache {
 public:
  // Fixed by the config: the pipeline reads them once. Line and sector sizes are powers of two and equal to
  // L2's, so that a missed line maps to one L2 request.
  struct Geometry {
    std::uint32_t line_bytes = 0, sector_bytes = 0;
    Cycle hit_latency = 0;        // SM cycles, load-to-use of a hit
    std::uint32_t bandwidth = 0;  // bytes per SM cycle through the data path
    std::uint32_t mshrs = 0;      // outstanding missed lines
  };

  virtual ~L1Cache() = default;
  const Geometry& geometry() const noexcept { return geometry_; }

  // Start of a kernel: L1 shares its SRAM with shared memory and keeps what the resident CTAs leave; the
  // contents are dropped.
  virtual void begin_kernel(std::uint64_t shared_memory_in_use) = 0;
  // Sectors of `sector_mask` present; a hit gives the line the access's eviction priority.
  virtual std::uint32_t lookup(std::uint64_t line_addr, std::uint32_t sector_mask, EvictPriority priority) = 0;
  // Sectors arrived from L2 (clean), allocated at the missing access's eviction priority.
  virtual void fill(std::uint64_t line_addr, std::uint32_t sector_mask, EvictPriority priority) = 0;
  // A store went past L1 (write-through, no allocate): drop stale sectors.
  virtual void invalidate(std::uint64_t line_addr, std::uint32_t sector_mask) = 0;

 protected:
  Geometry geometry_;
};

}  // namespace warpsim
