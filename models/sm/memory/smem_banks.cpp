// Shared-memory bank conflicts (see smem_banks.h).
#include "models/sm/memory/smem_banks.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace warpsim {

namespace {
constexpr std::uint32_t kLdsmRowBytes = 16;  // one row of an 8x8 matrix of 16-bit elements (PTX ISA, ldmatrix)
constexpr std::uint32_t kLdsmRowsPerMatrix = 8;
}  // namespace

std::uint32_t shared_phase_lanes(const WarpInst& in, const SharedBankGeometry& g) {
  const std::uint32_t width = in.op == Opcode::LDSM ? kLdsmRowBytes : std::max<std::uint32_t>(in.access_bytes, 1);
  const std::uint32_t lanes = g.row_bytes() / std::max(width, g.bank_bytes);
  return std::clamp<std::uint32_t>(lanes, 1, kWarpSize);
}

std::uint32_t shared_addressed_lanes(const WarpInst& in) {
  if (in.op == Opcode::LDSM && (in.num_dst == 1 || in.num_dst == 2 || in.num_dst == 4))
    return kLdsmRowsPerMatrix * in.num_dst;
  return kWarpSize;
}

SharedWavefronts count_shared_wavefronts(const WarpInst& in, const SharedBankGeometry& g) {
  SharedWavefronts out;
  if (in.addr_mode == AddrMode::None) return out;
  const std::uint32_t width = in.op == Opcode::LDSM ? kLdsmRowBytes : std::max<std::uint32_t>(in.access_bytes, 1);
  const std::uint32_t phase = shared_phase_lanes(in, g), lanes = shared_addressed_lanes(in);
  std::array<std::uint64_t, kWarpSize> addr;
  std::uint64_t misaligned = 0;
  for (std::uint32_t lane = 0; lane < lanes; ++lane) {
    addr[lane] = in.lane_address(static_cast<int>(lane));
    if (in.active_mask >> lane & 1u) misaligned |= addr[lane] & (width - 1);
  }
  // Units of counting: bank words, or whole accesses when every lane's access is aligned to its power-of-two width
  // and a bank row holds whole accesses. Such an access covers width / bank_bytes consecutive banks, each of which
  // then holds one word of exactly the accesses that cover it, so the per-bank counts are the per-unit ones: the
  // same result for a quarter of the work of a 16-byte access (LDS.128, LDSM).
  const bool whole_accesses = width > g.bank_bytes && (width & (width - 1)) == 0 && g.row_bytes() % width == 0 &&
                              misaligned == 0;
  const std::uint32_t unit_bytes = whole_accesses ? width : g.bank_bytes;  // a power of two (bank_bytes: 4 or 8)
  const auto unit_shift = static_cast<unsigned>(__builtin_ctz(unit_bytes));
  const std::uint32_t words_per_unit = unit_bytes / g.bank_bytes, unit_banks = g.row_bytes() / unit_bytes;
  const bool pow2_banks = (unit_banks & (unit_banks - 1)) == 0;
  // The distinct units each unit bank holds in the current phase. A phase is usually conflict-free, so a bank keeps
  // its first unit inline (valid while its stamp is the phase's) and only a bank's further distinct units go to a
  // short list searched in full: one pass over the lanes instead of sorting their words (this runs for every
  // LDS/STS/LDSM).
  struct BankState {
    std::uint32_t stamp;  // the phase this entry belongs to
    std::uint32_t units;  // distinct units of the bank in that phase
    std::uint64_t first;  // its first unit
  };
  static thread_local std::array<BankState, kMaxSharedBanks> bank_state;  // zero-initialised: no phase's
  static thread_local std::uint32_t phase_stamp;
  struct Extra {
    std::uint32_t bank;
    std::uint64_t unit;
  };
  // Units one lane touches: at most width / bank_bytes + 1 (misaligned); bank_bytes >= 4 and width <= 16.
  std::array<Extra, kWarpSize * (kMaxAccessBytes / 4 + 1)> extra;
  for (std::uint32_t first = 0; first < lanes; first += phase) {
    if (++phase_stamp == 0) {  // the stamps wrapped: forget every entry once
      bank_state.fill(BankState{0, 0, 0});
      phase_stamp = 1;
    }
    const std::uint32_t stamp = phase_stamp;
    std::uint32_t distinct = 0, busiest = 0;
    std::size_t extras = 0;
    for (std::uint32_t lane = first; lane < std::min(first + phase, lanes); ++lane) {
      if (!(in.active_mask >> lane & 1u)) continue;
      const std::uint64_t last = (addr[lane] + width - 1) >> unit_shift;
      for (std::uint64_t u = addr[lane] >> unit_shift; u <= last; ++u) {
        const auto bank = static_cast<std::uint32_t>(pow2_banks ? u & (unit_banks - 1) : u % unit_banks);
        BankState& b = bank_state[bank];
        if (b.stamp != stamp) {
          b = BankState{stamp, 1, u};
        } else if (b.first == u) {
          continue;  // broadcast
        } else {
          bool seen = false;
          for (std::size_t i = 0; i < extras && !seen; ++i) seen = extra[i].bank == bank && extra[i].unit == u;
          if (seen) continue;
          extra[extras++] = Extra{bank, u};
          ++b.units;
        }
        ++distinct;
        busiest = std::max(busiest, b.units);
      }
    }
    if (distinct == 0) continue;
    out.wavefronts += busiest;
    out.ideal += (distinct * words_per_unit + g.banks - 1) / g.banks;
  }
  return out;
}

