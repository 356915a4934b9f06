// One simulation, from what to run to its results: the entry point that `warpsim run`, the benchmark and,
// later, `validate`, `sweep` and `llm` share. Command-specific concerns (output files, printing) stay with
// the callers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/config/config.h"
#include "sim/trace/source.h"

namespace warpsim {

// What runs: a trace file (its reader chosen by traces/readers/registry.h) or a registered synthesizer.
struct WorkloadSpec {
  std::string trace_file;                          // set: replay this file
  std::string synthesizer;                         // otherwise: this kind (traces/synth/registry.h) ...
  std::map<std::string, std::string> synth_keys;   // ... with these keys (validated against its declaration)
};

struct RunSpec {
  std::string gpu = "h100_sxm";        // config name or YAML path (app/gpu_configs.h)
  std::vector<std::string> overrides;  // "section.key=value", as --set
  WorkloadSpec workload;
  std::string driver = "systemc";      // "systemc", or "plain" (C++ loop, same results)
  bool progress = true;                // progress lines with an ETA on stderr (app/progress_log.h)
  std::vector<RunObserver*> observers; // more observers of the run (tracers, energy models, ...)
  std::uint64_t max_memory_bytes = 0;  // refuse a model estimated to need more (--max-memory); 0: default_memory_limit()
};

// Most of the machine's physical memory, leaving room for the rest of the system: --max-memory's default.
inline constexpr double kDefaultMemoryFraction = 0.8;
std::uint64_t default_memory_limit();  // kDefaultMemoryFraction of physical memory

// A run whose inputs were all checked (config loaded, workload opened) and that has not simulated yet.
struct PreparedRun {
  RunSpec spec;
  Config config;
  std::unique_ptr<TraceSource> workload;
};

// The results and what the report writers need beside them.
struct RunOutcome {
  Config config;     // the resolved configuration (config.resolved.yaml)
  RunResult result;  // per-kernel results; result.sim carries driver, version, config files and hash
};

// Every input error (config, workload, driver name, a model estimated to need more memory than
// spec.max_memory_bytes) is thrown here as InputError, before any simulation.
PreparedRun prepare_run(const RunSpec& spec);
// Simulates a prepared run. Throws SimulationError when the simulation stops making progress. With
// power.cap_mode boost and the SM clock not pinned, the clock is a result (app/boost_clock.h): up to
// kMaxBoostSimulations simulations, the first with spec.driver, the others with the plain driver.
RunOutcome simulate(PreparedRun run);
// `--set clocks.sm=...` among the overrides pins the SM clock, as `nvidia-smi -lgc` does: no power cap moves it.
bool sm_clock_pinned(const RunSpec& spec);
// prepare_run, then simulate.
RunOutcome run_one(const RunSpec& spec);

// --sample MODE (`run`, `llm`): the config override it stands for, "sim.sample=MODE" (CTA-wave sampling,
// models/gpu/gpu.cpp). A mode other than waves or off is an InputError naming the option.
std::string sample_override(const std::string& mode);
// --subset N (`run`, `llm`): SM subsetting, "sim.subset=N" (models/gpu/gpu_subset.h).
inline constexpr const char* kSubsetHelp =
    "SM subsetting: simulate 1/N of the GPU (SMs, GPCs, L2 slices, HBM channels and their totals) running 1/N of each "
    "kernel's CTAs, counters and energy scaled to the whole grid and marked as estimates (README \"Sampling\" gives "
    "the measured error); 1: the whole GPU; = --set sim.subset=N";

// FNV-1a over every resolved parameter value: two runs with equal hashes modelled the same hardware.
std::string config_hash(const Config& config);

}  // namespace warpsim
