// Microbenchmark `smem_bandwidth`: every warp loads (LDS) or stores (STS) shared memory `iterations` times with
// `width` bytes per lane in a bank pattern of `conflict_ways`: lanes come in groups of 32/ways consecutive
// `width`-byte words covering smem.banks/ways banks, one group per bank row (smem.banks x 4 B = 128 B), so the
// groups fall on the same banks at different addresses. ways = 1 is the conflict-free contiguous access (each
// bank holds width/4 of the warp's words, the minimum); ways = n puts n times that on each bank used. At most
// 128/width ways (a lane's own words span width/4 banks). The loads of a warp are independent (4 destination registers rotate), so the warp
// keeps the LSU busy. Grid: sm.count * ctas_per_sm CTAs of `threads` threads.
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

constexpr std::uint32_t kBankBytes = 4;
constexpr std::uint16_t kData = 0, kCounter = 16, kAddr = 17, kLoopPred = 248;
constexpr std::uint32_t kUnroll = 4;  // accesses per loop iteration, into rotating destinations

struct SmemPlan {
  bool store = false;
  std::uint32_t width = 4, ways = 1, banks = 32;
  std::uint64_t iterations = 0;
  // Lanes per group: a group covers banks/ways banks of one bank row.
  std::uint32_t group_lanes() const {
    return std::min<std::uint32_t>(kWarpSize, banks * kBankBytes / ways / width);
  }
  LaneRows lanes(std::uint64_t base) const {
    return LaneRows{base, width, group_lanes(), std::uint64_t{banks} * kBankBytes};
  }
  std::uint64_t footprint() const { return lanes(0).row_pitch * (kWarpSize / group_lanes()); }
};

StepProgram smem_program(std::shared_ptr<const SmemPlan> p, std::uint32_t warp) {
  StepProgram prog;
  prog.prologue = [](InstChunk& c) {
    emit_alu(c, Opcode::S2R, kAddr, {});
    emit_alu(c, Opcode::MOV, kCounter, {});
  };
  prog.steps = (p->iterations + kUnroll - 1) / kUnroll;
  prog.step = [p, warp](InstChunk& c, std::uint64_t i) {
    c.set_pc(2 * kInstBytes);
    const LaneRows lanes = p->lanes(std::uint64_t{warp} * p->footprint());
    const std::uint32_t regs = p->width / kBankBytes;
    for (std::uint32_t u = 0; u < kUnroll; ++u) {
      if (i * kUnroll + u >= p->iterations) { c.skip(); continue; }
      const std::uint16_t dst = reg(kData + u * regs);
      if (p->store) emit_store(c, Opcode::STS, MemSpace::Shared, lanes, kFullMask, {dst, kAddr});
      else emit_load(c, Opcode::LDS, MemSpace::Shared, lanes, kFullMask, dst, regs, {kAddr});
    }
    emit_loop_tail(c, kCounter, kLoopPred);
  };
  return prog;
}

std::unique_ptr<TraceSource> make_smem(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<SmemPlan>();
  plan->store = args.text("op") == "store";
  plan->width = static_cast<std::uint32_t>(std::stoul(args.text("width")));
  plan->ways = static_cast<std::uint32_t>(args.u64("conflict_ways"));
  plan->banks = config.section("smem").u32("banks");
  plan->iterations = args.u64("iterations");
  const std::uint32_t row_bytes = plan->banks * kBankBytes;
  if (kWarpSize % plan->ways || row_bytes % (plan->ways * plan->width))
    throw InputError(fmt::format("smem_bandwidth key 'conflict_ways': {} does not divide the 32 lanes of a warp, or "
                                 "the {} banks into groups of whole {}-byte lanes (width {}: at most {} ways)",
                                 plan->ways, plan->banks, plan->width, plan->width, row_bytes / plan->width));
  const std::uint64_t threads = args.u64("threads");
  if (threads % kWarpSize)
    throw InputError(fmt::format("smem_bandwidth key 'threads': {} is not a multiple of the warp size", threads));
  KernelInfo info;
  info.block = block_of_warps("smem_bandwidth", "threads", threads / kWarpSize, config);
  info.grid.x = static_cast<std::uint32_t>(config.section("sm").u64("count") * args.u64("ctas_per_sm"));
  const std::uint64_t smem = plan->footprint() * info.warps_per_cta();
  const std::uint64_t limit = config.section("sm").u64("shared_memory_per_cta");
  if (smem > limit)
    throw InputError(fmt::format("smem_bandwidth: {} warps x {} B exceed this GPU's sm.shared_memory_per_cta ({} B)",
                                 info.warps_per_cta(), plan->footprint(), limit));
  info.shared_mem_bytes = static_cast<std::uint32_t>(smem);
  info.name = fmt::format("warpsim_smem_{}_{}B_{}way", args.text("op"), plan->width, plan->ways);
  info.registers_per_thread = 32;
  info.target_arch = config.section("gpu").str("arch");
  return one_kernel_trace(info, [plan](std::uint64_t, std::uint32_t warp) { return smem_program(plan, warp); },
                          "synthesized " + info.name);
}

std::map<std::string, double> smem_metrics(const SynthArgs& args, const Config& config, const WorkloadTiming& t) {
  const std::uint64_t threads = args.u64("threads");
  const double ctas = static_cast<double>(t.sm_count) * static_cast<double>(args.u64("ctas_per_sm"));
  const double bytes = ctas * static_cast<double>(threads) * static_cast<double>(args.u64("iterations")) *
                       std::stod(args.text("width"));
  (void)config;
  const double per_clk_per_sm = t.cycles ? bytes / static_cast<double>(t.cycles) / t.sm_count : 0.0;
  return {{"bandwidth_bytes_per_clk_per_sm", per_clk_per_sm}, {"bandwidth_gbps", per_second(bytes, t) / 1e9}};
}

SynthesizerInfo smem_synthesizer() {
  SynthesizerInfo info;
  info.name = "smem_bandwidth";
  info.description = "shared-memory load (or store) loop with a chosen n-way bank-conflict pattern: shared-memory "
                     "bandwidth per SM";
  info.keys = Schema("synth", "smem_bandwidth", info.description)
                  .uint("conflict_ways", "ways", 1, "1 = conflict-free, n = n-way bank conflicts (divides 32; at most 128/width)", 1, 32)
                  .choice("width", {"4", "8", "16"}, std::string("4"), "bytes per lane (LDS.32/.64/.128)")
                  .choice("op", {"load", "store"}, std::string("load"), "LDS or STS")
                  .uint("ctas_per_sm", "CTAs", 2, "CTAs per SM (grid = sm.count * ctas_per_sm)", 1, 64)
                  .uint("threads", "threads", 256, "threads per CTA (a multiple of 32)", 32, 1024)
                  .uint("iterations", "accesses", 1024, "shared-memory accesses per thread", 1, 1ull << 24)
                  .params();
  info.factory = make_smem;
  info.metrics = {{"bandwidth_bytes_per_clk_per_sm", "B/cycle/SM", "bytes the lanes access / kernel cycles / SMs"},
                  {"bandwidth_gbps", "GB/s", "bytes the lanes access / kernel time, whole GPU"}};
  info.derive = smem_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(smem_bandwidth, warpsim::synth::microbench::smem_synthesizer());
