// Elementwise operator kernel (gelu, relu, silu, add, mul, copy) shaped like PyTorch's elementwise kernels
// (aten/src/ATen/native/cuda/CUDALoops.cuh; num_threads() = 4 warps = 128): a CTA handles 128 x
// `elements_per_thread` consecutive elements. A full block is loaded in `vec`-element vectors: thread t loads the
// vectors at (block start + (i * 128 + t) * vec) for i < elements_per_thread / vec (vectorized_elementwise_kernel
// with vec_size = vec; vec 1 is the scalar loop of elementwise_kernel<128, elements_per_thread>, element
// t + i * 128), all loads first, then the math, then the stores. The last, partial block takes the "unrolled"
// policy: elements_per_thread scalar loads per thread and input at threadIdx.x + j*128, masked past the end.
// The defaults (vec 4, 4 elements per thread: 512 per CTA) are the constants of PyTorch 2.0-2.2
// (thread_constants.h: thread_work_size() = 4); later releases take 8 elements per thread and 16-byte vectors
// (vec 8 for 16-bit types), which `import-kineto` reads off the captured kernel (its name's vec_size, its grid).
// See README.md here, "Memory-bound operators", for the per-element instruction counts.
#include <fmt/format.h>

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

constexpr std::uint32_t kThreads = 128;            // thread_constants.h: num_threads()
constexpr std::uint32_t kMaxElementsPerThread = 32;  // bounds the registers of a thread's elements

struct OpKind {
  const char* name;
  std::uint32_t inputs;
  MathCost per_element;     // besides the 16-bit conversions
  std::uint32_t flops;      // operations of the formula per element (exp, tanh, division counted as one)
};

// gelu: PyTorch's tanh approximation, 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))) in fp32: x*x, *x, FFMA,
// *beta (4), tanhf, +1, *0.5, *x (3). silu: x / (1 + expf(-x)): FMUL (negate, folded into the exp's range
// reduction in practice, counted once), expf, FADD, division. relu: clamp_min with NaN propagation: FSETP + FMNMX.
// add: a + alpha*b (one FFMA), mul: one FMUL.
const OpKind kOps[] = {
    {"gelu", 1, fp32_ops(7) + kTanhf, 8},
    {"relu", 1, fp32_ops(2), 1},
    {"silu", 1, fp32_ops(1) + kExpf + kDivision, 4},
    {"add", 2, fp32_ops(1), 1},
    {"mul", 2, fp32_ops(1), 1},
    {"copy", 1, MathCost{}, 0},
};

const OpKind& op_kind(const std::string& name) {
  for (const OpKind& k : kOps)
    if (name == k.name) return k;
  WARPSIM_ASSERT(false, "elementwise op choice '" + name + "' has no entry");
  return kOps[0];
}

struct ElementwisePlan {
  OpKind op;
  OpDType type;             // the inputs'
  OpDType out_type;         // the output's: the input type but for a converting copy (Tensor.to(dtype))
  std::uint32_t vec = 4, per_thread = 4;  // elements per vector access, elements per thread
  std::uint32_t index_dims = 0;           // dimensions of the OffsetCalculator of a strided (broadcast) kernel
  // Integer instructions per element to turn its linear index into the operands' offsets: per dimension an
  // IntDivider divmod (IMAD.HI, IADD, SHF for the quotient, IMAD for the remainder) and an IMAD per operand
  // (inputs and output) adding remainder x stride (OffsetCalculator.cuh, IntegerDivider.cuh).
  std::uint32_t offset_insts() const { return index_dims * (4 + op.inputs + 1); }
  std::uint64_t elements = 0, full_blocks = 0;
  std::uint64_t block_work() const { return std::uint64_t{kThreads} * per_thread; }
  std::uint32_t packed_regs_per_input() const { return per_thread / vec * packed_regs(type, vec); }
  std::vector<std::uint64_t> in;  // input arrays
  std::uint64_t out = 0;
  std::uint16_t r_tid = 0, r_cta = 0, r_idx = 0, r_addr = 0, r_packed = 0, r_values = 0;
};

class ElementwiseWarp final : public WarpGenerator {
 public:
  ElementwiseWarp(std::shared_ptr<const ElementwisePlan> p, std::uint64_t cta, std::uint32_t warp)
      : p_(std::move(p)), cta_(cta), warp_(warp) {}

