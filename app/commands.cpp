#include "app/commands.h"
#include "app/subcommands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include "app/compare.h"
#include "app/gpu_configs.h"
#include "app/import_kineto.h"
#include "app/llm/llm_command.h"
#include "app/sweep/sweep_command.h"
#include "app/report.h"
#include "app/result_set.h"
#include "app/run_one.h"
#include "app/synth_metrics.h"
#include "app/workload_cache.h"
#include "models/power/energy_model.h"
#include "app/validate/calibrate.h"
#include "app/validate/case_selection.h"
#include "app/validate/ncu_import.h"
#include "app/validate/plots.h"
#include "app/validate/reference.h"
#include "app/validate/runner.h"
#include "app/validate/validation_report.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/trace/trace_file.h"
#include "traces/readers/accelsim/accelsim_writer.h"
#include "traces/readers/registry.h"
#include "traces/synth/registry.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace warpsim {
namespace {

// The default workload of `warpsim run`: the MLP up-projection of Llama-3-8B (hidden 4096, intermediate
// 14336) over a 4096-token prefill, in bf16.
constexpr const char* kDefaultGemm = "4096x14336x4096";
constexpr const char* kDefaultDtype = "bf16";
constexpr const char* kDefaultGpu = "h100_sxm";

const char* kUsage =
    "usage: warpsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run        simulate a trace or a synthesized kernel on a GPU config; writes stats.json, stats.csv,\n"
    "             config.resolved.yaml, timeline.json, then run.json (the manifest that marks the set complete)\n"
    "  synth      synthesize a kernel trace (`warpsim synth --help` lists the kinds and their keys)\n"
    "  describe   list every config parameter (type, unit, range, default, description), optionally of one section\n"
    "  config     print the fully resolved configuration of a GPU config\n"
    "  compare    compare runs (stats.json files or output directories): time, speed-up, utilisation\n"
    "  validate   simulate the cases of reference files (measured figures of real GPUs) and report the errors\n"
    "  calibrate  propose config values from measured microbenchmark figures (writes a config overlay to review)\n"
    "  convert    convert a trace between formats: Accel-Sim (kernelslist.g, .traceg[.xz]) and native (.wst)\n"
    "  import-kineto  simulate the kernels of a PyTorch profiler (Kineto) trace and compare with their measured times\n"
    "  llm        simulate one inference step of an LLM (prefill or decode) on one GPU: TTFT, time per token\n"
    "  sweep      design-space sweeps: plan a spec into jobs, submit them (local pool or Slurm), status, collect\n"
    "  report     an HTML report (SVG and PNG plots) comparing the candidates of one or more sweep run directories\n"
    "\n"
    "`warpsim run` without options simulates a Llama-3-8B MLP GEMM (4096x14336x4096 bf16) on the H100 SXM.\n"
    "`warpsim <command> --help` describes a command's options.\n"
    "GPU configs: a name (h100_sxm) is a shipped config, from $WARPSIM_CONFIG_DIR when set, else from\n"
    "<warpsim>/../share/warpsim/configs or the source tree's configs/; anything else is a YAML path.\n";

// Creates the output directory (or checks an existing one) and that files can be written in it.
void prepare_output_dir(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw InputError(fmt::format("--out: '{}' exists and is not a directory", out));
  fs::create_directories(out, ec);
  if (ec) throw InputError(fmt::format("--out: cannot create directory '{}': {}", out, ec.message()));
  const fs::path probe = fs::path(out) / ".warpsim-write-test";
  std::ofstream f(probe);
  if (!f) throw InputError(fmt::format("--out: cannot write in '{}'", out));
  f.close();
  fs::remove(probe, ec);
}


// One parameter (of a config section or a synthesizer): "  name   type [unit] in [min, max]   default X|required"
// and the description on the next line.
std::string describe_param(const ParamSpec& p) {
  std::string type = param_type_name(p.type);
  if (p.type == ParamType::Choice) type += fmt::format(" {{{}}}", fmt::join(p.choices, "|"));
  if (!p.unit.empty() && p.type != ParamType::Frequency && p.type != ParamType::Bandwidth && p.type != ParamType::Size &&
      p.type != ParamType::Power && p.type != ParamType::Energy && p.type != ParamType::Duration)
    type += fmt::format(" [{}]", p.unit);
  // Ranges other than the type's own limits (Schema's defaults: [0, 2^32-1] for UInt, [0, inf) otherwise).
  const bool numeric = p.type != ParamType::Choice && p.type != ParamType::String && p.type != ParamType::Bool;
  const double type_max = p.type == ParamType::UInt ? static_cast<double>(std::numeric_limits<std::uint32_t>::max())
                                                    : std::numeric_limits<double>::infinity();
  if (numeric && (p.min > 0 || p.max < type_max)) {
    const std::string max = std::isinf(p.max) ? "inf" : format_quantity(p.max, p.type);
    type += fmt::format(" in [{}, {}]", format_quantity(p.min, p.type), max);
  }
  const std::string fallback = p.default_text ? "default " + *p.default_text : std::string("required");
  std::string subset;  // what SM subsetting (sim.subset = N) does to it
  if (p.subset_scaling == kSubsetUnitCount) subset = " (a count of units: sim.subset N divides it)";
  else if (!p.subset_scaling.empty()) subset = " (a total over " + p.subset_scaling + ": sim.subset N keeps it per unit)";
  return fmt::format("  {:<37} {:<21} {}\n      {}{}\n", p.name, type, fallback, p.description, subset);
}

// --- run ----------------------------------------------------------------------------------------------------

// "MxNxK" -> the gemm synthesizer's keys (which validates the numbers).
std::map<std::string, std::string> gemm_shape_keys(const std::string& shape, const std::string& dtype) {
  const auto x1 = shape.find('x'), x2 = x1 == std::string::npos ? x1 : shape.find('x', x1 + 1);
  if (x2 == std::string::npos || shape.find('x', x2 + 1) != std::string::npos)
    throw InputError(fmt::format("--gemm: expected MxNxK (e.g. 4096x4096x4096), got '{}'", shape));
  return {{"m", shape.substr(0, x1)}, {"n", shape.substr(x1 + 1, x2 - x1 - 1)}, {"k", shape.substr(x2 + 1)}, {"dtype", dtype}};
}

// "key=value" pairs of --synth-key.
std::map<std::string, std::string> synth_key_values(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> keys;
  for (const std::string& a : assignments) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--synth-key: expected KEY=VALUE (e.g. --synth-key m=4096), got '{}'", a));
    keys[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return keys;
}

// The workload options that `run` and `compare` share.
struct WorkloadOptions {
  std::string gemm, dtype;
  std::vector<std::string> synth_keys;
  WorkloadSpec spec;

  void add_to(po::options_description& desc) {
    desc.add_options()
        ("trace", po::value(&spec.trace_file), "trace file to replay (format recognised by its contents or name: native .wst, traces/FORMAT.md; Accel-Sim kernelslist.g or kernel-N.traceg[.xz], traces/readers/accelsim/README.md), or a tracer's directory (its kernelslist.g)")
        ("gemm", po::value(&gemm), "shorthand for --synth gemm: a GEMM MxNxK (the default workload when none is given)")
        ("dtype", po::value(&dtype), "data type of --gemm: bf16 (default), fp16, fp8, tf32, int8, fp64, fp4")
        ("synth", po::value(&spec.synthesizer), "run a registered synthesizer of this kind (see `warpsim synth --help`)")
        ("synth-key", po::value(&synth_keys)->composing(), "a key of --synth, KEY=VALUE, e.g. --synth-key m=4096 (repeatable)");
  }

  // After parsing: one workload, checked for contradictions; the default GEMM when none is given.
  WorkloadSpec workload() const {
    WorkloadSpec w = spec;
    const int workloads = !w.trace_file.empty() + !gemm.empty() + !w.synthesizer.empty();
    if (workloads > 1) throw InputError("--trace, --gemm and --synth are alternatives; give one");
    if (!dtype.empty() && (!w.trace_file.empty() || !w.synthesizer.empty()))
      throw InputError("--dtype goes with --gemm (with --synth, write --synth-key dtype=...)");
    if (!synth_keys.empty() && w.synthesizer.empty()) throw InputError("--synth-key needs --synth KIND");
    if (!w.synthesizer.empty()) {
      w.synth_keys = synth_key_values(synth_keys);
    } else if (w.trace_file.empty()) {
      w.synthesizer = "gemm";
      w.synth_keys = gemm_shape_keys(gemm.empty() ? kDefaultGemm : gemm, dtype.empty() ? kDefaultDtype : dtype);
    }
    return w;
  }
};

// --max-memory, which `run` and `compare --gpu` share: a size, or the default (app/run_one.h).
struct MemoryLimitOption {
  std::string text;

  void add_to(po::options_description& desc) {
    const std::string help = fmt::format(
        "refuse a GPU whose model is estimated to need more host memory than this, e.g. 16GiB (default: {:.0f}% of "
        "physical memory)", kDefaultMemoryFraction * 100);
    desc.add_options()("max-memory", po::value(&text), help.c_str());
  }
  std::uint64_t bytes() const {  // 0: the default
    if (text.empty()) return 0;
    double value = 0;
    std::string error;
    if (!parse_quantity(text, ParamType::Size, value, error) || value < 1)
      throw InputError(fmt::format("--max-memory: expected a size such as 16GiB, got '{}'{}", text,
                                   error.empty() ? "" : ": " + error));
    return static_cast<std::uint64_t>(value);
  }
};

int cmd_run(int argc, char** argv) {
  po::options_description desc("options");
  RunSpec spec;
  WorkloadOptions workload;
  MemoryLimitOption memory_limit;
  std::string out, launch_mode, sample_mode, subset;
  desc.add_options()
      ("gpu", po::value(&spec.gpu)->default_value(kDefaultGpu), "GPU config: a shipped name (a100_sxm, h100_sxm, ...) or a YAML path");
  workload.add_to(desc);
  desc.add_options()
      ("set", po::value(&spec.overrides)->composing(), "override a config value, e.g. --set sm.count=144 (repeatable)")
      ("launch", po::value(&launch_mode),
       "how the host submits the kernels: eager (one launch call each) or graph (a CUDA graph replay); "
       "default: the config's launch.mode (graph in the shipped configs); same as --set launch.mode=...")
      ("out", po::value(&out)->default_value("warpsim-out"), "output directory")
      ("driver", po::value(&spec.driver)->default_value("systemc"), "simulation driver: systemc, or plain (C++ loop, same results)")
      ("sample", po::value(&sample_mode),
       "CTA-wave sampling: waves (a kernel of more than sim.sample_min_waves waves is simulated for a sample of its "
       "waves, the rest extrapolated and marked as an estimate) or off (every CTA simulated); default: the config's "
       "sim.sample (off); = --set sim.sample=...")
      ("subset", po::value(&subset), kSubsetHelp)
      ("no-progress", "no progress lines on stderr")
      ("quiet,q", "do not print the summary");
  memory_limit.add_to(desc);
  po::variables_map vm;
  if (!parse_command_options("run", argc, argv, desc, vm,
             "usage: warpsim run [--gpu CONFIG] [--trace FILE | --gemm MxNxK [--dtype T] | --synth KIND --synth-key K=V ...]\n"
             "                   [--set k=v ...] [--sample waves|off] [--subset N] [--out DIR]"))
    return 0;
  spec.workload = workload.workload();
  if (vm.count("launch")) spec.overrides.push_back("launch.mode=" + launch_mode);  // the config checks the value
  if (vm.count("sample")) spec.overrides.push_back(sample_override(sample_mode));
  if (vm.count("subset")) spec.overrides.push_back("sim.subset=" + subset);  // the config checks the value
  spec.progress = !vm.count("no-progress");
  spec.max_memory_bytes = memory_limit.bytes();

  PreparedRun prepared = prepare_run(spec);
  prepare_output_dir(out);  // after the inputs are checked, before the run: a bad --out should not cost a simulation
  ResultSetWriter results(out);
  const RunOutcome run = simulate(std::move(prepared));
  results.write("stats.json", results_json(run.result));
  results.write("stats.csv", results_csv(run.result));
  results.write("config.resolved.yaml", run.config.resolved_yaml());
  results.write("timeline.json", results_timeline(run.result));
  std::vector<std::string> command_line{"warpsim"};
  command_line.insert(command_line.end(), argv, argv + argc);  // argv[0] is "run"
  results.commit(run.result.sim.version, command_line);
  if (!vm.count("quiet")) {
    for (const SynthMetricValue& m : synth_metrics(spec.workload, run))
      fmt::print("{}: {} = {:.6g} {}\n", spec.workload.synthesizer, m.metric.name, m.value, m.metric.unit);
  }
  if (!vm.count("quiet"))
    fmt::print("{}  results in {}/ (stats.json, stats.csv, config.resolved.yaml, timeline.json for ui.perfetto.dev; run.json)\n",
               results_summary(run.result), out);
  return 0;
}

// --- synth --------------------------------------------------------------------------------------------------

std::string synthesizer_help(const SynthesizerInfo& info) {
  std::string text = fmt::format("{}: {}\n", info.name, info.description);
  for (const ParamSpec& key : info.keys) text += describe_param(key);
  if (!info.metrics.empty()) {
    text += "  metrics (printed by `warpsim run --synth`, usable in validate references):\n";
    for (const SynthMetric& m : info.metrics)
      text += fmt::format("    {:<34} [{}]\n      {}\n", m.name, m.unit, m.description);
  }
  return text;
}

void add_synth_common_options(po::options_description& desc, std::string& gpu, std::string& output) {
  desc.add_options()
      ("gpu", po::value(&gpu)->default_value(kDefaultGpu), "GPU config whose architecture and limits the kernel targets")
      ("out,o", po::value(&output), "write the trace to this file (native format); without it, print a summary")
      ("output", po::value(&output), "= --out");
}

int cmd_synth(int argc, char** argv) {
  const SynthRegistry& synths = SynthRegistry::instance();
  std::string gpu, output;
  const std::string usage = "usage: warpsim synth KIND [--KEY VALUE ...] [--gpu CONFIG] [-o FILE]";
  if (argc < 2 || argv[1][0] == '-') {  // no KIND: only --help makes sense
    po::options_description desc("options");
    add_synth_common_options(desc, gpu, output);
    po::variables_map vm;
    if (!parse_command_options("synth", argc, argv, desc, vm, usage)) {
      fmt::print("kinds and their keys (--KEY VALUE):\n\n");
      for (const std::string& kind : synths.kinds()) fmt::print("{}\n", synthesizer_help(*synths.find(kind)));
      return 0;
    }
    throw InputError(fmt::format("synth: expected a synthesizer kind first ({}), e.g. warpsim synth gemm --m 4096 ...",
                                 fmt::join(synths.kinds(), ", ")));
  }
  const SynthesizerInfo& info = synths.get(argv[1]);
  // The kind's keys become options: the KIND takes argv[0]'s place, which program_options skips.
  po::options_description desc(fmt::format("keys of {}", info.name));
  for (const ParamSpec& key : info.keys) desc.add_options()(key.name.c_str(), po::value<std::string>(), key.description.c_str());
  add_synth_common_options(desc, gpu, output);
  po::variables_map vm;
  try {
    if (!parse_command_options("synth " + info.name, argc - 1, argv + 1, desc, vm, usage)) return 0;
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;
    for (const ParamSpec& key : info.keys) names.push_back("--" + key.name);
    const std::string hint = did_you_mean(e.get_option_name(), names);
    throw InputError(fmt::format("synth {}: unknown key '{}'{}", info.name, e.get_option_name(),
                                 hint.empty() ? fmt::format(" (keys: {})", fmt::join(names, ", ")) : "; did you mean '" + hint + "'?"));
  }
  std::map<std::string, std::string> given;
  for (const ParamSpec& key : info.keys)
    if (vm.count(key.name)) given[key.name] = vm[key.name].as<std::string>();
  const Config config = load_gpu_config(gpu, {});
  auto source = synths.make(info.name, given, config);
  for (std::size_t i = 0; i < source->num_kernels(); ++i) {  // e.g. a split-K GEMM and its reduction kernel
    const std::unique_ptr<KernelSource> k = source->open_kernel(i);
    const KernelInfo& kernel = k->info();
    fmt::print("{}: grid {}x{}x{}, block {} threads, {} registers/thread, {} B shared memory, {}\n", kernel.name,
               kernel.grid.x, kernel.grid.y, kernel.grid.z, kernel.block.count(), kernel.registers_per_thread,
               kernel.shared_mem_bytes, kernel.target_arch);
  }
  if (!output.empty()) {
    const TraceWriteStats st = write_trace(output, *source);
    fmt::print("wrote {}: {} warp-instructions, {} bytes ({:g} B/instruction)\n", output, st.instructions, st.file_bytes,
               st.instructions ? static_cast<double>(st.file_bytes) / static_cast<double>(st.instructions) : 0.0);
  }
  return 0;
}

// --- convert ------------------------------------------------------------------------------------------------

int cmd_convert(int argc, char** argv) {
  po::options_description desc("options");
  std::string from, to, input, output;
  desc.add_options()
      ("from", po::value(&from)->required(), "format of the input: accelsim or native")
      ("to", po::value(&to)->required(), "format of the output: native (a .wst file) or accelsim (a directory)")
      ("input", po::value(&input)->required(), "the input: a kernelslist.g, a kernel-N.traceg[.xz] or their directory (accelsim); a .wst file (native)")
      ("output", po::value(&output)->required(), "the output file (native) or directory (accelsim)");
  po::positional_options_description positional;
  positional.add("input", 1).add("output", 1);
  po::variables_map vm;
  // `--from accelsim DIR --to native OUT`: DIR and OUT are the positional input and output.
  if (!parse_command_options("convert", argc, argv, desc, vm,
             "usage: warpsim convert --from accelsim PATH --to native OUT.wst\n"
             "       warpsim convert --from native FILE.wst --to accelsim OUT_DIR",
             &positional))
    return 0;
  const std::vector<std::string> formats{"accelsim", "native"};
  for (const auto& [option, value] : {std::pair{"--from", from}, std::pair{"--to", to}})
    if (std::find(formats.begin(), formats.end(), value) == formats.end())
      throw InputError(fmt::format("{}: '{}' unknown (expected accelsim or native)", option, value));
  const TraceReaderRegistry& readers = TraceReaderRegistry::instance();
  input = readers.resolve(input);  // a tracer's directory: its index file
  const TraceReaderInfo* reader = nullptr;
  for (const TraceReaderInfo& r : readers.readers())
    if (r.name == from) reader = &r;
  WARPSIM_ASSERT(reader, "trace reader '" + from + "' not registered");
  if (const std::string problem = input_file_problem(input, kNoSizeLimit); !problem.empty())
    throw InputError(fmt::format("cannot open trace file '{}': {}", input, problem));
  const std::unique_ptr<TraceSource> source = reader->open(input);
  // Untimed instructions become NOP records: the output no longer says what they were. One warning per opcode.
  struct Untimed {
    std::uint64_t instructions = 0, kernels = 0;
    std::string why;
  };
  std::map<std::string, Untimed> untimed;
  for (std::size_t k = 0; k < source->num_kernels(); ++k)
    for (const UntimedOpcode& u : source->untimed(k)) {
      Untimed& t = untimed[u.opcode];
      t.instructions += u.instructions;
      ++t.kernels;
      t.why = u.why;
    }
  for (const auto& [opcode, t] : untimed)
    spdlog::warn("{} {} instruction(s) in {} kernel(s) written as untimed NOPs ({})", t.instructions, opcode, t.kernels,
                 t.why);
  if (to == "native") {
    const TraceWriteStats st = write_trace(output, *source);
    fmt::print("wrote {}: {} kernel(s), {} warp-instructions, {} bytes\n", output, source->num_kernels(), st.instructions,
               st.file_bytes);
  } else {
    const accelsim::AccelSimWriteStats st = accelsim::write_accelsim_trace(output, *source);
    fmt::print("wrote {}/kernelslist.g: {} kernel(s), {} warp-instructions, {} bytes\n", output, st.kernels,
               st.instructions, st.bytes);
    if (st.spin_waits_as_loads > 0)
      spdlog::warn("{} spin-wait polls (LDG with a wait count, trace format 1.6) written as one load each: an Accel-Sim "
                   "trace has no field for the count (a captured one holds every poll the real run made), so the "
                   "converted trace does not wait", st.spin_waits_as_loads);
  }
  return 0;
}

// --- describe, config, compare ------------------------------------------------------------------------------

// The counters and metrics of the components of `section` (kinds "l2", "noc.sm_port", ...), once per kind.
std::string describe_counters(const StatsRegistry& stats, const std::string& section) {
  std::string out;
  std::set<std::string> seen;
  auto of_section = [&](const std::string& kind) { return kind == section || kind.rfind(section + ".", 0) == 0; };
  for (const StatEntry& e : stats.entries())
    if (of_section(e.kind) && seen.insert(e.kind + "." + e.name).second)
      out += fmt::format("    {:<40}{:<10}{}\n        {}\n", e.kind + "." + e.name, e.gauge ? "gauge" : "counter",
                         "[" + e.unit + "]", e.description);
  for (const MetricEntry& m : stats.metrics())
    if (of_section(m.kind) && seen.insert(m.kind + "." + m.name).second)
      out += fmt::format("    {:<40}{:<10}{}\n        {}\n", m.kind + "." + m.name, "metric",
                         m.denominator.empty() ? "[" + m.numerator + " / peak]" : "[" + m.numerator + " / " + m.denominator + "]",
                         m.description);
  return out;
}

int cmd_describe(int argc, char** argv) {
  po::options_description desc("options");
  std::string section, gpu;
  desc.add_options()
      ("section", po::value(&section), "only this config section (e.g. sm, l2, hbm)")
      ("gpu", po::value(&gpu)->default_value(kDefaultGpu), "GPU config whose built components list their counters");
  po::positional_options_description pos;
  pos.add("section", 1);
  po::variables_map vm;
  if (!parse_command_options("describe", argc, argv, desc, vm, "usage: warpsim describe [SECTION] [--gpu CONFIG]", &pos)) return 0;
  const Registry& reg = Registry::instance();
  const auto sections = reg.sections();
  if (!section.empty() && std::find(sections.begin(), sections.end(), section) == sections.end()) {
    const std::string hint = did_you_mean(section, sections);
    throw InputError(fmt::format("describe: unknown section '{}'{}", section, hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  // Counters and metrics are registered by the components as they are built: build the GPU to list them.
  const Config cfg = load_gpu_config(gpu, {});
  const Gpu built(cfg);
  for (const auto& s : sections) {
    if (!section.empty() && s != section) continue;
    for (const ComponentType* t : reg.implementations(s)) {
      const Schema schema = reg.schema(*t);  // the slot's shared parameters, then the implementation's own
      const bool named_impl = reg.implementations(s).size() > 1 || t->factory.has_value();
      fmt::print("{}:{}\n  {}\n", s, named_impl ? fmt::format("  (impl: {})", t->impl) : "", schema.description());
      if (schema.params().empty()) fmt::print("  (no parameters of its own)\n");
      for (const ParamSpec& p : schema.params()) fmt::print("{}", describe_param(p));
      fmt::print("\n");
    }
    const std::string counters = describe_counters(built.stats(), s);
    if (!counters.empty())
      fmt::print("  statistics of {} (as built for {}, impl {}; in stats.json summed per kind and per instance):\n{}\n", s,
                 cfg.section("gpu").str("name"), cfg.section(s).impl(), counters);
  }
  return 0;
}

int cmd_config(int argc, char** argv) {
  po::options_description desc("options");
  std::string gpu;
  std::vector<std::string> sets;
  desc.add_options()
      ("gpu", po::value(&gpu)->default_value(kDefaultGpu), "GPU config name or path")
      ("set", po::value(&sets)->composing(), "override a value (repeatable)");
  po::variables_map vm;
  if (!parse_command_options("config", argc, argv, desc, vm, "usage: warpsim config [--gpu CONFIG] [--set k=v ...]")) return 0;
  const Config config = load_gpu_config(gpu, sets);
  fmt::print("{}", config.resolved_yaml());
  fmt::print("{}", PowerParams::from(config).technology_text());  // the figures power.technology scaled
  return 0;
}

int cmd_compare(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> runs, gpus;
  WorkloadOptions workload;
  MemoryLimitOption memory_limit;
  desc.add_options()
      ("runs", po::value(&runs)->composing(), "stats.json files or run output directories, baseline first")
      ("gpu", po::value(&gpus)->composing(), "instead of finished runs: simulate the workload on each of these GPU configs (repeatable, baseline first)");
  workload.add_to(desc);
  memory_limit.add_to(desc);
  po::positional_options_description pos;
  pos.add("runs", -1);
  po::variables_map vm;
  if (!parse_command_options("compare", argc, argv, desc, vm,
             "usage: warpsim compare BASELINE_DIR_OR_STATS_JSON OTHER...\n"
             "       warpsim compare SWEEP_RUN_DIR [SWEEP_RUN_DIR...]   (every candidate per workload)\n"
             "       warpsim compare --gpu BASELINE_CONFIG --gpu OTHER ... [--gemm MxNxK | --trace FILE | --synth KIND ...]",
             &pos))
    return 0;
  if (gpus.empty()) {
    fmt::print("{}", compare_runs(runs));
    return 0;
  }
  if (!runs.empty()) throw InputError("compare: give finished runs or --gpu configs to simulate, not both");
  if (gpus.size() < 2) throw InputError("compare: give at least two --gpu configs");
  // Every input first (a typo in the last config should not cost the first simulations), then each run in turn
  // with the plain driver: SystemC elaborates once per process, and the two drivers give identical results.
  std::vector<PreparedRun> prepared;
  for (const std::string& gpu : gpus) {
    RunSpec spec;
    spec.gpu = gpu;
    spec.workload = workload.workload();
    spec.driver = "plain";
    spec.progress = false;
    spec.max_memory_bytes = memory_limit.bytes();
    prepared.push_back(prepare_run(spec));
  }
  std::vector<std::pair<std::string, std::string>> results;  // label, stats.json text
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    spdlog::info("simulating {} of {}: {}", i + 1, prepared.size(), gpus[i]);
    results.emplace_back(gpus[i], results_json(simulate(std::move(prepared[i])).result));
  }
  fmt::print("{}", compare_results(results));
  return 0;
}

// --- validate -----------------------------------------------------------------------------------------------

const char* kValidateUsage =
    "usage: warpsim validate --reference REF.yaml [--reference MORE.yaml ...] [--gpu CONFIG] [--only REGEX]\n"
    "       warpsim validate --ncu REPORT.csv --gpu CONFIG [--map MAP.yaml] [--reference REF.yaml ...] [--only REGEX]\n"
    "                        [--json OUT.json] [--csv OUT.csv] [--plots DIR] [-j N] [--max-memory SIZE]\n"
    "\n"
    "Simulates every case of the reference files and compares the simulated metric with the measured one:\n"
    "error = (simulated - measured) / measured. Prints a table of the cases and summaries per GPU and per category\n"
    "(MAPE, mean signed error, worst case, Pearson correlation of measured and simulated).\n"
    "\n"
    "A reference file is a YAML list of cases:\n"
    "  - id: a100.gemm.fp16.1024x12288x12288      # unique\n"
    "    gpu: a100_sxm                 # a shipped config name, or a YAML path relative to the reference file\n"
    "    set: {hbm.bandwidth: 2.0TB/s} # optional overrides, as --set\n"
    "    workload: {kind: gemm, m: 1024, n: 12288, k: 12288, dtype: fp16}   # a synthesizer and its keys\n"
    "    metric: time_us               # a stats.json kernel field, or a metric the kind declares\n"
    "    measured: 1199.2              # in the metric's unit\n"
    "    source: \"where the figure comes from\"   # required\n"
    "    category: gemm                # optional (default: the kind); tunes:, note: optional\n"
    "Metrics: time_us, cycles, warp_instructions, thread_instructions, flops, dram_bytes_read, dram_bytes_written\n"
    "(summed over the workload's kernels), achieved_tflops, achieved_dram_gbps, ipc (of the whole workload),\n"
    "occupancy, theoretical_occupancy, l1_hit_rate, l2_hit_rate (of its longest kernel); microbenchmark metrics\n"
    "that a synthesizer declares (`warpsim synth --help`); ttft_ms, ms_per_token, tokens_per_s of kind llm ({model,\n"
    "batch, input_len, output_len, tp, dtype}: simulated as warpsim llm does, a prefill of input_len tokens or a\n"
    "decode step at context input_len + output_len/2; weight-only int8/int4 and models without a preset unsupported).\n"
    "Kinds allreduce, allgather and reducescatter ({bytes, gpus}, metric time_us) run through the collective model of\n"
    "the GPU config's node: section (models/node/collective.h); nothing is simulated.\n"
    "A case whose kind is not built yet is reported as unsupported; one the synthesizer or the\n"
    "simulation refuses, as failed, with the reason. Anything else wrong in a file (YAML, a missing or unknown field,\n"
    "a misspelt kind, key or metric, an unknown GPU config, a duplicate id) stops before simulating: FILE:LINE.\n"
    "\n"
    "--ncu REPORT.csv takes the cases from an Nsight Compute export (`ncu --csv --page raw`, docs/ncu-import.md):\n"
    "each launch that the mapping file (--map, a YAML list of {match: REGEX, workload: {...}}) gives a workload\n"
    "becomes one case per metric the export has (time_us, cycles, DRAM bytes and bandwidth, ipc, occupancy, L1/L2\n"
    "hit rates), on the GPU that --gpu names (required with --ncu: the GPU the export was measured on). Every other\n"
    "launch is listed as skipped, with its row and reason, and counted (\"skipped\" in the JSON); the metric columns\n"
    "that give no case are named on one line. --ncu may be combined with --reference files: the cases of both run\n"
    "together, ids unique across them.\n"
    "\n"
    "--gpu is a filter for reference files: only their cases on that GPU run (a name and a path of the same file are\n"
    "the same GPU).\n"
    "--plots DIR writes DIR/<category>.png and .svg (and DIR/validation.json when --json is not given), drawn by\n"
    "tools/validation/plot_validation.py: python3 with matplotlib.\n"
    "--max-warp-instructions N skips the cases whose workload is estimated (first CTA of each kernel times its CTAs)\n"
    "above N warp-instructions: they are reported as skipped and counted, so that a report fits a time budget.\n"
    "Exit status: 0 when every case was simulated or reported (ok, unsupported, failed or skipped: see the table);\n"
    "2 for bad input (options, reference files, the export or its mapping) or when the outputs or plots cannot be\n"
    "written.";

// An output file's directory must exist before the cases run, not be found missing after.
void check_output_file(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec))
    throw InputError(fmt::format("{}: the directory of '{}' does not exist", option, path));
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("{}: '{}' is a directory", option, path));
}

int cmd_validate(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> references;
  std::string gpu, only, json_out, csv_out, plots_dir, ncu_export, ncu_map;
  int jobs = 1;
  double max_warp_instructions = 0;
  MemoryLimitOption memory_limit;
  desc.add_options()
      ("reference", po::value(&references)->composing(), "reference file: a YAML list of measured cases (repeatable)")
      ("ncu", po::value(&ncu_export), "Nsight Compute export (ncu --csv --page raw): its launches become cases (needs --gpu)")
      ("map", po::value(&ncu_map), "with --ncu: the YAML file naming the problem shapes of the export's kernels")
      ("gpu", po::value(&gpu), "with --ncu: the GPU config the export was measured on; for reference files: run only "
                               "the cases on this GPU config (name or path)")
      ("only", po::value(&only), "run only the cases whose id contains a match of this regular expression (ECMAScript)")
      ("json", po::value(&json_out), "write the cases and summaries as JSON")
      ("csv", po::value(&csv_out), "write one CSV row per case")
      ("plots", po::value(&plots_dir), "draw simulated-vs-measured plots into this directory, one per category")
      ("jobs,j", po::value(&jobs)->default_value(1), "simulate up to N cases at once, each in a worker process (same results)")
      ("max-warp-instructions", po::value(&max_warp_instructions),
       "skip (and count as skipped) the cases whose workload has more warp-instructions than this, e.g. 3e8");
  memory_limit.add_to(desc);
  po::variables_map vm;
  if (!parse_command_options("validate", argc, argv, desc, vm, kValidateUsage)) return 0;
  if (!ncu_map.empty() && ncu_export.empty())
    throw InputError("--map: it names the problem shapes of an Nsight Compute export: give the export too, --ncu REPORT.csv");
  if (references.empty() && ncu_export.empty())
    throw InputError("validate: give a reference file, --reference FILE.yaml, or an Nsight Compute export, --ncu "
                     "REPORT.csv (see warpsim validate --help)");
  if (!ncu_export.empty() && gpu.empty())
    throw InputError("--ncu: give --gpu CONFIG too, the GPU the export was measured on (a shipped config name such as "
                     "h100_sxm, or a YAML path)");
  if (jobs < 1) throw InputError(fmt::format("-j/--jobs: expected a number of processes >= 1, got {}", jobs));
  ValidateOptions options;
  options.jobs = static_cast<unsigned>(jobs);
  options.max_memory_bytes = memory_limit.bytes();
  if (!(max_warp_instructions >= 0) || max_warp_instructions > 1.8e19)
    throw InputError(fmt::format("--max-warp-instructions: expected a count >= 0 (0: no limit), got {}", max_warp_instructions));
  options.max_warp_instructions = static_cast<std::uint64_t>(max_warp_instructions);
  std::optional<NcuInput> ncu;
  std::vector<ReferenceCase> imported;
  if (!ncu_export.empty()) {
    // The GPU before the export: a misspelt name is one error, not one per case.
    try {
      resolve_gpu_config(gpu);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--gpu: {}", e.what()));
    }
    NcuImport im = import_ncu_csv(ncu_export, gpu, ncu_map);
    std::set<int> launches_with_cases;
    for (const ReferenceCase& c : im.cases) launches_with_cases.insert(c.line);
    ncu = NcuInput{ncu_export, ncu_map, std::move(im.skipped), std::move(im.ignored)};
    ncu->launches = launches_with_cases.size() + ncu->skipped.size();
    imported = std::move(im.cases);
    // Before anything can fail on the cases: what the export gave no case for.
    fmt::print("{}", ncu_input_text(*ncu, imported.size()));
    std::fflush(stdout);
  }
  const std::vector<ReferenceCase> cases = select_cases("validate", references, gpu, only, imported, ncu_export);
  check_output_file("--json", json_out);
  check_output_file("--csv", csv_out);
  const std::string plot_script = plots_dir.empty() ? "" : check_plotting();
  options.on_start = [&](std::size_t i, const ReferenceCase& c) {
    spdlog::info("case {} of {}: {}", i + 1, cases.size(), c.id);
  };
  const std::vector<CaseResult> results = run_cases(cases, options);
  const NcuInput* ncu_input = ncu ? &*ncu : nullptr;
  if (ncu) fmt::print("\n");
  fmt::print("{}", validation_table(results, ncu_input));
  const std::string json = validation_json(results, references, ncu_input);
  if (!json_out.empty()) write_file_atomically(json_out, json);
  if (!csv_out.empty()) write_file_atomically(csv_out, validation_csv(results));
  if (!plots_dir.empty()) {
    std::error_code ec;
    fs::create_directories(plots_dir, ec);
    if (ec) throw InputError(fmt::format("--plots: cannot create directory '{}': {}", plots_dir, ec.message()));
    std::string json_file = json_out;
    if (json_file.empty()) {
      json_file = (fs::path(plots_dir) / "validation.json").string();
      write_file_atomically(json_file, json);
    }
    draw_validation_plots(plot_script, json_file, plots_dir);
  }
  return 0;
}

// --- calibrate ----------------------------------------------------------------------------------------------

const char* kCalibrateUsage =
    "usage: warpsim calibrate --reference MICRO.yaml [--reference MORE.yaml ...] --gpu CONFIG [--only REGEX]\n"
    "                         [--out OVERLAY.yaml] [--force] [--json OUT.json] [-j N] [--max-memory SIZE]\n"
    "\n"
    "Proposes config values from measured figures. Every case on CONFIG (as validate's --gpu filter) that names a\n"
    "numeric config parameter in `tunes:` is a measurement that parameter determines: calibrate searches the value\n"
    "at which the simulated metric equals the measured one (secant steps, then bracketing; at most 8 simulations a\n"
    "case; the parameter's declared range and integrality respected), and proposes the median over the parameter's\n"
    "cases. A case whose fit leaves the range, does not depend on the parameter or does not converge is reported\n"
    "with the reason and not used. Parameters are fitted in the order they first appear, each with the values\n"
    "fitted before it applied: path latencies add up (L2 hit = L1 + NoC + L2), so list the L1 cases before the\n"
    "L2 ones before the DRAM ones.\n"
    "Prints each case's measured, simulated before and after, errors and fitted value, the proposed changes and the\n"
    "MAPE over the used cases before and after; writes the proposals as a config overlay (default\n"
    "calibrated_<gpu>.yaml here: `base: CONFIG` and one commented line per changed parameter) for review;\n"
    "`warpsim run --gpu OVERLAY.yaml` uses it. Shipped configs are never written (nor is an existing file\n"
    "without --force).\n"
    "Exit status: 0 when the overlay was written; 2 for bad input (options, reference files, a `tunes:` that is not\n"
    "a numeric parameter of the config, no case with `tunes:`), when no case could be fitted, or when the outputs\n"
    "cannot be written.";

// Where the overlay may go: not into a shipped config directory, not over an existing file unless forced.
void check_overlay_path(const std::string& out, bool force) {
  check_output_file("--out", out);
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(out), ec);
  for (const std::string& dir : config_dirs()) {
    const fs::path shipped = fs::weakly_canonical(fs::absolute(dir), ec);
    const fs::path rel = target.lexically_relative(shipped);
    if (!rel.empty() && *rel.begin() != "..")
      throw InputError(fmt::format("--out: '{}' is in the shipped configs directory {}; calibrate never edits a shipped "
                                   "config: write the overlay elsewhere and review it", out, dir));
  }
  if (fs::exists(out, ec) && !force)
    throw InputError(fmt::format("--out: '{}' exists; give --force to replace it", out));
}

