// Softmax over the last dimension of a rows x cols tensor, shaped like PyTorch's forward kernels
// (aten/src/ATen/native/cuda/SoftMax.cu and PersistentSoftmax.cuh):
//  * cols <= 1024 and a row of at most 4 KiB: the persistent warp softmax (softmax_warp_forward). A (virtual) warp
//    of WARP_SIZE = min(next_pow2(cols), 32) lanes owns WARP_BATCH rows (2 when next_pow2(cols) <= 128, else 1),
//    WARP_ITERATIONS = next_pow2(cols) / WARP_SIZE elements per lane and row, loaded as scalars at
//    it*WARP_SIZE + lane; 128 threads per block; max and sum are warp all-reduces (shfl.xor); the results stay in
//    registers and are written once.
//  * otherwise the block softmax (cunn_SoftMaxForward / cunn_SoftMaxForwardSmem): one block per row, ILP = 16 B /
//    element size, block size SoftMax_getBlockSize (the power of two >= min(cols/ILP, 1024)/2, at least 32); pass 0
//    reads the row with 16-byte vector loads (keeping it in shared memory when the row fits below the default
//    48 KiB per block), block max-reduce, pass 1 exp and sum (from shared memory, or re-reading global memory),
//    block sum-reduce, pass 2 recomputes exp(x - max) / sum and writes the row.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/ops/op_common.h"
#include "traces/synth/registry.h"
#include "traces/synth/row_reduction.h"

namespace warpsim::synth::ops {
namespace {

constexpr std::uint32_t kWarpSoftmaxMaxCols = 1024;       // PyTorch: dim_size <= 1024 ...
constexpr std::uint32_t kWarpSoftmaxMaxRowBytes = 4096;   // ... && dim_size * sizeof(scalar_t) <= 4096
constexpr std::uint32_t kWarpSoftmaxThreads = 128;
constexpr std::uint32_t kMaxBlockThreads = 1024;          // SoftMax_getBlockSize's max_threads
constexpr std::uint32_t kVecBytes16 = 16;                 // ILP = sizeof(float4) / sizeof(scalar_t)

// exp(x - max): FADD + expf. The division of pass 2 by the sum: IEEE division.
constexpr MathCost kExpShifted = fp32_ops(1) + kExpf;

std::uint32_t next_pow2(std::uint64_t n) {
  std::uint32_t p = 1;
  while (p < n) p *= 2;
  return p;
}

struct SoftmaxPlan {
  OpDType type;
  std::uint64_t rows = 0, cols = 0;
  std::uint64_t in = 0, out = 0;
  bool persistent = false;
  // persistent warp softmax
  std::uint32_t warp_size = 32, iterations = 1, batch = 1, rows_per_warp = 1;
  // block softmax
  std::uint32_t ilp = 8, block = 32, chunks = 1;
  bool smem_row = false;
  std::uint64_t reduce_smem = 0;
  // registers
  std::uint16_t r_tid = 0, r_addr = 0, r_elems = 0, r_max = 0, r_sum = 0, r_scratch = 0, r_vec = 0, r_vals = 0;
};

// ---- persistent warp softmax ------------------------------------------------------------------------------------

class WarpSoftmax final : public PhasedWarp {
 public:
  WarpSoftmax(std::shared_ptr<const SoftmaxPlan> p, std::uint64_t cta, std::uint32_t warp)
      : p_(std::move(p)),
        row0_((cta * (kWarpSoftmaxThreads / kWarpSize) + warp) * std::uint64_t{p_->rows_per_warp}) {
    set_phases({straight()});
  }

