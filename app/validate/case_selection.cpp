#include "app/validate/case_selection.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>
#include <regex>

#include "app/gpu_configs.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;

namespace warpsim {

std::vector<ReferenceCase> select_cases(const std::string& command, const std::vector<std::string>& files,
                                        const std::string& gpu, const std::string& only) {
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
  for (const std::string& file : files) {
    for (ReferenceCase& c : load_reference(file)) {
      for (const ReferenceCase& earlier : all)
        if (earlier.id == c.id)
          throw InputError(fmt::format("{}:{}: case {}: duplicate id (also at {}:{})", c.file, c.line, c.id, earlier.file,
                                       earlier.line));
      all.push_back(c);
      if (!gpu_file.empty() && config_file(c.gpu) != gpu_file) continue;
      if (id_filter && !std::regex_search(c.id, *id_filter)) continue;
      selected.push_back(std::move(c));
    }
  }
  if (selected.empty())
    throw InputError(fmt::format("{}: no case {} ({} cases in {})", command,
                                 gpu.empty() ? "matches --only" : only.empty() ? "runs on --gpu " + gpu
                                                                               : "runs on --gpu " + gpu + " and matches --only",
                                 all.size(), fmt::join(files, ", ")));
  return selected;
}

}  // namespace warpsim