// What `base:` says in the overlay: the config name, or the config's path as seen from the overlay's directory.
std::string overlay_base(const std::string& gpu, const std::string& out) {
  if (is_config_name(gpu)) return gpu;
  std::error_code ec;
  const fs::path config = fs::weakly_canonical(fs::absolute(resolve_gpu_config(gpu)), ec);
  const fs::path dir = fs::weakly_canonical(fs::absolute(out).parent_path(), ec);
  const fs::path rel = config.lexically_relative(dir);
  return rel.empty() ? config.string() : rel.string();
}

int cmd_calibrate(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> references;
  std::string gpu, only, out, json_out;
  bool force = false;
  int jobs = 1;
  MemoryLimitOption memory_limit;
  desc.add_options()
      ("reference", po::value(&references)->composing(), "reference file: a YAML list of measured cases (repeatable)")
      ("gpu", po::value(&gpu), "the GPU config to calibrate (name or path); its cases with tunes: are used")
      ("only", po::value(&only), "use only the cases whose id contains a match of this regular expression (ECMAScript)")
      ("out", po::value(&out), "the config overlay to write (default calibrated_<gpu>.yaml)")
      ("force", po::bool_switch(&force), "replace an existing --out file")
      ("json", po::value(&json_out), "write the cases, fits and proposals as JSON")
      ("jobs,j", po::value(&jobs)->default_value(1), "simulate up to N cases of a parameter at once, each in a worker process");
  memory_limit.add_to(desc);
  po::variables_map vm;
  if (!parse_command_options("calibrate", argc, argv, desc, vm, kCalibrateUsage)) return 0;
  if (references.empty()) throw InputError("calibrate: give a reference file, --reference FILE.yaml (see warpsim calibrate --help)");
  if (gpu.empty()) throw InputError("calibrate: give the GPU config to calibrate, --gpu CONFIG (see warpsim calibrate --help)");
  if (jobs < 1) throw InputError(fmt::format("-j/--jobs: expected a number of processes >= 1, got {}", jobs));
  if (out.empty()) out = fmt::format("calibrated_{}.yaml", fs::path(gpu).stem().string());
  const std::vector<ReferenceCase> cases = select_cases("calibrate", references, gpu, only);
  check_overlay_path(out, force);
  check_output_file("--json", json_out);
  CalibrationOptions options;
  options.jobs = static_cast<unsigned>(jobs);
  options.max_memory_bytes = memory_limit.bytes();
  options.on_progress = [](const std::string& message) { spdlog::info("{}", message); };
  const CalibrationResult result = calibrate(cases, gpu, options);
  fmt::print("{}", calibration_table(result));
  if (!json_out.empty()) write_file_atomically(json_out, calibration_json(result));
  if (result.proposals.empty())
    throw InputError(fmt::format("calibrate: none of the {} cases with tunes: could be fitted (the reasons are in the "
                                 "table): no overlay written", result.fits.size()));
  std::vector<std::string> command{"warpsim", "calibrate"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::replace(arg.begin(), arg.end(), '\n', ' ');  // the command line goes into a one-line comment
    command.push_back(arg);
  }
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::vector<std::string> header{
      fmt::format("Proposed by `{}` on {}", fmt::join(command, " "), date),
      fmt::format("(warpsim {}). Review before use: each value names the measurements it was fitted to.", WARPSIM_VERSION)};
  write_file_atomically(out, calibration_overlay(result, header, overlay_base(gpu, out)));
  fmt::print("\nwrote {} (review it; use it with --gpu {})\n", out, out);
  return 0;
}

