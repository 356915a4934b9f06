// Instruction fetch through the L0 and L1 instruction caches (see instruction_fetch.h).
#include "models/sm/fetch/instruction_fetch.h"

#include <algorithm>
#include <optional>
#include <string>

namespace warpsim {

void InstructionFetch::declare(Schema& s) {
  const auto req = std::nullopt;
  s.quantity("icache.line_size", ParamType::Size, req, "bytes an instruction-cache fill brings (both levels)", 16, 4096);
  s.quantity("icache.l0_size", ParamType::Size, req,
             "L0 instruction cache per sub-partition (0: no fetch model, every instruction is there when its warp "
             "reaches it)", 0, 1ull << 24);
  s.uint("icache.l0_assoc", "ways", req, "L0 instruction cache associativity (LRU)", 1, 1024);
  s.quantity("icache.l1_size", ParamType::Size, req, "L1 instruction cache per SM, shared by its sub-partitions", 0,
             1ull << 26);
  s.uint("icache.l1_assoc", "ways", req, "L1 instruction cache associativity (LRU)", 1, 1024);
  s.uint("icache.l0_miss_latency", "cycles", req,
         "cycles from an L0 miss to the warp's next issue when the line is in the L1 instruction cache", 0, 100000);
  s.uint("icache.l1_miss_latency", "cycles", req,
         "cycles an L1 instruction-cache miss adds (the line from the memory system)", 0, 100000);
}

void InstructionFetch::read(const Params& sm, unsigned subpartitions) {
  const std::uint64_t line = sm.u64("icache.line_size");
  if ((line & (line - 1)) != 0) sm.fail("icache.line_size", "must be a power of two, got " + std::to_string(line));
  line_shift_ = 0;
  while ((std::uint64_t{1} << line_shift_) < line) ++line_shift_;
  const std::uint64_t l0 = sm.u64("icache.l0_size");
  const std::uint64_t l1 = sm.u64("icache.l1_size");
  l0_.clear();
  if (l0 == 0) return;
  auto check = [&](const char* size_key, std::uint64_t bytes, const char* assoc_key) {
    const std::uint32_t ways = sm.u32(assoc_key);
    if (bytes % (line * ways) != 0 || bytes < line * ways)
      sm.fail(size_key, "must be a multiple of line_size x " + std::string(assoc_key) + " (" + std::to_string(line) +
                            " B x " + std::to_string(ways) + "), got " + std::to_string(bytes) + " B");
    const std::uint64_t sets = bytes / (line * ways);
    if ((sets & (sets - 1)) != 0)
      sm.fail(size_key, "must give a power-of-two number of sets (size / (line_size x assoc)), got " +
                            std::to_string(sets));
    return ways;
  };
  const std::uint32_t l0_ways = check("icache.l0_size", l0, "icache.l0_assoc");
  if (l1 < l0) sm.fail("icache.l1_size", "must be at least icache.l0_size (the L1 backs every L0)");
  const std::uint32_t l1_ways = check("icache.l1_size", l1, "icache.l1_assoc");
  l0_.assign(subpartitions, Level{SectorCache(l0, static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(line), l0_ways), {}});
  l1_ = Level{SectorCache(l1, static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(line), l1_ways), {}};
  l0_miss_latency_ = sm.u32("icache.l0_miss_latency");
  l1_miss_latency_ = sm.u32("icache.l1_miss_latency");
}

Cycle InstructionFetch::fetch(unsigned sp, std::uint64_t line, Cycle now) {
  ++lookups_;
  const std::uint64_t addr = line << line_shift_;
  Level& l0 = l0_[sp];
  Cycle ready = 0;
  if (l0.lookup(addr, ready)) return ready;  // resident, or its fill is under way
  ++l0_misses_;
  Cycle from_l1 = 0;
  if (l1_.lookup(addr, from_l1)) {
    from_l1 = std::max(now, from_l1);
  } else {
    ++l1_misses_;
    from_l1 = l1_.fill(addr, now + l1_miss_latency_);
  }
  return l0.fill(addr, from_l1 + l0_miss_latency_);
}

void InstructionFetch::add_stats(StatGroup& g) const {
  g.add("icache_lookups", "lookups", "L0 instruction-cache lookups (one each time a warp's next instruction is in a new line)", lookups_)
      .add("icache_l0_misses", "lines", "L0 instruction-cache misses (lines fetched from the L1 instruction cache)", l0_misses_)
      .add("icache_l1_misses", "lines", "L1 instruction-cache misses (lines fetched from the memory system)", l1_misses_)
      .ratio("icache_l0_miss_rate", "icache_l0_misses", "icache_lookups", "L0 instruction-cache misses per lookup");
}

bool InstructionFetch::Level::lookup(std::uint64_t addr, Cycle& ready) {
  if (tags.lookup(addr, 1u) == 0) return false;
  const auto it = filling.find(addr);
  ready = it == filling.end() ? 0 : it->second;
  return true;
}

Cycle InstructionFetch::Level::fill(std::uint64_t addr, Cycle ready) {
  const SectorCache::Eviction ev = tags.fill(addr, 1u, /*dirty=*/false);
  if (ev.valid) filling.erase(ev.line_addr);
  filling[addr] = ready;
  return ready;
}

}  // namespace warpsim
