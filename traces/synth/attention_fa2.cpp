// FlashAttention-2 for sm_80 (Dao-AILab/flash-attention csrc/flash_attn/src: flash_fwd_kernel.h,
// flash_bwd_kernel.h, kernel_traits.h, flash_fwd_launch_template.h, flash_bwd_launch_template.h): the forward kernel
// and the backward's three kernels (dot(dO, O) preprocessing, the main dK/dV/dQ kernel, the dQ conversion).
// See README.md here, "Attention".
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "traces/synth/attention.h"
#include "traces/synth/attention_fwd.h"
#include "traces/synth/row_reduction.h"
#include "traces/synth/tile_pipeline.h"

namespace warpsim::synth::attn {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

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
        frags_(plan_->r_frag, plan_->frag_regs) {}

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
    if (n > w_.n_begin) {
      emit_kv_copy(c, /*value=*/false, n - 1);
      emit_async_commit(c);
    } else {
      c.skip(kv_copy_slots() + 1);
    }
    emit_softmax(c, first);
    // O += P V: P's A fragment (mi, ks) is the packed S blocks (mi, 2ks) and (mi, 2ks+1).
    const ARegs p_regs{P.r_s, P.s_blocks_n() * kMmaAccRegs, 2 * kMmaAccRegs};
    emit_warp_gemm(c, P.gemm_o[warp_], P.p.dtype, 0, P.r_o, frags_, P.r_sr, p_regs);
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
    // LSE: the lane holding column 0 of each row (lane % 4 == 0) stores its rows' values.
    for (std::uint32_t mi = 0; mi < P.mw; ++mi)
      for (std::uint32_t half = 0; half < 2; ++half) {
        const std::uint64_t row = mi_row(mi) + half * 8;
        std::uint32_t mask = 0;
        for (std::uint32_t l = 0; l < kWarpSize; l += 4)
          if (row + l / 4 < w_.lse_rows) mask |= 1u << l;
        if (mask == 0) {
          c.skip();
          continue;
        }
        emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{w_.lse + row * 4, 4, 4, 4}, mask,
                   {reg(P.r_max + 2 * mi + half), P.r_optr});
      }
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
    const std::uint32_t chunk_elems = kVecBytes / P.p.elem_bytes;
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

  // flash::Softmax::softmax_rescale_o for this warp's 2*mw rows (each lane holds 2 rows per m block).
  void emit_softmax(InstChunk& c, bool first) {
    const FwdPlan& P = *plan_;
    const std::uint32_t rows = 2 * P.mw, nb = P.s_blocks_n();
    auto s_reg = [&](std::uint32_t mi, std::uint32_t ni, std::uint32_t e) {
      return reg(P.r_s + (mi * nb + ni) * kMmaAccRegs + e);
    };
    // Row max over the thread's columns (FMNMX, emitted as FADD: same fp32 pipe), then over the row's 4 lanes.
    for (std::uint32_t mi = 0; mi < P.mw; ++mi)
      for (std::uint32_t ni = 0; ni < nb; ++ni)
        for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
          const std::uint16_t m = reg(P.r_max + 2 * mi + e / 2);
          emit_alu(c, Opcode::FADD, m, {m, s_reg(mi, ni, e)});
        }
    emit_warp_allreduce(c, WarpReduction{P.r_max, P.r_scratch, rows, Opcode::FADD, rows}, 4);
    if (!first) {  // factor = exp2((max_old - max_new) * scale); l *= factor
      for (std::uint32_t r = 0; r < rows; ++r) {
        const std::uint16_t f = reg(P.r_scratch + r);
        emit_alu(c, Opcode::FADD, f, {reg(P.r_max + r)});
        emit_alu(c, Opcode::FMUL, f, {f});
        emit_alu(c, Opcode::MUFU, f, {f});
        emit_alu(c, Opcode::FMUL, reg(P.r_sum + r), {reg(P.r_sum + r), f});
      }
    } else {
      c.skip(4 * rows);
    }
    for (std::uint32_t r = 0; r < rows; ++r) emit_alu(c, Opcode::FMUL, reg(P.r_max + r), {reg(P.r_max + r)});
    // P = exp2(S * scale - max_scaled) (FFMA + MUFU.EX2), row sum (FADD)
    for (std::uint32_t mi = 0; mi < P.mw; ++mi)
      for (std::uint32_t ni = 0; ni < nb; ++ni)
        for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
          const std::uint16_t s = s_reg(mi, ni, e), row = static_cast<std::uint16_t>(2 * mi + e / 2);
          emit_alu(c, Opcode::FFMA, s, {s, reg(P.r_max + row)});
          emit_alu(c, Opcode::MUFU, s, {s});
          emit_alu(c, Opcode::FADD, reg(P.r_sum + row), {reg(P.r_sum + row), s});
        }
    // O *= factor (per row)
    if (!first) {
      for (std::uint32_t mi = 0; mi < P.mw; ++mi)
        for (std::uint32_t ni = 0; ni < P.o_blocks_n(); ++ni)
          for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
            const std::uint16_t o = reg(P.r_o + (mi * P.o_blocks_n() + ni) * kMmaAccRegs + e);
            emit_alu(c, Opcode::FMUL, o, {o, reg(P.r_scratch + 2 * mi + e / 2)});
          }
    } else {
      c.skip(P.o_regs());
    }
    // P to 16 bits: one F2FP pack per pair (emitted as FMUL), in place.
    for (std::uint32_t e = 0; e < P.s_regs(); e += 2)
      emit_alu(c, Opcode::FMUL, reg(P.r_s + e), {reg(P.r_s + e), reg(P.r_s + e + 1)});
  }

  // fp32 partial output (split-KV): each lane stores its pairs of the 16x8 blocks directly (STG.64).
  void emit_fp32_store(InstChunk& c, const MmaAccumulatorTile& tile, std::uint64_t row) {
    const FwdPlan& P = *plan_;
    for (std::uint32_t ni = 0; ni < tile.n_blocks; ++ni)
      for (std::uint32_t half = 0; half < 2; ++half) {
        const std::uint64_t r = w_.o_row0 + row - w_.o_row0 + half * 8;
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
  const std::uint32_t threads = P.warps * kWarpSize;
  P.mw = P.block_m / (16 * P.warps);
  WARPSIM_ASSERT(P.mw >= 1 && P.mw * 16 * P.warps == P.block_m, "forward tile rows must split into 16-row slices");
  P.q_off = 0;
  P.k_off = P.block_m * row_bytes;
  P.v_off = P.k_off + P.block_n * row_bytes;
  P.smem_bytes = P.v_off + P.block_n * row_bytes;
  const std::uint64_t limit = shared_memory_per_cta(config);
  if (P.smem_bytes > limit)
    throw InputError(kernel + ": the " + std::to_string(P.block_m) + "x" + std::to_string(P.block_n) + " tile of head_dim " +
                     std::to_string(d) + " needs " + std::to_string(P.smem_bytes) +
                     " bytes of shared memory per CTA; the GPU config's sm.shared_memory_per_cta is " +
                     std::to_string(limit));
  P.q_copy = CoalescedTileCopy(P.block_m, row_bytes, threads);
  P.kv_copy = CoalescedTileCopy(P.block_n, row_bytes, threads);
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
  const BshdTensor q{arrays.add(p.batch * p.seqlen_q * p.heads * p.head_dim * p.elem_bytes), p.batch, p.seqlen_q,
                     p.heads, p.head_dim, p.elem_bytes};
  const BshdTensor k{arrays.add(p.batch * p.seqlen_kv * p.kv_heads * p.head_dim * p.elem_bytes), p.batch,
                     p.seqlen_kv, p.kv_heads, p.head_dim, p.elem_bytes};
  const BshdTensor v{arrays.add(k.bytes()), p.batch, p.seqlen_kv, p.kv_heads, p.head_dim, p.elem_bytes};
  const BshdTensor o{arrays.add(q.bytes()), p.batch, p.seqlen_q, p.heads, p.head_dim, p.elem_bytes};
  const std::uint64_t lse = arrays.add(p.batch * p.heads * p.seqlen_q * 4);  // (batch, heads, seqlen_q) fp32
  const std::uint32_t m_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_q, P.block_m));
  const std::uint32_t n_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_kv, P.block_n));
  P.work = [q, k, v, o, lse, m_blocks, n_blocks, p, bm = P.block_m, bn = P.block_n](std::uint64_t cta) {
    // grid (m blocks, batch, heads), x fastest
    const std::uint64_t m = cta % m_blocks, b = cta / m_blocks % p.batch, h = cta / m_blocks / p.batch;
    const std::uint64_t kvh = h / p.group();
    FwdCtaWork w;
    w.q = q.of_batch(b);
    w.q_row0 = m * bm;
    w.q_col0 = h * p.head_dim;
    w.k = k.of_batch(b);
    w.v = v.of_batch(b);
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
    w.o = o.of_batch(b);
    w.o_row0 = m * bm;
    w.o_col0 = h * p.head_dim;
    w.lse = lse + ((b * p.heads + h) * p.seqlen_q + m * bm) * 4;
    w.lse_rows = p.seqlen_q - std::min(p.seqlen_q, m * bm);
    return w;
  };
  const std::string name = "warpsim_flash_fwd_fa2_" + p.dtype_name + "_hdim" + std::to_string(p.head_dim) + "_" +
                           std::to_string(P.block_m) + "x" + std::to_string(P.block_n) + "_" + std::to_string(P.warps) +
                           "w" + (p.causal ? "_causal" : "");
  std::vector<GeneratedKernelSpec> out;
  out.push_back(forward_kernel_spec(plan, Dim3{m_blocks, static_cast<std::uint32_t>(p.batch), static_cast<std::uint32_t>(p.heads)},
                                    name, static_cast<std::uint64_t>(p.forward_flops()), config));
  return out;
}

std::vector<GeneratedKernelSpec> fa2_backward_kernels(const AttnProblem&, const Config&, AttnArrays&) {
  throw InputError("attention key 'direction': the fa2 backward pass is not built yet");
}

}  // namespace warpsim::synth::attn