 private:
  void emit_phase(InstChunk& c, std::uint32_t, std::uint32_t) override {
    const SoftmaxPlan& p = *p_;
    emit_alu(c, Opcode::S2R, p.r_tid, {});
    emit_alu(c, Opcode::IMAD, p.r_addr, {p.r_tid});
    emit_alu(c, Opcode::IMAD, reg(p.r_addr + 1), {p.r_tid});
    emit_alu(c, Opcode::ISETP, kPredicate, {p.r_tid});
    for (std::uint32_t b = 0; b < p.batch; ++b)
      for (std::uint32_t it = 0; it < p.iterations; ++it) {
        const std::uint32_t mask = lane_mask(b, it);
        if (mask == 0) {
          c.skip();
          continue;
        }
        emit_load(c, Opcode::LDG, MemSpace::Global, lanes(p.in, b, it), mask, elem(b, it), 1, {p.r_addr});
      }
    const std::uint32_t n = p.batch * p.iterations;
    if (p.type.is_16bit())
      for (std::uint32_t e = 0; e < n; ++e) emit_alu(c, Opcode::HADD2, reg(p.r_elems + e), {reg(p.r_elems + e)});
    // max: one FMNMX per element (emitted as FADD: the ISA has no FMNMX; same fp32 pipe timing)
    for (std::uint32_t b = 0; b < p.batch; ++b)
      for (std::uint32_t it = 0; it < p.iterations; ++it)
        emit_alu(c, Opcode::FADD, reg(p.r_max + b), {reg(p.r_max + b), elem(b, it)});
    emit_warp_allreduce(c, WarpReduction{p.r_max, p.r_scratch, p.batch, Opcode::FADD, p.batch}, p.warp_size);
    for (std::uint32_t b = 0; b < p.batch; ++b)
      for (std::uint32_t it = 0; it < p.iterations; ++it) {
        emit_math(c, kExpShifted, elem(b, it));
        emit_alu(c, Opcode::FADD, reg(p.r_sum + b), {reg(p.r_sum + b), elem(b, it)});
      }
    emit_warp_allreduce(c, WarpReduction{p.r_sum, p.r_scratch, p.batch, Opcode::FADD, p.batch}, p.warp_size);
    for (std::uint32_t b = 0; b < p.batch; ++b)
      for (std::uint32_t it = 0; it < p.iterations; ++it) {
        const std::uint32_t mask = lane_mask(b, it);
        if (mask == 0) {
          c.skip(kDivision.total() + (p.type.is_16bit() ? 2 : 1));
          continue;
        }
        emit_math(c, kDivision, elem(b, it));
        if (p.type.is_16bit()) emit_alu(c, Opcode::FMUL, elem(b, it), {elem(b, it)});  // F2F back to 16 bits
        emit_store(c, Opcode::STG, MemSpace::Global, lanes(p.out, b, it), mask, {elem(b, it), reg(p.r_addr + 1)});
      }
    c.emit(Opcode::EXIT);
  }

  std::uint16_t elem(std::uint32_t b, std::uint32_t it) const { return reg(p_->r_elems + b * p_->iterations + it); }
  // Lane l: virtual warp l / warp_size (rows batch apart), column it*warp_size + l % warp_size.
  LaneRows lanes(std::uint64_t array, std::uint32_t b, std::uint32_t it) const {
    const SoftmaxPlan& p = *p_;
    const std::uint64_t row = row0_ + b, col = std::uint64_t{it} * p.warp_size;
    return LaneRows{array + (row * p.cols + col) * p.type.bytes, p.type.bytes, p.warp_size,
                    std::uint64_t{p.batch} * p.cols * p.type.bytes};
  }
  std::uint32_t lane_mask(std::uint32_t b, std::uint32_t it) const {
    const SoftmaxPlan& p = *p_;
    std::uint32_t mask = 0;
    for (std::uint32_t l = 0; l < kWarpSize; ++l) {
      const std::uint64_t row = row0_ + std::uint64_t{l / p.warp_size} * p.batch + b;
      const std::uint64_t col = std::uint64_t{it} * p.warp_size + l % p.warp_size;
      if (row < p.rows && col < p.cols) mask |= 1u << l;
    }
    return mask;
  }

  std::shared_ptr<const SoftmaxPlan> p_;
  std::uint64_t row0_;
};

// ---- block softmax ----------------------------------------------------------------------------------------------

class BlockSoftmax final : public PhasedWarp {
 public:
  BlockSoftmax(std::shared_ptr<const SoftmaxPlan> p, std::uint64_t cta, std::uint32_t warp)
      : p_(std::move(p)), row_(cta), warp_(warp) {
    set_phases({straight(), loop(p_->chunks), straight(), loop(p_->chunks), straight(), loop(p_->chunks), straight()});
  }

 private:
  enum : std::uint32_t { kSetup, kReadMax, kReduceMax, kExpSum, kReduceSum, kWrite, kEnd };

