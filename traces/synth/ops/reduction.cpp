// The `reduction` synthesizer: PyTorch's generic reduction kernel, reduce_kernel<512, output_vec_size,
// ReduceOp<...>> (aten/src/ATen/native/cuda/Reduce.cuh), for sum, mean, max, min, argmax and argmin over the
// contiguous trailing elements of each output (`layout: inner`, e.g. x.mean(-1)) or over strided leading ones with
// the outputs contiguous (`layout: outer`, e.g. x.sum(0)).
//
// The launch is PyTorch's, worked out as setReduceConfig does it (README.md here, "Memory-bound operators"):
// block.x along the contiguous dimension (the reduced one for inner, the outputs for outer), block.y up to 512
// threads; inner reductions of more than 128 elements load input_vec_size-element vectors; the input is split
// across the lanes, then across the warps when every thread would still sum at least min(16 * block.y, 256) values
// (else each warp row takes its own output), then across CTAs (a global reduction through a staging buffer, a
// semaphore and the last CTA) when a thread would still sum 256 or more and the grid is small. A thread loops over
// its values, combines its accumulators, then the block reduces them: block.y through shared memory, block.x
// through shared memory down to a warp and shuffles within it; the storing threads write the output.
//
// The fixed instructions around the loop (index and offset computation before it, the accumulate/acc_buf/
// final_output checks after it) are counted from the SASS of a captured reduce_kernel: warp 0 of kernel 102 of
// ../shared/traces/accelsim/a100-nn-onestep (MeanOps<float>, sm_80): 44 integer and control instructions before the
// first load, 36 from the end of the warp reduction to the store.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/core/types.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/ops/op_common.h"
#include "traces/synth/registry.h"

namespace warpsim::synth::ops {
namespace {

constexpr std::uint32_t kReduceMaxThreads = 512;         // ReduceConfig::MAX_NUM_THREADS, reduce_kernel<512, ...>
constexpr std::uint64_t kMinValuesPerThread = 16;  // setReduceConfig's min_values_per_thread ...
constexpr std::uint64_t kMaxValuesPerThread = 256; // ... and max_values_per_thread
constexpr std::uint32_t kMaxOutputVec = 4;         // get_output_vec_size starts at 4 and halves
constexpr std::uint32_t kVectorizeAbove = 128;     // inner reductions vectorize their loads when dim0 > 128
// reduce_kernel's static shared memory (mark_block_finished's flag) as the profiler reports it: 16 B in every
// captured reduce_kernel (Kineto "shared memory" 16 with no dynamic buffer, 2064 = 2048 + 16 with one; Accel-Sim
// "-shmem = 16").
constexpr std::uint32_t kStaticSharedBytes = 16;
// Fixed instructions per warp counted from the captured SASS (header comment).
constexpr std::uint32_t kSetupInsts = 44;
constexpr std::uint32_t kEpilogueInsts = 36;
// A shuffle step of the warp reduction in the same SASS: SHFL.DOWN, IMAD.SHL (offset <<= 1), ISETP, the combine,
// BRA. A shared-memory tree level: BAR, ISETP (threadIdx < offset), LDS, the combine, STS, IMAD.SHL, ISETP, BRA.
constexpr std::uint32_t kStepControlInsts = 3;

struct ReduceOpKind {
  const char* name;
  MathCost per_element;  // reduce(acc, value[, index])
  MathCost combine;      // combine(acc, acc) of two partials
  std::uint32_t acc_regs;   // registers of one accumulator: 1, or 3 for (value, 64-bit index)
  std::uint32_t acc_bytes;  // sizeof(arg_t): the element of the shared and global staging buffers
  bool index_output;        // writes an int64 index (argmax/argmin) rather than a value of the input type
  bool project;             // project() scales by 1/N (mean)
  std::uint32_t flops;      // per input element
};

// sum/mean: one FADD. max/min: NaN-propagating (a > b || isnan(a)) ? a : b: FSETP twice, FSEL. argmax/argmin:
// per element the 64-bit index (IADD3 + IADD3.X), the value comparison with NaN and the tie-break on the lower
// index (FSETP x3, ISETP x2 for 64 bits) and the selects (FSEL, SEL x2); the combine of two pairs the same without
// the index increment. Pairs are thrust::pair<float, int64_t>: 16 B with its padding.
const ReduceOpKind kReduceOps[] = {
    {"sum", fp32_ops(1), fp32_ops(1), 1, 4, false, false, 1},
    {"mean", fp32_ops(1), fp32_ops(1), 1, 4, false, true, 1},
    {"max", fp32_ops(3), fp32_ops(3), 1, 4, false, false, 1},
    {"min", fp32_ops(3), fp32_ops(3), 1, 4, false, false, 1},
    {"argmax", MathCost{4, 6, 0}, MathCost{4, 4, 0}, 3, 16, true, false, 1},
    {"argmin", MathCost{4, 6, 0}, MathCost{4, 4, 0}, 3, 16, true, false, 1},
};

const ReduceOpKind& reduce_op(const std::string& name) {
  for (const ReduceOpKind& k : kReduceOps)
    if (name == k.name) return k;
  WARPSIM_ASSERT(false, "reduction op choice '" + name + "' has no entry");
  return kReduceOps[0];
}

std::uint32_t last_pow2(std::uint64_t n) {  // the largest power of two <= n (at least 1)
  std::uint32_t p = 1;
  while (std::uint64_t{p} * 2 <= n) p *= 2;
  return p;
}

// PyTorch's ReduceConfig for one launch.
struct ReduceLaunch {
  std::uint64_t outputs = 0, inputs = 0;
  bool inner = true;              // reduced elements contiguous (reduction on the fastest-striding dimension)
  bool vectorize_input = false;   // inner: loads of input_vec elements
  std::uint32_t input_vec = 1, output_vec = 1, vt0 = 4;
  std::uint32_t block_width = 1, block_height = 1;
  std::uint64_t step_input = 1, step_output = 1, ctas_per_output = 1;
  std::uint64_t input_mult[3] = {0, 0, 0}, output_mult[2] = {0, 0};

