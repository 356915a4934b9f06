#include "models/gpu/gpu.h"

#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "models/gpu/gpu_subset.h"
#include "models/gpu/kernel_scheduler.h"
#include "sim/slots/sm.h"
#include "models/sm/stall_reason.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"

namespace warpsim {
namespace {

Schema gpu_schema() {
  Schema s("gpu", "gpu", "identity of the modelled GPU");
  s.string("name", std::nullopt, "marketing name, printed in results");
  s.string("arch", std::nullopt, "compute capability the synthesizers target (sm_80, sm_90, sm_100)");
  return s;
}

Schema clocks_schema() {
  Schema s("clocks", "clocks", "clock domains: SM (graphics), L2 + crossbar, HBM interface");
  s.quantity("sm", ParamType::Frequency, std::nullopt, "SM clock", 1e6, 1e11);
  s.quantity("l2", ParamType::Frequency, std::nullopt, "L2 and crossbar clock", 1e6, 1e11);
  s.quantity("hbm", ParamType::Frequency, std::nullopt, "HBM interface clock", 1e6, 1e11);
  return s;
}

Schema sim_schema() {
  Schema s("sim", "sim", "simulator settings (not hardware)");
  s.uint("watchdog_cycles", "cycles", 5'000'000,
         "SM cycles without any instruction issued or CTA finished before the run is declared stuck; also how long a "
         "spin-wait may see no new arrival on its semaphore", 1000, ~0u);
  s.uint("progress_check_cycles", "cycles", 65536, "SM cycles between checks of the no-progress watchdog and the progress display", 1, ~0u);
  // CTA-wave sampling (models/gpu/kernel_scheduler.h); the defaults and their measured error: README "Sampling".
  s.choice("sample", {"off", "waves"}, std::string("off"),
           "off: every CTA simulated; waves: a kernel of more than sample_min_waves waves runs warm-up + measured + 1 "
           "waves and its last partial wave, the other CTAs extrapolated at the rate of the measured waves (an estimate, "
           "marked so in the results); a persistent kernel is sampled so by rounds of its CTAs' work units");
  s.uint("sample_warmup_waves", "waves", 1,
         "waves not measured: the first starts every CTA at once on a cold L2, unlike the staggered waves after it", 0, 1000);
  s.uint("sample_measured_waves", "waves", 2,
         "waves whose CTA completions give the steady rate (two: a wave's CTAs that finish early or late even out)", 1, 1000);
  s.uint("sample_min_waves", "waves", 8,
         "kernels of at most this many waves are simulated whole (a sample runs warm-up + measured + 1 waves and the tail, "
         "so fewer waves would save little)", 1, 1000000);
  // SM subsetting (models/gpu/gpu_subset.h); its measured error: README "Sampling".
  s.uint("subset", "divisor", 1,
         "1: the whole GPU; N > 1: simulate 1/N of it (SMs, GPCs, L2 slices and HBM channels divided by N, their "
         "totals with them) running 1/N of each kernel's CTAs, and scale its counters and energy to the whole grid (an "
         "estimate, marked so in the results; composes with sample = waves)",
         1, 64);
  return s;
}

WARPSIM_REGISTER_SECTION("gpu", &gpu_schema, "GPU identity");
WARPSIM_REGISTER_SECTION("clocks", &clocks_schema, "clock domains");
WARPSIM_REGISTER_SECTION("sim", &sim_schema, "simulator settings");

// How many instances of each slot a GPU has: what Gpu::Impl builds, and what the memory estimate counts. The
// SM's memory pipeline builds one L1 and one asynchronous copy engine per SM.
unsigned slot_instances(const Config& config, const std::string& section) {
  if (section == "hbm") return config.section("hbm").u32("channels");
  if (section == "l2") return config.section("l2").u32("slices");
  if (section == "sm" || section == "l1" || section == "async_copy") return config.section("sm").u32("count");
  return 1;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

}  // namespace

struct Gpu::Impl {
  GpuSubset subset;     // sim.subset: what `config` cut from the caller's
  const Config config;  // a copy (the Gpu must not depend on the lifetime of the caller's Config), or its subset
  Simulation sim;
  StatsRegistry stats;
  ProbeRegistry probes;
  BuildContext ctx{config, sim, stats, probes};
  std::string name;
  // Built in dependency order; each slot's instances are published in ctx for the slots built after it.
  std::unique_ptr<AddressMap> address_map;
  std::vector<std::unique_ptr<DramChannel>> dram;
  std::unique_ptr<Interconnect> noc;
  std::vector<std::unique_ptr<L2Slice>> l2;
  std::vector<std::unique_ptr<StreamingMultiprocessor>> sms;
  std::unique_ptr<KernelScheduler> scheduler;
  std::unique_ptr<EnergyModel> energy;  // with power.enabled; listens to the SMs' issue probes
  SmLimits limits;

