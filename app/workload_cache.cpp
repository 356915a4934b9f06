#include "app/workload_cache.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/fnv1a.h"
#include "app/result_set.h"
#include "sim/config/input_file.h"
#include "app/json_input.h"
#include "sim/core/error.h"

namespace warpsim {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

Json dim_json(const Dim3& d) { return Json::array({d.x, d.y, d.z}); }
Dim3 dim_of(const Json& j) { return Dim3{j.at(0).get<std::uint32_t>(), j.at(1).get<std::uint32_t>(), j.at(2).get<std::uint32_t>()}; }

Json sol_json(const SpeedOfLight& s) {
  Json units = Json::array();
  for (const SolUnit& u : s.units)
    units.push_back({{"key", u.key}, {"name", u.name}, {"group", u.group}, {"metric", u.metric},
                     {"fraction", u.fraction}, {"achieved", u.achieved}, {"peak", u.peak}, {"unit", u.unit_of_measure}});
  Json j = {{"units", units}, {"l2_path", s.l2_path}, {"warnings", s.warnings}};
  const Limiter& l = s.limiter;
  j["limiter"] = {{"throughput_bound", l.throughput_bound}, {"launch_bound", l.launch_bound}, {"unit", l.unit},
                  {"key", l.key}, {"fraction", l.fraction}, {"stall", l.stall}, {"stall_share", l.stall_share},
                  {"verdict", l.verdict}, {"evidence", l.evidence}};
  if (s.tensor) {
    const TensorWork& t = *s.tensor;
    j["tensor"] = {{"problem_flops", t.problem_flops ? Json(*t.problem_flops) : Json(nullptr)},
                   {"executed_flops", t.executed_flops}, {"pipe_busy", t.pipe_busy},
                   {"peak_flops_per_cycle_per_sm", t.peak_flops_per_cycle_per_sm}, {"dtype", t.dtype},
                   {"useful", t.useful ? Json(*t.useful) : Json(nullptr)}};
  }
  return j;
}

SpeedOfLight sol_of(const Json& j) {
  SpeedOfLight s;
  for (const Json& u : j.at("units"))
    s.units.push_back(SolUnit{u.at("key"), u.at("name"), u.at("group"), u.at("metric"), u.at("fraction"),
                              u.at("achieved"), u.at("peak"), u.at("unit")});
  s.l2_path = j.at("l2_path");
  s.warnings = j.at("warnings").get<std::vector<std::string>>();
  const Json& l = j.at("limiter");
  s.limiter = Limiter{l.at("throughput_bound"), l.at("launch_bound"), l.at("unit"), l.at("key"), l.at("fraction"),
                      l.at("stall"), l.at("stall_share"), l.at("verdict"), l.at("evidence")};
  if (j.contains("tensor")) {
    const Json& t = j.at("tensor");
    TensorWork w;
    if (!t.at("problem_flops").is_null()) w.problem_flops = t.at("problem_flops").get<std::uint64_t>();
    w.executed_flops = t.at("executed_flops");
    w.pipe_busy = t.at("pipe_busy");
    w.peak_flops_per_cycle_per_sm = t.at("peak_flops_per_cycle_per_sm");
    w.dtype = t.at("dtype");
    if (!t.at("useful").is_null()) w.useful = t.at("useful").get<double>();
    s.tensor = w;
  }
  return s;
}

// Energy results (models/power), absent when the GPU does not model energy.
Json energy_json(const EnergyResult& e) {
  return {{"joules", e.joules}, {"seconds", e.seconds}, {"average_w", e.average_w}, {"peak_w", e.peak_w},
          {"window_s", e.window_s}, {"sm_clock_hz", e.sm_clock_hz},
          {"voltage", e.voltage}, {"flops_per_joule", e.flops_per_joule ? Json(*e.flops_per_joule) : Json(nullptr)},
          {"breakdown", e.breakdown}, {"events", e.events}};
}

EnergyResult energy_of(const Json& j) {
  EnergyResult e;
  e.joules = j.at("joules");
  e.seconds = j.at("seconds");
  e.average_w = j.at("average_w");
  e.peak_w = j.at("peak_w");
  e.window_s = j.at("window_s");
  e.sm_clock_hz = j.at("sm_clock_hz");
  e.voltage = j.at("voltage");
  if (!j.at("flops_per_joule").is_null()) e.flops_per_joule = j.at("flops_per_joule").get<double>();
  e.breakdown = j.at("breakdown").get<std::vector<std::pair<std::string, double>>>();
  e.events = j.at("events").get<std::vector<std::pair<std::string, std::uint64_t>>>();
  return e;
}

Json power_json(const PowerSummary& p) {
  return {{"run", energy_json(p.run)}, {"peak_kernel_w", p.peak_kernel_w}, {"idle_w", p.idle_w}, {"cap_w", p.cap_w},
          {"clock_policy", p.clock_policy}, {"sustained_clock_hz", p.sustained_clock_hz}, {"over_cap", p.over_cap},
          {"clock_search", p.clock_search}};
}

PowerSummary power_of(const Json& j) {
  PowerSummary p;
  p.run = energy_of(j.at("run"));
  p.peak_kernel_w = j.at("peak_kernel_w");
  p.idle_w = j.at("idle_w");
  p.cap_w = j.at("cap_w");
  p.clock_policy = j.at("clock_policy");
  p.sustained_clock_hz = j.at("sustained_clock_hz");
  p.over_cap = j.at("over_cap");
  p.clock_search = j.at("clock_search").get<std::vector<std::pair<double, double>>>();
  return p;
}

// A sampled kernel's sampling figures (not its simulated_stats, which only the energy model reads, in the run).
Json sampling_cache_json(const KernelSampling& s) {
  return {{"method", s.method}, {"total_ctas", s.total_ctas}, {"simulated_ctas", s.simulated_ctas},
          {"wave_ctas", s.wave_ctas}, {"waves", s.waves}, {"warmup_waves", s.warmup_waves},
          {"measured_waves", s.measured_waves}, {"skipped_rounds", s.skipped_rounds}, {"window_ctas", s.window_ctas},
          {"window_cycles", s.window_cycles},
          {"simulated_cycles", s.simulated_cycles}, {"extrapolated_cycles", s.extrapolated_cycles},
          {"extrapolation_factor", s.extrapolation_factor}, {"counter_factor", s.counter_factor},
          {"instructions_exact", s.instructions_exact}, {"subset_divisor", s.subset_divisor},
          {"subset_ctas", s.subset_ctas}, {"subset_factor", s.subset_factor}, {"hardware_factor", s.hardware_factor},
          {"memory_factor", s.memory_factor}};
}

KernelSampling sampling_of(const Json& j) {
  KernelSampling s;
  s.method = j.at("method");
  s.total_ctas = j.at("total_ctas");
  s.simulated_ctas = j.at("simulated_ctas");
  s.wave_ctas = j.at("wave_ctas");
  s.waves = j.at("waves");
  s.warmup_waves = j.at("warmup_waves");
  s.measured_waves = j.at("measured_waves");
  s.skipped_rounds = j.at("skipped_rounds");
  s.window_ctas = j.at("window_ctas");
  s.window_cycles = j.at("window_cycles");
  s.simulated_cycles = j.at("simulated_cycles");
  s.extrapolated_cycles = j.at("extrapolated_cycles");
  s.extrapolation_factor = j.at("extrapolation_factor");
  s.counter_factor = j.at("counter_factor");
  s.instructions_exact = j.at("instructions_exact");
  s.subset_divisor = j.at("subset_divisor");
  s.subset_ctas = j.at("subset_ctas");
  s.subset_factor = j.at("subset_factor");
  s.hardware_factor = j.at("hardware_factor");
  s.memory_factor = j.at("memory_factor");
  return s;
}

Json kernel_json(const KernelResult& k) {
  Json totals = Json::array();
  for (const StatValue& v : k.stats.totals) totals.push_back({v.name, v.unit, v.value, v.max, v.is_counter});
  return {{"name", k.name}, {"grid", dim_json(k.grid)}, {"block", dim_json(k.block)},
          {"registers_per_thread", k.registers_per_thread}, {"shared_mem_bytes", k.shared_mem_bytes},
          {"ctas_per_sm", k.ctas_per_sm}, {"occupancy_limiter", k.occupancy_limiter},
          {"theoretical_occupancy", k.theoretical_occupancy}, {"start_cycle", k.start_cycle}, {"cycles", k.cycles},
          {"time_us", k.time_us}, {"launch_wait_cycles", k.launch_wait_cycles}, {"launch_wait_us", k.launch_wait_us},
          {"warp_instructions", k.warp_instructions}, {"thread_instructions", k.thread_instructions}, {"ipc", k.ipc},
          {"flops", k.flops}, {"achieved_tflops", k.achieved_tflops ? Json(*k.achieved_tflops) : Json(nullptr)},
          {"dram_bytes_read", k.dram_bytes_read}, {"dram_bytes_written", k.dram_bytes_written},
          {"l2_dirty_bytes_at_end", k.l2_dirty_bytes_at_end}, {"achieved_dram_gbps", k.achieved_dram_gbps},
          {"occupancy", k.occupancy}, {"l1_hit_rate", k.l1_hit_rate}, {"l2_hit_rate", k.l2_hit_rate},
          {"utilization", k.utilization}, {"stalls", k.stalls}, {"speed_of_light", sol_json(k.speed_of_light)},
          {"stat_totals", totals}, {"energy", k.energy ? energy_json(*k.energy) : Json(nullptr)},
          {"sampling", k.sampling ? sampling_cache_json(*k.sampling) : Json(nullptr)}};
}

KernelResult kernel_of(const Json& j) {
  KernelResult k;
  k.name = j.at("name");
  k.grid = dim_of(j.at("grid"));
  k.block = dim_of(j.at("block"));
  k.registers_per_thread = j.at("registers_per_thread");
  k.shared_mem_bytes = j.at("shared_mem_bytes");
  k.ctas_per_sm = j.at("ctas_per_sm");
  k.occupancy_limiter = j.at("occupancy_limiter");
  k.theoretical_occupancy = j.at("theoretical_occupancy");
  k.start_cycle = j.at("start_cycle");
  k.cycles = j.at("cycles");
  k.time_us = j.at("time_us");
  k.launch_wait_cycles = j.at("launch_wait_cycles");
  k.launch_wait_us = j.at("launch_wait_us");
  k.warp_instructions = j.at("warp_instructions");
  k.thread_instructions = j.at("thread_instructions");
  k.ipc = j.at("ipc");
  k.flops = j.at("flops");
  if (!j.at("achieved_tflops").is_null()) k.achieved_tflops = j.at("achieved_tflops").get<double>();
  k.dram_bytes_read = j.at("dram_bytes_read");
  k.dram_bytes_written = j.at("dram_bytes_written");
  k.l2_dirty_bytes_at_end = j.at("l2_dirty_bytes_at_end");
  k.achieved_dram_gbps = j.at("achieved_dram_gbps");
  k.occupancy = j.at("occupancy");
  k.l1_hit_rate = j.at("l1_hit_rate");
  k.l2_hit_rate = j.at("l2_hit_rate");
  k.utilization = j.at("utilization").get<std::vector<std::pair<std::string, double>>>();
  k.stalls = j.at("stalls").get<std::vector<std::pair<std::string, std::uint64_t>>>();
  k.speed_of_light = sol_of(j.at("speed_of_light"));
  for (const Json& v : j.at("stat_totals"))
    k.stats.totals.push_back(StatValue{v.at(0), v.at(1), v.at(2), v.at(3), v.at(4)});
  if (j.contains("sampling") && !j.at("sampling").is_null()) k.sampling = sampling_of(j.at("sampling"));
  if (j.contains("energy") && !j.at("energy").is_null()) k.energy = energy_of(j.at("energy"));
  return k;
}

std::string version_text() { return fmt::format("warpsim {} ({})", WARPSIM_VERSION, WARPSIM_GIT_REVISION); }

// The running executable's bytes, hashed once: the revision above is taken at CMake configure time, so a rebuilt
// binary with changed models would otherwise find the results of the old one. Empty where it cannot be read.
const std::string& executable_fingerprint() {
  static const std::string fingerprint = [] {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    std::ifstream in(ec ? fs::path{} : exe, std::ios::binary);
    if (!in) return std::string{};
    Fnv1a64 h;
    std::string chunk(1 << 20, '\0');
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0)
      h.add(std::string_view(chunk.data(), static_cast<std::size_t>(in.gcount())));
    return h.hex();
  }();
  return fingerprint;
}

