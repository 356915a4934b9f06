// `warpsim llm` (issue 11): model descriptions (Hugging Face config.json), the kernel plan of one step derived
// from the model's numbers, memoized simulation (each distinct kernel once per run; a second run from the disk
// cache, identical), and the decode floor of reading every weight once. Cheap: a 2-layer model of hidden size 512
// (tests/data/llm/tiny_llama.json) wherever something is simulated.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <set>
#include <tuple>

#include "app/gpu_configs.h"
#include "app/llm/llm_run.h"
#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "app/workload_cache.h"
#include "sim/core/error.h"
#include "test_helpers.h"

using namespace wstest;
using namespace warpsim;

namespace {

std::string tiny_model() { return (source_dir() / "tests" / "data" / "llm" / "tiny_llama.json").string(); }
// Four experts, two per token: Mixtral's shape at tiny_llama's size.
std::string tiny_moe_model() { return (source_dir() / "tests" / "data" / "llm" / "tiny_mixtral.json").string(); }

// The entries of layer 0, by name, in order.
std::vector<std::string> layer_names(const std::vector<llm::PlanEntry>& plan, int layer) {
  std::vector<std::string> names;
  for (const auto& e : plan)
    if (e.layer == layer) names.push_back(e.name);
  return names;
}

// Decode at batch 2, context 256: a step of a few small kernels, each layer's the same.
llm::Scenario tiny_decode_scenario() {
  llm::Scenario s;
  s.phase = "decode";
  s.batch = 2;
  s.context = 256;
  return s;
}

const llm::PlanEntry& entry(const std::vector<llm::PlanEntry>& plan, const std::string& name, int layer = 0) {
  for (const auto& e : plan)
    if (e.name == name && e.layer == layer) return e;
  FAIL("no plan entry " << name << " in layer " << layer);
  throw std::logic_error("unreachable");
}

std::uint64_t key(const llm::PlanEntry& e, const std::string& k) { return std::stoull(e.workload.synth_keys.at(k)); }

}  // namespace

TEST_CASE("llm model: a Hugging Face config.json is read, and a missing or bad key is one error naming file and key",
          "[llm]") {
  const llm::LlmModel m = llm::read_model_file(tiny_model());
  CHECK(m.hidden == 512);
  CHECK(m.layers == 2);
  CHECK(m.heads == 8);
  CHECK(m.kv_heads == 2);
  CHECK(m.head_dim == 512 / 8);  // no head_dim key: hidden_size / num_attention_heads
  CHECK(m.intermediate == 1024);
  CHECK(m.vocab == 1024);
  CHECK_FALSE(m.moe());
  CHECK_FALSE(m.qkv_bias);

  TempDir dir;
  const std::string original = read_text(tiny_model());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = original;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    const std::string path = dir / "config.json";
    write_text(path, text);
    return path;
  };
  SECTION("a missing required key") {
    const std::string path = with("\"hidden_size\": 512,", "");
    try {
      llm::read_model_file(path);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(contains(e.what(), path));
      CHECK(contains(e.what(), "hidden_size"));
    }
    const CmdResult r = run_warpsim({"llm", "--model", path, "--plan"});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "hidden_size"));
  }
  SECTION("a value of the wrong type") {
    const std::string path = with("\"num_hidden_layers\": 2", "\"num_hidden_layers\": \"two\"");
    try {
      llm::read_model_file(path);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(contains(e.what(), path));
      CHECK(contains(e.what(), "num_hidden_layers"));
      CHECK(contains(e.what(), "two"));
    }
  }
  SECTION("more layers than a plan may hold (fuzz_llm_model: 31,237,138 layers took over 4 GB)") {
    const std::string path = with("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 31237138");
    CHECK_THROWS_WITH(llm::read_model_file(path), Catch::Contains("num_hidden_layers") && Catch::Contains("at most"));
  }
  SECTION("KV heads that do not divide the heads") {
    const std::string path = with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
    CHECK_THROWS_WITH(llm::read_model_file(path), Catch::Contains("num_key_value_heads"));
  }
  SECTION("Mixtral-style experts and Qwen2's biased QKV") {
    const llm::LlmModel moe = llm::read_model_file(
        with("\"vocab_size\": 1024,", "\"vocab_size\": 1024, \"num_local_experts\": 8, \"num_experts_per_tok\": 2,"));
    CHECK(moe.experts == 8);
    CHECK(moe.experts_per_token == 2);
    const llm::LlmModel qwen = llm::read_model_file(with("\"model_type\": \"llama\"", "\"model_type\": \"qwen2\""));
    CHECK(qwen.qkv_bias);
  }
  SECTION("a model file is read as configs are: a device or a nested-alias bomb is refused, not read or expanded") {
    CHECK_THROWS_WITH(llm::read_model_file("/dev/zero"), Catch::Contains("not a regular file"));
    std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    for (char c = 'b'; c <= 'z'; ++c)
      bomb += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, char(c - 1), char(c - 1),
                          char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1),
                          char(c - 1));
    write_text(dir / "bomb.yaml", bomb);
    CHECK_THROWS_WITH(llm::read_model_file(dir / "bomb.yaml"), Catch::Contains("YAML values"));
  }
  SECTION("an unknown preset lists the presets") {
    const CmdResult r = run_warpsim({"llm", "--model", "llama-9", "--plan"});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "llama-3-8b"));
  }
}

