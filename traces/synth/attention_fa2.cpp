// FlashAttention-2 for sm_80 (Dao-AILab/flash-attention csrc/flash_attn/src: flash_fwd_kernel.h,
// flash_bwd_kernel.h, kernel_traits.h, flash_fwd_launch_template.h, flash_bwd_launch_template.h): the forward kernel
// and the backward's three kernels (dot(dO, O) preprocessing, the main dK/dV/dQ kernel, the dQ conversion).
// See README.md here, "Attention".
#include <algorithm>
#include <array>
#include <functional>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/types.h"
#include "sim/core/error.h"
#include "sim/trace/retarget.h"
#include "traces/synth/attention.h"
#include "traces/synth/attention_fwd.h"
#include "traces/synth/row_reduction.h"
#include "traces/synth/tile_pipeline.h"

namespace warpsim::synth::attn {
namespace {


// ---- forward warp -----------------------------------------------------------------------------------------------
//
// prologue: setup; cp.async Q tile and K of the last KV block; commit
// per KV block n (from the last down to the first, as flash-attention walks them):
//   wait all; BAR; cp.async V(n); commit
//   S = Q K^T (ldmatrix Q and K per k-step, HMMA); causal/ragged mask on the blocks that need it
//   wait all; BAR; cp.async K(n-1); commit
//   online softmax: row max (thread, then the 4 lanes of a row: SHFL), rescale factor exp2 and O *= factor (not on
//   the first block), P = exp2(S*scale - max*scale), row sums; P packed to 16 bits in registers
//   O += P V (P from registers, V by ldmatrix.trans)
// epilogue: row sums across the quad, 1/l and logsumexp; O through shared memory to global; LSE
class ForwardWarp final : public TilePipelineWarp<ForwardWarp> {
 public:
  ForwardWarp(std::shared_ptr<const FwdPlan> plan, FwdCtaWork work, std::uint32_t warp)
      : TilePipelineWarp(PipelineTiles{0, work.n_end - work.n_begin, 2}),
        plan_(std::move(plan)),
        w_(std::move(work)),
        warp_(warp),
        frags_(plan_->r_frag, plan_->frag_regs) {
    set_peeled_iterations(plan_->masking_steps);
  }

  void emit_prologue(InstChunk& c) {
    const FwdPlan& P = *plan_;
    emit_alu(c, Opcode::S2R, P.r_tid, {});
    emit_alu(c, Opcode::S2R, P.r_cnt, {});
    for (std::uint16_t r : {P.r_gq, P.r_gk, P.r_gv, P.r_sw, P.r_sr, P.r_optr}) emit_alu(c, Opcode::IMAD, r, {P.r_tid, P.r_cnt});
    emit_tile_copy(c, P.q_copy, w_.q, w_.q_row0, w_.q_col0, warp_, P.r_gq, P.r_sw);
    if (tiles().iterations() > 0) emit_kv_copy(c, /*value=*/false, w_.n_end - 1);
    else c.skip(kv_copy_slots());
    emit_async_commit(c);
  }

  void emit_iteration(InstChunk& c, std::uint32_t i) {
    const FwdPlan& P = *plan_;
    const std::uint32_t n = w_.n_end - 1 - i;
    const bool first = i == 0;
    emit_async_wait(c, 0);
    emit_barrier(c);
    emit_dequantize(c, /*value=*/false);
    emit_kv_copy(c, /*value=*/true, n);
    emit_async_commit(c);
    emit_warp_gemm(c, P.gemm_s[warp_], P.p.dtype, 0, P.r_s, frags_, P.r_sr);
    const std::uint32_t s_elems = P.s_regs();
    if (masked(n)) {
      for (std::uint32_t e = 0; e < s_elems; ++e) {
        emit_alu(c, Opcode::ISETP, kPredMask, {P.r_tid});                // column vs the row's limit
        emit_alu(c, Opcode::FSETP, reg(P.r_s + e), {reg(P.r_s + e)});   // select -inf (FSEL)
      }
    } else {
      c.skip(2 * s_elems);
    }
    emit_async_wait(c, 0);
    emit_barrier(c);
    emit_dequantize(c, /*value=*/true);
    if (n > w_.n_begin) {
      emit_kv_copy(c, /*value=*/false, n - 1);
      emit_async_commit(c);
    } else {
      c.skip(kv_copy_slots() + 1);
    }
    // flash::Softmax::softmax_rescale_o, then O += P V with P from registers. The compiler schedules the two as one
    // straight-line block, so P's exponentials are not all issued before the first MMA: a k-step's MMAs wait only
    // for their 16 columns of P (S blocks (mi, 2ks) and (mi, 2ks+1), packed in place), and the SFU's exponentials
    // of the next columns overlap the tensor pipe's MMAs of these. Seen in the sm_90 SASS of PyTorch's flash_fwd_kernel:
    // per iteration a hdim-64 warp issues 113 of its 128 P V HMMAs among the 132 MUFU.EX2, hdim 128 96 of 128
    // (validation/data/h100_sxm_2026-11-24/README.md).
    const SoftmaxRows rows{P.r_s, P.r_max, P.r_sum, P.r_scratch, P.mw, P.s_blocks_n()};
    emit_softmax_statistics(c, rows, first);
    emit_rescale_rows(c, rows, P.r_o, P.o_blocks_n(), first);
    const ARegs p_regs{P.r_s, P.s_blocks_n() * kMmaAccRegs, 2 * kMmaAccRegs};
    emit_warp_gemm(c, P.gemm_o[warp_], P.p.dtype, 0, P.r_o, frags_, P.r_sr, p_regs, [&](std::uint32_t ks) {
      emit_softmax_exp(c, rows, 2 * ks, 2 * ks + 2);
      for (std::uint32_t mi = 0; mi < P.mw; ++mi) {
        const std::uint16_t first_reg = rows.s_reg(mi, 2 * ks, 0);
        emit_pack_16bit(c, first_reg, 2 * kMmaAccRegs, first_reg, 2);
      }
    });
    emit_loop_tail(c, P.r_cnt, kPredLoop);
  }

  void emit_epilogue(InstChunk& c) {
    const FwdPlan& P = *plan_;
    const std::uint32_t rows = 2 * P.mw;
    if (tiles().iterations() == 0) emit_clear(c, P.r_o, P.o_regs());  // no key to attend: O = 0
    emit_warp_allreduce(c, WarpReduction{P.r_sum, P.r_scratch, rows, Opcode::FADD, rows}, 4);
    for (std::uint32_t r = 0; r < rows; ++r) {
      emit_alu(c, Opcode::MUFU, reg(P.r_sum + r), {reg(P.r_sum + r)});  // 1 / l
      emit_alu(c, Opcode::MUFU, reg(P.r_scratch + r), {reg(P.r_sum + r)});  // log2(l)
      emit_alu(c, Opcode::FFMA, reg(P.r_max + r), {reg(P.r_max + r), reg(P.r_scratch + r)});  // lse
    }
    emit_barrier(c);  // every warp is done with the Q and V tiles: the output is staged over Q
    for (std::uint32_t mi = 0; mi < P.mw; ++mi) {
      const std::uint64_t row = w_.o_row0 + mi_row(mi);
      const MmaAccumulatorTile tile{static_cast<std::uint16_t>(P.r_o + mi * P.o_blocks_n() * kMmaAccRegs), 1,
                                    P.o_blocks_n()};
      if (P.o_fp32) emit_fp32_store(c, tile, row);
      else emit_staged_epilogue(c, P.epi, tile, w_.o, row, w_.o_col0, P.q_off + warp_ * P.epi.staging_bytes(), P.r_s,
                                P.r_optr);
    }
    for (std::uint32_t mi = 0; mi < P.mw; ++mi)
      emit_lse_store(c, w_.lse, mi_row(mi), w_.lse_rows, reg(P.r_max + 2 * mi), P.r_optr);
    c.emit(Opcode::EXIT);
  }

