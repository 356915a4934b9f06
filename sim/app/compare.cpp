#include "sim/app/compare.h"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "sim/core/error.h"

namespace warpsim {
namespace {

namespace pt = boost::property_tree;

struct Run {
  std::string label, gpu;
  pt::ptree kernels;
};

Run load(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(file)) file = (std::filesystem::path(file) / "stats.json").string();
  pt::ptree tree;
  try {
    pt::read_json(file, tree);
  } catch (const pt::json_parser_error& e) {
    throw InputError("compare: cannot read '" + file + "': " + e.message() + " (line " + std::to_string(e.line()) + ")");
  }
  const auto kernels = tree.get_child_optional("kernels");
  if (!kernels || !tree.get_optional<std::string>("gpu"))
    throw InputError("compare: '" + file + "' is not a warpsim stats.json (no 'gpu' and 'kernels')");
  return Run{path, tree.get<std::string>("gpu"), *kernels};
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

std::string compare_runs(const std::vector<std::string>& files) {
  if (files.size() < 2) throw InputError("compare: give at least two stats.json files (or run directories)");
  std::vector<Run> runs;
  for (const auto& f : files) runs.push_back(load(f));
  std::ostringstream o;
  for (std::size_t i = 0; i < runs.size(); ++i) o << "[" << i << "] " << runs[i].label << ": " << runs[i].gpu << "\n";
  const std::size_t n = runs[0].kernels.size();
  for (const auto& r : runs)
    if (r.kernels.size() != n)
      throw InputError("compare: '" + r.label + "' has " + std::to_string(r.kernels.size()) + " kernels, '" +
                       runs[0].label + "' has " + std::to_string(n));
  std::vector<pt::ptree::const_iterator> it;
  for (const auto& r : runs) it.push_back(r.kernels.begin());
  char line[256];
  for (std::size_t k = 0; k < n; ++k) {
    o << "\n" << it[0]->second.get<std::string>("name") << "\n";
    std::snprintf(line, sizeof line, "  %-4s %12s %9s %8s %8s %8s %8s %8s\n", "run", "time_us", "speedup", "TFLOP/s",
                  "tensor", "l2", "dram", "DRAM GB/s");
    o << line;
    const double base = it[0]->second.get<double>("time_us");
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const pt::ptree& kr = it[r]->second;
      const double t = kr.get<double>("time_us");
      const auto tflops = kr.get_optional<double>("achieved_tflops");
      std::snprintf(line, sizeof line, "  [%zu] %12.2f %8.3fx %8s %7.0f%% %7.0f%% %7.0f%% %8.0f\n", r, t, base / t,
                    tflops ? fmt("%.1f", *tflops).c_str() : "-", 100 * kr.get<double>("utilization.tensor", 0.0),
                    100 * kr.get<double>("utilization.l2", 0.0), 100 * kr.get<double>("utilization.dram", 0.0),
                    kr.get<double>("achieved_dram_gbps", 0.0));
      o << line;
      ++it[r];
    }
  }
  return o.str();
}

}  // namespace warpsim
