// Microbenchmark `pointer_chase`: one warp with one active lane follows a chain of dependent loads (each load's
// address register is the previous load's result) walking a footprint with a fixed stride, wrapping, as the
// p-chase of Jia et al. and mt4g. Its time per load is the load-to-use latency of the level the footprint lives in
// (L1, L2 or DRAM for global memory; shared memory).
//
// Kernel: one CTA of one warp. Global memory, footprint <= l2.size: a warm-up pass first, coalesced loads of
// every chase address (32 per instruction, independent, so it costs about one miss latency plus the LSU's
// lines instead of footprint/stride dependent misses); the first timed load waits for the last warm-up load
// (the others were sent to L2 before it and are back by then, or nearly).
// Larger footprints cannot be resident: no warm-up, every timed load misses to DRAM (steps <= footprint/stride
// lines are first touches). The timed loop: LDG/LDS r0 <- [r0] (4 bytes), then the loop tail (IADD3, ISETP,
// BRA, independent of the chase, so they overlap the load).
#include <fmt/format.h>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

constexpr std::uint64_t kGlobalBase = 0x7f0000000000ull;
constexpr std::uint32_t kChaseBytes = 4;  // a 32-bit index/pointer, as mt4g's uint32 chase
constexpr std::uint16_t kChaseReg = 0, kCounterReg = 1, kWarmReg = 8;
// Warm-up loads rotate over this many destinations: a load waits for the previous write of its destination,
// and 32 x 32 lines in flight exceed any configured L1 MSHR count (l1.mshrs), which then sets the pace.
constexpr std::uint16_t kWarmRegs = 32;

struct ChasePlan {
  bool shared = false;
  CacheOp cache = CacheOp::Default;  // of the global loads (ld.ca, ld.cg, ...)
  std::uint64_t base = 0, stride = 0, positions = 0, steps = 0;
  bool warm_up = false;
  std::uint16_t last_warm_reg = kWarmReg;  // destination of the last warm-up load
};

StepProgram chase_program(std::shared_ptr<const ChasePlan> p) {
  StepProgram prog;
  const MemSpace space = p->shared ? MemSpace::Shared : MemSpace::Global;
  const Opcode load = p->shared ? Opcode::LDS : Opcode::LDG;
  const std::uint32_t loop_pc = 2 * kInstBytes + static_cast<std::uint32_t>(
      p->warm_up ? ((p->positions + kWarpSize - 1) / kWarpSize) * kInstBytes : 0);
  prog.prologue = [p, loop_pc](InstChunk& c) {
    emit_alu(c, Opcode::MOV, kCounterReg, {});
    emit_alu(c, Opcode::MOV, kChaseReg, {});
    if (p->warm_up)
      for (std::uint64_t first = 0, i = 0; first < p->positions; first += kWarpSize, ++i) {
        const std::uint64_t lanes = std::min<std::uint64_t>(kWarpSize, p->positions - first);
        const std::uint32_t mask = first_lanes_mask(lanes);
        WarpInst& warm = emit_load(c, Opcode::LDG, MemSpace::Global,
                                   LaneRows{p->base + first * p->stride, kChaseBytes, kWarpSize, 0}, mask, reg(kWarmReg + i % kWarmRegs), 1, {kChaseReg});
        warm.stride = static_cast<std::int32_t>(p->stride);  // lane i on chase position first + i
        warm.cache = p->cache;
      }
    WARPSIM_ASSERT(c.pc() == loop_pc, "pointer_chase: prologue length");
  };
  prog.steps = p->steps;
  prog.step = [p, space, load, loop_pc](InstChunk& c, std::uint64_t s) {
    c.set_pc(loop_pc);
    const std::uint64_t address = p->base + (s % p->positions) * p->stride;
    WarpInst& inst = emit_load(c, load, space, LaneRows{address, kChaseBytes, kWarpSize, 0}, 1u, kChaseReg, 1, {kChaseReg});
    inst.cache = p->cache;
    if (s == 0 && p->warm_up) set_src(inst, {kChaseReg, p->last_warm_reg});  // the timed pass starts after the warm-up
    emit_loop_tail(c, kCounterReg, kLoopPred);
  };
  return prog;
}