  void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t j) override {
    const SoftmaxPlan& p = *p_;
    const CtaReduction reduce_max{WarpReduction{p.r_max, p.r_scratch, 1, Opcode::FADD, 1}, p.block / kWarpSize,
                                  p.reduce_smem, p.r_addr};
    const CtaReduction reduce_sum{WarpReduction{p.r_sum, p.r_scratch, 1, Opcode::FADD, 1}, p.block / kWarpSize,
                                  p.reduce_smem, p.r_addr};
    switch (phase) {
      case kSetup:
        emit_alu(c, Opcode::S2R, p.r_tid, {});
        emit_alu(c, Opcode::S2R, reg(p.r_tid + 1), {});
        emit_alu(c, Opcode::IMAD, p.r_addr, {p.r_tid, reg(p.r_tid + 1)});
        emit_alu(c, Opcode::IMAD, reg(p.r_addr + 1), {p.r_tid, reg(p.r_tid + 1)});
        break;
      case kReadMax: {
        const std::uint32_t mask = chunk_mask(j);
        if (mask == 0) break;  // this warp's lanes are past the row's end: they leave the loop
        emit_load(c, Opcode::LDG, MemSpace::Global, global_lanes(p.in, j), mask, p.r_vec, 4, {p.r_addr});
        if (p.smem_row) emit_store(c, Opcode::STS, MemSpace::Shared, smem_lanes(j), mask, {p.r_vec, p.r_addr});
        emit_unpack(c, p.type, p.ilp, p.r_vec, vals());
        for (std::uint32_t e = 0; e < p.ilp; ++e) emit_alu(c, Opcode::FADD, p.r_max, {p.r_max, reg(vals() + e)});
        emit_loop_tail(c, reg(p.r_addr + 2), kPredicate);
        break;
      }
      case kReduceMax:
        emit_cta_allreduce(c, reduce_max, warp_);
        break;
      case kExpSum: {
        const std::uint32_t mask = chunk_mask(j);
        if (mask == 0) break;
        emit_reload(c, j, mask);
        for (std::uint32_t e = 0; e < p.ilp; ++e) {
          emit_math(c, kExpShifted, reg(vals() + e));
          emit_alu(c, Opcode::FADD, p.r_sum, {p.r_sum, reg(vals() + e)});
        }
        emit_loop_tail(c, reg(p.r_addr + 2), kPredicate);
        break;
      }
      case kReduceSum:
        emit_cta_allreduce(c, reduce_sum, warp_);
        break;
      case kWrite: {
        const std::uint32_t mask = chunk_mask(j);
        if (mask == 0) break;
        emit_reload(c, j, mask);
        for (std::uint32_t e = 0; e < p.ilp; ++e) {
          emit_math(c, kExpShifted, reg(vals() + e));
          emit_math(c, kDivision, reg(vals() + e));
        }
        emit_pack(c, p.type, p.ilp, vals(), p.r_vec);
        emit_store(c, Opcode::STG, MemSpace::Global, global_lanes(p.out, j), mask, {p.r_vec, reg(p.r_addr + 1)});
        emit_loop_tail(c, reg(p.r_addr + 2), kPredicate);
        break;
      }
      default:
        c.emit(Opcode::EXIT);
    }
  }

  std::uint16_t vals() const { return p_->type.is_16bit() ? p_->r_vals : p_->r_vec; }
  // Chunk j of thread t: elements (j*block + t)*ilp .. +ilp of the row, one 16-byte vector.
  std::uint64_t chunk_first(std::uint32_t j) const {
    return (std::uint64_t{j} * p_->block + std::uint64_t{warp_} * kWarpSize) * p_->ilp;
  }
  LaneRows global_lanes(std::uint64_t array, std::uint32_t j) const {
    return LaneRows{array + (row_ * p_->cols + chunk_first(j)) * p_->type.bytes, kVecBytes16, kWarpSize, 0};
  }
  LaneRows smem_lanes(std::uint32_t j) const {
    return LaneRows{chunk_first(j) * p_->type.bytes, kVecBytes16, kWarpSize, 0};
  }
  std::uint32_t chunk_mask(std::uint32_t j) const {
    const std::uint64_t first = chunk_first(j);
    if (first >= p_->cols) return 0;
    const std::uint64_t live = (p_->cols - first) / p_->ilp;  // cols is a multiple of ilp
    return first_lanes_mask(live);
  }
  void emit_reload(InstChunk& c, std::uint32_t j, std::uint32_t mask) {
    const SoftmaxPlan& p = *p_;
    if (p.smem_row)
      emit_load(c, Opcode::LDS, MemSpace::Shared, smem_lanes(j), mask, p.r_vec, 4, {p.r_addr});
    else
      emit_load(c, Opcode::LDG, MemSpace::Global, global_lanes(p.in, j), mask, p.r_vec, 4, {p.r_addr});
    emit_unpack(c, p.type, p.ilp, p.r_vec, vals());
  }

