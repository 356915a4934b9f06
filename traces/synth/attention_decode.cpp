// FlashDecoding: flash-attention's split-KV forward over a paged KV cache (flash_fwd_splitkv_kernel, the kvcache
// path of csrc/flash_attn/flash_api.cpp) and the combine kernel (flash_fwd_splitkv_combine_kernel).
//  * One query token with grouped-query attention (seqlen_q = 1, heads > kv_heads) is laid out as flash-attention
//    does ("seqlenq_ngroups_swapped"): the group's query heads become the rows of one KV head, so a CTA of 64 rows
//    serves a whole group and K/V are read once per KV head.
//  * Tile 64 x kBlockN (256 for head_dim 64, 128 for 128, 64 for 256), 4 warps (run_mha_fwd_splitkv_dispatch).
//  * KV splits: num_splits_heuristic over batch x heads x m-blocks CTAs and 2 CTAs per SM.
//  * The cache is (pages, page_size, kv_heads, head_dim); each K/V copy reads its page's entry in the sequence's page
//    table (LDG) before its cp.async.
// See README.md here, "Attention".
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/types.h"
#include "sim/core/error.h"
#include "traces/synth/attention.h"
#include "traces/synth/attention_fwd.h"
#include "traces/synth/row_reduction.h"

namespace warpsim::synth::attn {
namespace {


constexpr std::uint32_t kDecodeBlockM = 64;
constexpr std::uint32_t kDecodeWarps = 4;
constexpr std::uint32_t kMaxSplits = 128;      // flash-attention's cap on num_splits
constexpr std::uint32_t kCtasPerSmGuess = 2;   // flash-attention sizes the splits for 2 CTAs per SM
constexpr std::uint32_t kCombineThreads = 128;

// The combine kernel: per block of rows, the splits' logsumexps -> scales (through shared memory), then
// O = sum over splits of scale * O_split, to 16 bits.
class CombineWarp final : public WarpGenerator {
 public:
  struct Plan {
    std::uint32_t rows_per_cta = 4, splits = 1, head_dim = 128, elem_bytes = 2;
    std::uint64_t rows = 0;  // batch * heads' * seqlen_q'
    std::uint64_t lse_accum = 0, o_accum = 0, o = 0;
    std::uint64_t o_row_pitch = 0;
  };
  CombineWarp(std::shared_ptr<const Plan> plan, std::uint64_t cta, std::uint32_t warp)
      : plan_(std::move(plan)), cta_(cta), warp_(warp) {}