  bool generate(InstChunk& c) override {
    if (done_) return false;
    done_ = true;
    const ElementwisePlan& p = *p_;
    emit_alu(c, Opcode::S2R, p.r_tid, {});
    emit_alu(c, Opcode::S2R, p.r_cta, {});
    emit_alu(c, Opcode::IMAD, p.r_idx, {p.r_tid, p.r_cta});
    emit_alu(c, Opcode::ISETP, kPredicate, {p.r_idx});  // full block (vectorized) or the tail (unrolled)
    for (std::uint32_t a = 0; a <= p.op.inputs; ++a) emit_alu(c, Opcode::IMAD, reg(p.r_addr + a), {p.r_idx});
    if (cta_ < p.full_blocks)
      emit_vector_block(c);
    else
      emit_tail_block(c);
    c.emit(Opcode::EXIT);
    return true;
  }

 private:
  // A thread's elements of input `input` (packed as loaded: vector after vector, each in packed_regs(vec)
  // registers, so a 16-bit scalar takes a whole register; then as fp32 values, one register each).
  std::uint16_t packed(std::uint32_t input) const { return reg(p_->r_packed + input * p_->packed_regs_per_input()); }
  std::uint16_t values(std::uint32_t input) const {
    return p_->type.is_packed() ? reg(p_->r_values + input * p_->per_thread) : packed(input);
  }
  // The output registers of vector i (of `elems` elements a vector): packed in place over input 0's, or the fp32
  // values themselves.
  std::uint16_t out_regs(std::uint32_t i, std::uint32_t elems) const {
    return p_->out_type.is_packed() ? reg(packed(0) + i * packed_regs(p_->out_type, elems)) : reg(values(0) + i * elems);
  }
  // The math on `elems` elements of each input (already in fp32 registers), result in values(0).
  // `elems` is a whole number of vectors, or one scalar (the tail).
  void emit_elements(InstChunk& c, std::uint32_t elems) {
    const ElementwisePlan& p = *p_;
    const std::uint32_t per_vector = std::min(elems, p.vec), vec_regs = packed_regs(p.type, per_vector);
    for (std::uint32_t a = 0; a < p.op.inputs; ++a)
      for (std::uint32_t i = 0; i * per_vector < elems; ++i)
        emit_unpack(c, p.type, per_vector, reg(packed(a) + i * vec_regs), reg(values(a) + i * per_vector));
    for (std::uint32_t e = 0; e < elems; ++e) {
      const std::uint16_t v = reg(values(0) + e);
      if (p.op.inputs == 2)
        emit_alu(c, p.op.name == std::string("mul") ? Opcode::FMUL : Opcode::FFMA, v, {v, reg(values(1) + e)});
      else
        emit_math(c, p.op.per_element, v);
    }
    for (std::uint32_t i = 0; i * per_vector < elems; ++i)
      emit_pack(c, p.out_type, per_vector, reg(values(0) + i * per_vector), out_regs(i, per_vector));
  }
  // The offsets of a strided kernel's elements: an independent integer chain per element, before its loads.
  void emit_offsets(InstChunk& c, std::uint32_t elems) {
    for (std::uint32_t i = 0; i < p_->offset_insts(); ++i)
      for (std::uint32_t e = 0; e < elems; ++e) emit_alu(c, Opcode::IMAD, reg(values(0) + e), {p_->r_idx, reg(values(0) + e)});
  }
  // The address register of input `a`'s element `e`: a strided kernel's is the element's offset chain.
  std::uint16_t address(std::uint32_t a, std::uint32_t e) const {
    return p_->index_dims > 0 ? reg(values(0) + e) : reg(p_->r_addr + a);
  }
  void emit_vector_block(InstChunk& c) {
    const ElementwisePlan& p = *p_;
    emit_offsets(c, p.per_thread);
    const std::uint32_t vectors = p.per_thread / p.vec, lane_bytes = p.vec * p.type.bytes;
    const std::uint32_t vec_regs = packed_regs(p.type, p.vec), out_lane_bytes = p.vec * p.out_type.bytes;
    // Vector i of this warp: lanes on consecutive vectors, (i * 128 + warp * 32 + lane) * vec from the block start.
    const auto first = [&](std::uint32_t i) {
      return cta_ * p.block_work() + (std::uint64_t{i} * kThreads + std::uint64_t{warp_} * kWarpSize) * p.vec;
    };
    for (std::uint32_t i = 0; i < vectors; ++i)
      for (std::uint32_t a = 0; a < p.op.inputs; ++a)
        emit_load(c, Opcode::LDG, MemSpace::Global, LaneRows{p.in[a] + first(i) * p.type.bytes, lane_bytes, kWarpSize, 0},
                  kFullMask, reg(packed(a) + i * vec_regs), vec_regs, {address(a, i * p.vec)});
    emit_elements(c, p.per_thread);
    for (std::uint32_t i = 0; i < vectors; ++i)
      emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{p.out + first(i) * p.out_type.bytes, out_lane_bytes, kWarpSize, 0},
                 kFullMask, {out_regs(i, p.vec), reg(p.r_addr + p.op.inputs)});
  }
  // Unrolled policy: element threadIdx.x + j*128 of the block for j < elements_per_thread, each lane one element
  // per access.
  void emit_tail_block(InstChunk& c) {
    const ElementwisePlan& p = *p_;
    for (std::uint32_t j = 0; j < p.per_thread; ++j) {
      const std::uint64_t first = cta_ * p.block_work() + std::uint64_t{j} * kThreads + std::uint64_t{warp_} * kWarpSize;
      const std::uint32_t mask = lanes_below(first);
      const std::uint32_t body = p.op.inputs + 1;  // loads + store; the math is emitted only for live lanes
      if (mask == 0) {
        c.skip(body + p.offset_insts());
        continue;
      }
      emit_offsets(c, 1);
      for (std::uint32_t a = 0; a < p.op.inputs; ++a)
        emit_load(c, Opcode::LDG, MemSpace::Global, LaneRows{p.in[a] + first * p.type.bytes, p.type.bytes, kWarpSize, 0},
                  mask, packed(a), 1, {address(a, 0)});
      emit_elements(c, 1);
      emit_store(c, Opcode::STG, MemSpace::Global, LaneRows{p.out + first * p.out_type.bytes, p.out_type.bytes, kWarpSize, 0},
                 mask, {out_regs(0, 1), reg(p.r_addr + p.op.inputs)});
    }
  }
  std::uint32_t lanes_below(std::uint64_t first) const {
    if (first >= p_->elements) return 0;
    const std::uint64_t live = p_->elements - first;
    return first_lanes_mask(live);
  }

  std::shared_ptr<const ElementwisePlan> p_;
  std::uint64_t cta_;
  std::uint32_t warp_;
  bool done_ = false;
};

