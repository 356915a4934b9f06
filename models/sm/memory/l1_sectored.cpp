// Sectored L1 (implementation `sectored` of slot `l1`): set-associative with LRU within eviction priorities,
// sector-granular fills, sized per kernel by what shared memory leaves of the unified SRAM.
#include <optional>
#include <string>

#include "sim/slots/build_context.h"
#include "models/mem/sector_cache.h"
#include "sim/slots/l1_cache.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

bool is_power_of_two(std::uint64_t v) { return v && !(v & (v - 1)); }

class SectoredL1 final : public L1Cache {
 public:
  static Schema schema() {
    Schema s("l1", "sectored", "per-SM L1 data cache, sharing one SRAM with shared memory");
    const auto req = std::nullopt;
    s.uint("assoc", "ways", req, "associativity", 1, 1024);
    return s;
  }

  // At most the whole unified SRAM is L1 (a kernel without shared memory).
  static std::uint64_t estimate_bytes(const Params& l1, const Config&) {
    return SectorCache::footprint_bytes(l1.u64("unified_size"), l1.u32("line_size"));
  }

  SectoredL1(BuildContext& ctx, const Params& l1, unsigned /*sm index*/) {
    unified_size_ = l1.u64("unified_size");
    geometry_.line_bytes = l1.u32("line_size");
    geometry_.sector_bytes = l1.u32("sector_size");
    const std::uint32_t line = geometry_.line_bytes, sector = geometry_.sector_bytes;
    if (!is_power_of_two(sector)) l1.fail("sector_size", "must be a power of two");
    if (!is_power_of_two(line) || line < sector || line / sector > 32)
      l1.fail("line_size", "must be a power of two, at least sector_size and at most 32 sectors");
    const Params& l2 = ctx.config.section("l2");
    if (l2.u32("line_size") != line || l2.u32("sector_size") != sector)
      l1.fail("line_size", "L1 and L2 must use the same line and sector sizes (l2.line_size " + std::to_string(l2.u32("line_size")) +
                               " B, l2.sector_size " + std::to_string(l2.u32("sector_size")) + " B)");
    assoc_ = l1.u32("assoc");
    geometry_.hit_latency = l1.u64("hit_latency");
    geometry_.bandwidth = l1.u32("bandwidth");
    geometry_.mshrs = l1.u32("mshrs");
    const std::uint64_t smem = ctx.config.section("sm").u64("shared_memory");
    if (unified_size_ < smem) l1.fail("unified_size", "is smaller than sm.shared_memory (" + std::to_string(smem) + " bytes)");
  }

  void begin_kernel(std::uint64_t shared_memory_in_use) override {
    const std::uint64_t size = unified_size_ > shared_memory_in_use ? unified_size_ - shared_memory_in_use : 0;
    tags_ = SectorCache(size, geometry_.line_bytes, geometry_.sector_bytes, assoc_);
  }
  std::uint32_t lookup(std::uint64_t line_addr, std::uint32_t sector_mask, EvictPriority priority) override {
    return tags_.lookup(line_addr, sector_mask, priority);
  }
  void fill(std::uint64_t line_addr, std::uint32_t sector_mask, EvictPriority priority) override {
    tags_.fill(line_addr, sector_mask, false, priority);
  }
  void invalidate(std::uint64_t line_addr, std::uint32_t sector_mask) override { tags_.invalidate(line_addr, sector_mask); }

 private:
  std::uint64_t unified_size_ = 0;
  std::uint32_t assoc_ = 0;
  SectorCache tags_;
};

WARPSIM_REGISTER_COMPONENT(L1Cache, SectoredL1, "l1", "sectored", "L1 data cache of each SM");

}  // namespace
}  // namespace warpsim
