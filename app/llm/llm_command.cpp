#include "app/llm/llm_command.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <spdlog/spdlog.h>

#include <boost/program_options.hpp>
#include <filesystem>

#include "app/gpu_configs.h"
#include "app/llm/llm_run.h"
#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "app/run_one.h"
#include "app/result_set.h"
#include "app/workload_cache.h"
#include "models/gpu/gpu.h"
#include "sim/core/error.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace warpsim {
namespace {

const char* kLlmUsage =
    "usage: warpsim llm --model MODEL --phase prefill|decode [--batch B] [--prompt P] [--context C] [--dtype bf16|fp8|fp4]\n"
    "                   [--kv-dtype bf16|fp8] [--tp N] [--ep N] [--moe-skew S] [--gpu CONFIG] [--set k=v ...] [--launch eager|graph] [--plan] [--out DIR]\n"
    "                   [--cache-dir DIR | --no-cache] [--sample waves|off] [--subset N|auto]\n"
    "\n"
    "Simulates one inference step of an LLM on one GPU: the kernels vLLM runs (print them with --plan), each\n"
    "distinct kernel simulated once (and kept in an on-disk cache for later runs), kernels without a synthesizer\n"
    "and tensor-parallel communication as estimates (marked so everywhere). Prints TTFT (prefill) or the time per\n"
    "output token (decode), tokens/s, and a per-kernel table with the roofline time beside the simulated one; writes\n"
    "stats.json (with an `llm` section), stats.csv and timeline.json (ui.perfetto.dev) to --out.\n"
    "MODEL: a preset (llama-2-7b, llama-3-8b, llama-3-70b, mixtral-8x7b, qwen2-7b: configs/llm/) or a Hugging Face\n"
    "config.json path. Decode: --context is the tokens in the KV cache (default --prompt). Prefill: --context >= \n"
    "--prompt (a cached prefix). The cache: --cache-dir, else $WARPSIM_CACHE_DIR, $XDG_CACHE_HOME/warpsim or\n"
    "~/.cache/warpsim; one file per kernel, keyed by the workload, the resolved config and the warpsim version.\n"
    "Kernels of more than sim.sample_min_waves CTA waves are sampled by default (--sample waves): a sample of their\n"
    "waves simulated, the rest extrapolated; and a decode step's kernels run on a quarter of the GPU (--subset auto:\n"
    "a quarter of its SMs, L2 slices and HBM channels running a quarter of the CTAs, counters and energy scaled to\n"
    "the grid). Both are marked as estimates in every output (README \"Sampling\": measured errors); --sample off\n"
    "--subset 1 simulates every CTA on the whole GPU.";

// --subset auto: 1 for prefill; for decode 4, or 2 where the GPU's models reject a quarter of it (a GPU of fewer
// GPCs than four times its L2 partitions), or 1 where they reject a half too.
std::string auto_subset(const std::string& phase, const RunSpec& base) {
  if (phase != "decode") return "1";
  for (const char* divisor : {"4", "2"}) {
    std::vector<std::string> overrides = base.overrides;
    overrides.push_back(std::string("sim.subset=") + divisor);
    try {
      const Gpu probe(load_gpu_config(base.gpu, overrides));
      return divisor;
    } catch (const ConfigError&) {
    }
  }
  return "1";
}

}  // namespace

