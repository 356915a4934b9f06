#include "sim/app/workloads.h"

#include <cstdlib>

namespace warpsim {

std::string shipped_configs_dir() {
  if (const char* env = std::getenv("WARPSIM_CONFIG_DIR")) return env;
  return std::string(WARPSIM_SOURCE_DIR) + "/configs";
}

std::unique_ptr<TraceSource> make_gemm_for_gpu(const GemmProblem& problem, const Config& config) {
  const std::string arch = config.section("gpu").str("arch");
  const Params& sm = config.section("sm");
  GemmLimits limits;
  limits.shared_mem_per_cta = sm.u64("shared_memory_per_cta");
  limits.registers_per_sm = sm.u32("registers");
  limits.max_registers_per_thread = sm.u32("max_registers_per_thread");
  limits.sm_count = sm.u32("count");
  return make_gemm_trace(problem, default_gemm_tiling(arch, problem.dtype, problem, limits), arch, limits);
}

}  // namespace warpsim