// --- import-kineto -------------------------------------------------------------------------------------------

const char* kImportKinetoUsage =
    "usage: warpsim import-kineto TRACE.json[.gz] [--gpu CONFIG] [--set k=v ...] [--out DIR] [--only REGEX] [--limit N]\n"
    "                             [-j N] [--max-warp-instructions N] [--max-memory SIZE] [--cache-dir DIR | --no-cache]\n"
    "\n"
    "Reads the GPU kernels of a PyTorch profiler (Kineto) trace (plain or gzip-compressed JSON, recorded with\n"
    "record_shapes), classifies each by its name (gemm, attention, layernorm, rmsnorm, softmax, elementwise, copy,\n"
    "reduction, rotary), maps it with the shapes of the aten op that launched it onto a synthesizer, simulates each\n"
    "distinct workload once on CONFIG and compares with the measured durations. Kernels that cannot be mapped are\n"
    "listed with the reason and counted (their measured time as not compared). Writes into --out: kernels.csv (name,\n"
    "category, shape, measured_us, simulated_us, error_pct, status, ...), summary.json, timeline.json (measured and\n"
    "simulated tracks, for ui.perfetto.dev), run.json. On the capturing GPU's config (gpu.name = the trace's device\n"
    "name, no --set) this is a validation; on any other a projection. Simulations are kept in warpsim llm's cache\n"
    "(--cache-dir, else $WARPSIM_CACHE_DIR, $XDG_CACHE_HOME/warpsim or ~/.cache/warpsim), so a re-import is quick.";

