// Tag array of a sectored, set-associative cache with LRU replacement within eviction priorities (NVIDIA L1 and
// L2 keep 128-byte lines of four 32-byte sectors; a miss fetches only the missing sectors). Holds tags and state,
// no data.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/slots/mem_request.h"

namespace warpsim {

class SectorCache {
 public:
  struct Eviction {
    bool valid = false;
    std::uint64_t line_addr = 0;
    std::uint32_t dirty_mask = 0;
  };

  SectorCache() = default;
  // `set_index_divisor`: the line index is divided by it before choosing the set (to skip the bits that
  // already picked a slice).
  SectorCache(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t sector_bytes,
              std::uint32_t assoc, std::uint32_t set_index_divisor = 1);

  // Host bytes the tag array of a cache of `size_bytes` takes (for the model's memory estimate).
  static std::uint64_t footprint_bytes(std::uint64_t size_bytes, std::uint32_t line_bytes);

  bool enabled() const noexcept { return sets_ > 0; }
  std::uint32_t line_bytes() const noexcept { return line_bytes_; }
  std::uint32_t sector_bytes() const noexcept { return sector_bytes_; }
  std::uint64_t num_sets() const noexcept { return sets_; }
  // Modified sectors held now (not yet written back): what a write-back cache still owes memory.
  std::uint64_t dirty_sectors() const noexcept { return dirty_sectors_; }

  // Sectors of `sector_mask` present in the cache; a hit on any sector refreshes the line's LRU position and gives
  // it `priority`.
  std::uint32_t lookup(std::uint64_t line_addr, std::uint32_t sector_mask,
                       EvictPriority priority = EvictPriority::Normal);
  // Makes `sector_mask` present (allocating the line if needed, evicting the set's line of the lowest priority,
  // least recently used among those); `dirty` marks them modified (write-back caches).
  Eviction fill(std::uint64_t line_addr, std::uint32_t sector_mask, bool dirty,
                EvictPriority priority = EvictPriority::Normal);
  void invalidate(std::uint64_t line_addr, std::uint32_t sector_mask);
  // Sets from a key instead of the line index: set = key(line_addr) / set_index_divisor % sets. A cache behind an
  // address hash (an L2 slice) keys sets by the hash, so that the lines it holds spread evenly over its sets.
  void key_sets_by(std::function<std::uint64_t(std::uint64_t line_addr)> key) { set_key_ = std::move(key); }

 private:
  // Tags of a set sit together (a lookup reads one or two host cache lines); the rest of a way's state apart.
  static constexpr std::uint64_t kNoTag = ~std::uint64_t{0};
  struct WayState {
    std::uint64_t last_use = 0;  // eviction order: the priority in the top bits, the use clock below (use_rank)
    std::uint32_t valid = 0;  // sector bits
    std::uint32_t dirty = 0;
  };
  // Index of the way holding `line_addr`, or -1.
  std::int64_t find(std::uint64_t line_addr) const;
  // A way's eviction rank after a use now: the lowest rank goes first. The priority above the use clock keeps LRU
  // within a priority (and, with every access at normal priority, exactly LRU).
  std::uint64_t use_rank(EvictPriority priority) {
    return static_cast<std::uint64_t>(priority) << kPriorityShift | ++use_clock_;
  }
  static constexpr unsigned kPriorityShift = 62;  // the use clock counts accesses: far below 2^62
  std::uint64_t set_of(std::uint64_t line_addr) const {
    return ((set_key_ ? set_key_(line_addr) : line_addr / line_bytes_) / set_index_divisor_) % sets_;
  }

  std::uint32_t line_bytes_ = 128, sector_bytes_ = 32, assoc_ = 0, set_index_divisor_ = 1;
  std::uint64_t sets_ = 0;
  std::uint64_t use_clock_ = 0;
  std::uint64_t dirty_sectors_ = 0;
  std::vector<std::uint64_t> tags_;  // sets_ * assoc_, kNoTag when the way holds no line
  std::vector<WayState> state_;      // sets_ * assoc_
  std::function<std::uint64_t(std::uint64_t)> set_key_;
};

}  // namespace warpsim
