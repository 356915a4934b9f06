#include "app/llm/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "sim/core/error.h"
#include "traces/synth/attention.h"

namespace warpsim::llm {
namespace {

constexpr double kActivationBytes = 2;  // bf16 activations, norms' and attention's tensors (the KV cache: --kv-dtype)

std::string num(std::uint64_t v) { return std::to_string(v); }

struct Builder {
  std::vector<PlanEntry>& out;
  int layer = -1;

  PlanEntry& add(PlanEntry e) {
    e.layer = layer;
    out.push_back(std::move(e));
    return out.back();
  }

  // C[m,n] = A[m,k] B[k,n]: A and B in the GEMM's type, C in bf16 (fp8 and fp4 GEMMs write bf16 too). A quantized
  // GEMM takes its activations quantized first, one launch per GEMM call: fp8 (W8A8 with a static per-tensor
  // activation scale, as vLLM's Fp8LinearMethod runs fp8 checkpoints) by static_scaled_fp8_quant, a converting copy
  // of the m x k input in 16-byte vectors; fp4 (NVFP4 W4A4, vLLM's ModelOpt NVFP4 layers) by scaled_fp4_quant.
  void gemm(const std::string& name, std::uint64_t m, std::uint64_t n, std::uint64_t k, const std::string& dtype,
            bool bias = false, std::uint64_t count = 1) {
    if (dtype == "fp4") quantize_fp4(name + ".input_quant", m, k, count);
    if (dtype == "fp8") {
      PlanEntry& q = convert(name + ".input_quant", m * k, "fp8",
                             fmt::format("rows={} cols={} bf16 -> fp8 (static_scaled_fp8_quant, simulated as a copy)", m, k));
      q.workload.synth_keys["vec"] = "8";
      q.workload.synth_keys["elements_per_thread"] = "8";
      q.count = count;
    }
    PlanEntry e;
    e.name = name;
    e.workload.synthesizer = "gemm";
    e.workload.synth_keys = {{"m", num(m)}, {"n", num(n)}, {"k", num(k)}, {"dtype", dtype}};
    if (bias) e.workload.synth_keys["epilogue"] = "bias";
    e.shape = fmt::format("m={} n={} k={}{}", m, n, k, bias ? " +bias" : "");
    e.count = count;
    const double in = element_bytes(dtype);
    e.flops = 2.0 * m * n * k;
    e.bytes = in * (static_cast<double>(m) * k + static_cast<double>(k) * n) + kActivationBytes * m * n +
              (bias ? kActivationBytes * n : 0.0);
    e.compute = "tensor";
    e.tensor_dtype = dtype;
    add(std::move(e));
  }

  void quantize_fp4(const std::string& name, std::uint64_t rows, std::uint64_t cols, std::uint64_t count) {
    PlanEntry e;
    e.name = name;
    e.workload.synthesizer = "quantize";
    e.workload.synth_keys = {{"rows", num(rows)}, {"cols", num(cols)}, {"dtype", "bf16"}, {"format", "nvfp4"}};
    e.shape = fmt::format("rows={} cols={} bf16 -> nvfp4 (scaled_fp4_quant)", rows, cols);
    e.count = count;
    e.flops = 2.0 * rows * cols;
    e.bytes = (kActivationBytes + element_bytes("fp4")) * rows * cols;
    add(std::move(e));
  }

  // vLLM's RMSNorm kernels: rms_norm (the first layer's input norm, whose residual is the input itself) or, with
  // `residual_add`, fused_add_rms_norm: residual += x in place, x = rmsnorm(residual) * gamma (every later norm:
  // the residual add of the block before it is fused in).
  void rmsnorm(const std::string& name, std::uint64_t rows, std::uint64_t cols, bool residual_add) {
    PlanEntry e;
    e.name = residual_add ? "add+" + name : name;
    e.workload.synthesizer = "rmsnorm";
    e.workload.synth_keys = {{"rows", num(rows)}, {"cols", num(cols)}, {"dtype", "bf16"}, {"kernel", "vllm"},
                             {"residual", residual_add ? "true" : "false"}};
    e.shape = fmt::format("rows={} cols={}{}", rows, cols, residual_add ? " (fused_add_rms_norm)" : "");
    e.flops = (residual_add ? 5.0 : 4.0) * rows * cols;  // (add,) square, sum, scale, gamma
    // x in, out; fused: x and residual in, residual and x out (the sum's re-read in pass 2 is not counted)
    e.bytes = kActivationBytes * ((residual_add ? 4.0 : 2.0) * rows * cols + cols);
    add(std::move(e));
  }

