// The `attention` synthesizer: keys, checks, FLOP and byte counts, the shared warp-GEMM pieces and the registration.
// The kernels are in attention_fa2.cpp, attention_fa3.cpp and attention_decode.cpp.
#include "traces/synth/attention.h"
#include "sim/core/types.h"

#include <algorithm>
#include <cmath>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "traces/synth/row_reduction.h"

namespace warpsim::synth::attn {

double AttnProblem::forward_flops() const {
  const double f = 4.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seqlen_q) *
                   static_cast<double>(seqlen_kv) * static_cast<double>(head_dim);
  return causal ? f / 2 : f;
}

double AttnProblem::flops() const {
  if (direction == "bwd") return 2.5 * forward_flops();
  if (direction == "fwd_bwd") return 3.5 * forward_flops();
  return forward_flops();
}

double AttnProblem::kv_bytes() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(seqlen_kv) * static_cast<double>(kv_heads) *
         static_cast<double>(head_dim) * kv_elem_bytes;
}

namespace {

[[noreturn]] void bad_key(const std::string& key, const std::string& what) {
  throw InputError("attention key '" + key + "': " + what);
}

// Every array stays below 2^40 bytes, as the GEMM's matrices do: address computations stay far from overflow.
constexpr std::uint64_t kMaxArrayBytes = std::uint64_t{1} << 40;

// Bytes of an array of the product of `factors`; an InputError naming `keys` when it reaches kMaxArrayBytes (the
// product is taken without wrapping).
std::uint64_t checked_array_bytes(const std::string& array, const std::string& keys,
                                  std::initializer_list<std::uint64_t> factors) {
  std::uint64_t bytes = 1;
  bool wrapped = false;
  for (std::uint64_t f : factors) wrapped = wrapped || __builtin_mul_overflow(bytes, f, &bytes);
  if (wrapped || bytes >= kMaxArrayBytes)
    throw InputError("attention keys " + keys + ": the " + array + " would take " +
                     (wrapped ? std::string("more than 2^64") : std::to_string(bytes)) +
                     " bytes; each array must stay below 2^40 bytes");
  return bytes;
}

}  // namespace

AttnProblem attention_problem(const SynthArgs& args) {
  AttnProblem p;
  p.batch = args.u64("batch");
  p.heads = args.u64("heads");
  p.kv_heads = args.u64("kv_heads") == 0 ? p.heads : args.u64("kv_heads");
  p.seqlen_q = args.u64("seqlen_q");
  p.seqlen_kv = args.u64("seqlen_kv") == 0 ? p.seqlen_q : args.u64("seqlen_kv");
  p.head_dim = args.u64("head_dim");
  const std::string& causal = args.text("causal");
  if (causal != "true" && causal != "false") bad_key("causal", "expected true or false, got '" + causal + "'");
  p.causal = causal == "true";
  p.dtype_name = args.text("dtype");
  p.dtype = p.dtype_name == "bf16" ? DType::BF16 : DType::F16;
  p.variant = args.text("variant");
  p.direction = args.text("direction");
  const std::string& kv_dtype = args.text("kv_dtype");
  p.kv_dtype_name = kv_dtype == "same" ? p.dtype_name : kv_dtype;
  p.kv_elem_bytes = kv_dtype == "fp8" ? 1 : p.elem_bytes;
  if (p.kv_fp8() && p.direction != "fwd")
    bad_key("kv_dtype", "an fp8 K/V cache is built for the forward kernels only (decode, fa2 fwd, fa3 fwd), not for " +
                            p.variant + " " + p.direction);
  p.page_size = args.u64("page_size");
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    bad_key("head_dim", "expected 64, 128 or 256 (the head dimensions built), got " + std::to_string(p.head_dim));
  if (p.kv_heads > p.heads || p.heads % p.kv_heads != 0)
    bad_key("kv_heads", "must divide heads (" + std::to_string(p.heads) + ") for grouped-query attention, got " +
                            std::to_string(p.kv_heads));
  if (p.batch > kMaxGridDimYZ)
    bad_key("batch", "at most " + std::to_string(kMaxGridDimYZ) + " (CUDA's grid.y limit), got " + std::to_string(p.batch));
  if (p.heads > kMaxGridDimYZ)
    bad_key("heads", "at most " + std::to_string(kMaxGridDimYZ) + " (CUDA's grid.z limit), got " + std::to_string(p.heads));
  // Q and O, then K and V (the decode variant's paged cache holds whole pages); the other arrays are bounded by
  // these (AttnArrays::add checks them too).
  checked_array_bytes("Q tensor", "batch x seqlen_q x heads x head_dim",
                      {p.batch, p.seqlen_q, p.heads, p.head_dim, p.elem_bytes});
  std::uint64_t kv_tokens = p.seqlen_kv;
  if (p.variant == "decode" && p.page_size > 0) {
    kv_tokens = p.seqlen_kv / p.page_size * p.page_size;
    if (kv_tokens < p.seqlen_kv && __builtin_add_overflow(kv_tokens, p.page_size, &kv_tokens)) kv_tokens = ~std::uint64_t{0};
  }
  checked_array_bytes(p.variant == "decode" ? "K cache (whole pages)" : "K tensor",
                      p.variant == "decode" ? "batch x seqlen_kv (in pages of page_size) x kv_heads x head_dim"
                                            : "batch x seqlen_kv x kv_heads x head_dim",
                      {p.batch, kv_tokens, p.kv_heads, p.head_dim, p.kv_elem_bytes});
  if (p.variant == "decode") {
    if (p.direction != "fwd")
      bad_key("direction", "the decode variant is forward only (inference), got " + p.direction);
    if (p.page_size % 16 != 0)
      bad_key("page_size", "expected a multiple of 16 tokens (a 16-token page keeps every warp copy in one page), "
                           "got " + std::to_string(p.page_size));
    if (p.causal && p.seqlen_q > p.seqlen_kv)
      bad_key("seqlen_q", "decode with causal needs seqlen_q <= seqlen_kv (the new tokens follow the cache)");
  }
  return p;
}

