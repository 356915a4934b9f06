// Tests of the reusable synthesizer pieces (traces/synth/emit.h, epilogue.h, tile_pipeline.h) on kernels that are
// not GEMMs. Expected values are worked out by hand from the shapes in the comments, not by the pieces' formulas.
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "sim/trace/inst.h"
#include "traces/synth/emit.h"
#include "traces/synth/epilogue.h"
#include "traces/synth/generated.h"
#include "traces/synth/tile_pipeline.h"

using namespace warpsim;
using namespace warpsim::synth;

namespace {

constexpr std::uint64_t kLine = 128;

struct Record {
  WarpInst inst;
  std::array<std::uint64_t, kWarpSize> addr{};  // resolved lane addresses (Deltas pointers die with the batch)
};

std::vector<Record> drain(std::unique_ptr<WarpGenerator> generator) {
  GeneratedWarpStream stream(std::move(generator));
  std::vector<Record> out;
  std::array<WarpInst, 16> buf{};  // small batches: chunk boundaries are crossed many times
  for (std::size_t n; (n = stream.read(buf.data(), buf.size())) > 0;) {
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(check_inst(buf[i]) == "");
      Record r{buf[i], {}};
      if (buf[i].addr_mode != AddrMode::None)
        for (int l = 0; l < kWarpSize; ++l) r.addr[l] = buf[i].lane_address(l);
      r.inst.deltas = nullptr;
      out.push_back(r);
    }
  }
  return out;
}

// 128-byte lines touched by the active lanes of a memory record.
std::set<std::uint64_t> lines_of(const Record& r) {
  std::set<std::uint64_t> lines;
  for (int l = 0; l < kWarpSize; ++l)
    if (r.inst.active_mask >> l & 1u) {
      lines.insert(r.addr[l] / kLine);
      lines.insert((r.addr[l] + r.inst.access_bytes - 1) / kLine);
    }
  return lines;
}

// ---- an RMSNorm-like kernel built from the pieces -------------------------------------------------------------
//
// X and Y: `rows` x `cols` bf16, row-major. Each warp owns 4 rows; a column tile is 4 rows x 64 bf16 = one LDG.128
// (8 lanes x 16 B per row, 4 registers per lane). Pass 1 (the pipelined loop over column tiles, `stages`-1 loads in
// flight through a ring of register buffers): FFMA sum of squares per register. Epilogue: MUFU (rsqrt), pass 2
// re-reads each tile, FMUL by the factor, STG.
constexpr std::uint32_t kRowsPerWarp = 4;
constexpr std::uint32_t kTileCols = 64;
constexpr std::uint32_t kLanesPerRow = 8;
constexpr std::uint32_t kElemsPerLane = 8;  // bf16 per 16-byte lane access
constexpr std::uint32_t kRegsPerLoad = 4;
constexpr std::uint16_t kPredLoop = 248;

struct RmsPlan {
  RowMajorMatrix x, y;
  std::uint32_t col_tiles = 0, stages = 2;
  std::uint16_t r_tid = 0, r_xptr = 0, r_yptr = 0, r_count = 0, r_sumsq = 0, r_rinv = 0, r_buf = 0, r_out = 0;
};

class RmsWarp final : public TilePipelineWarp<RmsWarp> {
 public:
  RmsWarp(const RmsPlan& plan, std::uint32_t warp, std::uint32_t min_chunk_insts = 0)
      : TilePipelineWarp(PipelineTiles{0, plan.col_tiles, plan.stages}, min_chunk_insts),
        p_(plan),
        row0_(warp * kRowsPerWarp) {}

