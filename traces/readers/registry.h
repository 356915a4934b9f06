// Registry of trace readers: each format (the native .wst, Accel-Sim kernelslist.g; later Kineto JSON)
// registers a name, a description and a probe that recognises its files by magic bytes and/or name.
// `warpsim run --trace FILE` opens FILE with the first reader whose probe accepts it; a directory, by the index
// file a reader names (Accel-Sim's kernelslist.g).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/trace/source.h"

namespace warpsim {

struct TraceReaderInfo {
  std::string name;         // e.g. "native"
  std::string description;  // one line, with the usual file names
  // True when the file at `path` is in this format (reads at most a few bytes). Called only for regular files.
  std::function<bool(const std::string& path)> probe;
  // Opens the file; malformed content throws TraceError naming the file.
  std::function<std::unique_ptr<TraceSource>(const std::string& path)> open;
  // The file that stands for a whole directory of this format's traces (Accel-Sim: "kernelslist.g"), so that
  // `--trace DIR` opens DIR/index; empty when the format has none.
  std::string directory_index;
};

class TraceReaderRegistry {
 public:
  static TraceReaderRegistry& instance();
  void add(TraceReaderInfo info);  // asserts that the name is new
  const std::vector<TraceReaderInfo>& readers() const noexcept { return readers_; }

  // The reader whose probe accepts `path`. InputError when the file does not exist or no reader knows it (the
  // message lists the known formats).
  const TraceReaderInfo& reader_for(const std::string& path) const;
  // `path` itself, or for a directory the one reader's directory_index it holds. InputError when a directory
  // holds none of the indexes (or several).
  std::string resolve(const std::string& path) const;
  // Opens resolve(path) with its reader; InputError also when the trace holds no kernels.
  std::unique_ptr<TraceSource> open(const std::string& path) const;

 private:
  std::vector<TraceReaderInfo> readers_;
};

namespace detail {
struct TraceReaderRegistration {
  explicit TraceReaderRegistration(TraceReaderInfo info) { TraceReaderRegistry::instance().add(std::move(info)); }
};
}  // namespace detail

// At namespace scope in the reader's own file: WARPSIM_REGISTER_TRACE_READER(native, make_native_reader_info());
#define WARPSIM_REGISTER_TRACE_READER(id, info_expr) \
  static const ::warpsim::detail::TraceReaderRegistration warpsim_trace_reader_registration_##id{info_expr}

}  // namespace warpsim