int cmd_import_kineto(int argc, char** argv) {
  po::options_description desc("options");
  ImportKinetoOptions options;
  std::string out;
  int jobs = 1;
  double max_warp_instructions = 0;
  MemoryLimitOption memory_limit;
  WorkloadCacheOption cache_option;
  desc.add_options()
      ("trace", po::value(&options.trace), "the Kineto trace (also the first positional argument)")
      ("gpu", po::value(&options.gpu)->default_value(kDefaultGpu), "GPU config to simulate on: a shipped name or a YAML path")
      ("set", po::value(&options.overrides)->composing(), "override a config value, e.g. --set sm.count=144 (repeatable)")
      ("out", po::value(&out)->default_value("warpsim-kineto"), "output directory")
      ("only", po::value(&options.only), "simulate only the kernels whose name contains a match of this regular expression")
      ("limit", po::value(&options.limit), "simulate only the first N kernels (in start order)")
      ("jobs,j", po::value(&jobs)->default_value(1), "simulate up to N workloads at once, each in a worker process")
      ("max-warp-instructions", po::value(&max_warp_instructions),
       "skip (and report as skipped) the workloads estimated above this many warp-instructions, e.g. 3e8")
      ("no-progress", "no progress lines on stderr")
      ("quiet,q", "do not print the summary");
  memory_limit.add_to(desc);
  cache_option.add_to(desc);
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  if (!parse_command_options("import-kineto", argc, argv, desc, vm, kImportKinetoUsage, &positional)) return 0;
  if (options.trace.empty()) throw InputError("import-kineto: give the trace, warpsim import-kineto TRACE.json[.gz] (see --help)");
  if (jobs < 1) throw InputError(fmt::format("-j/--jobs: expected a number of processes >= 1, got {}", jobs));
  if (!(max_warp_instructions >= 0) || max_warp_instructions > 1.8e19)
    throw InputError(fmt::format("--max-warp-instructions: expected a count >= 0 (0: no limit), got {}", max_warp_instructions));
  options.jobs = static_cast<unsigned>(jobs);
  options.max_warp_instructions = static_cast<std::uint64_t>(max_warp_instructions);
  options.max_memory_bytes = memory_limit.bytes();
  options.progress = !vm.count("no-progress");
  options.cache_dir = cache_option.chosen(vm);
  prepare_output_dir(out);
  const ImportKinetoOutput result = import_kineto(options);
  ResultSetWriter results(out);
  results.write("kernels.csv", result.kernels_csv);
  results.write("summary.json", result.summary_json);
  results.write("timeline.json", result.timeline_json);
  std::vector<std::string> command_line{"warpsim"};
  command_line.insert(command_line.end(), argv, argv + argc);
  results.commit(WARPSIM_VERSION, command_line);
  if (!vm.count("quiet"))
    fmt::print("{}  results in {}/ (kernels.csv, summary.json, timeline.json for ui.perfetto.dev; run.json)\n",
               result.summary_text, out);
  return 0;
}

