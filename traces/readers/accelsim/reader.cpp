// Registers the Accel-Sim / NVBit trace reader (traces/readers/accelsim/README.md) with the trace-reader registry.
#include "traces/readers/accelsim/accelsim_trace.h"
#include "traces/readers/registry.h"

namespace warpsim {
namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TraceReaderInfo accelsim_reader() {
  TraceReaderInfo info;
  info.name = "accelsim";
  info.description = "Accel-Sim/NVBit trace: kernelslist.g listing kernel-N.traceg[.xz], or one kernel-N.traceg[.xz]";
  // By name: kernelslist.g is plain text without a magic number (a damaged one then gets this reader's diagnosis).
  info.probe = [](const std::string& path) {
    return has_suffix(path, ".g") || has_suffix(path, ".traceg") || has_suffix(path, ".traceg.xz");
  };
  info.open = [](const std::string& path) -> std::unique_ptr<TraceSource> {
    return std::make_unique<accelsim::AccelSimTrace>(path);
  };
  return info;
}

}  // namespace

WARPSIM_REGISTER_TRACE_READER(accelsim, accelsim_reader());

}  // namespace warpsim
