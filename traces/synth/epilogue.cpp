// Staged accumulator epilogue (see epilogue.h).
#include "traces/synth/epilogue.h"

#include <algorithm>
#include <numeric>

namespace warpsim::synth {
namespace {

constexpr std::uint32_t kStagedRowBytes = 128;  // one cache line of output per staged row
constexpr std::uint32_t kFragLanesPerRow = 4;    // mma fragment layout: 4 lanes per accumulator row
constexpr std::uint32_t kBankBytes = 4;          // a shared-memory bank's word (smem.bank_bytes of every shipped GPU)
constexpr std::uint32_t kBiasLaneElems = 2;      // bias elements per lane per n8 block (the fragment's two columns)
// Bytes of one STS of the staging: an accumulator pair of two output elements.
constexpr std::uint32_t staged_pair_bytes(std::uint32_t out_elem_bytes) { return 2 * out_elem_bytes; }

// A pass is as wide as the tile allows up to one 128-byte line of output, and no wider than 32 lanes of the
// read-back (narrow, misaligned stores).
StagedEpilogue make_epilogue(bool reduce_f32, std::uint32_t out_elem_bytes, std::uint32_t tile_cols,
                             std::uint32_t readback_lane_bytes) {
  const std::uint32_t max_cols = std::min(kStagedRowBytes, kWarpSize * readback_lane_bytes) / out_elem_bytes;
  StagedEpilogue e;
  e.reduce_f32 = reduce_f32;
  e.out_elem_bytes = out_elem_bytes;
  e.pass_cols = std::gcd(tile_cols, max_cols);
  const std::uint32_t pass_bytes = e.pass_cols * out_elem_bytes;
  // A packed 16-bit pair per lane is 4 B, within one 16-byte chunk: the swizzle applies (fp32 pairs would straddle).
  e.swizzled = pass_bytes < kStagedRowBytes && staged_pair_bytes(out_elem_bytes) <= kBankBytes;
  e.staging_pitch = e.swizzled ? pass_bytes : pass_bytes + kFragLanesPerRow * staged_pair_bytes(out_elem_bytes);
  e.readback_lane_bytes = readback_lane_bytes;
  e.readback_lanes_per_row = e.pass_cols * out_elem_bytes / readback_lane_bytes;
  e.readback_rows_per_inst = kWarpSize / e.readback_lanes_per_row;
  e.readback_insts = kEpilogueRows / e.readback_rows_per_inst;
  return e;
}

// The bias of `blocks` n8 blocks from column `col` into bias buffer `buffer`: per block one LDG of two elements
// per lane at columns 2*(l%4)+{0,1} (lanes of the 8 row groups share the addresses), masked past the vector's end.
// Issued one pass ahead of its use (buffer = pass % 2), so only the first pass waits for the load's latency.
std::uint16_t bias_buffer_reg(const StagedEpilogue& epi, std::uint32_t buffer, std::uint32_t block) {
  return reg(epi.fusion.bias_reg + (buffer * (epi.pass_cols / kMmaSyncShape.n) + block) * kBiasLaneElems);
}

void emit_bias_loads(InstChunk& c, const StagedEpilogue& epi, std::uint64_t col, std::uint32_t blocks,
                     std::uint32_t buffer) {
  const RowMajorMatrix& v = epi.fusion.bias_vector;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint64_t block_col = col + b * kMmaSyncShape.n;
    std::uint32_t mask = 0;
    for (std::uint32_t l = 0; l < kWarpSize; ++l)
      if (block_col + kBiasLaneElems * (l % kFragLanesPerRow) < v.cols) mask |= 1u << l;
    if (mask == 0) {
      c.skip();
      continue;
    }
    // Row pitch 0: the 8 groups of 4 lanes read the same 4 pairs (a broadcast).
    emit_load(c, Opcode::LDG, MemSpace::Global,
              LaneRows{v.address(0, block_col), kBiasLaneElems * v.elem_bytes, kFragLanesPerRow, 0}, mask,
              bias_buffer_reg(epi, buffer, b), (kBiasLaneElems * v.elem_bytes + 3) / 4, {});
  }
}

// 16-bit bias widened to fp32 before its use: one HADD2 per element.
void emit_bias_widen(InstChunk& c, const StagedEpilogue& epi, std::uint32_t blocks, std::uint32_t buffer) {
  if (epi.fusion.bias_vector.elem_bytes != 2) return;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint16_t r = bias_buffer_reg(epi, buffer, b);
    for (std::uint32_t e = 0; e < kBiasLaneElems; ++e) emit_alu(c, Opcode::HADD2, reg(r + e), {r});
  }
}

