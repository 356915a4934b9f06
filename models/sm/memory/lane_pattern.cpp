// Address shapes for the memos of per-instruction address work (see lane_pattern.h).
#include "models/sm/memory/lane_pattern.h"

#include <algorithm>
#include <cstring>

namespace warpsim {

namespace {
constexpr std::uint64_t kPrime = 0x100000001b3ull;  // FNV-1a's 64-bit prime: a cheap multiplicative mix
}

bool LanePattern::capture(const WarpInst& in, std::uint32_t lanes_, std::uint32_t width_, std::uint64_t period) {
  if (lanes_ > kWarpSize || width_ > 0xff) return false;
  lanes = static_cast<std::uint8_t>(lanes_);
  width = static_cast<std::uint8_t>(width_);
  addr_mode = static_cast<std::uint8_t>(in.addr_mode);
  active_mask = in.active_mask;
  stride = group_stride = 0;
  group = 0;
  // The range of the lanes' offsets (a bound for Strided2D), for the wrap-around check.
  std::int64_t lo = 0, hi = 0;
  std::uint64_t h = (std::uint64_t{width} << 16 | std::uint64_t{lanes} << 8 | addr_mode) * 0x9e3779b97f4a7c15ull;
  const std::int64_t last = lanes ? lanes - 1 : 0;
  switch (in.addr_mode) {
    case AddrMode::Strided:
      stride = in.stride;
      lo = std::min<std::int64_t>(0, std::int64_t{stride} * last);
      hi = std::max<std::int64_t>(0, std::int64_t{stride} * last);
      h = (h ^ static_cast<std::uint32_t>(stride)) * kPrime;
      break;
    case AddrMode::Strided2D: {
      if (in.group == 0) return false;
      stride = in.stride;
      group_stride = in.group_stride;
      group = in.group;
      const std::int64_t across = std::int64_t{stride} * (std::min<std::int64_t>(group, last + 1) - 1),
                         down = std::int64_t{group_stride} * (last / group);
      lo = std::min<std::int64_t>(0, across) + std::min<std::int64_t>(0, down);
      hi = std::max<std::int64_t>(0, across) + std::max<std::int64_t>(0, down);
      h = (h ^ (std::uint64_t{group} << 32 | static_cast<std::uint32_t>(stride))) * kPrime;
      h = (h ^ static_cast<std::uint32_t>(group_stride)) * kPrime;
      break;
    }
    case AddrMode::Deltas:
      for (std::uint32_t lane = 0; lane < lanes; ++lane) {
        const std::int32_t d = in.deltas[lane];
        deltas[lane] = d;
        lo = std::min<std::int64_t>(lo, d);
        hi = std::max<std::int64_t>(hi, d);
        h = (h ^ static_cast<std::uint32_t>(d)) * kPrime;
      }
      break;
    case AddrMode::None:
      break;
  }
  constexpr std::int64_t kLimit = std::int64_t{1} << 62;
  if (in.base >= std::uint64_t{kLimit} || static_cast<std::int64_t>(in.base) + lo < 0 ||
      static_cast<std::int64_t>(in.base) + hi + width >= kLimit)
    return false;
  base_in_period = in.base % period;
  h = (h ^ base_in_period) * kPrime;
  h = (h ^ active_mask) * kPrime;
  hash = h ^ h >> 29;
  return true;
}

bool LanePattern::operator==(const LanePattern& o) const {
  return hash == o.hash && base_in_period == o.base_in_period && active_mask == o.active_mask &&
         stride == o.stride && group_stride == o.group_stride && addr_mode == o.addr_mode && group == o.group &&
         lanes == o.lanes && width == o.width &&
         (addr_mode != static_cast<std::uint8_t>(AddrMode::Deltas) ||
          std::memcmp(deltas.data(), o.deltas.data(), lanes * sizeof(std::int32_t)) == 0);
}

}  // namespace warpsim
