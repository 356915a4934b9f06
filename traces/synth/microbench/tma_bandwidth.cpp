// Microbenchmark `tma_bandwidth`: TMA box loads into shared memory (GPUs with a TMA unit, sm_90 and later). One
// warp per CTA keeps `stages` boxes in flight, each on its own mbarrier: per box i (stage s = i % stages) it waits for the box that last used
// stage s (try_wait on that phase's parity), arrives with expect_tx(box bytes) and issues the UTMALDG. Box i of
// a CTA reads bytes (i * box) mod `footprint` of the CTA's own region, so a footprint of one box measures the
// latency of an L2-resident TMA load (after the first), and the default (no reuse) streams from DRAM.
// Grid: `ctas` CTAs (0 = sm.count) of one warp.
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

constexpr std::uint64_t kRegionBase = 0x7e0000000000ull;
constexpr std::uint32_t kMaxStages = 16;

struct TmaPlan {
  TmaBox box;  // base and pitch of the CTA's region; rows and row bytes of one box
  std::uint64_t footprint = 0;
  std::uint64_t region_stride = 0;
  std::uint32_t stages = 0;
  std::uint64_t iterations = 0;
};

std::uint64_t footprint_of(const SynthArgs& args) {
  const std::uint64_t box = args.u64("box_rows") * args.u64("box_row_bytes");
  const std::uint64_t f = args.u64("footprint") ? args.u64("footprint") : box * args.u64("iterations");
  return f;
}

std::unique_ptr<TraceSource> make_tma(const SynthArgs& args, const Config& config) {
  const std::string arch = config.section("gpu").str("arch");
  // The GPU has a TMA unit when its config gives the unit a rate (0 on GPUs without one, as on sm_80).
  const bool has_tma = config.has_section("async_copy") && config.section("async_copy").has("issue_bytes_per_cycle") &&
                       config.section("async_copy").u64("issue_bytes_per_cycle") > 0;
  if (!has_tma)
    throw InputError("tma_bandwidth: TMA box copies (cp.async.bulk.tensor) need a TMA unit; this GPU (" + arch +
                     ") has none (async_copy.issue_bytes_per_cycle is 0)");
  TmaPlan p;
  p.box.rows = static_cast<std::uint32_t>(args.u64("box_rows"));
  p.box.row_bytes = static_cast<std::uint32_t>(args.u64("box_row_bytes"));
  p.box.pitch = p.box.row_bytes;  // the region is one contiguous run of boxes
  p.stages = static_cast<std::uint32_t>(args.u64("stages"));
  p.iterations = args.u64("iterations");
  p.footprint = footprint_of(args);
  if (p.footprint % p.box.bytes())
    throw InputError(fmt::format("tma_bandwidth key 'footprint': {} bytes is not a whole number of {}-byte boxes",
                                 p.footprint, p.box.bytes()));
  const std::uint64_t smem = std::uint64_t{p.stages} * p.box.bytes();
  if (smem > config.section("sm").u64("shared_memory_per_cta"))
    throw InputError(fmt::format("tma_bandwidth: {} stages of {}-byte boxes need {} bytes of shared memory, more than "
                                 "this GPU's sm.shared_memory_per_cta", p.stages, p.box.bytes(), smem));
  p.region_stride = (p.footprint + (1ull << 20) - 1) / (1ull << 20) * (1ull << 20);
  KernelInfo info;
  info.block = block_of_warps("tma_bandwidth", "warps", 1, config);
  const std::uint64_t ctas = args.u64("ctas") ? args.u64("ctas") : config.section("sm").u64("count");
  info.grid.x = static_cast<std::uint32_t>(ctas);
  info.shared_mem_bytes = static_cast<std::uint32_t>(smem);
  info.registers_per_thread = 32;
  info.target_arch = arch;
  info.name = fmt::format("warpsim_tma_{}x{}B_stages{}", p.box.rows, p.box.row_bytes, p.stages);
  return one_kernel_trace(
      info,
      [p](std::uint64_t cta, std::uint32_t) {
        StepProgram prog;
        const std::uint64_t region = kRegionBase + cta * p.region_stride;
        const std::uint64_t box_bytes = p.box.bytes();
        prog.prologue = [p](InstChunk& c) {
          for (std::uint32_t s = 0; s < p.stages; ++s) emit_mbarrier_init(c, s, 1);
        };
        prog.steps = p.iterations;
        prog.body_steps = body_of(kBenchLoopBodyInsts, 3);  // wait, expect_tx, the copy
        prog.step = [p, region, box_bytes](InstChunk& c, std::uint64_t i) {
          const auto s = static_cast<std::uint32_t>(i % p.stages);
          // Box i is phase i / stages of its barrier; the stage is free once the box before it there has landed.
          if (i >= p.stages) emit_mbarrier_wait(c, s, static_cast<std::uint32_t>((i / p.stages - 1) & 1));
          emit_mbarrier_arrive_expect_tx(c, s, static_cast<std::uint32_t>(box_bytes));
          TmaBox box = p.box;
          box.base = region + (i * box_bytes) % p.footprint;
          emit_tma_load(c, box, s);
        };
        prog.epilogue = [p](InstChunk& c) {
          for (std::uint64_t i = p.iterations - std::min<std::uint64_t>(p.stages, p.iterations); i < p.iterations; ++i)
            emit_mbarrier_wait(c, static_cast<std::uint32_t>(i % p.stages), static_cast<std::uint32_t>((i / p.stages) & 1));
        };
        return prog;
      },
      "synthesized " + info.name);
}

