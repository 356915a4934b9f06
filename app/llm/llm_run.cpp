#include "app/llm/llm_run.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "app/boost_clock.h"
#include "app/gpu_configs.h"
#include "app/report.h"
#include "models/power/energy_model.h"
#include "sim/core/error.h"

namespace warpsim::llm {
namespace {

using OrderedJson = nlohmann::ordered_json;

const char* kind_name(EntryKind k) {
  return k == EntryKind::simulated ? "simulated" : k == EntryKind::estimate ? "estimate" : "communication estimate";
}

std::string layer_text(int layer) { return layer < 0 ? "-" : std::to_string(layer); }

// Sampled by CTA waves (alone or on an SM subset), its time extrapolated.
bool wave_sampled(const KernelResult& k) { return k.sampling && k.sampling->method != "sms"; }

// A run's kernels' energy and time, by component, without the launch waits between them.
EnergyResult kernels_energy(const RunResult& r) {
  EnergyResult sum;
  for (const KernelResult& k : r.kernels) {
    if (!k.energy) throw InputError("power.cap_mode boost: a kernel of the step has no energy (power.enabled is off?)");
    sum.joules += k.energy->joules;
    sum.seconds += k.energy->seconds;
    for (const auto& component : k.energy->breakdown) {
      auto it = std::find_if(sum.breakdown.begin(), sum.breakdown.end(),
                             [&](const auto& c) { return c.first == component.first; });
      if (it == sum.breakdown.end()) sum.breakdown.push_back(component);
      else it->second += component.second;
    }
  }
  return sum;
}

}  // namespace

double Peaks::tensor_flops_per_s(const std::string& dtype) const {
  const auto it = tensor_flops_per_cycle_per_sm.find(dtype);
  if (it == tensor_flops_per_cycle_per_sm.end() || it->second <= 0)
    throw InputError(fmt::format("{}: sm.tensor.flops_per_cycle.{} is 0 or not given: this GPU has no {} tensor cores "
                                 "(try --dtype bf16{})", gpu, dtype, dtype, dtype == "fp4" ? ", or an fp4 GPU: b200" : ""));
  return sm_count * it->second * sm_clock_hz;
}

Peaks peaks_of(const Config& config) {
  Peaks p;
  const Params& sm = config.section("sm");
  p.gpu = config.files().empty() ? std::string("the GPU config") : config.files().front();
  p.sm_count = sm.u32("count");
  p.sm_clock_hz = config.section("clocks").real("sm");
  p.hbm_bytes_per_s = config.section("hbm").real("bandwidth");
  p.hbm_capacity_bytes = config.section("hbm").real("capacity");
  const double lanes = sm.u32("subpartitions") * 32.0 / sm.real("pipes.fp32.issue_interval");
  p.alu_flops_per_s = p.sm_count * lanes * 2.0 * p.sm_clock_hz;
  const std::string prefix = "tensor.flops_per_cycle.";
  for (const auto& [key, value] : sm.values())
    if (key.compare(0, prefix.size(), prefix) == 0) p.tensor_flops_per_cycle_per_sm[key.substr(prefix.size())] = value.number;
  const Params& launch = config.section("launch");
  p.launch_mode = launch.str("mode");
  p.launch_us_per_kernel = launch.real(p.launch_mode == "graph" ? "graph_us_per_kernel" : "eager_us_per_kernel");
  p.collectives = CollectiveParams::from(config);
  const PowerParams power = PowerParams::from(config);
  if (power.enabled) p.idle_w = power.idle_power(p.sm_clock_hz, static_cast<unsigned>(p.sm_count));
  return p;
}

Roofline roofline(const PlanEntry& e, const Peaks& p) {
  if (e.kind == EntryKind::communication) {
    CollectiveEstimate c =
        estimate_collective(p.collectives, collective_op(e.collective), e.message_bytes, static_cast<unsigned>(e.gpus));
    const double us = c.chosen.time_us;
    return {us, "communication", std::move(c)};
  }
  const double peak = e.compute == "tensor" ? p.tensor_flops_per_s(e.tensor_dtype) : p.alu_flops_per_s;
  const double compute_us = e.flops / peak * 1e6, memory_us = e.bytes / p.hbm_bytes_per_s * 1e6;
  return {std::max(compute_us, memory_us), compute_us > memory_us ? "compute" : "memory", std::nullopt};
}

LlmResult run_llm(const LlmModel& model, const Scenario& scenario, const std::vector<PlanEntry>& plan,
                  const RunSpec& base, WorkloadCache& cache) {
  const auto wall_start = std::chrono::steady_clock::now();
  LlmResult r;
  const Config config = load_gpu_config(base.gpu, base.overrides);
  r.peaks = peaks_of(config);
  const Peaks& peaks = r.peaks;
  const std::string hash = config_hash(config);

  // Roofline times first: a scenario the config cannot estimate (--tp without node.link_bandwidth) fails before
  // anything is simulated.
  auto estimate_rooflines = [&] {  // at r.peaks' SM clock
    r.entry_roofline.assign(plan.size(), Roofline{});
    r.roofline_step_us = r.nvlink_j = 0.0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      r.entry_roofline[i] = roofline(plan[i], peaks);
      r.roofline_step_us += r.entry_roofline[i].us * plan[i].count;
      if (r.entry_roofline[i].collective) r.nvlink_j += r.entry_roofline[i].collective->link_energy_j * plan[i].count;
    }
  };
  estimate_rooflines();

