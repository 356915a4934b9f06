// Epilogue piece for synthesizers whose warps end holding an mma accumulator tile (GEMM, attention's O, ...):
// the tile is scaled, staged through warp-private shared memory and written to a row-major matrix in full
// 128-byte rows, either stored as 16-bit or 32-bit values (STG) or added as fp32 (RED.ADD.F32, split-K style).
// Stores are 16 bytes per lane, or narrower where the output's row pitch is not 16-byte aligned.
#pragma once

#include <cstdint>

#include "traces/synth/emit.h"

namespace warpsim::synth {

// One warp's accumulator tile in the mma.sync fragment layout: m_blocks x n_blocks blocks of 16x8 fp32, block
// (mi, ni) in the kMmaAccRegs registers from first_reg + (mi*n_blocks + ni)*kMmaAccRegs; in each block lane l
// holds rows l/4 and l/4+8, columns 2*(l%4)+{0,1} (registers e = 0,1 and 2,3).
struct MmaAccumulatorTile {
  std::uint16_t first_reg = 0;
  std::uint32_t m_blocks = 0, n_blocks = 0;
  std::uint16_t reg(std::uint32_t mi, std::uint32_t ni, std::uint32_t e) const {
    return static_cast<std::uint16_t>(first_reg + (mi * n_blocks + ni) * kMmaAccRegs + e);
  }
};

inline constexpr std::uint32_t kEpilogueRows = 16;  // accumulator rows of one pass (one m16 block row)

// A fused epilogue, as cuBLASLt's CUBLASLT_EPILOGUE_{BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS}: D = act(alpha*acc
// + bias[col]). Per pass, each warp loads the bias of its pass columns (in the accumulator layout lane l needs
// columns 2*(l%4)+{0,1} of each n8 block: one LDG of two elements per block, the 8 row groups on the same
// addresses) one pass ahead, widens 16-bit bias to fp32 (one HADD2 per element), and the alpha FMUL becomes an
// FFMA that adds it.
// Then per output element the activation:
//   relu: FMNMX(x, 0), recorded as FMUL (the trace format has no FMNMX opcode; both are one fp32-pipe instruction);
//   gelu: the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) as the minimal sequence
//         FMUL x2 = x*x; FFMA p = c2*x2 + c1; FMUL u = x*p; MUFU.TANH t = tanh(u); FMUL h = 0.5*x; FFMA y = h*t + h
//         (c1 = sqrt(2/pi), c2 = c1*0.044715): 5 fp32 instructions and 1 MUFU. Counted from the formula, not from a
//         cuBLASLt SASS listing (none at hand): a compiler may fold or split differently.
enum class EpilogueActivation { None, Relu, Gelu };
inline constexpr std::uint32_t kReluFp32Insts = 1;
inline constexpr std::uint32_t kGeluFp32Insts = 5;
inline constexpr std::uint32_t kGeluMufuInsts = 1;
struct EpilogueFusion {
  bool bias = false;
  EpilogueActivation activation = EpilogueActivation::None;
  RowMajorMatrix bias_vector;  // 1 x n, C's element type (with bias)
  std::uint16_t bias_reg = 0;  // first of bias_regs() register ids for one pass's bias
  bool any() const { return bias || activation != EpilogueActivation::None; }
};
// Staging layouts, conflict-free for the STS of the pairs and the read-back alike:
//  - passes of 128-byte rows are padded by what the 4 lanes of one accumulator row store (4 x 4 B packed 16-bit
//    pairs, 4 x 8 B fp32 pairs), so the rows one STS phase writes (8 rows of STS.32, 4 of an STS.64 half-warp) start
//    on successive bank groups and cover the 32 banks once, and each read-back phase reads one row. CUTLASS pads
//    its fp32 staging the same 8 elements = 32 B (epilogue Padding = MatrixShape<0, 64 / sizeof_bits * 4>).
//  - narrower passes of 16-bit output are XOR-swizzled in 16-byte chunks (swizzled_chunk_offset), as the
//    swizzled shared-memory layouts of CuTe/flash-attention: no padding keeps both the 8 rows of an STS.32 and the
//    4 rows of an LDS.128 quarter-warp on distinct banks, the swizzle does.
// Shape of the passes of 16 rows x `pass_cols` columns that a warp writes its tile in. Per pass: FMUL (alpha) per
// accumulator; for 16-bit output an FMUL per pair standing for the F2FP pack; STS of the pairs into the staging
// rows (pitch staging_pitch); read back `readback_insts` loads of readback_lanes_per_row lanes per row; IADD3 of
// the output pointer; then one STG of readback_lane_bytes per lane (16-bit or 32-bit output) or RED of 4 bytes
// (fp32 reduction) per load.
struct StagedEpilogue {
  bool reduce_f32 = false;  // RED.ADD.F32 into an fp32 matrix instead of STG of 16-bit values
  std::uint32_t out_elem_bytes = 0;
  std::uint32_t pass_cols = 0;        // gcd(tile width, 128 B of output), at most 32 lanes' worth per row
  std::uint32_t staging_pitch = 0;    // pass_cols * out_elem_bytes, + 4 lanes x the STS width unless swizzled
  bool swizzled = false;              // staging rows XOR-swizzled in 16-byte chunks (narrow 16-bit passes)
  std::uint32_t readback_lane_bytes = 0;  // bytes per lane of the read-back and of the store (16: LDS/STG.128)
  std::uint32_t readback_lanes_per_row = 0, readback_rows_per_inst = 0, readback_insts = 0;
  EpilogueFusion fusion;  // bias and activation (16-bit and 32-bit float output only)