  std::uint32_t threads() const { return block_width * block_height; }
  std::uint64_t grid_x() const { return ceil_div(outputs / output_vec, step_output); }
  std::uint64_t values_per_thread() const { return ceil_div(inputs, step_input); }
  bool block_x_reduce() const { return input_mult[0] != 0; }
  bool block_y_reduce() const { return input_mult[1] != 0; }
  bool global_reduce() const { return input_mult[2] != 0; }
  std::uint64_t split_input(std::uint64_t parallelism) {
    const std::uint64_t step = step_input;
    step_input *= parallelism;
    return step;
  }
  std::uint64_t split_output(std::uint64_t parallelism) {
    const std::uint64_t step = step_output;
    step_output *= parallelism;
    return step;
  }
};

ReduceLaunch plan_launch(bool inner, std::uint64_t outputs, std::uint64_t inputs, std::uint32_t vt0,
                         std::uint32_t input_vec, std::uint64_t sm_count, std::uint64_t max_threads_per_sm) {
  ReduceLaunch l;
  l.inner = inner;
  l.outputs = outputs;
  l.inputs = inputs;
  l.vt0 = vt0;
  std::uint64_t dim0 = inner ? inputs : outputs, dim1 = inner ? outputs : inputs;
  if (inner && dim0 > kVectorizeAbove && vt0 >= input_vec) {
    l.vectorize_input = true;
    l.input_vec = input_vec;
    dim0 /= input_vec;
  } else if (!inner) {  // vectorize along the outputs: the widest of 4, 2, 1 dividing their count (arrays aligned)
    l.output_vec = kMaxOutputVec;
    while (outputs % l.output_vec != 0) l.output_vec /= 2;
    dim0 /= l.output_vec;
  }
  const std::uint32_t max_threads = kReduceMaxThreads / l.output_vec;
  const std::uint32_t dim0_pow2 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
  const std::uint32_t dim1_pow2 = dim1 < max_threads ? last_pow2(dim1) : max_threads;
  l.block_width = std::min<std::uint32_t>(dim0_pow2, kWarpSize);
  l.block_height = std::min(dim1_pow2, max_threads / l.block_width);
  l.block_width = std::min(dim0_pow2, max_threads / l.block_height);

  if (inner)
    l.input_mult[0] = l.split_input(l.block_width);
  else
    l.output_mult[0] = l.split_output(l.block_width);
  const std::uint64_t warp_split_threshold = std::min(std::uint64_t{l.block_height} * kMinValuesPerThread, kMaxValuesPerThread);
  if (l.values_per_thread() >= warp_split_threshold)
    l.input_mult[1] = l.split_input(l.block_height);
  else
    l.output_mult[1] = l.split_output(l.block_height);

  const std::uint64_t blocks_per_sm = max_threads_per_sm / l.threads();
  const std::uint64_t target_grid = sm_count * blocks_per_sm;
  const std::uint64_t grid = l.grid_x();
  if (l.input_mult[1] != 0 && l.values_per_thread() >= kMaxValuesPerThread && grid <= target_grid) {
    const std::uint64_t fill_gpu = ceil_div(target_grid, grid);
    const std::uint64_t keep_min = ceil_div(l.values_per_thread(), kMinValuesPerThread);
    const std::uint64_t keep_max = ceil_div(l.values_per_thread(), kMaxValuesPerThread);
    l.ctas_per_output = std::max(std::min(fill_gpu, keep_min), keep_max);
    if (l.ctas_per_output > 1) l.input_mult[2] = l.split_input(l.ctas_per_output);
  }
  return l;
}

struct ReductionPlan {
  ReduceLaunch launch;
  ReduceOpKind op;
  OpDType type;
  std::uint32_t out_bytes = 0;
  std::uint64_t in = 0, out = 0, staging = 0, semaphores = 0;
  std::uint16_t r_tid = 0, r_addr = 0, r_count = 0, r_acc = 0, r_other = 0, r_vec = 0, r_vals = 0, r_flag = 0;
  // Elements per load and loads per loop iteration: input_vec x 1 (vectorized inner), output_vec x vt0 (others).
  std::uint32_t load_elems() const { return launch.vectorize_input ? launch.input_vec : launch.output_vec; }
  std::uint32_t loads_per_iteration() const { return launch.vectorize_input ? 1 : launch.vt0; }
  // Registers of one output's partial in the scratch registers: as loaded from shared memory (acc_bytes) or
  // shuffled (acc_regs), whichever is more.
  std::uint32_t other_stride() const { return std::max(op.acc_regs, op.acc_bytes / 4); }
  // Accumulators per thread: one per vector element (vectorized), else vt0 per output of its vector.
  std::uint32_t accumulators() const { return launch.vectorize_input ? launch.input_vec : launch.vt0 * launch.output_vec; }
};

class ReductionWarp final : public PhasedWarp {
 public:
  ReductionWarp(std::shared_ptr<const ReductionPlan> p, std::uint64_t cta, std::uint32_t warp)
      : p_(std::move(p)), cta_x_(cta % p_->launch.grid_x()), cta_y_(cta / p_->launch.grid_x()), warp_(warp) {
    const ReduceLaunch& l = p_->launch;
    for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
      const std::uint32_t t = warp_ * kWarpSize + lane;
      x_[lane] = t % l.block_width;
      y_[lane] = t / l.block_width;
      const std::uint64_t output = (x_[lane] * l.output_mult[0] + y_[lane] * l.output_mult[1] + cta_x_ * l.step_output) * l.output_vec;
      const std::uint64_t input = x_[lane] * l.input_mult[0] + y_[lane] * l.input_mult[1] + cta_y_ * l.input_mult[2];
      output_[lane] = output;
      input_[lane] = input;
      live_[lane] = t < l.threads() && output < l.outputs;  // a block of fewer than 32 threads leaves lanes empty
      values_[lane] = live_[lane] ? thread_values(input) : 0;
    }
    std::uint64_t most = 0;
    for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) most = std::max(most, values_[lane]);
    set_phases({straight(), loop(static_cast<std::uint32_t>(ceil_div(most, p_->loads_per_iteration()))), straight()});
  }

