#include "app/import_kineto.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>

#include "app/gpu_configs.h"
#include "app/json_input.h"
#include "app/validate/runner.h"
#include "app/workload_cache.h"
#include "sim/core/error.h"
#include "traces/kineto/classify.h"
#include "traces/kineto/kineto_trace.h"
#include "traces/synth/attention.h"
#include "traces/synth/registry.h"

namespace warpsim {
namespace {

using nlohmann::json;
using kineto::Kernel;
using kineto::Mapping;
using kineto::MapStatus;

// Kineto traces of whole inference runs are tens of MB of JSON; 2 GiB (compressed and decompressed) keeps a stray
// file from exhausting memory and the gzip input within zlib's 32-bit counts.
constexpr std::uint64_t kMaxKinetoBytes = std::uint64_t{2} << 30;

struct Row {
  const Kernel* kernel;
  Mapping mapping;
  std::string status;       // mapped, approx, helper, unmapped, failed, skipped, excluded
  std::string note;
  double simulated_us = NAN;  // main rows that were simulated: the whole synthesized workload
  long workload = -1;         // index into the distinct workloads
  bool counted_mapped = false;  // its measured time is compared (a simulated main row, or a helper of one)
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number_or_empty(double v, const char* format = "{:.3f}") {
  return std::isnan(v) ? std::string() : fmt::format(fmt::runtime(format), v);
}

std::string short_name(const std::string& name, std::size_t n = 90) {
  return name.size() <= n ? name : name.substr(0, n - 3) + "...";
}

std::string keys_text(const Mapping& m) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : m.keys) parts.push_back(k + "=" + v);
  return m.synthesizer.empty() ? std::string() : m.synthesizer + " " + fmt::format("{}", fmt::join(parts, " "));
}

std::string launch_text(const std::uint32_t grid[3], const std::uint32_t block[3]) {
  return fmt::format("{}x{}x{}/{}x{}x{}", grid[0], grid[1], grid[2], block[0], block[1], block[2]);
}

// The grid and block of a workload's first kernel (its main one) as the synthesizer builds it for `config`, in
// launch_text()'s form, or "" when the synthesizer refuses the keys (the simulation then fails and says why).
std::string synthesized_launch(const ReferenceCase& c, const Config& config) {
  try {
    const std::unique_ptr<TraceSource> trace = SynthRegistry::instance().make(c.kind, c.keys, config);
    if (trace->num_kernels() == 0) return "";
    const KernelInfo info = trace->open_kernel(0)->info();
    const std::uint32_t grid[3] = {info.grid.x, info.grid.y, info.grid.z}, block[3] = {info.block.x, info.block.y, info.block.z};
    return launch_text(grid, block);
  } catch (const InputError&) {
    return "";
  }
}

double pct(double simulated, double measured) { return measured > 0 ? (simulated - measured) / measured * 100.0 : NAN; }

}  // namespace