  std::shared_ptr<const SoftmaxPlan> p_;
  std::uint64_t row_;
  std::uint32_t warp_;
};

std::unique_ptr<TraceSource> make_softmax(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<SoftmaxPlan>();
  SoftmaxPlan& p = *plan;
  p.type = op_dtype(args);
  p.rows = args.u64("rows");
  p.cols = args.u64("cols");
  ArrayLayout arrays;
  p.in = arrays.add(p.rows * p.cols * p.type.bytes);
  p.out = arrays.add(p.rows * p.cols * p.type.bytes);
  p.persistent = p.cols <= kWarpSoftmaxMaxCols && p.cols * p.type.bytes <= kWarpSoftmaxMaxRowBytes;

  GeneratedKernelSpec spec;
  RegisterAllocator regs;
  p.r_tid = regs.take(2);
  p.r_addr = regs.take(3);
  std::uint64_t blocks = 0;
  if (p.persistent) {
    const std::uint32_t pow2 = next_pow2(p.cols);
    p.warp_size = std::min<std::uint32_t>(pow2, kWarpSize);
    p.iterations = pow2 / p.warp_size;
    p.batch = pow2 <= 128 ? 2 : 1;
    p.rows_per_warp = kWarpSize / p.warp_size * p.batch;
    const std::uint64_t rows_per_block = std::uint64_t{kWarpSoftmaxThreads / kWarpSize} * p.rows_per_warp;
    blocks = (p.rows + rows_per_block - 1) / rows_per_block;
    p.r_elems = regs.take(p.batch * p.iterations);
    p.r_max = regs.take(p.batch);
    p.r_sum = regs.take(p.batch);
    p.r_scratch = regs.take(p.batch);
    spec.info.block = Dim3{kWarpSoftmaxThreads, 1, 1};
    spec.info.name = "warpsim_softmax_warp_" + p.type.name + "_log2cols" + std::to_string(reduction_steps(pow2));
  } else {
    p.ilp = kVecBytes16 / p.type.bytes;
    if (p.cols % p.ilp != 0)
      throw InputError("softmax key 'cols': the block softmax (cols > 1024) reads 16-byte vectors of " +
                       std::to_string(p.ilp) + " " + p.type.name + " elements; cols must be a multiple of " +
                       std::to_string(p.ilp) + ", got " + std::to_string(p.cols));
    std::uint64_t max_block = std::min<std::uint64_t>(p.cols / p.ilp, kMaxBlockThreads);
    if (p.ilp > 1) max_block /= 2;  // keep at least half of the row in whole vectors (SoftMax_getBlockSize)
    std::uint32_t block = 1;
    while (block < max_block) block *= 2;
    p.block = std::max<std::uint32_t>(block, kWarpSize);
    p.chunks = static_cast<std::uint32_t>((p.cols + std::uint64_t{p.block} * p.ilp - 1) / (std::uint64_t{p.block} * p.ilp));
    const std::uint64_t reduce_bytes = p.block / kWarpSize * 4;  // one float per warp
    const std::uint64_t smem_limit =
        std::min<std::uint64_t>(kDefaultSharedMemPerBlock, config.section("sm").u64("shared_memory_per_cta"));
    p.smem_row = p.cols * p.type.bytes + reduce_bytes <= smem_limit;
    p.reduce_smem = p.smem_row ? p.cols * p.type.bytes : 0;
    blocks = p.rows;
    p.r_vec = regs.take(4);
    p.r_vals = regs.take(p.ilp);
    p.r_max = regs.take();
    p.r_sum = regs.take();
    p.r_scratch = regs.take();
    spec.info.block = Dim3{p.block, 1, 1};
    spec.info.shared_mem_bytes = static_cast<std::uint32_t>(p.reduce_smem + reduce_bytes);
    spec.info.name = std::string("warpsim_softmax_block_") + (p.smem_row ? "smem_" : "") + p.type.name;
  }
  if (blocks > kMaxGridX)
    throw InputError("softmax: " + std::to_string(blocks) + " blocks exceed CUDA's grid.x limit of 2^31 - 1");
  spec.info.name += " (" + std::to_string(p.rows) + "x" + std::to_string(p.cols) + ")";
  spec.info.grid = Dim3{static_cast<std::uint32_t>(blocks), 1, 1};
  spec.info.registers_per_thread = op_thread_registers(regs);
  spec.info.target_arch = config.section("gpu").str("arch");
  // max, subtract, exp, sum, divide: 5 operations per element
  spec.info.flops = 5 * p.rows * p.cols;
  std::shared_ptr<const SoftmaxPlan> shared = plan;
  if (p.persistent)
    spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) {
      return std::make_unique<WarpSoftmax>(shared, cta, warp);
    };
  else
    spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) {
      return std::make_unique<BlockSoftmax>(shared, cta, warp);
    };
  return single_kernel_trace(std::move(spec));
}

SynthesizerInfo softmax_synthesizer() {
  SynthesizerInfo info;
  info.name = "softmax";
  info.description =
      "PyTorch-style softmax over the last dimension of rows x cols: persistent warp softmax for cols <= 1024, "
      "block softmax (one block per row) above (traces/synth/README.md, \"Memory-bound operators\")";
  constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 31;
  Schema s("synth", "softmax", info.description);
  s.uint("rows", "rows", std::nullopt, "rows (softmax instances)", 1, kMaxDim)
      .uint("cols", "elements", std::nullopt, "length of the softmax dimension", 1, std::uint64_t{1} << 24);
  declare_dtype(s);
  info.keys = s.params();
  info.factory = make_softmax;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(softmax, synth::ops::softmax_synthesizer());
}