  bool generate(InstChunk& c) override {
    if (done_) return false;
    done_ = true;
    const Plan& P = *plan_;
    const std::uint16_t r_tid = 0, r_ptr = 1, r_lse = 2, r_max = 3, r_sum = 4, r_scale = 5, r_acc = 8, r_val = 12;
    emit_alu(c, Opcode::S2R, r_tid, {});
    emit_alu(c, Opcode::IMAD, r_ptr, {r_tid});
    const std::uint64_t row0 = cta_ * P.rows_per_cta;
    const std::uint64_t live_rows = std::min<std::uint64_t>(P.rows_per_cta, P.rows - row0);
    // 1. logsumexps of the rows, split by split (warp w takes splits w, w+4, ...), to shared memory
    for (std::uint32_t s = warp_; s < P.splits; s += kCombineThreads / kWarpSize) {
      const std::uint32_t mask = first_lanes_mask(live_rows);
      emit_load(c, Opcode::LDG, MemSpace::Global, LaneRows{P.lse_accum + (s * P.rows + row0) * 4, 4, kWarpSize, 0},
                mask, r_lse, 1, {r_ptr});
      emit_store(c, Opcode::STS, MemSpace::Shared, LaneRows{std::uint64_t{s} * P.rows_per_cta * 4, 4, kWarpSize, 0},
                 mask, {r_lse, r_ptr});
    }
    emit_barrier(c);
    // 2. each thread: max over its row's splits, sum of exp2, log -> the row's lse; the scales back to shared memory
    for (std::uint32_t s = 0; s < P.splits; ++s) {
      emit_load(c, Opcode::LDS, MemSpace::Shared, LaneRows{std::uint64_t{s} * P.rows_per_cta * 4, 4, kWarpSize, 0},
                first_lanes_mask(live_rows), reg(r_val + s % 4), 1, {r_ptr});
      emit_alu(c, Opcode::FADD, r_max, {r_max, reg(r_val + s % 4)});  // FMNMX
    }
    for (std::uint32_t s = 0; s < P.splits; ++s) {
      emit_alu(c, Opcode::FADD, r_scale, {reg(r_val + s % 4), r_max});
      emit_alu(c, Opcode::MUFU, r_scale, {r_scale});
      emit_alu(c, Opcode::FADD, r_sum, {r_sum, r_scale});
    }
    emit_alu(c, Opcode::MUFU, r_sum, {r_sum});  // log
    emit_alu(c, Opcode::FADD, r_sum, {r_sum, r_max});
    for (std::uint32_t s = 0; s < P.splits; ++s) {
      emit_alu(c, Opcode::FADD, r_scale, {reg(r_val + s % 4), r_sum});
      emit_alu(c, Opcode::MUFU, r_scale, {r_scale});
      emit_store(c, Opcode::STS, MemSpace::Shared, LaneRows{std::uint64_t{s} * P.rows_per_cta * 4, 4, kWarpSize, 0},
                 first_lanes_mask(live_rows), {r_scale, r_ptr});
    }
    emit_barrier(c);
    // 3. O: each thread a float4 of a row, over the splits: scale (LDS), O_split (LDG.128), 4 FFMA
    const std::uint32_t chunks_per_row = P.head_dim / 4;
    const std::uint32_t lanes_per_row = std::min<std::uint32_t>(chunks_per_row, kWarpSize);
    const std::uint64_t chunks = std::uint64_t{P.rows_per_cta} * chunks_per_row;
    for (std::uint64_t first = std::uint64_t{warp_} * kWarpSize; first < chunks; first += kCombineThreads) {
      const std::uint64_t row = first / chunks_per_row, chunk = first % chunks_per_row;
      if (row >= live_rows) continue;
      const std::uint32_t rows_here = kWarpSize / lanes_per_row;
      const std::uint32_t mask = first_lanes_mask(std::min<std::uint64_t>(live_rows - row, rows_here) * lanes_per_row);
      for (std::uint32_t s = 0; s < P.splits; ++s) {
        WarpInst& scale = emit_load(c, Opcode::LDS, MemSpace::Shared,
                                    LaneRows{(std::uint64_t{s} * P.rows_per_cta + row) * 4, 4, lanes_per_row, 4},
                                    mask, r_scale, 1, {r_ptr});
        scale.stride = 0;
        emit_load(c, Opcode::LDG, MemSpace::Global,
                  LaneRows{P.o_accum + ((s * P.rows + row0 + row) * P.head_dim + chunk * 4) * 4, kVecBytes,
                           lanes_per_row, std::uint64_t{P.head_dim} * 4},
                  mask, r_val, 4, {r_ptr});
        for (std::uint32_t e = 0; e < 4; ++e)
          emit_alu(c, Opcode::FFMA, reg(r_acc + e), {reg(r_acc + e), reg(r_val + e), r_scale});
      }
      for (std::uint32_t e = 0; e < 4; e += 2)
        emit_alu(c, Opcode::FMUL, reg(r_acc + e), {reg(r_acc + e), reg(r_acc + e + 1)});  // F2FP packs
      emit_store(c, Opcode::STG, MemSpace::Global,
                 LaneRows{P.o + (row0 + row) * P.o_row_pitch + chunk * 4 * P.elem_bytes, 4 * P.elem_bytes,
                          lanes_per_row, P.o_row_pitch},
                 mask, {r_acc, r_ptr});
    }
    c.emit(Opcode::EXIT);
    return true;
  }

