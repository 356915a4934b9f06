#include "app/compare.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "app/json_input.h"
#include "app/result_set.h"
#include "app/sweep/compare_sweeps.h"
#include "app/sweep/plan.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace warpsim {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// A kernel is the same kernel in two runs when its name and launch shape are: a GPU config changes timings,
// not what is launched.
struct KernelKey {
  std::string name, grid, block;
  bool operator<(const KernelKey& o) const { return std::tie(name, grid, block) < std::tie(o.name, o.grid, o.block); }
  std::string str() const { return fmt::format("{} (grid {}, block {})", name, grid, block); }
};

struct Run {
  std::string label, gpu;
  double total_time_us = 0;
  std::vector<std::pair<KernelKey, Json>> kernels;  // in launch order
  // The run's power section (models/power), when its GPU models energy: joules, average W, SM clock.
  std::optional<double> joules, average_w, sm_clock_hz;
};

enum class Expect { String, Number, Object, Array };

bool has_type(const Json& v, Expect type) {
  switch (type) {
    case Expect::String: return v.is_string();
    case Expect::Number: return v.is_number();
    case Expect::Object: return v.is_object();
    case Expect::Array: return v.is_array();
  }
  return false;
}

const char* type_name(Expect type) {
  switch (type) {
    case Expect::String: return "a string";
    case Expect::Number: return "a number";
    case Expect::Object: return "an object";
    case Expect::Array: return "an array";
  }
  return "";
}

// Reads the fields compare uses from one file (`where`), naming the file and the field ("kernels[2].time_us")
// when one is missing or of the wrong type, so that a damaged or hand-edited stats.json says where.
class StatsFields {
 public:
  explicit StatsFields(std::string where) : where_(std::move(where)) {}

  // The member `key` of `parent` (whose path is `parent_path`), or nullptr when it is optional and absent or null.
  const Json* get(const Json& parent, const std::string& parent_path, const char* key, Expect type, bool required) const {
    const std::string path = parent_path.empty() ? key : parent_path + "." + key;
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
      if (required) fail(path, fmt::format("is missing (it must be {})", type_name(type)));
      return nullptr;
    }
    if (!has_type(*it, type)) fail(path, fmt::format("must be {}", type_name(type)));
    return &*it;
  }

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw InputError(fmt::format("compare: '{}': {} {} (not a warpsim stats.json?)", where_, path, problem));
  }

 private:
  std::string where_;
};

// `stats` read from `where` (a file name, for messages), labelled `label`.
Run from_stats(const std::string& label, const Json& stats, const std::string& where) {
  const StatsFields fields(where);
  if (!stats.is_object()) fields.fail("the document", "must be an object");
  Run run;
  run.label = label;
  run.gpu = fields.get(stats, "", "gpu", Expect::String, true)->get<std::string>();
  if (const Json* total = fields.get(stats, "", "total_time_us", Expect::Number, false)) run.total_time_us = total->get<double>();
  if (const Json* power = fields.get(stats, "", "power", Expect::Object, false)) {
    const Json& energy = *fields.get(*power, "power", "energy", Expect::Object, true);
    run.joules = fields.get(energy, "power.energy", "joules", Expect::Number, true)->get<double>();
    run.average_w = fields.get(energy, "power.energy", "average_w", Expect::Number, true)->get<double>();
    run.sm_clock_hz = fields.get(*power, "power", "sustained_sm_clock_hz", Expect::Number, true)->get<double>();
  }
  const Json& kernels = *fields.get(stats, "", "kernels", Expect::Array, true);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Json& k = kernels[i];
    const std::string path = fmt::format("kernels[{}]", i);
    if (!k.is_object()) fields.fail(path, "must be an object");
    KernelKey key{fields.get(k, path, "name", Expect::String, true)->get<std::string>(), "", ""};
    fields.get(k, path, "time_us", Expect::Number, true);
    if (const Json* grid = fields.get(k, path, "grid", Expect::String, false)) key.grid = grid->get<std::string>();
    if (const Json* block = fields.get(k, path, "block", Expect::String, false)) key.block = block->get<std::string>();
    fields.get(k, path, "achieved_tflops", Expect::Number, false);
    fields.get(k, path, "achieved_dram_gbps", Expect::Number, false);
    if (const Json* utilization = fields.get(k, path, "utilization", Expect::Object, false))
      for (const char* unit : {"tensor", "l2", "dram"}) fields.get(*utilization, path + ".utilization", unit, Expect::Number, false);
    run.kernels.emplace_back(key, k);
  }
  return run;
}

bool is_sweep_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / sweep::kManifestFile, ec);
}

// A run directory (its result set verified complete) or a stats.json file.
Run load(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found)
    throw InputError(fmt::format("compare: cannot open '{}': no such file or directory (give a run directory or its stats.json)", path));
  if (ec) throw InputError(fmt::format("compare: cannot open '{}': {}", path, ec.message()));
  fs::path file = path;
  if (is_sweep_dir(path))
    throw InputError(fmt::format("compare: '{}' is a sweep run directory (it has {}) and the others are single runs: "
                                 "give only sweep run directories (their candidates side by side) or only runs",
                                 path, sweep::kManifestFile));
  if (status.type() == fs::file_type::directory) {
    file /= "stats.json";
    verify_result_set(path, file.filename().string());
  } else if (fs::exists(file.parent_path() / kRunManifest, ec)) {
    verify_result_set(file.parent_path(), file.filename().string());  // a file of a run directory: checked as the directory
  } else {
    spdlog::warn("compare: '{}' has no {} beside it: it cannot be verified as the complete result of a run", path, kRunManifest);
  }
  return from_stats(path, parse_json_input(read_input_file(file.string(), kMaxResultFileBytes, "result file"), file.string()), file.string());
}

