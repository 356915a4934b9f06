#include "app/validate/case_selection.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>
#include <regex>
#include <set>

#include "app/gpu_configs.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;

namespace warpsim {

std::vector<ReferenceCase> select_cases(const std::string& command, const std::vector<std::string>& files,
                                        const std::string& gpu, const std::string& only,
                                        const std::vector<ReferenceCase>& imported, const std::string& import_file) {
  std::optional<std::regex> id_filter;
  try {
    if (!only.empty()) id_filter.emplace(only, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw InputError(fmt::format("--only: '{}' is not a regular expression: {}", only, e.what()));
  }
  // The same config file is the same GPU, however it is named.
  auto config_file = [](const std::string& name_or_path) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(resolve_gpu_config(name_or_path), ec);
    return ec ? resolve_gpu_config(name_or_path) : canonical.string();
  };
  const std::string gpu_file = gpu.empty() ? "" : config_file(gpu);
  std::vector<ReferenceCase> all, selected;
  const auto add = [&](ReferenceCase c, bool on_gpu) {
    for (const ReferenceCase& earlier : all)
      if (earlier.id == c.id)
        throw InputError(fmt::format("{}:{}: case {}: duplicate id (also at {}:{})", c.file, c.line, c.id, earlier.file,
                                     earlier.line));
    all.push_back(c);
    if (!on_gpu) return;
    if (id_filter && !std::regex_search(c.id, *id_filter)) return;
    selected.push_back(std::move(c));
  };
  for (const std::string& file : files)
    for (ReferenceCase& c : load_reference(file)) {
      const bool on_gpu = gpu_file.empty() || config_file(c.gpu) == gpu_file;
      add(std::move(c), on_gpu);
    }
  std::set<std::string> checked_configs;
  for (const ReferenceCase& c : imported) {
    check_reference_case(c, checked_configs);
    add(c, true);
  }
  std::vector<std::string> inputs = files;
  if (!import_file.empty()) inputs.push_back(import_file);
  if (selected.empty()) {
    if (!import_file.empty() && imported.empty())
      throw InputError(fmt::format("{}: no case: no launch of {} gave one (each is listed above with the reason){}",
                                   command, import_file,
                                   files.empty() ? "" : fmt::format(", and none of {} runs on --gpu {}{}",
                                                                    fmt::join(files, ", "), gpu,
                                                                    only.empty() ? "" : " and matches --only")));
    throw InputError(fmt::format("{}: no case {} ({} cases in {})", command,
                                 gpu.empty() || !import_file.empty()
                                     ? "matches --only"
                                     : only.empty() ? "runs on --gpu " + gpu : "runs on --gpu " + gpu + " and matches --only",
                                 all.size(), fmt::join(inputs, ", ")));
  }
  return selected;
}

}  // namespace warpsim