int cmd_llm(int argc, char** argv) {
  po::options_description desc("options");
  std::string model_name, out, launch_mode, sample_mode, subset;
  WorkloadCacheOption cache_option;
  llm::Scenario scenario;
  RunSpec base;
  base.driver = "plain";  // SystemC elaborates once per process, and a step simulates many kernels: same results
  desc.add_options()
      ("model", po::value(&model_name), "a preset name or a Hugging Face config.json")
      ("phase", po::value(&scenario.phase)->default_value("decode"), "prefill or decode")
      ("batch", po::value(&scenario.batch)->default_value(1), "sequences in the batch")
      ("prompt", po::value(&scenario.prompt)->default_value(128), "prompt tokens per sequence")
      ("context", po::value(&scenario.context)->default_value(0), "tokens in the KV cache (decode); 0: = --prompt")
      ("dtype", po::value(&scenario.dtype)->default_value("bf16"), "GEMM data type: bf16, fp8 (sm_90 and later) or fp4 (NVFP4 W4A4 with its activation quantization; GPUs with fp4 tensor "
       "cores: b200)")
      ("kv-dtype", po::value(&scenario.kv_dtype)->default_value("bf16"),
       "KV-cache data type: bf16, or fp8 (e4m3, vLLM's --kv-cache-dtype fp8: written in fp8, dequantized by the "
       "attention kernels)")
      ("tp", po::value(&scenario.tp)->default_value(1), "tensor-parallel GPUs")
      ("ep", po::value(&scenario.ep)->default_value(1),
       "expert-parallel GPUs (MoE): = --tp, the experts split whole over the tensor-parallel group; or with --tp 1, "
       "data-parallel attention ranks of --batch sequences each, tokens sent to their experts by all-to-all")
      ("moe-skew", po::value(&scenario.moe_skew)->default_value(0.0),
       "MoE routing skew: 0, tokens spread evenly over the experts; s > 0, expert loads follow a Zipf law of exponent "
       "s (the i-th most loaded getting (i+1)^-s of the routes, relatively; s = 1 over 8 experts: the hottest at 2.9x "
       "the mean), the experts dealt round-robin to the --ep GPUs and the busiest one simulated")
      ("gpu", po::value(&base.gpu)->default_value("h100_sxm"), "GPU config: a shipped name or a YAML path")
      ("set", po::value(&base.overrides)->composing(), "override a config value, e.g. --set hbm.bandwidth=6.7TB/s (repeatable)")
      ("launch", po::value(&launch_mode), "eager or graph (default: the config's launch.mode); = --set launch.mode=...")
      ("sample", po::value(&sample_mode)->default_value("waves"),
       "CTA-wave sampling of large kernels: waves (kernels of more than sim.sample_min_waves waves simulated for a "
       "sample of their waves, the rest extrapolated; README \"Sampling\" gives the measured error) or off (every CTA)")
      ("subset", po::value(&subset)->default_value("auto"),
       "SM subsetting (README \"Sampling\"): N simulates each kernel on 1/N of the GPU (SMs, GPCs, L2 slices, HBM "
       "channels and their totals) running 1/N of its CTAs, counters and energy scaled to the grid, marked as "
       "estimates; 1: the whole GPU; auto: 4 for decode, whose kernels have one or two CTA waves (which wave sampling "
       "cannot shorten), 1 for prefill, whose many-wave GEMMs wave sampling shortens and whose operands, shared "
       "through the L2, a quarter GPU holds less of; = --set sim.subset=N")
      ("plan", "print the kernel sequence and stop (nothing simulated)")
      ("out", po::value(&out)->default_value("warpsim-llm-out"), "output directory")
      ("quiet,q", "do not print the summary")
      ("help,h", "show this help");
  cache_option.add_to(desc);
  po::variables_map vm;
  po::command_line_parser parser(argc, argv);
  parser.style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing);  // as parse_command_options
  parser.options(desc);
  const po::parsed_options parsed = parser.run();
  const std::vector<std::string> stray = po::collect_unrecognized(parsed.options, po::include_positional);
  if (!stray.empty())
    throw InputError(fmt::format("llm: unexpected argument '{}': options are written --name value (see warpsim llm --help)",
                                 stray.front()));
  po::store(parsed, vm);
  if (vm.count("help")) {
    fmt::print("{}\n\n{}\n", kLlmUsage, fmt::streamed(desc));
    return 0;
  }
  po::notify(vm);
  if (model_name.empty()) throw InputError("llm: give the model, --model NAME or --model path/to/config.json");
  if (vm.count("launch")) base.overrides.push_back("launch.mode=" + launch_mode);
  // The defaults (waves; subset auto) go before --set, which may change them; an explicit --sample or --subset
  // after, overriding --set (an explicit --subset auto is the default's choice, so before).
  const bool subset_auto = subset == "auto";
  if (subset_auto) subset = auto_subset(scenario.phase, base);
  for (const auto& [assignment, defaulted] :
       {std::pair<std::string, bool>{sample_override(sample_mode), vm["sample"].defaulted()},
        std::pair<std::string, bool>{"sim.subset=" + subset, subset_auto}}) {
    if (defaulted) base.overrides.insert(base.overrides.begin(), assignment);
    else base.overrides.push_back(assignment);
  }
  const std::string dir = cache_option.chosen(vm);

  const llm::LlmModel model = llm::load_model(model_name);
  scenario.prefill_attention = llm::prefill_attention_for(load_gpu_config(base.gpu, base.overrides));
  const std::vector<llm::PlanEntry> plan = llm::build_plan(model, scenario);
  if (vm.count("plan")) {
    fmt::print("{}", llm::plan_text(model, scenario, plan));
    // The collectives need the GPU's node (the config); a single GPU has none.
    if (scenario.gpus() > 1)
      fmt::print("{}", llm::collectives_text(plan, llm::peaks_of(load_gpu_config(base.gpu, base.overrides))));
    return 0;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out, ec)) throw InputError(fmt::format("--out: cannot create directory '{}'", out));
  WorkloadCache cache(dir);
  spdlog::info("{}: {} plan entries; cache {}", model.name, plan.size(), dir.empty() ? "off (--no-cache)" : dir);
  const llm::LlmResult result = llm::run_llm(model, scenario, plan, base, cache);
  ResultSetWriter results(out);
  results.write("stats.json", llm::llm_stats_json(model, scenario, plan, result, dir));
  results.write("stats.csv", llm::llm_stats_csv(result));
  results.write("timeline.json", llm::llm_timeline(plan, result));
  std::vector<std::string> command_line{"warpsim"};
  command_line.insert(command_line.end(), argv, argv + argc);
  results.commit(result.run.sim.version, command_line);
  if (!vm.count("quiet"))
    fmt::print("{}  results in {}/ (stats.json with an llm section, stats.csv, timeline.json for ui.perfetto.dev; run.json)\n",
               llm::llm_summary(model, scenario, plan, result), out);
  return 0;
}

}  // namespace warpsim