// A trace file by its size and modification time (as make does): a file rewritten in place is simulated again.
std::string trace_file_stamp(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return {};
  const auto mtime = fs::last_write_time(path, ec);
  if (ec) return {};
  return fmt::format("{}@{}", size, mtime.time_since_epoch().count());
}

}  // namespace

std::string cached_result_json(const RunResult& r) {
  Json kernels = Json::array();
  for (const KernelResult& k : r.kernels) kernels.push_back(kernel_json(k));
  const LaunchSummary& l = r.launch;
  Json j = {{"version", version_text()}, {"gpu", r.gpu}, {"trace", r.trace}, {"kernels", kernels},
            {"total_cycles", r.total_cycles}, {"total_time_us", r.total_time_us}, {"sm_clock_hz", r.sm_clock_hz},
            {"launch", {{"mode", l.mode}, {"us_per_kernel", l.us_per_kernel}, {"wait_cycles", l.wait_cycles},
                        {"wait_us", l.wait_us}, {"kernels_waited", l.kernels_waited},
                        {"launch_bound", l.launch_bound}, {"verdict", l.verdict}}},
            {"speed_of_light", sol_json(r.speed_of_light)},
            {"power", r.power ? power_json(*r.power) : Json(nullptr)},
            {"sim", {{"driver", r.sim.driver}, {"version", r.sim.version}, {"config_files", r.sim.config_files},
                     {"config_hash", r.sim.config_hash}, {"wall_s", r.sim.wall_s},
                     {"warp_instructions_per_s", r.sim.warp_instructions_per_s}, {"peak_rss_mb", r.sim.peak_rss_mb},
                     {"simulated_cycles", r.sim.simulated_cycles}, {"domain_ticks", r.sim.domain_ticks}}}};
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

RunResult cached_result_from_json(const std::string& text) {
  const Json j = Json::parse(text);
  RunResult r;
  r.gpu = j.at("gpu");
  r.trace = j.at("trace");
  for (const Json& k : j.at("kernels")) r.kernels.push_back(kernel_of(k));
  r.total_cycles = j.at("total_cycles");
  r.total_time_us = j.at("total_time_us");
  r.sm_clock_hz = j.at("sm_clock_hz");
  const Json& l = j.at("launch");
  r.launch = LaunchSummary{l.at("mode"), l.at("us_per_kernel"), l.at("wait_cycles"), l.at("wait_us"),
                           l.at("kernels_waited"), l.at("launch_bound"), l.at("verdict")};
  r.speed_of_light = sol_of(j.at("speed_of_light"));
  if (j.contains("power") && !j.at("power").is_null()) r.power = power_of(j.at("power"));
  const Json& s = j.at("sim");
  r.sim.driver = s.at("driver");
  r.sim.version = s.at("version");
  r.sim.config_files = s.at("config_files");
  r.sim.config_hash = s.at("config_hash");
  r.sim.wall_s = s.at("wall_s");
  r.sim.warp_instructions_per_s = s.at("warp_instructions_per_s");
  r.sim.peak_rss_mb = s.at("peak_rss_mb");
  r.sim.simulated_cycles = s.at("simulated_cycles");
  r.sim.domain_ticks = s.at("domain_ticks").get<std::vector<std::pair<std::string, std::uint64_t>>>();
  return r;
}

WorkloadCache::WorkloadCache(std::string dir) : dir_(std::move(dir)) {}

std::string WorkloadCache::default_dir() {
  if (const char* d = std::getenv("WARPSIM_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (fs::path(d) / "warpsim").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "warpsim").string();
  return {};
}

void WorkloadCacheOption::add_to(boost::program_options::options_description& desc) {
  desc.add_options()
      ("cache-dir", boost::program_options::value(&dir),
       "the simulation cache directory (default: $WARPSIM_CACHE_DIR, $XDG_CACHE_HOME/warpsim or ~/.cache/warpsim)")
      ("no-cache", "neither read nor write the on-disk cache (a workload is still simulated once per run)");
}

std::string WorkloadCacheOption::chosen(const boost::program_options::variables_map& vm) const {
  if (vm.count("cache-dir") && vm.count("no-cache")) throw InputError("--cache-dir and --no-cache are alternatives; give one");
  if (vm.count("no-cache")) return {};
  return dir.empty() ? WorkloadCache::default_dir() : dir;
}

std::string WorkloadCache::key(const WorkloadSpec& w, const std::string& config_hash) {
  Fnv1a64 h;
  // Every part with its length: no two different workloads give the same text.
  auto add = [&h](const std::string& s) { h.add(fmt::format("{}:{};", s.size(), s)); };
  add(version_text());
  add(executable_fingerprint());
  add(config_hash);
  add(w.trace_file);
  if (!w.trace_file.empty()) add(trace_file_stamp(w.trace_file));
  add(w.synthesizer);
  for (const auto& [k, v] : w.synth_keys) {
    add(k);
    add(v);
  }
  return h.hex();
}

WorkloadCache::Lookup WorkloadCache::run(const RunSpec& spec, const std::string& config_hash) {
  return find_or_simulate(key(spec.workload, config_hash), [&spec] { return run_one(spec).result; });
}

RunOutcome WorkloadCache::run(PreparedRun prepared) {
  const std::string k = key(prepared.spec.workload, config_hash(prepared.config));
  Config config = prepared.config;  // simulate() takes the prepared run whole
  RunResult result = find_or_simulate(k, [&prepared] { return simulate(std::move(prepared)).result; }).result;
  return {std::move(config), std::move(result)};
}

WorkloadCache::Lookup WorkloadCache::find_or_simulate(const std::string& k,
                                                      const std::function<RunResult()>& simulate_workload) {
  if (auto it = memory_.find(k); it != memory_.end()) {
    ++counts_.memory_hits;
    return {it->second, Source::memory};
  }
  const fs::path file = dir_.empty() ? fs::path() : fs::path(dir_) / (k + ".json");
  std::error_code exists_error;
  if (!dir_.empty() && fs::exists(file, exists_error)) {
    try {
      RunResult r = cached_result_from_json(read_input_file(file.string(), kMaxResultFileBytes, "cache entry"));
      ++counts_.disk_hits;
      memory_[k] = r;
      return {std::move(r), Source::disk};
    } catch (const std::exception& e) {
      spdlog::warn("cache entry {} is damaged ({}): simulating again", file.string(), e.what());
    }
  }
  const std::string stored = cached_result_json(simulate_workload());
  ++counts_.simulated;
  if (!dir_.empty()) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw InputError(fmt::format("--cache-dir: cannot create directory '{}': {}", dir_, ec.message()));
    write_file_atomically(file, stored);
  }
  RunResult r = cached_result_from_json(stored);  // the stored form: a disk hit later gives the same results
  memory_[k] = r;
  return {std::move(r), Source::simulated};
}

}  // namespace warpsim
