// What `warpsim validate` writes: the JSON (cases and summaries, the input of the plots), the CSV (one row per
// case) and the table printed on the terminal. The layout is the shared design's (README, "Validation").
#pragma once

#include <string>
#include <vector>

#include "app/validate/ncu_import.h"
#include "app/validate/runner.h"

namespace warpsim {

// An Nsight Compute export given to validate (--ncu, --map) and what of it gave no case: nothing is dropped
// silently, the skipped launches are listed and counted in every output.
struct NcuInput {
  std::string file, map;  // map: "" without --map
  std::vector<NcuSkipped> skipped;
  std::vector<NcuIgnoredMetric> ignored;
  std::size_t launches = 0;  // launches of the export: those that gave cases and the skipped ones
};

// What validate prints before simulating: the export's launches, each skipped launch (row, line, kernel, reason)
// and one line naming the ignored columns, grouped by reason.
std::string ncu_input_text(const NcuInput& ncu, std::size_t cases);

// {"reference": [files], "ncu": {"export", "map", "launches", "ignored_columns": [{"column", "reason"}]} or null,
//  "cases": [...], "skipped": [{"kernel", "row", "line", "reason", "source"}],
//  "summary": {"overall", "by_gpu", "by_category", "by_gpu_category", "skipped_launches"}}
std::string validation_json(const std::vector<CaseResult>& results, const std::vector<std::string>& reference_files,
                            const NcuInput* ncu = nullptr);
// id,gpu,category,kind,metric,measured,simulated,error_pct,status,reason,source
std::string validation_csv(const std::vector<CaseResult>& results);
// The cases (id, gpu, metric, measured, simulated, error %, status), then the summaries per GPU and category,
// and the count of skipped launches when an export was imported.
std::string validation_table(const std::vector<CaseResult>& results, const NcuInput* ncu = nullptr);

}  // namespace warpsim