std::uint64_t AttnArrays::add(std::uint64_t bytes) {
  // attention_problem() bounds Q and K/V below 2^40 bytes; the arrays derived from them (gradients, fp32
  // accumulators, per-split outputs) are at most 2^17 times those, so their products did not wrap.
  if (bytes >= kMaxArrayBytes)
    throw InputError("attention keys batch, heads, seqlen_q, seqlen_kv, head_dim: an array of " + std::to_string(bytes) +
                     " bytes; each array must stay below 2^40 bytes");
  constexpr std::uint64_t kAlign = std::uint64_t{1} << 20;
  const std::uint64_t base = next_;
  next_ = (next_ + std::max<std::uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  return base;
}

void WarpGemm::build(const SmemOperand& a_op, std::uint32_t m0, std::uint32_t m_stride, const SmemOperand& b_op,
                     std::uint32_t n0, std::uint32_t n_stride) {
  // Non-K-major A: rows are M, chunks along K (A fragment order); non-K-major B: rows are N, chunks along K (two
  // n8 blocks per ldmatrix.x4); K-major (.trans): rows are K, chunks along M or N.
  auto offsets = [](const SmemOperand& op, std::uint32_t mn0, std::uint32_t k0, LdsmOrder order) {
    return op.k_major ? ldmatrix_x4_offsets(op.offset, k0, mn0 / 8, op.chunks_per_row, LdsmOrder::RowHalvesFirst)
                      : ldmatrix_x4_offsets(op.offset, mn0, k0 / 8, op.chunks_per_row, order);
  };
  a.clear();
  b.clear();
  if (!a_in_regs)
    for (std::uint32_t mi = 0; mi < m_blocks; ++mi)
      for (std::uint32_t ks = 0; ks < k_steps; ++ks)
        a.push_back(offsets(a_op, m0 + mi * m_stride, ks * 16, LdsmOrder::RowHalvesFirst));
  for (std::uint32_t p = 0; p < n_pairs; ++p)
    for (std::uint32_t ks = 0; ks < k_steps; ++ks)
      b.push_back(offsets(b_op, n0 + p * n_stride, ks * 16, LdsmOrder::ChunksFirst));
}

void emit_warp_gemm(InstChunk& c, const WarpGemm& g, DType dtype, std::uint64_t smem_base, std::uint16_t acc,
                    FragmentRing& frags, std::uint16_t smem_addr, const ARegs& a_regs,
                    const std::function<void(std::uint32_t)>& before_step) {
  // Fragment registers of two k-steps (this one and the next), at most 16 m blocks and 16 n pairs.
  constexpr std::uint32_t kMaxBlocks = 16;
  WARPSIM_ASSERT(g.m_blocks <= kMaxBlocks && g.n_pairs <= kMaxBlocks, "warp GEMM tile too large");
  std::array<std::array<std::uint16_t, kMaxBlocks>, 2> a_frag{}, b_frag{};
  auto load = [&](std::uint32_t ks) {
    const std::uint32_t buf = ks % 2;
    for (std::uint32_t mi = 0; mi < g.m_blocks; ++mi) {
      if (g.a_in_regs) {
        a_frag[buf][mi] = a_regs.at(mi, ks);
        continue;
      }
      a_frag[buf][mi] = frags.take(kMmaARegs);
      emit_ldmatrix_x4(c, smem_base, g.a[mi * g.k_steps + ks].data(), a_frag[buf][mi], smem_addr);
    }
    for (std::uint32_t p = 0; p < g.n_pairs; ++p) {
      b_frag[buf][p] = frags.take(2 * kMmaBRegs);
      emit_ldmatrix_x4(c, smem_base, g.b[p * g.k_steps + ks].data(), b_frag[buf][p], smem_addr);
    }
  };
  load(0);
  for (std::uint32_t ks = 0; ks < g.k_steps; ++ks) {
    if (before_step) before_step(ks);
    if (ks + 1 < g.k_steps) load(ks + 1);
    const std::uint32_t buf = ks % 2;
    for (std::uint32_t mi = 0; mi < g.m_blocks; ++mi)
      for (std::uint32_t ni = 0; ni < g.n_blocks(); ++ni)
        emit_hmma(c, dtype, kMmaSyncShape, g.acc_block(acc, mi, ni), kMmaAccRegs, a_frag[buf][mi],
                  static_cast<std::uint16_t>(b_frag[buf][ni / 2] + (ni % 2) * kMmaBRegs));
  }
}

void emit_tile_copy(InstChunk& c, const CoalescedTileCopy& copy, const RowMajorMatrix& m, std::uint64_t row0,
                    std::uint64_t col0, std::uint32_t warp, std::uint16_t gptr, std::uint16_t sptr) {
  const std::uint32_t chunk_elems = kVecBytes / m.elem_bytes;
  for (std::uint32_t j = 0; j < copy.copies_per_thread; ++j) {
    const CoalescedTileCopy::Chunk at = copy.first_chunk(j, warp);
    const std::uint64_t row = row0 + at.row, col = col0 + std::uint64_t{at.chunk} * chunk_elems;
    const std::uint32_t mask = matrix_lane_mask(m, row, col, copy.lanes_per_row, chunk_elems);
    if (mask == 0) {
      c.skip();
      continue;
    }
    emit_async_copy(c, matrix_lanes(m, row, col, copy.lanes_per_row, chunk_elems), mask, gptr, sptr);
  }
}

void emit_softmax_statistics(InstChunk& c, const SoftmaxRows& r, bool first) {
  const std::uint32_t rows = r.rows();
  for (std::uint32_t mi = 0; mi < r.m_blocks; ++mi)
    for (std::uint32_t ni = 0; ni < r.n_blocks; ++ni)
      for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
        const std::uint16_t m = reg(r.max + 2 * mi + e / 2);
        emit_alu(c, Opcode::FADD, m, {m, r.s_reg(mi, ni, e)});
      }
  emit_warp_allreduce(c, WarpReduction{r.max, r.scratch, rows, Opcode::FADD, rows}, 4);
  if (!first) {  // factor = exp2((max_old - max_new) * scale); l *= factor
    for (std::uint32_t row = 0; row < rows; ++row) {
      const std::uint16_t f = reg(r.scratch + row);
      emit_alu(c, Opcode::FADD, f, {reg(r.max + row)});
      emit_alu(c, Opcode::FMUL, f, {f});
      emit_alu(c, Opcode::MUFU, f, {f});
      emit_alu(c, Opcode::FMUL, reg(r.sum + row), {reg(r.sum + row), f});
    }
  } else {
    c.skip(4 * rows);
  }
  for (std::uint32_t row = 0; row < rows; ++row) emit_alu(c, Opcode::FMUL, reg(r.max + row), {reg(r.max + row)});
}

