// The `layernorm` synthesizer: the row-normalisation kernel of row_norm.h for NormKind::LayerNorm.
#include "traces/synth/ops/row_norm.h"

namespace warpsim::synth::ops {
namespace {

SynthesizerInfo layernorm_synthesizer() {
  SynthesizerInfo info;
  info.name = "layernorm";
  info.description = "PyTorch-style vectorized LayerNorm of rows x cols (one block of 128 threads per row, Welford statistics, two passes; traces/synth/README.md, \"Memory-bound operators\")";
  info.keys = row_norm_keys(NormKind::LayerNorm, info.description);
  info.factory = [](const SynthArgs& args, const Config& config) { return make_row_norm(NormKind::LayerNorm, args, config); };
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(layernorm, synth::ops::layernorm_synthesizer());
}
