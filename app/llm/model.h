// LLM descriptions for `warpsim llm`: the shape of a decoder-only transformer, read from a Hugging Face
// config.json or from a shipped preset (configs/llm/<name>.yaml, written with the same HF keys, each value with
// its source). `--model NAME` is a preset; anything with a path separator or ending .json/.yaml is a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpsim::llm {

struct LlmModel {
  std::string name;    // preset name or file stem
  std::string file;    // where it was read
  std::string model_type;  // HF model_type ("llama", "mixtral", "qwen2", ...), "" when not given
  std::uint64_t hidden = 0;         // hidden_size
  std::uint64_t layers = 0;         // num_hidden_layers
  std::uint64_t heads = 0;          // num_attention_heads
  std::uint64_t kv_heads = 0;       // num_key_value_heads (HF default: = num_attention_heads)
  std::uint64_t head_dim = 0;       // head_dim (HF default: hidden_size / num_attention_heads)
  std::uint64_t intermediate = 0;   // intermediate_size (per expert for MoE)
  std::uint64_t experts = 0;        // num_local_experts; 0: dense MLP
  std::uint64_t experts_per_token = 0;  // num_experts_per_tok
  std::uint64_t vocab = 0;          // vocab_size
  double rope_theta = 0.0;          // rope_theta (HF LlamaConfig default 10000)
  bool tie_word_embeddings = false; // tie_word_embeddings (HF LlamaConfig default false)
  bool qkv_bias = false;            // attention_bias when given; else true for model_type qwen2 (its q/k/v have bias)

  bool moe() const { return experts > 0; }
  // Weights of the GEMMs of all layers (QKV, O, gate-up and down of the MLP or of every expert): the ones stored
  // at the GEMM data type.
  double layer_gemm_parameters() const;
  // Of those, the experts' (gate, up and down of every expert of every layer); 0 for a dense model.
  double layer_expert_parameters() const;
  // Every weight: the layers' GEMMs, QKV bias, routers, norms, embeddings and (untied) logits.
  double parameters() const;
};

// The plan of a step holds every layer's kernels (about a dozen per layer), so the layer count bounds its memory:
// far above any published model (Llama-3-405B: 126), far below what would exhaust a machine (fuzz_llm_model found
// a 31-million-layer config.json taking over 4 GB).
inline constexpr std::uint64_t kMaxModelLayers = 4096;

// A Hugging Face config.json, or a preset file in the same keys. Throws InputError naming the file and the key
// for a missing or ill-typed required field.
LlmModel read_model_file(const std::string& path);

// --model: a preset name (configs/llm/<name>.yaml in the config directories) or a file path.
LlmModel load_model(const std::string& name_or_path);

// Names of the shipped presets.
std::vector<std::string> preset_names();

}  // namespace warpsim::llm