std::map<std::string, double> tma_metrics(const SynthArgs& args, const Config& config, const WorkloadTiming& t) {
  const double ctas = static_cast<double>(args.u64("ctas") ? args.u64("ctas") : config.section("sm").u64("count"));
  const double bytes = ctas * static_cast<double>(args.u64("iterations")) *
                       static_cast<double>(args.u64("box_rows") * args.u64("box_row_bytes"));
  return {{"bandwidth_gbps", per_second(bytes, t) / 1e9},
          {"latency_cycles", static_cast<double>(t.cycles) / static_cast<double>(args.u64("iterations"))}};
}

SynthesizerInfo tma_synthesizer() {
  SynthesizerInfo info;
  info.name = "tma_bandwidth";
  info.description = "TMA box loads into shared memory completed on mbarriers (sm_90): TMA latency (1 CTA, 1 stage, "
                     "an L2-resident box) and bandwidth (all SMs, several stages)";
  info.keys = Schema("synth", "tma_bandwidth", info.description)
                  .uint("box_rows", "rows", 64, "rows of one box", 1, 256)
                  .uint("box_row_bytes", "bytes", 128, "bytes of one box row (the box's inner extent)", 16, 256)
                  .uint("stages", "boxes", 4, "boxes in flight per CTA, one mbarrier each", 1, kMaxStages)
                  .uint("iterations", "boxes", 256, "boxes each CTA loads", 1, 1ull << 24)
                  .quantity("footprint", ParamType::Size, std::string("0B"),
                            "bytes of the CTA's region the boxes cycle over (0 = no reuse: iterations x box bytes)", 0,
                            64.0 * (1ull << 30))
                  .uint("ctas", "CTAs", 0, "CTAs of one warp (0 = sm.count)", 0, 1ull << 20)
                  .params();
  info.factory = make_tma;
  info.metrics = {{"bandwidth_gbps", "GB/s", "bytes the boxes copied into shared memory / kernel time, whole GPU"},
                  {"latency_cycles", "cycles", "kernel cycles / iterations: one TMA load's latency at 1 CTA, 1 stage"}};
  info.derive = tma_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(tma_bandwidth, warpsim::synth::microbench::tma_synthesizer());
