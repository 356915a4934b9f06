// The `rmsnorm` synthesizer: the row-normalisation kernel of row_norm.h for NormKind::RmsNorm.
#include "traces/synth/ops/row_norm.h"

namespace warpsim::synth::ops {
namespace {

SynthesizerInfo rmsnorm_synthesizer() {
  SynthesizerInfo info;
  info.name = "rmsnorm";
  info.description = "RMSNorm of rows x cols: PyTorch's vectorized LayerNorm kernel shape (sum of squares, two passes) or vLLM's "
                     "rms_norm / fused_add_rms_norm (kernel=vllm, residual=true) (traces/synth/README.md, \"Memory-bound operators\")";
  info.keys = row_norm_keys(NormKind::RmsNorm, info.description);
  info.factory = [](const SynthArgs& args, const Config& config) { return make_row_norm(NormKind::RmsNorm, args, config); };
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(rmsnorm, synth::ops::rmsnorm_synthesizer());
}