  // `count` instances of slot `section`, published under the section's name.
  template <class Interface>
  std::vector<std::unique_ptr<Interface>> build(const std::string& section, unsigned count) {
    const Registry& reg = Registry::instance();
    const Params& params = config.section(section);
    std::vector<std::unique_ptr<Interface>> parts;
    std::vector<Interface*> published;
    for (unsigned i = 0; i < count; ++i) {
      parts.push_back(reg.create<Interface>(section, params, ctx, i));
      published.push_back(parts.back().get());
    }
    ctx.publish<Interface>(section, published);
    return parts;
  }

  explicit Impl(const Config& c) : config(subset_config(c, subset)) {
    name = config.section("gpu").str("name");
    const Params& clocks = config.section("clocks");
    sim.add_domain("sm", clocks.real("sm"));
    ClockDomain& l2_domain = sim.add_domain("l2", clocks.real("l2"));
    ClockDomain& hbm_domain = sim.add_domain("hbm", clocks.real("hbm"));
    address_map = std::move(build<AddressMap>("address_map", 1).front());
    dram = build<DramChannel>("hbm", slot_instances(config, "hbm"));
    noc = std::move(build<Interconnect>("noc", 1).front());
    l2 = build<L2Slice>("l2", slot_instances(config, "l2"));
    for (auto& slice : l2) {
      noc->attach_slice(slice->index(), &slice->request_port());
      noc->attach_slice_fill(slice->index(), &slice->fabric_port());
      for (auto& ch : dram) ch->attach_slice(slice->index(), &slice->dram_response_port());
    }
    limits = SmLimits::from(config.section("sm"));
    sms = build<StreamingMultiprocessor>("sm", slot_instances(config, "sm"));
    std::vector<StreamingMultiprocessor*> sm_ptrs;
    for (auto& sm : sms) sm_ptrs.push_back(sm.get());
    scheduler = std::make_unique<KernelScheduler>(
        ctx, sm_ptrs, limits,
        [this] {
          const StatSnapshot now = stats.snapshot();
          const StatSnapshot zero(now.size(), 0);
          return stats.sum("l2", "bytes_served", zero, now) + stats.sum("hbm", "requests", zero, now);
        },
        [&l2_domain, &hbm_domain] { return l2_domain.next_time() != kTimeNever || hbm_domain.next_time() != kTimeNever; });
    scheduler->set_l2_footprint(
        [this] {
          const StatSnapshot now = stats.snapshot();
          const StatSnapshot zero(now.size(), 0);
          return KernelScheduler::L2Footprint{stats.sum("hbm", "bytes_read", zero, now), stats.sum("l2", "dirty_bytes", zero, now)};
        },
        config.section("l2").u64("size"));
    if (subset.active()) scheduler->set_subset_of(gpc_layout(c));
    if (PowerParams::from(config).enabled) energy = std::make_unique<EnergyModel>(config, probes, sim);
  }

