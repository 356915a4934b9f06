#include "app/run_one.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

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
  if (const auto* retargeted = dynamic_cast<const RetargetedTrace*>(run.workload.get()))
    for (std::size_t k = 0; k < r.kernels.size() && k < retargeted->num_kernels(); ++k) {
      r.kernels[k].captured_arch = retargeted->captured_arch(k);
      if (!r.kernels[k].captured_arch.empty()) r.kernels[k].run_arch = retargeted->target_arch();
      r.kernels[k].retargeted = retargeted->mappings(k);
    }
  return RunOutcome{std::move(run.config), std::move(r)};
}

// `--set clocks.sm=...` pins the SM clock, as `nvidia-smi -lgc` does: no cap moves it.
bool sm_clock_pinned(const RunSpec& spec) {
  for (const std::string& o : spec.overrides) {
    const auto start = o.find_first_not_of(' ');
    if (start != std::string::npos && o.compare(start, 10, "clocks.sm=") == 0) return true;
  }
  return false;
}

// The run's average power at SM clock f, predicted from a simulated run `r` (at r.sm_clock_hz) when its time
// at f is a + b / f: SM-side dynamic energy per event scales with V^2, SM clock energy with the cycles and V^2,
// leakage with V and time, constant and HBM background power with time; L2, crossbar and HBM events stay.
double predicted_power(const RunResult& r, const PowerParams& p, double f, double a, double b) {
  const EnergyResult& e = r.power->run;
  const double f0 = r.sm_clock_hz, t0 = e.seconds, t = a + b / f;
  if (t0 <= 0 || t <= 0) return 0.0;
  const double v = p.voltage(f) / p.voltage(f0), s = v * v;
  double joules = 0.0;
  for (const auto& [name, j] : e.breakdown) {
    if (name == "sm_clock") joules += j * (t * f) / (t0 * f0) * s;
    else if (name == "leakage") joules += j / t0 * t * v;
    else if (name == "constant") joules += j / t0 * t;
    else if (name == "hbm") joules += (j - p.hbm_background_w * t0) + p.hbm_background_w * t;
    else if (name == "l2" || name == "noc") joules += j;
    else joules += j * s;
  }
  return joules / t;
}

// power.cap_mode boost: the SM clock is a result. The boost controller's window (tens of ms to a second) is far
// longer than a kernel, so it sees the workload's steady state: the run, repeated. Its clock is the highest step
// (power.clock_step below power.reference_clock) at which the run's modelled average power is at or under the
// cap, found by a fixed point over re-simulations: simulate at the max boost clock; if over the cap, predict
// the clock that meets it (time first taken as compute-bound, t ~ 1/f; then fitted t = a + b/f through the runs
// made) and simulate there; at most 4 simulations. The result is the fastest simulated clock that met the cap.
RunOutcome simulate_under_cap(PreparedRun first, const PowerParams& p) {
  const RunSpec spec = first.spec;
  auto run_at = [&](double hz) {
    RunSpec at = spec;
    at.driver = "plain";  // SystemC elaborates once per process; the plain driver gives the same results
    at.overrides.push_back(fmt::format("clocks.sm={}Hz", static_cast<std::uint64_t>(std::llround(hz))));
    return simulate_once(prepare_run(at));
  };
  const double step = p.clock_step_hz, top = p.reference_clock_hz, floor = std::max(step, p.idle_clock_hz);
  std::vector<RunOutcome> runs;
  std::vector<std::pair<double, double>> search;  // (clock, W)
  auto power_of = [](const RunOutcome& o) { return o.result.power->run.average_w; };
  runs.push_back(run_at(top));
  search.emplace_back(top, power_of(runs.back()));
  constexpr int kMaxSimulations = 4;
  while (static_cast<int>(runs.size()) < kMaxSimulations) {
    // The fastest run at or under the cap so far, and the slowest over it: the answer lies between.
    const RunOutcome* under = nullptr;
    const RunOutcome* over = nullptr;
    for (const RunOutcome& o : runs) {
      if (power_of(o) <= p.cap_w) { if (!under || o.result.sm_clock_hz > under->result.sm_clock_hz) under = &o; }
      else if (!over || o.result.sm_clock_hz < over->result.sm_clock_hz) over = &o;
    }
    if (!over) break;  // the max boost clock meets the cap
    if (under && over->result.sm_clock_hz - under->result.sm_clock_hz <= step * 1.5) break;  // adjacent steps
    // Time model t = a + b/f: compute-bound (a = 0) from one run; through the two runs nearest the answer after.
    const RunOutcome& basis = *over;
    const double f0 = basis.result.sm_clock_hz, t0 = basis.result.power->run.seconds;
    double a = 0.0, b = t0 * f0;
    if (under) {
      const double f1 = under->result.sm_clock_hz, t1 = under->result.power->run.seconds;
      const double fitted_b = (t1 - t0) / (1.0 / f1 - 1.0 / f0);
      if (fitted_b >= 0 && t0 - fitted_b / f0 >= 0) {
        b = fitted_b;
        a = t0 - b / f0;
      }
    }
    const double lowest = under ? under->result.sm_clock_hz : floor;
    double next = lowest;
    for (double f = f0 - step; f >= lowest; f -= step)
      if (predicted_power(basis.result, p, f, a, b) <= p.cap_w) { next = f; break; }
    if (std::any_of(runs.begin(), runs.end(), [&](const RunOutcome& o) { return std::fabs(o.result.sm_clock_hz - next) < step / 2; })) {
      // Predicted a clock already simulated: step once below the slowest over-cap run instead.
      next = f0 - step;
      if (next < floor || (under && next <= under->result.sm_clock_hz)) break;
    }
    runs.push_back(run_at(next));
    search.emplace_back(next, power_of(runs.back()));
  }
  std::size_t best = 0;
  bool met = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bool ok = power_of(runs[i]) <= p.cap_w;
    if ((ok && (!met || runs[i].result.sm_clock_hz > runs[best].result.sm_clock_hz)) ||
        (!ok && !met && runs[i].result.sm_clock_hz < runs[best].result.sm_clock_hz)) {
      best = i;
      met = met || ok;
    }
  }
  RunOutcome chosen = std::move(runs[best]);
  PowerSummary& ps = *chosen.result.power;
  ps.clock_policy = "boost";
  ps.clock_search = search;
  return chosen;
}

}  // namespace

RunOutcome simulate(PreparedRun run) {
  const PowerParams p = PowerParams::from(run.config);
  const bool pinned = sm_clock_pinned(run.spec);
  if (p.enabled && p.cap_mode == "boost" && !pinned) return simulate_under_cap(std::move(run), p);
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
