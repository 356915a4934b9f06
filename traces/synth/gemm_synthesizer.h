// The GEMM synthesizer fitted to a configured GPU, and its registration as synthesizer kind "gemm"
// (gemm_synthesizer.cpp). Wraps the public API of gemm.h.
#pragma once

#include <memory>

#include "sim/config/config.h"
#include "sim/trace/source.h"
#include "traces/synth/gemm.h"

namespace warpsim {

// The shape-aware default tiling for the config's `gpu.arch`, validated against its `sm` limits (shared memory
// per CTA, registers, SM count). Throws InputError.
std::unique_ptr<TraceSource> make_gemm_for_gpu(const GemmProblem& problem, const Config& config);

}  // namespace warpsim
