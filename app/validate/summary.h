// Summary statistics of validation results: how many cases ran, and how far the simulated figures are from the
// measured ones, over all cases, per GPU, per category, and per GPU and category.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/validate/runner.h"

namespace warpsim {

struct ValidationSummary {
  std::size_t cases = 0, ok = 0, unsupported = 0, failed = 0, skipped = 0;
  // Over the ok cases; nullopt when there are none.
  std::optional<double> mape_pct;               // mean of |error_pct|
  std::optional<double> mean_signed_error_pct;  // mean of error_pct: > 0, the simulator overestimates
  std::string worst_id;                         // the case with the largest |error_pct| (the first of equals)
  std::optional<double> worst_error_pct;        // its error_pct, signed
  // Pearson correlation of measured and simulated over the ok cases; nullopt with fewer than 2, or when either
  // has no spread (every value equal).
  std::optional<double> correlation;
};

ValidationSummary summarize(const std::vector<const CaseResult*>& results);
ValidationSummary summarize(const std::vector<CaseResult>& results);

// The groups of the JSON summary, each in order of first appearance in `results`.
struct ValidationSummaries {
  ValidationSummary overall;
  std::vector<std::pair<std::string, ValidationSummary>> by_gpu, by_category, by_gpu_category;  // "gpu/category"
};
ValidationSummaries summarize_groups(const std::vector<CaseResult>& results);

}  // namespace warpsim
