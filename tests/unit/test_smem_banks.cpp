// Shared-memory bank conflicts (models/sm/memory/smem_banks.h): wavefronts of a warp's access from its lane
// addresses, against degrees worked out by hand from 32 banks of 4 bytes (bank = (address / 4) % 32).
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "models/sm/memory/smem_banks.h"
#include "sim/trace/inst.h"
#include "traces/synth/emit.h"
#include "traces/synth/epilogue.h"

using namespace warpsim;

namespace {

const SharedBankGeometry kGeometry{32, 4};

WarpInst strided(Opcode op, std::uint32_t width, std::int32_t stride, std::uint64_t base = 0,
                 std::uint32_t mask = ~0u) {
  WarpInst in;
  in.op = op;
  in.space = MemSpace::Shared;
  in.addr_mode = AddrMode::Strided;
  in.access_bytes = static_cast<std::uint8_t>(width);
  in.base = base;
  in.stride = stride;
  in.active_mask = mask;
  return in;
}

WarpInst with_deltas(Opcode op, std::uint32_t width, const std::array<std::int32_t, kWarpSize>& deltas,
                     std::uint8_t num_dst = 0) {
  WarpInst in;
  in.op = op;
  in.space = MemSpace::Shared;
  in.addr_mode = AddrMode::Deltas;
  in.access_bytes = static_cast<std::uint8_t>(width);
  in.deltas = deltas.data();
  in.num_dst = num_dst;
  return in;
}

std::uint32_t wavefronts(const WarpInst& in) { return shared_wavefronts(in, kGeometry).wavefronts; }

}  // namespace

TEST_CASE("LDS.32: a stride of s words is a gcd(s, 32)-way conflict - the same word is a broadcast", "[smem]") {
  // Lane i reads word i*s: bank (i*s) % 32; 32 lanes fall on 32/gcd banks, gcd(s,32) distinct words on each.
  CHECK(wavefronts(strided(Opcode::LDS, 4, 4)) == 1);
  CHECK(wavefronts(strided(Opcode::LDS, 4, 8)) == 2);
  CHECK(wavefronts(strided(Opcode::LDS, 4, 12)) == 1);  // stride 3: odd, every bank once
  CHECK(wavefronts(strided(Opcode::LDS, 4, 16)) == 4);
  CHECK(wavefronts(strided(Opcode::LDS, 4, 24)) == 2);  // stride 6: gcd(6, 32) = 2
  CHECK(wavefronts(strided(Opcode::LDS, 4, 64)) == 16);
  CHECK(wavefronts(strided(Opcode::LDS, 4, 128)) == 32);
  CHECK(wavefronts(strided(Opcode::LDS, 4, 0)) == 1);  // every lane the same word: broadcast
  const SharedWavefronts worst = shared_wavefronts(strided(Opcode::LDS, 4, 128), kGeometry);
  CHECK(worst.ideal == 1);
  CHECK(worst.conflicts() == 31);
}

TEST_CASE("LDS.32: lanes sharing words multicast - inactive lanes cost nothing", "[smem]") {
  // Lanes 2j and 2j+1 read the same word, 2j: 16 distinct words on 16 banks, one pass.
  std::array<std::int32_t, kWarpSize> pairs{};
  for (int l = 0; l < kWarpSize; ++l) pairs[l] = (l / 2) * 8;
  CHECK(wavefronts(with_deltas(Opcode::LDS, 4, pairs)) == 1);
  // Two distinct words on bank 0 (addresses 0 and 128), the rest broadcast: 2 passes.
  std::array<std::int32_t, kWarpSize> two{};
  two[5] = 128;
  CHECK(wavefronts(with_deltas(Opcode::LDS, 4, two)) == 2);
  // A 32-way pattern with only lanes 0 and 1 active: 2-way.
  CHECK(wavefronts(strided(Opcode::LDS, 4, 128, 0, 0x3u)) == 2);
  CHECK(wavefronts(strided(Opcode::LDS, 4, 128, 0, 0u)) == 0);
}