 private:
  std::shared_ptr<const Plan> plan_;
  std::uint64_t cta_;
  std::uint32_t warp_;
  bool done_ = false;
};

}  // namespace

std::vector<GeneratedKernelSpec> decode_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays) {
  auto plan = std::make_shared<FwdPlan>();
  FwdPlan& P = *plan;
  P.p = p;
  P.block_m = kDecodeBlockM;
  P.block_n = p.head_dim <= 64 ? 256 : (p.head_dim <= 128 ? 128 : 64);
  P.warps = kDecodeWarps;
  P.paged = true;
  P.page_size = p.page_size;
  P.batch = p.batch;
  P.pages_per_seq = ceil_div(p.seqlen_kv, p.page_size);
  const bool swapped = p.seqlen_q == 1 && p.heads > p.kv_heads;
  const std::uint64_t rows = swapped ? p.group() : p.seqlen_q;    // query rows per (batch, head')
  const std::uint64_t heads = swapped ? p.kv_heads : p.heads;     // heads' of the grid
  const std::uint32_t m_blocks = static_cast<std::uint32_t>(ceil_div(rows, P.block_m));
  const std::uint32_t n_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_kv, P.block_n));
  const std::uint32_t sm_count = config.section("sm").u32("count");
  const std::uint32_t splits =
      num_splits_heuristic(p.batch * heads * m_blocks, std::uint64_t{sm_count} * kCtasPerSmGuess, n_blocks, kMaxSplits);
  const std::uint32_t blocks_per_split = static_cast<std::uint32_t>(ceil_div(n_blocks, splits));
  P.o_fp32 = splits > 1;
  finish_forward_plan(P, config, "attention decode");

  const std::uint64_t d = p.head_dim, eb = p.elem_bytes, kv_eb = p.kv_elem_bytes;
  const std::uint64_t q = arrays.add(p.batch * p.seqlen_q * p.heads * d * eb);
  const std::uint64_t cache_rows = p.batch * P.pages_per_seq * p.page_size;
  const RowMajorMatrix k_cache{arrays.add(cache_rows * p.kv_heads * d * kv_eb), cache_rows, p.kv_heads * d,
                               static_cast<std::uint32_t>(kv_eb)};
  const RowMajorMatrix v_cache{arrays.add(cache_rows * p.kv_heads * d * kv_eb), cache_rows, p.kv_heads * d,
                               static_cast<std::uint32_t>(kv_eb)};
  P.page_table = arrays.add(p.batch * P.pages_per_seq * 4);
  const std::uint64_t o = arrays.add(p.batch * p.seqlen_q * p.heads * d * eb);
  const std::uint64_t lse = arrays.add(p.batch * p.heads * p.seqlen_q * 4);
  const std::uint64_t total_rows = p.batch * heads * rows;
  const std::uint64_t o_accum = splits > 1 ? arrays.add(splits * total_rows * d * 4) : 0;
  const std::uint64_t lse_accum = splits > 1 ? arrays.add(splits * total_rows * 4) : 0;

  P.work = [=](std::uint64_t cta) {
    // grid (m blocks, splits, batch * heads') with splits, else (m blocks, batch, heads')
    const std::uint64_t m = cta % m_blocks;
    const std::uint64_t y = cta / m_blocks % (splits > 1 ? splits : p.batch);
    const std::uint64_t z = cta / m_blocks / (splits > 1 ? splits : p.batch);
    const std::uint64_t split = splits > 1 ? y : 0;
    const std::uint64_t b = splits > 1 ? z / heads : y, h = splits > 1 ? z % heads : z;
    FwdCtaWork w;
    if (swapped) {  // rows = the group's query heads of token 0
      w.q = RowMajorMatrix{q + (b * p.heads + h * p.group()) * d * eb, rows, d, static_cast<std::uint32_t>(eb)};
      w.q_col0 = 0;
    } else {
      w.q = RowMajorMatrix{q + b * p.seqlen_q * p.heads * d * eb, p.seqlen_q, p.heads * d, static_cast<std::uint32_t>(eb)};
      w.q_col0 = h * d;
    }
    w.q_row0 = m * kDecodeBlockM;
    w.k = k_cache;
    w.v = v_cache;
    w.kv_col0 = (swapped ? h : h / p.group()) * d;
    w.kv_batch = b;
    w.kv_len = p.seqlen_kv;
    w.n_begin = static_cast<std::uint32_t>(std::min<std::uint64_t>(n_blocks, split * blocks_per_split));
    w.n_end = static_cast<std::uint32_t>(std::min<std::uint64_t>(n_blocks, (split + 1) * blocks_per_split));
    if (p.causal && !swapped) {
      const std::uint64_t limit = m * kDecodeBlockM + p.seqlen_kv - p.seqlen_q;  // seqlen_q <= seqlen_kv (checked)
      const std::uint64_t last = limit + kDecodeBlockM - 1;
      w.n_end = std::min<std::uint32_t>(w.n_end, static_cast<std::uint32_t>(std::min<std::uint64_t>(n_blocks, last / P.block_n + 1)));
      w.n_begin = std::min(w.n_begin, w.n_end);
      w.causal_limit = limit;
    }
    const std::uint64_t row_id = (b * heads + h) * rows;  // of the (batch, head') rows, for the split outputs
    if (splits > 1) {
      w.o = RowMajorMatrix{o_accum + (split * total_rows + row_id) * d * 4, rows, d, 4};
      w.o_col0 = 0;
      w.lse = lse_accum + (split * total_rows + row_id + m * kDecodeBlockM) * 4;
    } else {
      w.o = swapped ? RowMajorMatrix{o + (b * p.heads + h * p.group()) * d * eb, rows, d, static_cast<std::uint32_t>(eb)}
                    : RowMajorMatrix{o + b * p.seqlen_q * p.heads * d * eb, p.seqlen_q, p.heads * d,
                                     static_cast<std::uint32_t>(eb)};
      w.o_col0 = swapped ? 0 : h * d;
      w.lse = lse + (row_id + m * kDecodeBlockM) * 4;
    }
    w.o_row0 = m * kDecodeBlockM;
    w.lse_rows = rows - std::min(rows, m * kDecodeBlockM);
    return w;
  };
  const Dim3 grid = splits > 1 ? Dim3{m_blocks, splits, static_cast<std::uint32_t>(p.batch * heads)}
                               : Dim3{m_blocks, static_cast<std::uint32_t>(p.batch), static_cast<std::uint32_t>(heads)};
  // With splits, grid.z is batch x heads' (without, grid.y and grid.z are batch and heads', checked with the keys).
  if (splits > 1 && p.batch * heads > kMaxGridDimYZ)
    throw InputError(std::string("attention decode: batch x ") + (swapped ? "kv_heads" : "heads") + " (" +
                     std::to_string(p.batch * heads) + ", the grid.z of " +
                     std::to_string(splits) + " KV splits) above CUDA's grid.z limit of " + std::to_string(kMaxGridDimYZ));
  const std::string name = "warpsim_flash_fwd_splitkv_paged_" + p.types_tag() + "_hdim" + std::to_string(d) + "_64x" +
                           std::to_string(P.block_n) + "_splits" + std::to_string(splits) + "_page" +
                           std::to_string(p.page_size);
  std::vector<GeneratedKernelSpec> out;
  out.push_back(forward_kernel_spec(plan, grid, name, static_cast<std::uint64_t>(p.forward_flops()), config));

  if (splits > 1) {
    auto combine = std::make_shared<CombineWarp::Plan>();
    combine->rows_per_cta = d % 128 == 0 ? 4 : 8;  // flash-attention: kBlockM = 4 (d % 128 == 0), 8 (d % 64 == 0)
    combine->splits = splits;
    combine->head_dim = static_cast<std::uint32_t>(d);
    combine->elem_bytes = p.elem_bytes;
    combine->rows = total_rows;
    combine->lse_accum = lse_accum;
    combine->o_accum = o_accum;
    combine->o = o;
    combine->o_row_pitch = d * eb;  // rows (batch, head', row) in order: the output's (batch, token, head) rows
    GeneratedKernelSpec spec;
    spec.info.name = "warpsim_flash_fwd_splitkv_combine_" + p.dtype_name + "_hdim" + std::to_string(d) + "_splits" +
                     std::to_string(splits);
    spec.info.grid = Dim3{static_cast<std::uint32_t>(ceil_div(total_rows, combine->rows_per_cta)), 1, 1};
    spec.info.block = Dim3{kCombineThreads, 1, 1};
    spec.info.registers_per_thread = 32;
    spec.info.shared_mem_bytes = splits * combine->rows_per_cta * 4;
    spec.info.target_arch = config.section("gpu").str("arch");
    std::shared_ptr<const CombineWarp::Plan> shared = combine;
    spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
      return std::make_unique<CombineWarp>(shared, cta, warp);
    };
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace warpsim::synth::attn