std::unique_ptr<TraceSource> make_elementwise(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<ElementwisePlan>();
  plan->op = op_kind(args.text("op"));
  plan->type = op_dtype(args);
  const std::string& out_name = args.text("out_dtype");
  plan->out_type = out_name == "same" ? plan->type : op_dtype_named(out_name);
  if (plan->out_type.name != plan->type.name && plan->op.name != std::string("copy"))
    throw InputError(fmt::format("elementwise key 'out_dtype': only op copy converts (Tensor.to); op {} writes its input "
                                 "type {}, got out_dtype {}", plan->op.name, plan->type.name, out_name));
  plan->elements = args.u64("elements");
  plan->vec = static_cast<std::uint32_t>(args.u64("vec"));
  plan->per_thread = static_cast<std::uint32_t>(args.u64("elements_per_thread"));
  const auto power_of_two = [](std::uint32_t v) { return v != 0 && (v & (v - 1)) == 0; };
  const OpDType& wider = plan->out_type.bytes > plan->type.bytes ? plan->out_type : plan->type;
  if (!power_of_two(plan->vec) || plan->vec * wider.bytes > kVecBytes)
    throw InputError(fmt::format("elementwise key 'vec': a vector access of a power of two elements up to {} bytes, got {} "
                                 "{} elements ({} bytes)", kVecBytes, plan->vec, wider.name, plan->vec * wider.bytes));
  if (!power_of_two(plan->per_thread) || plan->per_thread < plan->vec)
    throw InputError(fmt::format("elementwise key 'elements_per_thread': a power of two of at least vec ({}), got {}", plan->vec,
                                 plan->per_thread));
  plan->index_dims = static_cast<std::uint32_t>(args.u64("index_dims"));
  if (plan->index_dims > 0 && plan->vec != 1)
    throw InputError(fmt::format("elementwise key 'index_dims': a strided (broadcast) kernel loads scalars; index_dims {} "
                                 "needs vec 1, got vec {}", plan->index_dims, plan->vec));
  plan->full_blocks = plan->elements / plan->block_work();
  const std::uint64_t blocks = ceil_div(plan->elements, plan->block_work());
  if (blocks > kMaxGridX)
    throw InputError(fmt::format("elementwise of {} elements at {} per CTA: {} CTAs exceed CUDA's grid.x limit", plan->elements,
                                 plan->block_work(), blocks));
  ArrayLayout arrays;
  for (std::uint32_t a = 0; a < plan->op.inputs; ++a) plan->in.push_back(arrays.add(plan->elements * plan->type.bytes));
  plan->out = arrays.add(plan->elements * plan->out_type.bytes);
  RegisterAllocator regs;
  plan->r_tid = regs.take();
  plan->r_cta = regs.take();
  plan->r_idx = regs.take();
  plan->r_addr = regs.take(plan->op.inputs + 1);
  plan->r_packed = regs.take(plan->op.inputs * plan->packed_regs_per_input());
  plan->r_values = regs.take(plan->op.inputs * plan->per_thread);

  GeneratedKernelSpec spec;
  const std::string types =
      plan->out_type.name == plan->type.name ? plan->type.name : plan->type.name + "_to_" + plan->out_type.name;
  spec.info.name = fmt::format("warpsim_elementwise_{}_{}_vec{}x{} ({})", plan->op.name, types, plan->vec,
                               plan->per_thread / plan->vec, plan->elements);
  spec.info.grid = Dim3{static_cast<std::uint32_t>(blocks), 1, 1};
  spec.info.block = Dim3{kThreads, 1, 1};
  spec.info.registers_per_thread = (regs.used() + 7u) / 8u * 8u;
  spec.info.shared_mem_bytes = 0;
  spec.info.target_arch = config.section("gpu").str("arch");
  spec.info.flops = plan->elements * plan->op.flops;
  std::shared_ptr<const ElementwisePlan> shared = plan;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) {
    return std::make_unique<ElementwiseWarp>(shared, cta, warp);
  };
  return single_kernel_trace(std::move(spec));
}

