#include "traces/readers/registry.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/config/input_file.h"
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
  // Traces are streamed, so any size will do; but a FIFO or a device would hang the probe or never end.
  if (const std::string problem = input_file_problem(path, kNoSizeLimit); !problem.empty())
    throw InputError("cannot open trace file '" + path + "': " + problem);
  for (const auto& r : readers_)
    if (r.probe(path)) return r;
  std::vector<std::string> known;
  for (const auto& r : readers_) known.push_back(fmt::format("{} ({})", r.name, r.description));
  throw InputError(fmt::format(
      "'{}' is not in a trace format warpsim knows: {}. a PyTorch profiler (Kineto) JSON trace is read by `warpsim import-kineto TRACE.json[.gz] --gpu CONFIG`",
      path, fmt::join(known, "; ")));
}

std::string TraceReaderRegistry::resolve(const std::string& path) const {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return path;
  std::vector<std::string> found, indexes;
  for (const auto& r : readers_) {
    if (r.directory_index.empty()) continue;
    indexes.push_back(fmt::format("{} ({})", r.directory_index, r.name));
    const std::filesystem::path index = std::filesystem::path(path) / r.directory_index;
    if (std::filesystem::exists(index, ec)) found.push_back(index.string());
  }
  if (found.size() == 1) return found.front();
  throw InputError(fmt::format("cannot open trace directory '{}': {}; expected one of {} in it, or a trace file", path,
                               found.empty() ? "it holds no trace index" : "it holds several trace indexes",
                               fmt::join(indexes, ", ")));
}

std::unique_ptr<TraceSource> TraceReaderRegistry::open(const std::string& path) const {
  const std::string file = resolve(path);
  std::unique_ptr<TraceSource> source = reader_for(file).open(file);
  if (source->num_kernels() == 0) throw InputError("trace file '" + file + "' holds no kernels: nothing to simulate");
  return source;
}

}  // namespace warpsim
