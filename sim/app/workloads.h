// Built-in workloads for a configured GPU: the synthesizers with the target architecture and resource limits
// taken from the GPU's config. Shared by the command line and the benchmark programs.
#pragma once

#include <memory>

#include "sim/config/config.h"
#include "sim/trace/source.h"
#include "traces/synth/gemm.h"

namespace warpsim {

// The shipped GPU configs: $WARPSIM_CONFIG_DIR, else the source tree's configs/.
std::string shipped_configs_dir();

// The default tiling for the config's `gpu.arch`, validated against its `sm` limits. Throws InputError.
std::unique_ptr<TraceSource> make_gemm_for_gpu(const GemmProblem& problem, const Config& config);

}  // namespace warpsim
