// Shared-memory bank conflicts (see smem_banks.h).
#include "models/sm/memory/smem_banks.h"

#include <algorithm>
#include <array>

#include "models/sm/memory/lane_pattern.h"

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

// Shifting every lane's address by a multiple of the bank row (banks x bank_bytes) shifts every counting unit by a
// multiple of the unit banks (the row is a multiple of the unit: of bank_bytes, and of the access width whenever
// whole accesses are the unit) and keeps each lane's alignment to its width, so the banks, broadcasts and
// conflicts stay the same: the base enters only modulo the row.
struct WavefrontMemoEntry {
  bool valid = false;
  std::uint32_t banks = 0, bank_bytes = 0;
  LanePattern pattern;
  SharedWavefronts result;
};

constexpr std::size_t kWavefrontMemoEntries = 1024;  // direct-mapped: a GEMM has a few hundred patterns

}  // namespace

SharedWavefronts shared_wavefronts(const WarpInst& in, const SharedBankGeometry& g) {
  if (in.addr_mode == AddrMode::None) return {};
  const std::uint32_t width = in.op == Opcode::LDSM ? kLdsmRowBytes : std::max<std::uint32_t>(in.access_bytes, 1);
  LanePattern pattern;
  if (g.row_bytes() == 0 || !pattern.capture(in, shared_addressed_lanes(in), width, g.row_bytes()))
    return count_shared_wavefronts(in, g);
  static thread_local std::array<WavefrontMemoEntry, kWavefrontMemoEntries> memo;
  WavefrontMemoEntry& e = memo[(pattern.hash ^ g.banks * 0x9e3779b97f4a7c15ull) % kWavefrontMemoEntries];
  if (e.valid && e.banks == g.banks && e.bank_bytes == g.bank_bytes && e.pattern == pattern) return e.result;
  e.valid = true;
  e.banks = g.banks;
  e.bank_bytes = g.bank_bytes;
  e.pattern = pattern;
  e.result = count_shared_wavefronts(in, g);
  return e.result;
}

}  // namespace warpsim
