// Registers the Accel-Sim / NVBit trace reader (traces/readers/accelsim/README.md) with the trace-reader registry.
#include "traces/readers/accelsim/accelsim_trace.h"
#include "sim/core/text.h"
#include "traces/readers/registry.h"

namespace warpsim {
namespace {

TraceReaderInfo accelsim_reader() {
  TraceReaderInfo info;
  info.name = "accelsim";
  info.description = "Accel-Sim/NVBit trace: kernelslist.g listing kernel-N.traceg[.xz], or one kernel-N.traceg[.xz]";
  // By name: kernelslist.g is plain text without a magic number (a damaged one then gets this reader's diagnosis).
  info.probe = [](const std::string& path) {
    return text::ends_with(path, ".g") || text::ends_with(path, ".traceg") || text::ends_with(path, ".traceg.xz");
  };
  info.open = [](const std::string& path) -> std::unique_ptr<TraceSource> {
    return std::make_unique<accelsim::AccelSimTrace>(path);
  };
  info.directory_index = "kernelslist.g";  // a tracer's output directory
  return info;
}

}  // namespace

WARPSIM_REGISTER_TRACE_READER(accelsim, accelsim_reader());

}  // namespace warpsim
