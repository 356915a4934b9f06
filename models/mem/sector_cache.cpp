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
  tags_.assign(sets_ * assoc_, kNoTag);
  state_.assign(sets_ * assoc_, WayState{});
}

std::uint64_t SectorCache::footprint_bytes(std::uint64_t size_bytes, std::uint32_t line_bytes) {
  const std::uint64_t ways = line_bytes ? size_bytes / line_bytes : 0;
  return ways * (sizeof(std::uint64_t) + sizeof(WayState));  // tags_ and state_
}

std::int64_t SectorCache::find(std::uint64_t line_addr) const {
  const std::uint64_t tag = line_addr / line_bytes_;
  const std::size_t base = static_cast<std::size_t>(set_of(line_addr)) * assoc_;
  const std::uint64_t* tags = &tags_[base];
  for (std::uint32_t w = 0; w < assoc_; ++w)
    if (tags[w] == tag) return static_cast<std::int64_t>(base + w);
  return -1;
}

std::uint32_t SectorCache::lookup(std::uint64_t line_addr, std::uint32_t sector_mask, EvictPriority priority) {
  if (!enabled()) return 0;
  const std::int64_t i = find(line_addr);
  if (i < 0) return 0;
  WayState& way = state_[static_cast<std::size_t>(i)];
  const std::uint32_t hit = way.valid & sector_mask;
  if (hit) way.last_use = use_rank(priority);
  return hit;
}

SectorCache::Eviction SectorCache::fill(std::uint64_t line_addr, std::uint32_t sector_mask, bool dirty,
                                        EvictPriority priority) {
  Eviction ev;
  if (!enabled()) return ev;
  std::int64_t i = find(line_addr);
  if (i < 0) {
    // Victim: an empty way if there is one, else the lowest rank (priority, then least recently used).
    const std::size_t base = static_cast<std::size_t>(set_of(line_addr)) * assoc_;
    std::size_t victim = base;
    for (std::size_t w = base; w < base + assoc_; ++w) {
      if (tags_[w] == kNoTag) {
        victim = w;
        break;
      }
      if (state_[w].last_use < state_[victim].last_use) victim = w;
    }
    if (tags_[victim] != kNoTag) {
      ev.valid = true;
      ev.line_addr = tags_[victim] * line_bytes_;
      ev.dirty_mask = state_[victim].dirty;
      dirty_sectors_ -= static_cast<std::uint64_t>(__builtin_popcount(ev.dirty_mask));
    }
    tags_[victim] = line_addr / line_bytes_;
    state_[victim] = WayState{};
    i = static_cast<std::int64_t>(victim);
  }
  WayState& way = state_[static_cast<std::size_t>(i)];
  way.valid |= sector_mask;
  if (dirty) {
    dirty_sectors_ += static_cast<std::uint64_t>(__builtin_popcount(sector_mask & ~way.dirty));
    way.dirty |= sector_mask;
  }
  way.last_use = use_rank(priority);
  return ev;
}

void SectorCache::invalidate(std::uint64_t line_addr, std::uint32_t sector_mask) {
  if (!enabled()) return;
  const std::int64_t i = find(line_addr);
  if (i < 0) return;
  WayState& way = state_[static_cast<std::size_t>(i)];
  way.valid &= ~sector_mask;
  dirty_sectors_ -= static_cast<std::uint64_t>(__builtin_popcount(way.dirty & sector_mask));
  way.dirty &= ~sector_mask;
}

}  // namespace warpsim
