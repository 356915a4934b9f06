// `warpsim validate` cases of workload kind llm (validation/llm.yaml): {kind: llm, model, batch, input_len,
// [output_len], tp, dtype} with metric ttft_ms (a prefill of input_len tokens), ms_per_token or tokens_per_s (a
// decode step at the mean context of the generation: input_len + output_len/2, or input_len without output_len).
// Each case runs `warpsim llm`'s simulation (app/llm/llm_run.h) through the on-disk cache (WorkloadCache's default
// directory), so that a second validate reuses the kernels.
#pragma once

#include <vector>

#include "app/validate/runner.h"

namespace warpsim::llm {

inline constexpr const char* kLlmKind = "llm";

// Never throws for a case's own problems: an unknown model or a data type without a synthesizer makes the case
// Unsupported, a bad key or a failed simulation Failed, each with its reason.
std::vector<CaseResult> run_llm_cases(const std::vector<const ReferenceCase*>& members, const ValidateOptions& options);

}  // namespace warpsim::llm
