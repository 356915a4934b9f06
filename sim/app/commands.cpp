#include "sim/app/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "models/gpu/gpu.h"
#include "sim/app/compare.h"
#include "sim/app/report.h"
#include "sim/app/workloads.h"
#include "sim/stats/json.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/sc/sc_driver.h"
#include "sim/trace/trace_file.h"
#include "traces/synth/gemm.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace warpsim {
namespace {

// The default workload of `warpsim run`: the MLP up-projection of Llama-3-8B (hidden 4096, intermediate
// 14336) over a 4096-token prefill, in bf16.
constexpr const char* kDefaultGemm = "4096x14336x4096";
constexpr const char* kDefaultGpu = "h100_sxm";

const char* kUsage =
    "usage: warpsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run        simulate a trace (or a synthesized GEMM) on a GPU config; writes stats.json, stats.csv,\n"
    "             config.resolved.yaml\n"
    "  synth      synthesize an LLM kernel trace (gemm)\n"
    "  describe   list every config parameter (type, unit, default, description), optionally of one section\n"
    "  config     print the fully resolved configuration of a GPU config\n"
    "  compare    compare runs (stats.json files or output directories): time, speed-up, utilisation\n"
    "\n"
    "`warpsim run` without options simulates a Llama-3-8B MLP GEMM (4096x14336x4096 bf16) on the H100 SXM.\n"
    "`warpsim <command> --help` describes a command's options.\n";

// "h100_sxm" or "h100_sxm.yaml" finds the shipped config; anything with a slash or an existing file is a path.
std::string resolve_gpu_config(const std::string& name) {
  if (name.find('/') != std::string::npos || fs::exists(name)) return name;
  std::string candidate = shipped_configs_dir() + "/" + name;
  if (fs::exists(candidate)) return candidate;
  if (fs::exists(candidate + ".yaml")) return candidate + ".yaml";
  std::vector<std::string> known;
  if (fs::is_directory(shipped_configs_dir()))
    for (const auto& e : fs::directory_iterator(shipped_configs_dir()))
      if (e.path().extension() == ".yaml") known.push_back(e.path().stem().string());
  std::sort(known.begin(), known.end());
  std::string msg = "cannot open GPU config '" + name + "': no such file, and no '" + name + ".yaml' in " + shipped_configs_dir();
  std::string hint;
  for (const auto& k : known)  // "h100" -> "h100_sxm": a prefix says more than an edit distance
    if (k.rfind(name, 0) == 0) hint = hint.empty() ? k : hint;
  if (hint.empty()) hint = did_you_mean(name, known);
  if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
  else if (!known.empty()) {
    msg += " (shipped configs:";
    for (const auto& k : known) msg += " " + k;
    msg += ")";
  }
  throw InputError(msg);
}

Config load_config(const std::string& gpu, const std::vector<std::string>& sets) {
  return Config::load(resolve_gpu_config(gpu), sets, Registry::instance());
}

DType parse_dtype_option(const std::string& s) {
  DType t;
  const std::string name = s == "fp16" ? "f16" : s;  // both spellings are common
  if (!parse_dtype(name, t) || (t != DType::BF16 && t != DType::F16 && t != DType::FP8))
    throw InputError("--dtype: expected bf16, fp16 or fp8, got '" + s + "'");
  return t;
}

std::uint64_t parse_dim(const std::string& what, const std::string& s) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || used == 0 || v == 0 || s[0] == '-')
    throw InputError(what + ": expected a positive integer, got '" + s + "'");
  return v;
}

GemmProblem parse_gemm_shape(const std::string& shape, const std::string& dtype) {
  GemmProblem p;
  const auto x1 = shape.find('x'), x2 = shape.find('x', x1 == std::string::npos ? x1 : x1 + 1);
  if (x1 == std::string::npos || x2 == std::string::npos)
    throw InputError("--gemm: expected MxNxK (e.g. 4096x4096x4096), got '" + shape + "'");
  p.m = parse_dim("--gemm M", shape.substr(0, x1));
  p.n = parse_dim("--gemm N", shape.substr(x1 + 1, x2 - x1 - 1));
  p.k = parse_dim("--gemm K", shape.substr(x2 + 1));
  p.dtype = parse_dtype_option(dtype);
  return p;
}

