#include "app/validate/validation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "app/validate/summary.h"

namespace warpsim {
namespace {

using OrderedJson = nlohmann::ordered_json;
constexpr auto kInvalidUtf8 = OrderedJson::error_handler_t::replace;

OrderedJson number_or_null(const std::optional<double>& v) { return v && std::isfinite(*v) ? OrderedJson(*v) : OrderedJson(nullptr); }

OrderedJson summary_json(const ValidationSummary& s) {
  OrderedJson j;
  j["cases"] = s.cases;
  j["ok"] = s.ok;
  j["unsupported"] = s.unsupported;
  j["failed"] = s.failed;
  j["skipped"] = s.skipped;
  j["mape_pct"] = number_or_null(s.mape_pct);
  j["mean_signed_error_pct"] = number_or_null(s.mean_signed_error_pct);
  j["worst_id"] = s.worst_error_pct ? OrderedJson(s.worst_id) : OrderedJson(nullptr);
  j["worst_error_pct"] = number_or_null(s.worst_error_pct);
  j["correlation"] = number_or_null(s.correlation);
  return j;
}

OrderedJson groups_json(const std::vector<std::pair<std::string, ValidationSummary>>& groups) {
  OrderedJson j = OrderedJson::object();
  for (const auto& [label, s] : groups) j[label] = summary_json(s);
  return j;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

// Shortest text that reads back as the same double, as the JSON has it.
std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

// Figures for the terminal: 4 significant digits.
std::string figure(double v) { return fmt::format("{:.4g}", v); }
std::string percent(const std::optional<double>& v) { return v ? fmt::format("{:+.1f}%", *v) : "-"; }

std::string summary_line(const std::string& label, const ValidationSummary& s, std::size_t width) {
  std::string counts = fmt::format("{} case{}: {} ok", s.cases, s.cases == 1 ? "" : "s", s.ok);
  if (s.unsupported) counts += fmt::format(", {} unsupported", s.unsupported);
  if (s.failed) counts += fmt::format(", {} failed", s.failed);
  if (s.skipped) counts += fmt::format(", {} skipped", s.skipped);
  if (!s.mape_pct) return fmt::format("  {:<{}}  {}\n", label, width, counts);
  return fmt::format("  {:<{}}  {}; MAPE {:.1f}%, mean signed error {}, worst {} ({}), correlation {}\n", label, width,
                     counts, *s.mape_pct, percent(s.mean_signed_error_pct), s.worst_id, percent(s.worst_error_pct),
                     s.correlation ? fmt::format("{:.3f}", *s.correlation) : "-");
}

std::string skipped_source(const NcuInput& ncu, const NcuSkipped& s) {
  return fmt::format("{} row {} (ncu --csv --page raw)", ncu.file, s.row);
}

}  // namespace

std::string ncu_input_text(const NcuInput& ncu, std::size_t cases) {
  std::string out = fmt::format("Nsight Compute export {}{}: {} launch{}, {} case{}, {} launch{} skipped\n", ncu.file,
                                ncu.map.empty() ? " (no --map)" : " with --map " + ncu.map, ncu.launches,
                                ncu.launches == 1 ? "" : "es", cases, cases == 1 ? "" : "s", ncu.skipped.size(),
                                ncu.skipped.size() == 1 ? "" : "es");
  for (const NcuSkipped& s : ncu.skipped)
    out += fmt::format("  skipped row {} (line {}) {}: {}\n", s.row, s.line, classify_ncu_kernel(s.kernel).short_name,
                       s.reason);
  if (!ncu.ignored.empty()) {
    // One line: the columns grouped by reason, in the order of their first column.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    for (const NcuIgnoredMetric& m : ncu.ignored) {
      auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& g) { return g.first == m.reason; });
      if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {m.reason, {}});
      it->second.push_back(m.metric);
    }
    std::vector<std::string> groups;
    for (const auto& [reason, columns] : by_reason)
      groups.push_back(fmt::format("{}: {}", fmt::join(columns, ", "), reason));
    out += fmt::format("ignored {} column{}: {}\n", ncu.ignored.size(), ncu.ignored.size() == 1 ? "" : "s",
                       fmt::join(groups, "; "));
  }
  return out;
}