namespace {

// What the count depends on. Shifting every lane's address by a multiple of the bank row (banks x bank_bytes)
// shifts every counting unit by a multiple of the unit banks (the row is a multiple of the unit: of bank_bytes, and
// of the access width whenever whole accesses are the unit) and keeps each lane's alignment to its width, so the
// banks, broadcasts and conflicts stay the same: the base enters only modulo the row. Only the fields of the
// instruction's address mode are kept (the others stay zero), and of its deltas only the addressed lanes'.
struct WavefrontMemoEntry {
  bool valid = false;
  std::uint8_t bank_bytes = 0, addr_mode = 0, group = 0, width = 0, lanes = 0;
  std::uint32_t banks = 0, active_mask = 0;
  std::int32_t stride = 0, group_stride = 0;
  std::uint64_t base_in_row = 0;
  std::array<std::int32_t, kWarpSize> deltas;
  SharedWavefronts result;
};

constexpr std::size_t kWavefrontMemoEntries = 1024;  // direct-mapped: a GEMM has a few hundred patterns

}  // namespace

SharedWavefronts shared_wavefronts(const WarpInst& in, const SharedBankGeometry& g) {
  if (in.addr_mode == AddrMode::None) return {};
  const std::uint32_t width = in.op == Opcode::LDSM ? kLdsmRowBytes : std::max<std::uint32_t>(in.access_bytes, 1);
  const std::uint32_t lanes = shared_addressed_lanes(in);
  // The range of the lanes' offsets (a bound for Strided2D): the shift argument above holds only while no
  // address wraps around zero, so patterns whose addresses could are counted afresh every time.
  std::int64_t lo = 0, hi = 0;
  std::uint64_t h = (std::uint64_t{width} << 8 | lanes) * 0x9e3779b97f4a7c15ull;
  std::int32_t stride = 0, group_stride = 0;
  std::uint8_t group = 0;
  switch (in.addr_mode) {
    case AddrMode::Strided:
      stride = in.stride;
      lo = std::min<std::int64_t>(0, std::int64_t{stride} * (lanes - 1));
      hi = std::max<std::int64_t>(0, std::int64_t{stride} * (lanes - 1));
      h = (h ^ static_cast<std::uint32_t>(stride)) * 0x100000001b3ull;
      break;
    case AddrMode::Strided2D: {
      if (in.group == 0) return count_shared_wavefronts(in, g);
      stride = in.stride;
      group_stride = in.group_stride;
      group = in.group;
      const std::int64_t across = std::int64_t{stride} * (std::min<std::uint32_t>(group, lanes) - 1),
                         down = std::int64_t{group_stride} * ((lanes - 1) / group);
      lo = std::min<std::int64_t>(0, across) + std::min<std::int64_t>(0, down);
      hi = std::max<std::int64_t>(0, across) + std::max<std::int64_t>(0, down);
      h = (h ^ (std::uint64_t{group} << 32 | static_cast<std::uint32_t>(stride))) * 0x100000001b3ull;
      h = (h ^ static_cast<std::uint32_t>(group_stride)) * 0x100000001b3ull;
      break;
    }
    case AddrMode::Deltas:
      for (std::uint32_t lane = 0; lane < lanes; ++lane) {
        const std::int32_t d = in.deltas[lane];
        lo = std::min<std::int64_t>(lo, d);
        hi = std::max<std::int64_t>(hi, d);
        h = (h ^ static_cast<std::uint32_t>(d)) * 0x100000001b3ull;
      }
      break;
    case AddrMode::None:
      break;
  }
  constexpr std::int64_t kLimit = std::int64_t{1} << 62;
  if (g.banks == 0 || in.base >= std::uint64_t{kLimit} || static_cast<std::int64_t>(in.base) + lo < 0 ||
      static_cast<std::int64_t>(in.base) + hi + width >= kLimit)
    return count_shared_wavefronts(in, g);
  const std::uint64_t base_in_row = in.base % g.row_bytes();
  h = (h ^ base_in_row) * 0x100000001b3ull;
  h = (h ^ in.active_mask) * 0x100000001b3ull;
  h = (h ^ (std::uint64_t{g.banks} << 8 | g.bank_bytes)) * 0x100000001b3ull;
  static thread_local std::array<WavefrontMemoEntry, kWavefrontMemoEntries> memo;
  WavefrontMemoEntry& e = memo[(h ^ h >> 29) % kWavefrontMemoEntries];
  const auto addr_mode = static_cast<std::uint8_t>(in.addr_mode);
  const bool deltas = in.addr_mode == AddrMode::Deltas;
  if (e.valid && e.base_in_row == base_in_row && e.active_mask == in.active_mask && e.width == width &&
      e.lanes == lanes && e.addr_mode == addr_mode && e.stride == stride && e.group_stride == group_stride &&
      e.group == group && e.banks == g.banks && e.bank_bytes == g.bank_bytes &&
      (!deltas || std::memcmp(e.deltas.data(), in.deltas, lanes * sizeof(std::int32_t)) == 0))
    return e.result;
  e.valid = true;
  e.bank_bytes = static_cast<std::uint8_t>(g.bank_bytes);
  e.addr_mode = addr_mode;
  e.group = group;
  e.width = static_cast<std::uint8_t>(width);
  e.lanes = static_cast<std::uint8_t>(lanes);
  e.banks = g.banks;
  e.active_mask = in.active_mask;
  e.stride = stride;
  e.group_stride = group_stride;
  e.base_in_row = base_in_row;
  if (deltas) std::memcpy(e.deltas.data(), in.deltas, lanes * sizeof(std::int32_t));
  e.result = count_shared_wavefronts(in, g);
  return e.result;
}

}  // namespace warpsim