  void emit_prologue(InstChunk& c) {
    emit_alu(c, Opcode::S2R, p_.r_tid, {});
    emit_alu(c, Opcode::IMAD, p_.r_xptr, {p_.r_tid});
    for (std::uint32_t s = 0; s + 1 < tiles().stages; ++s) emit_tile_load(c, tiles().prologue_tile(s), s);
  }
  void emit_iteration(InstChunk& c, std::uint32_t i) {
    const std::uint32_t refill = tiles().refill_tile(i);
    if (tiles().in_range(refill))
      emit_tile_load(c, refill, tiles().stage_of(refill - tiles().first));
    else
      c.skip();
    const std::uint16_t buf = buffer(tiles().stage_of(i));
    for (std::uint32_t r = 0; r < kRegsPerLoad; ++r)
      emit_alu(c, Opcode::FFMA, p_.r_sumsq, {reg(buf + r), reg(buf + r), p_.r_sumsq});
    emit_loop_tail(c, p_.r_count, kPredLoop);
  }
  void emit_epilogue(InstChunk& c) {
    emit_alu(c, Opcode::MUFU, p_.r_rinv, {p_.r_sumsq});
    for (std::uint32_t t = 0; t < tiles().end; ++t) {
      const std::uint64_t col = std::uint64_t{t} * kTileCols;
      const std::uint32_t mask = matrix_lane_mask(p_.x, row0_, col, kLanesPerRow, kElemsPerLane);
      emit_load(c, Opcode::LDG, MemSpace::Global, matrix_lanes(p_.x, row0_, col, kLanesPerRow, kElemsPerLane), mask,
                p_.r_out, kRegsPerLoad, {p_.r_xptr});
      for (std::uint32_t r = 0; r < kRegsPerLoad; ++r)
        emit_alu(c, Opcode::FMUL, reg(p_.r_out + r), {reg(p_.r_out + r), p_.r_rinv});
      emit_store(c, Opcode::STG, MemSpace::Global, matrix_lanes(p_.y, row0_, col, kLanesPerRow, kElemsPerLane), mask,
                 {p_.r_out, p_.r_yptr});
    }
    c.emit(Opcode::EXIT);
  }

 private:
  std::uint16_t buffer(std::uint32_t stage) const { return reg(p_.r_buf + stage * kRegsPerLoad); }
  void emit_tile_load(InstChunk& c, std::uint32_t tile, std::uint32_t stage) {
    const std::uint64_t col = std::uint64_t{tile} * kTileCols;
    emit_load(c, Opcode::LDG, MemSpace::Global, matrix_lanes(p_.x, row0_, col, kLanesPerRow, kElemsPerLane),
              matrix_lane_mask(p_.x, row0_, col, kLanesPerRow, kElemsPerLane), buffer(stage), kRegsPerLoad,
              {p_.r_xptr});
  }

  const RmsPlan& p_;
  std::uint64_t row0_;
};

RmsPlan make_rms_plan(std::uint64_t rows, std::uint64_t cols, std::uint32_t stages) {
  RmsPlan p;
  p.x = RowMajorMatrix{0x10000000, rows, cols, 2};
  p.y = RowMajorMatrix{0x20000000, rows, cols, 2};
  p.col_tiles = static_cast<std::uint32_t>((cols + kTileCols - 1) / kTileCols);
  p.stages = stages;
  RegisterAllocator regs;
  p.r_tid = regs.take();
  p.r_xptr = regs.take();
  p.r_yptr = regs.take();
  p.r_count = regs.take();
  p.r_sumsq = regs.take();
  p.r_rinv = regs.take();
  p.r_buf = regs.take(stages * kRegsPerLoad);
  p.r_out = regs.take(kRegsPerLoad);
  return p;
}

}  // namespace