  std::string diagnosis() const {
    std::string d = "simulation stopped making progress";
    d += " (no instruction issued and no CTA finished for " +
         std::to_string(config.section("sim").u64("watchdog_cycles")) + " SM cycles). State:";
    int shown = 0;
    auto add = [&](const Component& c) {
      const std::string s = c.describe_state();
      if (s.empty() || shown >= 12) return;
      ++shown;
      d += "\n  " + c.path() + ": " + s;
    };
    add(*scheduler);
    for (const auto& s : sms) add(*s);
    for (const auto& s : l2) add(*s);
    for (const auto& s : dram) add(*s);
    return d;
  }
};

ModelMemoryEstimate estimate_model_memory(const Config& whole) {
  GpuSubset subset;
  const Config config = subset_config(whole, subset);  // what Gpu::Impl builds
  ModelMemoryEstimate estimate;
  for (const auto& [section, params] : config.sections()) {
    const ComponentType* type = Registry::instance().find(section, params.impl());
    if (!type || !type->estimate_bytes) continue;
    const unsigned instances = slot_instances(config, section);
    const std::uint64_t bytes = type->estimate_bytes(params, config) * instances;
    estimate.parts.push_back({section, instances, bytes});
    estimate.total_bytes += bytes;
  }
  std::sort(estimate.parts.begin(), estimate.parts.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return estimate;
}

Gpu::Gpu(const Config& config) try : impl_(std::make_unique<Impl>(config)) {
} catch (const ConfigError& e) {
  const unsigned divisor = config.section("sim").u32("subset");
  if (divisor <= 1 || std::string(e.what()).rfind("sim.subset", 0) == 0) throw;  // not the cut's, or said already
  throw ConfigError(fmt::format("sim.subset {} cuts the GPU to 1/{} of itself (its values set as overrides), which the "
                                "models reject: {}", divisor, divisor, e.what()));
}
Gpu::~Gpu() = default;
const StatsRegistry& Gpu::stats() const { return impl_->stats; }
ProbeRegistry& Gpu::probes() { return impl_->probes; }
const std::string& Gpu::name() const { return impl_->name; }

namespace {

// A sampled kernel's counters at its end as if the CTAs not run had run: each counter grows by its difference over
// the measured window times `factor` (gauges stay as they stand). Counters named in `exact` (of kind "sm") grow by
// the given amount instead, split over the instances in proportion to their window differences (the largest
// remainders first), so that per-instance values still add up to the total.
StatSnapshot extrapolate_counters(const StatsRegistry& st, const StatSnapshot& window_begin, const StatSnapshot& window_end,
                                  const StatSnapshot& at_end, double factor,
                                  const std::map<std::string, std::uint64_t>& exact) {
  StatSnapshot out = at_end;
  const std::vector<StatEntry>& entries = st.entries();
  std::map<std::string, std::vector<std::size_t>> exact_entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].gauge) continue;
    const std::uint64_t d = window_end[i] - window_begin[i];
    if (entries[i].kind == "sm" && exact.count(entries[i].name)) {
      exact_entries[entries[i].name].push_back(i);
      continue;
    }
    out[i] += static_cast<std::uint64_t>(std::llround(static_cast<double>(d) * factor));
  }
  for (const auto& [name, indices] : exact_entries) {
    const std::uint64_t extra = exact.at(name);
    unsigned __int128 weight_sum = 0;
    for (std::size_t i : indices) weight_sum += window_end[i] - window_begin[i];
    std::uint64_t given = 0;
    std::vector<std::pair<std::uint64_t, std::size_t>> remainders;  // (remainder, index): largest first
    for (std::size_t i : indices) {
      const unsigned __int128 w = weight_sum ? window_end[i] - window_begin[i] : 1;
      const unsigned __int128 total = weight_sum ? weight_sum : indices.size();
      const unsigned __int128 share = static_cast<unsigned __int128>(extra) * w;
      out[i] += static_cast<std::uint64_t>(share / total);
      given += static_cast<std::uint64_t>(share / total);
      remainders.emplace_back(static_cast<std::uint64_t>(share % total), i);
    }
    std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t j = 0; given < extra && j < remainders.size(); ++j, ++given) ++out[remainders[j].second];
  }
  return out;
}

