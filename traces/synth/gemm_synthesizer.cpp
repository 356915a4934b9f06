#include "traces/synth/gemm_synthesizer.h"

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/registry.h"

namespace warpsim {

std::unique_ptr<TraceSource> make_gemm_for_gpu(const GemmProblem& problem, const Config& config,
                                               const GemmMainloopChoice& choice) {
  const Params& gpu = config.section("gpu");
  const std::string arch = gpu.str("arch");
  // A hypothetical GPU may name any architecture (a trace run does not care); the GEMM code paths exist for
  // these only, so the error points at the config key rather than at the synthesizer.
  if (!gemm_supports_arch(arch))
    gpu.fail("arch", "the GEMM synthesizer generates code for sm_80, sm_90 or sm_100, not '" + arch + "'");
  const Params& sm = config.section("sm");
  // A data type the GPU's tensor cores lack (fp8 on A100) is the synthesizer's input that is wrong for this GPU.
  const std::string flops_key = "tensor.flops_per_cycle." + std::string(dtype_name(problem.dtype));
  if (sm.u64(flops_key) == 0)
    throw InputError("synth gemm key 'dtype': " + std::string(dtype_name(problem.dtype)) + " has no tensor-core MMA on " +
                     gpu.str("name") + " (" + arch + ", sm." + flops_key + " = 0)");
  GemmLimits limits;
  limits.shared_mem_per_cta = sm.u64("shared_memory_per_cta");
  limits.registers_per_sm = sm.u32("registers");
  limits.max_registers_per_thread = sm.u32("max_registers_per_thread");
  limits.sm_count = sm.u32("count");
  limits.gpcs = gpc_layout(config);
  limits.tensor_flops_per_cycle = static_cast<double>(sm.u64(flops_key));
  limits.sm_clock_hz = config.section("clocks").real("sm");
  if (config.has_section("hbm")) limits.dram_bytes_per_second = config.section("hbm").real("bandwidth");
  if (config.has_section("l2")) limits.l2_bytes = config.section("l2").real("size");
  limits.tma = gpu_has_tma(config);
  limits.tcgen05 = sm.u64("tensor.tcgen05.latency") > 0;
  GemmTiling tiling = default_gemm_tiling(arch, problem.dtype, problem, limits, choice.tile);
  tiling.mainloop = choice.mainloop;
  if (choice.cluster_m) tiling.cluster_m = choice.cluster_m;
  if (choice.stream_k) {  // stream-K balances the tiles itself: no split unless one is asked for (an error)
    tiling.stream_k = true;
    tiling.stream_k_ctas = choice.stream_k_ctas;
    tiling.split_k = 1;
  }
  if (choice.split_k) tiling.split_k = choice.split_k;
  const bool pingpong = choice.schedule == GemmMainloopChoice::Schedule::Pingpong;
  if (pingpong) {
    auto refuse = [&](const std::string& why) {
      throw InputError("synth gemm key 'schedule': pingpong cannot run " + std::to_string(problem.m) + "x" +
                       std::to_string(problem.n) + "x" + std::to_string(problem.k) + " on " + arch + ": " + why);
    };
    if (!tiling.warpgroup_mma) refuse("it is the warpgroup-MMA kernel's schedule (sm_90, and sm_100's wgmma kernel)");
    if (choice.mma == GemmMainloopChoice::Mma::Tcgen05) refuse("it schedules warpgroup MMAs, not tcgen05 (mma=wgmma)");
    if (choice.stream_k)
      refuse("stream-K runs on the cooperative schedule (CUTLASS's stream-K scheduler is the cooperative kernel's)");
    if (choice.persistent && !*choice.persistent)
      refuse("it is a persistent kernel's schedule (decomposition auto or persistent)");
    // One warpgroup's tile: the heuristic's 128 rows with 256 columns would need 256 accumulator registers per thread.
    if (!choice.tile.tile_m) tiling.tile_m = 64;
    tiling.pingpong = true;
    tiling.warps = 12;
  }
  // sm_100 runs its MMAs on tcgen05 where the tiling allows (CUTLASS's sm100 kernels); the warpgroup-MMA structure
  // stays for what it cannot take (no TMA) or when asked for.
  if (choice.mma == GemmMainloopChoice::Mma::Wgmma && !tiling.warpgroup_mma)
    throw InputError("synth gemm key 'mma': wgmma is the warp-specialised kernel of sm_90 and sm_100; " + arch +
                     " runs mma.sync (the key applies to sm_100)");
  // Stream-K on the warp-specialised structure is the persistent cooperative kernel's scheduler (CUTLASS 3's
  // PersistentTileSchedulerSm90StreamK).
  const bool persistent_stream_k = choice.stream_k && tiling.warpgroup_mma;
  if (choice.mma == GemmMainloopChoice::Mma::Tcgen05 && choice.stream_k)
    throw InputError("synth gemm key 'decomposition': stream_k is generated for the sm_80 and sm_90 kernels, not "
                     "tcgen05's (mma=wgmma runs the sm_90 kernel on " + arch + ")");
  if (choice.mma != GemmMainloopChoice::Mma::Wgmma && !pingpong && !choice.stream_k) {
    const std::string refusal = arch == "sm_100" ? gemm_tcgen05_refusal(problem, tiling, limits)
                                                 : "tcgen05 is sm_100's (this GPU is " + arch + ")";
    if (refusal.empty())
      tiling = gemm_with_tcgen05(problem, tiling, limits);
    else if (choice.mma == GemmMainloopChoice::Mma::Tcgen05)
      throw InputError("synth gemm key 'mma': tcgen05 cannot run " + std::to_string(problem.m) + "x" +
                       std::to_string(problem.n) + "x" + std::to_string(problem.k) + ": " + refusal);
  }
  // The persistent kernel keeps its epilogue staging beside the stages: unless asked for, the stages are those that
  // fit beside it (CUTLASS's StageCountAutoCarveout; fp4's scales leave room for 3 of 128x256).
  auto persistent_tiling = [&](GemmTiling t) {
    t.persistent = true;
    if (!choice.tile.stages && t.warpgroup_mma) t.stages = gemm_persistent_stages(problem, t, limits);
    return t;
  };
  if (!choice.persistent && !pingpong && !persistent_stream_k) {
    const GemmTiling persistent = persistent_tiling(tiling);
    if (!tiling.stream_k && gemm_persistent_refusal(problem, persistent, limits).empty()) tiling = persistent;
    else tiling.persistent = false;
  } else {
    tiling.persistent = pingpong || persistent_stream_k || *choice.persistent;
    if (tiling.persistent) {
      // Asked for: the kernel that can be persistent, or an error saying why not. The heuristic's split gives way.
      if (!choice.split_k) tiling.split_k = 1;
      tiling = persistent_tiling(tiling);
      const std::string refusal =
          pingpong ? gemm_pingpong_refusal(problem, tiling, limits) : gemm_persistent_refusal(problem, tiling, limits);
      if (!refusal.empty())
        throw InputError("synth gemm key '" +
                         std::string(pingpong              ? "schedule': pingpong"
                                     : persistent_stream_k ? "decomposition': stream_k (the persistent sm_90 kernel)"
                                                           : "decomposition': persistent") +
                         " cannot run on " + arch + " for " + std::to_string(problem.m) + "x" +
                         std::to_string(problem.n) + "x" + std::to_string(problem.k) + ": " + refusal);
    }
  }
  return make_gemm_trace(problem, tiling, arch, limits);
}

namespace {

SynthesizerInfo gemm_synthesizer() {
  constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 32;
  SynthesizerInfo info;
  info.name = "gemm";
  info.description =
      "tiled tensor-core GEMM C[m,n] = A[m,k] * B[k,n] as CUTLASS/cuBLAS would run it on the config's "
      "architecture (traces/synth/README.md)";
  info.keys = Schema("synth", "gemm", info.description)
                  .uint("m", "rows", std::nullopt, "rows of A and C (tokens)", 1, kMaxDim)
                  .uint("n", "columns", std::nullopt, "columns of C (output features)", 1, kMaxDim)
                  .uint("k", "elements", std::nullopt, "reduction depth (input features)", 1, kMaxDim)
                  .choice("dtype", {"bf16", "fp16", "f16", "fp8", "tf32", "int8", "i8", "fp64", "f64", "fp4"}, "bf16",
                          "input data type: bf16/fp16 (C of the same type), fp8 (e4m3 or e5m2: one byte, bf16 C; "
                          "sm_90), tf32 (fp32 in memory, fp32 C), int8 (int32 C), fp64 (DMMA, fp64 C; GPUs with fp64 "
                          "tensor cores), fp4 (NVFP4: e2m1, two per byte, an e4m3 scale per 16 elements of K, bf16 C; "
                          "GPUs with fp4 tensor cores, B200; k a multiple of 32); fp16 = f16, int8 = i8, fp64 = f64")
                  .uint("batch", "matrices", 1, "strided batch: independent GEMMs, one after another in memory", 1,
                        synth::kMaxGridDimYZ)
                  .choice("epilogue", {"none", "bias", "relu", "relu_bias", "gelu", "gelu_bias"}, "none",
                          "fused epilogue, as cuBLASLt's CUBLASLT_EPILOGUE_*: D = act(alpha*acc + bias), bias a vector "
                          "of n elements of C's type; gelu is the tanh approximation (not for int8; no split-K)")
                  .choice("mainloop", {"tma", "ldgsts"}, "tma",
                          "sm_90/sm_100 main loop: tma (one producer warp loads each k-tile with TMA boxes completed "
                          "on mbarriers, asynchronous wgmma; falls back to ldgsts where the GPU has no TMA unit or "
                          "the rows of A/B are not 16-byte aligned) or ldgsts (a producer warpgroup copies with "
                          "LDGSTS, one CTA barrier per k-tile); sm_80 ignores it")
                  .uint("cluster_m", "CTAs", 0,
                        "tma main loop: CTAs per thread-block cluster along M sharing their B tile by TMA multicast "
                        "(0 = the default, 2 as cuBLAS; 1 = no clusters); taken where the tile counts allow it",
                        0, 16)
                  .uint("tile_m", "rows", 0,
                        "output tile rows per CTA (0 = the heuristic's: 128, 64 when m <= 64); sm_90: a multiple "
                        "of 64, one consumer warpgroup per 64 rows (pingpong: each warpgroup's whole tile)",
                        0, 1024)
                  .uint("tile_n", "columns", 0,
                        "output tile columns per CTA (0 = the heuristic's: 256 on sm_90, 128 on sm_80); sm_90: a "
                        "multiple of 8 up to 256 (wgmma N)",
                        0, 1024)
                  .uint("stages", "k-tiles", 0,
                        "shared-memory pipeline stages, each one k-tile of A and B (0 = the heuristic's: 4)", 0, 64)
                  .uint("split_k", "splits", 0,
                        "K split into this many slices, each CTA writing fp32 partial sums that a reduction kernel "
                        "adds (as cuBLASLt's CUBLASLT_ALGO_CONFIG_SPLITK_NUM); 0 = the tiling heuristic's choice "
                        "(README.md, 'Tiling heuristic')",
                        0, synth::kMaxGridDimYZ)
                  .choice("decomposition", {"auto", "data_parallel", "persistent", "stream_k"}, "auto",
                          "how output tiles map to CTAs: auto (persistent where it applies, else data_parallel), "
                          "data_parallel (one CTA per tile, split-K as the split_k key says), persistent (sm_90 TMA "
                          "kernel without split-K: as many CTAs as fit at once, each looping over tiles, the next "
                          "tile's loads overlapping this one's stores, as cuBLAS's nvjet kernels; README.md, "
                          "'Persistent kernels'), stream_k (the MAC iterations of the tiles past the whole waves shared "
                          "evenly among the CTA slots, as CUTLASS's stream-K + data-parallel hybrid: sm_80 a grid of "
                          "stream-K and data-parallel CTAs, sm_90 the persistent kernel's stream-K scheduler; "
                          "README.md, 'Stream-K')")
                  .choice("mma", {"auto", "tcgen05", "wgmma"}, "auto",
                          "sm_100 MMA instruction: auto (tcgen05 where the tiling allows it, else wgmma), tcgen05 "
                          "(Blackwell's tcgen05.mma into tensor memory: one MMA warp, an epilogue warpgroup, two "
                          "accumulator buffers; README.md, 'sm_100'; an error where it cannot run), wgmma (the sm_90 "
                          "warpgroup-MMA kernel, as a Hopper binary would run)")
                  .choice("schedule", {"cooperative", "pingpong"}, "cooperative",
                          "sm_90 warp-specialised kernel's consumer schedule: cooperative (the consumer warpgroups "
                          "share each tile, as cuBLAS's nvjet 'coop' kernels) or pingpong (two consumer warpgroups on "
                          "alternate tiles, one's MMAs overlapping the other's epilogue, as CUTLASS 3's "
                          "KernelTmaWarpSpecializedPingpong; persistent; tile_m is one warpgroup's, 64 unless asked; "
                          "README.md, 'Ping-pong')")
                  .uint("stream_k_ctas", "CTAs", 0,
                        "stream_k: the CTA slots it balances over, which sets the wave size (so which tiles are "
                        "shared) and the stream-K grid (0 = sm.count x CTAs per SM; sm_90: the persistent grid)",
                        0, 0x7fffffffull)
                  .params();
  info.factory = [](const SynthArgs& args, const Config& config) {
    GemmProblem problem;
    problem.m = args.u64("m");
    problem.n = args.u64("n");
    problem.k = args.u64("k");
    problem.batch = args.u64("batch");
    for (GemmEpilogue e : {GemmEpilogue::None, GemmEpilogue::Bias, GemmEpilogue::Relu, GemmEpilogue::ReluBias,
                           GemmEpilogue::Gelu, GemmEpilogue::GeluBias})
      if (args.text("epilogue") == gemm_epilogue_name(e)) problem.epilogue = e;
    const std::string& dtype = args.text("dtype");
    // The ISA spells them f16 and i8.
    const bool parsed =
        parse_dtype(dtype == "fp16" ? "f16" : dtype == "int8" ? "i8" : dtype == "fp64" ? "f64" : dtype, problem.dtype);
    WARPSIM_ASSERT(parsed, "gemm dtype choice '" + dtype + "' has no DType");
    GemmMainloopChoice choice;
    choice.mainloop = args.text("mainloop") == "ldgsts" ? GemmTiling::Mainloop::Ldgsts : GemmTiling::Mainloop::Tma;
    choice.cluster_m = static_cast<std::uint32_t>(args.u64("cluster_m"));
    choice.split_k = static_cast<std::uint32_t>(args.u64("split_k"));
    const std::string& decomposition = args.text("decomposition");
    choice.stream_k = decomposition == "stream_k";
    if (decomposition == "persistent" || decomposition == "data_parallel") choice.persistent = decomposition == "persistent";
    choice.stream_k_ctas = static_cast<std::uint32_t>(args.u64("stream_k_ctas"));
    choice.tile.tile_m = static_cast<std::uint32_t>(args.u64("tile_m"));
    choice.tile.tile_n = static_cast<std::uint32_t>(args.u64("tile_n"));
    choice.tile.stages = static_cast<std::uint32_t>(args.u64("stages"));
    const std::string& mma = args.text("mma");
    choice.mma = mma == "tcgen05" ? GemmMainloopChoice::Mma::Tcgen05
                 : mma == "wgmma" ? GemmMainloopChoice::Mma::Wgmma
                                  : GemmMainloopChoice::Mma::Auto;
    if (args.text("schedule") == "pingpong") choice.schedule = GemmMainloopChoice::Schedule::Pingpong;
    return make_gemm_for_gpu(problem, config, choice);
  };
  return info;
}

}  // namespace

WARPSIM_REGISTER_SYNTHESIZER(gemm, gemm_synthesizer());

}  // namespace warpsim
