#include "app/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <variant>
#include <vector>

#include "sim/config/config.h"

namespace warpsim {
namespace {

// Keys in the order they are written (the stats.json layout people read), not sorted.
using OrderedJson = nlohmann::ordered_json;
// Names are checked to be UTF-8 where they are read (configs, traces); anything else that is not, such as a file
// path, is written with U+FFFD in place of the bad bytes: the JSON stays valid.
constexpr auto kInvalidUtf8 = OrderedJson::error_handler_t::replace;

std::string dim(const Dim3& d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

// Shortest text that reads back as the same double (as the JSON writer prints it).
std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

// Every per-kernel scalar, once: the JSON object and the CSV row are both written from this table.
using FieldValue = std::variant<std::monostate, std::string, double, std::uint64_t>;
struct KernelField {
  const char* name;
  FieldValue (*get)(const KernelResult&);
};

const std::vector<KernelField>& kernel_fields() {
  static const std::vector<KernelField> fields = {
      {"name", [](const KernelResult& k) -> FieldValue { return k.name; }},
      {"grid", [](const KernelResult& k) -> FieldValue { return dim(k.grid); }},
      {"block", [](const KernelResult& k) -> FieldValue { return dim(k.block); }},
      {"registers_per_thread", [](const KernelResult& k) -> FieldValue { return std::uint64_t{k.registers_per_thread}; }},
      {"shared_mem_bytes", [](const KernelResult& k) -> FieldValue { return std::uint64_t{k.shared_mem_bytes}; }},
      {"start_cycle", [](const KernelResult& k) -> FieldValue { return k.start_cycle; }},
      {"cycles", [](const KernelResult& k) -> FieldValue { return k.cycles; }},
      {"time_us", [](const KernelResult& k) -> FieldValue { return k.time_us; }},
      {"launch_wait_cycles", [](const KernelResult& k) -> FieldValue { return k.launch_wait_cycles; }},
      {"launch_wait_us", [](const KernelResult& k) -> FieldValue { return k.launch_wait_us; }},
      {"warp_instructions", [](const KernelResult& k) -> FieldValue { return k.warp_instructions; }},
      {"thread_instructions", [](const KernelResult& k) -> FieldValue { return k.thread_instructions; }},
      {"ipc", [](const KernelResult& k) -> FieldValue { return k.ipc; }},
      {"flops", [](const KernelResult& k) -> FieldValue { return k.flops; }},
      {"achieved_tflops",
       [](const KernelResult& k) -> FieldValue { return k.achieved_tflops ? FieldValue{*k.achieved_tflops} : FieldValue{}; }},
      {"dram_bytes_read", [](const KernelResult& k) -> FieldValue { return k.dram_bytes_read; }},
      {"dram_bytes_written", [](const KernelResult& k) -> FieldValue { return k.dram_bytes_written; }},
      {"l2_dirty_bytes_at_end", [](const KernelResult& k) -> FieldValue { return k.l2_dirty_bytes_at_end; }},
      {"achieved_dram_gbps", [](const KernelResult& k) -> FieldValue { return k.achieved_dram_gbps; }},
      {"occupancy", [](const KernelResult& k) -> FieldValue { return k.occupancy; }},
      {"theoretical_occupancy", [](const KernelResult& k) -> FieldValue { return k.theoretical_occupancy; }},
      {"ctas_per_sm", [](const KernelResult& k) -> FieldValue { return std::uint64_t{k.ctas_per_sm}; }},
      {"occupancy_limiter", [](const KernelResult& k) -> FieldValue { return k.occupancy_limiter; }},
      {"l1_hit_rate", [](const KernelResult& k) -> FieldValue { return k.l1_hit_rate; }},
      {"l2_hit_rate", [](const KernelResult& k) -> FieldValue { return k.l2_hit_rate; }},
  };
  return fields;
}

// NaN and infinities become null (JSON has no such numbers); nlohmann writes them so too.
OrderedJson to_json(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> OrderedJson {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return nullptr;
        else return x;
      },
      v);
}

std::string csv_text(const FieldValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return csv_field(*s);
  if (const auto* d = std::get_if<double>(&v)) return csv_number(*d);
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return std::to_string(*u);
  return {};
}

template <class Pairs>
OrderedJson object_of(const Pairs& pairs) {
  OrderedJson o = OrderedJson::object();
  for (const auto& [key, value] : pairs) o[key] = value;
  return o;
}

// 1536 -> "1,536": instruction counts in the summary.
std::string digit_groups(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

// Counters as integers, metrics as fractions.
OrderedJson stat_number(const StatValue& v, double x) {
  if (v.is_counter) return static_cast<std::uint64_t>(x);
  return x;
}

// Every component's statistics for one kernel: totals per kind ("l2.read_sectors", "l2.hit_rate"), the largest
// instance's value of each (the busiest port, the hottest slice), and every instance ("l2.slice[3].hit_rate").
// Names are unique, so entries are appended to the ordered object directly: its operator[] searches linearly,
// which made writing the thousands of per-instance values quadratic.
void add_statistics(OrderedJson& kernel, const StatReport& report) {
  OrderedJson totals = OrderedJson::object(), largest = OrderedJson::object(), instances = OrderedJson::object();
  auto& t = totals.get_ref<OrderedJson::object_t&>();
  auto& l = largest.get_ref<OrderedJson::object_t&>();
  auto& in = instances.get_ref<OrderedJson::object_t&>();
  for (const StatValue& v : report.totals) {
    t.emplace_back(v.name, stat_number(v, v.value));
    l.emplace_back(v.name, stat_number(v, v.max));
  }
  for (const StatValue& v : report.instances) in.emplace_back(v.name, stat_number(v, v.value));
  kernel["counters"] = std::move(totals);
  kernel["counters_max_instance"] = std::move(largest);
  kernel["instances"] = std::move(instances);
}

// A fraction of peak as a percentage, the form Nsight Compute prints.
double pct_of_peak(double fraction) { return 100 * fraction; }

OrderedJson sol_unit_json(const SolUnit* u, const char* title) {
  if (!u) return nullptr;
  return OrderedJson{{"name", title}, {"pct_of_peak", pct_of_peak(u->fraction)}, {"unit", u->name}, {"key", u->key}};
}

// The speed-of-light section of a kernel or of the run (models/gpu/speed_of_light.h).
OrderedJson speed_of_light_json(const SpeedOfLight& sol) {
  OrderedJson j;
  j["compute"] = sol_unit_json(sol.compute(), "Compute (SM) Throughput");
  j["memory"] = sol_unit_json(sol.memory(), "Memory Throughput");
  OrderedJson units = OrderedJson::array();
  for (const SolUnit& u : sol.units)
    units.push_back(OrderedJson{{"unit", u.name}, {"key", u.key}, {"group", u.group}, {"metric", u.metric},
                         {"pct_of_peak", pct_of_peak(u.fraction)}, {"achieved", u.achieved}, {"peak", u.peak},
                         {"unit_of_measure", u.unit_of_measure}});
  j["units"] = std::move(units);
  const Limiter& l = sol.limiter;
  j["limiter"] = OrderedJson{{"bound", l.launch_bound ? "launch" : l.throughput_bound ? "throughput" : "latency"},
                      {"unit", l.unit},
                      {"key", l.key},
                      {"pct_of_peak", pct_of_peak(l.fraction)},
                      {"top_stall", l.stall.empty() ? OrderedJson(nullptr) : OrderedJson(l.stall)},
                      {"top_stall_pct_of_warp_cycles", pct_of_peak(l.stall_share)},
                      {"threshold_pct", pct_of_peak(kThroughputBoundFraction)},
                      {"verdict", l.verdict},
                      {"evidence", l.evidence}};
  j["l2_path"] = sol.l2_path;
  j["warnings"] = sol.warnings;
  if (sol.tensor) {
    const TensorWork& t = *sol.tensor;
    j["tensor"] = OrderedJson{{"problem_flops", t.problem_flops ? OrderedJson(*t.problem_flops) : OrderedJson("unknown")},
                       {"executed_flops", t.executed_flops},
                       {"dtype", t.dtype},
                       {"peak_flops_per_cycle_per_sm", t.peak_flops_per_cycle_per_sm},
                       {"pipe_busy_pct", pct_of_peak(t.pipe_busy)},
                       {"useful_pct_of_peak", t.useful ? OrderedJson(pct_of_peak(*t.useful)) : OrderedJson("unknown")}};
  } else {
    j["tensor"] = nullptr;
  }
  return j;
}

std::string tensor_useful_text(const SpeedOfLight& sol) {
  if (!sol.tensor || !sol.tensor->useful) return sol.tensor ? "unknown" : "";
  return csv_number(pct_of_peak(*sol.tensor->useful));
}

std::string throughput_text(const SolUnit* u, const char* title) {
  return u ? fmt::format("{} {} ({})", title, percent(u->fraction), u->name) : fmt::format("{} -", title);
}

// The summary's speed-of-light lines: both throughputs, each unit's % of peak by group, useful tensor work, the
// limiter verdict.
std::string speed_of_light_text(const SpeedOfLight& sol) {
  std::string o = fmt::format("    speed of light  {}, {}\n", throughput_text(sol.compute(), "compute (SM)"),
                              throughput_text(sol.memory(), "memory"));
  for (const char* group : {"compute", "memory"}) {
    o += fmt::format("      {:<8}", group);
    for (const SolUnit& u : sol.units)
      if (u.group == group) o += fmt::format(" {} {:.0f}", u.key, pct_of_peak(u.fraction));
    o += "  (% of peak)\n";
  }
  if (const auto& t = sol.tensor) {
    o += fmt::format("    tensor      pipe busy {}, useful work ", percent(t->pipe_busy));
    if (t->useful)
      o += fmt::format("{} of the {} peak ({:.4g} GFLOP of the problem, {:.4g} GFLOP executed)\n", percent(*t->useful),
                       t->dtype, static_cast<double>(*t->problem_flops) / 1e9, static_cast<double>(t->executed_flops) / 1e9);
    else
      o += fmt::format("unknown (the workload does not say its FLOPs; {:.4g} GFLOP executed)\n",
                       static_cast<double>(t->executed_flops) / 1e9);
  }
  o += fmt::format("    limiter     {}\n", sol.limiter.verdict);
  if (!sol.l2_path.empty()) o += fmt::format("    L2 path     {}\n", sol.l2_path);
  return o;
}

}  // namespace

namespace {

// power.window as configured, in its most readable unit ("10us").
std::string window_text(double seconds) { return format_quantity(seconds, ParamType::Duration); }

}  // namespace

OrderedJson energy_json(const EnergyResult& e) {
  OrderedJson j{{"joules", e.joules},
         {"seconds", e.seconds},
         {"average_w", e.average_w},
         {"peak_w", e.peak_w},
         {"window_s", e.window_s},
         {"sm_clock_hz", e.sm_clock_hz},
         {"voltage", e.voltage},
         {"flops_per_joule", e.flops_per_joule ? OrderedJson(*e.flops_per_joule) : OrderedJson(nullptr)},
         {"breakdown_j", object_of(e.breakdown)}};
  if (!e.events.empty()) j["events"] = object_of(e.events);
  return j;
}

OrderedJson power_json(const PowerSummary& p) {
  OrderedJson search = OrderedJson::array();
  for (const auto& [hz, w] : p.clock_search) search.push_back(OrderedJson{{"sm_clock_hz", hz}, {"average_w", w}});
  return OrderedJson{{"energy", energy_json(p.run)},
              {"peak_kernel_w", p.peak_kernel_w},
              {"idle_w", p.idle_w},
              {"cap_w", p.cap_w},
              {"clock_policy", p.clock_policy},
              {"sustained_sm_clock_hz", p.sustained_clock_hz},
              {"over_cap", p.over_cap},
              {"clock_search", std::move(search)}};
}

// "  power: 612 W average (peak 680 W over 10 us, peak kernel 650 W, idle 72 W), 1.23 mJ, 0.81 TFLOP/J; SM clock
// 1.755 GHz at 0.93 V (the highest step meeting the 700 W cap)"
std::string power_text(const PowerSummary& p) {
  const EnergyResult& e = p.run;
  std::string o = fmt::format("  power: {:.0f} W average (peak {:.0f} W over {}, peak kernel {:.0f} W, idle {:.0f} W), {:.4g} mJ",
                              e.average_w, e.peak_w, window_text(e.window_s), p.peak_kernel_w, p.idle_w, e.joules * 1e3);
  if (e.flops_per_joule) o += fmt::format(", {:.3g} TFLOP/J", *e.flops_per_joule / 1e12);
  o += fmt::format("; SM clock {:.3f} GHz at {:.3f} V", p.sustained_clock_hz / 1e9, e.voltage);
  if (p.clock_policy == "boost") o += fmt::format(" (the highest step meeting the {:.0f} W cap)", p.cap_w);
  else if (p.clock_policy == "pinned") o += " (pinned by clocks.sm)";
  else o += " (clocks.sm)";
  if (p.over_cap)
    o += fmt::format("; above the {:.0f} W cap: a real GPU would lower its clock (power.cap_mode boost models it)", p.cap_w);
  return o + "\n";
}

// A sampled kernel (sim.sample = waves: its cycles, counters and energy are extrapolated from a sample of its CTAs;
// sim.subset: its share of CTAs ran on a subset of the GPU, counters and energy scaled to the grid).
OrderedJson sampling_json(const KernelSampling& s) {
  OrderedJson j{{"method", s.method},
                {"exact", false},
                {"simulated_ctas", s.simulated_ctas},
                {"total_ctas", s.total_ctas},
                {"wave_ctas", s.wave_ctas},
                {"waves", s.waves},
                {"warmup_waves", s.warmup_waves},
                {"measured_waves", s.measured_waves},
                {"window_ctas", s.window_ctas},
                {"window_cycles", s.window_cycles},
                {"simulated_cycles", s.simulated_cycles},
                {"extrapolated_cycles", s.extrapolated_cycles},
                {"extrapolation_factor", s.extrapolation_factor},
                {"counter_factor", s.counter_factor},
                {"instructions_exact", s.instructions_exact}};
  if (s.skipped_rounds > 0) j["skipped_rounds"] = s.skipped_rounds;
  if (s.subset_divisor > 1) {
    j["subset_divisor"] = s.subset_divisor;
    j["subset_ctas"] = s.subset_ctas;
    j["subset_factor"] = s.subset_factor;
    j["hardware_factor"] = s.hardware_factor;
    j["memory_factor"] = s.memory_factor;
  }
  return j;
}

// The sampling methods of a run's kernels: "waves", "sms", "sms, sms+waves", "rounds".
std::string sampling_methods(const RunResult& r) {
  std::vector<std::string> methods;
  for (const KernelResult& k : r.kernels)
    if (k.sampling && std::find(methods.begin(), methods.end(), k.sampling->method) == methods.end())
      methods.push_back(k.sampling->method);
  return fmt::format("{}", fmt::join(methods, ", "));
}

std::size_t sampled_kernels(const RunResult& r) {
  return static_cast<std::size_t>(
      std::count_if(r.kernels.begin(), r.kernels.end(), [](const KernelResult& k) { return k.sampling.has_value(); }));
}

std::string results_json(const RunResult& r) {
  OrderedJson j;
  j["schema_version"] = 1;
  j["gpu"] = r.gpu;
  j["trace"] = r.trace;
  j["kernels"] = OrderedJson::array();
  for (const auto& k : r.kernels) {
    OrderedJson kernel;
    for (const KernelField& f : kernel_fields()) kernel[f.name] = to_json(f.get(k));
    kernel["utilization"] = object_of(k.utilization);
    kernel["stalls"] = object_of(k.stalls);
    kernel["speed_of_light"] = speed_of_light_json(k.speed_of_light);
    add_statistics(kernel, k.stats);
    if (!k.captured_arch.empty()) {  // retargeted (sim/trace/retarget.h): absent when run as captured
      kernel["captured_for"] = k.captured_arch;
      kernel["run_on"] = k.run_arch;
    }
    if (!k.retargeted.empty()) {
      OrderedJson mapped = OrderedJson::array();
      for (const RetargetMapping& m : k.retargeted)
        mapped.push_back(OrderedJson{{"from", m.from}, {"to", m.to}, {"instructions", m.instructions},
                              {"emitted_instructions", m.emitted}});
      kernel["retargeted"] = std::move(mapped);
    }
    if (!k.untimed.empty()) {  // captured instructions run as untimed NOPs (TraceSource::untimed)
      OrderedJson untimed = OrderedJson::array();
      for (const UntimedOpcode& u : k.untimed)
        untimed.push_back(OrderedJson{{"opcode", u.opcode}, {"instructions", u.instructions}, {"why", u.why}});
      kernel["untimed"] = std::move(untimed);
    }
    if (k.energy) kernel["energy"] = energy_json(*k.energy);
    if (k.sampling) kernel["sampling"] = sampling_json(*k.sampling);
    j["kernels"].push_back(std::move(kernel));
  }
  // Units of every statistic, once per run (the descriptions: `warpsim describe`).
  OrderedJson units = OrderedJson::object();
  if (!r.kernels.empty())
    for (const StatValue& v : r.kernels.front().stats.totals) units[v.name] = v.unit;
  j["statistics_units"] = std::move(units);
  j["total_cycles"] = r.total_cycles;
  j["total_time_us"] = r.total_time_us;
  if (const std::size_t n = sampled_kernels(r))  // absent when every kernel was simulated whole
    j["sampling"] = OrderedJson{{"method", sampling_methods(r)}, {"sampled_kernels", n}, {"kernels", r.kernels.size()},
                                {"exact", false}};
  j["launch"] = OrderedJson{{"mode", r.launch.mode},
                     {"us_per_kernel", r.launch.us_per_kernel},
                     {"wait_cycles", r.launch.wait_cycles},
                     {"wait_us", r.launch.wait_us},
                     {"kernels_waited", r.launch.kernels_waited},
                     {"launch_bound", r.launch.launch_bound},
                     {"verdict", r.launch.verdict}};
  j["speed_of_light"] = speed_of_light_json(r.speed_of_light);
  if (r.power) j["power"] = power_json(*r.power);
  OrderedJson sim;
  sim["version"] = r.sim.version;
  sim["config_files"] = r.sim.config_files;
  sim["config_hash"] = r.sim.config_hash;
  sim["driver"] = r.sim.driver;
  sim["wall_s"] = r.sim.wall_s;
  sim["warp_instructions_per_s"] = r.sim.warp_instructions_per_s;
  sim["peak_rss_mb"] = r.sim.peak_rss_mb;
  sim["simulated_sm_cycles"] = r.sim.simulated_cycles;
  sim["domain_ticks"] = object_of(r.sim.domain_ticks);
  j["sim"] = std::move(sim);
  return j.dump(2, ' ', false, kInvalidUtf8) + "\n";
}

// One row per kernel: the same fields as stats.json, utilisation and stalls flattened.
std::string results_csv(const RunResult& r) {
  std::string o = "gpu";
  for (const KernelField& f : kernel_fields()) o += fmt::format(",{}", f.name);
  if (!r.kernels.empty()) {
    for (const auto& u : r.kernels[0].utilization) o += ",utilization_" + u.first;
    for (const auto& s : r.kernels[0].stalls) o += "," + s.first;
    o += ",compute_throughput_pct,compute_throughput_unit,memory_throughput_pct,memory_throughput_unit,limiter,"
         "limiter_verdict,tensor_useful_pct_of_peak";
    for (const SolUnit& u : r.kernels[0].speed_of_light.units) o += ",sol_pct_" + u.key;
    if (r.kernels[0].energy) o += ",energy_j,average_power_w,peak_power_w,power_window_s";
  }
  const bool any_sampled = sampled_kernels(r) > 0;  // the columns only where a kernel was sampled
  if (any_sampled) o += ",sampling,simulated_ctas,total_ctas,extrapolation_factor,subset_factor";
  o += "\n";
  for (const auto& k : r.kernels) {
    o += csv_field(r.gpu);
    for (const KernelField& f : kernel_fields()) o += "," + csv_text(f.get(k));
    for (const auto& u : k.utilization) o += "," + csv_number(u.second);
    for (const auto& s : k.stalls) o += fmt::format(",{}", s.second);
    const SpeedOfLight& sol = k.speed_of_light;
    for (const SolUnit* u : {sol.compute(), sol.memory()})
      o += u ? fmt::format(",{},{}", csv_number(pct_of_peak(u->fraction)), csv_field(u->name)) : ",,";
    o += fmt::format(",{},{},{}", csv_field(sol.limiter.key), csv_field(sol.limiter.verdict), tensor_useful_text(sol));
    for (const SolUnit& u : sol.units) o += "," + csv_number(pct_of_peak(u.fraction));
    if (const auto& e = k.energy)
      o += fmt::format(",{},{},{},{}", csv_number(e->joules), csv_number(e->average_w), csv_number(e->peak_w),
                       csv_number(e->window_s));
    if (any_sampled) {
      if (const auto& s = k.sampling)
        o += fmt::format(",{},{},{},{},{}", s->method, s->simulated_ctas, s->total_ctas,
                         csv_number(s->extrapolation_factor), csv_number(s->subset_factor));
      else
        o += fmt::format(",off,{},{},1,1", k.grid.count(), k.grid.count());
    }
    o += "\n";
  }
  return o;
}

// Shared-memory wavefronts per instruction and the share of them that bank conflicts replayed, loads and stores
// (empty when the kernel has no shared-memory instructions).
std::string shared_memory_text(const StatReport& stats) {
  std::string parts;
  for (const char* dir : {"ld", "st"}) {
    const StatValue* requests = stats.find(std::string("sm.smem_requests_") + dir);
    const StatValue* wavefronts = stats.find(std::string("sm.smem_wavefronts_") + dir);
    const StatValue* conflicts = stats.find(std::string("sm.smem_bank_conflicts_") + dir);
    if (!requests || !wavefronts || !conflicts || requests->value <= 0) continue;
    parts += fmt::format("{}{} {:.2f} wavefronts/instruction, {} of them bank conflicts", parts.empty() ? "" : "; ", dir,
                         wavefronts->value / requests->value, percent(conflicts->value / wavefronts->value));
  }
  return parts.empty() ? "" : "    shared mem  " + parts + "\n";
}

std::string results_summary(const RunResult& r) {
  std::string o = fmt::format("warpsim: {}, {} kernel(s) from {}\n", r.gpu, r.kernels.size(), r.trace);
  for (const auto& k : r.kernels) {
    o += fmt::format("\n  {}\n", k.name);
    o += fmt::format("    grid {}, block {}, {} CTA/SM (limited by {})\n", dim(k.grid), dim(k.block), k.ctas_per_sm,
                     k.occupancy_limiter);
    if (!k.captured_arch.empty())
      o += fmt::format("    retargeted  captured for {}, run on {} (grid and CTA shape as captured)\n", k.captured_arch,
                       k.run_arch);
    for (const RetargetMapping& m : k.retargeted)
      o += fmt::format("      {} -> {}: {} instructions ({} after)\n", m.from, m.to, digit_groups(m.instructions),
                       digit_groups(m.emitted));
    if (!k.untimed.empty()) {
      std::uint64_t total = 0;
      for (const UntimedOpcode& u : k.untimed) total += u.instructions;
      o += fmt::format("    untimed     {} captured instructions ran as NOPs, not timed from this trace (stats.json "
                       "\"untimed\" says why):",
                       digit_groups(total));
      for (const UntimedOpcode& u : k.untimed) o += fmt::format(" {} {}", u.opcode, digit_groups(u.instructions));
      o += "\n";
    }
    o += fmt::format("    time        {:.2f} us  ({} SM cycles){}\n", k.time_us, k.cycles,
                     k.sampling ? "  ESTIMATE (sampled)" : "");
    if (const auto& s = k.sampling; s && s->subset_divisor > 1)
      o += fmt::format("    subset      1/{} of the GPU ({:.3g} of its SMs) ran {} of the {} CTAs; counters x{:.3g} to the "
                       "grid (instructions counted from the trace), SMs' clock and static energy x{:.3g}, HBM background "
                       "x{:.3g}\n",
                       s->subset_divisor, 1.0 / s->hardware_factor, s->subset_ctas, s->total_ctas, s->subset_factor,
                       s->hardware_factor, s->memory_factor);
    if (const auto& s = k.sampling; s && s->skipped_rounds > 0)
      o += fmt::format("    sampled     {} of the {:.1f} rounds of each of its {} CTAs left out ({} warm-up + {} measured "
                       "rounds, one more and the last simulated), extrapolated at the measured rate: time x{:.2f} of "
                       "the simulated {} cycles; counters and energy extrapolated, instructions counted from the "
                       "trace\n",
                       s->skipped_rounds, s->waves, s->subset_divisor > 1 ? s->subset_ctas : s->total_ctas,
                       s->warmup_waves, s->measured_waves, s->extrapolation_factor, s->simulated_cycles);
    else if (const auto& s = k.sampling; s && s->method != "sms")
      o += fmt::format("    sampled     {} of {} CTAs simulated ({:.1f} waves of {}; {} warm-up + {} measured waves), the "
                       "rest extrapolated at the measured rate: time x{:.2f} of the simulated {} cycles; counters and "
                       "energy extrapolated, instructions counted from the trace\n",
                       s->simulated_ctas, s->subset_divisor > 1 ? s->subset_ctas : s->total_ctas, s->waves, s->wave_ctas,
                       s->warmup_waves, s->measured_waves, s->extrapolation_factor, s->simulated_cycles);
    if (k.launch_wait_cycles > 0)
      o += fmt::format("    launch      launch-bound: the GPU sat idle {:.2f} us ({} SM cycles) before it, waiting for "
                       "the host to submit it ({} launches, {:.3g} us per kernel)\n",
                       k.launch_wait_us, k.launch_wait_cycles, r.launch.mode, r.launch.us_per_kernel);
    if (k.achieved_tflops) o += fmt::format("    throughput  {:.1f} TFLOP/s\n", *k.achieved_tflops);
    if (k.energy) {
      o += fmt::format("    energy      {:.4g} uJ, {:.0f} W (peak {:.0f} W over {})", k.energy->joules * 1e6,
                       k.energy->average_w, k.energy->peak_w, window_text(k.energy->window_s));
      if (k.energy->flops_per_joule) o += fmt::format(", {:.3g} TFLOP/J", *k.energy->flops_per_joule / 1e12);
      auto parts = k.energy->breakdown;
      std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      o += " (";
      for (std::size_t i = 0; i < parts.size() && i < 5; ++i)
        o += fmt::format("{}{} {}", i ? ", " : "", parts[i].first, percent(k.energy->joules > 0 ? parts[i].second / k.energy->joules : 0.0));
      o += ")\n";
    }
    o += fmt::format("    DRAM        {:.1f} MB read, {:.1f} MB written, {:.0f} GB/s\n", k.dram_bytes_read / 1e6,
                     k.dram_bytes_written / 1e6, k.achieved_dram_gbps);
    o += fmt::format("    IPC         {:.2f} warp-inst/cycle/SM, occupancy {} (theoretical {})\n", k.ipc,
                     percent(k.occupancy), percent(k.theoretical_occupancy));
    o += fmt::format("    hit rates   L1 {}, L2 {}\n", percent(k.l1_hit_rate), percent(k.l2_hit_rate));
    o += shared_memory_text(k.stats);
    o += "    utilization";
    for (const auto& [unit, v] : k.utilization) o += fmt::format(" {} {}", unit, percent(v));
    o += "\n";
    std::uint64_t total = 0;
    for (const auto& s : k.stalls) total += s.second;
    auto sorted = k.stalls;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    o += "    warp states";
    int shown = 0;
    for (const auto& [reason, v] : sorted) {
      if (shown++ == 4 || v == 0) break;
      o += fmt::format(" {} {}", reason, percent(total ? static_cast<double>(v) / total : 0.0));
    }
    o += "\n";
    o += speed_of_light_text(k.speed_of_light);
  }
  o += fmt::format("\n  total {:.2f} us; simulated in {:.2f} s ({:.1f} M warp-instructions/s, peak RSS {:.0f} MB)\n",
                   r.total_time_us, r.sim.wall_s, r.sim.warp_instructions_per_s / 1e6, r.sim.peak_rss_mb);
  if (const std::size_t n = sampled_kernels(r))
    o += fmt::format("  ESTIMATE: {} of {} kernel(s) sampled ({}; README \"Sampling\"): their counters and energy are "
                     "extrapolated, not simulated whole (--sample off and sim.subset 1 for every CTA on the whole GPU)\n",
                     n, r.kernels.size(), sampling_methods(r));
  if (r.power) o += power_text(*r.power);
  if (r.kernels.size() > 1) o += fmt::format("  launch: {}\n", r.launch.verdict);
  if (r.kernels.size() > 1)
    o += fmt::format("  run (kernels weighted by their time): {}, {}; {}\n",
                     throughput_text(r.speed_of_light.compute(), "compute (SM)"),
                     throughput_text(r.speed_of_light.memory(), "memory"), r.speed_of_light.limiter.verdict);
  // Configured bandwidths another cap keeps from being reached (the config's, once for the run).
  for (const std::string& w : r.speed_of_light.warnings) o += fmt::format("  WARNING: {}\n", w);
  return o;
}

std::string results_timeline(const RunResult& r) {
  const double us_per_cycle = r.sm_clock_hz > 0 ? 1e6 / r.sm_clock_hz : 0.0;
  OrderedJson events = OrderedJson::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", r.gpu + " kernels"}}}});
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", r.gpu + " SMs"}}}});
  for (const auto& k : r.kernels) {
    if (k.launch_wait_cycles > 0)  // the GPU idle before the kernel, waiting for the host to submit it
      events.push_back({{"name", "waiting for launch"}, {"cat", "launch"}, {"ph", "X"}, {"pid", 0}, {"tid", 0},
                        {"ts", static_cast<double>(k.start_cycle - k.launch_wait_cycles) * us_per_cycle},
                        {"dur", k.launch_wait_us},
                        {"args", {{"cycles", k.launch_wait_cycles}, {"mode", r.launch.mode}}}});
    events.push_back({{"name", k.name}, {"cat", "kernel"}, {"ph", "X"}, {"pid", 0}, {"tid", 0},
                      {"ts", static_cast<double>(k.start_cycle) * us_per_cycle}, {"dur", k.time_us},
                      {"args", {{"cycles", k.cycles}}}});
  }
  // Power as a counter track (Perfetto draws it as a graph under the kernels): each kernel's power.window
  // averages as the energy model kept them (the last window of a kernel may be shorter), the launch waits at the
  // run's idle-between-kernels power, and the GPU's idle power after the run. A result read back from the workload
  // cache keeps no windows and gets no track.
  if (r.power && r.sm_clock_hz > 0) {
    double kernel_joules = 0.0, wait_s = 0.0;
    bool windows = false;
    for (const auto& k : r.kernels) {
      if (k.energy) kernel_joules += k.energy->joules;
      wait_s += k.launch_wait_us * 1e-6;
      windows = windows || (k.energy && !k.energy->windows.empty());
    }
    const double wait_w = wait_s > 0 ? (r.power->run.joules - kernel_joules) / wait_s : 0.0;
    auto sample = [&](double cycle, double watts) {
      events.push_back({{"name", "power (W)"}, {"ph", "C"}, {"pid", 0}, {"ts", cycle * us_per_cycle}, {"args", {{"W", watts}}}});
    };
    for (const auto& k : r.kernels) {
      if (!windows) break;
      if (k.launch_wait_cycles > 0) sample(static_cast<double>(k.start_cycle - k.launch_wait_cycles), wait_w);
      if (!k.energy) continue;
      double cycle = static_cast<double>(k.start_cycle);
      for (const EnergySpan& w : k.energy->windows) {
        if (w.cycles == 0) continue;
        sample(cycle, w.joules / (static_cast<double>(w.cycles) / r.sm_clock_hz));
        cycle += static_cast<double>(w.cycles);
      }
    }
    if (windows && !r.kernels.empty())
      sample(static_cast<double>(r.kernels.back().start_cycle + r.kernels.back().cycles), r.power->idle_w);
  }
  std::uint32_t max_sm = 0;
  for (const auto& c : r.timeline) max_sm = std::max(max_sm, c.sm);
  for (std::uint32_t sm = 0; !r.timeline.empty() && sm <= max_sm; ++sm)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", sm}, {"args", {{"name", fmt::format("SM {}", sm)}}}});
  for (const auto& c : r.timeline) {
    const std::string kernel = c.kernel < r.kernels.size() ? r.kernels[c.kernel].name : fmt::format("kernel {}", c.kernel);
    events.push_back({{"name", fmt::format("CTA {}", c.cta)}, {"cat", "cta"}, {"ph", "X"}, {"pid", 1}, {"tid", c.sm},
                      {"ts", static_cast<double>(c.start_cycle) * us_per_cycle},
                      {"dur", static_cast<double>(c.end_cycle - c.start_cycle) * us_per_cycle},
                      {"args", {{"kernel", kernel}, {"cycles", c.end_cycle - c.start_cycle}}}});
  }
  // One event per line: large timelines stay readable and diffable without the bulk of full indentation.
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "") + events[i].dump(-1, ' ', false, kInvalidUtf8);
  return out + "\n]}\n";
}

}  // namespace warpsim