TEST_CASE("pieces: RMSNorm-like row kernel (4 column tiles, 2 stages, ragged rows)", "[synth][pieces]") {
  // 10 rows x 256 bf16 (512 B = 4 lines per row): warps 0 and 1 own 4 rows each, warp 2 rows 8-9 (half masked).
  const RmsPlan plan = make_rms_plan(10, 256, 2);
  std::uint64_t x_lines = 0, y_lines = 0, y_bytes = 0;
  std::set<std::uint64_t> y_seen;
  for (std::uint32_t w = 0; w < 3; ++w) {
    const std::vector<Record> s = drain(std::make_unique<RmsWarp>(plan, w));
    std::map<Opcode, int> count;
    for (const Record& r : s) ++count[r.inst.op];
    // Per warp, by hand: prologue S2R, IMAD, 1 LDG (tile 0); iterations 0-2: LDG of the next tile, 4 FFMA, IADD3,
    // ISETP, BRA (8); iteration 3: no load (its slot skipped), 7; epilogue MUFU + 4 x (LDG, 4 FMUL, STG) + EXIT.
    CHECK(s.size() == 3 + 3 * 8 + 7 + 1 + 4 * 6 + 1);
    CHECK(count[Opcode::LDG] == 8);
    CHECK(count[Opcode::FFMA] == 16);
    CHECK(count[Opcode::FMUL] == 16);
    CHECK(count[Opcode::STG] == 4);
    CHECK(count[Opcode::BRA] == 4);
    CHECK(count[Opcode::MUFU] == 1);
    CHECK(s.back().inst.op == Opcode::EXIT);

    // The loop body restarts at one pc: 4 FFMA pcs for 16 FFMAs, and iteration 3's code is as long as the others
    // (its skipped LDG keeps its slot), so the FFMAs of all iterations share pcs.
    std::set<std::uint32_t> ffma_pcs;
    for (const Record& r : s)
      if (r.inst.op == Opcode::FFMA) ffma_pcs.insert(r.inst.pc);
    CHECK(ffma_pcs.size() == 4);

    // Register dependencies: every FFMA squares registers last written by the LDG of the tile it consumes (tile i
    // for the i-th group of 4 FFMAs: loads run one tile ahead), and the MUFU reads the last FFMA's sum.
    std::map<std::uint16_t, std::size_t> writer;  // register -> index of its last writer
    int ffma_seen = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const WarpInst& in = s[i].inst;
      if (in.op == Opcode::FFMA) {
        const Record& load = s[writer.at(in.src[0])];
        REQUIRE(load.inst.op == Opcode::LDG);
        const std::uint64_t tile = ffma_seen / 4;
        CHECK(load.inst.base == plan.x.base + (w * 4 * 256 + tile * 64) * 2);  // row 4w, column 64*tile
        if (ffma_seen > 0) CHECK(s[writer.at(in.src[2])].inst.op == Opcode::FFMA);  // the sum chains
        ++ffma_seen;
      }
      if (in.op == Opcode::MUFU) CHECK(s[writer.at(in.src[0])].inst.op == Opcode::FFMA);
      if (in.op == Opcode::STG) {
        CHECK(s[writer.at(in.src[0])].inst.op == Opcode::FMUL);
        const Record& scaled = s[writer.at(in.src[0])];
        CHECK(s[writer.at(scaled.inst.src[1])].inst.op == Opcode::MUFU);
      }
      for (int d = 0; d < in.num_dst; ++d) writer[in.dst[d]] = i;
    }
    CHECK(ffma_seen == 16);

    // Coalescing: each access covers whole 128-byte lines, one per valid row (4, or 2 for warp 2).
    const std::uint32_t valid_rows = w < 2 ? 4 : 2;
    for (const Record& r : s) {
      if (r.inst.op != Opcode::LDG && r.inst.op != Opcode::STG) continue;
      const std::set<std::uint64_t> lines = lines_of(r);
      CHECK(lines.size() == valid_rows);
      CHECK(std::uint64_t(r.inst.active_lanes()) * 16 == lines.size() * kLine);
      if (r.inst.op == Opcode::LDG) x_lines += lines.size();
      if (r.inst.op == Opcode::STG) {
        y_lines += lines.size();
        for (int l = 0; l < kWarpSize; ++l)
          if (r.inst.active_mask >> l & 1u) {
            CHECK(y_seen.insert(r.addr[l]).second);  // each 16-byte piece of Y written once
            y_bytes += 16;
          }
      }
    }
  }
  // Y = 10 x 512 B = 40 lines, written once; X read twice (pass 1 and pass 2).
  CHECK(y_lines == 40);
  CHECK(y_bytes == 10 * 256 * 2);
  CHECK(x_lines == 80);
}