std::string validation_json(const std::vector<CaseResult>& results, const std::vector<std::string>& reference_files,
                            const NcuInput* ncu) {
  OrderedJson j;
  j["reference"] = reference_files;
  if (ncu) {
    OrderedJson n;
    n["export"] = ncu->file;
    n["map"] = ncu->map.empty() ? OrderedJson(nullptr) : OrderedJson(ncu->map);
    n["launches"] = ncu->launches;
    n["ignored_columns"] = OrderedJson::array();
    for (const NcuIgnoredMetric& m : ncu->ignored) n["ignored_columns"].push_back(OrderedJson{{"column", m.metric}, {"reason", m.reason}});
    j["ncu"] = std::move(n);
  } else {
    j["ncu"] = nullptr;
  }
  j["cases"] = OrderedJson::array();
  for (const CaseResult& r : results) {
    const ReferenceCase& c = r.reference;
    const bool ok = r.status == CaseStatus::Ok;
    j["cases"].push_back(OrderedJson{{"id", c.id},
                              {"gpu", c.gpu},
                              {"category", c.category},
                              {"kind", c.kind},
                              {"metric", c.metric},
                              {"measured", c.measured},
                              {"simulated", ok ? number_or_null(r.simulated) : OrderedJson(nullptr)},
                              {"error_pct", ok ? number_or_null(r.error_pct) : OrderedJson(nullptr)},
                              {"status", status_name(r.status)},
                              {"reason", r.reason},
                              {"source", c.source},
                              {"unit", r.unit}});
  }
  j["skipped_launches"] = OrderedJson::array();
  if (ncu)
    for (const NcuSkipped& k : ncu->skipped)
      j["skipped_launches"].push_back(OrderedJson{{"kernel", k.kernel}, {"row", k.row}, {"line", k.line}, {"reason", k.reason},
                                  {"source", skipped_source(*ncu, k)}});
  const ValidationSummaries s = summarize_groups(results);
  j["summary"]["overall"] = summary_json(s.overall);
  j["summary"]["by_gpu"] = groups_json(s.by_gpu);
  j["summary"]["by_category"] = groups_json(s.by_category);
  j["summary"]["by_gpu_category"] = groups_json(s.by_gpu_category);
  j["summary"]["skipped_launches"] = ncu ? ncu->skipped.size() : 0;
  return j.dump(2, ' ', false, kInvalidUtf8) + "\n";
}

std::string validation_csv(const std::vector<CaseResult>& results) {
  std::string out = "id,gpu,category,kind,metric,measured,simulated,error_pct,status,reason,source\n";
  for (const CaseResult& r : results) {
    const ReferenceCase& c = r.reference;
    const bool ok = r.status == CaseStatus::Ok;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(c.id), csv_field(c.gpu), csv_field(c.category),
                       csv_field(c.kind), csv_field(c.metric), csv_number(c.measured), ok ? csv_number(r.simulated) : "",
                       ok ? csv_number(r.error_pct) : "", status_name(r.status), csv_field(r.reason), csv_field(c.source));
  }
  return out;
}

std::string validation_table(const std::vector<CaseResult>& results, const NcuInput* ncu) {
  std::size_t id_w = 2, gpu_w = 3, metric_w = 6;
  for (const CaseResult& r : results) {
    id_w = std::max(id_w, r.reference.id.size());
    gpu_w = std::max(gpu_w, r.reference.gpu.size());
    metric_w = std::max(metric_w, r.reference.metric.size() + (r.unit.empty() ? 0 : r.unit.size() + 3));
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>8}  {}\n", "id", id_w, "gpu", gpu_w, "metric",
                                metric_w, "measured", "simulated", "error", "status");
  for (const CaseResult& r : results) {
    const ReferenceCase& c = r.reference;
    const bool ok = r.status == CaseStatus::Ok;
    const std::string metric = r.unit.empty() ? c.metric : fmt::format("{} [{}]", c.metric, r.unit);
    std::string status = status_name(r.status);
    if (!ok) status += ": " + r.reason;
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>8}  {}\n", c.id, id_w, c.gpu, gpu_w, metric, metric_w,
                       figure(c.measured), ok ? figure(r.simulated) : "-",
                       ok ? fmt::format("{:+.1f}%", r.error_pct) : "-", status);
  }
  const ValidationSummaries s = summarize_groups(results);
  std::size_t w = 7;
  for (const auto* groups : {&s.by_gpu, &s.by_category, &s.by_gpu_category})
    for (const auto& g : *groups) w = std::max(w, g.first.size());
  out += "\nsummary (error = (simulated - measured) / measured; MAPE = mean |error|):\n";
  out += summary_line("overall", s.overall, w);
  if (ncu)
    out += fmt::format("  {:<{}}  {} of {} launch{} of {} (listed above)\n", "skipped", w, ncu->skipped.size(),
                       ncu->launches, ncu->launches == 1 ? "" : "es", ncu->file);
  out += "by GPU:\n";
  for (const auto& [label, summary] : s.by_gpu) out += summary_line(label, summary, w);
  out += "by category:\n";
  for (const auto& [label, summary] : s.by_category) out += summary_line(label, summary, w);
  return out;
}

}  // namespace warpsim