TEST_CASE("llm plan: Llama-3-8B decode is vLLM's kernel list with GEMM shapes from the model's numbers", "[llm]") {
  const llm::LlmModel m = llm::load_model("llama-3-8b");
  // Meta-Llama-3-8B config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336, vocab 128256.
  const std::uint64_t hidden = 4096, heads = 32, kv = 8, head_dim = hidden / heads, inter = 14336, vocab = 128256;
  llm::Scenario s;
  s.phase = "decode";
  s.batch = 4;
  s.context = 1024;
  const auto plan = llm::build_plan(m, s);
  // vLLM fuses each residual add into the RMSNorm after it (fused_add_rms_norm): the first layer's input norm has
  // no residual yet, every later norm adds the block before it.
  const std::vector<std::string> rest = {"qkv_proj", "rotary", "reshape_and_cache", "attention", "o_proj",
                                         "add+post_attention_layernorm",
                                         "gate_up_proj", "silu_and_mul", "down_proj"};
  std::vector<std::string> first = {"input_layernorm"}, later = {"add+input_layernorm"};
  first.insert(first.end(), rest.begin(), rest.end());
  later.insert(later.end(), rest.begin(), rest.end());
  CHECK(layer_names(plan, 0) == first);
  CHECK(layer_names(plan, 1) == later);
  CHECK(layer_names(plan, 31) == later);
  CHECK(layer_names(plan, 32).empty());
  CHECK(layer_names(plan, -1) == std::vector<std::string>{"embedding", "add+final_norm", "logits", "logits_to_fp32", "greedy_sample"});
  const std::string text = llm::plan_text(m, s, plan);  // each layer kernel once, with the layers that run it
  CHECK(contains(text, "input_layernorm              0 "));
  CHECK(contains(text, "add+input_layernorm          1-31 (x31)"));
  CHECK(contains(text, "qkv_proj                     0-31 (x32)"));
  for (const auto& [name, layer, fused] : {std::tuple{"input_layernorm", 0, "false"}, {"add+input_layernorm", 1, "true"},
                                           {"add+post_attention_layernorm", 0, "true"}, {"add+final_norm", -1, "true"}}) {
    INFO(name);
    const auto& norm = entry(plan, name, layer);
    CHECK(norm.workload.synthesizer == "rmsnorm");
    CHECK(norm.workload.synth_keys.at("kernel") == "vllm");
    CHECK(norm.workload.synth_keys.at("residual") == fused);
    CHECK(key(norm, "rows") == 4);
  }
  const auto& sample = entry(plan, "greedy_sample", -1);  // an argmax over the vocabulary for each sequence
  CHECK(sample.workload.synthesizer == "reduction");
  CHECK(key(sample, "outputs") == 4);
  CHECK(key(sample, "inputs") == vocab);

  const auto& qkv = entry(plan, "qkv_proj");
  CHECK(key(qkv, "m") == 4);  // one new token per sequence
  CHECK(key(qkv, "n") == (heads + 2 * kv) * head_dim);
  CHECK(key(qkv, "k") == hidden);
  CHECK(qkv.workload.synth_keys.count("epilogue") == 0);  // Llama has no QKV bias
  const auto& o = entry(plan, "o_proj");
  CHECK((key(o, "n") == hidden && key(o, "k") == heads * head_dim));
  const auto& gate_up = entry(plan, "gate_up_proj");
  CHECK((key(gate_up, "n") == 2 * inter && key(gate_up, "k") == hidden));
  const auto& down = entry(plan, "down_proj");
  CHECK((key(down, "n") == hidden && key(down, "k") == inter));
  const auto& logits = entry(plan, "logits", -1);
  CHECK((key(logits, "m") == 4 && key(logits, "n") == vocab && key(logits, "k") == hidden));
  const auto& attention = entry(plan, "attention");
  CHECK(attention.workload.synth_keys.at("variant") == "decode");
  CHECK((key(attention, "seqlen_q") == 1 && key(attention, "seqlen_kv") == 1024 && key(attention, "kv_heads") == kv));
  CHECK(entry(plan, "embedding", -1).kind == llm::EntryKind::estimate);

  SECTION("tensor parallelism splits heads and intermediate, and all-reduces twice per layer") {
    s.tp = 2;
    const auto tp = llm::build_plan(m, s);
    CHECK(key(entry(tp, "qkv_proj"), "n") == (heads + 2 * kv) * head_dim / 2);
    CHECK(key(entry(tp, "down_proj"), "k") == inter / 2);
    std::size_t all_reduces = 0;
    for (const auto& e : tp)
      if (e.layer == 0 && e.kind == llm::EntryKind::communication) {
        ++all_reduces;
        CHECK(e.message_bytes == 4.0 * hidden * 2);  // 4 tokens x hidden x bf16
      }
    CHECK(all_reduces == 2);
  }
  SECTION("the step's K and V go into the cache (vLLM's reshape_and_cache), the logits to fp32 by a converting copy") {
    const auto& cache = entry(plan, "reshape_and_cache");
    CHECK(cache.workload.synthesizer == "elementwise");
    CHECK(key(cache, "elements") == 2 * 4 * kv * head_dim);  // K and V of 4 new tokens
    CHECK(cache.workload.synth_keys.at("out_dtype") == "bf16");
    const auto& convert = entry(plan, "logits_to_fp32", -1);
    CHECK((convert.workload.synth_keys.at("dtype") == "bf16" && convert.workload.synth_keys.at("out_dtype") == "fp32"));
  }
  SECTION("an fp8 KV cache: written in fp8, read as fp8 by decode and an fa2 prefill; the fa3 prefill runs FA3's fp8 "
          "forward over a quantized query") {
    s.kv_dtype = "fp8";
    const auto fp8 = llm::build_plan(m, s);
    CHECK(entry(fp8, "reshape_and_cache").workload.synth_keys.at("out_dtype") == "fp8");
    const auto& a = entry(fp8, "attention");
    CHECK(a.workload.synth_keys.at("kv_dtype") == "fp8");
    // The roofline bytes: the K/V share halves, Q and O stay bf16.
    const double q_o = 2.0 * 4 * heads * head_dim * 2, kv_bf16 = 2.0 * 4 * 1024 * kv * head_dim * 2;
    CHECK(entry(plan, "attention").bytes == Approx(q_o + kv_bf16));
    CHECK(a.bytes == Approx(q_o + kv_bf16 / 2));
    CHECK(llm::kv_cache_bytes(m, s) == Approx(32 * kv_bf16 / 2));  // every layer's K and V at one byte
    s.phase = "prefill";
    s.prompt = 256;
    s.context = 0;
    CHECK(entry(llm::build_plan(m, s), "attention").workload.synth_keys.at("kv_dtype") == "fp8");  // fa2
    const auto fa2_plan = llm::build_plan(m, s);
    CHECK(std::none_of(fa2_plan.begin(), fa2_plan.end(),
                       [](const llm::PlanEntry& e) { return e.name == "quantize_query"; }));  // fa2 keeps a bf16 query
    s.prefill_attention = "fa3";
    const auto fa3_plan = llm::build_plan(m, s);
    const auto& fa3 = entry(fa3_plan, "attention");
    CHECK(fa3.workload.synth_keys.at("kv_dtype") == "fp8");
    CHECK(fa3.workload.synth_keys.at("variant") == "fa3");
    CHECK(contains(fa3.shape, "q k v fp8"));
    CHECK(fa3.tensor_dtype == "fp8");
    // The query of the prompt's 4 x 256 tokens converted to fp8 before it (vLLM's scaled_fp8_quant).
    const auto& quant = entry(fa3_plan, "quantize_query");
    CHECK(key(quant, "elements") == 4 * 256 * heads * head_dim);
    CHECK((quant.workload.synth_keys.at("dtype") == "bf16" && quant.workload.synth_keys.at("out_dtype") == "fp8"));
    s.kv_dtype = "int8";
    CHECK_THROWS_WITH(llm::build_plan(m, s), Catch::Contains("--kv-dtype"));
  }
  SECTION("fp4 (NVFP4 W4A4) and fp8 (W8A8): every layer GEMM takes its input quantized first, the logits GEMM stays bf16") {
    s.dtype = "fp4";
    const auto fp4 = llm::build_plan(m, s);
    for (const auto& [gemm, k] : {std::pair{"qkv_proj", hidden}, {"o_proj", heads * head_dim}, {"gate_up_proj", hidden},
                                  {"down_proj", inter}}) {
      INFO(gemm);
      const auto& g = entry(fp4, gemm);
      CHECK(g.workload.synth_keys.at("dtype") == "fp4");
      CHECK(g.tensor_dtype == "fp4");
      // its quantization kernel just before it, of the GEMM's m x k input
      const auto at = std::find_if(fp4.begin(), fp4.end(), [&](const llm::PlanEntry& e) { return &e == &g; });
      REQUIRE(at != fp4.begin());
      const auto& q = *(at - 1);
      CHECK(q.name == std::string(gemm) + ".input_quant");
      CHECK(q.workload.synthesizer == "quantize");
      CHECK((key(q, "rows") == key(g, "m") && key(q, "cols") == k));
      // bytes: the weights at half a byte and a 1-byte scale per 16 elements
      CHECK(g.bytes == Approx(0.5625 * (key(g, "m") * k + k * key(g, "n")) + 2.0 * key(g, "m") * key(g, "n")));
    }
    CHECK(entry(fp4, "logits", -1).workload.synth_keys.at("dtype") == "bf16");
    CHECK(layer_names(fp4, 1).size() == layer_names(plan, 1).size() + 4);  // four quantizations per layer
    // fp8 (W8A8, static activation scale): a converting copy of the input before each GEMM
    s.dtype = "fp8";
    const auto fp8 = llm::build_plan(m, s);
    CHECK(layer_names(fp8, 1).size() == layer_names(plan, 1).size() + 4);
    const auto& q8 = entry(fp8, "down_proj.input_quant");
    CHECK(q8.workload.synthesizer == "elementwise");
    CHECK((q8.workload.synth_keys.at("op") == "copy" && q8.workload.synth_keys.at("out_dtype") == "fp8"));
    CHECK(key(q8, "elements") == key(entry(fp8, "down_proj"), "m") * inter);
    CHECK(entry(fp8, "down_proj").workload.synth_keys.at("dtype") == "fp8");
    s.dtype = "fp6";
    CHECK_THROWS_WITH(llm::build_plan(m, s), Catch::Contains("--dtype: expected bf16, fp8 or fp4, got 'fp6'"));
  }
  SECTION("prefill attends causally over the prompt, logits for the last token of each sequence") {
    s.phase = "prefill";
    s.prompt = 512;
    s.context = 0;
    const auto prefill = llm::build_plan(m, s);
    CHECK(key(entry(prefill, "qkv_proj"), "m") == 4 * 512);
    const auto& a = entry(prefill, "attention");
    CHECK((a.workload.synth_keys.at("variant") == "fa2" && a.workload.synth_keys.at("causal") == "true"));
    // On Hopper vLLM's flash-attention backend runs FlashAttention-3; on Ampere FA2.
    CHECK(llm::prefill_attention_for(load_gpu_config("h100_sxm", {})) == "fa3");
    CHECK(llm::prefill_attention_for(load_gpu_config("a100_sxm", {})) == "fa2");
    s.prefill_attention = "fa3";
    CHECK(entry(llm::build_plan(m, s), "attention").workload.synth_keys.at("variant") == "fa3");
    CHECK(key(entry(prefill, "logits", -1), "m") == 4);
  }
}