void emit_softmax_exp(InstChunk& c, const SoftmaxRows& r, std::uint32_t ni_begin, std::uint32_t ni_end) {
  // P = exp2(S * scale - max_scaled) (FFMA + MUFU.EX2), row sum (FADD)
  for (std::uint32_t mi = 0; mi < r.m_blocks; ++mi)
    for (std::uint32_t ni = ni_begin; ni < ni_end; ++ni)
      for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
        const std::uint16_t s = r.s_reg(mi, ni, e), row = static_cast<std::uint16_t>(2 * mi + e / 2);
        emit_alu(c, Opcode::FFMA, s, {s, reg(r.max + row)});
        emit_alu(c, Opcode::MUFU, s, {s});
        emit_alu(c, Opcode::FADD, reg(r.sum + row), {reg(r.sum + row), s});
      }
}

void emit_online_softmax(InstChunk& c, const SoftmaxRows& r, bool first) {
  emit_softmax_statistics(c, r, first);
  emit_softmax_exp(c, r, 0, r.n_blocks);
}

void emit_rescale_rows(InstChunk& c, const SoftmaxRows& r, std::uint16_t acc, std::uint32_t acc_blocks_n, bool first) {
  if (first) {
    c.skip(r.m_blocks * acc_blocks_n * kMmaAccRegs);
    return;
  }
  for (std::uint32_t mi = 0; mi < r.m_blocks; ++mi)
    for (std::uint32_t ni = 0; ni < acc_blocks_n; ++ni)
      for (std::uint32_t e = 0; e < kMmaAccRegs; ++e) {
        const std::uint16_t o = reg(acc + (mi * acc_blocks_n + ni) * kMmaAccRegs + e);
        emit_alu(c, Opcode::FMUL, o, {o, reg(r.scratch + 2 * mi + e / 2)});
      }
}