 private:
  // First row (in the CTA's block) of this warp's m block mi: warps tile the rows in 16-row slices.
  std::uint64_t mi_row(std::uint32_t mi) const {
    return std::uint64_t{warp_} * 16 + std::uint64_t{mi} * 16 * plan_->warps;
  }
  bool masked(std::uint32_t n) const {
    const std::uint64_t last_key = std::uint64_t{n + 1} * plan_->block_n - 1;
    return last_key >= w_.kv_len || last_key > w_.causal_limit;
  }
  std::uint32_t kv_copy_slots() const { return plan_->kv_copy.copies_per_thread * (plan_->paged ? 3 : 1) + 1; }

  // The cp.async of K or V block n (and the pointer advance). Paged: each copy first reads its page's entry in the
  // sequence's page table and computes the address from it (LDG + IMAD).
  void emit_kv_copy(InstChunk& c, bool value, std::uint32_t n) {
    const FwdPlan& P = *plan_;
    const std::uint16_t gptr = value ? P.r_gv : P.r_gk;
    const RowMajorMatrix& m = value ? w_.v : w_.k;
    if (!P.paged) {
      emit_tile_copy(c, P.kv_copy, m, std::uint64_t{n} * P.block_n, w_.kv_col0, warp_, gptr, P.r_sw);
      emit_alu(c, Opcode::IADD3, gptr, {gptr});
      return;
    }
    const std::uint32_t chunk_elems = kVecBytes / P.p.kv_elem_bytes;
    for (std::uint32_t j = 0; j < P.kv_copy.copies_per_thread; ++j) {
      const CoalescedTileCopy::Chunk at = P.kv_copy.first_chunk(j, warp_);
      const std::uint64_t token = std::uint64_t{n} * P.block_n + at.row;
      if (token >= w_.kv_len) {
        c.skip(3);
        continue;
      }
      const std::uint64_t page = token / P.page_size;
      // Pages of one sequence lie `batch` pages apart (sequences allocated together interleave in the cache).
      const std::uint64_t physical = page * P.batch + w_.kv_batch;
      WarpInst& entry = emit_load(c, Opcode::LDG, MemSpace::Global,
                                  LaneRows{P.page_table + (w_.kv_batch * P.pages_per_seq + page) * 4, 4, kWarpSize, 0},
                                  kFullMask, P.r_page, 1, {gptr});
      entry.stride = 0;  // every lane reads the same entry
      emit_alu(c, Opcode::IMAD, gptr, {P.r_page});
      const std::uint64_t row = physical * P.page_size + token % P.page_size;
      const std::uint64_t col = w_.kv_col0 + std::uint64_t{at.chunk} * chunk_elems;
      const std::uint32_t mask = first_lanes_mask(
          std::min<std::uint64_t>(kWarpSize, (w_.kv_len - token) * P.kv_copy.lanes_per_row));
      emit_async_copy(c, matrix_lanes(m, row, col, P.kv_copy.lanes_per_row, chunk_elems), mask, gptr, P.r_sw);
    }
    emit_alu(c, Opcode::IADD3, gptr, {gptr});
  }

  // fp8 K/V: the CTA converts the landed fp8 tile into the 16-bit tile the MMAs read, each element once, then
  // waits for every warp (BAR) before any reads it. Per 16-byte chunk of fp8 an LDS.128 (a thread's chunks all
  // loaded first, as the unrolled loop is scheduled), per four elements a PRMT (emitted as LOP3) splitting them
  // into pairs, per pair an F2FP e4m3x2 -> f16x2 (HADD2; sm_80, without that instruction: LOP3 and SHF placing the
  // bits, then the HADD2 standing for the exponent-bias HMUL2) and, for bf16, f16x2 -> two fp32 (2 HADD2) -> bf16x2 (F2FP,
  // FMUL), each step over all of a chunk's registers before the next; then two STS.128. The per-tensor scale folds
  // into the softmax and output scales. The fp8 tile is free for the next copy once converted, before the BAR.
  void emit_dequantize(InstChunk& c, bool value) {
    const FwdPlan& P = *plan_;
    if (!P.p.kv_fp8()) return;
    const std::uint32_t threads = P.warps * kWarpSize;
    const std::uint64_t chunks = std::uint64_t{P.block_n} * P.p.head_dim / kVecBytes;  // of the fp8 tile
    const std::uint64_t from = value ? P.v8_off : P.k8_off, to = value ? P.v_off : P.k_off;
    const std::uint32_t steps_per_pair = P.p.dtype == DType::BF16 ? 4 : 1;
    std::vector<std::uint16_t> raw;
    for (std::uint64_t first = std::uint64_t{warp_} * kWarpSize; first < chunks; first += threads) {
      raw.push_back(frags_.take(4));
      emit_load(c, Opcode::LDS, MemSpace::Shared, LaneRows{from + first * kVecBytes, kVecBytes, kWarpSize, kVecBytes},
                kFullMask, raw.back(), 4, {P.r_sr});
    }
    std::uint64_t first = std::uint64_t{warp_} * kWarpSize;
    for (const std::uint16_t in : raw) {
      const std::uint16_t out = frags_.take(8);
      for (std::uint32_t r = 0; r < 4; ++r) emit_alu(c, Opcode::LOP3, reg(out + 2 * r), {reg(in + r)});
      if (!P.fp8_convert_instruction)  // sm_80: the pair's sign/exponent/mantissa bits moved into f16 places
        for (const Opcode op : {Opcode::LOP3, Opcode::SHF})
          for (std::uint32_t pair = 0; pair < 8; ++pair)
            emit_alu(c, op, reg(out + pair), {reg(out + pair / 2 * 2)});
      for (std::uint32_t step = 0; step < steps_per_pair; ++step)
        for (std::uint32_t pair = 0; pair < 8; ++pair) {
          const std::uint16_t v = reg(out + pair);
          emit_alu(c, step == 3 ? Opcode::FMUL : Opcode::HADD2, v, {step == 0 ? reg(out + pair / 2 * 2) : v});
        }
      for (std::uint32_t half = 0; half < 2; ++half)
        emit_store(c, Opcode::STS, MemSpace::Shared,
                   LaneRows{to + (2 * first + half * kWarpSize) * kVecBytes, kVecBytes, kWarpSize, kVecBytes}, kFullMask,
                   {reg(out + 4 * half), P.r_sr});
      first += threads;
    }
    emit_barrier(c);
  }

  // fp32 partial output (split-KV): each lane stores its pairs of the 16x8 blocks directly (STG.64).
  void emit_fp32_store(InstChunk& c, const MmaAccumulatorTile& tile, std::uint64_t row) {
    const FwdPlan& P = *plan_;
    for (std::uint32_t ni = 0; ni < tile.n_blocks; ++ni)
      for (std::uint32_t half = 0; half < 2; ++half) {
        const std::uint64_t r = row + half * 8;
        const std::uint64_t col = w_.o_col0 + ni * 8;
        std::uint32_t mask = 0;
        for (std::uint32_t l = 0; l < kWarpSize; ++l)
          if (r + l / 4 < w_.o.rows) mask |= 1u << l;
        if (mask == 0) {
          c.skip();
          continue;
        }
        emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{w_.o.address(r, col), 8, 4, w_.o.pitch()}, mask,
                   {tile.reg(0, ni, 2 * half), P.r_optr});
      }
  }

  std::shared_ptr<const FwdPlan> plan_;
  FwdCtaWork w_;
  std::uint32_t warp_;
  FragmentRing frags_;
};

}  // namespace