TEST_CASE("llm plan: expert parallelism splits Mixtral's experts whole, data-parallel attention adds all-to-alls",
          "[llm]") {
  const llm::LlmModel m = llm::load_model("mixtral-8x7b");
  const std::uint64_t hidden = 4096, inter = 14336, experts = 8, top = 2;  // Mixtral-8x7B config.json
  llm::Scenario s;
  s.batch = 16;
  s.context = 512;
  auto collectives = [](const std::vector<llm::PlanEntry>& plan, const std::string& op) {
    std::vector<const llm::PlanEntry*> out;
    for (const auto& e : plan)
      if (e.layer == 0 && e.kind == llm::EntryKind::communication && e.collective == op) out.push_back(&e);
    return out;
  };
  SECTION("--tp 2: every expert split in two, on both GPUs") {
    s.tp = 2;
    const auto plan = llm::build_plan(m, s);
    const auto& gate_up = entry(plan, "expert_gate_up_proj");
    CHECK((key(gate_up, "n") == 2 * inter / 2 && gate_up.count == experts));
    CHECK(collectives(plan, "all_to_all").empty());
  }
  SECTION("--tp 2 --ep 2: four whole experts on each GPU; the all-reduce joins them") {
    s.tp = 2;
    s.ep = 2;
    const auto plan = llm::build_plan(m, s);
    const auto& gate_up = entry(plan, "expert_gate_up_proj");
    CHECK(key(gate_up, "n") == 2 * inter);
    CHECK(gate_up.count == experts / 2);
    CHECK(key(gate_up, "m") == 16 * top / experts);  // 32 routes over 8 experts, evenly
    CHECK(collectives(plan, "all_to_all").empty());
    CHECK(collectives(plan, "all_reduce").size() == 2);
    CHECK(s.gpus() == 2);
  }
  SECTION("--ep 8 (--tp 1): data-parallel attention, one whole expert per GPU, tokens there and back by all-to-all") {
    s.ep = 8;
    const auto plan = llm::build_plan(m, s);
    CHECK(s.dp() == 8);
    CHECK(s.gpus() == 8);
    CHECK(key(entry(plan, "qkv_proj"), "m") == 16);  // each rank its own 16 sequences
    const auto& gate_up = entry(plan, "expert_gate_up_proj");
    CHECK((key(gate_up, "n") == 2 * inter && gate_up.count == 1));
    CHECK(key(gate_up, "m") == 8 * 16 * top / experts);  // every rank's routes, spread evenly
    const auto a2a = collectives(plan, "all_to_all");
    REQUIRE(a2a.size() == 2);  // dispatch and combine
    for (const auto* e : a2a) {
      CHECK(e->gpus == 8);
      CHECK(e->message_bytes == 16.0 * top * hidden * 2);  // the rank's routed token copies, bf16
    }
    CHECK(collectives(plan, "all_reduce").empty());
    const std::string text = llm::collectives_text(plan, llm::peaks_of(load_gpu_config("h100_sxm", {})));
    CHECK(contains(text, "all_to_all"));
    CHECK(contains(text, "p2p/Simple"));
  }
  SECTION("bad combinations are one error naming the option") {
    s.ep = 3;
    CHECK_THROWS_WITH(llm::build_plan(m, s), Catch::Contains("--ep 3") && Catch::Contains("divide"));
    s.ep = 4;
    s.tp = 2;
    CHECK_THROWS_WITH(llm::build_plan(m, s), Catch::Contains("--ep 4 with --tp 2"));
    s.tp = 1;
    s.ep = 2;
    CHECK_THROWS_WITH(llm::build_plan(llm::load_model("llama-3-8b"), s), Catch::Contains("--ep 2") && Catch::Contains("no experts"));
  }
}