  // op add: two inputs, one output. silu_and_mul (vLLM's act_and_mul kernel) has the same traffic (gate and up
  // in, one out) and is simulated as elementwise mul: SiLU's exponential is not counted.
  void elementwise(const std::string& name, const std::string& op, std::uint64_t elements) {
    PlanEntry e;
    e.name = name;
    e.workload.synthesizer = "elementwise";
    e.workload.synth_keys = {{"op", op}, {"elements", num(elements)}, {"dtype", "bf16"}};
    e.shape = fmt::format("{} elements={}", op, elements);
    e.flops = static_cast<double>(elements);
    e.bytes = 3.0 * kActivationBytes * elements;
    add(std::move(e));
  }

  // A converting copy of bf16 elements into `out_dtype` (elementwise op=copy); `shape` says what it stands for.
  PlanEntry& convert(const std::string& name, std::uint64_t elements, const std::string& out_dtype, std::string shape) {
    PlanEntry& e = add({});
    e.name = name;
    e.workload.synthesizer = "elementwise";
    e.workload.synth_keys = {{"op", "copy"}, {"elements", num(elements)}, {"dtype", "bf16"}, {"out_dtype", out_dtype}};
    e.shape = std::move(shape);
    e.bytes = (kActivationBytes + element_bytes(out_dtype)) * elements;
    return e;
  }

  void estimate(const std::string& name, const std::string& shape, double flops, double bytes) {
    PlanEntry e;
    e.name = name;
    e.kind = EntryKind::estimate;
    e.shape = shape;
    e.flops = flops;
    e.bytes = bytes;
    add(std::move(e));
  }

