#include "app/llm/llm_cases.h"

#include <fmt/format.h>

#include <map>

#include "app/gpu_configs.h"
#include "app/llm/llm_run.h"
#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "app/workload_cache.h"
#include "sim/core/error.h"

namespace warpsim::llm {
namespace {

// Model names of the reference sources that are not preset names. TensorRT-LLM's performance tables say
// "LLaMA 7B" and "LLaMA 70B": the 7B has Llama-2-7B's shapes (hidden 4096, 32 layers, 32 heads, intermediate 11008,
// vocab 32000), and TensorRT-LLM's 70B examples are Llama-2-70B.
const std::map<std::string, std::string> kModelAliases = {{"llama-7b", "llama-2-7b"}, {"llama-70b", "llama-2-70b"}};

std::uint64_t whole(const ReferenceCase& c, const std::string& key, std::uint64_t fallback) {
  const auto it = c.keys.find(key);
  if (it == c.keys.end()) return fallback;
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || v == 0)
    throw InputError(fmt::format("workload key {}: expected a whole number >= 1, got '{}'", key, it->second));
  return v;
}

CaseResult run_one_case(const ReferenceCase& c, const ValidateOptions& options, WorkloadCache& cache) {
  CaseResult r;
  r.reference = c;
  r.unit = c.metric == "tokens_per_s" ? "tokens/s" : "ms";
  try {
    for (const auto& [key, value] : c.keys)
      if (key != "model" && key != "batch" && key != "input_len" && key != "output_len" && key != "tp" && key != "dtype")
        throw InputError(fmt::format("workload key '{}' is not one of llm's: model, batch, input_len, output_len, tp, "
                                     "dtype", key));
    if (c.metric != "ttft_ms" && c.metric != "ms_per_token" && c.metric != "tokens_per_s")
      throw InputError(fmt::format("metric {}: llm cases give ttft_ms, ms_per_token or tokens_per_s", c.metric));
    const auto model_key = c.keys.find("model");
    if (model_key == c.keys.end()) throw InputError("workload key model is missing");
    const std::string dtype = c.keys.count("dtype") ? c.keys.at("dtype") : "bf16";
    if (dtype != "bf16" && dtype != "fp16" && dtype != "fp8") {
      r.status = CaseStatus::Unsupported;
      r.reason = fmt::format("dtype {}: weight-only quantized GEMMs are not synthesized (bf16, fp16 and fp8 are)", dtype);
      return r;
    }
    const auto alias = kModelAliases.find(model_key->second);
    const std::string model_name = alias == kModelAliases.end() ? model_key->second : alias->second;
    LlmModel model;
    try {
      model = load_model(model_name);
    } catch (const InputError& e) {
      r.status = CaseStatus::Unsupported;
      r.reason = e.what();
      return r;
    }
    Scenario s;
    s.phase = c.metric == "ttft_ms" ? "prefill" : "decode";
    s.batch = whole(c, "batch", 1);
    s.prompt = whole(c, "input_len", 0);
    if (!c.keys.count("input_len")) throw InputError("workload key input_len is missing");
    const std::uint64_t output = c.keys.count("output_len") ? whole(c, "output_len", 0) : 0;
    s.context = s.phase == "prefill" ? s.prompt : s.prompt + output / 2;
    s.tp = whole(c, "tp", 1);
    // fp16 runs at bf16's rate on the tensor cores and moves the same bytes.
    s.dtype = dtype == "fp16" ? "bf16" : dtype;
    RunSpec base;
    base.gpu = c.gpu;
    base.overrides = options.extra_overrides;
    base.overrides.insert(base.overrides.end(), c.overrides.begin(), c.overrides.end());
    s.prefill_attention = prefill_attention_for(load_gpu_config(base.gpu, base.overrides));
    const std::vector<PlanEntry> plan = build_plan(model, s);
    base.driver = "plain";
    base.progress = false;
    base.max_memory_bytes = options.max_memory_bytes;
    if (options.before_simulation) options.before_simulation(c);
    const LlmResult result = run_llm(model, s, plan, base, cache);
    const double value = c.metric == "tokens_per_s" ? s.batch / (result.step_us * 1e-6) : result.step_us / 1e3;
    r.status = CaseStatus::Ok;
    r.simulated = value;
    r.error_pct = (value - c.measured) / c.measured * 100.0;
  } catch (const std::exception& e) {
    r.status = CaseStatus::Failed;
    r.reason = e.what();
  }
  return r;
}

}  // namespace

std::vector<CaseResult> run_llm_cases(const std::vector<const ReferenceCase*>& members, const ValidateOptions& options) {
  WorkloadCache cache(WorkloadCache::default_dir());
  std::vector<CaseResult> results;
  for (const ReferenceCase* c : members) results.push_back(run_one_case(*c, options, cache));
  return results;
}

}  // namespace warpsim::llm