 private:
  enum : std::uint32_t { kSetup, kLoop, kReduce };

  // Loads (vectors, or scalars) a thread makes: input positions input + k * step_input below the end.
  std::uint64_t thread_values(std::uint64_t input) const {
    const ReduceLaunch& l = p_->launch;
    const std::uint64_t end = l.vectorize_input ? l.inputs / l.input_vec : l.inputs;
    return input < end ? ceil_div(end - input, l.step_input) : 0;
  }

  void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t j) override {
    const ReductionPlan& p = *p_;
    switch (phase) {
      case kSetup:
        for (std::uint32_t i = 0; i < 3; ++i) emit_alu(c, Opcode::S2R, reg(p.r_tid + i), {});
        for (std::uint32_t i = 3; i < kSetupInsts; ++i)
          emit_alu(c, i % 4 == 3 ? Opcode::ISETP : Opcode::IMAD, reg(p.r_addr + i % 2), {reg(p.r_tid + i % 3)});
        for (std::uint32_t a = 0; a < p.accumulators() * p.op.acc_regs; ++a) emit_alu(c, Opcode::MOV, reg(p.r_acc + a), {});
        break;
      case kLoop:
        emit_iteration(c, j);
        break;
      default:
        emit_reduce_and_store(c);
    }
  }

  // Iteration j of the thread loop: the loads first (the vt0 of an unrolled strided_iterate, or one vector), then
  // the reduce of each loaded element into its accumulator.
  void emit_iteration(InstChunk& c, std::uint32_t j) {
    const ReductionPlan& p = *p_;
    const ReduceLaunch& l = p.launch;
    const std::uint32_t regs = packed_regs(p.type, p.load_elems());
    std::uint32_t masks[16] = {};  // vt0 <= 16 (the key's range)
    for (std::uint32_t u = 0; u < p.loads_per_iteration(); ++u) {
      const std::uint64_t k = std::uint64_t{j} * p.loads_per_iteration() + u;  // the thread's k-th load
      masks[u] = lane_mask([&](std::uint32_t lane) { return k < values_[lane]; });
      if (masks[u] == 0) {  // past every lane's end: strided_iterate's guard skips it
        c.skip(2);
        continue;
      }
      emit_alu(c, Opcode::IMAD, reg(p.r_addr), {reg(p.r_addr), p.r_count});
      emit_load(c, Opcode::LDG, MemSpace::Global, load_lanes(k), masks[u], reg(p.r_vec + u * regs), regs, {reg(p.r_addr)});
    }
    const std::uint32_t reduce_insts = p.load_elems() * p.op.per_element.total() + (p.type.is_16bit() ? p.load_elems() : 0);
    for (std::uint32_t u = 0; u < p.loads_per_iteration(); ++u) {
      if (masks[u] == 0) {
        c.skip(reduce_insts);
        continue;
      }
      emit_unpack(c, p.type, p.load_elems(), reg(p.r_vec + u * regs), reg(p.r_vals));
      const std::uint16_t values = p.type.is_16bit() ? p.r_vals : reg(p.r_vec + u * regs);
      for (std::uint32_t e = 0; e < p.load_elems(); ++e) {
        const std::uint32_t acc = l.vectorize_input ? e : u * l.output_vec + e;
        emit_combine(c, p.op.per_element, reg(p.r_acc + acc * p.op.acc_regs), reg(values + e));
      }
    }
    emit_loop_tail(c, p.r_count, kPredicate);
  }

  // Lane addresses of the thread's k-th load.
  LaneRows load_lanes(std::uint64_t k) const {
    const ReductionPlan& p = *p_;
    const ReduceLaunch& l = p.launch;
    return lane_rows(
        [&](std::uint32_t lane) {
          const std::uint64_t position = input_[lane] + k * l.step_input;
          const std::uint64_t element = l.inner ? output_[lane] * l.inputs + position * (l.vectorize_input ? l.input_vec : 1)
                                                : position * l.outputs + output_[lane];
          return p.in + element * p.type.bytes;
        },
        p.load_elems() * p.type.bytes);
  }

  // The warp's accesses as rows of lanes: a row is the lanes of one threadIdx.y (all 32 when block.x >= 32), whose
  // consecutive threadIdx.x touch consecutive `lane_bytes` (the first split of the contiguous dimension is over
  // the lanes: input_mult[0] or output_mult[0] = 1); rows lie a fixed pitch apart. `address(lane)` is where the
  // row's lane 0 (threadIdx.x = 0) accesses when a row's lanes share one address (the output of an inner
  // reduction, stored by threadIdx.x = 0 only).
  template <typename Address>
  LaneRows lane_rows(Address address, std::uint32_t lane_bytes) const {
    const std::uint32_t row_lanes = std::min<std::uint32_t>(p_->launch.block_width, kWarpSize);
    const std::uint64_t base = address(0);
    return LaneRows{base, lane_bytes, row_lanes, row_lanes < kWarpSize ? address(row_lanes) - base : 0};
  }

  // A vectorized row whose length is not a multiple of input_vec_size: its last inputs % input_vec_size elements
  // are read one per thread by threadIdx.x < that count (of warp row 0 and the first CTA of the output when the
  // warps and CTAs split the input: should_reduce_tail), as the vectorized loop's tail does. (Rows are taken to
  // start aligned: PyTorch's head loop for a misaligned row start is not emitted.)
  void emit_vector_tail(InstChunk& c) {
    const ReductionPlan& p = *p_;
    const ReduceLaunch& l = p.launch;
    const std::uint64_t tail = l.vectorize_input ? l.inputs % l.input_vec : 0;
    if (tail == 0) return;
    const std::uint32_t mask = lane_mask([&](std::uint32_t lane) {
      return live_[lane] && x_[lane] < tail && (!l.block_y_reduce() || y_[lane] == 0) && cta_y_ == 0;
    });
    if (mask == 0) {
      c.skip(2 + p.op.per_element.total() + (p.type.is_16bit() ? 1 : 0));
      return;
    }
    const std::uint64_t tail_start = l.inputs - tail;
    emit_alu(c, Opcode::ISETP, kPredicate, {p.r_tid});
    emit_load(c, Opcode::LDG, MemSpace::Global,
              lane_rows([&](std::uint32_t lane) { return p.in + (output_[lane] * l.inputs + tail_start) * p.type.bytes; }, p.type.bytes),
              mask, p.r_vec, 1, {reg(p.r_addr)});
    emit_unpack(c, p.type, 1, p.r_vec, p.r_vals);
    emit_combine(c, p.op.per_element, p.r_acc, p.type.is_16bit() ? p.r_vals : p.r_vec);
  }

  // acc = op(acc, other): `cost` as a chain on the accumulator's first register, reading `other`.
  void emit_combine(InstChunk& c, const MathCost& cost, std::uint16_t acc, std::uint16_t other) {
    for (std::uint32_t i = 0; i < cost.fp32; ++i) emit_alu(c, Opcode::FADD, acc, {acc, other});
    for (std::uint32_t i = 0; i < cost.int_; ++i) emit_alu(c, Opcode::IADD3, reg(acc + 1 + i % 2), {acc, other});
  }

  // The lanes for which `keep(lane)` holds.
  template <typename Keep>
  static std::uint32_t lane_mask(Keep keep) {
    std::uint32_t mask = 0;
    for (std::uint32_t lane = 0; lane < kWarpSize; ++lane)
      if (keep(lane)) mask |= 1u << lane;
    return mask;
  }
  bool in_block(std::uint32_t lane) const { return warp_ * kWarpSize + lane < p_->launch.threads(); }

  // partial(o) = combine(partial(o), scratch(o)) for each output of the thread's vector.
  void emit_combine_partials(InstChunk& c) {
    const ReductionPlan& p = *p_;
    for (std::uint32_t o = 0; o < p.launch.output_vec; ++o)
      emit_combine(c, p.op.combine, reg(p.r_acc + o * p.op.acc_regs), reg(p.r_other + o * p.other_stride()));
  }

  // One level of a shared-memory tree: BAR, then the threads below `offset` read their partner's partial, combine
  // and write back.
  void emit_tree_level(InstChunk& c, std::uint32_t mask, std::uint64_t partner_offset_bytes) {
    const ReductionPlan& p = *p_;
    emit_barrier(c);
    emit_alu(c, Opcode::ISETP, kPredicate, {p.r_tid});
    if (mask != 0) {
      emit_partials(c, true, MemSpace::Shared, smem_slot(partner_offset_bytes), mask);
      emit_combine_partials(c);
      emit_partials(c, false, MemSpace::Shared, smem_slot(0), mask);
    } else {
      c.skip(2 * partial_accesses() + p.launch.output_vec * p.op.combine.total());
    }
    for (std::uint32_t i = 0; i < kStepControlInsts; ++i) emit_alu(c, Opcode::IMAD, p.r_count, {p.r_count});
  }

  // This warp's slots of the CTA's shared buffer: thread t's partial at t * acc_bytes * output_vec, plus `offset`.
  std::uint64_t smem_slot(std::uint64_t offset) const { return std::uint64_t{warp_} * kWarpSize * partial_bytes() + offset; }
  std::uint32_t partial_bytes() const { return p_->op.acc_bytes * p_->launch.output_vec; }

  // Loads (into the scratch registers) or stores (from the accumulators) the lanes' partials, lane i's at
  // base + i * partial_bytes(): one access when a partial fits a 16-byte access, else one access per 16 bytes of it
  // (an argmax pair vector of an outer reduction: 64 B per thread).
  void emit_partials(InstChunk& c, bool load, MemSpace space, std::uint64_t base, std::uint32_t mask) {
    const ReductionPlan& p = *p_;
    const std::uint32_t bytes = partial_bytes();
    const Opcode op = space == MemSpace::Shared ? (load ? Opcode::LDS : Opcode::STS) : (load ? Opcode::LDG : Opcode::STG);
    for (std::uint32_t at = 0; at < bytes; at += kVecBytes) {
      const std::uint32_t piece = std::min(bytes - at, kVecBytes);
      const LaneRows lanes = bytes <= kVecBytes ? LaneRows{base, bytes, kWarpSize, 0} : LaneRows{base + at, piece, 1, bytes};
      if (load)
        emit_load(c, op, space, lanes, mask, reg(p.r_other + at / 4), piece / 4, {p.r_addr});
      else
        emit_store(c, op, space, lanes, mask, {reg(p.r_acc + at / 4), p.r_addr});
    }
  }
  std::uint32_t partial_accesses() const { return (partial_bytes() + kVecBytes - 1) / kVecBytes; }

  void emit_block_reductions(InstChunk& c) {
    const ReductionPlan& p = *p_;
    const ReduceLaunch& l = p.launch;
    const std::uint32_t bytes = partial_bytes(), row_bytes = l.block_width * bytes;
    if (l.block_y_reduce()) {  // block_y_reduce: a tree over threadIdx.y
      emit_partials(c, false, MemSpace::Shared, smem_slot(0), kFullMask);
      for (std::uint32_t offset = l.block_height / 2; offset > 0; offset /= 2)
        emit_tree_level(c, lane_mask([&](std::uint32_t lane) { return in_block(lane) && y_[lane] < offset; }),
                        std::uint64_t{offset} * row_bytes);
    }
    if (l.block_x_reduce()) {  // block_x_reduce: a tree over threadIdx.x down to a warp, then shuffles
      std::uint32_t dim_x = l.block_width;
      if (dim_x > kWarpSize) {
        emit_partials(c, false, MemSpace::Shared, smem_slot(0), kFullMask);
        for (std::uint32_t offset = dim_x / 2; offset >= kWarpSize; offset /= 2)
          emit_tree_level(c, lane_mask([&](std::uint32_t lane) { return in_block(lane) && x_[lane] < offset; }),
                          std::uint64_t{offset} * bytes);
        dim_x = kWarpSize;
      }
      emit_barrier(c);
      for (std::uint32_t offset = 1; offset < dim_x; offset *= 2) {
        for (std::uint32_t o = 0; o < l.output_vec; ++o)
          for (std::uint32_t r = 0; r < p.op.acc_regs; ++r)
            emit_alu(c, Opcode::SHFL, reg(p.r_other + o * p.other_stride() + r), {reg(p.r_acc + o * p.op.acc_regs + r)});
        emit_combine_partials(c);
        for (std::uint32_t i = 0; i < kStepControlInsts; ++i) emit_alu(c, Opcode::IMAD, p.r_count, {p.r_count});
      }
    }
  }

  // PyTorch's staging_memory_offset: the slot of CTA `cta2`'s partial for this CTA's outputs; without a block.x
  // reduction one per threadIdx.x (lanes on consecutive slots, `x` the warp's first lane's).
  std::uint64_t staging_slot(std::uint64_t cta2, std::uint64_t x) const {
    const ReduceLaunch& l = p_->launch;
    const std::uint64_t slot = cta2 + cta_x_ * l.ctas_per_output;
    return l.block_x_reduce() ? slot : x + slot * l.block_width;
  }

  // Threads that hold a finished partial: threadIdx.x == 0 after a block.x reduction, threadIdx.y == 0 after a
  // block.y one, and only those with an output.
  std::uint32_t storing_lanes() const {
    const ReduceLaunch& l = p_->launch;
    return lane_mask([&](std::uint32_t lane) {
      return live_[lane] && (!l.block_x_reduce() || x_[lane] == 0) && (!l.block_y_reduce() || y_[lane] == 0);
    });
  }

  void emit_reduce_and_store(InstChunk& c) {
    const ReductionPlan& p = *p_;
    const ReduceLaunch& l = p.launch;
    emit_vector_tail(c);
    // Combine the thread's accumulators into one per output of its vector.
    const std::uint32_t per_output = p.accumulators() / l.output_vec;
    for (std::uint32_t o = 0; o < l.output_vec; ++o)
      for (std::uint32_t a = 1; a < per_output; ++a)
        emit_combine(c, p.op.combine, reg(p.r_acc + o * p.op.acc_regs), reg(p.r_acc + (o + a * l.output_vec) * p.op.acc_regs));
    emit_block_reductions(c);
    const std::uint32_t storing = storing_lanes();
    if (l.global_reduce()) {
      // global_reduce: each storing thread writes its partial to the staging buffer, the CTA counts itself done on
      // its output's semaphore, and the last CTA of the output (taken to be the last launched, blockIdx.y =
      // ctas_per_output - 1) reads the partials back and reduces them as above.
      const std::uint32_t bytes = partial_bytes();
      if (storing != 0)
        emit_partials(c, false, MemSpace::Global, p.staging + staging_slot(cta_y_, x_[0]) * bytes, storing);
      emit_barrier(c);
      if (warp_ == 0) emit_load(c, Opcode::ATOMG, MemSpace::Global, LaneRows{p.semaphores + cta_x_ * 4, 4, kWarpSize, 0}, 1u, p.r_flag, 1, {p.r_addr});
      emit_barrier(c);
      emit_alu(c, Opcode::ISETP, kPredicate, {p.r_flag});
      if (cta_y_ + 1 < l.ctas_per_output) {
        c.emit(Opcode::EXIT);
        return;
      }
      // The last CTA reads the partials back: after a block.x reduction thread t reads CTA partials t, t + threads,
      // ...; otherwise threadIdx.y = r reads CTA r's partials (r + block.y, ...) of its threadIdx.x's outputs.
      const std::uint64_t readers = l.block_x_reduce() ? l.threads() : l.block_height;
      for (std::uint64_t round = 0; round * readers < l.ctas_per_output; ++round) {
        const std::uint32_t mask = lane_mask([&](std::uint32_t lane) {
          const std::uint64_t reader = l.block_x_reduce() ? warp_ * kWarpSize + lane : y_[lane];
          return in_block(lane) && round * readers + reader < l.ctas_per_output;
        });
        const std::uint64_t first = l.block_x_reduce() ? round * readers + warp_ * kWarpSize : round * readers + y_[0];
        if (mask != 0)
          emit_partials(c, true, MemSpace::Global, p.staging + staging_slot(first, x_[0]) * bytes, mask);
        emit_combine_partials(c);
      }
      emit_block_reductions(c);
    }
    for (std::uint32_t i = 0; i < kEpilogueInsts; ++i) emit_alu(c, i % 3 == 0 ? Opcode::ISETP : Opcode::IADD3, p.r_count, {p.r_count});
    if (storing != 0) {
      if (p.op.project) emit_alu(c, Opcode::FMUL, p.r_acc, {p.r_acc});
      const auto address = [&](std::uint32_t lane) { return p.out + output_[lane] * p.out_bytes; };
      const std::uint32_t bytes = p.out_bytes * l.output_vec;
      if (bytes <= kVecBytes) {
        emit_store(c, Opcode::STG, MemSpace::Global, lane_rows(address, bytes), storing, {p.r_acc, p.r_addr});
      } else {  // a vector of int64 indices: 16 bytes per access, lane by lane
        std::array<std::int32_t, kWarpSize> offsets{};
        for (std::uint32_t lane = 0; lane < kWarpSize; ++lane)
          offsets[lane] = static_cast<std::int32_t>(address(lane) - address(0));
        for (std::uint32_t at = 0; at < bytes; at += kVecBytes) {
          emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{address(0) + at, kVecBytes, kWarpSize, 0}, storing,
                     {reg(p.r_acc + at / 4), p.r_addr});
          c.own_deltas(offsets);
        }
      }
    }
    c.emit(Opcode::EXIT);
  }

  std::shared_ptr<const ReductionPlan> p_;
  std::uint64_t cta_x_, cta_y_;
  std::uint32_t warp_;
  std::uint32_t x_[kWarpSize] = {}, y_[kWarpSize] = {};
  std::uint64_t output_[kWarpSize] = {}, input_[kWarpSize] = {}, values_[kWarpSize] = {};
  bool live_[kWarpSize] = {};  // a thread of the block with an output
};