// The synthesized kernel targets the config's architecture and respects its SM's resource limits.
// FNV-1a over every parameter's value (not where it came from): two runs with equal hashes modelled the
// same hardware.
std::string config_hash(const Config& cfg) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  };
  for (const auto& [section, params] : cfg.sections()) {
    mix(section + ":" + params.impl() + ";");
    for (const auto& [name, v] : params.values()) mix(name + "=" + JsonWriter::number(v.number) + v.text + (v.flag ? "1" : "0") + ";");
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// Creates the output directory (or checks an existing one) and that files can be written in it.
void prepare_output_dir(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw InputError("--out: '" + out + "' exists and is not a directory");
  fs::create_directories(out, ec);
  if (ec) throw InputError("--out: cannot create directory '" + out + "': " + ec.message());
  const fs::path probe = fs::path(out) / ".warpsim-write-test";
  std::ofstream f(probe);
  if (!f) throw InputError("--out: cannot write in '" + out + "'");
  f.close();
  fs::remove(probe, ec);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw InputError("cannot write '" + path.string() + "'");
}

bool parse(int argc, char** argv, po::options_description& desc, po::variables_map& vm, const char* usage,
           po::positional_options_description* positional = nullptr) {
  desc.add_options()("help,h", "show this help");
  po::command_line_parser parser(argc, argv);
  parser.options(desc);
  if (positional) parser.positional(*positional);
  po::store(parser.run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n" << desc << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

int cmd_run(int argc, char** argv) {
  po::options_description desc("options");
  std::string gpu, trace, gemm, dtype, out, driver;
  std::vector<std::string> sets;
  desc.add_options()
      ("gpu", po::value(&gpu)->default_value(kDefaultGpu), "GPU config: a shipped name (a100_sxm, h100_sxm, ...) or a YAML path")
      ("trace", po::value(&trace), "native trace file to replay (see traces/FORMAT.md)")
      ("gemm", po::value(&gemm), "synthesize a GEMM MxNxK instead of reading a trace (default when no --trace)")
      ("dtype", po::value(&dtype)->default_value("bf16"), "GEMM data type: bf16, fp16, fp8")
      ("set", po::value(&sets)->composing(), "override a config value, e.g. --set sm.count=144 (repeatable)")
      ("out", po::value(&out)->default_value("warpsim-out"), "output directory")
      ("driver", po::value(&driver)->default_value("systemc"), "simulation driver: systemc, or plain (C++ loop, same results)")
      ("no-progress", "no progress lines on stderr")
      ("quiet,q", "do not print the summary");
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, "usage: warpsim run [--gpu CONFIG] [--trace FILE | --gemm MxNxK --dtype T] [--set k=v ...] [--out DIR]"))
    return 0;
  if (driver != "systemc" && driver != "plain") throw InputError("--driver: expected systemc or plain, got '" + driver + "'");
  if (!trace.empty() && !gemm.empty()) throw InputError("--trace and --gemm are alternatives; give one");
  const Config cfg = load_config(gpu, sets);
  prepare_output_dir(out);  // before the run: a bad --out should not cost a simulation
  std::unique_ptr<TraceSource> source;
  if (!trace.empty()) {
    if (!fs::exists(trace)) throw InputError("cannot open trace file '" + trace + "': No such file or directory");
    if (!is_native_trace(trace))
      throw InputError("'" + trace + "' is not a warpsim trace (traces/FORMAT.md); Accel-Sim and Kineto traces are not supported yet");
    source = std::make_unique<TraceFileReader>(trace);
  } else {
    source = make_gemm_for_gpu(parse_gemm_shape(gemm.empty() ? kDefaultGemm : gemm, dtype), cfg);
  }
  Gpu g(cfg);
  RunOptions opts;
  opts.progress = !vm.count("no-progress");
  RunResult r = g.run(*source, driver == "systemc" ? Gpu::Driver(run_with_systemc) : Gpu::Driver(run_without_systemc), opts);
  r.sim.driver = driver;
  r.sim.version = std::string("warpsim ") + WARPSIM_VERSION + " (" + WARPSIM_GIT_REVISION + ")";
  for (const auto& f : cfg.files()) r.sim.config_files += (r.sim.config_files.empty() ? "" : ", ") + f;
  r.sim.config_hash = config_hash(cfg);
  write_file(fs::path(out) / "stats.json", results_json(r));
  write_file(fs::path(out) / "stats.csv", results_csv(r));
  write_file(fs::path(out) / "config.resolved.yaml", cfg.resolved_yaml());
  write_file(fs::path(out) / "timeline.json", results_timeline(r));
  if (!vm.count("quiet"))
    std::cout << results_summary(r) << "  results in " << out
              << "/ (stats.json, stats.csv, config.resolved.yaml, timeline.json for ui.perfetto.dev)\n";
  return 0;
}

int cmd_synth(int argc, char** argv) {
  po::options_description desc("options");
  std::string kind, gpu, dtype, output;
  std::string m, n, k;
  desc.add_options()
      ("kind", po::value(&kind), "kernel kind: gemm")
      ("m", po::value(&m), "GEMM M (rows of A and C: tokens)")
      ("n", po::value(&n), "GEMM N (columns of C: output features)")
      ("k", po::value(&k), "GEMM K (reduction: input features)")
      ("dtype", po::value(&dtype)->default_value("bf16"), "bf16, fp16 or fp8")
      ("gpu", po::value(&gpu)->default_value(kDefaultGpu), "GPU config whose architecture the kernel targets")
      ("output,o", po::value(&output), "write the trace to this file (native format); without it, print a summary");
  po::positional_options_description pos;
  pos.add("kind", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, "usage: warpsim synth gemm --m M --n N --k K [--dtype bf16|fp16|fp8] [--gpu CONFIG] [-o FILE]", &pos))
    return 0;
  if (kind != "gemm") throw InputError("synth: expected a kernel kind (gemm), got '" + kind + "'");
  if (m.empty() || n.empty() || k.empty()) throw InputError("synth gemm: --m, --n and --k are required");
  GemmProblem p;
  p.m = parse_dim("--m", m);
  p.n = parse_dim("--n", n);
  p.k = parse_dim("--k", k);
  p.dtype = parse_dtype_option(dtype);
  const Config cfg = load_config(gpu, {});
  auto src = make_gemm_for_gpu(p, cfg);
  auto kernel = src->open_kernel(0);
  const KernelInfo& info = kernel->info();
  std::cout << info.name << ": grid " << info.grid.x << "x" << info.grid.y << "x" << info.grid.z << ", block "
            << info.block.count() << " threads, " << info.registers_per_thread << " registers/thread, "
            << info.shared_mem_bytes << " B shared memory, " << info.target_arch << "\n";
  if (!output.empty()) {
    const TraceWriteStats st = write_trace(output, *src);
    std::cout << "wrote " << output << ": " << st.instructions << " warp-instructions, " << st.file_bytes << " bytes ("
              << (st.instructions ? static_cast<double>(st.file_bytes) / static_cast<double>(st.instructions) : 0.0)
              << " B/instruction)\n";
  }
  return 0;
}