  // 16-bit output (bf16/f16) of a `tile_cols`-wide accumulator tile, stored `store_bytes` (16, 8, 4 or 2) per lane.
  static StagedEpilogue store_16bit(std::uint32_t tile_cols, std::uint32_t store_bytes = kVecBytes);
  // 32-bit output (fp32, int32) of a `tile_cols`-wide accumulator tile, stored `store_bytes` (16, 8, 4) per lane.
  static StagedEpilogue store_32bit(std::uint32_t tile_cols, std::uint32_t store_bytes = kVecBytes);
  // 64-bit output (fp64) of a `tile_cols`-wide accumulator tile, stored `store_bytes` (16, 8) per lane; the alpha
  // scaling is a DMUL.
  static StagedEpilogue store_64bit(std::uint32_t tile_cols, std::uint32_t store_bytes = kVecBytes);
  // fp32 reduction into the output (split-K partial sums) of a `tile_cols`-wide accumulator tile.
  static StagedEpilogue reduce_fp32(std::uint32_t tile_cols);

  std::uint32_t staging_bytes() const { return kEpilogueRows * staging_pitch; }  // per warp
  std::uint32_t regs_per_readback() const { return (readback_lane_bytes + 3) / 4; }
  // Register ids the read-back needs, from emit_staged_epilogue's readback_reg.
  std::uint32_t readback_regs() const { return readback_insts * regs_per_readback(); }
  // Register ids of the bias: two elements per n8 block of a pass, one register each once widened, for two passes
  // (the next pass's bias loads while this one's is used).
  std::uint32_t bias_regs() const { return fusion.bias ? 2 * 2 * (pass_cols / kMmaSyncShape.n) : 0; }
};

// The epilogue of one warp: `acc` goes to `out` at (row0, col0) through the staging rows at staging_base
// (private to the warp: no CTA barrier between passes). Lanes outside `out` are masked; a store with no lane left
// is not emitted (its code slot is kept). Registers: readback_reg.. receive the loads (readback_regs() of them),
// out_ptr is the output pointer advanced per pass.
void emit_staged_epilogue(InstChunk& c, const StagedEpilogue& epi, const MmaAccumulatorTile& acc,
                          const RowMajorMatrix& out, std::uint64_t row0, std::uint64_t col0,
                          std::uint32_t staging_base, std::uint16_t readback_reg, std::uint16_t out_ptr);

}  // namespace warpsim::synth