std::unique_ptr<TraceSource> make_reduction(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<ReductionPlan>();
  ReductionPlan& p = *plan;
  p.op = reduce_op(args.text("op"));
  p.type = op_dtype(args);
  const bool inner = args.text("layout") == "inner";
  const std::uint64_t outputs = args.u64("outputs"), inputs = args.u64("inputs");
  const auto vt0 = static_cast<std::uint32_t>(args.u64("vt0"));
  const auto input_vec = static_cast<std::uint32_t>(args.u64("input_vec_size"));
  if (input_vec * p.type.bytes > kVecBytes)
    throw InputError(fmt::format("reduction key 'input_vec_size': a vector load of at most {} bytes, got {} {} elements ({} bytes)",
                                 kVecBytes, input_vec, p.type.name, input_vec * p.type.bytes));
  const Params& sm = config.section("sm");
  p.launch = plan_launch(inner, outputs, inputs, vt0, input_vec, sm.u64("count"), sm.u64("max_threads"));
  const ReduceLaunch& l = p.launch;
  if (l.grid_x() > kMaxGridX || l.ctas_per_output > kMaxGridDimYZ)
    throw InputError(fmt::format("reduction of {} outputs x {} inputs: a grid of {} x {} CTAs exceeds CUDA's limits", outputs,
                                 inputs, l.grid_x(), l.ctas_per_output));
  p.out_bytes = p.op.index_output ? 8 : p.type.bytes;  // argmax/argmin write int64 indices
  ArrayLayout arrays;
  p.in = arrays.add(outputs * inputs * p.type.bytes);
  p.out = arrays.add(outputs * p.out_bytes);
  if (l.global_reduce()) {
    p.staging = arrays.add(l.grid_x() * l.ctas_per_output * l.threads() * p.op.acc_bytes * l.output_vec);
    p.semaphores = arrays.add(l.grid_x() * 4);
  }

  RegisterAllocator regs;
  p.r_tid = regs.take(3);
  p.r_addr = regs.take(2);
  p.r_count = regs.take();
  p.r_flag = regs.take();
  p.r_acc = regs.take(p.accumulators() * p.op.acc_regs);
  p.r_other = regs.take(p.other_stride() * l.output_vec);
  p.r_vec = regs.take(p.loads_per_iteration() * packed_regs(p.type, p.load_elems()));
  p.r_vals = regs.take(p.load_elems());

  if (regs.used() >= kPredicate)
    throw InputError(fmt::format("reduction of {} with vt0 {}: {} registers per thread exceed what a thread has (at most {})",
                                 p.op.name, vt0, regs.used(), kPredicate));
  GeneratedKernelSpec spec;
  spec.info.name = fmt::format("warpsim_reduce_{}_{}_{} ({} outputs x {} inputs)", p.op.name, inner ? "inner" : "outer",
                               p.type.name, outputs, inputs);
  spec.info.grid = Dim3{static_cast<std::uint32_t>(l.grid_x()), static_cast<std::uint32_t>(l.ctas_per_output), 1};
  spec.info.block = Dim3{l.block_width, l.block_height, 1};
  spec.info.registers_per_thread = op_thread_registers(regs);
  // ReduceConfig::shared_memory_size(): a buffer of one partial per thread when the block reduces over
  // threadIdx.y, or over threadIdx.x wider than a warp.
  const bool smem_buffer = l.block_y_reduce() || (l.block_x_reduce() && l.block_width > kWarpSize);
  spec.info.shared_mem_bytes = kStaticSharedBytes + (smem_buffer ? p.op.acc_bytes * l.threads() * l.output_vec : 0);
  spec.info.target_arch = config.section("gpu").str("arch");
  spec.info.flops = outputs * inputs * p.op.flops;
  std::shared_ptr<const ReductionPlan> shared = plan;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) { return std::make_unique<ReductionWarp>(shared, cta, warp); };
  return single_kernel_trace(std::move(spec));
}

