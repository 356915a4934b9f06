#include "traces/synth/ops/row_norm.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/ops/op_common.h"
#include "traces/synth/row_reduction.h"

namespace warpsim::synth::ops {
namespace {

constexpr std::uint32_t kThreadsX = kWarpSize;  // block (32, 4): layer_norm_kernel.cu, threads(warp_size, num_threads() / warp_size)
constexpr std::uint32_t kWarps = 4;
constexpr std::uint32_t kNormThreads = kThreadsX * kWarps;
constexpr std::uint32_t kNormVecElems = 4;          // vec_size
// vLLM's rms_norm / fused_add_rms_norm (csrc/layernorm_kernels.cu): one block per token of min(hidden, 1024) threads
// below 256 tokens, min(hidden, 256) from 256 on ("smaller blocks for occupancy"); 8-element (16-byte) vectors of
// 16-bit types when hidden % 8 == 0 (_f16Vec<scalar_t, 8>), else scalars.
constexpr std::uint32_t kVllmBlockFewTokens = 1024, kVllmBlockManyTokens = 256, kVllmManyTokens = 256;
constexpr std::uint32_t kVllmVecElems = 8;

// Per element of pass 1. Welford (cuWelfordOnlineSum): delta = x - mean, count + 1, 1/count (an IEEE reciprocal),
// mean += delta/count, m2 += delta * (x - mean): 4 fp32 + a division. RMSNorm: one FFMA (sum of squares).
constexpr MathCost kWelfordUpdate = fp32_ops(4) + kDivision;
constexpr MathCost kSumSquares = fp32_ops(1);
// Welford's combine of two partials per shuffle step (cuWelfordCombine): delta, count sum, the division
// b.count/count (4 FFMA + MUFU.RCP), mean, and M2 (FADD, 2 FMUL, FFMA): 11 fp32 + 1 MUFU over (mean, m2, count).
constexpr std::uint32_t kWelfordCombineFp32 = 11;
// rstd = rsqrt(m2 / N + eps) (or sumsq / N + eps): FMUL, FADD, MUFU.RSQ.
constexpr MathCost kRstd{2, 0, 1};

struct RowNormPlan {
  NormKind kind = NormKind::LayerNorm;
  OpDType type;
  bool vllm = false;      // vLLM's kernel (else PyTorch's block of 32 x 4 threads)
  bool residual = false;  // vLLM's fused_add_rms_norm: residual += x first, normalise the sum
  std::uint32_t threads = kNormThreads, vec = kNormVecElems;  // per block; elements per access
  std::uint64_t rows = 0, cols = 0, vectors = 0;  // vectors = cols / vec per row
  bool affine = true;
  std::uint32_t iterations = 0;                   // per thread: ceil(vectors / threads)
  std::uint64_t x = 0, y = 0, gamma = 0, beta = 0, mean = 0, rstd = 0, res = 0;
  std::uint32_t stat_values = 1;                  // registers of the statistic: 3 (Welford) or 1
  std::uint16_t r_tid = 0, r_addr = 0, r_count = 0, r_stat = 0, r_scratch = 0, r_vec = 0, r_vals = 0, r_gamma = 0,
                r_beta = 0, r_res = 0;
  std::uint32_t warps() const { return (threads + kWarpSize - 1) / kWarpSize; }
  // The CTA reduction's tree: cub's BlockReduce takes any warp count, the emitted tree a power of two.
  std::uint32_t reduction_warps() const {
    std::uint32_t w = 1;
    while (w < warps()) w *= 2;
    return w;
  }
};

class NormWarp final : public PhasedWarp {
 public:
  NormWarp(std::shared_ptr<const RowNormPlan> p, std::uint64_t row, std::uint32_t warp)
      : p_(std::move(p)), row_(row), warp_(warp) {
    set_phases({straight(), loop(p_->iterations), straight(), loop(p_->iterations), straight()});
  }

 private:
  enum : std::uint32_t { kSetup, kStats, kReduce, kNormalise, kEnd };