TEST_CASE("llm plan: skewed MoE routing (--moe-skew) loads the experts by a Zipf law, capped at one route per token, "
          "and the busiest expert-parallel GPU is the one planned", "[llm][moe]") {
  // Zipf exponent 1 over 8 experts: expert i gets routes x (1/(i+1)) / H_8, H_8 = 2.7179; the hottest 2.94x the mean.
  const double h8 = 1 + 1 / 2.0 + 1 / 3.0 + 1 / 4.0 + 1 / 5.0 + 1 / 6.0 + 1 / 7.0 + 1 / 8.0;
  auto total = [](const llm::ExpertLoad& l) {
    std::uint64_t n = 0;
    for (const auto& [tokens, experts] : l.gemms) n += tokens * experts;
    return n;
  };
  SECTION("one GPU: every route placed, loads falling as 1/rank") {
    const llm::ExpertLoad l = llm::expert_load(1024, 512, 8, 1, 1.0);
    CHECK(total(l) == 1024);
    CHECK(l.routes == 1024);
    REQUIRE(l.gemms.size() == 8);  // eight different loads, most first
    CHECK(std::abs(static_cast<double>(l.gemms.front().first) - 1024 / h8) <= 1.0);  // 376.8
    CHECK(std::abs(static_cast<double>(l.gemms.back().first) - 1024 / h8 / 8) <= 1.0);  // 47.1
    for (std::size_t i = 1; i < l.gemms.size(); ++i) CHECK(l.gemms[i].first < l.gemms[i - 1].first);
  }
  SECTION("a steep skew is capped at one route per token, the rest spread over the others") {
    const llm::ExpertLoad l = llm::expert_load(64 * 2, 64, 8, 1, 4.0);  // top-2 of 64 tokens
    CHECK(total(l) == 128);
    CHECK(l.gemms.front().first == 64);  // every token reaches the hottest expert, no more
    for (const auto& g : l.gemms) CHECK(g.first <= 64);
  }
  SECTION("no skew is the even split: ceil(routes / experts reached) tokens on each") {
    const llm::ExpertLoad l = llm::expert_load(36, 18, 8, 2, 0.0);
    REQUIRE(l.gemms.size() == 1);
    CHECK(l.gemms.front().first == 5);   // ceil(36 / 8)
    CHECK(l.gemms.front().second == 4);  // 8 experts over 2 GPUs
    CHECK(l.routes == 18);
  }
  SECTION("Mixtral decode, --ep 8: the GPU of the hottest expert, its all-to-all carrying what it receives") {
    const llm::LlmModel m = llm::load_model("mixtral-8x7b");
    const std::uint64_t hidden = 4096, inter = 14336, top = 2;  // Mixtral-8x7B config.json
    llm::Scenario s;
    s.batch = 16;
    s.context = 512;
    s.ep = 8;
    const std::uint64_t even = 8 * 16 * top / 8;  // 32 tokens per expert without skew
    s.moe_skew = 1.0;
    const auto plan = llm::build_plan(m, s);
    const double hottest = 8.0 * 16 * top / h8;  // 94.2 of the 256 routes
    std::uint64_t tokens = 0;
    for (const auto& e : plan)
      if (e.layer == 0 && e.name.rfind("expert_gate_up_proj", 0) == 0) {
        CHECK(e.count == 1);  // one whole expert on this GPU
        CHECK(key(e, "n") == 2 * inter);
        tokens = key(e, "m");
        CHECK(e.name == fmt::format("expert_gate_up_proj.{}tok", tokens));
      }
    CHECK(std::abs(static_cast<double>(tokens) - hottest) <= 1.0);
    CHECK(tokens > 2 * even);
    CHECK(key(entry(plan, fmt::format("expert_down_proj.{}tok", tokens)), "k") == inter);
    CHECK(key(entry(plan, "silu_and_mul"), "elements") == tokens * inter);
    for (const auto& e : plan)
      if (e.layer == 0 && e.kind == llm::EntryKind::communication && e.collective == "all_to_all")
        CHECK(e.message_bytes == static_cast<double>(tokens) * hidden * 2);  // receives more than its 32 routes
  }
  SECTION("warpsim llm --moe-skew: the plan says so and lists the busiest GPU's expert loads") {
    const CmdResult r = run_warpsim({"llm", "--model", "mixtral-8x7b", "--batch", "16", "--ep", "8", "--moe-skew", "1",
                                     "--plan"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "moe-skew 1 (the busiest GPU)"));
    CHECK(contains(r.out, "expert_gate_up_proj.94tok"));
    const CmdResult bad = run_warpsim({"llm", "--model", "mixtral-8x7b", "--moe-skew", "-1", "--plan"});
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "--moe-skew"));
  }
  SECTION("bad values are one error naming the option") {
    llm::Scenario s;
    s.moe_skew = -0.5;
    CHECK_THROWS_WITH(llm::build_plan(llm::load_model("mixtral-8x7b"), s), Catch::Contains("--moe-skew"));
    s.moe_skew = 1.0;
    CHECK_THROWS_WITH(llm::build_plan(llm::load_model("llama-3-8b"), s),
                      Catch::Contains("--moe-skew 1") && Catch::Contains("no experts"));
  }
}

