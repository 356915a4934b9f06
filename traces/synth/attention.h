// Attention synthesizers (`warpsim synth attention`): the problem and its keys, the tensors' global layout, and
// the warp-level pieces the FlashAttention-2 kernels share (mma.sync over shared-memory operands with ldmatrix,
// the online-softmax row statistics). Kernels: attention_fa2.cpp (forward, backward), attention_decode.cpp
// (split-KV decoding over a paged cache). See README.md here, "Attention".
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/trace/source.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/registry.h"

namespace warpsim {
class Config;
}

namespace warpsim::synth::attn {

struct AttnProblem {
  std::uint64_t batch = 1, heads = 1, kv_heads = 1, seqlen_q = 1, seqlen_kv = 1, head_dim = 64;
  bool causal = false;
  DType dtype = DType::F16;
  std::string dtype_name = "fp16";
  std::uint32_t elem_bytes = 2;
  // The K/V (cache) element type: dtype, or fp8 (e4m3, one byte, with a per-tensor scale folded into the softmax
  // scale and O), which the decode and fa2 forward kernels dequantize to dtype through shared memory before their
  // MMAs (attention_fwd.h, FwdPlan::kv8_off) and the fa3 forward multiplies in fp8 (fp8_qkv below).
  std::string kv_dtype_name = "fp16";
  std::uint32_t kv_elem_bytes = 2;
  bool kv_fp8() const { return kv_elem_bytes == 1; }
  // FlashAttention-3's fp8 forward (variant fa3 with an fp8 K/V) takes Q in fp8 too (one type for q, k and v, as
  // its warpgroup MMAs need; O stays in dtype): vLLM quantizes the query before it.
  bool fp8_qkv() const { return kv_fp8() && variant == "fa3"; }
  std::uint32_t q_elem_bytes() const { return fp8_qkv() ? 1 : elem_bytes; }
  std::string types_tag() const { return kv_fp8() ? dtype_name + "_kvfp8" : dtype_name; }  // in kernel names
  std::string variant = "fa2";    // fa2 | fa3 | decode
  std::string direction = "fwd";  // fwd | bwd | fwd_bwd
  std::uint64_t page_size = 256;  // decode: tokens per KV-cache page

  std::uint64_t group() const { return heads / kv_heads; }  // query heads per KV head (GQA)
  // FLOPs as the FlashAttention papers and flash-attention's benchmarks/benchmark_flash_attention.py count them:
  // forward 4 * batch * heads * seqlen_q * seqlen_kv * head_dim (two matmuls of 2*s*s*d), halved when causal;
  // backward 2.5 x forward (five matmuls instead of two); fwd_bwd 3.5 x forward.
  double forward_flops() const;
  double flops() const;  // of `direction`
  // Bytes of K and V read once (the decode kernel's compulsory traffic): 2 * batch * seqlen_kv * kv_heads * d * the
  // K/V element size.
  double kv_bytes() const;
};

// Reads and checks the keys (InputError naming the key and what is expected).
AttnProblem attention_problem(const SynthArgs& args);

// ---- global tensors ---------------------------------------------------------------------------------------------

// A (batch, seqlen, heads, head_dim) tensor, as flash-attention takes q, k, v, o (BSHD, head_dim contiguous).
struct BshdTensor {
  std::uint64_t base = 0, batch = 1, seqlen = 0, heads = 0, head_dim = 0;
  std::uint32_t elem_bytes = 2;
  std::uint64_t bytes() const { return batch * seqlen * heads * head_dim * elem_bytes; }
  // The rows (tokens) of one batch entry as a matrix of heads * head_dim columns; head h is columns h*head_dim...
  RowMajorMatrix of_batch(std::uint64_t b) const {
    return RowMajorMatrix{base + b * seqlen * heads * head_dim * elem_bytes, seqlen, heads * head_dim, elem_bytes};
  }
};

// Arrays one after another from the operators' base address, 1 MiB aligned (as the GEMM's and the operators').
class AttnArrays {
 public:
  std::uint64_t add(std::uint64_t bytes);

 private:
  std::uint64_t next_ = 0x7f0000000000;
};

// ---- registers --------------------------------------------------------------------------------------------------

// Predicate ids of the attention kernels (above every data register id, below RZ = 255).
inline constexpr std::uint16_t kPredLoop = 252;
inline constexpr std::uint16_t kPredMask = 253;
inline constexpr std::uint16_t kMaxDataReg = 252;  // data register ids stay below this

// The fragment registers of the warp GEMMs, handed out round-robin over a fixed region: with room for two k-steps'
// fragments the next step's ldmatrix overlaps this step's MMAs (double buffering); with less, ids repeat sooner, as
// a compiler's allocation under pressure does.
class FragmentRing {
 public:
  FragmentRing(std::uint16_t first, std::uint32_t regs) : first_(first), regs_(regs) {}
  std::uint16_t take(std::uint32_t count) {
    if (next_ + count > regs_) next_ = 0;
    const std::uint16_t r = static_cast<std::uint16_t>(first_ + next_);
    next_ += count;
    return r;
  }