SynthesizerInfo reduction_synthesizer() {
  SynthesizerInfo info;
  info.name = "reduction";
  info.description =
      "PyTorch's reduce_kernel (sum, mean, max, min, argmax, argmin) over the contiguous trailing elements of each "
      "output (inner) or strided leading ones (outer), launched as setReduceConfig does (traces/synth/README.md, "
      "\"Memory-bound operators\")";
  Schema s("synth", "reduction", info.description);
  s.choice("op", {"sum", "mean", "max", "min", "argmax", "argmin"}, std::nullopt,
           "the reduction (max/min propagate NaN; argmax/argmin write int64 indices)")
      .choice("layout", {"inner", "outer"}, "inner",
              "inner: each output reduces `inputs` consecutive elements (x.sum(-1)); outer: output o reduces elements "
              "o, o + outputs, ... (x.sum(0) of a [inputs, outputs] tensor)")
      .uint("outputs", "elements", std::nullopt, "elements of the result", 1, kMaxGridX)
      .uint("inputs", "elements", std::nullopt, "elements reduced into each output", 1, kMaxGridX)
      .uint("vt0", "values", 4, "ReduceOp's vt0: values a thread loads per unrolled iteration (the kernel name's ReduceOp<..., vt0, input_vec_size>)", 1, 16)
      .uint("input_vec_size", "elements", 4, "elements of one vector load of an inner reduction (ReduceOp's input_vec_size)", 1, 16);
  declare_dtype(s);
  info.keys = s.params();
  info.factory = make_reduction;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(reduction, synth::ops::reduction_synthesizer());
}
