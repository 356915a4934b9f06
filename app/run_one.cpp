#include "app/run_one.h"

#include <fmt/format.h>

#include "app/fnv1a.h"
#include "app/gpu_configs.h"
#include "app/progress_log.h"
#include "sim/core/error.h"
#include "sim/sc/sc_driver.h"
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
  if (!w.trace_file.empty()) return TraceReaderRegistry::instance().open(w.trace_file);
  if (w.synthesizer.empty()) throw InputError("no workload: give a trace file or a synthesizer kind");
  return SynthRegistry::instance().make(w.synthesizer, w.synth_keys, config);
}

}  // namespace

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
  std::unique_ptr<TraceSource> workload = open_workload(spec.workload, config);
  return PreparedRun{spec, std::move(config), std::move(workload)};
}

RunOutcome simulate(PreparedRun run) {
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
  return RunOutcome{std::move(run.config), std::move(r)};
}

RunOutcome run_one(const RunSpec& spec) { return simulate(prepare_run(spec)); }

}  // namespace warpsim
