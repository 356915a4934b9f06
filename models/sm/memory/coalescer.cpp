// LSU address coalescing (see coalescer.h): lanes to lines and sector masks, in order of first touch.
#include "models/sm/memory/coalescer.h"

#include <array>

#include "models/sm/memory/lane_pattern.h"

namespace warpsim {

void coalesce_lanes(const WarpInst& inst, std::uint32_t line_bytes, std::uint32_t sector_bytes,
                    std::vector<LineAccess>& out) {
  out.clear();
  // Power-of-two sizes (checked where they are configured): masks and shifts instead of divisions.
  const std::uint64_t line_mask = line_bytes - 1;
  const unsigned sector_shift = static_cast<unsigned>(__builtin_ctz(sector_bytes));
  const std::uint32_t width = inst.access_bytes ? inst.access_bytes : 4;
  auto touch = [&](std::uint64_t first, std::uint64_t last, std::uint32_t bytes) {
    const std::uint64_t line = first & ~line_mask;
    const unsigned lo = static_cast<unsigned>((first - line) >> sector_shift);
    const unsigned hi = static_cast<unsigned>((last - line) >> sector_shift);
    const std::uint32_t mask = static_cast<std::uint32_t>((std::uint64_t{2} << hi) - (std::uint64_t{1} << lo));
    // Neighbouring lanes usually share the line of the lane before: look there first.
    if (!out.empty() && out.back().line_addr == line) {
      out.back().sector_mask |= mask;
      out.back().bytes += bytes;
      return;
    }
    for (auto& l : out)
      if (l.line_addr == line) {
        l.sector_mask |= mask;
        l.bytes += bytes;
        return;
      }
    out.push_back(LineAccess{line, mask, bytes});
  };
  for (int lane = 0; lane < kWarpSize; ++lane) {
    if (!(inst.active_mask >> lane & 1u)) continue;
    const std::uint64_t a = inst.lane_address(lane);
    const std::uint64_t end = a + width - 1;  // check_inst keeps accesses below 2^64
    // Offsets within the line, not the address of the next line: that wraps to 0 in the last line.
    const std::uint64_t offset = a & line_mask;
    if (offset + width <= line_bytes) {
      touch(a, end, width);
    } else {
      const std::uint32_t first_bytes = static_cast<std::uint32_t>(line_bytes - offset);
      touch(a, a + first_bytes - 1, first_bytes);
      touch(a + first_bytes, end, width - first_bytes);
    }
  }
}

namespace {

// Shifting every lane's address by a multiple of the line size shifts every line touched by it and keeps each
// lane's offset in its line: the same sectors, bytes and order of first touch. The remembered lines are kept
// relative to the base rounded down to a line.
struct CoalesceMemoEntry {
  bool valid = false;
  std::uint32_t line_bytes = 0, sector_bytes = 0;
  LanePattern pattern;
  std::vector<LineAccess> lines;  // line_addr relative to the base's line
};

constexpr std::size_t kCoalesceMemoEntries = 1024;  // direct-mapped

}  // namespace

void coalesce(const WarpInst& inst, std::uint32_t line_bytes, std::uint32_t sector_bytes,
              std::vector<LineAccess>& out) {
  LanePattern pattern;
  const std::uint32_t width = inst.access_bytes ? inst.access_bytes : 4;
  if (inst.addr_mode == AddrMode::None || line_bytes == 0 || !pattern.capture(inst, kWarpSize, width, line_bytes)) {
    coalesce_lanes(inst, line_bytes, sector_bytes, out);
    return;
  }
  static thread_local std::array<CoalesceMemoEntry, kCoalesceMemoEntries> memo;
  CoalesceMemoEntry& e = memo[(pattern.hash ^ line_bytes * 0x9e3779b97f4a7c15ull) % kCoalesceMemoEntries];
  const std::uint64_t base_line = inst.base - pattern.base_in_period;
  if (!(e.valid && e.line_bytes == line_bytes && e.sector_bytes == sector_bytes && e.pattern == pattern)) {
    coalesce_lanes(inst, line_bytes, sector_bytes, out);
    e.valid = true;
    e.line_bytes = line_bytes;
    e.sector_bytes = sector_bytes;
    e.pattern = pattern;
    e.lines = out;
    for (LineAccess& l : e.lines) l.line_addr -= base_line;  // wraps for lines below the base's: undone on use
    return;
  }
  out = e.lines;
  for (LineAccess& l : out) l.line_addr += base_line;
}

}  // namespace warpsim
