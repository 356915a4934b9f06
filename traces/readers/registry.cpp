#include "traces/readers/registry.h"

#include <fmt/format.h>

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

std::unique_ptr<TraceSource> TraceReaderRegistry::open(const std::string& path) const {
  std::unique_ptr<TraceSource> source = reader_for(path).open(path);
  if (source->num_kernels() == 0) throw InputError("trace file '" + path + "' holds no kernels: nothing to simulate");
  return source;
}

}  // namespace warpsim
