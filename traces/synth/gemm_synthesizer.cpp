#include "traces/synth/gemm_synthesizer.h"

#include "sim/core/error.h"
#include "traces/synth/registry.h"

namespace warpsim {

std::unique_ptr<TraceSource> make_gemm_for_gpu(const GemmProblem& problem, const Config& config) {
  const Params& gpu = config.section("gpu");
  const std::string arch = gpu.str("arch");
  // A hypothetical GPU may name any architecture (a trace run does not care); the GEMM code paths exist for
  // these only, so the error points at the config key rather than at the synthesizer.
  if (!gemm_supports_arch(arch))
    gpu.fail("arch", "the GEMM synthesizer generates code for sm_80, sm_90 or sm_100, not '" + arch + "'");
  const Params& sm = config.section("sm");
  GemmLimits limits;
  limits.shared_mem_per_cta = sm.u64("shared_memory_per_cta");
  limits.registers_per_sm = sm.u32("registers");
  limits.max_registers_per_thread = sm.u32("max_registers_per_thread");
  limits.sm_count = sm.u32("count");
  return make_gemm_trace(problem, default_gemm_tiling(arch, problem.dtype, problem, limits), arch, limits);
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
                  .choice("dtype", {"bf16", "fp16", "f16", "fp8"}, "bf16",
                          "input data type (fp32 accumulation; fp16 and f16 are one type)")
                  .params();
  info.factory = [](const SynthArgs& args, const Config& config) {
    GemmProblem problem;
    problem.m = args.u64("m");
    problem.n = args.u64("n");
    problem.k = args.u64("k");
    const std::string& dtype = args.text("dtype");
    const bool parsed = parse_dtype(dtype == "fp16" ? "f16" : dtype, problem.dtype);  // the ISA spells it f16
    WARPSIM_ASSERT(parsed, "gemm dtype choice '" + dtype + "' has no DType");
    return make_gemm_for_gpu(problem, config);
  };
  return info;
}

}  // namespace

WARPSIM_REGISTER_SYNTHESIZER(gemm, gemm_synthesizer());

}  // namespace warpsim