// Per-kernel results from the counters' differences between kernel start and end. The components' own metrics
// (hit rates, utilisation of their peaks) come from the stats report; what is computed here crosses components.
KernelResult summarize(const KernelInfo& info, const Occupancy& occ, const Config& cfg, const StatsRegistry& st,
                       const StatSnapshot& a, const StatSnapshot& b, Cycle start, Cycle end, const SmLimits& limits) {
  KernelResult k;
  k.name = info.name;
  k.grid = info.grid;
  k.block = info.block;
  k.registers_per_thread = info.registers_per_thread;
  k.shared_mem_bytes = info.shared_mem_bytes;
  k.ctas_per_sm = occ.ctas_per_sm;
  k.occupancy_limiter = occ.limiter;
  k.theoretical_occupancy = std::min(1.0, static_cast<double>(occ.ctas_per_sm) * info.warps_per_cta() / limits.max_warps);
  k.start_cycle = start;
  k.cycles = end - start;
  const Params& sm = cfg.section("sm");
  const double sm_hz = cfg.section("clocks").real("sm");
  const double sms = sm.u32("count");
  const double cycles = std::max<double>(1.0, static_cast<double>(k.cycles));
  const double seconds = cycles / sm_hz;
  k.time_us = seconds * 1e6;
  k.stats = st.report(a, b, seconds);
  auto total = [&](const std::string& name) {
    const StatValue* v = k.stats.find(name);
    WARPSIM_ASSERT(v != nullptr, "no statistic '" + name + "' (every implementation of its slot must report it)");
    return v;
  };
  auto sum = [&](const char* kind, const std::string& name) { return st.sum(kind, name, a, b); };
  k.warp_instructions = sum("sm", "warp_instructions");
  k.thread_instructions = sum("sm", "thread_instructions");
  k.ipc = static_cast<double>(k.warp_instructions) / sms / cycles;
  const std::uint64_t tensor_flops = sum("sm", "tensor_flops");
  k.flops = info.flops ? info.flops : tensor_flops;
  if (tensor_flops > 0) k.achieved_tflops = static_cast<double>(k.flops) / seconds / 1e12;
  k.dram_bytes_read = sum("hbm", "bytes_read");
  k.dram_bytes_written = sum("hbm", "bytes_written");
  k.l2_dirty_bytes_at_end = sum("l2", "dirty_bytes");
  k.achieved_dram_gbps = static_cast<double>(k.dram_bytes_read + k.dram_bytes_written) / seconds / 1e9;
  const double active = static_cast<double>(sum("sm", "active_cycles"));
  k.occupancy = active > 0 ? static_cast<double>(sum("sm", "resident_warp_cycles")) / active / limits.max_warps : 0.0;
  k.l1_hit_rate = total("sm.l1_hit_rate")->value;
  k.l2_hit_rate = total("l2.hit_rate")->value;
  for (std::size_t i = 0; i < kStallNames.size(); ++i)
    k.stalls.emplace_back(std::string(kStallNames[i]), sum("sm", std::string(kStallNames[i])));
  k.speed_of_light = kernel_speed_of_light(k.stats, cfg, k.cycles, k.warp_instructions, info.flops, k.stalls);
  // The utilisation table is the speed-of-light units' fractions; the interconnect's limit is its busiest port in
  // each direction, SM side or slice side.
  auto fraction = [&](const std::string& key) {
    const SolUnit* u = k.speed_of_light.find(key);
    WARPSIM_ASSERT(u != nullptr, "no speed-of-light unit '" + key + "' (every implementation of its slot must report it)");
    return u->fraction;
  };
  auto busiest = [&](const std::string& direction) {
    double m = 0.0;
    for (const char* side : {"noc_sm_ports_", "noc_gpc_ports_", "noc_slice_ports_"})
      if (const SolUnit* u = k.speed_of_light.find(side + direction)) m = std::max(m, u->fraction);
    return m;
  };
  k.utilization = {
      {"tensor", fraction("tensor")},
      {"fp32", fraction("fp32")},
      {"int", fraction("int")},
      {"lsu", fraction("lsu")},
      {"l1", fraction("l1")},
      {"smem", fraction("smem")},
      {"l2", fraction("l2")},
      {"noc_to_l2", busiest("to_l2")},
      {"noc_to_sm", busiest("to_sm")},
      {"dram", fraction("dram")},
  };
  return k;
}

// Per-kernel results and the CTA timeline, as an observer of the run.
class ResultCollector final : public RunObserver {
 public:
  ResultCollector(RunResult& result, const Config& config, const StatsRegistry& stats, const KernelScheduler& scheduler,
                  const SmLimits& limits, const GpuSubset& subset)
      : result_(result), config_(config), stats_(stats), scheduler_(scheduler), limits_(limits), subset_(subset) {}