TEST_CASE("LDS.64 is processed per half-warp, LDS.128 per quarter-warp", "[smem]") {
  // Contiguous: every phase moves 128 B over all 32 banks once.
  CHECK(wavefronts(strided(Opcode::LDS, 8, 8)) == 2);
  CHECK(wavefronts(strided(Opcode::LDS, 16, 16)) == 4);
  CHECK(shared_wavefronts(strided(Opcode::LDS, 16, 16), kGeometry).conflicts() == 0);
  // LDS.64 at a 16-byte stride: a half-warp's 16 lanes read words 4i, 4i+1 -> banks (4i) % 32: lanes i and i+8
  // share banks, 2-way in each half: 4 wavefronts.
  CHECK(wavefronts(strided(Opcode::LDS, 8, 16)) == 4);
  // LDS.128 at a 128-byte stride: the 8 lanes of a quarter all on banks 0-3: 8-way, 32 wavefronts.
  CHECK(wavefronts(strided(Opcode::LDS, 16, 128)) == 32);
  // LDS.128 at a 32-byte stride: a quarter covers 256 B, two lanes per bank quad: 2-way, 8 wavefronts.
  CHECK(wavefronts(strided(Opcode::LDS, 16, 32)) == 8);
  // Only half of the quarter-warps active: 2 wavefronts.
  CHECK(wavefronts(strided(Opcode::LDS, 16, 16, 0, 0x00ff00ffu)) == 2);
}

TEST_CASE("LDSM: one wavefront per 8x8 matrix when its 8 row addresses cover the 32 banks", "[smem]") {
  // Tile of 64 fp16 per row (128 B rows); matrix q reads rows 8*(q%2).. at 16-byte chunk q/2 (an A fragment).
  std::array<std::int32_t, kWarpSize> plain{}, swizzled{};
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const int q = lane / 8, r = lane % 8, row = (q % 2) * 8 + r, chunk = q / 2;
    plain[lane] = row * 128 + chunk * 16;                 // row-major: all 8 rows on the same 4 banks
    swizzled[lane] = row * 128 + ((chunk ^ (row % 8)) * 16);  // XOR swizzle (CUTLASS Swizzle<3,4,3>)
  }
  CHECK(wavefronts(with_deltas(Opcode::LDSM, 16, swizzled, 4)) == 4);
  CHECK(wavefronts(with_deltas(Opcode::LDSM, 16, plain, 4)) == 32);   // 8-way per matrix
  CHECK(wavefronts(with_deltas(Opcode::LDSM, 16, plain, 2)) == 16);   // .x2: lanes 0-15 only
  CHECK(wavefronts(with_deltas(Opcode::LDSM, 16, swizzled, 1)) == 1);  // .x1
  // STS.128 of the same addresses (an stmatrix-like store) follows the same quarter-warp rule.
  CHECK(wavefronts(with_deltas(Opcode::STS, 16, swizzled)) == 4);
}

TEST_CASE("bank geometry: 64 banks take a 64-lane-wide row", "[smem]") {
  const SharedBankGeometry wide{64, 4};
  // Stride-2 words over 32 lanes covers 64 banks once: conflict-free with 64 banks, 2-way with 32.
  CHECK(shared_wavefronts(strided(Opcode::LDS, 4, 8), wide).wavefronts == 1);
  CHECK(shared_wavefronts(strided(Opcode::LDS, 4, 8), kGeometry).wavefronts == 2);
}