TEST_CASE("llm run: each distinct kernel is simulated once, a second run reads the disk cache and is identical, and "
          "decode takes at least the weights' bytes over the HBM bandwidth", "[llm]") {
  TempDir dir;
  const llm::LlmModel m = llm::read_model_file(tiny_model());
  const llm::Scenario s = tiny_decode_scenario();
  const auto plan = llm::build_plan(m, s);
  std::set<std::string> distinct;
  std::size_t simulated_calls = 0;
  for (const auto& e : plan)
    if (e.kind == llm::EntryKind::simulated) {
      std::string id = e.workload.synthesizer;
      for (const auto& [k, v] : e.workload.synth_keys) id += " " + k + "=" + v;
      distinct.insert(id);
      simulated_calls += e.count;
    }
  REQUIRE(simulated_calls > distinct.size());  // two identical layers at least

  RunSpec base;
  base.gpu = "h100_sxm";
  base.driver = "plain";
  base.progress = false;
  WorkloadCache first_cache(dir / "cache");
  const llm::LlmResult first = llm::run_llm(m, s, plan, base, first_cache);
  CHECK(first.cache.simulated == distinct.size());
  CHECK(first.cache.disk_hits == 0);
  CHECK(first.simulated_calls == simulated_calls);

  WorkloadCache second_cache(dir / "cache");
  const llm::LlmResult second = llm::run_llm(m, s, plan, base, second_cache);
  CHECK(second.cache.simulated == 0);
  CHECK(second.cache.disk_hits == distinct.size());
  CHECK(second.step_us == first.step_us);
  CHECK(second.entry_us == first.entry_us);
  CHECK(llm::llm_stats_csv(second) == llm::llm_stats_csv(first));

  // Every weight is read once per step: the step takes at least their bytes at the configured HBM bandwidth.
  const auto cfg = read_flat_yaml(run_warpsim({"config", "--gpu", "h100_sxm"}).out);
  const double hbm = config_number(cfg, "hbm.bandwidth");
  const double h = 512, per_layer = h * (8 + 2 * 2) * 64 + 8 * 64 * h + 3 * h * 1024;  // qkv, o, gate+up+down
  const double weight_bytes = 2 * (2 * per_layer + 2 * 1024 * h);                       // bf16; embeddings and logits
  CHECK(first.step_us * 1e-6 >= weight_bytes / hbm);
}