void finish_forward_plan(FwdPlan& P, const Config& config, const std::string& kernel) {
  const std::uint32_t d = static_cast<std::uint32_t>(P.p.head_dim);
  const std::uint32_t row_bytes = d * P.p.elem_bytes, chunks = row_bytes / kVecBytes;
  const std::uint32_t kv_row_bytes = d * P.p.kv_elem_bytes;
  const std::uint32_t threads = P.warps * kWarpSize;
  P.mw = P.block_m / (16 * P.warps);
  // flash_fwd_kernel.h: n_masking_steps = 1 without a causal mask, else ceil(kBlockM / kBlockN), one more when
  // the sequence lengths are not multiples of the tile (!Is_even_MN).
  const bool even_mn = P.p.seqlen_q % P.block_m == 0 && P.p.seqlen_kv % P.block_n == 0;
  P.masking_steps = !P.p.causal ? 1 : ceil_div(P.block_m, P.block_n) + (even_mn ? 0 : 1);
  WARPSIM_ASSERT(P.mw >= 1 && P.mw * 16 * P.warps == P.block_m, "forward tile rows must split into 16-row slices");
  P.q_off = 0;
  P.k_off = P.block_m * row_bytes;
  P.v_off = P.k_off + P.block_n * row_bytes;
  P.smem_bytes = P.v_off + P.block_n * row_bytes;
  if (P.p.kv_fp8()) {  // the fp8 tiles the copies land in, converted into the 16-bit K and V tiles above
    WARPSIM_ASSERT(P.block_n * kv_row_bytes % (threads * kVecBytes) == 0, "fp8 tile chunks must split over the CTA's threads");
    P.fp8_convert_instruction = sm_version(config.section("gpu").str("arch")) >= 89;
    P.k8_off = P.smem_bytes;
    P.v8_off = P.k8_off + P.block_n * kv_row_bytes;
    P.smem_bytes = P.v8_off + P.block_n * kv_row_bytes;
  }
  const std::uint64_t limit = shared_memory_per_cta(config);
  if (P.smem_bytes > limit)
    throw InputError(kernel + ": the " + std::to_string(P.block_m) + "x" + std::to_string(P.block_n) + " tile of head_dim " +
                     std::to_string(d) + " needs " + std::to_string(P.smem_bytes) +
                     " bytes of shared memory per CTA; the GPU config's sm.shared_memory_per_cta is " +
                     std::to_string(limit));
  P.q_copy = CoalescedTileCopy(P.block_m, row_bytes, threads);
  P.kv_copy = CoalescedTileCopy(P.block_n, kv_row_bytes, threads);
  P.epi = StagedEpilogue::store_16bit(d);
  P.gemm_s.assign(P.warps, WarpGemm{});
  P.gemm_o.assign(P.warps, WarpGemm{});
  for (std::uint32_t w = 0; w < P.warps; ++w) {
    WarpGemm& s = P.gemm_s[w];
    s.m_blocks = P.mw;
    s.n_pairs = P.block_n / 16;
    s.k_steps = d / 16;
    s.build(SmemOperand{P.q_off, chunks, false}, w * 16, 16 * P.warps, SmemOperand{P.k_off, chunks, false}, 0, 16);
    WarpGemm& o = P.gemm_o[w];
    o.m_blocks = P.mw;
    o.n_pairs = d / 16;
    o.k_steps = P.block_n / 16;
    o.a_in_regs = true;
    o.build(SmemOperand{}, 0, 0, SmemOperand{P.v_off, chunks, true}, 0, 16);
  }
  RegisterAllocator regs;
  P.r_s = regs.take(P.s_regs());
  P.r_o = regs.take(P.o_regs());
  P.r_max = regs.take(2 * P.mw);
  P.r_sum = regs.take(2 * P.mw);
  P.r_scratch = regs.take(2 * P.mw);
  P.r_tid = regs.take();
  P.r_gq = regs.take();
  P.r_gk = regs.take();
  P.r_gv = regs.take();
  P.r_sw = regs.take();
  P.r_sr = regs.take();
  P.r_optr = regs.take();
  P.r_cnt = regs.take();
  P.r_page = regs.take();
  WARPSIM_ASSERT(P.epi.readback_regs() <= P.s_regs(), "the epilogue's read-back registers reuse S");
  constexpr std::uint32_t kMinFragRegs = 16;
  WARPSIM_ASSERT(regs.used() + kMinFragRegs <= kMaxDataReg, "forward tile needs too many registers");
  // Fragments: two k-steps' worth if they fit, else what is left.
  const std::uint32_t per_step = std::max(P.mw * kMmaARegs + P.block_n / 16 * 4, d / 16 * 4);
  P.frag_regs = std::min<std::uint32_t>(2 * per_step, kMaxDataReg - regs.used());
  P.r_frag = regs.take(P.frag_regs);
  P.registers = kernel_registers(regs.used(), config);
}

DenseAttnTensors dense_attention_tensors(const AttnProblem& p, AttnArrays& arrays) {
  DenseAttnTensors t;
  t.q = BshdTensor{arrays.add(p.batch * p.seqlen_q * p.heads * p.head_dim * p.q_elem_bytes()), p.batch, p.seqlen_q,
                   p.heads, p.head_dim, p.q_elem_bytes()};
  t.k = BshdTensor{arrays.add(p.batch * p.seqlen_kv * p.kv_heads * p.head_dim * p.kv_elem_bytes), p.batch, p.seqlen_kv,
                   p.kv_heads, p.head_dim, p.kv_elem_bytes};
  t.v = BshdTensor{arrays.add(t.k.bytes()), p.batch, p.seqlen_kv, p.kv_heads, p.head_dim, p.kv_elem_bytes};
  t.o = BshdTensor{arrays.add(p.batch * p.seqlen_q * p.heads * p.head_dim * p.elem_bytes), p.batch, p.seqlen_q, p.heads,
                   p.head_dim, p.elem_bytes};
  t.lse = arrays.add(p.batch * p.heads * p.seqlen_q * 4);  // (batch, heads, seqlen_q) fp32
  return t;
}

FwdCtaWork dense_forward_work(const DenseAttnTensors& t, const AttnProblem& p, std::uint32_t bm, std::uint32_t bn,
                              std::uint64_t m, std::uint64_t b, std::uint64_t h) {
  const std::uint32_t n_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_kv, bn));
  const std::uint64_t kvh = h / p.group();
  FwdCtaWork w;
  w.q = t.q.of_batch(b);
  w.q_row0 = m * bm;
  w.q_col0 = h * p.head_dim;
  w.k = t.k.of_batch(b);
  w.v = t.v.of_batch(b);
  w.kv_col0 = kvh * p.head_dim;
  w.kv_batch = b;
  w.kv_len = p.seqlen_kv;
  w.n_begin = 0;
  w.n_end = n_blocks;
  if (p.causal) {
    // Row r of the block sees keys up to (m*bm + r) + seqlen_kv - seqlen_q (bottom-right aligned).
    const std::int64_t limit = static_cast<std::int64_t>(m * bm + p.seqlen_kv) - static_cast<std::int64_t>(p.seqlen_q);
    const std::int64_t last = limit + bm - 1;  // of the block's last row
    w.n_end = last < 0 ? 0 : static_cast<std::uint32_t>(std::min<std::uint64_t>(n_blocks, static_cast<std::uint64_t>(last) / bn + 1));
    w.causal_limit = limit < 0 ? 0 : static_cast<std::uint64_t>(limit);
  }
  w.o = t.o.of_batch(b);
  w.o_row0 = m * bm;
  w.o_col0 = h * p.head_dim;
  w.lse = t.lse + ((b * p.heads + h) * p.seqlen_q + m * bm) * 4;
  w.lse_rows = p.seqlen_q - std::min(p.seqlen_q, m * bm);
  return w;
}

