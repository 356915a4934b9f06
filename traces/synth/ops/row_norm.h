// Row normalisation kernels (LayerNorm, RMSNorm) shaped like PyTorch's vectorized_layer_norm_kernel
// (aten/src/ATen/native/cuda/layer_norm_kernel.cu): one block of 32 x 4 threads per row, vec_size 4 elements per
// access. Pass 1 reads the row (a loop over 4-element vectors, stride 128 threads) accumulating Welford's mean and
// M2 (LayerNorm) or the sum of squares (RMSNorm, as apex's cuApplyRMSNorm); the statistics are all-reduced across
// the warp (SHFL) and the block (shared memory + BAR); thread 0 writes mean/rstd; pass 2 reads the row again with
// gamma (and beta), normalises and writes it. RMSNorm can also take vLLM's kernels (`kernel=vllm`: a block of
// min(hidden, 1024) threads per token, 16-byte vectors; `residual=true`: fused_add_rms_norm).
#pragma once

#include <memory>

#include "sim/config/config.h"
#include "sim/trace/source.h"
#include "traces/synth/registry.h"

namespace warpsim::synth::ops {

enum class NormKind { LayerNorm, RmsNorm };

// Keys: rows, cols, dtype, elementwise_affine (RMSNorm also kernel, residual).
std::vector<ParamSpec> row_norm_keys(NormKind kind, const std::string& description);
std::unique_ptr<TraceSource> make_row_norm(NormKind kind, const SynthArgs& args, const Config& config);

}  // namespace warpsim::synth::ops