ImportKinetoOutput import_kineto(const ImportKinetoOptions& o) {
  // Every input is checked before the first simulation: config, options, trace.
  const Config config = load_gpu_config(o.gpu, o.overrides);
  std::optional<std::regex> only;
  if (!o.only.empty()) {
    try {
      only.emplace(o.only, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw InputError(fmt::format("--only: '{}' is not a regular expression: {}", o.only, e.what()));
    }
  }
  const std::string text = kineto::read_trace_text(o.trace, kMaxKinetoBytes);
  json doc;
  try {
    doc = parse_json_input(text, o.trace);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}; expected a Kineto (PyTorch profiler) trace: a JSON document, plain or gzip-compressed",
                                 e.what()));
  }
  const kineto::Trace trace = kineto::parse_trace(doc, o.trace);
  doc = json();
  if (trace.kernels.empty())
    throw InputError(fmt::format("'{}': no kernel events (cat \"kernel\") in traceEvents; expected a trace of GPU activity "
                                 "(profile with ProfilerActivity.CUDA)", o.trace));

  // A Hopper-native attention kernel (variant fa3) projected onto a GPU without TMA and warpgroup MMA runs as the
  // kernel flash-attention would pick there (fa2), and says so.
  const Config target = load_gpu_config(o.gpu, o.overrides);
  const std::string target_arch = target.section("gpu").str("arch");
  const bool target_has_fa3 = synth::attn::fa3_supported(target);
  // Classification, and the distinct workloads (one simulation each).
  std::vector<Row> rows;
  rows.reserve(trace.kernels.size());
  std::map<std::pair<std::string, std::map<std::string, std::string>>, long> workload_index;  // the dedupe map
  std::vector<ReferenceCase> cases;
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) {
    const Kernel& k = trace.kernels[i];
    Row r{&k, kineto::classify_kernel(k), "", "", NAN, -1, false};
    r.status = kineto::map_status_name(r.mapping.status);
    if (r.mapping.synthesizer == "attention" && r.mapping.keys["variant"] == "fa3" && !target_has_fa3) {
      r.mapping.keys["variant"] = "fa2";
      r.mapping.note += fmt::format("; simulated as fa2 on this {} GPU (no TMA/warpgroup MMA for FlashAttention-3)", target_arch);
    }
    r.note = r.mapping.note;
    const bool selected = (o.limit == 0 || i < o.limit) && (!only || std::regex_search(k.name, *only));
    if (!selected) {
      r.status = "excluded";
      r.note = "not selected by --only / --limit";
    } else if (r.mapping.status == MapStatus::Mapped || r.mapping.status == MapStatus::Approx) {
      const auto key = std::make_pair(r.mapping.synthesizer, r.mapping.keys);
      auto [it, fresh] = workload_index.emplace(key, static_cast<long>(cases.size()));
      if (fresh) {
        ReferenceCase c;
        c.id = fmt::format("kernel {} ({})", i, keys_text(r.mapping));
        c.gpu = o.gpu;
        c.overrides = o.overrides;
        c.kind = r.mapping.synthesizer;
        c.keys = r.mapping.keys;
        c.metric = "time_us";
        c.measured = std::max(k.duration_us, 1e-9);
        c.source = o.trace;
        c.category = r.mapping.category;
        cases.push_back(std::move(c));
      }
      r.workload = it->second;
    }
    rows.push_back(std::move(r));
  }

  // The synthesizers' launch shapes, to set beside the captured ones: whether the synthesized kernel is launched as
  // the library launched it (a reduction: PyTorch's rule, followed) or picks its own (a GEMM: its own tiling).
  std::vector<std::string> case_launch;
  for (const ReferenceCase& c : cases) case_launch.push_back(synthesized_launch(c, target));

  WorkloadCache cache(o.cache_dir);
  ValidateOptions vo;
  vo.cache = &cache;
  vo.jobs = o.jobs;
  vo.max_memory_bytes = o.max_memory_bytes;
  vo.max_warp_instructions = o.max_warp_instructions;
  if (o.progress)
    vo.on_start = [&](std::size_t i, const ReferenceCase& c) {
      fmt::print(stderr, "warpsim: simulating workload {} of {}: {}\n", i + 1, cases.size(), c.id);
    };
  // Each simulation loads the config again and would log its file: once is enough (above).
  const spdlog::level::level_enum log_level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  std::vector<CaseResult> results;
  try {
    results = run_cases(cases, vo);
  } catch (...) {
    spdlog::set_level(log_level);
    throw;
  }
  spdlog::set_level(log_level);

  // Main rows get their workload's result; helpers go with the main kernel of their operator.
  std::map<std::string, const Row*> last_main_of_operator;
  for (Row& r : rows) {
    if (r.workload >= 0) {
      const CaseResult& c = results[static_cast<std::size_t>(r.workload)];
      if (c.status == CaseStatus::Ok) {
        r.simulated_us = c.simulated;
        r.counted_mapped = true;
      } else {
        r.status = c.status == CaseStatus::Skipped ? "skipped" : "failed";
        r.note = c.reason;
      }
      if (r.counted_mapped) last_main_of_operator[kineto::operator_key(*r.kernel)] = &r;
    } else if (r.mapping.status == MapStatus::Helper && r.status != "excluded") {
      const std::string op = kineto::operator_key(*r.kernel);
      const auto main = op.empty() ? last_main_of_operator.end() : last_main_of_operator.find(op);
      if (main != last_main_of_operator.end()) {
        r.counted_mapped = true;
        r.note = fmt::format("{}; its time is in the simulated workload of {}", r.note, short_name(main->second->kernel->name, 60));
      } else {
        r.status = "unmapped";
        r.note = r.note + ": the main kernel of its operator was not simulated";
      }
    }
  }

  // Totals.
  struct Totals {
    std::size_t kernels = 0, mapped = 0, launch_compared = 0, launch_same = 0;
    double measured = 0, measured_mapped = 0, simulated = 0;
  };
  const auto captured_launch = [](const Row& r) { return launch_text(r.kernel->grid, r.kernel->block); };
  const auto row_launch = [&](const Row& r) {
    return r.workload >= 0 && !std::isnan(r.simulated_us) ? case_launch[static_cast<std::size_t>(r.workload)] : std::string();
  };
  Totals all;
  std::map<std::string, Totals> by_category;
  struct Unmapped { std::string category, name, status, reason; std::size_t count = 0; double measured = 0; };
  std::map<std::tuple<std::string, std::string, std::string>, Unmapped> unmapped;  // (status, reason, name)
  for (const Row& r : rows) {
    for (Totals* t : {&all, &by_category[r.mapping.category]}) {
      ++t->kernels;
      t->measured += r.kernel->duration_us;
      if (r.counted_mapped) {
        ++t->mapped;
        t->measured_mapped += r.kernel->duration_us;
        if (!std::isnan(r.simulated_us)) t->simulated += r.simulated_us;
      }
      if (!row_launch(r).empty()) {
        ++t->launch_compared;
        t->launch_same += row_launch(r) == captured_launch(r);
      }
    }
    if (!r.counted_mapped) {
      Unmapped& u = unmapped[{r.status, r.note, r.kernel->name}];
      u.category = r.mapping.category; u.name = r.kernel->name; u.status = r.status; u.reason = r.note;
      ++u.count;
      u.measured += r.kernel->duration_us;
    }
  }
  const std::string config_name = config.section("gpu").str("name");
  const bool validation = o.overrides.empty() && !trace.device_name.empty() && config_name == trace.device_name;
  const std::string mode = validation ? "validation" : "projection";
  const std::string mode_reason =
      validation ? fmt::format("the config's gpu.name is the capturing GPU's ('{}')", trace.device_name)
                 : trace.device_name.empty()
                       ? std::string("the trace names no GPU (deviceProperties)")
                       : fmt::format("captured on '{}', simulated on '{}'{}", trace.device_name, config_name,
                                     o.overrides.empty() ? "" : " with --set overrides");

  ImportKinetoOutput out;
  // kernels.csv
  std::string csv =
      "name,category,shape,measured_us,simulated_us,error_pct,status,stream,start_us,workload,captured_launch,"
      "synthesized_launch,note\n";
  const double t0 = trace.kernels.front().start_us;
  for (const Row& r : rows) {
    csv += fmt::format("{},{},{},{:.3f},{},{},{},{},{:.3f},{},{},{},{}\n", csv_field(r.kernel->name), r.mapping.category,
                       csv_field(r.mapping.shape), r.kernel->duration_us, number_or_empty(r.simulated_us),
                       number_or_empty(pct(r.simulated_us, r.kernel->duration_us), "{:.1f}"), r.status, r.kernel->stream,
                       r.kernel->start_us - t0, csv_field(keys_text(r.mapping)), captured_launch(r), row_launch(r),
                       csv_field(r.note));
  }
  out.kernels_csv = std::move(csv);

  // summary.json and the text
  const auto totals_json = [](const Totals& t) {
    json j = {{"kernels", t.kernels}, {"kernels_mapped", t.mapped}, {"measured_us", t.measured},
              {"measured_mapped_us", t.measured_mapped}, {"simulated_us", t.simulated},
              {"mapped_share_pct", t.measured > 0 ? t.measured_mapped / t.measured * 100.0 : 0.0},
              {"launch_compared", t.launch_compared}, {"launch_as_captured", t.launch_same}};
    j["error_pct"] = t.measured_mapped > 0 ? json(pct(t.simulated, t.measured_mapped)) : json(nullptr);
    return j;
  };
  json summary = {{"trace", o.trace},
                  {"device", trace.device_name},
                  {"device_sms", trace.device_sms},
                  {"gpu_config", o.gpu},
                  {"gpu_config_name", config_name},
                  {"overrides", o.overrides},
                  {"mode", mode},
                  {"mode_reason", mode_reason},
                  {"record_shapes", trace.record_shapes},
                  {"distinct_workloads", cases.size()},
                  {"total", totals_json(all)}};
  json cats = json::object();
  for (const auto& [c, t] : by_category) cats[c] = totals_json(t);
  summary["categories"] = cats;
  json um = json::array();
  std::vector<const Unmapped*> unmapped_sorted;
  for (const auto& [key, u] : unmapped) unmapped_sorted.push_back(&u);
  std::stable_sort(unmapped_sorted.begin(), unmapped_sorted.end(), [](const Unmapped* a, const Unmapped* b) { return a->measured > b->measured; });
  std::size_t unmapped_kernels = 0;
  double unmapped_us = 0;
  for (const Unmapped* u : unmapped_sorted) {
    um.push_back({{"name", u->name}, {"category", u->category}, {"status", u->status}, {"reason", u->reason},
                  {"count", u->count}, {"measured_us", u->measured}});
    unmapped_kernels += u->count;
    unmapped_us += u->measured;
  }
  summary["not_compared"] = {{"kernels", unmapped_kernels}, {"measured_us", unmapped_us}, {"groups", um}};
  json other = json::array();
  for (const auto& e : trace.other_gpu_events) other.push_back({{"category", e.category}, {"name", e.name}, {"measured_us", e.duration_us}});
  summary["other_gpu_events_not_simulated"] = other;
  out.summary_json = summary.dump(2) + "\n";

  std::string s = fmt::format("import-kineto: {} kernels of '{}' ({}{}), on {} ({}): {}: {}\n", all.kernels, o.trace,
                              trace.device_name.empty() ? "GPU not named" : trace.device_name,
                              trace.record_shapes ? ", shapes recorded" : ", no record_shapes", o.gpu, config_name, mode,
                              mode_reason);
  s += fmt::format("  {} distinct workloads simulated; {} kernels compared\n\n", cases.size(), all.mapped);
  s += fmt::format("  {:<12} {:>7} {:>8} {:>13} {:>13} {:>13} {:>8} {:>7}\n", "category", "kernels", "compared", "measured_us",
                   "meas_mapped", "simulated_us", validation ? "error" : "change", "share");
  const auto line = [&](const std::string& name, const Totals& t) {
    const double e = pct(t.simulated, t.measured_mapped);
    s += fmt::format("  {:<12} {:>7} {:>8} {:>13.1f} {:>13.1f} {:>13.1f} {:>8} {:>6.1f}%\n", name, t.kernels, t.mapped,
                     t.measured, t.measured_mapped, t.simulated, std::isnan(e) ? "-" : fmt::format("{:+.1f}%", e),
                     t.measured > 0 ? t.measured_mapped / t.measured * 100 : 0.0);
  };
  for (const auto& [c, t] : by_category) line(c, t);
  line("total", all);
  s += fmt::format("\n  {} = (simulated - measured) / measured over the compared kernels{}; share = measured time of the "
                   "compared kernels / all measured kernel time\n", validation ? "error" : "change",
                   validation ? "" : " (a projection: the measured times are the capturing GPU's)");
  if (all.launch_compared > 0) {
    std::string per_category;
    for (const auto& [c, t] : by_category)
      if (t.launch_compared > 0) per_category += fmt::format("{}{} {}/{}", per_category.empty() ? "" : ", ", c, t.launch_same, t.launch_compared);
    s += fmt::format("  launch shape (grid/block) as captured: {} of {} simulated kernels ({}); kernels.csv has both\n",
                     all.launch_same, all.launch_compared, per_category);
  }
  if (!unmapped_sorted.empty()) {
    s += fmt::format("  not compared: {} kernels, {:.1f} us measured ({:.1f}% of kernel time):\n", unmapped_kernels, unmapped_us,
                     all.measured > 0 ? unmapped_us / all.measured * 100 : 0.0);
    for (const Unmapped* u : unmapped_sorted)
      s += fmt::format("    {:>4} x {:>10.1f} us  {:<10} {:<8} {}\n                                  {}\n", u->count, u->measured,
                       u->category, u->status, short_name(u->name), u->reason);
  }
  if (!trace.other_gpu_events.empty()) {
    double t = 0;
    for (const auto& e : trace.other_gpu_events) t += e.duration_us;
    s += fmt::format("  not kernels (memcpy/memset, not simulated): {} events, {:.1f} us\n", trace.other_gpu_events.size(), t);
  }
  out.summary_text = std::move(s);

  // timeline.json: process 1 measured, process 2 simulated; one thread per stream. A simulated kernel starts at its
  // measured start (the host's timing as captured) or when the previous simulated kernel of its stream ends.
  json events = json::array();
  const std::string sim_label = fmt::format("simulated on {} ({})", o.gpu, mode);
  events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "measured: " + (trace.device_name.empty() ? std::string("GPU") : trace.device_name)}}}});
  events.push_back({{"ph", "M"}, {"pid", 2}, {"name", "process_name"}, {"args", {{"name", sim_label}}}});
  std::map<std::int64_t, double> stream_end;
  for (const Row& r : rows) {
    const Kernel& k = *r.kernel;
    const double start = k.start_us - t0;
    json args = {{"category", r.mapping.category}, {"shape", r.mapping.shape}, {"status", r.status}, {"measured_us", k.duration_us}};
    if (!std::isnan(r.simulated_us)) args["simulated_us"] = r.simulated_us;
    events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", k.stream}, {"name", k.name}, {"cat", r.mapping.category},
                      {"ts", start}, {"dur", k.duration_us}, {"args", args}});
    if (r.status == "helper") continue;  // its time is in its main kernel's simulated workload
    // Kernels not simulated keep their measured duration on the simulated track, marked as such.
    const double dur = std::isnan(r.simulated_us) ? k.duration_us : r.simulated_us;
    double& end = stream_end[k.stream];
    const double sim_start = std::max(start, end);
    end = sim_start + dur;
    events.push_back({{"ph", "X"}, {"pid", 2}, {"tid", k.stream}, {"name", std::isnan(r.simulated_us) ? "[measured] " + k.name : k.name},
                      {"cat", std::isnan(r.simulated_us) ? std::string("not simulated") : r.mapping.category},
                      {"ts", sim_start}, {"dur", dur}, {"args", args}});
  }
  out.timeline_json = json({{"traceEvents", events}, {"displayTimeUnit", "ns"}}).dump() + "\n";
  return out;
}

}  // namespace warpsim