GeneratedKernelSpec forward_kernel_spec(std::shared_ptr<const FwdPlan> plan, Dim3 grid, std::string name,
                                        std::uint64_t flops, const Config& config) {
  GeneratedKernelSpec spec;
  spec.info.name = std::move(name);
  spec.info.grid = grid;
  spec.info.block = Dim3{plan->warps * kWarpSize, 1, 1};
  spec.info.registers_per_thread = plan->registers;
  spec.info.shared_mem_bytes = plan->smem_bytes;
  spec.info.target_arch = config.section("gpu").str("arch");
  spec.info.flops = flops;
  spec.make_warp = [plan](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
    return std::make_unique<ForwardWarp>(plan, plan->work(cta), warp);
  };
  return spec;
}

std::vector<GeneratedKernelSpec> fa2_forward_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays) {
  auto plan = std::make_shared<FwdPlan>();
  FwdPlan& P = *plan;
  P.p = p;
  // flash_fwd_launch_template.h, sm80 without dropout: hdim 64: 128x128, 4 warps; hdim 128: 128x64, 4 warps (sm_80;
  // sm_86/89 pick other tiles); hdim 256: 128x64, 8 warps (with >= 112 KB of shared memory per block).
  P.block_m = 128;
  P.block_n = p.head_dim == 64 ? 128 : 64;
  P.warps = p.head_dim == 256 ? 8 : 4;
  finish_forward_plan(P, config, "attention fa2 forward");
  const DenseAttnTensors t = dense_attention_tensors(p, arrays);
  const std::uint32_t m_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_q, P.block_m));
  P.work = [t, m_blocks, p, bm = P.block_m, bn = P.block_n](std::uint64_t cta) {
    // grid (m blocks, batch, heads), x fastest
    return dense_forward_work(t, p, bm, bn, cta % m_blocks, cta / m_blocks % p.batch, cta / m_blocks / p.batch);
  };
  const std::string name = "warpsim_flash_fwd_fa2_" + p.types_tag() + "_hdim" + std::to_string(p.head_dim) + "_" +
                           std::to_string(P.block_m) + "x" + std::to_string(P.block_n) + "_" + std::to_string(P.warps) +
                           "w" + (p.causal ? "_causal" : "");
  std::vector<GeneratedKernelSpec> out;
  out.push_back(forward_kernel_spec(plan, Dim3{m_blocks, static_cast<std::uint32_t>(p.batch), static_cast<std::uint32_t>(p.heads)},
                                    name, static_cast<std::uint64_t>(p.forward_flops()), config));
  return out;
}

// ---- backward ---------------------------------------------------------------------------------------------------

namespace {

// flash_bwd_launch_template.h, sm80 (no dropout), with the shared memory the GPU allows per block:
//   hdim 64:  kBlockM 128, kBlockN 128, 8 warps, AtomLayoutMSdP 4, AtomLayoutNdKV 4, AtomLayoutMdQ 4 (144 KB)
//   hdim 128: kBlockM 64,  kBlockN 128, 8 warps, 2, 4, 2 (144 KB)
//   hdim 256: kBlockM 64,  kBlockN 64,  8 warps, 4, 2, 2 (176 KB; without Q double buffering 144 KB)
struct BwdTiling {
  std::uint32_t block_m = 64, block_n = 128, warps = 8, atom_sdp = 2, atom_dkv = 4, atom_dq = 2;
  bool q_double_buffer = true;
};

struct BwdPlan {
  AttnProblem p;
  BwdTiling t;
  std::uint32_t q_bytes = 0, q_buffers = 2, q_off = 0, do_off = 0, k_off = 0, v_off = 0, p_off = 0, ds_off = 0;
  std::uint32_t smem_bytes = 0;
  CoalescedTileCopy qdo_copy, kv_copy;
  std::vector<std::array<WarpGemm, 2>> gemm_s;  // per warp, per Q buffer: S = Q K^T
  std::vector<WarpGemm> gemm_dp, gemm_dv, gemm_dq;
  std::vector<std::array<WarpGemm, 2>> gemm_dk;  // per Q buffer: dK += dS^T Q
  StagedEpilogue epi;
  BshdTensor q, k, v, d_o, dk, dv;
  std::uint64_t lse = 0, dsum = 0, dq_accum = 0;  // (batch, heads, seqlen_q) fp32; dQaccum (batch, seqlen_q, heads, d) fp32
  std::uint32_t m_blocks = 0, n_blocks = 0;
  // registers
  std::uint16_t r_dv = 0, r_dk = 0, r_s = 0, r_dp = 0, r_dq = 0, r_lse = 0, r_d = 0, r_tid = 0, r_gq = 0, r_gdo = 0,
                r_gkv = 0, r_sw = 0, r_sr = 0, r_ptr = 0, r_cnt = 0, r_frag = 0;
  std::uint32_t frag_regs = 0, registers = 0;

  std::uint32_t sdp_rows() const { return gemm_dp[0].m_blocks * 2; }  // rows of S a lane holds
  std::uint32_t s_regs() const { return gemm_dp[0].acc_regs(); }
};

// A warp's (wm, wn) place in an atom layout of `atom_m` warps along M (flash-attention's TiledMMA: warp w at
// (w % atom_m, w / atom_m), m blocks interleaved by 16*atom_m rows, n pairs by 16*(warps/atom_m) columns).
WarpGemm warp_gemm(std::uint32_t warp, std::uint32_t warps, std::uint32_t atom_m, std::uint32_t rows,
                   std::uint32_t cols, std::uint32_t depth, const SmemOperand& a, const SmemOperand& b) {
  const std::uint32_t atom_n = warps / atom_m;
  WarpGemm g;
  g.m_blocks = rows / (16 * atom_m);
  g.n_pairs = cols / (16 * atom_n);
  g.k_steps = depth / 16;
  WARPSIM_ASSERT(g.m_blocks >= 1 && g.n_pairs >= 1 && g.k_steps >= 1, "backward warp tile");
  g.build(a, (warp % atom_m) * 16, 16 * atom_m, b, (warp / atom_m) * 16, 16 * atom_n);
  return g;
}

// flash_bwd_kernel.h, compute_dq_dk_dv_1colblock: one CTA per (KV block, batch, head), over the Q blocks from the
// last down to the first that sees the KV block:
//   wait; BAR; LSE and D of the block's rows (LDG)
//   S = Q K^T; causal/ragged mask; P = exp2(S*scale - LSE)
//   dP = dO V^T; dS = P * (dP - D)
//   P, dS to 16 bits and to shared memory (STS); BAR; cp.async Q of the next block (other buffer)
//   dV += P^T dO; BAR; cp.async dO of the next block; commit
//   dQ = dS K; RED.ADD.F32 of dQ into dQaccum
//   dK += dS^T Q
// epilogue: dK (scaled), dV through shared memory to global
class BackwardWarp final : public TilePipelineWarp<BackwardWarp> {
 public:
  // The KV block, batch entry, head and Q blocks [m_begin, m_end) of CTA `cta`.
  struct Work {
    std::uint32_t n = 0, m_begin = 0, m_end = 0;
    std::uint64_t b = 0, h = 0;
  };
  static Work work_of(const BwdPlan& P, std::uint64_t cta) {
    const AttnProblem& p = P.p;
    Work w;
    w.n = static_cast<std::uint32_t>(cta % P.n_blocks);
    w.b = cta / P.n_blocks % p.batch;
    w.h = cta / P.n_blocks / p.batch;
    w.m_end = P.m_blocks;
    if (p.causal) {
      // Row r sees keys up to r + seqlen_kv - seqlen_q: the first row that sees key n*block_n.
      const std::int64_t first_row = static_cast<std::int64_t>(std::uint64_t{w.n} * P.t.block_n + p.seqlen_q) -
                                     static_cast<std::int64_t>(p.seqlen_kv);
      if (first_row > 0)
        w.m_begin = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(w.m_end, static_cast<std::uint64_t>(first_row) / P.t.block_m));
    }
    return w;
  }

