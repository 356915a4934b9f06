// The native warpsim trace format (traces/FORMAT.md), read by sim/trace's TraceFileReader.
#include "sim/trace/trace_file.h"
#include "sim/core/text.h"
#include "traces/readers/registry.h"

namespace warpsim {
namespace {

TraceReaderInfo native_reader() {
  TraceReaderInfo info;
  info.name = "native";
  info.description = "warpsim trace, *.wst, traces/FORMAT.md";
  // The name as well as the magic: a damaged .wst then gets the reader's own diagnosis, not "unknown format".
  info.probe = [](const std::string& path) { return is_native_trace(path) || text::ends_with(path, ".wst"); };
  info.open = [](const std::string& path) -> std::unique_ptr<TraceSource> {
    return std::make_unique<TraceFileReader>(path);
  };
  return info;
}

}  // namespace

WARPSIM_REGISTER_TRACE_READER(native, native_reader());

}  // namespace warpsim