  // The distinct workloads, simulated once each (in plan order, so that progress reads as the step does), all
  // at one SM clock: `overrides` are the base's plus, under boost, that clock.
  std::map<std::string, RunResult>& results = r.workloads;
  std::vector<std::string> keys(plan.size());
  std::vector<std::size_t> distinct_entries;  // the first entry of each distinct workload
  std::map<std::string, double> calls_of;     // calls per step of each distinct workload
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (plan[i].kind == EntryKind::simulated) {
      keys[i] = WorkloadCache::key(plan[i].workload, hash);
      if (!calls_of.count(keys[i])) distinct_entries.push_back(i);
      calls_of[keys[i]] += static_cast<double>(plan[i].count);
    }
  r.distinct_workloads = distinct_entries.size();
  auto simulate_distinct = [&](const std::vector<std::string>& overrides, const std::string& clock_text) {
    std::map<std::string, RunResult> out;
    const std::string at_hash = config_hash(load_gpu_config(base.gpu, overrides));
    std::size_t done = 0;
    for (std::size_t i : distinct_entries) {
      ++done;
      RunSpec spec = base;
      spec.overrides = overrides;
      spec.workload = plan[i].workload;
      const auto start = std::chrono::steady_clock::now();
      WorkloadCache::Lookup found = cache.run(spec, at_hash);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      spdlog::info("kernel {} of {}{}: {} ({} {}): {:.2f} us, {} in {:.1f} s", done, distinct_entries.size(),
                   clock_text, plan[i].name, plan[i].workload.synthesizer, plan[i].shape, found.result.total_time_us,
                   found.source == WorkloadCache::Source::simulated ? "simulated" : "from the cache", s);
      out[keys[i]] = std::move(found.result);
    }
    return out;
  };
  // power.cap_mode boost (app/boost_clock.h): a step lasts far less than the boost controller's interval, so the
  // controller sees the step repeated, and the whole step runs at one clock, the one at which the average power
  // of its simulated kernels (each weighted by its calls per step) meets the cap.
  const PowerParams power = PowerParams::from(config);
  if (power.enabled && power.cap_mode == "boost" && !sm_clock_pinned(base) && !distinct_entries.empty()) {
    // A workload's part of the step is its kernels (its own launch waits are the stream's here, not its run's).
    std::deque<std::map<std::string, RunResult>> trials;
    std::deque<EnergyResult> kernel_energies;
    const BoostSearch found = search_boost_clock(power, [&](double hz) {
      std::vector<std::string> overrides = base.overrides;
      overrides.push_back(sm_clock_override(hz));
      trials.push_back(simulate_distinct(overrides, fmt::format(" at {:.0f} MHz", hz / 1e6)));
      std::vector<BoostPart> parts;
      for (std::size_t i : distinct_entries) {
        const RunResult& w = trials.back().at(keys[i]);
        kernel_energies.push_back(kernels_energy(w));
        parts.push_back(BoostPart{&kernel_energies.back(), w.sm_clock_hz, calls_of.at(keys[i])});
      }
      return parts;
    });
    results = std::move(trials[found.chosen]);
    r.step_clock_search = found.clock_search;
    r.step_clock_hz = found.clock_search[found.chosen].first;
    for (auto& [key, result] : results)
      if (result.power) result.power->clock_policy = "boost";
    // The rooflines at the step's clock.
    std::vector<std::string> overrides = base.overrides;
    overrides.push_back(sm_clock_override(r.step_clock_hz));
    r.peaks = peaks_of(load_gpu_config(base.gpu, overrides));
    estimate_rooflines();
    r.clock_policy = "boost";
  } else {
    results = simulate_distinct(base.overrides, "");
    r.step_clock_hz = peaks.sm_clock_hz;
    r.clock_policy = sm_clock_pinned(base) ? "pinned" : "configured";
  }
  r.cache = cache.counts();
  r.sample_mode = config.section("sim").str("sample");
  r.subset_divisor = config.section("sim").u32("subset");
  for (const auto& [key, result] : results)
    r.sampled_workloads += std::any_of(result.kernels.begin(), result.kernels.end(), wave_sampled);

