// Reference files of `warpsim validate`: measured figures of real GPUs, one YAML list entry per case, each
// naming the GPU config, the workload (a registered synthesizer and its keys), the metric and the measurement:
//
//   - id: a100.gemm.fp16.1024x12288x12288      # unique within the file
//     gpu: a100_sxm                 # a shipped config name, or a path (relative to the reference file)
//     set: {hbm.bandwidth: 2.0TB/s} # optional overrides, as --set
//     workload: {kind: gemm, m: 1024, n: 12288, k: 12288, dtype: fp16}
//     metric: time_us
//     measured: 1199.2
//     source: "where the figure comes from"      # required
//     category: gemm                # optional; default = workload.kind
//     tunes: l1.latency             # optional; the config parameter this measurement determines (calibrate)
//     note: "..."                   # optional free text
//
// Everything that can be checked without simulating is checked when the file is loaded, and is an error of the
// whole file (InputError "FILE:LINE: case ID: what was expected"): the YAML, missing or unknown fields, a
// duplicate id, a non-numeric `measured`, an unknown GPU config, a workload kind misspelt (close to a registered
// one), an unknown key of a registered kind, an unknown metric. A kind that is not registered and not close to
// one (allreduce, llm, ... not built yet) is not an error: the case is reported as unsupported.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "app/validate/reference_case.h"

namespace warpsim {

// Reads and checks a reference file (at most kMaxConfigFileBytes, UTF-8, one YAML document holding a list).
std::vector<ReferenceCase> load_reference(const std::string& path);

// Checks a case that did not come from a file (an importer's, e.g. Nsight Compute's) as load_reference checks
// the cases of a file: GPU config, kind, keys, metric. Throws InputError "FILE:LINE: case ID: ..." with the
// case's own file and line (or its id alone when it has none). `checked_configs` remembers the GPU configs (with
// their overrides) already loaded, so that the cases of one import load each config once, as a file's cases do.
void check_reference_case(const ReferenceCase& c, std::set<std::string>& checked_configs);

}  // namespace warpsim