  void kernel_started(const KernelLaunch& k) override {
    at_start_ = stats_.snapshot();
    start_cycle_ = k.cycle;
    time_offset_ = k.time_offset;
    host_wait_ = k.host_wait;
    window_begin_.clear();
    window_end_.clear();
  }
  void sample_window(const KernelLaunch&, bool closing) override { (closing ? window_end_ : window_begin_) = stats_.snapshot(); }
  void kernel_finished(const KernelLaunch& k) override {
    const StatSnapshot at_end = stats_.snapshot();
    if (k.sample && k.sample->active) {
      result_.kernels.push_back(summarize_sampled(k, at_end));
    } else {
      result_.kernels.push_back(summarize(*k.info, scheduler_.occupancy(), config_, stats_, at_start_, at_end,
                                          start_cycle_ + time_offset_, k.cycle + time_offset_, limits_));
    }
    KernelResult& done = result_.kernels.back();
    if (subset_.active()) scale_to_grid(done, *k.sample, *k.info, k.cycle - start_cycle_);
    done.launch_wait_cycles = host_wait_;
    done.launch_wait_us = static_cast<double>(host_wait_) / config_.section("clocks").real("sm") * 1e6;
  }
  // A sampled kernel: its counters at the end grown by their measured window's difference times the CTAs not run
  // over the window's CTAs (instructions exact, from the trace), its cycles by the window's cycles likewise.
  KernelResult summarize_sampled(const KernelLaunch& k, const StatSnapshot& at_end) const {
    const SamplePlan& p = *k.sample;
    // No warm-up: the window opens as the kernel starts.
    const StatSnapshot& begin = p.window_begin == 0 ? at_start_ : window_begin_;
    WARPSIM_ASSERT(p.window_end_cycle >= p.window_begin_cycle && p.window_end > p.window_begin &&
                       window_end_.size() == at_end.size() && begin.size() == at_end.size(),
                   "a sampled kernel ended before its measured window closed");
    const std::uint64_t window_ctas = p.window_end - p.window_begin;
    const std::uint64_t window_cycles = p.window_end_cycle - p.window_begin_cycle;
    const std::uint64_t skipped = p.skipped_units();
    const double factor = static_cast<double>(skipped) / static_cast<double>(window_ctas);
    const std::uint64_t extra_cycles = p.extrapolated_cycles;  // the scheduler's: the run's time moves on by it
    const StatSnapshot extrapolated = extrapolate_counters(
        stats_, begin, window_end_, at_end, factor,
        {{"warp_instructions", p.skipped_warp_instructions}, {"thread_instructions", p.skipped_thread_instructions}});
    KernelResult r = summarize(*k.info, scheduler_.occupancy(), config_, stats_, at_start_, extrapolated,
                               start_cycle_ + time_offset_, k.cycle + time_offset_ + extra_cycles, limits_);
    KernelSampling s;
    s.method = p.rounds ? "rounds" : "waves";
    s.total_ctas = p.total_ctas;
    s.simulated_ctas = p.simulated_ctas;
    s.wave_ctas = p.wave_ctas;
    s.waves = p.rounds ? static_cast<double>(k.info->persistent_units) / static_cast<double>(p.total_ctas)
                       : static_cast<double>(p.subset_ctas) / static_cast<double>(p.wave_ctas);
    s.skipped_rounds = p.rounds ? p.skipped_rounds : 0;
    s.warmup_waves = p.warmup_waves;
    s.measured_waves = p.measured_waves;
    s.window_ctas = window_ctas;
    s.window_cycles = window_cycles;
    s.simulated_cycles = k.cycle - start_cycle_;
    s.extrapolated_cycles = extra_cycles;
    s.extrapolation_factor =
        static_cast<double>(r.cycles) / static_cast<double>(std::max<std::uint64_t>(1, s.simulated_cycles));
    s.counter_factor = factor;
    s.simulated_stats = stats_.report(at_start_, at_end, static_cast<double>(std::max<std::uint64_t>(1, s.simulated_cycles)) /
                                                             config_.section("clocks").real("sm"));
    r.sampling = std::move(s);
    return r;
  }