  BackwardWarp(std::shared_ptr<const BwdPlan> plan, std::uint64_t cta, std::uint32_t warp)
      : BackwardWarp(plan, work_of(*plan, cta), warp) {}
  BackwardWarp(std::shared_ptr<const BwdPlan> plan, Work w, std::uint32_t warp)
      : TilePipelineWarp(PipelineTiles{0, w.m_end - w.m_begin, 2}),
        plan_(std::move(plan)),
        warp_(warp),
        frags_(plan_->r_frag, plan_->frag_regs),
        n_(w.n),
        m_begin_(w.m_begin),
        m_end_(w.m_end),
        b_(w.b),
        h_(w.h) {}

  void emit_prologue(InstChunk& c) {
    const BwdPlan& P = *plan_;
    emit_alu(c, Opcode::S2R, P.r_tid, {});
    emit_alu(c, Opcode::S2R, P.r_cnt, {});
    for (std::uint16_t r : {P.r_gq, P.r_gdo, P.r_gkv, P.r_sw, P.r_sr, P.r_ptr}) emit_alu(c, Opcode::IMAD, r, {P.r_tid, P.r_cnt});
    const std::uint64_t kv_row = std::uint64_t{n_} * P.t.block_n;
    emit_tile_copy(c, P.kv_copy, P.k.of_batch(b_), kv_row, kv_col(), warp_, P.r_gkv, P.r_sw);
    emit_tile_copy(c, P.kv_copy, P.v.of_batch(b_), kv_row, kv_col(), warp_, P.r_gkv, P.r_sw);
    if (tiles().iterations() > 0) {
      emit_q_copy(c, m_end_ - 1);
      emit_tile_copy(c, P.qdo_copy, P.d_o.of_batch(b_), std::uint64_t{m_end_ - 1} * P.t.block_m, q_col(), warp_, P.r_gdo, P.r_sw);
    }
    emit_async_commit(c);
  }

  void emit_iteration(InstChunk& c, std::uint32_t i) {
    const BwdPlan& P = *plan_;
    const std::uint32_t m = m_end_ - 1 - i;
    const std::uint32_t buf = P.t.q_double_buffer ? i % 2 : 0;
    const bool has_next = m > m_begin_;
    emit_async_wait(c, 0);
    emit_barrier(c);
    emit_row_stats(c, m);
    emit_warp_gemm(c, P.gemm_s[warp_][buf], P.p.dtype, 0, P.r_s, frags_, P.r_sr);
    const std::uint32_t elems = P.s_regs();
    if (masked(m)) {
      for (std::uint32_t e = 0; e < elems; ++e) {
        emit_alu(c, Opcode::ISETP, kPredMask, {P.r_tid});
        emit_alu(c, Opcode::FSETP, reg(P.r_s + e), {reg(P.r_s + e)});
      }
    } else {
      c.skip(2 * elems);
    }
    // P = exp2(S * scale - LSE), then dP = dO V^T. Unlike the forward's P V, the compiled kernel does not spread the
    // exponentials over dP's MMAs: in the sm_90 SASS of flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel all of dP's
    // HMMAs follow the last MUFU.EX2 (validation/data/h100_sxm_2026-11-24/README.md).
    for (std::uint32_t e = 0; e < elems; ++e) {
      const std::uint16_t s = reg(P.r_s + e);
      emit_alu(c, Opcode::FFMA, s, {s, row_reg(P.r_lse, e)});
      emit_alu(c, Opcode::MUFU, s, {s});
    }
    emit_warp_gemm(c, P.gemm_dp[warp_], P.p.dtype, 0, P.r_dp, frags_, P.r_sr);
    for (std::uint32_t e = 0; e < elems; ++e) {  // dS = P * (dP - D)
      const std::uint16_t dp = reg(P.r_dp + e);
      emit_alu(c, Opcode::FADD, dp, {dp, row_reg(P.r_d, e)});
      emit_alu(c, Opcode::FMUL, dp, {dp, reg(P.r_s + e)});
    }
    emit_to_smem(c, P.r_s, P.p_off);
    emit_to_smem(c, P.r_dp, P.ds_off);
    emit_barrier(c);
    if (P.t.q_double_buffer) {
      if (has_next) emit_q_copy(c, m - 1, 1 - buf);
      else c.skip(P.qdo_copy.copies_per_thread);
    }
    emit_warp_gemm(c, P.gemm_dv[warp_], P.p.dtype, 0, P.r_dv, frags_, P.r_sr);
    emit_barrier(c);  // dO is free
    if (has_next)
      emit_tile_copy(c, P.qdo_copy, P.d_o.of_batch(b_), std::uint64_t{m - 1} * P.t.block_m, q_col(), warp_, P.r_gdo, P.r_sw);
    else
      c.skip(P.qdo_copy.copies_per_thread);
    if (P.t.q_double_buffer) emit_async_commit(c);
    emit_warp_gemm(c, P.gemm_dq[warp_], P.p.dtype, 0, P.r_dq, frags_, P.r_sr);
    emit_dq_reduction(c, m);
    emit_warp_gemm(c, P.gemm_dk[warp_][buf], P.p.dtype, 0, P.r_dk, frags_, P.r_sr);
    if (!P.t.q_double_buffer) {  // one Q buffer: the next Q only once dK's reads of it are done
      emit_barrier(c);
      if (has_next) emit_q_copy(c, m - 1, 0);
      else c.skip(P.qdo_copy.copies_per_thread);
      emit_async_commit(c);
    }
    emit_loop_tail(c, P.r_cnt, kPredLoop);
  }

  void emit_epilogue(InstChunk& c) {
    const BwdPlan& P = *plan_;
    const WarpGemm& g = P.gemm_dv[warp_];
    if (tiles().iterations() == 0) {  // no query sees this KV block: dK = dV = 0
      emit_clear(c, P.r_dv, g.acc_regs());
      emit_clear(c, P.r_dk, g.acc_regs());
    }
    emit_barrier(c);
    const std::uint64_t kv_row = std::uint64_t{n_} * P.t.block_n;
    const std::uint32_t atom_n = P.t.warps / P.t.atom_dkv;
    for (const auto& [acc, out] : {std::pair{P.r_dk, &P.dk}, std::pair{P.r_dv, &P.dv}})
      for (std::uint32_t mi = 0; mi < g.m_blocks; ++mi)
        for (std::uint32_t pp = 0; pp < g.n_pairs; ++pp) {
          // The warp's 16 rows x 16 columns of pair pp (its pairs are interleaved with the other warps').
          const MmaAccumulatorTile tile{g.acc_block(acc, mi, 2 * pp), 1, 2};
          const std::uint64_t row = kv_row + (warp_ % P.t.atom_dkv) * 16 + mi * 16 * P.t.atom_dkv;
          const std::uint64_t col = std::uint64_t{h_} * P.p.head_dim + (warp_ / P.t.atom_dkv) * 16 + pp * 16 * atom_n;
          emit_staged_epilogue(c, P.epi, tile, out->of_batch(b_), row, col, P.q_off + warp_ * P.epi.staging_bytes(),
                               P.r_s, P.r_ptr);
        }
    c.emit(Opcode::EXIT);
  }

 private:
  std::uint64_t q_col() const { return std::uint64_t{h_} * plan_->p.head_dim; }
  std::uint64_t kv_col() const { return h_ / plan_->p.group() * plan_->p.head_dim; }

  bool masked(std::uint32_t m) const {
    const BwdPlan& P = *plan_;
    const std::uint64_t last_row = std::uint64_t{m + 1} * P.t.block_m - 1, last_key = std::uint64_t{n_ + 1} * P.t.block_n - 1;
    if (last_row >= P.p.seqlen_q || last_key >= P.p.seqlen_kv) return true;
    if (!P.p.causal) return false;
    // The block's first row sees keys up to m*block_m + seqlen_kv - seqlen_q.
    return std::uint64_t{m} * P.t.block_m + P.p.seqlen_kv < last_key + 1 + P.p.seqlen_q;
  }

