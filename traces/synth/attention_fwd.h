// The FlashAttention-2 forward main loop for sm_80 (flash_fwd_kernel.h, compute_attn_1rowblock), shared by the
// fa2 forward kernel and the decode variant's split-KV kernel (which differ in what a CTA works on and where K/V
// and the output live): plan and warp generator.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

#include "traces/synth/attention.h"
#include "traces/synth/epilogue.h"

namespace warpsim::synth::attn {

// What one CTA computes: a block of query rows against KV blocks [n_begin, n_end) of one (batch, KV head).
struct FwdCtaWork {
  RowMajorMatrix q;            // the matrix the Q rows come from (rows past q.rows are masked)
  std::uint64_t q_row0 = 0, q_col0 = 0;
  RowMajorMatrix k, v;         // contiguous K/V (paged: the cache, rows = pages * page_size)
  std::uint64_t kv_col0 = 0;   // kv head * head_dim
  std::uint64_t kv_batch = 0;  // paged: the sequence whose page table is read
  std::uint64_t kv_len = 0;    // keys of the sequence
  std::uint32_t n_begin = 0, n_end = 0;
  // Largest key index row 0 of the block may see (causal, bottom-right aligned); max() when not causal. Row r may
  // see causal_limit + r.
  std::uint64_t causal_limit = std::numeric_limits<std::uint64_t>::max();
  RowMajorMatrix o;            // output rows (16-bit O, or fp32 partial O of a split)
  std::uint64_t o_row0 = 0, o_col0 = 0;
  std::uint64_t lse = 0;       // fp32 logsumexp of row 0 (rows contiguous)
  std::uint64_t lse_rows = 0;  // rows with a logsumexp (the rest masked)
};

// Q, K, V, O (BSHD) and the fp32 logsumexp (batch, heads, seqlen_q) of a dense (unpaged) attention problem, laid
// out in that order from `arrays`.
struct DenseAttnTensors {
  BshdTensor q, k, v, o;
  std::uint64_t lse = 0;
};
DenseAttnTensors dense_attention_tensors(const AttnProblem& p, AttnArrays& arrays);
// The work of the CTA on query block m (of bm rows) of batch entry b and query head h, with KV blocks of bn keys:
// every block (causal: those at or left of the block's last row's diagonal, bottom-right aligned).
FwdCtaWork dense_forward_work(const DenseAttnTensors& t, const AttnProblem& p, std::uint32_t bm, std::uint32_t bn,
                              std::uint64_t m, std::uint64_t b, std::uint64_t h);

struct FwdPlan {
  AttnProblem p;
  std::uint32_t block_m = 128, block_n = 64, warps = 4, mw = 2;  // mw: m16 blocks per warp (rows interleaved)
  std::uint32_t q_off = 0, k_off = 0, v_off = 0, smem_bytes = 0;
  // fp8 K/V (p.kv_fp8()): the fp8 tiles the copies land in (K at k8_off, V at v8_off), converted by the CTA into
  // the 16-bit tiles at k_off and v_off that the MMAs read.
  std::uint32_t k8_off = 0, v8_off = 0;
  bool fp8_convert_instruction = false;  // sm_89+: cvt e4m3x2 -> f16x2 in one instruction (else a software sequence)
  CoalescedTileCopy q_copy, kv_copy;
  std::vector<WarpGemm> gemm_s, gemm_o;  // per warp: S = Q K^T, O += P V
  StagedEpilogue epi;
  bool o_fp32 = false;  // the output is an fp32 partial (split-KV), stored from the accumulators
  // flash-attention's first KV blocks (n_masking_steps: 1 without a causal mask, else the blocks a query block's
  // diagonal can cross) run from a copy of the loop body of their own, before the main loop's.
  std::uint32_t masking_steps = 1;
  // paged KV
  bool paged = false;
  std::uint64_t page_table = 0, page_size = 0, pages_per_seq = 0, batch = 1;
  // registers
  std::uint16_t r_s = 0, r_o = 0, r_max = 0, r_sum = 0, r_scratch = 0, r_tid = 0, r_gq = 0, r_gk = 0, r_gv = 0,
                r_sw = 0, r_sr = 0, r_optr = 0, r_cnt = 0, r_page = 0, r_frag = 0;
  std::uint32_t frag_regs = 0, registers = 0;
  std::function<FwdCtaWork(std::uint64_t cta)> work;

  std::uint32_t s_blocks_n() const { return block_n / 8; }
  std::uint32_t o_blocks_n() const { return static_cast<std::uint32_t>(p.head_dim / 8); }
  std::uint32_t s_regs() const { return mw * s_blocks_n() * kMmaAccRegs; }
  std::uint32_t o_regs() const { return mw * o_blocks_n() * kMmaAccRegs; }
};

// Fills the tiling-independent parts of `plan` from block_m, block_n, warps and the problem (shared-memory layout,
// copies, warp GEMM tables, registers) and checks the tile against the config; the caller sets `work`, paging and
// o_fp32 first. `kernel` names the kernel in messages.
void finish_forward_plan(FwdPlan& plan, const Config& config, const std::string& kernel);

// The kernel spec (info and warp factory) of a finished plan; `grid`, `name`, `flops` given by the caller.
GeneratedKernelSpec forward_kernel_spec(std::shared_ptr<const FwdPlan> plan, Dim3 grid, std::string name,
                                        std::uint64_t flops, const Config& config);

}  // namespace warpsim::synth::attn
