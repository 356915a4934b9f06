// `warpsim validate` cases of the collective kinds (allreduce, allgather, reducescatter): {kind: allreduce, bytes,
// gpus} with metric time_us, the time of one collective of `bytes` (NCCL's message size: the whole buffer of an
// all-reduce) over `gpus` GPUs of the case's GPU config's node, from the collective model (models/node/collective.h).
// Nothing is simulated: the model is closed-form.
#pragma once

#include <string>
#include <vector>

#include "app/validate/runner.h"

namespace warpsim {

// allreduce, allgather, reducescatter (validation files' spelling; all_reduce etc. as well).
bool is_collective_kind(const std::string& kind);

// Never throws for a case's own problems: a bad key, metric or config makes the case Failed with its reason.
std::vector<CaseResult> run_collective_cases(const std::vector<const ReferenceCase*>& members,
                                             const ValidateOptions& options);

}  // namespace warpsim
