// The kernel sequence one GPU runs for one inference step of an LLM, as vLLM runs it (no fusions beyond vLLM's
// own silu_and_mul and GEMM bias epilogues): per layer RMSNorm, QKV GEMM (+bias), rotary, attention (prefill:
// FlashAttention-2 causal; decode: split-KV over a paged cache), O GEMM, [all-reduce], residual add, RMSNorm,
// gate-up GEMM, SiLU-and-mul, down GEMM (MoE: router GEMM, top-k, per-expert GEMMs, combine), [all-reduce],
// residual add; then the final RMSNorm, the logits GEMM ([all-gather]) and sampling.
//
// Each entry is either a synthesizer call (a WorkloadSpec, simulated), or an estimate (no synthesizer for that
// kernel yet: its roofline time, marked "estimate" in every output), or a communication estimate (tensor
// parallelism, from the config's node section). Every entry carries its roofline work (FLOPs and bytes), so that
// the results can set the simulated time beside the roofline time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "app/llm/model.h"
#include "app/run_one.h"

namespace warpsim::llm {

struct Scenario {
  std::string phase = "decode";  // prefill | decode
  std::uint64_t batch = 1;       // sequences
  std::uint64_t prompt = 128;    // prefill: prompt tokens per sequence
  std::uint64_t context = 0;     // tokens in the KV cache the step attends to (with the new ones); 0: = prompt
  std::string dtype = "bf16";    // GEMM inputs: bf16, fp8 (W8A8, e4m3; sm_90+) or fp4 (NVFP4 W4A4; GPUs with fp4
                                 // tensor cores), each quantized GEMM preceded by the quantization of its input
                                 // (static_scaled_fp8_quant, scaled_fp4_quant). Attention, norms and the
                                 // activations stay bf16, the logits GEMM bf16 (vLLM keeps lm_head unquantized)
  // The KV cache: bf16, or fp8 (e4m3, vLLM's --kv-cache-dtype fp8): written by reshape_and_cache in fp8, read by
  // the attention kernels, which dequantize it through shared memory (decode; an fa2 prefill; fa3 reads bf16: not
  // built).
  std::string kv_dtype = "bf16";
  std::uint64_t tp = 1;          // tensor-parallel GPUs: heads, KV heads, intermediate and vocab split across them
  // Expert parallelism (MoE): the experts split whole across `ep` GPUs (vLLM --enable-expert-parallel). ep == tp:
  // over the tensor-parallel group, whose GPUs hold the same tokens (the MoE output joins the all-reduce); tp == 1,
  // ep > 1: data-parallel attention, each GPU a rank of its own `batch` sequences, tokens sent to their experts' GPUs
  // and back by all-to-all (dispatch, combine).
  std::uint64_t ep = 1;
  // How unevenly the router spreads the routes over the experts (MoE): 0, every expert reached gets the same
  // tokens; s > 0, the experts' loads follow a Zipf law, the i-th most loaded getting routes x (i+1)^-s / sum_j
  // (j+1)^-s (at most one route per token: a token's top-k experts differ); s = 1 over 8 experts puts the hottest
  // at 2.9x the mean. The exponent is the user's: no router statistics are shipped.
  double moe_skew = 0.0;
  std::uint64_t dp() const { return ep > tp ? ep / tp : 1; }  // data-parallel attention ranks
  std::uint64_t gpus() const { return tp * dp(); }
  // The prefill's attention kernel: fa2, or fa3 on a GPU that has its TMA and warpgroup MMA (vLLM's flash-attention
  // backend runs FlashAttention-3 on Hopper): prefill_attention_for(config).
  std::string prefill_attention = "fa2";
};

// The attention variant vLLM's flash-attention backend runs a prefill with on this GPU: fa3 where
// synth::attn::fa3_supported(config), else fa2.
std::string prefill_attention_for(const Config& config);

enum class EntryKind { simulated, estimate, communication };

struct PlanEntry {
  std::string name;          // "qkv_proj", "attention", ...
  int layer = -1;            // -1: before or after the layers
  EntryKind kind = EntryKind::simulated;
  WorkloadSpec workload;     // simulated: the synthesizer and its keys
  std::string shape;         // in words, e.g. "m=1 n=6144 k=4096"
  std::uint64_t count = 1;   // identical calls in a row (per-expert GEMMs)
  // Roofline work of one call: FLOPs on `compute` ("tensor" at the GEMM data type, or "alu": fp32 lanes) and
  // bytes to and from HBM (each operand once).
  double flops = 0.0, bytes = 0.0;
  std::string compute = "alu";
  std::string tensor_dtype;  // for compute == "tensor": the sm.tensor.flops_per_cycle key (bf16, fp8, fp4)
  // Communication: the collective, the bytes each GPU contributes and the GPUs taking part.
  std::string collective;    // "all_reduce" | "all_gather" | "all_to_all"
  double message_bytes = 0.0;
  std::uint64_t gpus = 1;
};

// The tokens each of this GPU's experts gets (Scenario::moe_skew): `routes` routes of `tokens` tokens over
// `experts` experts, dealt whole to `ep` GPUs; the busiest GPU's experts as (tokens, experts with that many) groups,
// most tokens first, and its routes.
struct ExpertLoad {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> gemms;
  std::uint64_t routes = 0;
};
ExpertLoad expert_load(std::uint64_t routes, std::uint64_t tokens, std::uint64_t experts, std::uint64_t ep, double skew);

// Checks the scenario against the model (phase, sizes, tp dividing heads and intermediate) and expands it.
// Throws InputError naming the option.
std::vector<PlanEntry> build_plan(const LlmModel& model, const Scenario& scenario);

// The tokens the step attends to: --context, or the prompt when 0.
std::uint64_t context_tokens(const Scenario& scenario);

// Bytes of one element of a scenario data type (--dtype, --kv-dtype) or a conversion's output: bf16 2, fp8 1, fp32 4,
// fp4 0.5625 (its e4m3 scale per 16 elements included).
double element_bytes(const std::string& dtype);
// Bytes of the KV cache one GPU holds for the step's sequences: K and V of every layer, batch x context tokens, its
// share of the KV heads (replicated when tp exceeds them).
double kv_cache_bytes(const LlmModel& model, const Scenario& scenario);

// Tokens the step processes (prefill: batch x prompt; decode: batch) and tokens it produces (batch).
std::uint64_t step_tokens(const Scenario& scenario);

// The plan as a table (layers collapsed: the entries of one layer, marked with the layer range).
std::string plan_text(const LlmModel& model, const Scenario& scenario, const std::vector<PlanEntry>& plan);

}  // namespace warpsim::llm