  void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t j) override {
    const RowNormPlan& p = *p_;
    switch (phase) {
      case kSetup:
        emit_alu(c, Opcode::S2R, p.r_tid, {});
        emit_alu(c, Opcode::S2R, reg(p.r_tid + 1), {});
        for (std::uint32_t a = 0; a < 4; ++a) emit_alu(c, Opcode::IMAD, reg(p.r_addr + a), {p.r_tid, reg(p.r_tid + 1)});
        break;
      case kStats: {
        const std::uint32_t mask = vector_mask(j);
        if (mask == 0) break;  // lanes past the row's end left the loop
        const std::uint32_t regs = packed_regs(p.type, p.vec);
        emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.x, row_ * p.cols, j), mask, p.r_vec, regs, {p.r_addr});
        if (p.residual) {  // z = x + residual in the storage type (packed HADD2), written back to residual
          emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.res, row_ * p.cols, j), mask, p.r_res, regs, {reg(p.r_addr + 3)});
          for (std::uint32_t w = 0; w < regs; ++w)
            emit_alu(c, p.type.is_16bit() ? Opcode::HADD2 : Opcode::FADD, reg(p.r_vec + w), {reg(p.r_vec + w), reg(p.r_res + w)});
        }
        emit_unpack(c, p.type, p.vec, p.r_vec, vals());
        for (std::uint32_t e = 0; e < p.vec; ++e) {
          emit_math(c, p.kind == NormKind::LayerNorm ? kWelfordUpdate : kSumSquares, reg(vals() + e));
          emit_alu(c, Opcode::FFMA, p.r_stat, {p.r_stat, reg(vals() + e)});
        }
        if (p.residual)
          emit_store(c, Opcode::STG, MemSpace::Global, lanes(p.res, row_ * p.cols, j), mask, {p.r_vec, reg(p.r_addr + 3)});
        emit_loop_tail(c, p.r_count, kPredicate);
        break;
      }
      case kReduce: {
        const bool welford = p.kind == NormKind::LayerNorm;
        const WarpReduction warp_reduce{p.r_stat, p.r_scratch, p.stat_values, welford ? Opcode::FFMA : Opcode::FADD,
                                        welford ? kWelfordCombineFp32 : 1, welford ? 1u : 0u};
        emit_cta_allreduce(c, CtaReduction{warp_reduce, p.reduction_warps(), 0, reg(p.r_addr + 3)}, warp_);
        emit_math(c, kRstd, p.r_stat);
        if (warp_ == 0 && !p.vllm) {  // thread 0 writes the row's statistics: mean and rstd (LayerNorm), rstd (RMSNorm)
          if (p.kind == NormKind::LayerNorm)
            emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{p.mean + row_ * 4, 4, kWarpSize, 0}, 1u,
                       {p.r_stat, reg(p.r_addr + 3)});
          emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{p.rstd + row_ * 4, 4, kWarpSize, 0}, 1u,
                     {p.r_stat, reg(p.r_addr + 3)});
        }
        break;
      }
      case kNormalise: {
        const std::uint32_t mask = vector_mask(j);
        if (mask == 0) break;
        const std::uint32_t regs = packed_regs(p.type, p.vec);
        // vLLM's fused kernel normalises the sum it stored in residual, and writes the result over x.
        const std::uint64_t in = p.residual ? p.res : p.x, out = p.residual ? p.x : p.y;
        emit_load(c, Opcode::LDG, MemSpace::Global, lanes(in, row_ * p.cols, j), mask, p.r_vec, regs, {p.r_addr});
        if (p.affine) {
          emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.gamma, 0, j), mask, p.r_gamma, regs, {reg(p.r_addr + 1)});
          if (p.kind == NormKind::LayerNorm)
            emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.beta, 0, j), mask, p.r_beta, regs, {reg(p.r_addr + 1)});
        }
        emit_unpack(c, p.type, p.vec, p.r_vec, vals());
        for (std::uint32_t e = 0; e < p.vec; ++e) {
          const std::uint16_t v = reg(vals() + e);
          if (p.kind == NormKind::LayerNorm) emit_alu(c, Opcode::FADD, v, {v, p.r_stat});      // x - mean
          emit_alu(c, Opcode::FMUL, v, {v, p.r_stat});                                       // * rstd
          if (p.affine && !p.vllm) {  // * gamma (+ beta), in fp32
            const std::uint32_t word = e * p.type.bytes / 4;
            emit_alu(c, Opcode::FFMA, v, {v, reg(p.r_gamma + word), reg(p.r_beta + word)});
          }
        }
        emit_pack(c, p.type, p.vec, vals(), p.r_vec);
        if (p.affine && p.vllm)  // _f16Vec's *= weight: packed in the storage type (fp32: one FMUL per element)
          for (std::uint32_t w = 0; w < regs; ++w)
            emit_alu(c, p.type.is_16bit() ? Opcode::HFMA2 : Opcode::FMUL, reg(p.r_vec + w), {reg(p.r_vec + w), reg(p.r_gamma + w)});
        emit_store(c, Opcode::STG, MemSpace::Global, lanes(out, row_ * p.cols, j), mask, {p.r_vec, reg(p.r_addr + 2)});
        emit_loop_tail(c, p.r_count, kPredicate);
        break;
      }
      default:
        c.emit(Opcode::EXIT);
    }
  }

  std::uint16_t vals() const { return p_->type.is_16bit() ? p_->r_vals : p_->r_vec; }
  // Iteration j of warp w: vectors j*threads + w*32 + lane of the row (element offset `first` of the array).
  std::uint64_t first_vector(std::uint32_t j) const { return std::uint64_t{j} * p_->threads + std::uint64_t{warp_} * kWarpSize; }
  LaneRows lanes(std::uint64_t array, std::uint64_t first, std::uint32_t j) const {
    const std::uint32_t lane_bytes = p_->vec * p_->type.bytes;
    return LaneRows{array + (first + first_vector(j) * p_->vec) * p_->type.bytes, lane_bytes, kWarpSize, 0};
  }
  // Lanes with a vector below the row's end. (A block of fewer threads than a multiple of 32 is vLLM's block of
  // `cols` threads, which has no more vectors than threads: the row's end also ends the block's last warp.)
  std::uint32_t vector_mask(std::uint32_t j) const {
    const std::uint64_t first = first_vector(j);
    if (first >= p_->vectors) return 0;
    return first_lanes_mask(p_->vectors - first);
  }

  std::shared_ptr<const RowNormPlan> p_;
  std::uint64_t row_;
  std::uint32_t warp_;
};