std::unique_ptr<TraceSource> make_pointer_chase(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<ChasePlan>();
  const std::uint64_t footprint = args.u64("footprint");
  plan->stride = args.u64("stride");
  plan->steps = args.u64("steps");
  plan->shared = args.text("space") == "shared";
  const bool parsed = parse_cache_op(args.text("cache_op"), plan->cache);
  WARPSIM_ASSERT(parsed, "pointer_chase cache_op choice '" + args.text("cache_op") + "' has no CacheOp");
  if (plan->shared && plan->cache != CacheOp::Default)
    throw InputError(fmt::format("pointer_chase key 'cache_op': {} applies to global loads, not to space shared",
                                 args.text("cache_op")));
  if (plan->stride % kChaseBytes)
    throw InputError(fmt::format("pointer_chase key 'stride': {} B is not a multiple of the {}-byte chase element",
                                 plan->stride, kChaseBytes));
  if (footprint % plan->stride)
    throw InputError(fmt::format("pointer_chase key 'footprint': {} B is not a multiple of the stride ({} B)",
                                 footprint, plan->stride));
  plan->positions = footprint / plan->stride;
  KernelInfo info;
  info.name = fmt::format("warpsim_pointer_chase_{}_{}B_stride{}B{}", args.text("space"), footprint, plan->stride,
                          plan->cache == CacheOp::Default ? "" : "_" + args.text("cache_op"));
  info.block.x = kWarpSize;
  info.target_arch = config.section("gpu").str("arch");
  info.registers_per_thread = kWarmReg + kWarmRegs;
  if (plan->shared) {
    const std::uint64_t limit = config.section("sm").u64("shared_memory_per_cta");
    if (footprint > limit)
      throw InputError(fmt::format("pointer_chase key 'footprint': {} B of shared memory exceed this GPU's "
                                   "sm.shared_memory_per_cta ({} B)", footprint, limit));
    info.shared_mem_bytes = static_cast<std::uint32_t>(footprint);
  } else {
    plan->base = kGlobalBase;
    plan->warm_up = footprint <= config.section("l2").u64("size");
    plan->last_warm_reg = reg(kWarmReg + ((plan->positions + kWarpSize - 1) / kWarpSize - 1) % kWarmRegs);
  }
  return one_kernel_trace(info, [plan](std::uint64_t, std::uint32_t) { return chase_program(plan); },
                          "synthesized " + info.name);
}

std::map<std::string, double> pointer_chase_metrics(const SynthArgs& args, const Config&, const WorkloadTiming& t) {
  const double per_load = static_cast<double>(t.cycles) / static_cast<double>(args.u64("steps"));
  return {{"latency_cycles", per_load}, {"latency_ns", t.sm_clock_hz > 0 ? per_load / t.sm_clock_hz * 1e9 : 0.0}};
}

SynthesizerInfo pointer_chase_synthesizer() {
  SynthesizerInfo info;
  info.name = "pointer_chase";
  info.description =
      "one lane chasing dependent 4-byte loads through a footprint with a stride (p-chase): load-to-use latency "
      "of the memory level the footprint fits in";
  info.keys = Schema("synth", "pointer_chase", info.description)
                  .quantity("footprint", ParamType::Size, std::nullopt,
                            "bytes the chase walks (wrapping): e.g. 16KiB (L1), 4MiB (L2), 1GiB (DRAM)", 4, 64.0 * (1ull << 30))
                  .quantity("stride", ParamType::Size, std::string("128B"), "distance between consecutive loads", 4, 1ull << 30)
                  .uint("steps", "loads", 16384,
                        "timed dependent loads; the warm-up and launch are amortised over them (README: residual)", 1, 1ull << 28)
                  .choice("space", {"global", "shared"}, std::string("global"),
                          "global (LDG through L1/L2/DRAM) or shared (LDS; footprint <= sm.shared_memory_per_cta)")
                  .choice("cache_op", cache_op_names(), std::string(cache_op_name(CacheOp::Default)),
                          "cache operator of the global loads (traces/FORMAT.md, \"Cache operators\"): bypass is "
                          "ld.global.cg, so a footprint that fits L1 times L2 hits")
                  .params();
  info.factory = make_pointer_chase;
  info.metrics = {{"latency_cycles", "cycles", "SM cycles per dependent load (kernel cycles / steps)"},
                  {"latency_ns", "ns", "latency_cycles at the config's SM clock"}};
  info.derive = pointer_chase_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(pointer_chase, warpsim::synth::microbench::pointer_chase_synthesizer());
