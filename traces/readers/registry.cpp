#include "traces/readers/registry.h"

#include <fmt/format.h>

#include <filesystem>

#include "sim/core/error.h"

namespace warpsim {

TraceReaderRegistry& TraceReaderRegistry::instance() {
  static TraceReaderRegistry registry;
  return registry;
}

void TraceReaderRegistry::add(TraceReaderInfo info) {
  WARPSIM_ASSERT(!info.name.empty() && info.probe && info.open, "a trace reader needs a name, a probe and open");
  for (const auto& r : readers_) WARPSIM_ASSERT(r.name != info.name, "trace reader '" + info.name + "' registered twice");
  readers_.push_back(std::move(info));
}

const TraceReaderInfo& TraceReaderRegistry::reader_for(const std::string& path) const {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError("cannot open trace file '" + path + "': No such file or directory");
  if (std::filesystem::is_directory(path, ec)) throw InputError("trace file '" + path + "' is a directory");
  for (const auto& r : readers_)
    if (r.probe(path)) return r;
  std::vector<std::string> known;
  for (const auto& r : readers_) known.push_back(fmt::format("{} ({})", r.name, r.description));
  throw InputError(fmt::format(
      "'{}' is not in a trace format warpsim knows: {}. Accel-Sim kernelslist.g and Kineto JSON traces are not "
      "supported yet",
      path, fmt::join(known, "; ")));
}

}  // namespace warpsim