// The activation of one accumulator element `x`, in place (epilogue.h: instruction counts).
void emit_activation(InstChunk& c, EpilogueActivation activation, std::uint16_t x) {
  switch (activation) {
    case EpilogueActivation::None:
      return;
    case EpilogueActivation::Relu:
      emit_alu(c, Opcode::FMUL, x, {x});  // FMNMX x, RZ
      return;
    case EpilogueActivation::Gelu:
      // The temporaries are x's own register id: a dependent chain, as the real sequence is.
      emit_alu(c, Opcode::FMUL, x, {x});      // x2 = x * x (a temporary; x itself stays live in hardware)
      emit_alu(c, Opcode::FFMA, x, {x});      // p = c2 * x2 + c1
      emit_alu(c, Opcode::FMUL, x, {x});      // u = x * p
      emit_alu(c, Opcode::MUFU, x, {x});      // t = tanh.approx(u)
      emit_alu(c, Opcode::FMUL, x, {x});      // h = 0.5 * x
      emit_alu(c, Opcode::FFMA, x, {x});      // y = h * t + h
      return;
  }
}

}  // namespace

StagedEpilogue StagedEpilogue::store_16bit(std::uint32_t tile_cols, std::uint32_t store_bytes) {
  return make_epilogue(false, 2, tile_cols, store_bytes);
}
StagedEpilogue StagedEpilogue::store_32bit(std::uint32_t tile_cols, std::uint32_t store_bytes) {
  return make_epilogue(false, 4, tile_cols, store_bytes);
}
StagedEpilogue StagedEpilogue::store_64bit(std::uint32_t tile_cols, std::uint32_t store_bytes) {
  return make_epilogue(false, 8, tile_cols, store_bytes);
}
StagedEpilogue StagedEpilogue::reduce_fp32(std::uint32_t tile_cols) { return make_epilogue(true, 4, tile_cols, 4); }

