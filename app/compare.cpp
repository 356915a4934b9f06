#include "app/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "sim/core/error.h"

namespace warpsim {
namespace {

using Json = nlohmann::json;

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
};

// `stats` read from `where` (a file name, for messages), labelled `label`.
Run from_stats(const std::string& label, const Json& stats, const std::string& where) {
  const auto is_kernel = [](const Json& k) {
    return k.is_object() && k.value("name", Json()).is_string() && k.value("time_us", Json()).is_number();
  };
  if (!stats.is_object() || !stats.value("gpu", Json()).is_string() || !stats.value("kernels", Json()).is_array() ||
      !std::all_of(stats["kernels"].begin(), stats["kernels"].end(), is_kernel))
    throw InputError(fmt::format("compare: '{}' is not a warpsim stats.json (no 'gpu' and 'kernels' with names and times)", where));
  Run run{label, stats["gpu"].get<std::string>(), stats.value("total_time_us", 0.0), {}};
  for (const Json& k : stats["kernels"])
    run.kernels.emplace_back(KernelKey{k["name"], k.value("grid", ""), k.value("block", "")}, k);
  return run;
}

Run load(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(file)) file = (std::filesystem::path(file) / "stats.json").string();
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("compare: cannot open '{}': no such file (give a run directory or its stats.json)", file));
  Json stats;
  try {
    stats = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw InputError(fmt::format("compare: cannot read '{}': {}", file, e.what()));
  }
  return from_stats(path, stats, file);
}

double number(const Json& kernel, const char* key, const char* sub = nullptr) {
  const Json& v = sub ? kernel.value(key, Json::object()).value(sub, Json()) : kernel.value(key, Json());
  return v.is_number() ? v.get<double>() : 0.0;
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
  if (files.size() < 2) throw InputError("compare: give at least two stats.json files (or run directories)");
  std::vector<Run> runs;
  for (const auto& f : files) runs.push_back(load(f));
  return compare_table(runs);
}

std::string compare_results(const std::vector<std::pair<std::string, std::string>>& results) {
  std::vector<Run> runs;
  for (const auto& [label, text] : results) runs.push_back(from_stats(label, Json::parse(text), label));
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
  return o;
}

}  // namespace
}  // namespace warpsim