void emit_pack_16bit(InstChunk& c, std::uint16_t src, std::uint32_t regs, std::uint16_t dst, std::uint32_t dst_step) {
  for (std::uint32_t e = 0; e < regs; e += 2)
    emit_alu(c, Opcode::FMUL, reg(dst + e / 2 * dst_step), {reg(src + e), reg(src + e + 1)});
}

void emit_lse_store(InstChunk& c, std::uint64_t lse, std::uint64_t row, std::uint64_t rows, std::uint16_t lse_reg,
                    std::uint16_t ptr) {
  for (std::uint32_t half = 0; half < 2; ++half) {
    const std::uint64_t r = row + half * 8;
    std::uint32_t mask = 0;
    for (std::uint32_t l = 0; l < kWarpSize; l += 4)
      if (r + l / 4 < rows) mask |= 1u << l;
    if (mask == 0) {
      c.skip();
      continue;
    }
    emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{lse + r * 4, 4, 4, 4}, mask, {reg(lse_reg + half), ptr});
  }
}

std::uint32_t kernel_registers(std::uint32_t used, const Config& config) {
  const std::uint32_t max = config.section("sm").u32("max_registers_per_thread");
  return std::min(max, (used + 7u) / 8u * 8u);
}

std::uint64_t shared_memory_per_cta(const Config& config) { return config.section("sm").u64("shared_memory_per_cta"); }

std::uint32_t num_splits_heuristic(std::uint64_t tiles, std::uint64_t slots, std::uint32_t n_blocks,
                                   std::uint32_t max_splits) {
  // flash-attention: if the tiles almost fill the SMs, no split; else the smallest eligible split whose wave
  // efficiency n_waves / ceil(n_waves) is within 85% of the best; a split is eligible when it changes the number
  // of KV blocks per split.
  if (static_cast<double>(tiles) >= 0.8 * static_cast<double>(slots)) return 1;
  max_splits = static_cast<std::uint32_t>(std::min<std::uint64_t>({max_splits, slots, n_blocks}));
  auto eligible = [&](std::uint32_t s) { return s == 1 || ceil_div(n_blocks, s) != ceil_div(n_blocks, s - 1); };
  std::vector<double> efficiency(max_splits + 1, 0.0);
  double best = 0;
  for (std::uint32_t s = 1; s <= max_splits; ++s) {
    if (!eligible(s)) continue;
    const double waves = static_cast<double>(tiles * s) / static_cast<double>(slots);
    efficiency[s] = waves / std::ceil(waves);
    best = std::max(best, efficiency[s]);
  }
  for (std::uint32_t s = 1; s <= max_splits; ++s)
    if (eligible(s) && efficiency[s] >= 0.85 * best) return s;
  return 1;
}

