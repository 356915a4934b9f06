#include "models/mem/sector_cache.h"

namespace warpsim {

SectorCache::SectorCache(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t sector_bytes,
                         std::uint32_t assoc, std::uint32_t set_index_divisor)
    : line_bytes_(line_bytes),
      sector_bytes_(sector_bytes),
      assoc_(assoc),
      set_index_divisor_(set_index_divisor == 0 ? 1 : set_index_divisor) {
  const std::uint64_t lines = line_bytes ? size_bytes / line_bytes : 0;
  sets_ = assoc ? lines / assoc : 0;
  ways_.assign(sets_ * assoc_, Way{});
}

SectorCache::Way* SectorCache::find(std::uint64_t line_addr) {
  const std::uint64_t tag = line_addr / line_bytes_;
  Way* set = &ways_[set_of(line_addr) * assoc_];
  for (std::uint32_t w = 0; w < assoc_; ++w)
    if (set[w].valid && set[w].tag == tag) return &set[w];
  return nullptr;
}

std::uint32_t SectorCache::lookup(std::uint64_t line_addr, std::uint32_t sector_mask) {
  if (!enabled()) return 0;
  Way* way = find(line_addr);
  if (!way) return 0;
  const std::uint32_t hit = way->valid & sector_mask;
  if (hit) way->last_use = ++use_clock_;
  return hit;
}

SectorCache::Eviction SectorCache::fill(std::uint64_t line_addr, std::uint32_t sector_mask, bool dirty) {
  Eviction ev;
  if (!enabled()) return ev;
  Way* way = find(line_addr);
  if (!way) {
    Way* set = &ways_[set_of(line_addr) * assoc_];
    way = &set[0];
    for (std::uint32_t w = 0; w < assoc_; ++w) {
      if (!set[w].valid) {
        way = &set[w];
        break;
      }
      if (set[w].last_use < way->last_use) way = &set[w];
    }
    if (way->valid) {
      ev.valid = true;
      ev.line_addr = way->tag * line_bytes_;
      ev.dirty_mask = way->dirty;
    }
    *way = Way{line_addr / line_bytes_, 0, 0, 0};
  }
  way->valid |= sector_mask;
  if (dirty) way->dirty |= sector_mask;
  way->last_use = ++use_clock_;
  return ev;
}

void SectorCache::invalidate(std::uint64_t line_addr, std::uint32_t sector_mask) {
  if (!enabled()) return;
  if (Way* way = find(line_addr)) {
    way->valid &= ~sector_mask;
    way->dirty &= ~sector_mask;
  }
}

}  // namespace warpsim
