// `warpsim import-kineto TRACE.json[.gz] --gpu CONFIG`: the GPU kernels of a PyTorch profiler (Kineto) trace,
// classified and mapped onto synthesizers (traces/kineto/classify.h), simulated on a config (each distinct
// workload once, through validate's runner: run_one with the plain driver, optionally in worker processes) and
// set against their measured durations: kernels.csv, summary.json and timeline.json (measured and simulated
// tracks side by side) in the output directory, the summary on stdout. On the config of the GPU that captured
// the trace (gpu.name = the trace's device name, no --set) it is a validation, otherwise a projection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpsim {

struct ImportKinetoOptions {
  std::string trace;                   // TRACE.json or TRACE.json.gz
  std::string gpu = "h100_sxm";        // config name or YAML path
  std::vector<std::string> overrides;  // --set
  std::string only;                    // simulate only the kernels whose name contains a match (ECMAScript); "" all
  std::size_t limit = 0;               // simulate only the first N kernels (in start order); 0 all
  unsigned jobs = 1;                   // worker processes for the simulations
  std::uint64_t max_warp_instructions = 0;  // skip workloads estimated above this (0: no limit)
  std::uint64_t max_memory_bytes = 0;  // per simulation, as --max-memory
  bool progress = true;                // a line per simulation on stderr
  std::string cache_dir;               // the simulation cache (app/workload_cache.h); "" memory only
};

struct ImportKinetoOutput {
  std::string kernels_csv, summary_json, timeline_json;  // the files' contents
  std::string summary_text;                              // what stdout shows
};

// Reads, classifies, simulates and reports. InputError for a malformed trace (naming the file and what was
// expected) or a bad option, before any simulation.
ImportKinetoOutput import_kineto(const ImportKinetoOptions& options);

}  // namespace warpsim
