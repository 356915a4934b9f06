// Memoized simulations: a WorkloadSpec simulated on a resolved config gives the same results every time
// (simulations are deterministic), so a whole-model run (`warpsim llm`), and later `import-kineto`, simulate each
// distinct kernel once and reuse it: within the process (a map) and across processes (one JSON file per entry in
// a cache directory, written atomically).
//
// Key = FNV-1a of the workload (trace file path, size and modification time, or synthesizer + every key), the
// resolved config's hash (app/run_one.h config_hash), the warpsim version and source revision, and a hash of the
// running executable's bytes: a new build never reads an old build's entries. Location: --cache-dir, else $WARPSIM_CACHE_DIR, else $XDG_CACHE_HOME/warpsim, else
// ~/.cache/warpsim. What is kept of a run: every per-kernel field of stats.json, utilisation, stalls, the speed of
// light and the statistics' totals (not the per-instance statistics nor the CTA timeline), and the run's
// totals; a result read back from the cache is the same whether it was just simulated or read from disk (a
// fresh simulation also goes through the stored form).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "app/run_one.h"

namespace warpsim {

class WorkloadCache {
 public:
  // `dir` empty: memory only (--no-cache). The directory is created when the first entry is written.
  explicit WorkloadCache(std::string dir);
  // --cache-dir's default (see above); empty when neither variable nor HOME is set.
  static std::string default_dir();

  // The cache key of a workload on a resolved config (config_hash of it).
  static std::string key(const WorkloadSpec& workload, const std::string& config_hash);

  enum class Source { memory, disk, simulated };
  struct Lookup {
    RunResult result;
    Source source = Source::simulated;
  };
  // The results of `spec`, whose config (spec.gpu with spec.overrides) resolves to `config_hash`: from memory,
  // from disk, or simulated (run_one) and stored. A damaged disk entry is simulated again and replaced.
  Lookup run(const RunSpec& spec, const std::string& config_hash);
  // The same for a run whose inputs were already checked (validate's runner prepares each case to estimate its
  // size): on a miss it is simulated as prepared, not prepared again.
  RunOutcome run(PreparedRun prepared);

  struct Counts {
    std::size_t memory_hits = 0, disk_hits = 0, simulated = 0;
  };
  const Counts& counts() const { return counts_; }
  const std::string& dir() const { return dir_; }

 private:
  Lookup find_or_simulate(const std::string& key, const std::function<RunResult()>& simulate_workload);

  std::string dir_;
  std::map<std::string, RunResult> memory_;
  Counts counts_;
};

// --cache-dir DIR | --no-cache, as every command that simulates through the cache takes them.
struct WorkloadCacheOption {
  std::string dir;
  void add_to(boost::program_options::options_description& desc);
  // The directory chosen: --cache-dir, else WorkloadCache::default_dir(); empty with --no-cache (memory only).
  // InputError when both are given.
  std::string chosen(const boost::program_options::variables_map& vm) const;
};

// The stored form of a run's results, and back (what WorkloadCache keeps; see above).
std::string cached_result_json(const RunResult& r);
RunResult cached_result_from_json(const std::string& text);  // throws std::exception when damaged

}  // namespace warpsim
