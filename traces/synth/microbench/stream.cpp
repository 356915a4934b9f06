// Microbenchmark `stream`: BabelStream / gpu-benches kernels over arrays of `bytes` each, with 16-byte vector
// accesses (LDG.128/STG.128) in a grid-stride loop: thread g of the grid handles vectors g, g + threads, ...
// so each warp instruction covers 512 consecutive bytes (4 full lines). Ops and the bytes counted per element
// (as BabelStream counts them):
//   read  x = a[i] (summed into a register)        1 array   write a[i] = s                          1 array
//   copy  c[i] = a[i]                              2 arrays  scale b[i] = s * c[i]                   2 arrays
//   triad a[i] = b[i] + s * c[i]                   3 arrays
// Grid: sm.count * ctas_per_sm CTAs of `threads` threads. With `passes` > 1 the loop goes over the arrays again
// (gpu-benches' L2 benchmark: arrays that fit in L2 are read from it after the first pass); each pass shifts the
// data by one CTA's share, so that a CTA reads lines another CTA (on another SM) read before, not lines still in
// its own SM's L1.
#include <fmt/format.h>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

constexpr std::uint64_t kArrayBase = 0x7f0000000000ull;
constexpr std::uint64_t kArrayAlign = 1ull << 20;
constexpr std::uint32_t kVecRegs = kVecBytes / 4;
// Registers: vectors of a and b (4 each), the scalar, the read sum, the loop counter and pointers.
constexpr std::uint16_t kA = 0, kB = 4, kScalar = 8, kSum = 9, kStreamLoopCounter = 10, kPtr = 11;

enum class StreamOp { Read, Write, Copy, Scale, Triad };

struct StreamPlan {
  StreamOp op = StreamOp::Read;
  std::uint64_t vectors = 0;       // 16-byte vectors per array
  std::uint64_t grid_threads = 0;  // threads of the grid
  std::uint64_t pass_iterations = 0;  // of the grid-stride loop over the arrays once
  std::uint64_t passes = 1;
  std::uint64_t cta_vectors = 0;   // one CTA's share of a pass: the shift from pass to pass
  std::uint64_t array_a = 0, array_b = 0, array_c = 0;
  Opcode add = Opcode::FADD, mul = Opcode::FMUL, fma = Opcode::FFMA;
  std::uint32_t lanes_ops = 4;     // arithmetic instructions per 16-byte vector (fp32: 4, fp64: 2, fp16x2: 4)
};

// The `op` key's value (a validated choice) as a StreamOp.
StreamOp stream_op(const std::string& op) {
  if (op == "read") return StreamOp::Read;
  if (op == "write") return StreamOp::Write;
  if (op == "copy") return StreamOp::Copy;
  if (op == "scale") return StreamOp::Scale;
  WARPSIM_ASSERT(op == "triad", "stream op choice '" + op + "' has no StreamOp");
  return StreamOp::Triad;
}

std::uint32_t arrays_moved(StreamOp op) {
  switch (op) {
    case StreamOp::Read: case StreamOp::Write: return 1;
    case StreamOp::Copy: case StreamOp::Scale: return 2;
    case StreamOp::Triad: return 3;
  }
  return 0;
}

