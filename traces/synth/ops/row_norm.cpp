#include "traces/synth/ops/row_norm.h"

#include <algorithm>
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
  std::uint64_t rows = 0, cols = 0, vectors = 0;  // vectors = cols / 4 per row
  bool affine = true;
  std::uint32_t iterations = 0;                   // per thread: ceil(vectors / 128)
  std::uint64_t x = 0, y = 0, gamma = 0, beta = 0, mean = 0, rstd = 0;
  std::uint32_t stat_values = 1;                  // registers of the statistic: 3 (Welford) or 1
  std::uint16_t r_tid = 0, r_addr = 0, r_count = 0, r_stat = 0, r_scratch = 0, r_vec = 0, r_vals = 0, r_gamma = 0,
                r_beta = 0;
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
        emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.x, row_ * p.cols, j), mask, p.r_vec,
                  packed_regs(p.type, kNormVecElems), {p.r_addr});
        emit_unpack(c, p.type, kNormVecElems, p.r_vec, vals());
        for (std::uint32_t e = 0; e < kNormVecElems; ++e) {
          emit_math(c, p.kind == NormKind::LayerNorm ? kWelfordUpdate : kSumSquares, reg(vals() + e));
          emit_alu(c, Opcode::FFMA, p.r_stat, {p.r_stat, reg(vals() + e)});
        }
        emit_loop_tail(c, p.r_count, kPredicate);
        break;
      }
      case kReduce: {
        const bool welford = p.kind == NormKind::LayerNorm;
        const WarpReduction warp_reduce{p.r_stat, p.r_scratch, p.stat_values, welford ? Opcode::FFMA : Opcode::FADD,
                                        welford ? kWelfordCombineFp32 : 1, welford ? 1u : 0u};
        emit_cta_allreduce(c, CtaReduction{warp_reduce, kWarps, 0, reg(p.r_addr + 3)}, warp_);
        emit_math(c, kRstd, p.r_stat);
        if (warp_ == 0) {  // thread 0 writes the row's statistics: mean and rstd (LayerNorm), rstd (RMSNorm)
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
        const std::uint32_t regs = packed_regs(p.type, kNormVecElems);
        emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.x, row_ * p.cols, j), mask, p.r_vec, regs, {p.r_addr});
        if (p.affine) {
          emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.gamma, 0, j), mask, p.r_gamma, regs, {reg(p.r_addr + 1)});
          if (p.kind == NormKind::LayerNorm)
            emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.beta, 0, j), mask, p.r_beta, regs, {reg(p.r_addr + 1)});
        }
        emit_unpack(c, p.type, kNormVecElems, p.r_vec, vals());
        for (std::uint32_t e = 0; e < kNormVecElems; ++e) {
          const std::uint16_t v = reg(vals() + e);
          if (p.kind == NormKind::LayerNorm) emit_alu(c, Opcode::FADD, v, {v, p.r_stat});      // x - mean
          emit_alu(c, Opcode::FMUL, v, {v, p.r_stat});                                       // * rstd
          if (p.affine) {  // * gamma (+ beta)
            const std::uint32_t word = e * p.type.bytes / 4;
            emit_alu(c, Opcode::FFMA, v, {v, reg(p.r_gamma + word), reg(p.r_beta + word)});
          }
        }
        emit_pack(c, p.type, kNormVecElems, vals(), p.r_vec);
        emit_store(c, Opcode::STG, MemSpace::Global, lanes(p.y, row_ * p.cols, j), mask, {p.r_vec, reg(p.r_addr + 2)});
        emit_loop_tail(c, p.r_count, kPredicate);
        break;
      }
      default:
        c.emit(Opcode::EXIT);
    }
  }

  std::uint16_t vals() const { return p_->type.is_16bit() ? p_->r_vals : p_->r_vec; }
  // Iteration j of warp w: vectors j*128 + w*32 + lane of the row (element offset `first` of the array).
  std::uint64_t first_vector(std::uint32_t j) const { return std::uint64_t{j} * kNormThreads + std::uint64_t{warp_} * kWarpSize; }
  LaneRows lanes(std::uint64_t array, std::uint64_t first, std::uint32_t j) const {
    const std::uint32_t lane_bytes = kNormVecElems * p_->type.bytes;
    return LaneRows{array + (first + first_vector(j) * kNormVecElems) * p_->type.bytes, lane_bytes, kWarpSize, 0};
  }
  std::uint32_t vector_mask(std::uint32_t j) const {
    const std::uint64_t first = first_vector(j);
    if (first >= p_->vectors) return 0;
    const std::uint64_t live = p_->vectors - first;
    return first_lanes_mask(live);
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
      .uint("cols", "elements", std::nullopt, "normalised dimension (hidden size); a multiple of 4", 4,
            std::uint64_t{1} << 24);
  declare_dtype(s);
  s.choice("elementwise_affine", {"true", "false"}, "true",
           kind == NormKind::LayerNorm ? "scale by gamma and add beta (read once per column chunk)"
                                       : "scale by gamma (read once per column chunk)");
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
  if (p.cols % kNormVecElems != 0)
    throw InputError(std::string(kind_name(kind)) + " key 'cols': the vectorized kernel reads " +
                     std::to_string(kNormVecElems) + "-element vectors; cols must be a multiple of " +
                     std::to_string(kNormVecElems) + ", got " + std::to_string(p.cols));
  p.vectors = p.cols / kNormVecElems;
  p.iterations = static_cast<std::uint32_t>((p.vectors + kNormThreads - 1) / kNormThreads);
  p.stat_values = kind == NormKind::LayerNorm ? 3 : 1;
  ArrayLayout arrays;
  const std::uint64_t matrix_bytes = p.rows * p.cols * p.type.bytes;
  p.x = arrays.add(matrix_bytes);
  p.y = arrays.add(matrix_bytes);
  p.gamma = arrays.add(p.cols * p.type.bytes);
  p.beta = arrays.add(p.cols * p.type.bytes);
  p.mean = arrays.add(p.rows * 4);  // fp32 statistics
  p.rstd = arrays.add(p.rows * 4);

  RegisterAllocator regs;
  p.r_tid = regs.take(2);
  p.r_addr = regs.take(4);
  p.r_count = regs.take();
  p.r_stat = regs.take(p.stat_values);
  p.r_scratch = regs.take(p.stat_values);
  p.r_vec = regs.take(packed_regs(p.type, kNormVecElems));
  p.r_vals = regs.take(kNormVecElems);
  p.r_gamma = regs.take(packed_regs(p.type, kNormVecElems));
  p.r_beta = regs.take(packed_regs(p.type, kNormVecElems));

  GeneratedKernelSpec spec;
  spec.info.name = std::string("warpsim_") + kind_name(kind) + "_vec4_" + p.type.name + (p.affine ? "" : "_noaffine") +
                   " (" + std::to_string(p.rows) + "x" + std::to_string(p.cols) + ")";
  spec.info.grid = Dim3{static_cast<std::uint32_t>(p.rows), 1, 1};
  spec.info.block = Dim3{kThreadsX, kWarps, 1};
  spec.info.registers_per_thread = std::max<std::uint32_t>(16, (regs.used() + 7u) / 8u * 8u);
  spec.info.shared_mem_bytes = CtaReduction{WarpReduction{0, 0, p.stat_values}, kWarps}.buffer_bytes();
  spec.info.target_arch = config.section("gpu").str("arch");
  // per element: LayerNorm mean, variance (2 each), normalise (2), affine (2); RMSNorm square-sum (2), scale (1),
  // affine (1)
  const std::uint64_t per_element = kind == NormKind::LayerNorm ? (p.affine ? 8 : 6) : (p.affine ? 4 : 3);
  spec.info.flops = per_element * p.rows * p.cols;
  std::shared_ptr<const RowNormPlan> shared = plan;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) { return std::make_unique<NormWarp>(shared, cta, warp); };
  const std::string description = "synthesized " + spec.info.name;
  std::vector<GeneratedKernelSpec> kernels;
  kernels.push_back(std::move(spec));
  return std::make_unique<GeneratedTrace>(std::move(kernels), description);
}

}  // namespace warpsim::synth::ops