  // Register of the row statistic (LSE or D) for S accumulator register e (lane rows l/4 and l/4 + 8 per m block).
  std::uint16_t row_reg(std::uint16_t first, std::uint32_t e) const {
    const std::uint32_t per_mi = plan_->gemm_dp[0].n_blocks() * kMmaAccRegs;
    return reg(first + 2 * (e / per_mi) + (e % kMmaAccRegs) / 2);
  }

  void emit_q_copy(InstChunk& c, std::uint32_t m, std::uint32_t buf = 0) {
    const BwdPlan& P = *plan_;
    (void)buf;  // the buffer is in the shared pointer register
    emit_tile_copy(c, P.qdo_copy, P.q.of_batch(b_), std::uint64_t{m} * P.t.block_m, q_col(), warp_, P.r_gq, P.r_sw);
  }

  // LSE and D of the lane's S rows: LDG.32, the 4 lanes of a row reading the same word.
  void emit_row_stats(InstChunk& c, std::uint32_t m) {
    const BwdPlan& P = *plan_;
    const WarpGemm& g = P.gemm_dp[warp_];
    const std::uint64_t row_base = ((std::uint64_t{b_} * P.p.heads + h_) * P.p.seqlen_q) * 4;
    for (const auto& [array, first] : {std::pair{P.lse, P.r_lse}, std::pair{P.dsum, P.r_d}})
      for (std::uint32_t mi = 0; mi < g.m_blocks; ++mi)
        for (std::uint32_t half = 0; half < 2; ++half) {
          const std::uint64_t row = std::uint64_t{m} * P.t.block_m + (warp_ % P.t.atom_sdp) * 16 + mi * 16 * P.t.atom_sdp + half * 8;
          const std::uint32_t mask = row_mask(row, P.p.seqlen_q);
          if (mask == 0) {
            c.skip();
            continue;
          }
          WarpInst& ld = emit_load(c, Opcode::LDG, MemSpace::Global, LaneRows{array + row_base + row * 4, 4, 4, 4}, mask,
                                   reg(first + 2 * mi + half), 1, {P.r_ptr});
          ld.stride = 0;
        }
  }
  // Lanes whose accumulator row (row0 + lane/4) is below `rows`.
  static std::uint32_t row_mask(std::uint64_t row0, std::uint64_t rows) {
    if (row0 >= rows) return 0;
    return first_lanes_mask((rows - row0) * 4);
  }

  // P or dS (an S-shaped accumulator tile) packed to 16 bits and stored to its swizzled shared-memory tile (STS.32
  // of a pair per lane and 8-row half block).
  void emit_to_smem(InstChunk& c, std::uint16_t acc, std::uint32_t tile_off) {
    const BwdPlan& P = *plan_;
    const WarpGemm& g = P.gemm_dp[warp_];
    const std::uint32_t pitch = P.t.block_n * P.p.elem_bytes;
    const std::uint32_t atom_n = P.t.warps / P.t.atom_sdp;
    for (std::uint32_t e = 0; e < g.acc_regs(); e += 2)
      emit_alu(c, Opcode::FMUL, reg(acc + e), {reg(acc + e), reg(acc + e + 1)});
    for (std::uint32_t mi = 0; mi < g.m_blocks; ++mi)
      for (std::uint32_t ni = 0; ni < g.n_blocks(); ++ni)
        for (std::uint32_t half = 0; half < 2; ++half) {
          const std::uint32_t row = (warp_ % P.t.atom_sdp) * 16 + mi * 16 * P.t.atom_sdp + half * 8;
          const std::uint32_t col = (warp_ / P.t.atom_sdp) * 16 + (ni / 2) * 16 * atom_n + (ni % 2) * 8;
          // Each of the 8 rows in its own swizzled chunk (flash-attention's swizzled smem layouts), as the
          // ldmatrix reads of the tile expect: 8 rows on 8 bank groups, conflict-free.
          emit_store(c, Opcode::STS, MemSpace::Shared, LaneRows{tile_off, 4, 4, pitch}, kFullMask,
                     {g.acc_block(acc, mi, ni), P.r_sr});
          c.own_deltas(swizzled_rows_offsets(0, row, col * P.p.elem_bytes, pitch / kVecBytes, 4, 4));
        }
  }

  // dQaccum += dQ: one RED.ADD.F32 per accumulator register (atomicAdd per element), addressed as flash-attention's
  // GmemTiledCopydQaccumAtomicAdd partitions the tile: threads (warps x 32) over (rows, columns) with stride (32, 1),
  // one value each, so a warp's k-th RED covers 32 consecutive floats (one 128-byte line) of row
  // warp + warps x (k mod rows/warps), columns 32 x (k div rows/warps). The registers pair with those addresses by
  // index, not by their place in the MMA tile: dQaccum holds the tile permuted, and the conversion kernel reads it
  // back through the same partition.
  void emit_dq_reduction(InstChunk& c, std::uint32_t m) {
    const BwdPlan& P = *plan_;
    const WarpGemm& g = P.gemm_dq[warp_];
    const RowMajorMatrix dq{P.dq_accum + std::uint64_t{b_} * P.p.seqlen_q * P.p.heads * P.p.head_dim * 4, P.p.seqlen_q,
                            P.p.heads * P.p.head_dim, 4};
    const std::uint32_t row_steps = P.t.block_m / P.t.warps;
    std::uint32_t k = 0;
    for (std::uint32_t mi = 0; mi < g.m_blocks; ++mi)
      for (std::uint32_t ni = 0; ni < g.n_blocks(); ++ni)
        for (std::uint32_t e = 0; e < kMmaAccRegs; ++e, ++k) {
          const std::uint64_t row = std::uint64_t{m} * P.t.block_m + warp_ + P.t.warps * (k % row_steps);
          const std::uint64_t col = q_col() + kWarpSize * (k / row_steps);
          if (row >= P.p.seqlen_q) {
            c.skip();
            continue;
          }
          emit_store(c, Opcode::RED, MemSpace::Global, LaneRows{dq.address(row, col), 4}, kFullMask,
                     {reg(g.acc_block(P.r_dq, mi, ni) + e), P.r_ptr});
        }
  }

  std::shared_ptr<const BwdPlan> plan_;
  std::uint32_t warp_;
  FragmentRing frags_;
  std::uint32_t n_ = 0, m_begin_ = 0, m_end_ = 0;
  std::uint64_t b_ = 0, h_ = 0;
};

// A short straight-line warp program (the backward's preprocessing and dQ conversion): one chunk.
class StraightWarp final : public WarpGenerator {
 public:
  explicit StraightWarp(std::function<void(InstChunk&)> body) : body_(std::move(body)) {}
  bool generate(InstChunk& c) override {
    if (done_) return false;
    body_(c);
    done_ = true;
    return true;
  }

 private:
  std::function<void(InstChunk&)> body_;
  bool done_ = false;
};

}  // namespace