StepProgram stream_program(std::shared_ptr<const StreamPlan> p, std::uint64_t first_thread) {
  StepProgram prog;
  constexpr std::uint32_t setup = 3;
  prog.prologue = [](InstChunk& c) {
    emit_alu(c, Opcode::S2R, kPtr, {});
    emit_alu(c, Opcode::IMAD, kPtr, {kPtr});
    emit_alu(c, Opcode::MOV, kScalar, {});
  };
  prog.steps = p->pass_iterations * p->passes;
  prog.step = [p, first_thread](InstChunk& c, std::uint64_t i) {
    c.set_pc(setup * kInstBytes);
    const std::uint64_t pass = i / p->pass_iterations;
    const std::uint64_t slot = (i % p->pass_iterations) * p->grid_threads + first_thread;  // lane 0's, in pass 0
    // Slots and the shift are whole warps (32 vectors), so each pass is a permutation of the warps' 512-byte pieces
    // over the arrays padded to whole warps (the ragged last piece moves with them).
    const std::uint64_t padded = (p->vectors + kWarpSize - 1) / kWarpSize * kWarpSize;
    const std::uint64_t vec = slot >= padded ? slot : (slot + pass * p->cta_vectors) % padded;
    const std::uint64_t lanes = vec >= p->vectors ? 0 : std::min<std::uint64_t>(kWarpSize, p->vectors - vec);
    const std::uint32_t mask = first_lanes_mask(lanes);
    auto at = [&](std::uint64_t array) { return LaneRows{array + vec * kVecBytes, kVecBytes, kWarpSize, 0}; };
    const std::uint32_t body = 2 + p->lanes_ops + 1;  // at most: 2 loads, the arithmetic, 1 store
    if (lanes == 0) {
      c.skip(body);
    } else {
      switch (p->op) {
        case StreamOp::Read:
          emit_load(c, Opcode::LDG, MemSpace::Global, at(p->array_a), mask, kA, kVecRegs, {kPtr});
          for (std::uint32_t j = 0; j < p->lanes_ops; ++j) emit_alu(c, p->add, kSum, {kSum, reg(kA + j % kVecRegs)});
          c.skip(2);
          break;
        case StreamOp::Write:
          emit_store(c, Opcode::STG, MemSpace::Global, at(p->array_a), mask, {kScalar, kPtr});
          c.skip(body - 1);
          break;
        case StreamOp::Copy:
          emit_load(c, Opcode::LDG, MemSpace::Global, at(p->array_a), mask, kA, kVecRegs, {kPtr});
          emit_store(c, Opcode::STG, MemSpace::Global, at(p->array_c), mask, {kA, kPtr});
          c.skip(body - 2);
          break;
        case StreamOp::Scale:
          emit_load(c, Opcode::LDG, MemSpace::Global, at(p->array_c), mask, kA, kVecRegs, {kPtr});
          for (std::uint32_t j = 0; j < p->lanes_ops; ++j)
            emit_alu(c, p->mul, reg(kA + j % kVecRegs), {reg(kA + j % kVecRegs), kScalar});
          emit_store(c, Opcode::STG, MemSpace::Global, at(p->array_b), mask, {kA, kPtr});
          c.skip(1);
          break;
        case StreamOp::Triad:
          emit_load(c, Opcode::LDG, MemSpace::Global, at(p->array_b), mask, kA, kVecRegs, {kPtr});
          emit_load(c, Opcode::LDG, MemSpace::Global, at(p->array_c), mask, kB, kVecRegs, {kPtr});
          for (std::uint32_t j = 0; j < p->lanes_ops; ++j)
            emit_alu(c, p->fma, reg(kA + j % kVecRegs), {reg(kB + j % kVecRegs), kScalar, reg(kA + j % kVecRegs)});
          emit_store(c, Opcode::STG, MemSpace::Global, at(p->array_a), mask, {kA, kPtr});
          break;
      }
    }
    emit_alu(c, Opcode::IADD3, kPtr, {kPtr});
    emit_loop_tail(c, kStreamLoopCounter, kLoopPred);
  };
  return prog;
}