TEST_CASE("synthesized layouts: the staged epilogue and a swizzled fragment store are conflict-free", "[smem][synth]") {
  // A warp's 16 x 128 accumulator tile written as bf16 (STS.32 of packed pairs, 8 rows per phase) and as an fp32
  // reduction (STS.64 of pairs, 4 rows per half-warp), read back 16 B (or 4 B) per lane: CUTLASS's padded staging
  // makes every phase cover the 32 banks once. Ideal = actual wavefronts for every shared-memory instruction.
  // A 16-column piece of 16-bit output (flash-attention backward's dK/dV) stages 32-byte rows, swizzled.
  const std::pair<synth::StagedEpilogue, std::uint32_t> cases[] = {
      {synth::StagedEpilogue::store_16bit(128), 16}, {synth::StagedEpilogue::reduce_fp32(128), 16},
      {synth::StagedEpilogue::store_32bit(128), 16}, {synth::StagedEpilogue::store_16bit(16), 2}};
  for (const auto& [epi, n_blocks] : cases) {
    INFO("output element bytes " << epi.out_elem_bytes << (epi.reduce_f32 ? " (reduction)" : "") << ", "
                                 << n_blocks * 8 << " columns");
    const synth::RowMajorMatrix out{0x50000000, 64, n_blocks * 8, epi.out_elem_bytes};
    InstChunk c;
    const std::uint32_t staging = 2048;
    synth::emit_staged_epilogue(c, epi, synth::MmaAccumulatorTile{0, 1, n_blocks}, out, 0, 0, staging, 100, 120);
    c.finalize();
    int shared = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].space != MemSpace::Shared) continue;
      ++shared;
      const SharedWavefronts w = shared_wavefronts(c[i], kGeometry);
      INFO("record " << i << " " << opcode_info(c[i].op).name << " " << int{c[i].access_bytes} << " B/lane");
      CHECK(w.conflicts() == 0);
      CHECK(w.wavefronts == 32u * c[i].access_bytes / 128u);  // one 128-byte bank row per wavefront
      for (int l = 0; l < kWarpSize; ++l) {  // inside the warp's staging rows
        CHECK(c[i].lane_address(l) >= staging);
        CHECK(c[i].lane_address(l) + c[i].access_bytes <= staging + epi.staging_bytes());
      }
    }
    CHECK(shared > 0);
  }
  // An mma accumulator block (4 lanes x 4 B per row, 8 rows) stored into a swizzled tile of 256-byte rows: 8 rows
  // in 8 different 16-byte bank groups, 1 wavefront; the same rows unswizzled (row pitch 256 B) share 4 banks.
  const auto swizzled = synth::swizzled_rows_offsets(0, 8, 3 * 16, 16, 4, 4);
  CHECK(wavefronts(with_deltas(Opcode::STS, 4, swizzled)) == 1);
  std::array<std::int32_t, kWarpSize> linear{};
  for (int l = 0; l < kWarpSize; ++l) linear[l] = (8 + l / 4) * 256 + 3 * 16 + (l % 4) * 4;
  CHECK(wavefronts(with_deltas(Opcode::STS, 4, linear)) == 8);
}

namespace smem_reference {

// The rule of smem_banks.h applied word by word, with nothing skipped: every word of every active lane in a phase,
// the distinct ones counted per bank by comparing each with all the others.
SharedWavefronts by_words(const WarpInst& in, const SharedBankGeometry& g) {
  SharedWavefronts out;
  const std::uint32_t width = in.op == Opcode::LDSM ? 16 : std::max<std::uint32_t>(in.access_bytes, 1);
  const std::uint32_t phase = shared_phase_lanes(in, g), lanes = shared_addressed_lanes(in);
  for (std::uint32_t first = 0; first < lanes; first += phase) {
    std::vector<std::uint64_t> words;
    for (std::uint32_t lane = first; lane < std::min(first + phase, lanes); ++lane) {
      if (!(in.active_mask >> lane & 1u)) continue;
      const std::uint64_t a = in.lane_address(static_cast<int>(lane));
      for (std::uint64_t byte = a; byte < a + width; ++byte) {
        const std::uint64_t w = byte / g.bank_bytes;
        if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
      }
    }
    if (words.empty()) continue;
    std::uint32_t busiest = 0;
    for (std::uint64_t w : words)
      busiest = std::max<std::uint32_t>(
          busiest, static_cast<std::uint32_t>(std::count_if(words.begin(), words.end(), [&](std::uint64_t v) {
            return v % g.banks == w % g.banks;
          })));
    out.wavefronts += busiest;
    out.ideal += static_cast<std::uint32_t>((words.size() + g.banks - 1) / g.banks);
  }
  return out;
}

}  // namespace smem_reference