TEST_CASE("llm boost: the whole step runs at one clock, the highest whose average power meets the cap", "[llm][power]") {
  const llm::LlmModel m = llm::read_model_file(tiny_model());
  const llm::Scenario s = tiny_decode_scenario();
  const auto plan = llm::build_plan(m, s);
  auto step = [&](std::vector<std::string> overrides) {
    RunSpec base;
    base.gpu = "h100_sxm";
    base.driver = "plain";
    base.progress = false;
    base.overrides = std::move(overrides);
    WorkloadCache memory_only("");
    return llm::run_llm(m, s, plan, base, memory_only);
  };
  // The step's average power as the stream has it: every simulated kernel call's energy over its time.
  auto step_watts = [](const llm::LlmResult& r) {
    double joules = 0, seconds = 0;
    for (const KernelResult& k : r.run.kernels)
      if (k.energy) {
        joules += k.energy->joules;
        seconds += k.energy->seconds;
      }
    REQUIRE(seconds > 0);
    return joules / seconds;
  };
  const auto cfg = read_flat_yaml(run_warpsim({"config", "--gpu", "h100_sxm"}).out);
  const double top = config_number(cfg, "power.reference_clock"), step_hz = config_number(cfg, "power.clock_step");
  auto mhz = [](double hz) { return "clocks.sm=" + std::to_string(static_cast<long long>(std::llround(hz / 1e6))) + "MHz"; };
  const llm::LlmResult at_top = step({mhz(top)});
  CHECK(at_top.clock_policy == "pinned");
  const double top_w = step_watts(at_top), idle_w = 100.0;
  REQUIRE(top_w > idle_w);
  // A cap a tenth of the way from the max-boost power down towards idle: it binds, and lower clocks meet it.
  const double cap = top_w - 0.1 * (top_w - idle_w);
  const std::string cap_set = "power.cap=" + std::to_string(cap) + "W";
  const llm::LlmResult boosted = step({cap_set});
  INFO("max boost " << top_w << " W, cap " << cap << " W, step clock " << boosted.step_clock_hz);
  CHECK(boosted.clock_policy == "boost");
  REQUIRE(boosted.step_clock_search.size() >= 2);
  CHECK(boosted.step_clock_search.front().first == top);
  CHECK(boosted.step_clock_search.front().second == Approx(top_w));
  CHECK(boosted.step_clock_hz < top);
  for (const KernelResult& k : boosted.run.kernels)
    if (k.energy) CHECK(k.energy->sm_clock_hz == boosted.step_clock_hz);  // one clock for every kernel
  CHECK(step_watts(boosted) <= cap);
  // Two steps faster is over the cap (the search may stop one step low: app/boost_clock.cpp's margin).
  CHECK(step_watts(step({cap_set, mhz(boosted.step_clock_hz + 2 * step_hz)})) > cap);
  // A slower step is slower: the clock is what the step time follows.
  CHECK(boosted.step_us > at_top.step_us);
}

TEST_CASE("workload cache key: a trace file rewritten in place is a new workload, an unchanged one is not", "[llm]") {
  TempDir dir;
  const std::string trace = dir / "k.wst";
  auto write = [&](const std::string& text) { std::ofstream(trace, std::ios::binary) << text; };
  WorkloadSpec w;
  w.trace_file = trace;
  write("first version");
  const std::string before = WorkloadCache::key(w, "cfg");
  CHECK(WorkloadCache::key(w, "cfg") == before);
  CHECK(WorkloadCache::key(w, "other cfg") != before);
  write("second, longer version");
  CHECK(WorkloadCache::key(w, "cfg") != before);
}