  // The stream: each call of each entry, each of its kernels, submitted one launch interval after the previous
  // (launch.mode), starting when both it is submitted and the previous kernel is done.
  r.entry_us.assign(plan.size(), 0.0);
  double end_us = 0.0, submit_us = 0.0;
  bool first = true;
  auto place = [&](std::size_t entry, const std::string& name, double time_us, const KernelResult* k) {
    if (!first) submit_us += peaks.launch_us_per_kernel;
    first = false;
    const double start = std::max(end_us, submit_us);
    r.stream.push_back(StepKernel{entry, name, start, time_us, start - end_us, k});
    r.launch_wait_us += start - end_us;
    end_us = start + time_us;
    r.entry_us[entry] += time_us;
  };
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const PlanEntry& e = plan[i];
    for (std::uint64_t c = 0; c < e.count; ++c) {
      if (e.kind == EntryKind::simulated) {
        ++r.simulated_calls;
        for (const KernelResult& k : results.at(keys[i]).kernels) {
          place(i, e.name, k.time_us, &k);
          r.simulated_us += k.time_us;
          if (wave_sampled(k)) r.sampled_us += k.time_us;
        }
      } else {
        place(i, e.kind == EntryKind::estimate ? e.name + " [estimate]" : e.name + " [communication estimate]",
              r.entry_roofline[i].us, nullptr);
        (e.kind == EntryKind::estimate ? r.estimated_us : r.communication_us) += r.entry_roofline[i].us;
      }
    }
  }
  r.step_us = end_us;

  // The step as a run, for the report writers: its simulated and estimated kernels (communication has its own
  // timeline track), placed where the stream put them.
  RunResult& run = r.run;
  run.gpu = results.empty() ? config.files().front() : results.begin()->second.gpu;
  run.trace = fmt::format("warpsim llm {} {}", model.name, scenario.phase);
  run.sm_clock_hz = peaks.sm_clock_hz;
  const double cycles_per_us = peaks.sm_clock_hz / 1e6;
  std::vector<KernelSol> sols;
  for (const StepKernel& s : r.stream) {
    if (plan[s.entry].kind == EntryKind::communication) continue;
    KernelResult k = s.simulated ? *s.simulated : KernelResult{};
    k.name = s.simulated ? fmt::format("{} (layer {}): {}", s.name, layer_text(plan[s.entry].layer), k.name)
                         : fmt::format("{} (layer {})", s.name, layer_text(plan[s.entry].layer));
    k.start_cycle = static_cast<std::uint64_t>(std::llround(s.start_us * cycles_per_us));
    k.time_us = s.time_us;
    if (!s.simulated) k.cycles = static_cast<std::uint64_t>(std::llround(s.time_us * cycles_per_us));
    k.launch_wait_us = s.launch_wait_us;
    k.launch_wait_cycles = static_cast<std::uint64_t>(std::llround(s.launch_wait_us * cycles_per_us));
    run.kernels.push_back(std::move(k));
  }
  for (const KernelResult& k : run.kernels)
    if (!k.speed_of_light.units.empty()) sols.push_back(KernelSol{&k.speed_of_light, k.cycles, &k.stalls});
  run.speed_of_light = run_speed_of_light(sols);
  run.total_time_us = r.step_us;
  run.total_cycles = static_cast<std::uint64_t>(std::llround(r.step_us * cycles_per_us));
  LaunchSummary& l = run.launch;
  l.mode = peaks.launch_mode;
  l.us_per_kernel = peaks.launch_us_per_kernel;
  l.wait_us = r.launch_wait_us;
  l.wait_cycles = static_cast<std::uint64_t>(std::llround(r.launch_wait_us * cycles_per_us));
  for (const StepKernel& s : r.stream) l.kernels_waited += s.launch_wait_us > 0;
  l.launch_bound = r.launch_wait_us >= r.step_us - r.launch_wait_us;
  l.verdict = fmt::format("{}: the GPU waited {:.1f} us for {} of {} kernel launches ({} launches, {:.2f} us per "
                          "kernel) beside {:.1f} us of work",
                          l.launch_bound ? "launch-bound" : "not launch-bound", r.launch_wait_us, l.kernels_waited,
                          r.stream.size(), l.mode, l.us_per_kernel, r.step_us - r.launch_wait_us);
  run.sim.version = fmt::format("warpsim {} ({})", WARPSIM_VERSION, WARPSIM_GIT_REVISION);
  run.sim.config_files = fmt::format("{}", fmt::join(config.files(), ", "));
  run.sim.config_hash = hash;
  run.sim.driver = base.driver;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  run.sim.wall_s = r.wall_s;
  return r;
}