TEST_CASE("wavefronts equal a word-by-word count for random accesses, widths and bank geometries", "[smem]") {
  // Addresses drawn from small windows (many conflicts and broadcasts), aligned and misaligned, with random lane
  // masks, for every width and LDSM matrix count, on power-of-two and other bank counts, 4- and 8-byte banks.
  std::mt19937_64 rng(20261125);
  const SharedBankGeometry geometries[] = {{32, 4}, {32, 8}, {16, 4},   {64, 4}, {24, 4},
                                           {20, 8}, {6, 4},  {5, 8},    {1, 4},  {1024, 8}};
  const std::uint32_t widths[] = {1, 2, 3, 4, 8, 12, 16};
  int cases = 0;
  for (const SharedBankGeometry& g : geometries)
    for (int round = 0; round < 400; ++round) {
      std::array<std::int32_t, kWarpSize> deltas{};
      const bool ldsm = round % 8 == 7;
      const std::uint32_t width = ldsm ? 16 : widths[round % 7];
      const std::uint32_t window = 64u << (round % 6);  // 64 B .. 2 KiB
      const std::uint32_t align = round % 3 == 0 ? 1 : width;
      for (auto& d : deltas) d = static_cast<std::int32_t>(rng() % window / align * align);
      WarpInst in = with_deltas(ldsm ? Opcode::LDSM : (round % 2 ? Opcode::LDS : Opcode::STS), width, deltas,
                                ldsm ? static_cast<std::uint8_t>(1u << (round / 8 % 3)) : 0);
      in.base = 4096 * (1 + rng() % 8) + (round % 5 == 0 ? rng() % 16 : 0);
      in.active_mask = round % 4 == 0 ? static_cast<std::uint32_t>(rng()) : ~0u;
      const SharedWavefronts fast = shared_wavefronts(in, g), slow = smem_reference::by_words(in, g);
      INFO("banks " << g.banks << " x " << g.bank_bytes << " B, " << opcode_info(in.op).name << " width " << width
                    << ", round " << round);
      CHECK(fast.wavefronts == slow.wavefronts);
      CHECK(fast.ideal == slow.ideal);
      ++cases;
    }
  CHECK(cases == 4000);
}

TEST_CASE("remembered wavefront counts equal fresh ones when a few patterns recur at many bases", "[smem]") {
  // shared_wavefronts keeps each address pattern's count keyed by the base modulo the bank row: bases a row apart
  // must meet the remembered count, bases that differ otherwise (alignment, bank offset) must not, and neither must
  // patterns that differ in a lane mask, a stride, a delta, a width, an LDSM matrix count or the bank geometry.
  std::mt19937_64 rng(20261126);
  std::array<std::array<std::int32_t, kWarpSize>, 3> delta_sets{};
  for (auto& set : delta_sets)
    for (auto& d : set) d = static_cast<std::int32_t>(rng() % 512 / 4 * 4);
  auto pattern = [&](int p) {
    WarpInst in;
    in.space = MemSpace::Shared;
    in.op = p % 5 == 4 ? Opcode::LDSM : (p % 2 ? Opcode::LDS : Opcode::STS);
    in.access_bytes = static_cast<std::uint8_t>(std::array<int, 4>{4, 8, 16, 2}[p % 4]);
    in.num_dst = static_cast<std::uint8_t>(1u << (p % 3));
    switch (p % 3) {
      case 0:
        in.addr_mode = AddrMode::Strided;
        in.stride = static_cast<std::int32_t>(in.access_bytes) * (1 + p % 4);
        break;
      case 1:
        in.addr_mode = AddrMode::Strided2D;
        in.group = static_cast<std::uint8_t>(4u << (p % 2));
        in.stride = 8 * (p % 3);
        in.group_stride = 128 + 16 * (p % 5);
        break;
      default:
        in.addr_mode = AddrMode::Deltas;
        in.deltas = delta_sets[static_cast<std::size_t>(p) % delta_sets.size()].data();
    }
    return in;
  };
  const SharedBankGeometry geometries[] = {{32, 4}, {32, 8}, {24, 4}, {5, 8}};
  int checked = 0;
  for (int round = 0; round < 3000; ++round) {
    const SharedBankGeometry& g = geometries[rng() % 4];
    WarpInst in = pattern(static_cast<int>(rng() % 15));
    in.base = g.row_bytes() * (rng() % 64) + (rng() % 3 == 0 ? rng() % 16 : 0);
    in.active_mask = rng() % 4 == 0 ? static_cast<std::uint32_t>(rng()) : ~0u;
    const SharedWavefronts remembered = shared_wavefronts(in, g), fresh = count_shared_wavefronts(in, g),
                           by_words = smem_reference::by_words(in, g);
    INFO("round " << round << ": banks " << g.banks << " x " << g.bank_bytes << ", base " << in.base);
    CHECK(remembered.wavefronts == fresh.wavefronts);
    CHECK(remembered.ideal == fresh.ideal);
    CHECK(fresh.wavefronts == by_words.wavefronts);
    ++checked;
  }
  CHECK(checked == 3000);
}