TEST_CASE("pieces: pipeline batching and a 3-stage ring", "[synth][pieces]") {
  // 4 rows x 448 bf16: 7 column tiles, stages 3 (2 loads in flight). Same stream whatever the chunking.
  const RmsPlan plan = make_rms_plan(4, 448, 3);
  const std::vector<Record> s = drain(std::make_unique<RmsWarp>(plan, 0));
  const std::vector<Record> batched = drain(std::make_unique<RmsWarp>(plan, 0, 20));  // 3 iterations a chunk
  REQUIRE(batched.size() == s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    CHECK(batched[i].inst.pc == s[i].inst.pc);
    CHECK(batched[i].inst.op == s[i].inst.op);
    CHECK(batched[i].addr == s[i].addr);
  }
  // Prologue 2 + 2 LDG; iterations 0-4 load tiles 2-6 (8 each), 5-6 skip (7 each); epilogue 1 + 7 x 6 + 1.
  CHECK(s.size() == 4 + 5 * 8 + 2 * 7 + 1 + 7 * 6 + 1);
  // Loads ahead of use: the LDG of tile i+2 comes before the first FFMA of tile i.
  std::vector<std::size_t> load_at, first_ffma_at;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].inst.op == Opcode::LDG && load_at.size() < 7) load_at.push_back(i);
    if (s[i].inst.op == Opcode::FFMA && (i == 0 || s[i - 1].inst.op != Opcode::FFMA)) first_ffma_at.push_back(i);
  }
  REQUIRE(load_at.size() == 7);
  REQUIRE(first_ffma_at.size() == 7);
  for (std::size_t t = 0; t + 2 < 7; ++t) CHECK(load_at[t + 2] < first_ffma_at[t]);
  for (std::size_t t = 0; t < 7; ++t) CHECK(s[load_at[t]].inst.base == plan.x.base + t * 128);
}

TEST_CASE("pieces: coalesced tile copy, swizzle and ldmatrix lanes", "[synth][pieces]") {
  // A 64 x 64 bf16 tile (128 B rows: 8 chunks) copied by 128 threads: 512 chunks, 4 copies per thread, each warp
  // copy 4 whole rows.
  const CoalescedTileCopy copy(64, 128, 128);
  CHECK(copy.copies_per_thread == 4);
  CHECK(copy.lanes_per_row == 8);
  const RowMajorMatrix m{0x40000000, 1000, 4096, 2};
  std::set<std::pair<std::uint64_t, std::uint64_t>> chunks;  // (row, 16-byte chunk) of the whole tile
  for (std::uint32_t warp = 0; warp < 4; ++warp) {
    for (std::uint32_t i = 0; i < copy.copies_per_thread; ++i) {
      InstChunk c;
      const CoalescedTileCopy::Chunk at = copy.first_chunk(i, warp);
      const std::uint64_t row = 960 + at.row, col = at.chunk * 8;  // tile at rows 960-1023: rows >= 1000 masked
      emit_async_copy(c, matrix_lanes(m, row, col, copy.lanes_per_row, 8),
                      matrix_lane_mask(m, row, col, copy.lanes_per_row, 8), 1, 2);
      const WarpInst& in = c[0];
      std::set<std::uint64_t> lines;
      for (int l = 0; l < kWarpSize; ++l) {
        const std::uint64_t a = in.lane_address(l);
        const std::uint64_t r = (a - m.base) / (4096 * 2), ch = (a - m.base) % (4096 * 2) / 16;
        CHECK(((in.active_mask >> l & 1u) != 0) == (r < 1000));
        if (in.active_mask >> l & 1u) lines.insert(a / kLine);
        CHECK(chunks.insert({r, ch}).second);
      }
      const std::uint64_t valid_rows = 960 + at.row + 4 <= 1000 ? 4 : (960 + at.row < 1000 ? 1000 - 960 - at.row : 0);
      CHECK(lines.size() == valid_rows);
    }
  }
  CHECK(chunks.size() == 64 * 8);  // every chunk of the tile exactly once

  // Swizzle: within every 8 rows, the 8 chunks of a row are a permutation of the line's 8 slots, and one logical
  // chunk of 8 consecutive rows lands in 8 different 16-byte bank groups.
  for (std::uint32_t row0 = 0; row0 < 64; row0 += 8)
    for (std::uint32_t chunk = 0; chunk < 8; ++chunk) {
      std::set<std::uint32_t> groups;
      for (std::uint32_t r = 0; r < 8; ++r) groups.insert(swizzled_chunk_offset(row0 + r, chunk, 8) % 128 / 16);
      CHECK(groups.size() == 8);
    }
  // ldmatrix.x4 A order: lanes 0-7 rows 0-7 / chunk 0, lanes 8-15 rows 8-15 / chunk 0, lanes 16-23 rows 0-7 /
  // chunk 1; B order swaps the last two. Each phase of 8 lanes hits 8 bank groups.
  const auto a = ldmatrix_x4_offsets(0, 16, 2, 8, LdsmOrder::RowHalvesFirst);
  const auto b = ldmatrix_x4_offsets(4096, 16, 2, 8, LdsmOrder::ChunksFirst);
  for (int l = 0; l < 8; ++l) {
    CHECK(a[l] == static_cast<std::int32_t>(swizzled_chunk_offset(16 + l, 2, 8)));
    CHECK(a[8 + l] == static_cast<std::int32_t>(swizzled_chunk_offset(24 + l, 2, 8)));
    CHECK(a[16 + l] == static_cast<std::int32_t>(swizzled_chunk_offset(16 + l, 3, 8)));
    CHECK(b[8 + l] == static_cast<std::int32_t>(4096 + swizzled_chunk_offset(16 + l, 3, 8)));
    CHECK(b[16 + l] == static_cast<std::int32_t>(4096 + swizzled_chunk_offset(24 + l, 2, 8)));
  }
  for (int q = 0; q < 4; ++q) {
    std::set<std::int32_t> groups;
    for (int l = 0; l < 8; ++l) groups.insert(a[8 * q + l] % 128 / 16);
    CHECK(groups.size() == 8);
  }
}