// An optional number of a kernel (from_stats checked its type), 0 when absent.
double number(const Json& kernel, const char* key, const char* sub = nullptr) {
  const Json* v = &kernel;
  for (const char* k : {key, sub}) {
    if (!k) break;
    const auto it = v->find(k);
    if (it == v->end()) return 0.0;
    v = &*it;
  }
  return v->is_number() ? v->get<double>() : 0.0;
}

std::string kernel_row(std::size_t run, const Json& k, double baseline_us) {
  const double t = k["time_us"].get<double>();
  const Json& tflops = k.value("achieved_tflops", Json());
  return fmt::format("  [{}] {:>12.2f} {:>8.3f}x {:>8} {:>7.0f}% {:>7.0f}% {:>7.0f}% {:>8.0f}\n", run, t, baseline_us / t,
                     tflops.is_number() ? fmt::format("{:.1f}", tflops.get<double>()) : "-",
                     100 * number(k, "utilization", "tensor"), 100 * number(k, "utilization", "l2"),
                     100 * number(k, "utilization", "dram"), number(k, "achieved_dram_gbps"));
}

std::string compare_table(const std::vector<Run>& runs);

}  // namespace

std::string compare_runs(const std::vector<std::string>& files) {
  // Sweep run directories: their candidates side by side (one sweep is already a comparison).
  if (!files.empty() && std::all_of(files.begin(), files.end(), is_sweep_dir)) return sweep::compare_sweeps(files);
  if (files.size() < 2) throw InputError("compare: give at least two stats.json files (or run directories)");
  std::vector<Run> runs;
  for (const auto& f : files) runs.push_back(load(f));
  return compare_table(runs);
}

std::string compare_results(const std::vector<std::pair<std::string, std::string>>& results) {
  std::vector<Run> runs;
  for (const auto& [label, text] : results) runs.push_back(from_stats(label, parse_json_input(text, label), label));
  return compare_table(runs);
}

namespace {

std::string compare_table(const std::vector<Run>& runs) {
  std::string o;
  for (std::size_t i = 0; i < runs.size(); ++i) o += fmt::format("[{}] {}: {}\n", i, runs[i].label, runs[i].gpu);

  // The n-th launch of a kernel in one run matches the n-th launch of the same kernel in another.
  using Occurrence = std::pair<KernelKey, int>;
  std::vector<std::map<Occurrence, std::size_t>> index(runs.size());
  std::vector<std::vector<Occurrence>> order(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::map<KernelKey, int> seen;
    for (std::size_t i = 0; i < runs[r].kernels.size(); ++i) {
      const Occurrence occ{runs[r].kernels[i].first, seen[runs[r].kernels[i].first]++};
      index[r][occ] = i;
      order[r].push_back(occ);
    }
  }
  const std::string header = fmt::format("  {:<4} {:>12} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "run", "time_us",
                                         "speedup", "TFLOP/s", "tensor", "l2", "dram", "DRAM GB/s");
  std::vector<std::string> unmatched;
  for (const Occurrence& occ : order[0]) {
    o += fmt::format("\n{}\n{}", occ.first.str(), header);
    const Json& base = runs[0].kernels[index[0].at(occ)].second;
    const double base_us = base["time_us"].get<double>();
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const auto it = index[r].find(occ);
      if (it == index[r].end()) o += fmt::format("  [{}] not in this run\n", r);
      else o += kernel_row(r, runs[r].kernels[it->second].second, base_us);
    }
  }
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (const Occurrence& occ : order[r])
      if (!index[0].count(occ)) unmatched.push_back(fmt::format("  [{}] {}", r, occ.first.str()));
  if (!unmatched.empty()) {
    o += fmt::format("\nkernels not in the baseline [0] (no match by name, grid and block):\n");
    for (const auto& line : unmatched) o += line + "\n";
  }
  o += fmt::format("\ntotal (every kernel of the run)\n  {:<4} {:>12} {:>9}\n", "run", "time_us", "speedup");
  for (std::size_t r = 0; r < runs.size(); ++r)
    o += fmt::format("  [{}] {:>12.2f} {:>8.3f}x\n", r, runs[r].total_time_us, runs[0].total_time_us / runs[r].total_time_us);
  if (std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.joules.has_value(); })) {
    o += fmt::format("\npower (every kernel of the run)\n  {:<4} {:>12} {:>9} {:>9} {:>9}\n", "run", "energy_mJ", "avg_W",
                     "SM_GHz", "energy");
    for (std::size_t r = 0; r < runs.size(); ++r) {
      if (!runs[r].joules) {
        o += fmt::format("  [{}] no energy model (power.enabled false)\n", r);
        continue;
      }
      const std::string ratio = runs[0].joules && *runs[0].joules > 0 ? fmt::format("{:.3f}x", *runs[r].joules / *runs[0].joules) : "-";
      o += fmt::format("  [{}] {:>12.4g} {:>9.0f} {:>9.3f} {:>9}\n", r, *runs[r].joules * 1e3, *runs[r].average_w,
                       *runs[r].sm_clock_hz / 1e9, ratio);
    }
  }
  return o;
}

}  // namespace
}  // namespace warpsim