std::unique_ptr<TraceSource> make_stream(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<StreamPlan>();
  const std::string& op = args.text("op");
  plan->op = stream_op(op);
  const std::string& dtype = args.text("dtype");
  if (dtype == "fp64") {
    plan->add = Opcode::DADD; plan->mul = Opcode::DMUL; plan->fma = Opcode::DFMA; plan->lanes_ops = 2;
  } else if (dtype == "fp16") {  // packed half2: HADD2 / HFMA2 (scale as HFMA2 with zero addend: no HMUL2 opcode)
    plan->add = Opcode::HADD2; plan->mul = Opcode::HFMA2; plan->fma = Opcode::HFMA2; plan->lanes_ops = 4;
  }
  const std::uint64_t bytes = args.u64("bytes");
  if (bytes % kVecBytes)
    throw InputError(fmt::format("stream key 'bytes': {} is not a multiple of the {}-byte vector", bytes, kVecBytes));
  plan->vectors = bytes / kVecBytes;
  const std::uint64_t threads = args.u64("threads");
  if (threads % kWarpSize)
    throw InputError(fmt::format("stream key 'threads': {} is not a multiple of the warp size ({})", threads, kWarpSize));
  KernelInfo info;
  info.block = block_of_warps("stream", "threads", threads / kWarpSize, config);
  info.grid.x = static_cast<std::uint32_t>(config.section("sm").u64("count") * args.u64("ctas_per_sm"));
  plan->grid_threads = info.grid.count() * threads;
  plan->pass_iterations = (plan->vectors + plan->grid_threads - 1) / plan->grid_threads;
  plan->passes = args.u64("passes");
  plan->cta_vectors = threads;
  const std::uint64_t span = (bytes + kArrayAlign - 1) / kArrayAlign * kArrayAlign;
  plan->array_a = kArrayBase;
  plan->array_b = kArrayBase + span;
  plan->array_c = kArrayBase + 2 * span;
  info.name = fmt::format("warpsim_stream_{}_{}_{}B", op, dtype, bytes);
  info.registers_per_thread = 32;
  info.target_arch = config.section("gpu").str("arch");
  const std::uint32_t warps = info.warps_per_cta();
  return one_kernel_trace(
      info,
      [plan, threads, warps](std::uint64_t cta, std::uint32_t warp) {
        (void)warps;
        return stream_program(plan, cta * threads + std::uint64_t{warp} * kWarpSize);
      },
      "synthesized " + info.name);
}

std::map<std::string, double> stream_metrics(const SynthArgs& args, const Config&, const WorkloadTiming& t) {
  const double moved = static_cast<double>(args.u64("bytes")) * static_cast<double>(args.u64("passes")) *
                       arrays_moved(stream_op(args.text("op")));
  return {{"bandwidth_gbps", per_second(moved, t) / 1e9}};
}

SynthesizerInfo stream_synthesizer() {
  SynthesizerInfo info;
  info.name = "stream";
  info.description = "BabelStream-style read/write/copy/scale/triad over arrays with 16-byte vector accesses "
                     "in a grid-stride loop: memory bandwidth";
  info.keys = Schema("synth", "stream", info.description)
                  .choice("op", {"read", "write", "copy", "scale", "triad"}, std::string("triad"),
                          "read: 1 load; write: 1 store; copy: load + store; scale: load, multiply, store; "
                          "triad: 2 loads, FMA, store")
                  .quantity("bytes", ParamType::Size, std::string("256MiB"), "bytes of each array", 16, 64.0 * (1ull << 30))
                  .choice("dtype", {"fp32", "fp64", "fp16"}, std::string("fp32"), "element type (the arithmetic's opcodes)")
                  .uint("ctas_per_sm", "CTAs", 2, "CTAs per SM (grid = sm.count * ctas_per_sm)", 1, 64)
                  .uint("threads", "threads", 256, "threads per CTA (a multiple of 32)", 32, 1024)
                  .uint("passes", "passes", 1, "times over the arrays (> 1 for the L2 bandwidth of arrays that fit in L2)",
                        1, 4096)
                  .params();
  info.factory = make_stream;
  info.metrics = {{"bandwidth_gbps", "GB/s", "bytes of the arrays read and written (BabelStream's count) x passes / kernel time"}};
  info.derive = stream_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(stream, warpsim::synth::microbench::stream_synthesizer());