const char* kind_name(NormKind kind) { return kind == NormKind::LayerNorm ? "layernorm" : "rmsnorm"; }

}  // namespace

std::vector<ParamSpec> row_norm_keys(NormKind kind, const std::string& description) {
  constexpr std::uint64_t kMaxRows = (std::uint64_t{1} << 31) - 1;  // one block per row: CUDA's grid.x limit
  Schema s("synth", kind_name(kind), description);
  s.uint("rows", "rows", std::nullopt, "rows (tokens) normalised independently", 1, kMaxRows)
      .uint("cols", "elements", std::nullopt, "normalised dimension (hidden size); a multiple of 4 for PyTorch's kernel", 4,
            std::uint64_t{1} << 24);
  declare_dtype(s);
  s.choice("elementwise_affine", {"true", "false"}, "true",
           kind == NormKind::LayerNorm ? "scale by gamma and add beta (read once per column chunk)"
                                       : "scale by gamma (read once per column chunk)");
  if (kind == NormKind::RmsNorm) {
    s.choice("kernel", {"pytorch", "vllm"}, "pytorch",
             "pytorch: a block of 32 x 4 threads per row, 4-element vectors (layer_norm_kernel.cu's shape); vllm: vLLM's "
             "rms_norm_kernel, a block of min(cols, 1024) threads per row (256 from 256 rows on), 8-element vectors "
             "of 16-bit types, no statistics written");
    s.choice("residual", {"false", "true"}, "false",
             "vllm only: fused_add_rms_norm, residual += x in place, then x = rmsnorm(residual) * gamma");
  }
  return s.params();
}

