// Shared-memory bank conflicts (see smem_banks.h).
#include "models/sm/memory/smem_banks.h"

#include <algorithm>
#include <array>

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

SharedWavefronts shared_wavefronts(const WarpInst& in, const SharedBankGeometry& g) {
  SharedWavefronts out;
  if (in.addr_mode == AddrMode::None) return out;
  const std::uint32_t width = in.op == Opcode::LDSM ? kLdsmRowBytes : std::max<std::uint32_t>(in.access_bytes, 1);
  const std::uint32_t phase = shared_phase_lanes(in, g), lanes = shared_addressed_lanes(in);
  // Words one lane touches: width / bank_bytes, one more when misaligned; bank_bytes >= 4 and width <= 16.
  std::array<std::uint64_t, kWarpSize * (kMaxAccessBytes / 4 + 1)> words;
  std::array<std::uint32_t, words.size()> banks;
  for (std::uint32_t first = 0; first < lanes; first += phase) {
    std::size_t n = 0;
    for (std::uint32_t lane = first; lane < std::min(first + phase, lanes); ++lane) {
      if (!(in.active_mask >> lane & 1u)) continue;
      const std::uint64_t addr = in.lane_address(static_cast<int>(lane));
      for (std::uint64_t w = addr / g.bank_bytes; w <= (addr + width - 1) / g.bank_bytes && n < words.size(); ++w)
        words[n++] = w;
    }
    if (n == 0) continue;
    std::sort(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n));
    n = static_cast<std::size_t>(std::unique(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n)) - words.begin());
    // Distinct words per bank: sort the banks of the distinct words; the longest run is the busiest bank.
    for (std::size_t i = 0; i < n; ++i) banks[i] = static_cast<std::uint32_t>(words[i] % g.banks);
    std::sort(banks.begin(), banks.begin() + static_cast<std::ptrdiff_t>(n));
    std::uint32_t busiest = 1, run = 1;
    for (std::size_t i = 1; i < n; ++i) {
      run = banks[i] == banks[i - 1] ? run + 1 : 1;
      busiest = std::max(busiest, run);
    }
    out.wavefronts += busiest;
    out.ideal += static_cast<std::uint32_t>((n + g.banks - 1) / g.banks);
  }
  return out;
}

}  // namespace warpsim
