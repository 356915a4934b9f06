// SectorCache (models/mem/sector_cache.h): LRU within eviction priorities, the replacement L1 and the L2 slices
// use, checked on one 4-way set (a cache of 4 lines: every line maps to the only set).
#include <catch2/catch.hpp>

#include <cstdint>

#include "models/mem/sector_cache.h"

using namespace warpsim;

namespace sector_cache_test {

constexpr std::uint32_t kLine = 128, kSector = 32;
constexpr std::uint32_t kAll = 0xf;

SectorCache one_set() { return SectorCache(4 * kLine, kLine, kSector, 4); }
std::uint64_t line(int i) { return static_cast<std::uint64_t>(i) * kLine; }

}  // namespace sector_cache_test

TEST_CASE("SectorCache: LRU at one priority, evict-first lines before it, evict-last lines after it", "[cache][cache_op]") {
  using namespace sector_cache_test;
  SECTION("all normal: least recently used first, a hit refreshes") {
    SectorCache c = one_set();
    for (int i = 0; i < 4; ++i) CHECK_FALSE(c.fill(line(i), kAll, false).valid);
    CHECK(c.lookup(line(0), kAll) == kAll);  // line 1 is now the least recently used
    const SectorCache::Eviction e = c.fill(line(4), kAll, false);
    REQUIRE(e.valid);
    CHECK(e.line_addr == line(1));
  }
  SECTION("an evict-first line goes first, however recently used") {
    SectorCache c = one_set();
    for (int i = 0; i < 4; ++i) c.fill(line(i), kAll, false, i == 3 ? EvictPriority::First : EvictPriority::Normal);
    CHECK(c.fill(line(4), kAll, false).line_addr == line(3));
    // Two evict-first lines: the older of them.
    c.lookup(line(0), kAll, EvictPriority::First);
    c.lookup(line(1), kAll, EvictPriority::First);
    CHECK(c.fill(line(5), kAll, false).line_addr == line(0));
  }
  SECTION("an evict-last line outlives every normal one; the latest access sets the priority") {
    SectorCache c = one_set();
    c.fill(line(0), kAll, false, EvictPriority::Last);
    for (int i = 1; i < 4; ++i) c.fill(line(i), kAll, false);
    CHECK(c.fill(line(4), kAll, false).line_addr == line(1));
    CHECK(c.fill(line(5), kAll, false).line_addr == line(2));
    // A normal hit makes line 0 normal again, and the least recently used of the set.
    c.lookup(line(0), kAll);
    c.lookup(line(3), kAll);
    c.lookup(line(4), kAll);
    c.lookup(line(5), kAll);
    CHECK(c.fill(line(6), kAll, false).line_addr == line(0));
  }
  SECTION("a dirty evict-first line is written back when it goes") {
    SectorCache c = one_set();
    c.fill(line(0), 0x3, true, EvictPriority::First);
    for (int i = 1; i < 4; ++i) c.fill(line(i), kAll, false);
    const SectorCache::Eviction e = c.fill(line(4), kAll, false);
    CHECK(e.line_addr == line(0));
    CHECK(e.dirty_mask == 0x3);
    CHECK(c.dirty_sectors() == 0);
  }
}
