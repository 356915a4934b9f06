#include "app/run_one.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>

#include "app/boost_clock.h"
#include "app/fnv1a.h"
#include "app/gpu_configs.h"
#include "app/progress_log.h"
#include "sim/core/error.h"
#include "sim/sc/sc_driver.h"
#include "sim/trace/retarget.h"
#include "traces/readers/registry.h"
#include "traces/synth/registry.h"

namespace warpsim {
namespace {

Gpu::Driver driver_named(const std::string& name) {
  if (name == "systemc") return run_with_systemc;
  if (name == "plain") return run_without_systemc;
  throw InputError(fmt::format("--driver: expected systemc or plain, got '{}'", name));
}

std::unique_ptr<TraceSource> open_workload(const WorkloadSpec& w, const Config& config) {
  if (!w.trace_file.empty() && !w.synthesizer.empty())
    throw InputError("a workload is a trace file or a synthesizer, not both");
  if (!w.trace_file.empty()) {
    // A captured trace may be made for another GPU: kernels newer than the config's arch are retargeted
    // (synthesizers generate for the config's arch already).
    auto trace = std::make_unique<RetargetedTrace>(TraceReaderRegistry::instance().open(w.trace_file),
                                                   config.section("gpu").str("arch"));
    trace->check_mappable();
    return trace;
  }
  if (w.synthesizer.empty()) throw InputError("no workload: give a trace file or a synthesizer kind");
  return SynthRegistry::instance().make(w.synthesizer, w.synth_keys, config);
}

// Memory the process holds now (the simulator, its libraries, the workload's reader): the model comes on top.
std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string readable_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  return b >= 1e9 ? fmt::format("{:.1f} GB", b / 1e9) : fmt::format("{:.0f} MB", b / 1e6);
}

// Refuses, before anything is built, a GPU whose model would not fit: an in-range config (4096 SMs with 64 MiB
// L1s) can need tens of GB and be killed by the OOM killer after minutes.
void check_model_memory(const Config& config, std::uint64_t limit) {
  const ModelMemoryEstimate estimate = estimate_model_memory(config);
  const std::uint64_t process = resident_bytes();
  if (estimate.total_bytes + process <= limit) return;
  std::vector<std::string> parts;
  for (const auto& part : estimate.parts)
    if (parts.size() < 3) parts.push_back(fmt::format("{} {} ({} instances)", part.section, readable_bytes(part.bytes), part.instances));
  throw InputError(fmt::format(
      "the model of this GPU needs an estimated {} of memory ({} for the model, mostly {}; {} for the simulator "
      "itself), above the limit of {} (--max-memory; the default is {:.0f}% of physical memory)",
      readable_bytes(estimate.total_bytes + process), readable_bytes(estimate.total_bytes), fmt::join(parts, ", "),
      readable_bytes(process), readable_bytes(limit), kDefaultMemoryFraction * 100));
}

}  // namespace

std::uint64_t default_memory_limit() {
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return static_cast<std::uint64_t>(physical * kDefaultMemoryFraction);
}

std::string config_hash(const Config& config) {
  Fnv1a64 h;
  for (const auto& [section, params] : config.sections()) {
    h.add(section + ":" + params.impl() + ";");
    // Numbers with 10 significant digits, as since the hash was introduced, so that hashes stay comparable.
    for (const auto& [name, v] : params.values())
      h.add(name + "=" + fmt::format("{:.10g}", v.number) + v.text + (v.flag ? "1" : "0") + ";");
  }
  return h.hex();
}

PreparedRun prepare_run(const RunSpec& spec) {
  driver_named(spec.driver);  // a bad driver name should not cost a config load
  Config config = load_gpu_config(spec.gpu, spec.overrides);
  check_model_memory(config, spec.max_memory_bytes ? spec.max_memory_bytes : default_memory_limit());
  std::unique_ptr<TraceSource> workload = open_workload(spec.workload, config);
  return PreparedRun{spec, std::move(config), std::move(workload)};
}

namespace {

RunOutcome simulate_once(PreparedRun run) {
  Gpu gpu(run.config);
  RunOptions options;
  ProgressLog progress;
  if (run.spec.progress) options.observers.push_back(&progress);
  options.observers.insert(options.observers.end(), run.spec.observers.begin(), run.spec.observers.end());
  RunResult r = gpu.run(*run.workload, driver_named(run.spec.driver), options);
  r.sim.driver = run.spec.driver;
  r.sim.version = fmt::format("warpsim {} ({})", WARPSIM_VERSION, WARPSIM_GIT_REVISION);
  r.sim.config_files = fmt::format("{}", fmt::join(run.config.files(), ", "));
  r.sim.config_hash = config_hash(run.config);
  for (std::size_t k = 0; k < r.kernels.size() && k < run.workload->num_kernels(); ++k)
    r.kernels[k].untimed = run.workload->untimed(k);
  if (const auto* retargeted = dynamic_cast<const RetargetedTrace*>(run.workload.get()))
    for (std::size_t k = 0; k < r.kernels.size() && k < retargeted->num_kernels(); ++k) {
      r.kernels[k].captured_arch = retargeted->captured_arch(k);
      if (!r.kernels[k].captured_arch.empty()) r.kernels[k].run_arch = retargeted->target_arch();
      r.kernels[k].retargeted = retargeted->mappings(k);
    }
  return RunOutcome{std::move(run.config), std::move(r)};
}

// power.cap_mode boost for one run (app/boost_clock.h): the run is the workload, repeated.
RunOutcome simulate_under_cap(const PreparedRun& first, const PowerParams& p) {
  std::deque<RunOutcome> runs;  // stable addresses: the search holds pointers into them
  const BoostSearch found = search_boost_clock(p, [&](double hz) {
    RunSpec at = first.spec;
    // The first simulation keeps the requested driver; SystemC elaborates once per process, so the others run
    // on the plain driver, which gives bit-identical results.
    if (!runs.empty()) at.driver = "plain";
    at.overrides.push_back(sm_clock_override(hz));
    runs.push_back(simulate_once(prepare_run(at)));
    const RunResult& r = runs.back().result;
    return std::vector<BoostPart>{BoostPart{&r.power->run, r.sm_clock_hz, 1.0}};
  });
  RunOutcome chosen = std::move(runs[found.chosen]);
  PowerSummary& ps = *chosen.result.power;
  ps.clock_policy = "boost";
  ps.clock_search = found.clock_search;
  return chosen;
}

}  // namespace

bool sm_clock_pinned(const RunSpec& spec) {
  for (const std::string& o : spec.overrides) {
    const auto start = o.find_first_not_of(' ');
    if (start != std::string::npos && o.compare(start, 10, "clocks.sm=") == 0) return true;
  }
  return false;
}

RunOutcome simulate(PreparedRun run) {
  const PowerParams p = PowerParams::from(run.config);
  const bool pinned = sm_clock_pinned(run.spec);
  if (p.enabled && p.cap_mode == "boost" && !pinned) return simulate_under_cap(run, p);
  RunOutcome outcome = simulate_once(std::move(run));
  if (pinned && outcome.result.power) outcome.result.power->clock_policy = "pinned";
  return outcome;
}

RunOutcome run_one(const RunSpec& spec) { return simulate(prepare_run(spec)); }

std::string sample_override(const std::string& mode) {
  if (mode != "waves" && mode != "off")
    throw InputError("--sample: expected waves (large kernels sampled by CTA waves, the rest extrapolated) or off "
                     "(every CTA simulated), got '" + mode + "'");
  return "sim.sample=" + mode;
}

}  // namespace warpsim