SynthesizerInfo elementwise_synthesizer() {
  SynthesizerInfo info;
  info.name = "elementwise";
  info.description =
      "PyTorch-style elementwise kernel (128 threads, elements_per_thread each, in vec-element vectors): gelu (tanh), "
      "relu, silu, add, mul or copy over `elements` elements (traces/synth/README.md, \"Memory-bound operators\")";
  Schema s("synth", "elementwise", info.description);
  s.choice("op", {"gelu", "relu", "silu", "add", "mul", "copy"}, std::nullopt,
           "operation: unary gelu|relu|silu|copy read one array, binary add|mul two")
      .uint("elements", "elements", std::nullopt, "elements of each array", 1, kMaxGridX * kThreads)
      .uint("vec", "elements", 4, "elements per vector load and store (vectorized_elementwise_kernel's vec_size; 1: scalar, "
            "elementwise_kernel); at most 16 bytes", 1, 16)
      .uint("elements_per_thread", "elements", 4, "elements each thread handles: 128 x this per CTA (PyTorch 2.0-2.2: 4; "
            "later: 8)", 1, kMaxElementsPerThread)
      .uint("index_dims", "dimensions", 0, "0: contiguous operands; n: a strided kernel (broadcast operands) whose "
            "per-element offsets take an n-dimensional OffsetCalculator (elementwise_kernel<128, n>, vec 1)", 0, 25);
  declare_dtype(s);
  s.choice("out_dtype", {"same", "fp16", "bf16", "fp32", "fp8"}, "same",
           "element type of the output: the input's, or (op copy) another: a converting copy as Tensor.to(dtype) runs "
           "it, e.g. bf16 logits to fp32, or a KV cache written in fp8 (e4m3)");
  info.keys = s.params();
  info.factory = make_elementwise;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(elementwise, synth::ops::elementwise_synthesizer());
}