TEST_CASE("llm command: prefill writes TTFT, the per-kernel table and a timeline with a communication track", "[llm]") {
  TempDir dir;
  const CmdResult r = run_warpsim({"llm", "--model", tiny_model(), "--phase", "prefill", "--prompt", "64", "--tp", "2",
                                   "--out", dir / "out", "--cache-dir", dir / "cache"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "TTFT"));
  const std::string stats = read_text(dir.path() / "out" / "stats.json");
  const double ttft = json::number(stats, "llm.ttft_ms").value_or(-1);
  CHECK(ttft > 0);
  CHECK(json::number(stats, "total_time_us").value_or(-1) == Approx(ttft * 1e3));
  CHECK(json::string(stats, "llm.kernels[0].kind").value_or("") == "estimate");  // the embedding
  CHECK(json::number(stats, "llm.breakdown_ms.communication_estimate").value_or(0) > 0);
  const std::string timeline = read_text(dir.path() / "out" / "timeline.json");
  CHECK(contains(timeline, "communication (estimate)"));
  CHECK(contains(timeline, "attention_all_reduce [communication estimate]"));

  SECTION("each collective names the algorithm and protocol chosen; NVLink energy is its own component") {
    CHECK(contains(r.out, "attention_all_reduce"));
    bool found = false;
    for (int i = 0; i < 40 && !found; ++i)
      if (json::string(stats, fmt::format("llm.kernels[{}].name", i)).value_or("") == "attention_all_reduce") {
        found = true;
        CHECK(!json::string(stats, fmt::format("llm.kernels[{}].collective.algorithm", i)).value_or("").empty());
        CHECK(!json::string(stats, fmt::format("llm.kernels[{}].collective.protocol", i)).value_or("").empty());
        CHECK(json::number(stats, fmt::format("llm.kernels[{}].collective.link_bytes", i)).value_or(0) > 0);
      }
    CHECK(found);
    const double nvlink = json::number(stats, "llm.energy_breakdown_j.nvlink").value_or(-1);
    const double kernels = json::number(stats, "llm.energy_breakdown_j.kernels").value_or(-1);
    const double idle_comm = json::number(stats, "llm.energy_breakdown_j.idle_during_communication").value_or(-1);
    const double idle_gaps = json::number(stats, "llm.energy_breakdown_j.idle_during_launch_gaps").value_or(-1);
    CHECK(nvlink > 0);
    CHECK(kernels > 0);
    CHECK(idle_comm > 0);  // the communication time is now counted, at the GPU's idle power
    CHECK(idle_gaps >= 0);
    CHECK(json::number(stats, "llm.energy_j").value_or(0) == Approx(kernels + nvlink + idle_comm + idle_gaps));
    // A single GPU has no collective and no NVLink energy.
    const CmdResult one = run_warpsim({"llm", "--model", tiny_model(), "--phase", "prefill", "--prompt", "64",
                                       "--out", dir / "out1", "--cache-dir", dir / "cache", "-q"});
    REQUIRE(one.exit_code == 0);
    const std::string stats1 = read_text(dir.path() / "out1" / "stats.json");
    CHECK(json::number(stats1, "llm.energy_breakdown_j.nvlink").value_or(-1) == 0);
    CHECK(json::number(stats1, "llm.energy_breakdown_j.idle_during_communication").value_or(-1) == 0);
  }

  SECTION("--plan prints each collective's algorithm and protocol from the config") {
    const CmdResult plan = run_warpsim({"llm", "--model", tiny_model(), "--phase", "decode", "--tp", "2", "--plan",
                                        "--gpu", "a100_sxm"});
    REQUIRE(plan.exit_code == 0);
    CHECK(contains(plan.out, "all_reduce      2 GPUs"));  // each collective says over how many GPUs it runs
    CHECK(contains(plan.out, "chosen ring/LL"));  // a decode step's all-reduce is a few KB: NCCL's LL protocol
  }

  SECTION("a decode step runs on a quarter of the GPU by default, said so, prefill on all of it; --subset and --set "
          "sim.subset change it") {
    CHECK(json::number(stats, "llm.sampling.subset_divisor").value_or(0) == 1);  // prefill
    CHECK_FALSE(contains(r.out, "subset (--subset"));
    const CmdResult decode = run_warpsim({"llm", "--model", tiny_model(), "--phase", "decode", "--out", dir / "out3",
                                          "--no-cache"});
    REQUIRE(decode.exit_code == 0);
    const std::string decode_stats = read_text(dir.path() / "out3" / "stats.json");
    CHECK(json::number(decode_stats, "llm.sampling.subset_divisor").value_or(0) == 4);
    CHECK(json::raw(decode_stats, "llm.sampling.exact") == "false");
    CHECK(contains(decode.out, "subset (--subset 4)"));
    // Each simulated kernel says so too, through the workload cache's round trip (kernels[0] is the embedding's
    // estimate).
    CHECK(json::string(decode_stats, "kernels[1].name").value_or("") != "");
    CHECK(json::number(decode_stats, "kernels[1].sampling.subset_divisor").value_or(0) == 4);
    CHECK(json::string(decode_stats, "kernels[1].sampling.method").value_or("") == "sms");
    // A GPU whose models reject a quarter of it (4 GPCs over 2 L2 partitions: one GPC left for two) runs on a half.
    const CmdResult four_gpcs = run_warpsim({"llm", "--model", tiny_model(), "--phase", "decode", "--set",
                                             "noc.gpcs=4", "--out", dir / "out4", "--no-cache", "-q"});
    REQUIRE(four_gpcs.exit_code == 0);
    CHECK(json::number(read_text(dir.path() / "out4" / "stats.json"), "llm.sampling.subset_divisor").value_or(0) == 2);
    for (const auto& [args, divisor] : {std::pair<std::vector<std::string>, int>{{"--subset", "1"}, 1},
                                        std::pair<std::vector<std::string>, int>{{"--set", "sim.subset=2"}, 2}}) {
      std::vector<std::string> cmd = {"llm", "--model", tiny_model(), "--phase", "decode", "--out", dir / "out3",
                                      "--no-cache", "-q"};
      cmd.insert(cmd.end(), args.begin(), args.end());
      const CmdResult other = run_warpsim(cmd);
      INFO(describe(cmd, other));
      REQUIRE(other.exit_code == 0);
      const std::string other_stats = read_text(dir.path() / "out3" / "stats.json");
      CHECK(json::number(other_stats, "llm.sampling.subset_divisor").value_or(0) == divisor);
    }
  }

  SECTION("--tp on a config without link bandwidth is one error naming the key") {
    const CmdResult bad = run_warpsim({"llm", "--model", tiny_model(), "--tp", "2", "--set", "node.link_bandwidth=0B/s",
                                       "--out", dir / "out2", "--no-cache"});
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "node.link_bandwidth"));
  }
}