 private:
  std::uint16_t first_;
  std::uint32_t regs_;
  std::uint32_t next_ = 0;
};

// ---- warp GEMM over shared-memory operands ------------------------------------------------------------------------

// An operand tile in shared memory: `chunks_per_row` 16-byte chunks per row, XOR-swizzled (swizzled_chunk_offset),
// from `offset`. `k_major`: stored with the GEMM's K dimension along the rows (V as the B of P*V, P^T, dS^T, Q as the
// B of dS^T*Q): read with ldmatrix.trans, 16 K rows x 2 chunks per ldmatrix.x4.
struct SmemOperand {
  std::uint32_t offset = 0;
  std::uint32_t chunks_per_row = 0;
  bool k_major = false;
};

// One warp's share of a CTA GEMM C[M,N] += A[M,K] * B[K,N] with mma.sync m16n8k16: m_blocks blocks of 16 rows
// (the block mi at row m0 + mi*m_stride), n_pairs pairs of 8-column blocks (pair p at column n0 + p*n_stride),
// k_steps steps of 16. A comes from shared memory (an ldmatrix.x4 per m block and k-step) or, `a_in_regs`, from
// registers (P of the forward pass); B from shared memory (an ldmatrix.x4 per pair and k-step). The ldmatrix
// lane offsets are computed once here and live as long as the plan that holds this.
struct WarpGemm {
  std::uint32_t m_blocks = 0, n_pairs = 0, k_steps = 0;
  bool a_in_regs = false;
  std::vector<std::array<std::int32_t, kWarpSize>> a, b;  // a[mi * k_steps + ks], b[p * k_steps + ks]