namespace {

// The rows of the kernel table: one per kernel name, its calls summed over the layers that run it (all of them, or
// one: the first layer's unfused input norm; 31: the later layers' fused ones).
struct KernelRow {
  std::size_t entry;
  std::uint64_t calls_per_step = 0;
  double total_us = 0.0;
  std::set<int> layers;  // the layers that run it
};

// "each" for a kernel of every layer, else how many layers run it (the first layer's unfused norm: 1).
std::string layers_text(const KernelRow& row, std::uint64_t layers) {
  if (row.layers.empty()) return "-";
  return row.layers.size() == layers ? "each" : std::to_string(row.layers.size());
}

std::vector<KernelRow> kernel_rows(const std::vector<PlanEntry>& plan, const LlmResult& r) {
  std::vector<KernelRow> rows;
  std::map<std::string, std::size_t> row_of;  // "name/layer-or-outside"
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::string id = plan[i].name + (plan[i].layer < 0 ? "/-" + std::to_string(i) : "/layer");
    auto [it, fresh] = row_of.emplace(id, rows.size());
    if (fresh) rows.push_back(KernelRow{i, 0, 0.0, {}});
    rows[it->second].calls_per_step += plan[i].count;
    rows[it->second].total_us += r.entry_us[i];
    if (plan[i].layer >= 0) rows[it->second].layers.insert(plan[i].layer);
  }
  return rows;
}

// Every GPU reads its 1/tp share of the weights once per step: the layers' GEMM weights at the GEMM type, the rest
// (logits, norms, routers, biases) in bf16; an untied embedding table is only looked up (a few rows), not read.
double untied_embedding_parameters(const LlmModel& m) {
  return m.tie_word_embeddings ? 0.0 : static_cast<double>(m.vocab) * m.hidden;
}

double weights_bytes(const LlmModel& m, const Scenario& s) {
  const double gemm = m.layer_gemm_parameters();
  // Experts split whole over the expert-parallel GPUs, or each split by tensor parallelism.
  const double experts = m.layer_expert_parameters(), gemm_bytes = element_bytes(s.dtype);
  return ((gemm - experts) * gemm_bytes + (m.parameters() - gemm - untied_embedding_parameters(m)) * 2.0) / s.tp +
         experts * gemm_bytes / (s.ep > 1 ? s.ep : s.tp);
}

// Every weight a GPU holds: those read each step and an untied embedding table (vocabulary-parallel: its 1/tp).
double weights_held_bytes(const LlmModel& m, const Scenario& s) {
  return weights_bytes(m, s) + untied_embedding_parameters(m) * 2.0 / s.tp;
}

}  // namespace