  // SM subsetting: the subset's result for its share of the grid (wave-extrapolated or whole) made the whole grid's.
  // Extensive figures (counters, instructions, DRAM bytes, warp-state cycles, tensor work, whole-GPU bandwidths)
  // grow; time, rates, fractions, hit rates and the per-instance statistics (the subset's units) stand.
  void scale_to_grid(KernelResult& r, const SamplePlan& p, const KernelInfo& info, Cycle simulated_cycles) const {
    if (!r.sampling) {
      KernelSampling s;
      s.method = "sms";
      s.total_ctas = p.total_ctas;
      s.simulated_ctas = p.simulated_ctas;
      s.wave_ctas = p.wave_ctas;
      s.waves = static_cast<double>(p.subset_ctas) / static_cast<double>(std::max<std::uint64_t>(1, p.wave_ctas));
      s.simulated_cycles = simulated_cycles;
      s.simulated_stats = r.stats;
      r.sampling = std::move(s);
    } else {
      r.sampling->method = "sms+" + r.sampling->method;
    }
    KernelSampling& s = *r.sampling;
    const double f = static_cast<double>(p.total_ctas) / static_cast<double>(p.subset_ctas);
    const double hw = subset_.growth("sm.count");
    s.subset_divisor = subset_.divisor;
    s.subset_ctas = p.subset_ctas;
    s.subset_factor = f;
    s.hardware_factor = hw;
    s.memory_factor = subset_.growth("hbm.channels");
    auto grow = [f](std::uint64_t v) { return static_cast<std::uint64_t>(std::llround(static_cast<double>(v) * f)); };
    const std::uint64_t warp = r.warp_instructions + p.beyond_subset_warp_instructions;
    const std::uint64_t thread = r.thread_instructions + p.beyond_subset_thread_instructions;
    for (StatValue& v : r.stats.totals) {
      if (!v.is_counter) continue;
      if (v.name == "sm.warp_instructions") v.value = static_cast<double>(warp);
      else if (v.name == "sm.thread_instructions") v.value = static_cast<double>(thread);
      else v.value *= f;
    }
    r.warp_instructions = warp;
    r.thread_instructions = thread;
    const double seconds = r.time_us * 1e-6;
    if (!info.flops) r.flops = grow(r.flops);
    if (r.achieved_tflops) r.achieved_tflops = static_cast<double>(r.flops) / seconds / 1e12;
    r.dram_bytes_read = grow(r.dram_bytes_read);
    r.dram_bytes_written = grow(r.dram_bytes_written);
    r.l2_dirty_bytes_at_end = grow(r.l2_dirty_bytes_at_end);
    r.achieved_dram_gbps = static_cast<double>(r.dram_bytes_read + r.dram_bytes_written) / seconds / 1e9;
    r.ipc = static_cast<double>(warp) / subset_.gpu_sms / std::max<double>(1.0, static_cast<double>(r.cycles));
    for (auto& stall : r.stalls) stall.second = grow(stall.second);
    // The L2's and DRAM's bandwidths are the subset's share of the GPU's, by their own units' counts.
    for (const auto& [key, count] : {std::pair<const char*, const char*>{"l2", "l2.slices"}, {"dram", "hbm.channels"}})
      for (SolUnit& u : r.speed_of_light.units)
        if (u.key == key) {
          u.achieved *= subset_.growth(count);
          u.peak *= subset_.growth(count);
        }
    if (r.speed_of_light.tensor) {
      TensorWork& t = *r.speed_of_light.tensor;
      t.executed_flops = grow(t.executed_flops);
      if (t.useful) *t.useful /= hw;  // the whole problem's FLOPs over the subset's SMs: over the GPU's instead
    }
    r.speed_of_light.limiter = limiter_of(r.speed_of_light.units, r.stalls);  // its evidence quotes the units
    for (std::string& w : r.speed_of_light.warnings)
      w = fmt::format("(of the 1/{} subset's config) {}", subset_.divisor, w);
  }

  // CTA residency: start recorded at launch, completed at finish (on the run's time: after sampled kernels, the
  // simulated cycle plus their extrapolated cycles).
  void cta_started(std::size_t kernel, unsigned sm, std::uint64_t cta, Cycle now) override {
    open_spans_[{sm, cta}] = result_.timeline.size();
    result_.timeline.push_back(CtaSpan{static_cast<std::uint32_t>(kernel), sm, cta, now + time_offset_, now + time_offset_});
  }
  void cta_finished(std::size_t, unsigned sm, std::uint64_t cta, Cycle now) override {
    auto it = open_spans_.find({sm, cta});
    if (it == open_spans_.end()) return;
    result_.timeline[it->second].end_cycle = now + time_offset_;
    open_spans_.erase(it);
  }

 private:
  RunResult& result_;
  const Config& config_;
  const StatsRegistry& stats_;
  const KernelScheduler& scheduler_;
  const SmLimits& limits_;
  const GpuSubset& subset_;
  StatSnapshot at_start_, window_begin_, window_end_;
  Cycle start_cycle_ = 0, host_wait_ = 0, time_offset_ = 0;
  std::map<std::pair<unsigned, std::uint64_t>, std::size_t> open_spans_;
};

// Tells the energy model where kernels start and end, and when SMs hold CTAs.
class EnergyObserver final : public RunObserver {
 public:
  explicit EnergyObserver(EnergyModel* model) : model_(model) {}
  void kernel_started(const KernelLaunch& k) override { model_->kernel_started(k.index, k.cycle); }
  void kernel_finished(const KernelLaunch& k) override { model_->kernel_finished(k.cycle); }
  void cta_started(std::size_t, unsigned sm, std::uint64_t, Cycle now) override { model_->cta_started(sm, now); }
  void cta_finished(std::size_t, unsigned sm, std::uint64_t, Cycle now) override { model_->cta_finished(sm, now); }

 private:
  EnergyModel* model_;
};

