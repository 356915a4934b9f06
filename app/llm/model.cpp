#include "app/llm/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "app/gpu_configs.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/config/params.h"
#include "sim/config/yaml_tree.h"
#include "sim/core/error.h"

namespace warpsim::llm {
namespace {

namespace fs = std::filesystem;

using config_detail::TreeNode;

[[noreturn]] void bad(const std::string& file, const TreeNode* node, const std::string& key, const std::string& what) {
  const std::string at = node && node->where.line > 0 ? fmt::format("{}:{}", file, node->where.line) : file;
  throw InputError(fmt::format("{}: {}: {}", at, key, what));
}

// The key's value, or null when it is absent or JSON null (a default applies).
const TreeNode* value_of(const TreeNode& root, const std::string& key) {
  const TreeNode* n = root.find(key);
  return n && n->kind != TreeNode::Kind::Null ? n : nullptr;
}

std::optional<double> number_of(const TreeNode& n) {
  double v = 0;
  std::string error;
  if (n.kind != TreeNode::Kind::Scalar || !parse_quantity(n.scalar, ParamType::Real, v, error)) return std::nullopt;
  return v;
}

std::uint64_t count(const std::string& file, const TreeNode& root, const std::string& key,
                    std::optional<std::uint64_t> fallback) {
  const TreeNode* n = value_of(root, key);
  if (!n) {
    if (fallback) return *fallback;
    bad(file, nullptr, key, "missing: a whole number >= 1 is required (Hugging Face config.json key)");
  }
  const std::optional<double> v = number_of(*n);
  if (!v || !(*v >= 1) || *v != std::floor(*v) || *v > 1e15)
    bad(file, n, key, "expected a whole number >= 1, got " + config_detail::describe_node(*n));
  return static_cast<std::uint64_t>(*v);
}

bool flag(const std::string& file, const TreeNode& root, const std::string& key, bool fallback) {
  const TreeNode* n = value_of(root, key);
  if (!n) return fallback;
  if (n->kind == TreeNode::Kind::Scalar && (n->scalar == "true" || n->scalar == "True" || n->scalar == "TRUE")) return true;
  if (n->kind == TreeNode::Kind::Scalar && (n->scalar == "false" || n->scalar == "False" || n->scalar == "FALSE")) return false;
  bad(file, n, key, "expected true or false, got " + config_detail::describe_node(*n));
}

}  // namespace

double LlmModel::layer_gemm_parameters() const {
  const double h = static_cast<double>(hidden), qkv = (heads + 2.0 * kv_heads) * head_dim;
  return layers * (h * qkv + heads * head_dim * h + 3.0 * h * intermediate * (moe() ? experts : 1.0));
}

double LlmModel::layer_expert_parameters() const {
  return moe() ? layers * 3.0 * static_cast<double>(hidden) * intermediate * experts : 0.0;
}

double LlmModel::parameters() const {
  const double h = static_cast<double>(hidden);
  const double per_layer = (qkv_bias ? (heads + 2.0 * kv_heads) * head_dim : 0.0) + (moe() ? h * experts : 0.0) + 2.0 * h;
  return layer_gemm_parameters() + layers * per_layer + h + vocab * h * (tie_word_embeddings ? 1.0 : 2.0);
}

LlmModel read_model_file(const std::string& path) {
  // The hardened reader and parser of config files: a regular file of bounded size, aliases and depth limited.
  const TreeNode root = config_detail::parse_yaml(read_input_file(path, kMaxConfigFileBytes, "model config"), path);
  if (root.kind != TreeNode::Kind::Map)
    throw InputError(fmt::format("{}: expected a Hugging Face config.json (an object of keys such as hidden_size)", path));
  LlmModel m;
  m.file = path;
  m.name = fs::path(path).stem().string();
  if (const TreeNode* t = value_of(root, "model_type"); t && t->kind == TreeNode::Kind::Scalar) m.model_type = t->scalar;
  m.hidden = count(path, root, "hidden_size", std::nullopt);
  m.layers = count(path, root, "num_hidden_layers", std::nullopt);
  if (m.layers > kMaxModelLayers)
    bad(path, value_of(root, "num_hidden_layers"), "num_hidden_layers",
        fmt::format("{} layers: at most {} (each layer is a row group of the step's plan)", m.layers, kMaxModelLayers));
  m.heads = count(path, root, "num_attention_heads", std::nullopt);
  m.kv_heads = count(path, root, "num_key_value_heads", m.heads);
  m.intermediate = count(path, root, "intermediate_size", std::nullopt);
  m.vocab = count(path, root, "vocab_size", std::nullopt);
  if (m.hidden % m.heads != 0 && !value_of(root, "head_dim"))
    bad(path, nullptr, "num_attention_heads", fmt::format("{} does not divide hidden_size {} and no head_dim is given", m.heads, m.hidden));
  m.head_dim = count(path, root, "head_dim", m.hidden / m.heads);
  if (m.heads % m.kv_heads != 0)
    bad(path, nullptr, "num_key_value_heads", fmt::format("{} must divide num_attention_heads {}", m.kv_heads, m.heads));
  if (value_of(root, "num_local_experts")) {
    m.experts = count(path, root, "num_local_experts", std::nullopt);
    m.experts_per_token = count(path, root, "num_experts_per_tok", std::nullopt);
    if (m.experts_per_token > m.experts)
      bad(path, nullptr, "num_experts_per_tok", fmt::format("{} exceeds num_local_experts {}", m.experts_per_token, m.experts));
  }
  if (const TreeNode* n = value_of(root, "rope_theta")) {
    const std::optional<double> v = number_of(*n);
    if (!v) bad(path, n, "rope_theta", "expected a number, got " + config_detail::describe_node(*n));
    m.rope_theta = *v;
  } else {
    m.rope_theta = 10000.0;  // HF LlamaConfig's default (transformers configuration_llama.py)
  }
  m.tie_word_embeddings = flag(path, root, "tie_word_embeddings", false);
  m.qkv_bias = flag(path, root, "attention_bias", m.model_type == "qwen2");
  return m;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const std::string& dir : config_dirs()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / "llm", ec))
      if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
    if (!names.empty()) break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

LlmModel load_model(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       fs::path(name_or_path).extension() == ".json" || fs::path(name_or_path).extension() == ".yaml";
  if (is_path) return read_model_file(name_or_path);
  for (const std::string& dir : config_dirs()) {
    const fs::path file = fs::path(dir) / "llm" / (name_or_path + ".yaml");
    std::error_code ec;
    if (fs::exists(file, ec)) {
      LlmModel m = read_model_file(file.string());
      m.name = name_or_path;
      return m;
    }
  }
  const std::vector<std::string> names = preset_names();
  const std::string hint = did_you_mean(name_or_path, names);
  throw InputError(fmt::format("--model: no preset '{}'{} (presets: {}; or give a Hugging Face config.json path)",
                               name_or_path, hint.empty() ? "" : "; did you mean '" + hint + "'?",
                               fmt::join(names, ", ")));
}

}  // namespace warpsim::llm