std::string llm_stats_json(const LlmModel& m, const Scenario& s, const std::vector<PlanEntry>& plan,
                           const LlmResult& r, const std::string& cache_dir) {
  OrderedJson j = OrderedJson::parse(results_json(r.run));
  OrderedJson llm;
  llm["model"] = {{"name", m.name}, {"file", m.file}, {"model_type", m.model_type}, {"hidden_size", m.hidden},
                  {"num_hidden_layers", m.layers}, {"num_attention_heads", m.heads},
                  {"num_key_value_heads", m.kv_heads}, {"head_dim", m.head_dim}, {"intermediate_size", m.intermediate},
                  {"num_local_experts", m.experts}, {"num_experts_per_tok", m.experts_per_token},
                  {"vocab_size", m.vocab}, {"rope_theta", m.rope_theta}, {"tie_word_embeddings", m.tie_word_embeddings},
                  {"qkv_bias", m.qkv_bias}, {"parameters", m.parameters()}};
  llm["scenario"] = {{"phase", s.phase}, {"batch", s.batch}, {"prompt", s.prompt}, {"context", context_tokens(s)},
                     {"dtype", s.dtype}, {"kv_dtype", s.kv_dtype}, {"tp", s.tp}, {"ep", s.ep}, {"dp", s.dp()}, {"moe_skew", s.moe_skew}, {"launch_mode", r.run.launch.mode}};
  const double step_ms = r.step_us / 1e3, step_s = r.step_us / 1e6;
  llm["step_ms"] = step_ms;
  // Rates of the whole deployment: every data-parallel rank runs its own batch in the step.
  const double ranks = static_cast<double>(s.dp());
  if (s.phase == "prefill") {
    llm["ttft_ms"] = step_ms;
    llm["prompt_tokens_per_s"] = ranks * static_cast<double>(step_tokens(s)) / step_s;
    llm["tokens_per_s"] = ranks * static_cast<double>(s.batch) / step_s;  // first tokens
  } else {
    llm["ms_per_token"] = step_ms;
    llm["tokens_per_s"] = ranks * static_cast<double>(s.batch) / step_s;
  }
  llm["tokens_per_s_per_gpu"] = llm["tokens_per_s"].get<double>() / static_cast<double>(s.gpus());
  // Energy (models/power): the simulated kernels' own energy; the collectives' link energy (node.link_energy_per_bit,
  // "nvlink"); and the GPU's idle power (power.*, at clocks.sm) over the communication time and the launch gaps,
  // where no simulated kernel runs (a lower bound for communication: NCCL's kernels do run on a few SMs). Estimated
  // kernels are not counted (energy_covers_us says how much of the step is).
  double kernel_joules = 0, covered_us = 0;
  bool any_energy = false;
  for (const KernelResult& k : r.run.kernels)
    if (k.energy) {
      any_energy = true;
      kernel_joules += k.energy->joules;
      covered_us += k.energy->seconds * 1e6;
    }
  if (any_energy) {
    const double idle_communication_j = r.peaks.idle_w * r.communication_us * 1e-6;
    const double idle_gaps_j = r.peaks.idle_w * r.launch_wait_us * 1e-6;
    const double total_j = kernel_joules + r.nvlink_j + idle_communication_j + idle_gaps_j;
    covered_us += r.communication_us + r.launch_wait_us;
    // One GPU's energy; every GPU of the deployment spends the same (each simulated alike), and the step's tokens
    // are those of every data-parallel rank.
    const double deployment_j = total_j * static_cast<double>(s.gpus());
    llm["energy_j"] = total_j;
    llm["energy_j_all_gpus"] = deployment_j;
    llm["energy_covers_us"] = covered_us;
    llm["energy_per_token_j"] =
        deployment_j / (ranks * static_cast<double>(s.phase == "prefill" ? step_tokens(s) : s.batch));
    llm["average_power_w"] = covered_us > 0 ? total_j / (covered_us * 1e-6) : 0.0;
    llm["energy_breakdown_j"] = {{"kernels", kernel_joules}, {"nvlink", r.nvlink_j},
                                 {"idle_during_communication", idle_communication_j},
                                 {"idle_during_launch_gaps", idle_gaps_j}};
    llm["idle_power_w"] = r.peaks.idle_w;
  }
  llm["sm_clock_hz"] = r.step_clock_hz;
  llm["clock_policy"] = r.clock_policy;
  if (!r.step_clock_search.empty()) {
    OrderedJson search = OrderedJson::array();
    for (const auto& [hz, w] : r.step_clock_search) search.push_back({{"sm_clock_hz", hz}, {"average_w", w}});
    llm["clock_search"] = std::move(search);
  }
  llm["roofline_step_ms"] = r.roofline_step_us / 1e3;
  // CTA-wave sampling: how much of the simulated time is extrapolated from samples (README "Sampling").
  llm["sampling"] = {{"mode", r.sample_mode}, {"sampled_workloads", r.sampled_workloads},
                     {"distinct_workloads", r.distinct_workloads}, {"sampled_kernels_ms", r.sampled_us / 1e3},
                     {"subset_divisor", r.subset_divisor},
                     {"exact", r.sampled_workloads == 0 && r.subset_divisor == 1}};
  llm["weights_bytes_per_gpu"] = weights_bytes(m, s);
  llm["weights_held_bytes_per_gpu"] = weights_held_bytes(m, s);
  llm["kv_cache_bytes_per_gpu"] = kv_cache_bytes(m, s);
  llm["hbm_capacity_bytes"] = r.peaks.hbm_capacity_bytes;
  // Weights and KV cache only: activations, the CUDA context and vLLM's gpu_memory_utilization headroom not counted.
  llm["fits_in_hbm"] = weights_held_bytes(m, s) + kv_cache_bytes(m, s) <= r.peaks.hbm_capacity_bytes;
  double compute_us = 0, memory_us = 0;
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (plan[i].kind != EntryKind::communication)
      (r.entry_roofline[i].bound == "compute" ? compute_us : memory_us) += r.entry_us[i];
  llm["breakdown_ms"] = {{"simulated_kernels", r.simulated_us / 1e3}, {"estimated_kernels", r.estimated_us / 1e3},
                         {"communication_estimate", r.communication_us / 1e3}, {"launch_gaps", r.launch_wait_us / 1e3},
                         {"compute_bound_kernels", compute_us / 1e3}, {"memory_bound_kernels", memory_us / 1e3}};
  OrderedJson kernels = OrderedJson::array();
  for (const KernelRow& row : kernel_rows(plan, r)) {
    const PlanEntry& e = plan[row.entry];
    const double per_call = row.total_us / row.calls_per_step;
    OrderedJson k = {{"name", e.name}, {"layers", layers_text(row, m.layers)}, {"kind", kind_name(e.kind)},
              {"synthesizer", e.workload.synthesizer}, {"shape", e.shape}, {"calls_per_step", row.calls_per_step},
              {"time_us_per_call", per_call}, {"roofline_us_per_call", r.entry_roofline[row.entry].us},
              {"roofline_bound", r.entry_roofline[row.entry].bound}, {"total_us", row.total_us},
              {"share_of_step", row.total_us / r.step_us}, {"flops_per_call", e.flops}, {"bytes_per_call", e.bytes}};
    if (const auto& c = r.entry_roofline[row.entry].collective)
      k["collective"] = {{"op", collective_op_name(c->op)}, {"bytes", c->bytes}, {"gpus", c->gpus},
                         {"algorithm", c->chosen.algorithm}, {"protocol", c->chosen.protocol},
                         {"latency_us", c->chosen.latency_us},
                         {"algorithm_bandwidth_gb_per_s", c->chosen.algorithm_bytes_per_s / 1e9},
                         {"link_bytes", c->link_bytes}, {"link_energy_j", c->link_energy_j}};
    // The simulation's own verdict (speed of light) of the entry's first kernel.
    for (const StepKernel& sk : r.stream)
      if (sk.entry == row.entry && sk.simulated) {
        k["simulated_limiter"] = sk.simulated->speed_of_light.limiter.verdict;
        break;
      }
    kernels.push_back(std::move(k));
  }
  llm["kernels"] = std::move(kernels);
  OrderedJson layers = OrderedJson::array();
  for (std::uint64_t layer = 0; layer < m.layers; ++layer) {
    double t = 0, roof = 0;
    for (std::size_t i = 0; i < plan.size(); ++i)
      if (plan[i].layer == static_cast<int>(layer)) {
        t += r.entry_us[i];
        roof += r.entry_roofline[i].us * plan[i].count;
      }
    layers.push_back({{"layer", layer}, {"time_us", t}, {"roofline_us", roof}});
  }
  llm["layers"] = std::move(layers);
  llm["memoization"] = {{"kernels_on_stream", r.stream.size()}, {"simulated_workload_calls", r.simulated_calls},
                        {"distinct_workloads", r.distinct_workloads},
                        {"simulated", r.cache.simulated}, {"memory_hits", r.cache.memory_hits},
                        {"disk_hits", r.cache.disk_hits}, {"cache_dir", cache_dir}, {"wall_s", r.wall_s}};
  llm["notes"] = {
      "kernels marked estimate are roofline times (max of FLOPs / peak and bytes / HBM bandwidth, from the config)",
      "communication is an estimate: the collective model (models/node/collective.h: ring, tree and NVLS with NCCL's "
      "LL, LL128 and Simple protocols, the fastest per message, figures from the config's node section), not "
      "overlapped with compute (as vLLM runs tensor parallelism)",
      "each distinct kernel is simulated alone, from a cold L2: no cache reuse between consecutive kernels",
      "MoE experts: tokens routed evenly, one GEMM per active expert (vLLM runs one grouped kernel)",
      "silu_and_mul is simulated as an elementwise mul of the same traffic (SiLU's exponential not counted)"};
  j["llm"] = std::move(llm);
  return j.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

std::string llm_stats_csv(const LlmResult& r) { return results_csv(r.run); }

std::string llm_timeline(const std::vector<PlanEntry>& plan, const LlmResult& r) {
  std::string text = results_timeline(r.run);
  const std::string tail = "\n]}\n";
  WARPSIM_ASSERT(text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0,
                 "results_timeline's layout changed: the communication track cannot be appended");
  text.resize(text.size() - tail.size());
  auto add = [&text](const OrderedJson& event) { text += ",\n" + event.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); };
  add({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "communication (estimate)"}}}});
  add({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "stream"}}}});
  for (const StepKernel& s : r.stream) {
    const PlanEntry& e = plan[s.entry];
    if (e.kind != EntryKind::communication) continue;
    add({{"name", s.name}, {"cat", "communication"}, {"ph", "X"}, {"pid", 0}, {"tid", 1}, {"ts", s.start_us},
         {"dur", s.time_us}, {"args", {{"layer", e.layer}, {"collective", e.collective}, {"bytes", e.message_bytes},
                   {"algorithm", r.entry_roofline[s.entry].collective->chosen.algorithm},
                   {"protocol", r.entry_roofline[s.entry].collective->chosen.protocol}}}});
  }
  return text + tail;
}