// SM subsetting: the subset's energy `e` made the whole GPU's. The energy of work (events, dynamic parts) grows by
// `work` (the grid over the subset's CTAs); the hardware's own by the GPU's units over the subset's: SM clocks,
// leakage and the board's constant power by `hardware` (SMs), the HBM background by `memory` (HBM channels).
// Power windows grow with the total.
EnergyResult whole_gpu_energy(EnergyResult e, const PowerParams& p, double work, double hardware, double memory) {
  const double before = e.joules;
  e.joules = 0.0;
  for (auto& [part, joules] : e.breakdown) {
    if (part == "sm_clock" || part == "leakage" || part == "constant") {
      joules *= hardware;
    } else if (part == "hbm") {
      const double background = std::min(joules, p.hbm_background_w * e.seconds);
      joules = (joules - background) * work + background * memory;
    } else {
      joules *= work;
    }
    e.joules += joules;
  }
  for (auto& event : e.events) event.second = static_cast<std::uint64_t>(std::llround(static_cast<double>(event.second) * work));
  const double growth = before > 0 ? e.joules / before : hardware;
  for (EnergySpan& w : e.windows) w.joules *= growth;
  e.average_w *= growth;
  e.peak_w *= growth;
  return e;
}

// A sampled kernel's energy: the model's for the simulated sample (its own counters and cycles, which the issue
// probes the model counts belong to), scaled by the kernel's extrapolation factor; power (average, peak) is the
// sample's, and each power window stretches by the factor.
EnergyResult sampled_kernel_energy(const EnergyModel& model, std::size_t index, const KernelResult& k) {
  const KernelSampling& s = *k.sampling;
  EnergyResult e = model.kernel_energy(index, s.simulated_stats, s.simulated_cycles, 0);
  const double f = s.extrapolation_factor;
  e.joules *= f;
  e.seconds *= f;
  for (auto& part : e.breakdown) part.second *= f;
  for (auto& event : e.events) event.second = static_cast<std::uint64_t>(std::llround(static_cast<double>(event.second) * f));
  for (EnergySpan& w : e.windows) {
    w.cycles = static_cast<std::uint64_t>(std::llround(static_cast<double>(w.cycles) * f));
    w.joules *= f;
  }
  if (s.subset_divisor > 1)
    e = whole_gpu_energy(std::move(e), model.params(), s.subset_factor, s.hardware_factor, s.memory_factor);
  if (k.flops > 0 && e.joules > 0) e.flops_per_joule = static_cast<double>(k.flops) / e.joules;
  return e;
}

// Each kernel's energy, and the run's: its kernels and the launch waits between them. The run's peak power is
// over windows laid from its start across its kernels and waits, one after another as run.seconds counts them.
// `subset`: SM subsetting, whose idle GPU's power grows to the whole GPU's.
PowerSummary summarize_power(const EnergyModel& model, RunResult& result, const GpuSubset& subset) {
  const double hardware = subset.growth("sm.count"), memory = subset.growth("hbm.channels");
  auto idle_energy = [&](std::uint64_t cycles) {
    return subset.active() ? whole_gpu_energy(model.idle_energy(cycles), model.params(), 1.0, hardware, memory)
                           : model.idle_energy(cycles);
  };
  PowerSummary ps;
  const PowerParams& p = model.params();
  EnergyResult& run = ps.run;
  auto add = [&run](const EnergyResult& e) {
    run.joules += e.joules;
    run.seconds += e.seconds;
    for (const auto& part : e.breakdown) {
      auto it = std::find_if(run.breakdown.begin(), run.breakdown.end(), [&](const auto& b) { return b.first == part.first; });
      if (it == run.breakdown.end()) run.breakdown.push_back(part);
      else it->second += part.second;
    }
  };
  std::uint64_t flops = 0;
  std::vector<EnergySpan> timeline;
  for (std::size_t i = 0; i < result.kernels.size(); ++i) {
    KernelResult& k = result.kernels[i];
    k.energy = k.sampling ? sampled_kernel_energy(model, i, k) : model.kernel_energy(i, k.stats, k.cycles, k.flops);
    const std::vector<EnergySpan> wait = idle_energy(k.launch_wait_cycles).windows;
    timeline.insert(timeline.end(), wait.begin(), wait.end());
    timeline.insert(timeline.end(), k.energy->windows.begin(), k.energy->windows.end());
    add(*k.energy);
    flops += k.flops;
    ps.peak_kernel_w = std::max(ps.peak_kernel_w, k.energy->average_w);
  }
  const EnergyResult waits = idle_energy(result.launch.wait_cycles);
  add(waits);
  run.sm_clock_hz = result.sm_clock_hz;
  run.voltage = p.voltage(result.sm_clock_hz);
  run.average_w = run.seconds > 0 ? run.joules / run.seconds : 0.0;
  run.window_s = p.window_s;
  run.peak_w = peak_windowed_power(timeline, model.window_cycles(), result.sm_clock_hz).value_or(run.average_w);
  if (flops > 0 && run.joules > 0) run.flops_per_joule = static_cast<double>(flops) / run.joules;
  ps.idle_w = (model.idle_power() - p.hbm_background_w) * hardware + p.hbm_background_w * memory;
  ps.cap_w = p.cap_w * hardware;
  ps.clock_policy = "configured";
  ps.sustained_clock_hz = result.sm_clock_hz;
  ps.over_cap = ps.cap_w > 0 && run.average_w > ps.cap_w;
  return ps;
}

}  // namespace