TEST_CASE("pieces: staged epilogue of a 16 x 64 accumulator tile (attention O-like)", "[synth][pieces]") {
  // One warp, 1 x 8 blocks of 16x8 fp32 (32 registers), written as bf16 into a 20 x 64 matrix at row 8: rows
  // 8-19 valid (12 of 16). One pass of 16 x 64: 32 FMUL + 16 pack FMUL, 16 STS, 4 LDS.128 (8 lanes per 128 B row,
  // 4 rows each), IADD3, 4 STG.128 of which the last (rows 20-23) has no valid lane and is skipped.
  const RowMajorMatrix out{0x50000000, 20, 64, 2};
  const StagedEpilogue epi = StagedEpilogue::store_16bit(64);
  InstChunk c;
  emit_staged_epilogue(c, epi, MmaAccumulatorTile{0, 1, 8}, out, 8, 0, 1024, 40, 60);
  std::map<Opcode, int> count;
  std::set<std::uint64_t> lines;
  for (std::size_t i = 0; i < c.size(); ++i) {
    ++count[c[i].op];
    if (c[i].op == Opcode::STG)
      for (int l = 0; l < kWarpSize; ++l)
        if (c[i].active_mask >> l & 1u) lines.insert(c[i].lane_address(l) / kLine);
  }
  CHECK(count[Opcode::FMUL] == 48);
  CHECK(count[Opcode::STS] == 16);
  CHECK(count[Opcode::LDS] == 4);
  CHECK(count[Opcode::STG] == 3);
  CHECK(c.pc() == (48 + 16 + 4 + 1 + 4) * kInstBytes);  // the skipped store keeps its slot
  CHECK(lines.size() == 12);                             // rows 8-19, one 128-byte line each
  for (std::uint64_t r = 8; r < 20; ++r) CHECK(lines.count((out.base + r * 128) / kLine) == 1);

  // fp32 reduction of the same tile: passes of 16 x 32 (128 B of fp32 rows): 2 passes of 16 FMUL, 8 STS.64,
  // 16 LDS.32, IADD3, 16 RED (4 of them rows 20-23, skipped).
  const RowMajorMatrix ws{0x60000000, 20, 64, 4};
  InstChunk r;
  emit_staged_epilogue(r, StagedEpilogue::reduce_fp32(64), MmaAccumulatorTile{0, 1, 8}, ws, 8, 0, 1024, 40, 60);
  count.clear();
  for (std::size_t i = 0; i < r.size(); ++i) ++count[r[i].op];
  CHECK(count[Opcode::FMUL] == 32);
  CHECK(count[Opcode::STS] == 16);
  CHECK(count[Opcode::LDS] == 32);
  CHECK(count[Opcode::RED] == 24);
  CHECK(r.pc() == 2 * (16 + 8 + 16 + 1 + 16) * kInstBytes);
}