std::string llm_summary(const LlmModel& m, const Scenario& s, const std::vector<PlanEntry>& plan, const LlmResult& r) {
  std::string o = fmt::format("warpsim llm: {} on {}, {} batch {} prompt {} context {} {} kv {} tp {}{}{} ({} launches)\n",
                              m.name, r.run.gpu, s.phase, s.batch, s.prompt, context_tokens(s), s.dtype, s.kv_dtype,
                              s.tp, s.ep > 1 ? fmt::format(" ep {} (dp {}: batch per rank)", s.ep, s.dp()) : std::string(),
                              s.moe_skew > 0 ? fmt::format(" moe-skew {:g}", s.moe_skew) : std::string(),
                              r.run.launch.mode);
  const double step_s = r.step_us / 1e6, ranks = static_cast<double>(s.dp()), gpus = static_cast<double>(s.gpus());
  if (s.phase == "prefill")
    o += fmt::format("  TTFT {:.3f} ms; {:.0f} prompt tokens/s ({:.0f} per GPU)\n", r.step_us / 1e3,
                     ranks * step_tokens(s) / step_s, ranks * step_tokens(s) / step_s / gpus);
  else
    o += fmt::format("  {:.3f} ms per output token; {:.1f} tokens/s ({:.1f} per GPU)\n", r.step_us / 1e3,
                     ranks * s.batch / step_s, ranks * s.batch / step_s / gpus);
  o += fmt::format("  roofline of the same kernels {:.3f} ms; weights {:.2f} GB per GPU read once: >= {:.3f} ms at HBM peak\n",
                   r.roofline_step_us / 1e3, weights_bytes(m, s) / 1e9,
                   weights_bytes(m, s) / r.peaks.hbm_bytes_per_s * 1e3);
  const double held = weights_held_bytes(m, s) + kv_cache_bytes(m, s);
  o += fmt::format("  memory per GPU: weights {:.2f} GB + KV cache ({}) {:.2f} GB = {:.2f} GB of {:.2f} GB HBM{} "
                   "(activations and headroom not counted)\n",
                   weights_held_bytes(m, s) / 1e9, s.kv_dtype, kv_cache_bytes(m, s) / 1e9, held / 1e9,
                   r.peaks.hbm_capacity_bytes / 1e9,
                   held > r.peaks.hbm_capacity_bytes ? ": DOES NOT FIT (the step is simulated as if it did)" : "");
  if (r.clock_policy == "boost") {
    std::vector<std::string> tried;
    for (const auto& [hz, w] : r.step_clock_search) tried.push_back(fmt::format("{:.0f} MHz {:.0f} W", hz / 1e6, w));
    o += fmt::format("  SM clock {:.0f} MHz (boost: one clock for the step, the highest step at which its simulated "
                     "kernels average at or under the cap; tried {})\n", r.step_clock_hz / 1e6, fmt::join(tried, ", "));
  } else {
    o += fmt::format("  SM clock {:.0f} MHz ({})\n", r.step_clock_hz / 1e6, r.clock_policy);
  }
  o += fmt::format("  where the time goes: simulated kernels {:.3f} ms, estimated kernels {:.3f} ms, communication "
                   "(estimate) {:.3f} ms, launch gaps {:.3f} ms\n",
                   r.simulated_us / 1e3, r.estimated_us / 1e3, r.communication_us / 1e3, r.launch_wait_us / 1e3);
  o += fmt::format("\n  {:<28} {:<6} {:<22} {:>6} {:>11} {:>11} {:>9} {:>6}  {}\n", "kernel", "layers", "kind", "calls",
                   "us/call", "roofline", "bound", "share", "shape");
  for (const KernelRow& row : kernel_rows(plan, r)) {
    const PlanEntry& e = plan[row.entry];
    o += fmt::format("  {:<28} {:<6} {:<22} {:>6} {:>11.2f} {:>11.2f} {:>9} {:>5.1f}%  {}\n", e.name,
                     layers_text(row, m.layers), kind_name(e.kind), row.calls_per_step, row.total_us / row.calls_per_step,
                     r.entry_roofline[row.entry].us, r.entry_roofline[row.entry].bound, 100 * row.total_us / r.step_us,
                     r.entry_roofline[row.entry].collective
                         ? fmt::format("{} ({})", e.shape, collective_choice_text(r.entry_roofline[row.entry].collective->chosen))
                         : e.shape);
  }
  o += fmt::format("\n  {} kernel calls, {} of them simulated kernels of {} distinct workloads: {} simulated, {} from "
                   "the disk cache, {} from this process's memory; {:.1f} s\n",
                   r.stream.size(), r.simulated_calls, r.distinct_workloads, r.cache.simulated, r.cache.disk_hits,
                   r.cache.memory_hits, r.wall_s);
  if (r.sampled_workloads > 0)
    o += fmt::format("  sampled (--sample waves): {} of {} distinct workloads had kernels sampled by CTA waves or rounds, "
                     "{:.3f} ms of the step ({:.0f}%) extrapolated from samples: an estimate (README \"Sampling\": "
                     "measured error; --sample off simulates every CTA)\n",
                     r.sampled_workloads, r.distinct_workloads, r.sampled_us / 1e3, 100 * r.sampled_us / r.step_us);
  else
    o += fmt::format("  sampling: {}; no kernel sampled by CTA waves or rounds\n", r.sample_mode);
  if (r.subset_divisor > 1)
    o += fmt::format("  subset (--subset {}): every simulated kernel ran on 1/{} of the GPU, its share of the CTAs, with "
                     "counters and energy scaled to the whole grid: an estimate (README \"Sampling\": measured error; "
                     "--subset 1 simulates the whole GPU)\n",
                     r.subset_divisor, r.subset_divisor);
  o += fmt::format("  launch: {}\n", r.run.launch.verdict);
  if (r.nvlink_j > 0 || r.communication_us > 0)
    o += fmt::format("  communication: {:.3f} ms, NVLink energy {:.3f} mJ (node.link_energy_per_bit)\n",
                     r.communication_us / 1e3, r.nvlink_j * 1e3);
  return o;
}

std::string collectives_text(const std::vector<PlanEntry>& plan, const Peaks& peaks) {
  std::string o;
  for (const PlanEntry& e : plan) {
    if (e.kind != EntryKind::communication || e.layer > 0) continue;
    const Roofline roof = roofline(e, peaks);
    const CollectiveEstimate& c = *roof.collective;
    if (o.empty())
      o = fmt::format("collectives (models/node/collective.h, {} node:; bus bandwidth {:.1f} GB/s):\n", peaks.gpu,
                      peaks.collectives.bus_bytes_per_s() / 1e9);
    o += fmt::format("  {:<28} {:<14} {:>2} GPUs {:>12.0f} B  chosen {:<12} {:>9.2f} us  (", e.name,
                     collective_op_name(c.op), c.gpus, c.bytes, collective_choice_text(c.chosen), c.chosen.time_us);
    for (std::size_t i = 0; i < c.candidates.size(); ++i)
      o += fmt::format("{}{} {:.2f}", i ? ", " : "", collective_choice_text(c.candidates[i]), c.candidates[i].time_us);
    o += " us)\n";
  }
  return o;
}

}  // namespace warpsim::llm