std::vector<GeneratedKernelSpec> fa2_backward_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays) {
  auto plan = std::make_shared<BwdPlan>();
  BwdPlan& P = *plan;
  P.p = p;
  const std::uint32_t d = static_cast<std::uint32_t>(p.head_dim);
  if (d == 64) P.t = BwdTiling{128, 128, 8, 4, 4, 4, true};
  else if (d == 128) P.t = BwdTiling{64, 128, 8, 2, 4, 2, true};
  else P.t = BwdTiling{64, 64, 8, 4, 2, 2, true};
  const std::uint32_t row_bytes = d * p.elem_bytes, chunks = row_bytes / kVecBytes;
  const std::uint32_t threads = P.t.warps * kWarpSize;
  const std::uint64_t limit = shared_memory_per_cta(config);
  auto layout = [&] {
    P.q_buffers = P.t.q_double_buffer ? 2 : 1;
    P.q_bytes = P.t.block_m * row_bytes;
    P.q_off = 0;
    P.do_off = P.q_buffers * P.q_bytes;
    P.k_off = P.do_off + P.q_bytes;
    P.v_off = P.k_off + P.t.block_n * row_bytes;
    P.p_off = P.v_off + P.t.block_n * row_bytes;
    P.ds_off = P.p_off + P.t.block_m * P.t.block_n * p.elem_bytes;
    P.smem_bytes = P.ds_off + P.t.block_m * P.t.block_n * p.elem_bytes;
  };
  layout();
  if (P.smem_bytes > limit) {  // flash-attention's fallback: no Q double buffering
    P.t.q_double_buffer = false;
    layout();
  }
  if (P.smem_bytes > limit)
    throw InputError("attention fa2 backward: head_dim " + std::to_string(d) + " needs " + std::to_string(P.smem_bytes) +
                     " bytes of shared memory per CTA; the GPU config's sm.shared_memory_per_cta is " + std::to_string(limit));
  P.qdo_copy = CoalescedTileCopy(P.t.block_m, row_bytes, threads);
  P.kv_copy = CoalescedTileCopy(P.t.block_n, row_bytes, threads);
  P.epi = StagedEpilogue::store_16bit(16);
  const std::uint32_t pn_chunks = P.t.block_n * p.elem_bytes / kVecBytes;
  const std::uint32_t M = P.t.block_m, N = P.t.block_n, W = P.t.warps;
  for (std::uint32_t w = 0; w < W; ++w) {
    std::array<WarpGemm, 2> s, dk;
    for (std::uint32_t buf = 0; buf < 2; ++buf) {
      const std::uint32_t q_off = P.q_off + (buf % P.q_buffers) * P.q_bytes;
      s[buf] = warp_gemm(w, W, P.t.atom_sdp, M, N, d, SmemOperand{q_off, chunks, false}, SmemOperand{P.k_off, chunks, false});
      dk[buf] = warp_gemm(w, W, P.t.atom_dkv, N, d, M, SmemOperand{P.ds_off, pn_chunks, true}, SmemOperand{q_off, chunks, true});
    }
    P.gemm_s.push_back(s);
    P.gemm_dk.push_back(dk);
    P.gemm_dp.push_back(warp_gemm(w, W, P.t.atom_sdp, M, N, d, SmemOperand{P.do_off, chunks, false}, SmemOperand{P.v_off, chunks, false}));
    P.gemm_dv.push_back(warp_gemm(w, W, P.t.atom_dkv, N, d, M, SmemOperand{P.p_off, pn_chunks, true}, SmemOperand{P.do_off, chunks, true}));
    P.gemm_dq.push_back(warp_gemm(w, W, P.t.atom_dq, M, d, N, SmemOperand{P.ds_off, pn_chunks, false}, SmemOperand{P.k_off, chunks, true}));
  }
  // Registers: dV, dK, S, dP accumulators; dQ's reuses S and dP (dead once P and dS are in shared memory).
  RegisterAllocator regs;
  P.r_dv = regs.take(P.gemm_dv[0].acc_regs());
  P.r_dk = regs.take(P.gemm_dv[0].acc_regs());
  P.r_s = regs.take(P.gemm_dp[0].acc_regs());
  P.r_dp = regs.take(P.gemm_dp[0].acc_regs());
  P.r_dq = P.r_s;
  const std::uint32_t dq_regs = P.gemm_dq[0].acc_regs();
  // The dQ atomics pair accumulator registers with the atomic-add partition's addresses by index (emit_dq_reduction).
  WARPSIM_ASSERT(std::uint64_t{dq_regs} * kWarpSize * W == std::uint64_t{M} * d,
                 "dQ accumulator registers must cover the dQaccum tile");
  if (dq_regs > 2 * P.gemm_dp[0].acc_regs()) regs.take(dq_regs - 2 * P.gemm_dp[0].acc_regs());
  P.r_lse = regs.take(P.sdp_rows());
  P.r_d = regs.take(P.sdp_rows());
  P.r_tid = regs.take();
  P.r_gq = regs.take();
  P.r_gdo = regs.take();
  P.r_gkv = regs.take();
  P.r_sw = regs.take();
  P.r_sr = regs.take();
  P.r_ptr = regs.take();
  P.r_cnt = regs.take();
  constexpr std::uint32_t kMinFragRegs = 16;
  WARPSIM_ASSERT(regs.used() + kMinFragRegs <= kMaxDataReg, "backward tile needs too many registers");
  P.frag_regs = std::min<std::uint32_t>(64, kMaxDataReg - regs.used());
  P.r_frag = regs.take(P.frag_regs);
  P.registers = kernel_registers(regs.used(), config);

  P.q = BshdTensor{arrays.add(p.batch * p.seqlen_q * p.heads * d * p.elem_bytes), p.batch, p.seqlen_q, p.heads, d, p.elem_bytes};
  P.k = BshdTensor{arrays.add(p.batch * p.seqlen_kv * p.kv_heads * d * p.elem_bytes), p.batch, p.seqlen_kv, p.kv_heads, d, p.elem_bytes};
  P.v = BshdTensor{arrays.add(P.k.bytes()), p.batch, p.seqlen_kv, p.kv_heads, d, p.elem_bytes};
  const BshdTensor o{arrays.add(P.q.bytes()), p.batch, p.seqlen_q, p.heads, d, p.elem_bytes};
  P.d_o = BshdTensor{arrays.add(P.q.bytes()), p.batch, p.seqlen_q, p.heads, d, p.elem_bytes};
  const BshdTensor dq{arrays.add(P.q.bytes()), p.batch, p.seqlen_q, p.heads, d, p.elem_bytes};
  // dK, dV per query head (flash-attention's dk_expanded / dv_expanded under GQA, summed over the group afterwards)
  P.dk = BshdTensor{arrays.add(p.batch * p.seqlen_kv * p.heads * d * p.elem_bytes), p.batch, p.seqlen_kv, p.heads, d, p.elem_bytes};
  P.dv = BshdTensor{arrays.add(P.dk.bytes()), p.batch, p.seqlen_kv, p.heads, d, p.elem_bytes};
  P.lse = arrays.add(p.batch * p.heads * p.seqlen_q * 4);
  P.dsum = arrays.add(p.batch * p.heads * p.seqlen_q * 4);
  P.dq_accum = arrays.add(p.batch * p.seqlen_q * p.heads * d * 4);
  P.m_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_q, M));
  P.n_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_kv, N));
  const std::string arch = config.section("gpu").str("arch");
  const std::string suffix = "_" + p.dtype_name + "_hdim" + std::to_string(d) + (p.causal ? "_causal" : "");
  std::vector<GeneratedKernelSpec> out;

  // The two element-wise kernels around the main one: one CTA per (block_m rows, batch, head), `threads` threads.
  auto row_block_kernel = [&](const std::string& name) {
    GeneratedKernelSpec spec;
    spec.info.name = name + suffix;
    spec.info.grid = Dim3{P.m_blocks, static_cast<std::uint32_t>(p.batch), static_cast<std::uint32_t>(p.heads)};
    spec.info.block = Dim3{threads, 1, 1};
    spec.info.registers_per_thread = 32;
    spec.info.target_arch = arch;
    return spec;
  };

  // 1. flash_bwd_dot_do_o_kernel: D = rowsum(dO * O) per row (the d/8 lanes of a row reduce with SHFL), and
  // dQaccum cleared. One CTA per (block_m rows, batch, head), 8 warps.
  {
    GeneratedKernelSpec spec = row_block_kernel("warpsim_flash_bwd_dot_do_o");
    const CoalescedTileCopy tile = P.qdo_copy;
    const CoalescedTileCopy acc_tile(M, d * 4, threads);
    const std::uint32_t elems = kVecBytes / p.elem_bytes;
    spec.make_warp = [plan, o, tile, acc_tile, elems](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
      return std::make_unique<StraightWarp>([plan, o, tile, acc_tile, elems, cta, warp](InstChunk& c) {
        const BwdPlan& P = *plan;
        const std::uint64_t m = cta % P.m_blocks, b = cta / P.m_blocks % P.p.batch, h = cta / P.m_blocks / P.p.batch;
        const std::uint16_t r_tid = 0, r_ptr = 1, r_do = 4, r_o = 8, r_dot = 12, r_scratch = 28;
        emit_alu(c, Opcode::S2R, r_tid, {});
        emit_alu(c, Opcode::IMAD, r_ptr, {r_tid});
        const RowMajorMatrix dom = P.d_o.of_batch(b), om = o.of_batch(b);
        const std::uint64_t row0 = m * P.t.block_m, col0 = h * P.p.head_dim;
        for (std::uint32_t j = 0; j < tile.copies_per_thread; ++j) {
          const CoalescedTileCopy::Chunk at = tile.first_chunk(j, warp);
          const std::uint64_t row = row0 + at.row, col = col0 + at.chunk * elems;
          const std::uint32_t mask = matrix_lane_mask(dom, row, col, tile.lanes_per_row, elems);
          const std::uint16_t dot = reg(r_dot + j);
          if (mask == 0) {
            c.skip(2 + 2 * elems);
            continue;
          }
          emit_load(c, Opcode::LDG, MemSpace::Global, matrix_lanes(dom, row, col, tile.lanes_per_row, elems), mask, r_do, 4, {r_ptr});
          emit_load(c, Opcode::LDG, MemSpace::Global, matrix_lanes(om, row, col, tile.lanes_per_row, elems), mask, r_o, 4, {r_ptr});
          for (std::uint32_t e = 0; e < elems; ++e) {
            emit_alu(c, Opcode::HADD2, reg(r_scratch + e % 4), {reg(r_do + e / 2), reg(r_o + e / 2)});
            emit_alu(c, Opcode::FFMA, dot, {dot, reg(r_scratch + e % 4)});
          }
        }
        for (std::uint32_t j = 0; j < tile.copies_per_thread; ++j) {
          const CoalescedTileCopy::Chunk at = tile.first_chunk(j, warp);
          const std::uint16_t dot = reg(r_dot + j);
          emit_warp_allreduce(c, WarpReduction{dot, r_scratch, 1, Opcode::FADD, 1}, tile.lanes_per_row);
          // lane 0 of each row stores D
          const std::uint64_t row = row0 + at.row;
          std::uint32_t mask = 0;
          for (std::uint32_t l = 0; l < kWarpSize; l += tile.lanes_per_row)
            if (row + l / tile.lanes_per_row < P.p.seqlen_q) mask |= 1u << l;
          if (mask == 0) {
            c.skip();
            continue;
          }
          const std::uint64_t addr = P.dsum + ((b * P.p.heads + h) * P.p.seqlen_q + row) * 4;
          WarpInst& st = emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{addr, 4, tile.lanes_per_row, 4}, mask, {dot, r_ptr});
          st.stride = 0;
        }
        // dQaccum = 0 for the block's rows
        const RowMajorMatrix dqa{P.dq_accum + b * P.p.seqlen_q * P.p.heads * P.p.head_dim * 4, P.p.seqlen_q,
                                 P.p.heads * P.p.head_dim, 4};
        for (std::uint32_t j = 0; j < acc_tile.copies_per_thread; ++j) {
          const CoalescedTileCopy::Chunk at = acc_tile.first_chunk(j, warp);
          const std::uint64_t row = row0 + at.row, col = col0 + at.chunk * 4;
          const std::uint32_t mask = matrix_lane_mask(dqa, row, col, acc_tile.lanes_per_row, 4);
          if (mask == 0) {
            c.skip();
            continue;
          }
          emit_store(c, Opcode::STG, MemSpace::Global, matrix_lanes(dqa, row, col, acc_tile.lanes_per_row, 4), mask, {r_scratch, r_ptr});
        }
        c.emit(Opcode::EXIT);
      });
    };
    out.push_back(std::move(spec));
  }

  // 2. the main kernel: grid (KV blocks, batch, heads).
  {
    GeneratedKernelSpec spec;
    spec.info.name = "warpsim_flash_bwd_dq_dk_dv_fa2" + suffix + "_" + std::to_string(M) + "x" + std::to_string(N) + "_" +
                     std::to_string(W) + "w";
    spec.info.grid = Dim3{P.n_blocks, static_cast<std::uint32_t>(p.batch), static_cast<std::uint32_t>(p.heads)};
    spec.info.block = Dim3{threads, 1, 1};
    spec.info.registers_per_thread = P.registers;
    spec.info.shared_mem_bytes = P.smem_bytes;
    spec.info.target_arch = arch;
    spec.info.flops = static_cast<std::uint64_t>(2.5 * p.forward_flops());
    spec.make_warp = [plan](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
      return std::make_unique<BackwardWarp>(plan, cta, warp);
    };
    out.push_back(std::move(spec));
  }

  // 3. flash_bwd_convert_dq_kernel: dQ = dQaccum * scale, to 16 bits. One CTA per (block_m rows, batch, head).
  {
    GeneratedKernelSpec spec = row_block_kernel("warpsim_flash_bwd_convert_dq");
    const CoalescedTileCopy acc_tile(M, d * 4, threads);
    spec.make_warp = [plan, dq, acc_tile](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
      return std::make_unique<StraightWarp>([plan, dq, acc_tile, cta, warp](InstChunk& c) {
        const BwdPlan& P = *plan;
        const std::uint64_t m = cta % P.m_blocks, b = cta / P.m_blocks % P.p.batch, h = cta / P.m_blocks / P.p.batch;
        const std::uint16_t r_tid = 0, r_ptr = 1, r_val = 4;
        emit_alu(c, Opcode::S2R, r_tid, {});
        emit_alu(c, Opcode::IMAD, r_ptr, {r_tid});
        const RowMajorMatrix dqa{P.dq_accum + b * P.p.seqlen_q * P.p.heads * P.p.head_dim * 4, P.p.seqlen_q,
                                 P.p.heads * P.p.head_dim, 4};
        const RowMajorMatrix dqm = dq.of_batch(b);
        const std::uint64_t row0 = m * P.t.block_m, col0 = h * P.p.head_dim;
        for (std::uint32_t j = 0; j < acc_tile.copies_per_thread; ++j) {
          const CoalescedTileCopy::Chunk at = acc_tile.first_chunk(j, warp);
          const std::uint64_t row = row0 + at.row, col = col0 + at.chunk * 4;
          const std::uint32_t mask = matrix_lane_mask(dqa, row, col, acc_tile.lanes_per_row, 4);
          if (mask == 0) {
            c.skip(8);
            continue;
          }
          emit_load(c, Opcode::LDG, MemSpace::Global, matrix_lanes(dqa, row, col, acc_tile.lanes_per_row, 4), mask, r_val, 4, {r_ptr});
          for (std::uint32_t e = 0; e < 4; ++e) emit_alu(c, Opcode::FMUL, reg(r_val + e), {reg(r_val + e)});
          for (std::uint32_t e = 0; e < 4; e += 2) emit_alu(c, Opcode::FMUL, reg(r_val + e), {reg(r_val + e), reg(r_val + e + 1)});
          emit_store(c, Opcode::STG, MemSpace::Global, matrix_lanes(dqm, row, col, acc_tile.lanes_per_row, 4), mask, {r_val, r_ptr});
        }
        c.emit(Opcode::EXIT);
      });
    };
    out.push_back(std::move(spec));
  }
  return out;
}
}  // namespace warpsim::synth::attn