void emit_staged_epilogue(InstChunk& c, const StagedEpilogue& epi, const MmaAccumulatorTile& acc,
                          const RowMajorMatrix& out, std::uint64_t row0, std::uint64_t col0,
                          std::uint32_t staging_base, std::uint16_t readback_reg, std::uint16_t out_ptr) {
  const std::uint32_t blocks_per_pass = epi.pass_cols / kMmaSyncShape.n;
  const std::uint32_t passes_n = acc.n_blocks / blocks_per_pass;
  // STS of an accumulator pair: packed into one 32-bit register for 16-bit output, else 2 registers (STS.64).
  const bool packed = epi.out_elem_bytes == 2;
  const std::uint32_t sts_bytes = staged_pair_bytes(epi.out_elem_bytes);
  const std::uint32_t lane_elems = epi.readback_lane_bytes / epi.out_elem_bytes;
  const std::uint32_t regs_per_load = epi.regs_per_readback();
  const std::uint32_t chunks_per_row = epi.staging_pitch / kVecBytes;  // of a swizzled staging
  const EpilogueFusion& f = epi.fusion;
  const std::uint32_t total_passes = acc.m_blocks * passes_n;
  if (f.bias) emit_bias_loads(c, epi, col0, blocks_per_pass, 0);
  for (std::uint32_t mi = 0; mi < acc.m_blocks; ++mi) {
    for (std::uint32_t pass = 0; pass < passes_n; ++pass) {
      const std::uint32_t ni0 = pass * blocks_per_pass, ni_end = ni0 + blocks_per_pass;
      const std::uint32_t q = mi * passes_n + pass, buffer = q % 2;
      if (f.bias && q + 1 < total_passes)  // the next pass's bias, while this one computes and stores
        emit_bias_loads(c, epi, col0 + ((q + 1) % passes_n) * epi.pass_cols, blocks_per_pass, 1 - buffer);
      if (f.bias) emit_bias_widen(c, epi, blocks_per_pass, buffer);
      for (std::uint32_t ni = ni0; ni < ni_end; ++ni)
        for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
          const std::uint16_t x = acc.reg(mi, ni, e);
          if (f.bias)  // alpha*acc + bias[col]: lane's elements e%2 of the block's two columns
            emit_alu(c, Opcode::FFMA, x, {x, reg(bias_buffer_reg(epi, buffer, ni - ni0) + e % 2)});
          else
            emit_alu(c, epi.out_elem_bytes == 8 ? Opcode::DMUL : Opcode::FMUL, x, {x});
          emit_activation(c, f.activation, x);
        }
      if (packed)  // F2FP packs of the pairs (e = 0,1 and 2,3), as FMUL
        for (std::uint32_t ni = ni0; ni < ni_end; ++ni)
          for (std::uint32_t half = 0; half < 2; ++half) {
            const std::uint16_t lo = acc.reg(mi, ni, 2 * half);
            emit_alu(c, Opcode::FMUL, lo, {lo, reg(lo + 1u)});
          }
      for (std::uint32_t ni = ni0; ni < ni_end; ++ni) {
        for (std::uint32_t half = 0; half < 2; ++half) {  // rows 0-7, then 8-15 of the block
          const std::uint32_t first_byte = (ni - ni0) * kMmaSyncShape.n * epi.out_elem_bytes;
          const LaneRows staging{staging_base + half * kLdsmRows * epi.staging_pitch + first_byte, sts_bytes,
                                 kFragLanesPerRow, epi.staging_pitch};
          const std::uint16_t pair = acc.reg(mi, ni, 2 * half);
          WarpInst& sts = packed ? emit_store(c, Opcode::STS, MemSpace::Shared, staging, kFullMask, {pair})
                                 : emit_store(c, Opcode::STS, MemSpace::Shared, staging, kFullMask, {pair, reg(pair + 1u)});
          if (epi.swizzled) {  // lane offsets from the staging base
            c.own_deltas(swizzled_rows_offsets(0, half * kLdsmRows, first_byte, chunks_per_row, kFragLanesPerRow,
                                               sts_bytes));
            sts.base = staging_base;
          }
        }
      }
      for (std::uint32_t j = 0; j < epi.readback_insts; ++j) {
        const LaneRows staged{staging_base + j * epi.readback_rows_per_inst * epi.staging_pitch,
                              epi.readback_lane_bytes, epi.readback_lanes_per_row, epi.staging_pitch};
        WarpInst& lds = emit_load(c, Opcode::LDS, MemSpace::Shared, staged, kFullMask,
                                  reg(readback_reg + j * regs_per_load), regs_per_load, {});
        if (epi.swizzled) {
          c.own_deltas(swizzled_rows_offsets(0, j * epi.readback_rows_per_inst, 0, chunks_per_row,
                                             epi.readback_lanes_per_row, epi.readback_lane_bytes));
          lds.base = staging_base;
        }
      }
      emit_alu(c, Opcode::IADD3, out_ptr, {out_ptr});
      for (std::uint32_t j = 0; j < epi.readback_insts; ++j) {
        const std::uint64_t row = row0 + mi * kEpilogueRows + j * epi.readback_rows_per_inst;
        const std::uint64_t col = col0 + pass * epi.pass_cols;
        const std::uint32_t mask = matrix_lane_mask(out, row, col, epi.readback_lanes_per_row, lane_elems);
        if (mask == 0) {
          c.skip();
          continue;
        }
        emit_store(c, epi.reduce_f32 ? Opcode::RED : Opcode::STG, MemSpace::Global,
                   matrix_lanes(out, row, col, epi.readback_lanes_per_row, lane_elems), mask,
                   {reg(readback_reg + j * regs_per_load), out_ptr});
      }
    }
  }
}

}  // namespace warpsim::synth