namespace {

std::unique_ptr<TraceSource> make_attention(const SynthArgs& args, const Config& config) {
  const AttnProblem p = attention_problem(args);
  AttnArrays arrays;
  std::vector<GeneratedKernelSpec> kernels;
  auto append = [&kernels](std::vector<GeneratedKernelSpec> more) {
    for (GeneratedKernelSpec& k : more) kernels.push_back(std::move(k));
  };
  if (p.variant == "decode") {
    append(decode_kernels(p, config, arrays));
  } else if (p.variant == "fa3") {
    append(fa3_forward_kernels(p, config, arrays));
  } else {
    if (p.direction != "bwd") append(fa2_forward_kernels(p, config, arrays));
    if (p.direction != "fwd") append(fa2_backward_kernels(p, config, arrays));
  }
  std::string description = "synthesized attention " + p.variant + " " + p.direction + " (" +
                            std::to_string(p.batch) + "x" + std::to_string(p.heads) + "/" +
                            std::to_string(p.kv_heads) + " heads, " + std::to_string(p.seqlen_q) + "x" +
                            std::to_string(p.seqlen_kv) + ", d" + std::to_string(p.head_dim) +
                            (p.causal ? ", causal" : "") + "):";
  for (const GeneratedKernelSpec& k : kernels) description += " " + k.info.name + ";";
  return std::make_unique<GeneratedTrace>(std::move(kernels), description);
}

std::map<std::string, double> attention_metrics(const SynthArgs& args, const Config&, const WorkloadTiming& t) {
  const AttnProblem p = attention_problem(args);
  const double seconds = t.time_us * 1e-6;
  return {{"tflops", p.flops() / seconds / 1e12}, {"kv_bandwidth_gbps", p.kv_bytes() / seconds / 1e9}};
}

SynthesizerInfo attention_synthesizer() {
  SynthesizerInfo info;
  info.name = "attention";
  info.description =
      "scaled dot-product attention: FlashAttention-2 for sm_80 (variant fa2: forward, backward or both), "
      "FlashAttention-3 for sm_90 (variant fa3: forward; TMA, warpgroup MMA, warp specialisation) and FlashDecoding "
      "split-KV over a paged KV cache (variant decode) (traces/synth/README.md, \"Attention\")";
  constexpr std::uint64_t kMaxLen = std::uint64_t{1} << 24;
  Schema s("synth", "attention", info.description);
  s.uint("batch", "sequences", 1, "batch size", 1, 1ull << 20)
      .uint("heads", "heads", std::nullopt, "query heads", 1, 1ull << 20)
      .uint("kv_heads", "heads", 0, "key/value heads (grouped-query attention; must divide heads); 0: = heads", 0,
            1ull << 20)
      .uint("seqlen_q", "tokens", std::nullopt, "query tokens per sequence", 1, kMaxLen)
      .uint("seqlen_kv", "tokens", 0, "key/value tokens per sequence; 0: = seqlen_q", 0, kMaxLen)
      .uint("head_dim", "elements", std::nullopt, "head dimension: 64, 128 or 256", 1, 1024)
      .boolean("causal", false, "causal mask (aligned to the bottom right when seqlen_q != seqlen_kv, as flash-attention)")
      .choice("dtype", {"fp16", "bf16"}, std::string("fp16"), "element type of q, k, v, o (fp32 accumulation)")
      .choice("kv_dtype", {"same", "fp8"}, std::string("same"),
              "element type of k and v: same (dtype), or fp8 (e4m3: an fp8 KV cache; decode and fa2 fwd dequantize it "
              "to dtype through shared memory before the MMAs, fa3 fwd takes q in fp8 too and runs fp8 warpgroup MMAs, "
              "O in dtype)")
      .choice("variant", {"fa2", "fa3", "decode"}, std::string("fa2"),
              "fa2: FlashAttention-2 (sm_80 kernel, also on sm_90); fa3: FlashAttention-3 (sm_90, forward); decode: "
              "split-KV over a paged cache")
      .choice("direction", {"fwd", "bwd", "fwd_bwd"}, std::string("fwd"),
              "fwd: forward kernel; bwd: the backward's kernels; fwd_bwd: both, in one trace (fa2 only)")
      .uint("page_size", "tokens", 256, "decode: tokens per page of the paged KV cache (a multiple of 16)", 16,
            1ull << 20);
  info.keys = s.params();
  info.factory = make_attention;
  info.metrics = {
      {"tflops", "TFLOP/s",
       "the FlashAttention papers' count (4*batch*heads*seqlen_q*seqlen_kv*head_dim forward, /2 causal; backward "
       "2.5x, fwd_bwd 3.5x) / simulated time of all kernels"},
      {"kv_bandwidth_gbps", "GB/s", "bytes of K and V read once / simulated time of all kernels (decode's figure)"}};
  info.derive = attention_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::attn

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(attention, synth::attn::attention_synthesizer());
}
