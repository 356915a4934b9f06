// The shape of a warp instruction's lane addresses apart from where they lie: what the memos of per-instruction
// address work (bank conflicts, coalescing) key on. A kernel issues the same few shapes at many addresses, and such
// work depends on the base only modulo some period (a bank row, a cache line): shifting every lane's address by a
// multiple of it shifts the result by that multiple, so a shape met before is answered by a key comparison.
#pragma once

#include <array>
#include <cstdint>

#include "sim/trace/inst.h"

namespace warpsim {

struct LanePattern {
  std::uint64_t base_in_period = 0;  // the base modulo the period
  std::uint64_t hash = 0;
  std::uint32_t active_mask = 0;
  std::int32_t stride = 0, group_stride = 0;  // of the address mode's fields only (the others stay zero)
  std::uint8_t addr_mode = 0, group = 0, lanes = 0, width = 0;
  std::array<std::int32_t, kWarpSize> deltas{};  // Deltas mode: the first `lanes` (the rest stay zero)

  // The pattern of `in`'s first `lanes` lanes, accesses of `width` bytes, with the base modulo `period` (> 0).
  // False when it cannot stand for the instruction at another base: an address could wrap around zero, where the
  // shift argument fails, or a Strided2D instruction has no group.
  bool capture(const WarpInst& in, std::uint32_t lanes, std::uint32_t width, std::uint64_t period);
  // The same shape at the same offset in the period (deltas compared for the addressed lanes only).
  bool operator==(const LanePattern& o) const;
};

}  // namespace warpsim
