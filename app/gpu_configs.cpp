#include "app/gpu_configs.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

#include "sim/core/error.h"
#include "sim/registry/registry.h"

namespace fs = std::filesystem;

namespace warpsim {
namespace {

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::vector<std::string> shipped_config_names() {
  std::vector<std::string> names;
  for (const std::string& dir : config_dirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

std::string installed_share_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path() / ".." / "share" / "warpsim").lexically_normal().string();
}

std::vector<std::string> config_dirs() {
  if (const char* env = std::getenv("WARPSIM_CONFIG_DIR"); env && *env) return {env};
  std::vector<std::string> dirs;
  if (const std::string share = installed_share_dir(); !share.empty()) {
    const fs::path installed = fs::path(share) / "configs";
    if (is_dir(installed)) dirs.push_back(installed.string());
  }
  const fs::path source_tree = fs::path(WARPSIM_SOURCE_DIR) / "configs";
  if (is_dir(source_tree)) dirs.push_back(source_tree.string());
  return dirs;
}

std::string resolve_gpu_config(const std::string& name_or_path) {
  if (name_or_path.empty()) {
    throw InputError(fmt::format("--gpu: empty; expected the name of a shipped config ({}) or the path of a YAML file",
                                 fmt::join(shipped_config_names(), ", ")));
  }
  if (!is_config_name(name_or_path)) return name_or_path;
  const std::vector<std::string> dirs = config_dirs();
  const std::string found = find_named_config(name_or_path, dirs);
  if (!found.empty()) return found;
  std::string msg = fmt::format("no shipped GPU config named '{}' (looked for {}.yaml in {})", name_or_path,
                                name_or_path, dirs.empty() ? "no config directory" : fmt::format("{}", fmt::join(dirs, ", ")));
  const std::vector<std::string> known = shipped_config_names();
  std::string hint;
  for (const auto& k : known)  // "h100" -> "h100_sxm": a prefix says more than an edit distance
    if (hint.empty() && k.rfind(name_or_path, 0) == 0) hint = k;
  if (hint.empty()) hint = did_you_mean(name_or_path, known);
  if (!hint.empty()) msg += fmt::format("; did you mean '{}'?", hint);
  else if (!known.empty()) msg += fmt::format(" (shipped configs: {})", fmt::join(known, ", "));
  throw InputError(msg);
}

Config load_gpu_config(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  const std::string file = resolve_gpu_config(name_or_path);
  Config config = Config::load(file, overrides, Registry::instance(), config_dirs());
  // Once per file chain: an LLM step or a validation loads the same config for every kernel.
  static std::mutex logged_mutex;
  static std::set<std::string> logged;
  const std::string chain = fmt::format("{}", fmt::join(config.files(), " <- "));
  const std::lock_guard<std::mutex> lock(logged_mutex);
  if (logged.insert(chain).second) spdlog::info("GPU config {}", chain);
  return config;
}

}  // namespace warpsim
