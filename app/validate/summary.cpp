#include "app/validate/summary.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace warpsim {
namespace {

// Cases grouped by a label, the groups in order of first appearance.
std::vector<std::pair<std::string, ValidationSummary>> by(const std::vector<CaseResult>& results,
                                                         const std::function<std::string(const CaseResult&)>& label) {
  std::vector<std::pair<std::string, std::vector<const CaseResult*>>> groups;
  for (const CaseResult& r : results) {
    const std::string l = label(r);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == l; });
    if (it == groups.end()) it = groups.insert(groups.end(), {l, {}});
    it->second.push_back(&r);
  }
  std::vector<std::pair<std::string, ValidationSummary>> out;
  for (const auto& [l, members] : groups) out.emplace_back(l, summarize(members));
  return out;
}

}  // namespace

ValidationSummary summarize(const std::vector<const CaseResult*>& results) {
  ValidationSummary s;
  std::vector<const CaseResult*> ok;
  for (const CaseResult* r : results) {
    ++s.cases;
    switch (r->status) {
      case CaseStatus::Ok: ++s.ok; ok.push_back(r); break;
      case CaseStatus::Unsupported: ++s.unsupported; break;
      case CaseStatus::Failed: ++s.failed; break;
      case CaseStatus::Skipped: ++s.skipped; break;
    }
  }
  if (ok.empty()) return s;
  const double n = static_cast<double>(ok.size());
  double abs_sum = 0, signed_sum = 0;
  const CaseResult* worst = nullptr;
  for (const CaseResult* r : ok) {
    abs_sum += std::fabs(r->error_pct);
    signed_sum += r->error_pct;
    if (!worst || std::fabs(r->error_pct) > std::fabs(worst->error_pct)) worst = r;
  }
  s.mape_pct = abs_sum / n;
  s.mean_signed_error_pct = signed_sum / n;
  s.worst_id = worst->reference.id;
  s.worst_error_pct = worst->error_pct;
  if (ok.size() >= 2) {
    double mean_m = 0, mean_s = 0;
    for (const CaseResult* r : ok) {
      mean_m += r->reference.measured / n;
      mean_s += r->simulated / n;
    }
    double cov = 0, var_m = 0, var_s = 0;
    for (const CaseResult* r : ok) {
      const double dm = r->reference.measured - mean_m, ds = r->simulated - mean_s;
      cov += dm * ds;
      var_m += dm * dm;
      var_s += ds * ds;
    }
    if (var_m > 0 && var_s > 0) s.correlation = cov / std::sqrt(var_m * var_s);
  }
  return s;
}

ValidationSummary summarize(const std::vector<CaseResult>& results) {
  std::vector<const CaseResult*> all;
  for (const CaseResult& r : results) all.push_back(&r);
  return summarize(all);
}

ValidationSummaries summarize_groups(const std::vector<CaseResult>& results) {
  ValidationSummaries s;
  s.overall = summarize(results);
  s.by_gpu = by(results, [](const CaseResult& r) { return r.reference.gpu; });
  s.by_category = by(results, [](const CaseResult& r) { return r.reference.category; });
  s.by_gpu_category = by(results, [](const CaseResult& r) { return r.reference.gpu + "/" + r.reference.category; });
  return s;
}

}  // namespace warpsim