RunResult Gpu::run(TraceSource& trace, const Driver& driver, const RunOptions& options) {
  Impl& g = *impl_;
  RunResult result;
  result.gpu = g.name;
  result.trace = trace.description();
  result.sm_clock_hz = static_cast<double>(g.ctx.domain("sm").frequency_hz());
  KernelScheduler& scheduler = *g.scheduler;
  ResultCollector collector(result, g.config, g.stats, scheduler, g.limits, g.subset);
  std::vector<RunObserver*> observers{&collector};
  EnergyObserver energy_observer(g.energy.get());
  if (g.energy) observers.push_back(&energy_observer);
  observers.insert(observers.end(), options.observers.begin(), options.observers.end());
  scheduler.start(trace, observers);

  const auto wall_start = std::chrono::steady_clock::now();
  const bool finished = driver(g.sim, [&]() { return scheduler.done() || scheduler.stuck() || !g.ctx.error.empty(); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  if (scheduler.stuck()) throw SimulationError(g.diagnosis());
  if (!g.ctx.error.empty()) throw InputError(g.ctx.error);
  if (!finished) throw SimulationError("simulation ran out of events before finishing: " + g.diagnosis());

  std::uint64_t warp_instructions = 0, kernel_cycles = 0;
  LaunchSummary& launch = result.launch;
  const Params& launch_config = g.config.section("launch");
  launch.mode = launch_config.str("mode");
  launch.us_per_kernel = launch_config.real(launch.mode == "graph" ? "graph_us_per_kernel" : "eager_us_per_kernel");
  for (const auto& k : result.kernels) {
    kernel_cycles += k.cycles;
    result.total_time_us += k.time_us + k.launch_wait_us;
    // Simulation speed counts what was simulated: a sampled kernel's own instructions, not its extrapolated ones.
    const StatValue* simulated = k.sampling ? k.sampling->simulated_stats.find("sm.warp_instructions") : nullptr;
    warp_instructions += simulated ? static_cast<std::uint64_t>(simulated->value) : k.warp_instructions;
    launch.wait_cycles += k.launch_wait_cycles;
    launch.wait_us += k.launch_wait_us;
    if (k.launch_wait_cycles > 0) ++launch.kernels_waited;
  }
  result.total_cycles = kernel_cycles + launch.wait_cycles;
  launch.launch_bound = launch.wait_cycles > 0 && launch.wait_cycles >= kernel_cycles;
  const double idle_share = result.total_cycles ? static_cast<double>(launch.wait_cycles) / result.total_cycles : 0.0;
  launch.verdict = fmt::format("{}: GPU idle {:.0f}% of the run ({:.2f} us) waiting for the host to submit {} of {} kernels "
                               "({} launches, {:.3g} us per kernel)",
                               launch.launch_bound ? "launch-bound" : "not launch-bound", 100 * idle_share, launch.wait_us,
                               launch.kernels_waited, result.kernels.size(), launch.mode, launch.us_per_kernel);
  std::vector<KernelSol> sols;
  for (const auto& k : result.kernels) sols.push_back(KernelSol{&k.speed_of_light, k.cycles, &k.stalls});
  result.speed_of_light = run_speed_of_light(sols);
  if (launch.launch_bound) {
    result.speed_of_light.limiter.launch_bound = true;
    result.speed_of_light.limiter.evidence = result.speed_of_light.limiter.verdict + " (in the kernels' own time)";
    result.speed_of_light.limiter.verdict = launch.verdict;
  }
  if (g.energy) result.power = summarize_power(*g.energy, result, g.subset);
  result.sim.wall_s = wall;
  result.sim.warp_instructions_per_s = wall > 0 ? static_cast<double>(warp_instructions) / wall : 0.0;
  result.sim.peak_rss_mb = peak_rss_mb();
  result.sim.simulated_cycles = g.ctx.domain("sm").now();
  for (const auto& dom : g.sim.domains()) result.sim.domain_ticks.emplace_back(dom->name(), dom->ticks());
  return result;
}

}  // namespace warpsim