int cmd_describe(int argc, char** argv) {
  po::options_description desc("options");
  std::string section;
  desc.add_options()("section", po::value(&section), "only this config section (e.g. sm, l2, hbm)");
  po::positional_options_description pos;
  pos.add("section", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, "usage: warpsim describe [SECTION]", &pos)) return 0;
  const Registry& reg = Registry::instance();
  const auto sections = reg.sections();
  if (!section.empty() && std::find(sections.begin(), sections.end(), section) == sections.end()) {
    std::string msg = "describe: unknown section '" + section + "'";
    const std::string hint = did_you_mean(section, sections);
    if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
    throw InputError(msg);
  }
  for (const auto& s : sections) {
    if (!section.empty() && s != section) continue;
    for (const ComponentType* t : reg.implementations(s)) {
      const Schema sch = reg.schema(*t);
      std::cout << s << ":";
      if (reg.implementations(s).size() > 1 || t->factory.has_value()) std::cout << "  (impl: " << t->impl << ")";
      std::cout << "\n  " << sch.description() << "\n";
      if (sch.params().empty()) std::cout << "  (no parameters of its own)\n";
      for (const ParamSpec& p : sch.params()) {
        std::string type = param_type_name(p.type);
        if (p.type == ParamType::Choice) {
          type += " {";
          for (std::size_t i = 0; i < p.choices.size(); ++i) type += (i ? "|" : "") + p.choices[i];
          type += "}";
        }
        std::string line = "  " + p.name;
        line.resize(std::max<std::size_t>(line.size() + 1, 40), ' ');
        line += type;
        if (!p.unit.empty() && p.type != ParamType::Frequency && p.type != ParamType::Bandwidth && p.type != ParamType::Size)
          line += " [" + p.unit + "]";
        line.resize(std::max<std::size_t>(line.size() + 1, 62), ' ');
        line += p.default_text ? "default " + *p.default_text : std::string("required");
        std::cout << line << "\n      " << p.description << "\n";
      }
      std::cout << "\n";
    }
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
  if (!parse(argc, argv, desc, vm, "usage: warpsim config [--gpu CONFIG] [--set k=v ...]")) return 0;
  std::cout << load_config(gpu, sets).resolved_yaml();
  return 0;
}

int cmd_compare(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> runs;
  desc.add_options()("runs", po::value(&runs)->composing(), "stats.json files or run output directories, baseline first");
  po::positional_options_description pos;
  pos.add("runs", -1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, "usage: warpsim compare BASELINE_DIR_OR_STATS_JSON OTHER... ", &pos)) return 0;
  std::cout << compare_runs(runs);
  return 0;
}

}  // namespace

int warpsim_main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (cmd == "--version") {
      std::cout << "warpsim " << WARPSIM_VERSION << "\n";
      return 0;
    }
    if (cmd == "run") return cmd_run(argc - 1, argv + 1);
    if (cmd == "synth") return cmd_synth(argc - 1, argv + 1);
    if (cmd == "describe") return cmd_describe(argc - 1, argv + 1);
    if (cmd == "config") return cmd_config(argc - 1, argv + 1);
    if (cmd == "compare") return cmd_compare(argc - 1, argv + 1);
    std::string msg = "unknown command '" + cmd + "'";
    const std::string hint = did_you_mean(cmd, {"run", "synth", "describe", "config", "compare"});
    if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
    std::cerr << "warpsim: error: " << msg << "\n\n" << kUsage;
    return 2;
  } catch (const po::error& e) {
    std::cerr << "warpsim: error: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "warpsim: error: " << e.what() << "\n";
    return 2;
  } catch (const SimulationError& e) {
    std::cerr << "warpsim: simulation error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "warpsim: internal error: " << e.what() << "\n";
    return 70;
  }
}

}  // namespace warpsim