  void build(const SmemOperand& a_op, std::uint32_t m0, std::uint32_t m_stride, const SmemOperand& b_op,
             std::uint32_t n0, std::uint32_t n_stride);
  std::uint32_t n_blocks() const { return 2 * n_pairs; }
  std::uint32_t mmas() const { return m_blocks * n_blocks() * k_steps; }
  std::uint32_t ldmatrix_count() const { return (a_in_regs ? 0 : m_blocks * k_steps) + n_pairs * k_steps; }
  std::uint32_t acc_regs() const { return m_blocks * n_blocks() * kMmaAccRegs; }
  // First register of accumulator block (mi, ni) of an accumulator tile from `acc`.
  std::uint16_t acc_block(std::uint16_t acc, std::uint32_t mi, std::uint32_t ni) const {
    return static_cast<std::uint16_t>(acc + (mi * n_blocks() + ni) * kMmaAccRegs);
  }
};

// The A operand of an `a_in_regs` warp GEMM: the fragment of (m block mi, k-step ks) starts at at(mi, ks).
struct ARegs {
  std::uint16_t first = 0;
  std::uint32_t mi_stride = 0, ks_stride = 0;  // register distance between m blocks, k-steps
  std::uint16_t at(std::uint32_t mi, std::uint32_t ks) const {
    return static_cast<std::uint16_t>(first + mi * mi_stride + ks * ks_stride);
  }
};
// Emits the warp GEMM: the first k-step's ldmatrix loads, then for each k-step the next step's loads (issued
// before this step's MMAs, as cute's gemm does) and m_blocks x n_blocks HMMA into `acc` (row by row).
// `before_step(ks)`, when given, emits what the step's MMAs wait for (FA2's P, a k-step's columns at a time).
void emit_warp_gemm(InstChunk& c, const WarpGemm& g, DType dtype, std::uint64_t smem_base, std::uint16_t acc,
                    FragmentRing& frags, std::uint16_t smem_addr, const ARegs& a_regs = {},
                    const std::function<void(std::uint32_t)>& before_step = {});

// Zeroes an accumulator tile (the MOVs of cute's clear(acc)).
inline void emit_clear(InstChunk& c, std::uint16_t first, std::uint32_t regs) {
  for (std::uint32_t i = 0; i < regs; ++i) emit_alu(c, Opcode::MOV, reg(first + i), {});
}

// ---- online softmax (flash::Softmax) ------------------------------------------------------------------------------

// The registers of one warp's rows of a score tile in mma accumulator layout (16x8 blocks, 4 registers each; a lane
// holds 2 rows per m block): S from `s` (m_blocks x n_blocks blocks), per-row running max, sum and a scratch register
// (2 per m block each). The FA2 warp tile (mma.sync) and an FA3 warpgroup slab (wgmma m64: 16 rows per warp) share it.
struct SoftmaxRows {
  std::uint16_t s = 0, max = 0, sum = 0, scratch = 0;
  std::uint32_t m_blocks = 1, n_blocks = 0;
  std::uint32_t rows() const { return 2 * m_blocks; }
  std::uint32_t s_regs() const { return m_blocks * n_blocks * kMmaAccRegs; }
  std::uint16_t s_reg(std::uint32_t mi, std::uint32_t ni, std::uint32_t e) const {
    return reg(s + (mi * n_blocks + ni) * kMmaAccRegs + e);
  }
};
// Row max over the thread's columns (FMNMX, emitted as FADD: same fp32 pipe), then over the row's 4 lanes (SHFL);
// unless `first`, the rescale factor exp2((max_old - max_new) * scale) into `scratch` and sum *= factor; then
// P = exp2(S * scale - max_scaled) in place (FFMA + MUFU.EX2) and the row sums (FADD).
void emit_online_softmax(InstChunk& c, const SoftmaxRows& r, bool first);
// Its two halves: the row statistics (max, factor, sum *= factor, the scaled max), and P and the row sums for the
// S blocks [ni_begin, ni_end) of every m block.
void emit_softmax_statistics(InstChunk& c, const SoftmaxRows& r, bool first);
void emit_softmax_exp(InstChunk& c, const SoftmaxRows& r, std::uint32_t ni_begin, std::uint32_t ni_end);
// acc *= the rows' factors (FMUL per accumulator of an m_blocks x acc_blocks_n tile from `acc`); code slots kept
// but nothing emitted when `first` (no factor yet).
void emit_rescale_rows(InstChunk& c, const SoftmaxRows& r, std::uint16_t acc, std::uint32_t acc_blocks_n, bool first);
// fp32 pairs from `src` (`regs` of them) to packed 16-bit: one F2FP per pair (emitted as FMUL) into
// dst + (pair index) * dst_step (dst_step 2 with dst == src: in place, as FA2's P; 1: a separate packed tile).
void emit_pack_16bit(InstChunk& c, std::uint16_t src, std::uint32_t regs, std::uint16_t dst, std::uint32_t dst_step);

// The fp32 logsumexp of a 16-row m block at `row` of the CTA's rows: the lanes holding column 0 of each row (lane % 4
// == 0) store rows row..row+7 from lse_reg and row+8..row+15 from lse_reg+1 into `lse` (row 0's value, rows
// contiguous); rows at or past `rows` are masked (a store with no lane left keeps its code slot). `ptr`: the address.
void emit_lse_store(InstChunk& c, std::uint64_t lse, std::uint64_t row, std::uint64_t rows, std::uint16_t lse_reg,
                    std::uint16_t ptr);

// Async copies (cp.async) of a `copy`-split tile of `rows` rows x head_dim starting at token `row0` of a BSHD
// tensor's batch entry (`m`) and column `col0` (head * head_dim): the lanes of this warp's copies; tokens past the
// end are masked (a copy with no lane left keeps its code slot).
void emit_tile_copy(InstChunk& c, const CoalescedTileCopy& copy, const RowMajorMatrix& m, std::uint64_t row0,
                    std::uint64_t col0, std::uint32_t warp, std::uint16_t gptr, std::uint16_t sptr);

// Registers per thread of a kernel whose streams use `used` register ids: rounded up to 8 (ptxas's allocation
// unit), at most the config's sm.max_registers_per_thread (flash-attention's kernels run at the 255 limit).
std::uint32_t kernel_registers(std::uint32_t used, const Config& config);

// The config's sm.shared_memory_per_cta, which the kernels check their tiles against.
std::uint64_t shared_memory_per_cta(const Config& config);

// ---- the kernels --------------------------------------------------------------------------------------------------

// FlashAttention-2 for sm_80 (runs as is on sm_90): forward, and the backward's three kernels.
std::vector<GeneratedKernelSpec> fa2_forward_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays);
std::vector<GeneratedKernelSpec> fa2_backward_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays);
// FlashAttention-3 forward for sm_90 (TMA, mbarriers, warpgroup MMA, warp specialisation): attention_fa3.cpp.
// fa3_supported: the GPU config is sm_90 (or sm_100, which runs the sm_90 kernels) with a TMA unit.
bool fa3_supported(const Config& config);
std::vector<GeneratedKernelSpec> fa3_forward_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays);
// FlashDecoding: split-KV over a paged cache, then the combine kernel.
std::vector<GeneratedKernelSpec> decode_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays);

// flash-attention's num_splits_heuristic (csrc/flash_attn/flash_api.cpp): the number of KV splits that fills
// `slots` CTA slots best, given `tiles` (batch x heads x m-blocks) CTAs without splitting and `n_blocks` KV blocks.
std::uint32_t num_splits_heuristic(std::uint64_t tiles, std::uint64_t slots, std::uint32_t n_blocks,
                                   std::uint32_t max_splits);

}  // namespace warpsim::synth::attn
