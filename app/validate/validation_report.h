// What `warpsim validate` writes: the JSON (cases and summaries, the input of the plots), the CSV (one row per
// case) and the table printed on the terminal. The layout is the shared design's (README, "Validation").
#pragma once

#include <string>
#include <vector>

#include "app/validate/runner.h"

namespace warpsim {

// {"reference": [files], "cases": [...], "summary": {"overall", "by_gpu", "by_category", "by_gpu_category"}}
std::string validation_json(const std::vector<CaseResult>& results, const std::vector<std::string>& reference_files);
// id,gpu,category,kind,metric,measured,simulated,error_pct,status,reason,source
std::string validation_csv(const std::vector<CaseResult>& results);
// The cases (id, gpu, metric, measured, simulated, error %, status), then the summaries per GPU and category.
std::string validation_table(const std::vector<CaseResult>& results);

}  // namespace warpsim