// Messages on stderr as "warpsim: <level>: <message>", the form the error messages always had.
void set_up_logging() {
  auto logger = spdlog::stderr_color_mt("warpsim");
  logger->set_pattern("warpsim: %^%l%$: %v");
  spdlog::set_default_logger(logger);
}

}  // namespace

int warpsim_main(int argc, char** argv) {
  if (!spdlog::get("warpsim")) set_up_logging();
  const std::vector<NamedCommand> commands{
      {"run", cmd_run},         {"synth", cmd_synth},         {"describe", cmd_describe},
      {"config", cmd_config},   {"compare", cmd_compare},     {"validate", cmd_validate},
      {"calibrate", cmd_calibrate}, {"convert", cmd_convert}, {"import-kineto", cmd_import_kineto},
      {"llm", cmd_llm},         {"sweep", cmd_sweep},         {"report", cmd_report}};
  try {
    if (argc >= 2 && std::string(argv[1]) == "--version") {
      fmt::print("warpsim {}\n", WARPSIM_VERSION);
      return 0;
    }
    return dispatch_command(commands, "command", kUsage, argc, argv);
  } catch (const po::error& e) {
    spdlog::error("{} (see --help)", e.what());
    return 2;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const SimulationError& e) {
    spdlog::error("simulation stopped: {}", e.what());
    return 3;
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    return 70;
  }
}

}  // namespace warpsim