std::unique_ptr<TraceSource> make_row_norm(NormKind kind, const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<RowNormPlan>();
  RowNormPlan& p = *plan;
  p.kind = kind;
  p.type = op_dtype(args);
  p.rows = args.u64("rows");
  p.cols = args.u64("cols");
  p.affine = args.text("elementwise_affine") == "true";
  if (kind == NormKind::RmsNorm) {
    p.vllm = args.text("kernel") == "vllm";
    p.residual = args.text("residual") == "true";
    if (p.residual && !p.vllm)
      throw InputError("rmsnorm key 'residual': the fused residual add is vLLM's fused_add_rms_norm; it needs kernel=vllm");
  }
  if (p.vllm) {
    const std::uint64_t block = std::min<std::uint64_t>(p.cols, p.rows < kVllmManyTokens ? kVllmBlockFewTokens : kVllmBlockManyTokens);
    p.threads = static_cast<std::uint32_t>(block);
    // fused_add_rms_norm: 8-element vectors of 16-bit types (_f16Vec) or scalars; rms_norm: VEC_SIZE =
    // gcd(16 bytes / element size, hidden) (vectorize_read_with_alignment, recent releases; older ones were scalar).
    p.vec = p.residual ? (p.type.is_16bit() && p.cols % kVllmVecElems == 0 ? kVllmVecElems : 1)
                       : static_cast<std::uint32_t>(std::gcd<std::uint64_t>(16 / p.type.bytes, p.cols));
  } else if (p.cols % kNormVecElems != 0) {
    throw InputError(std::string(kind_name(kind)) + " key 'cols': the vectorized kernel reads " +
                     std::to_string(kNormVecElems) + "-element vectors; cols must be a multiple of " +
                     std::to_string(kNormVecElems) + ", got " + std::to_string(p.cols));
  }
  p.vectors = p.cols / p.vec;
  p.iterations = static_cast<std::uint32_t>((p.vectors + p.threads - 1) / p.threads);
  p.stat_values = kind == NormKind::LayerNorm ? 3 : 1;
  ArrayLayout arrays;
  const std::uint64_t matrix_bytes = p.rows * p.cols * p.type.bytes;
  p.x = arrays.add(matrix_bytes);
  p.y = arrays.add(matrix_bytes);
  p.gamma = arrays.add(p.cols * p.type.bytes);
  p.beta = arrays.add(p.cols * p.type.bytes);
  p.mean = arrays.add(p.rows * 4);  // fp32 statistics
  p.rstd = arrays.add(p.rows * 4);
  if (p.residual) p.res = arrays.add(matrix_bytes);

  RegisterAllocator regs;
  p.r_tid = regs.take(2);
  p.r_addr = regs.take(4);
  p.r_count = regs.take();
  p.r_stat = regs.take(p.stat_values);
  p.r_scratch = regs.take(p.stat_values);
  p.r_vec = regs.take(packed_regs(p.type, p.vec));
  p.r_vals = regs.take(p.vec);
  p.r_gamma = regs.take(packed_regs(p.type, p.vec));
  if (!p.vllm) p.r_beta = regs.take(packed_regs(p.type, p.vec));  // (PyTorch's RMSNorm keeps LayerNorm's registers)
  if (p.residual) p.r_res = regs.take(packed_regs(p.type, p.vec));

  GeneratedKernelSpec spec;
  spec.info.name = std::string("warpsim_") + (p.vllm ? (p.residual ? "vllm_fused_add_" : "vllm_") : "") + kind_name(kind) +
                   "_vec" + std::to_string(p.vec) + "_" + p.type.name + (p.affine ? "" : "_noaffine") + " (" +
                   std::to_string(p.rows) + "x" + std::to_string(p.cols) + ")";
  spec.info.grid = Dim3{static_cast<std::uint32_t>(p.rows), 1, 1};
  spec.info.block = p.vllm ? Dim3{p.threads, 1, 1} : Dim3{kThreadsX, kWarps, 1};
  spec.info.registers_per_thread = op_thread_registers(regs);
  // vLLM: cub::BlockReduce's warp partials and the broadcast s_variance (4 B).
  spec.info.shared_mem_bytes = CtaReduction{WarpReduction{0, 0, p.stat_values}, p.reduction_warps()}.buffer_bytes() + (p.vllm ? 4 : 0);
  spec.info.target_arch = config.section("gpu").str("arch");
  // per element: LayerNorm mean, variance (2 each), normalise (2), affine (2); RMSNorm square-sum (2), scale (1),
  // affine (1)
  const std::uint64_t per_element = (kind == NormKind::LayerNorm ? (p.affine ? 8 : 6) : (p.affine ? 4 : 3)) + (p.residual ? 1 : 0);
  spec.info.flops = per_element * p.rows * p.cols;
  std::shared_ptr<const RowNormPlan> shared = plan;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) { return std::make_unique<NormWarp>(shared, cta, warp); };
  return single_kernel_trace(std::move(spec));
}

}  // namespace warpsim::synth::ops