TEST_CASE("llm command: data-parallel ranks multiply tokens/s, energy per token is the deployment's, and a step "
          "that does not fit in HBM says so", "[llm]") {
  TempDir dir;
  auto step = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> cmd = {"llm", "--phase", "decode", "--batch", "4", "--context", "256", "--out",
                                    dir / name, "--cache-dir", dir / "cache", "-q"};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    const CmdResult r = run_warpsim(cmd);
    INFO(describe(cmd, r));
    REQUIRE(r.exit_code == 0);
    return read_text(dir.path() / name / "stats.json");
  };
  auto number = [](const std::string& stats, const std::string& key) {
    const auto v = json::number(stats, key);
    INFO(key);
    REQUIRE(v.has_value());
    return *v;
  };
  SECTION("--ep 4 (--tp 1): four ranks of 4 sequences each, so about four times one GPU's tokens/s") {
    const std::string one = step("ep1", {"--model", tiny_moe_model()});
    const std::string four = step("ep4", {"--model", tiny_moe_model(), "--ep", "4"});
    CHECK(number(four, "llm.scenario.dp") == 4);
    const double ratio = number(four, "llm.tokens_per_s") / number(one, "llm.tokens_per_s");
    CHECK(ratio > 3.0);  // all-to-alls and 4x the routed tokens per expert GEMM make the step a little longer
    CHECK(ratio < 4.0);
    CHECK(number(four, "llm.tokens_per_s_per_gpu") == Approx(number(four, "llm.tokens_per_s") / 4));
    // Per token, a rank spends about what one GPU alone does: a quarter of the experts, each with 4x the tokens.
    const double energy_ratio = number(four, "llm.energy_per_token_j") / number(one, "llm.energy_per_token_j");
    CHECK(energy_ratio > 0.5);
    CHECK(energy_ratio < 1.5);
  }
  SECTION("--tp 2: the energy per token counts both GPUs, so it does not fall below one GPU's") {
    const std::string one = step("tp1", {"--model", tiny_model()});
    const std::string two = step("tp2", {"--model", tiny_model(), "--tp", "2"});
    CHECK(number(two, "llm.energy_j_all_gpus") == Approx(2 * number(two, "llm.energy_j")));
    // The tiny model's kernels are latency-bound: at tp 2 each GPU takes about as long per kernel as one GPU alone
    // and idles through the all-reduces, so two GPUs spend more than twice one's energy per token (2.9x here). One
    // GPU's share alone (energy_j / tokens, as before) would be half of that.
    const double energy_ratio = number(two, "llm.energy_per_token_j") / number(one, "llm.energy_per_token_j");
    CHECK(energy_ratio > 2.0);
    CHECK(energy_ratio < 4.0);
  }
  SECTION("weights and KV cache beyond hbm.capacity: fits_in_hbm false and the summary says so") {
    const std::string fits = step("fits", {"--model", tiny_model()});
    CHECK(json::raw(fits, "llm.fits_in_hbm") == "true");
    const double held = number(fits, "llm.weights_held_bytes_per_gpu") + number(fits, "llm.kv_cache_bytes_per_gpu");
    std::vector<std::string> cmd = {"llm", "--model", tiny_model(), "--phase", "decode", "--batch", "4", "--context",
                                    "256", "--out", dir / "small", "--cache-dir", dir / "cache",
                                    "--set", fmt::format("hbm.capacity={}B", static_cast<std::uint64_t>(held / 2))};
    const CmdResult small = run_warpsim(cmd);
    INFO(describe(cmd, small));
    REQUIRE(small.exit_code == 0);
    CHECK(json::raw(read_text(dir.path() / "small" / "stats.json"), "llm.fits_in_hbm") == "false");
    CHECK(contains(small.out, "DOES NOT FIT"));
  }
}

TEST_CASE("validate: allreduce cases run through the collective model", "[llm][collective]") {
  TempDir dir;
  const std::string reference = dir / "ar.yaml";
  write_text(reference, "- id: ar.big\n  gpu: a100_sxm\n  workload: {kind: allreduce, bytes: 402653184, gpus: 4}\n"
                        "  metric: time_us\n  measured: 2890.9\n  source: test\n"
                        "- id: ar.small\n  gpu: a100_sxm\n  workload: {kind: allreduce, bytes: 196608, gpus: 4}\n"
                        "  metric: time_us\n  measured: 26.04\n  source: test\n"
                        "- id: ar.bad\n  gpu: a100_sxm\n  workload: {kind: allreduce, bytes: 1024}\n"
                        "  metric: time_us\n  measured: 10\n  source: test\n");
  const CmdResult r = run_warpsim({"validate", "--reference", reference, "--json", dir / "v.json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir / "v.json");
  CHECK(json::string(j, "cases[0].status") == "ok");
  CHECK(json::string(j, "cases[1].status") == "ok");
  const double big = json::number(j, "cases[0].simulated").value_or(0);
  const double small = json::number(j, "cases[1].simulated").value_or(0);
  // 384 MiB over A100 NVLink (300 GB/s each way): milliseconds; 192 KiB: its latency, microseconds.
  CHECK(big > 1000);
  CHECK(small > 1);
  CHECK(small < 100);
  CHECK(json::string(j, "cases[2].status") == "failed");
  CHECK(contains(json::string(j, "cases[2].reason").value_or(""), "gpus"));
}

TEST_CASE("llm validate: cases of kind llm are simulated, quantized weights and unknown models are unsupported", "[llm]") {
  TempDir dir;
  const std::string reference = dir / "llm.yaml";
  write_text(reference, "- id: tiny.decode\n  gpu: h100_sxm\n  workload: {kind: llm, model: " + tiny_model() +
                            ", batch: 1, input_len: 64, output_len: 64, tp: 1, dtype: fp16}\n"
                            "  metric: tokens_per_s\n  measured: 1000\n  source: test\n"
                            "- id: tiny.int8\n  gpu: h100_sxm\n  workload: {kind: llm, model: " + tiny_model() +
                            ", batch: 1, input_len: 64, dtype: int8}\n  metric: tokens_per_s\n  measured: 1000\n"
                            "  source: test\n"
                            "- id: unknown.model\n  gpu: h100_sxm\n  workload: {kind: llm, model: gpt-j-6b, batch: 1, "
                            "input_len: 64}\n  metric: ttft_ms\n  measured: 10\n  source: test\n");
  const CmdResult r = run_command({"/usr/bin/env", "WARPSIM_CACHE_DIR=" + dir / "cache", warpsim_binary(), "validate",
                                   "--reference", reference, "--json", dir / "v.json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir / "v.json");
  CHECK(json::string(j, "cases[0].status") == "ok");
  CHECK(json::number(j, "cases[0].simulated").value_or(0) > 0);
  CHECK(json::string(j, "cases[1].status") == "unsupported");
  CHECK(contains(json::string(j, "cases[1].reason").value_or(""), "int8"));
  CHECK(json::string(j, "cases[2].status") == "unsupported");
  CHECK(contains(json::string(j, "cases[2].reason").value_or(""), "gpt-j-6b"));
}
