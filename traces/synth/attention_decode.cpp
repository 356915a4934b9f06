// FlashDecoding (split-KV over a paged KV cache). See README.md here, "Attention".
#include "sim/core/error.h"
#include "traces/synth/attention.h"

namespace warpsim::synth::attn {

std::vector<GeneratedKernelSpec> decode_kernels(const AttnProblem&, const Config&, AttnArrays&) {
  throw InputError("attention key 'variant': decode is not built yet");
}

}  // namespace warpsim::synth::attn