  void collective(const std::string& name, const std::string& op, double bytes, std::uint64_t gpus) {
    PlanEntry e;
    e.name = name;
    e.kind = EntryKind::communication;
    e.collective = op;
    e.message_bytes = bytes;
    e.gpus = gpus;
    e.shape = fmt::format("{} {:.0f} bytes over {} GPUs", op, bytes, gpus);
    e.bytes = bytes;
    add(std::move(e));
  }
};

void check(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

}  // namespace

std::uint64_t context_tokens(const Scenario& s) { return s.context ? s.context : s.prompt; }

double element_bytes(const std::string& dtype) {
  if (dtype == "fp4") return 0.5 + 1.0 / 16;  // e2m1, and its block's e4m3 scale (one per 16 elements)
  return dtype == "fp8" ? 1.0 : dtype == "fp32" ? 4.0 : 2.0;
}

double kv_cache_bytes(const LlmModel& m, const Scenario& s) {
  const double hkv = static_cast<double>(std::max<std::uint64_t>(1, m.kv_heads / s.tp));
  return 2.0 * m.layers * s.batch * context_tokens(s) * hkv * m.head_dim * element_bytes(s.kv_dtype);
}

std::uint64_t step_tokens(const Scenario& s) { return s.phase == "prefill" ? s.batch * s.prompt : s.batch; }

std::string prefill_attention_for(const Config& config) {
  return synth::attn::fa3_supported(config) ? "fa3" : "fa2";
}

ExpertLoad expert_load(std::uint64_t routes, std::uint64_t tokens, std::uint64_t experts, std::uint64_t ep,
                       double skew) {
  ExpertLoad load;
  if (routes == 0 || experts == 0) return load;
  if (skew == 0.0) {
    // Of the routes, min(experts, routes) experts get ceil(routes / that) tokens each; this GPU holds its share
    // of them and its share of the routes.
    const std::uint64_t active = std::min(experts, routes), per_expert = (routes + active - 1) / active;
    load.gemms.push_back({per_expert, (active + ep - 1) / ep});
    load.routes = (routes + ep - 1) / ep;
    return load;
  }
  // Zipf shares, water-filled under the cap of one route per token: the capped experts take `tokens` each and the
  // rest is shared again among the others, until no share exceeds the cap (routes <= tokens x experts: it ends).
  std::vector<double> share(experts, 0.0);
  std::vector<bool> capped(experts, false);
  for (bool again = true; again;) {
    again = false;
    double left = static_cast<double>(routes), weights = 0.0;
    for (std::uint64_t i = 0; i < experts; ++i) {
      if (capped[i]) left -= static_cast<double>(tokens);
      else weights += std::pow(static_cast<double>(i + 1), -skew);
    }
    for (std::uint64_t i = 0; i < experts; ++i) {
      if (capped[i]) continue;
      share[i] = left * std::pow(static_cast<double>(i + 1), -skew) / weights;
      if (share[i] > static_cast<double>(tokens)) {
        capped[i] = again = true;
        share[i] = static_cast<double>(tokens);
      }
    }
  }
  // Whole tokens: the floors, then the routes left over one each to the largest remainders (the lower rank first
  // on ties), never above the cap.
  std::vector<std::uint64_t> count(experts);
  std::uint64_t given = 0;
  for (std::uint64_t i = 0; i < experts; ++i) given += count[i] = std::min<std::uint64_t>(tokens, static_cast<std::uint64_t>(share[i]));
  std::vector<std::uint64_t> order(experts);
  for (std::uint64_t i = 0; i < experts; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
    return share[a] - std::floor(share[a]) > share[b] - std::floor(share[b]);
  });
  for (std::size_t pass = 0; given < routes && pass < 2; ++pass)
    for (std::uint64_t i : order)
      if (given < routes && count[i] < tokens) {
        ++count[i];
        ++given;
      }
  // The experts ranked by load are dealt round-robin to the expert-parallel GPUs (the placement that spreads hot
  // experts best when experts stay whole); the step waits for the busiest GPU, the one holding the hottest expert.
  std::map<std::uint64_t, std::uint64_t, std::greater<>> by_tokens;
  for (std::uint64_t i = 0; i < experts; i += ep)
    if (count[i] > 0) {
      ++by_tokens[count[i]];
      load.routes += count[i];
    }
  for (const auto& [m, n] : by_tokens) load.gemms.push_back({m, n});
  return load;
}

std::vector<PlanEntry> build_plan(const LlmModel& m, const Scenario& s) {
  check(s.phase == "prefill" || s.phase == "decode", fmt::format("--phase: expected prefill or decode, got '{}'", s.phase));
  check(s.dtype == "bf16" || s.dtype == "fp8" || s.dtype == "fp4",
        fmt::format("--dtype: expected bf16, fp8 or fp4, got '{}'", s.dtype));
  check(s.kv_dtype == "bf16" || s.kv_dtype == "fp8",
        fmt::format("--kv-dtype: expected bf16 or fp8 (e4m3), got '{}'", s.kv_dtype));
  check(s.batch >= 1, "--batch: expected at least 1 sequence");
  check(s.prompt >= 1, "--prompt: expected at least 1 token");
  check(s.tp >= 1, "--tp: expected at least 1 GPU");
  check(s.ep >= 1, "--ep: expected at least 1 GPU");
  check(std::isfinite(s.moe_skew) && s.moe_skew >= 0.0,
        fmt::format("--moe-skew: expected a Zipf exponent >= 0 (0: even routing), got {}", s.moe_skew));
  check(s.moe_skew == 0.0 || m.moe(),
        fmt::format("--moe-skew {}: routing skew needs a mixture-of-experts model; {} has no experts ({})", s.moe_skew,
                    m.name, m.file));
  if (s.ep > 1) {
    check(m.moe(), fmt::format("--ep {}: expert parallelism needs a mixture-of-experts model; {} has no experts ({})",
                               s.ep, m.name, m.file));
    check(m.experts % s.ep == 0, fmt::format("--ep {}: must divide the model's {} experts ({})", s.ep, m.experts, m.file));
    check(s.ep == s.tp || s.tp == 1,
          fmt::format("--ep {} with --tp {}: built are experts over the tensor-parallel group (--ep = --tp) and over "
                      "data-parallel attention ranks (--tp 1)", s.ep, s.tp));
  }
  const std::uint64_t context = context_tokens(s);
  if (s.phase == "prefill")
    check(context >= s.prompt, fmt::format("--context {}: a prefill attends to its {} prompt tokens and any cached "
                                           "prefix before them: expected >= --prompt", context, s.prompt));
  check(m.heads % s.tp == 0, fmt::format("--tp {}: must divide the model's num_attention_heads {} ({})", s.tp, m.heads, m.file));
  check(m.intermediate % s.tp == 0,
        fmt::format("--tp {}: must divide the model's intermediate_size {} ({})", s.tp, m.intermediate, m.file));
  // KV heads: split across the GPUs, or replicated when there are fewer than GPUs (vLLM).
  check(m.kv_heads < s.tp || m.kv_heads % s.tp == 0,
        fmt::format("--tp {}: must divide the model's num_key_value_heads {} or exceed it ({})", s.tp, m.kv_heads, m.file));

  const std::uint64_t T = step_tokens(s), h = m.hidden, hd = m.head_dim;
  const std::uint64_t hq = m.heads / s.tp, hkv = std::max<std::uint64_t>(1, m.kv_heads / s.tp);
  const std::uint64_t inter = m.intermediate / s.tp, vocab = (m.vocab + s.tp - 1) / s.tp;
  const double activation_bytes = kActivationBytes * T * h;

  std::vector<PlanEntry> plan;
  Builder b{plan};
  b.estimate("embedding", fmt::format("tokens={} hidden={}", T, h), 0.0, 2.0 * activation_bytes);
  for (std::uint64_t layer = 0; layer < m.layers; ++layer) {
    b.layer = static_cast<int>(layer);
    b.rmsnorm("input_layernorm", T, h, layer > 0);
    b.gemm("qkv_proj", T, (hq + 2 * hkv) * hd, h, s.dtype, m.qkv_bias);
    {
      PlanEntry& e = b.add({});
      e.name = "rotary";
      e.workload.synthesizer = "rotary";
      // The synthesizer rotates `heads` heads of q and as many of k; grouped-query k has fewer: half the heads of
      // q and k together (rounded up) rotates the same number of pairs.
      const std::uint64_t rotated = (hq + hkv + 1) / 2;
      e.workload.synth_keys = {{"tokens", num(T)}, {"heads", num(rotated)}, {"head_dim", num(hd)}, {"dtype", "bf16"}};
      e.shape = fmt::format("tokens={} q_heads={} k_heads={} head_dim={}", T, hq, hkv, hd);
      e.flops = 3.0 * T * (hq + hkv) * hd;
      e.bytes = 2.0 * kActivationBytes * T * (hq + hkv) * hd;
    }
    {
      // vLLM's reshape_and_cache_flash: the step's new K and V rows written into their cache slots (converted to
      // fp8 with the layer's scale for an fp8 cache), simulated as a converting copy of both: contiguous rows of
      // kv_heads x head_dim, one per token, as the flash layout stores them.
      const std::uint64_t elements = 2 * T * hkv * hd;
      PlanEntry& e = b.convert("reshape_and_cache", elements, s.kv_dtype,
                               fmt::format("tokens={} kv_heads={} head_dim={} k+v bf16 -> {} (simulated as a copy)", T,
                                           hkv, hd, s.kv_dtype));
      e.workload.synth_keys["vec"] = "8";
      e.workload.synth_keys["elements_per_thread"] = "8";
      e.bytes += 8.0 * T;  // the slot mapping
    }
    const bool prefill = s.phase == "prefill";
    // An fp8 cache is read as fp8 by every attention kernel: the decode kernel and an fa2 prefill convert K/V to
    // bf16 in shared memory; the fa3 prefill is FlashAttention-3's fp8 forward, whose warpgroup MMAs take Q in fp8
    // too: vLLM quantizes the query with the layer's q scale first (scaled_fp8_quant, a converting copy).
    const bool fp8_read = s.kv_dtype == "fp8";
    const bool fp8_query = fp8_read && prefill && s.prefill_attention == "fa3";
    if (fp8_query)
      b.convert("quantize_query", T * hq * hd, "fp8",
                fmt::format("tokens={} q_heads={} head_dim={} bf16 -> fp8 (scaled_fp8_quant, simulated as a copy)", T, hq,
                            hd));
    {
      const std::uint64_t sq = prefill ? s.prompt : 1;
      PlanEntry& e = b.add({});
      e.name = "attention";
      e.workload.synthesizer = "attention";
      e.workload.synth_keys = {{"batch", num(s.batch)}, {"heads", num(hq)}, {"kv_heads", num(hkv)},
                               {"seqlen_q", num(sq)}, {"seqlen_kv", num(context)}, {"head_dim", num(hd)},
                               {"dtype", "bf16"}, {"variant", prefill ? s.prefill_attention : "decode"},
                               {"causal", prefill ? "true" : "false"}};
      if (fp8_read) e.workload.synth_keys["kv_dtype"] = "fp8";
      e.shape = fmt::format("{} batch={} heads={} kv_heads={} q={} kv={} head_dim={}{}{}",
                            prefill ? s.prefill_attention : "decode paged",
                            s.batch, hq, hkv, sq, context, hd, prefill ? " causal" : "",
                            fp8_query ? " q k v fp8" : fp8_read ? " kv fp8" : "");
      // Causal, aligned bottom right: query i sees context - sq + i + 1 keys, (context - (sq - 1) / 2) on average.
      const double keys_per_query = prefill ? static_cast<double>(context) - (sq - 1) / 2.0 : static_cast<double>(context);
      e.flops = 4.0 * s.batch * hq * hd * sq * keys_per_query;
      const double q_bytes = fp8_query ? element_bytes("fp8") : kActivationBytes;
      e.bytes = s.batch * ((q_bytes + kActivationBytes) * sq * hq * hd +
                           (fp8_read ? element_bytes("fp8") : kActivationBytes) * 2.0 * context * hkv * hd);
      e.compute = "tensor";
      e.tensor_dtype = fp8_query ? "fp8" : "bf16";
    }
    b.gemm("o_proj", T, h, hq * hd, s.dtype);
    if (s.tp > 1) b.collective("attention_all_reduce", "all_reduce", activation_bytes, s.tp);
    b.rmsnorm("post_attention_layernorm", T, h, true);
    if (!m.moe()) {
      b.gemm("gate_up_proj", T, 2 * inter, h, s.dtype);
      b.elementwise("silu_and_mul", "mul", T * inter);
      b.gemm("down_proj", T, h, inter, s.dtype);
    } else {
      const std::uint64_t E = m.experts, k = m.experts_per_token;
      b.gemm("router", T, E, h, "bf16");  // the gate stays unquantized (vLLM ReplicatedLinear, quant_config=None)
      b.estimate("topk_softmax", fmt::format("tokens={} experts={} top={}", T, E, k), 5.0 * T * E,
                 kActivationBytes * T * E + 8.0 * T * k);
      // The routes of every token meeting in this MoE (the data-parallel ranks' together) spread over the experts
      // (expert_load: evenly, or Zipf-skewed by --moe-skew); this GPU runs its experts, one GEMM per expert (vLLM's
      // fused_moe runs them as one grouped kernel; simulated here as per-expert calls, those of equal tokens as one
      // entry). Under expert parallelism each GPU holds whole experts (intermediate unsplit).
      const std::uint64_t routes = T * s.dp() * k;
      const ExpertLoad load = expert_load(routes, T * s.dp(), E, s.ep, s.moe_skew);
      const std::uint64_t expert_inter = s.ep > 1 ? m.intermediate : inter;
      // The routed copies of this GPU's tokens (bf16 hidden states), sent to their experts' GPUs and back; the
      // busiest GPU receives its experts' routes, more than it sends when the routing is skewed.
      const double routed_bytes = kActivationBytes * static_cast<double>(std::max(T * k, load.routes)) * h;
      if (s.dp() > 1) b.collective("moe_dispatch_all_to_all", "all_to_all", routed_bytes, s.ep);
      // Entries of one name per layer: a skewed load's groups of equal tokens are named by their tokens.
      auto expert_gemm = [&](const std::string& name, std::uint64_t tokens, std::uint64_t n, std::uint64_t kk,
                             std::uint64_t count) {
        b.gemm(load.gemms.size() > 1 || s.moe_skew > 0.0 ? fmt::format("{}.{}tok", name, tokens) : name, tokens, n,
               kk, s.dtype, false, count);
      };
      for (const auto& [tokens, count] : load.gemms) expert_gemm("expert_gate_up_proj", tokens, 2 * expert_inter, h, count);
      b.elementwise("silu_and_mul", "mul", load.routes * expert_inter);  // this GPU's routes
      for (const auto& [tokens, count] : load.gemms) expert_gemm("expert_down_proj", tokens, h, expert_inter, count);
      if (s.dp() > 1) b.collective("moe_combine_all_to_all", "all_to_all", routed_bytes, s.ep);
      // The weighted sum of each token's expert outputs: over the GPU's own experts' routes when the tensor-parallel
      // group splits the experts (the all-reduce adds the rest), else over its tokens' routes.
      const std::uint64_t routed = s.ep > 1 && s.dp() == 1 ? load.routes : T * k;
      b.estimate("moe_combine", fmt::format("tokens={} top={} hidden={}", T, k, h), static_cast<double>(routed) * h,
                 kActivationBytes * (static_cast<double>(routed) * h + static_cast<double>(T) * h));
    }
    if (s.tp > 1) b.collective("mlp_all_reduce", "all_reduce", activation_bytes, s.tp);
    // The block's residual add is fused into the next norm: the next layer's input_layernorm, or the final norm.
  }
  b.layer = -1;
  b.rmsnorm("final_norm", T, h, true);
  // Logits of the last token of each sequence only (vLLM's logits processor selects them before lm_head).
  b.gemm("logits", s.batch, vocab, h, "bf16");
  if (s.tp > 1) b.collective("logits_all_gather", "all_gather", kActivationBytes * s.batch * m.vocab, s.tp);
  // Sampling, greedy (temperature 0) as vLLM's sampler runs it: the logits converted to fp32 (logits.float(): a
  // converting elementwise copy, bf16 in and fp32 out), then an argmax over the vocabulary per sequence (PyTorch's reduce_kernel).
  const std::uint64_t logits = s.batch * m.vocab;
  b.convert("logits_to_fp32", logits, "fp32", fmt::format("copy elements={} bf16 -> fp32", logits));
  PlanEntry& argmax = b.add({});
  argmax.name = "greedy_sample";
  argmax.workload.synthesizer = "reduction";
  argmax.workload.synth_keys = {{"op", "argmax"}, {"outputs", num(s.batch)}, {"inputs", num(m.vocab)}, {"dtype", "fp32"}};
  argmax.shape = fmt::format("argmax batch={} vocab={}", s.batch, m.vocab);
  argmax.flops = static_cast<double>(logits);
  argmax.bytes = 4.0 * logits + 8.0 * s.batch;
  return plan;
}

std::string plan_text(const LlmModel& m, const Scenario& s, const std::vector<PlanEntry>& plan) {
  std::string o = fmt::format("plan: {} {} batch {} prompt {} context {} dtype {} kv-dtype {} tp {}{}{}: one step on one GPU\n",
                              m.name, s.phase, s.batch, s.prompt, context_tokens(s), s.dtype, s.kv_dtype, s.tp,
                              s.ep > 1 ? fmt::format(" ep {} (dp {})", s.ep, s.dp()) : std::string(),
                              s.moe_skew > 0 ? fmt::format(" moe-skew {:g} (the busiest GPU)", s.moe_skew) : std::string());
  o += fmt::format("  {:<28} {:<10} {:<28} {:<6} {}\n", "kernel", "layer", "synthesizer / estimate", "count", "shape");
  // The layers are alike but for the first one's unfused input norm: each layer kernel is printed once, with the
  // layers that run it.
  struct Span { int first = -1, last = -1, layers = 0; };
  std::map<std::string, Span> spans;
  for (const PlanEntry& e : plan) {
    if (e.layer < 0) continue;
    Span& sp = spans[e.name];
    if (sp.first < 0) sp.first = e.layer;
    sp.last = e.layer;
    ++sp.layers;
  }
  std::size_t calls = 0;
  for (const PlanEntry& e : plan) {
    calls += e.count;
    std::string layers = "-";
    if (e.layer >= 0) {
      const Span& sp = spans.at(e.name);
      if (e.layer != sp.first) continue;
      layers = sp.layers == 1 ? std::to_string(sp.first) : fmt::format("{}-{} (x{})", sp.first, sp.last, sp.layers);
    }
    const std::string how = e.kind == EntryKind::simulated ? e.workload.synthesizer
                            : e.kind == EntryKind::estimate ? "estimate (roofline)"
                                                            : "estimate (communication)";
    o += fmt::format("  {:<28} {:<10} {:<28} {:<6} {}\n", e.name, layers, how, e.count, e.shape);
  }
  o += fmt::format("  {} kernel calls per step\n", calls);
  return o;
}

}  // namespace warpsim::llm
