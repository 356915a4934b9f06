#include "traces/kineto/classify.h"

#include <fmt/format.h>

#include <cctype>
#include <regex>
#include <set>

#include "sim/core/types.h"

namespace warpsim::kineto {
namespace {

// One compiled regex per rule, built once.
const std::vector<std::regex>& compiled_rules() {
  static const std::vector<std::regex> regexes = [] {
    std::vector<std::regex> r;
    for (const NameRule& rule : kernel_name_rules()) r.emplace_back(rule.pattern, std::regex::ECMAScript | std::regex::optimize);
    return r;
  }();
  return regexes;
}

std::int64_t numel(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

std::string dims_text(const std::vector<std::int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

// The storage type of a tensor argument as the synthesizers name it, or "" for one they do not take.
std::string float_dtype(const std::string& type) {
  if (type == "c10::BFloat16") return "bf16";
  if (type == "c10::Half") return "fp16";
  if (type == "float") return "fp32";
  return "";
}

// The innermost enclosing op whose name is one of `names`, or nullptr.
const CpuOp* find_op(const Kernel& k, const std::set<std::string>& names) {
  for (auto it = k.ops.rbegin(); it != k.ops.rend(); ++it)
    if (names.count(it->name)) return &*it;
  return nullptr;
}

const std::vector<std::int64_t>& arg_dims(const CpuOp& op, std::size_t i) {
  static const std::vector<std::int64_t> none;
  return i < op.dims.size() ? op.dims[i] : none;
}
std::string arg_type(const CpuOp& op, std::size_t i) { return i < op.types.size() ? op.types[i] : std::string(); }
std::string arg_value(const CpuOp& op, std::size_t i) { return i < op.concrete.size() ? op.concrete[i] : std::string(); }

Mapping unmapped(Mapping m, std::string why) {
  m.status = MapStatus::Unmapped;
  m.note = std::move(why);
  return m;
}

std::string innermost_name(const Kernel& k) { return k.ops.empty() ? std::string("no op") : k.ops.back().name; }

std::string no_shapes(const Kernel& k, const char* expected) {
  if (k.ops.empty())
    return "no enclosing aten op with shapes (launch not found, or the trace was recorded without record_shapes)";
  return fmt::format("launched by {}, not by {} (no shapes to synthesize from)", innermost_name(k), expected);
}

// --- GEMM ------------------------------------------------------------------------------------------------------

Mapping map_gemm(const Kernel& k, Mapping m) {
  const CpuOp* op = find_op(k, {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"});
  if (!op) return unmapped(m, no_shapes(k, "aten::mm/addmm/bmm/baddbmm/matmul/linear"));
  std::int64_t M = 0, N = 0, K = 0, batch = 1;
  std::size_t a = 0;  // the argument holding A
  bool bias = false;
  const std::string& n = op->name;
  const auto& d0 = arg_dims(*op, 0);
  if (n == "aten::mm" || n == "aten::addmm") {
    a = n == "aten::addmm" ? 1 : 0;
    const auto &A = arg_dims(*op, a), &B = arg_dims(*op, a + 1);
    if (A.size() != 2 || B.size() != 2) return unmapped(m, fmt::format("{}: expected 2-D operands, got {} {}", n, dims_text(A), dims_text(B)));
    M = A[0]; K = A[1]; N = B[1];
    bias = n == "aten::addmm" && d0.size() == 1 && arg_value(*op, 3) == "1" && arg_value(*op, 4) == "1";
  } else if (n == "aten::bmm" || n == "aten::baddbmm") {
    a = n == "aten::baddbmm" ? 1 : 0;
    const auto &A = arg_dims(*op, a), &B = arg_dims(*op, a + 1);
    if (A.size() != 3 || B.size() != 3) return unmapped(m, fmt::format("{}: expected 3-D operands, got {} {}", n, dims_text(A), dims_text(B)));
    batch = A[0]; M = A[1]; K = A[2]; N = B[2];
  } else if (n == "aten::linear") {  // x [..., K], weight [N, K], bias [N]
    const auto& W = arg_dims(*op, 1);
    if (d0.empty() || W.size() != 2) return unmapped(m, fmt::format("{}: expected x [..., K] and weight [N, K], got {} {}", n, dims_text(d0), dims_text(W)));
    K = d0.back(); N = W[0]; M = numel(d0) / std::max<std::int64_t>(K, 1);
    bias = arg_dims(*op, 2).size() == 1;
  } else {  // aten::matmul: [..., M, K] x [K, N] folds the leading dims into M; both batched: a batched GEMM
    const auto& B = arg_dims(*op, 1);
    if (d0.size() < 2 || B.size() < 2) return unmapped(m, fmt::format("{}: expected operands of 2 dims or more, got {} {}", n, dims_text(d0), dims_text(B)));
    K = d0.back(); N = B.back();
    if (B.size() == 2) {
      M = numel(d0) / std::max<std::int64_t>(K, 1);
    } else {
      M = d0[d0.size() - 2];
      batch = numel(d0) / std::max<std::int64_t>(M * K, 1);
    }
  }
  const std::string type = arg_type(*op, a);
  std::string dtype = float_dtype(type);
  if (dtype == "fp32") dtype = k.name.find("tf32") != std::string::npos ? "tf32" : "";
  m.shape = fmt::format("{}{}x{}x{} {}{}", batch > 1 ? fmt::format("{}x ", batch) : "", M, N, K, dtype.empty() ? type : dtype,
                        bias ? " +bias" : "");
  if (dtype.empty())
    return unmapped(m, fmt::format("{} operands of type '{}': the gemm synthesizer builds tensor-core GEMMs (bf16, fp16, "
                                   "tf32, fp8, int8), not this kernel (an fp32 SIMT GEMM or another type)", n, type));
  if (M < 1 || N < 1 || K < 1 || batch < 1) return unmapped(m, fmt::format("{}: empty GEMM {}", n, m.shape));
  m.status = MapStatus::Mapped;
  m.synthesizer = "gemm";
  m.keys = {{"m", std::to_string(M)}, {"n", std::to_string(N)}, {"k", std::to_string(K)}, {"dtype", dtype}};
  if (batch > 1) m.keys["batch"] = std::to_string(batch);
  // The bias add is not synthesized: it reads N elements (negligible), and the synthesizer's fused epilogue would
  // turn its split-K off, which cuBLAS keeps with a bias (sm90_xmma_gemm_..._execute_segment_k with addmm's bias).
  m.note = "from " + n + (bias ? " (its bias add not synthesized)" : "");
  return m;
}

// --- attention -------------------------------------------------------------------------------------------------

// Operators whose q, k, v shapes and causal flag describe the kernel: layout, and the index of is_causal among the
// arguments (Concrete Inputs), from their ATen signatures.
struct AttentionOp { const char* name; bool bshd; std::size_t causal_arg; };
constexpr AttentionOp kAttentionOps[] = {
    {"aten::scaled_dot_product_attention", false, 5},         // (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    {"aten::_scaled_dot_product_flash_attention", false, 4},  // (q, k, v, dropout_p, is_causal, return_debug_mask, scale)
    {"aten::_scaled_dot_product_cudnn_attention", false, 6},  // (q, k, v, attn_bias, compute_lse, dropout_p, is_causal, ...)
    {"aten::_scaled_dot_product_efficient_attention", false, 5},  // (q, k, v, attn_bias, compute_lse, dropout_p, is_causal, ...)
    {"aten::_flash_attention_forward", true, 8},  // (q, k, v, cu_q, cu_k, max_q, max_k, dropout_p, is_causal, ...)
};

Mapping map_attention(const Kernel& k, Mapping m) {
  const CpuOp* op = nullptr;
  const AttentionOp* kind = nullptr;
  for (const AttentionOp& a : kAttentionOps)  // the public SDPA op first: its signature is the stable one
    if ((op = find_op(k, {a.name}))) { kind = &a; break; }
  if (!op) return unmapped(m, no_shapes(k, "aten::scaled_dot_product_attention or a flash/cuDNN/efficient attention op"));
  const auto &q = arg_dims(*op, 0), &kk = arg_dims(*op, 1), &v = arg_dims(*op, 2);
  if (q.size() != 4 || kk.size() != 4 || v.size() != 4)
    return unmapped(m, fmt::format("{}: expected 4-D q, k, v, got {} {} {}", op->name, dims_text(q), dims_text(kk), dims_text(v)));
  const std::size_t h = kind->bshd ? 2 : 1, s = kind->bshd ? 1 : 2;
  const std::int64_t batch = q[0], heads = q[h], kv_heads = kk[h], seqlen_q = q[s], seqlen_kv = kk[s], head_dim = q[3];
  const std::string causal_text = arg_value(*op, kind->causal_arg);
  const bool causal = causal_text == "True";
  const std::string dtype = float_dtype(arg_type(*op, 0));
  // Hopper-native attention kernels (cuDNN's sdpa_sm90_..._wgmma, FlashAttention-3's Sm90 kernels) are modelled by
  // the fa3 variant; the others (pytorch_flash's FA2, cuDNN's sm80 kernels) by fa2. A one-token query is decode.
  const bool hopper_native = k.name.find("sm90") != std::string::npos || k.name.find("wgmma") != std::string::npos ||
                             k.name.find("Sm90") != std::string::npos;
  const std::string variant = seqlen_q == 1 ? "decode" : hopper_native ? "fa3" : "fa2";
  m.shape = fmt::format("b{} h{}/{} q{} kv{} d{}{} {}", batch, heads, kv_heads, seqlen_q, seqlen_kv, head_dim,
                        causal ? " causal" : "", dtype.empty() ? arg_type(*op, 0) : dtype);
  if (dtype != "bf16" && dtype != "fp16")
    return unmapped(m, fmt::format("{}: q of type '{}': the attention synthesizer takes fp16 or bf16", op->name, arg_type(*op, 0)));
  if (causal_text != "True" && causal_text != "False")
    return unmapped(m, fmt::format("{}: is_causal (argument {}) not recorded", op->name, kind->causal_arg));
  m.status = MapStatus::Mapped;
  m.synthesizer = "attention";
  m.keys = {{"batch", std::to_string(batch)},       {"heads", std::to_string(heads)},
            {"kv_heads", std::to_string(kv_heads)}, {"seqlen_q", std::to_string(seqlen_q)},
            {"seqlen_kv", std::to_string(seqlen_kv)}, {"head_dim", std::to_string(head_dim)},
            {"causal", causal ? "true" : "false"},  {"dtype", dtype},
            {"variant", variant}};
  m.note = "from " + op->name + (variant == "decode" ? " (one query token: split-KV decode)"
                                 : variant == "fa3"  ? " (a Hopper-native kernel: FlashAttention-3's design)"
                                                     : "");
  return m;
}

// The integers written in a recorded argument: "-1", "[-1]", "[0, 2]", "[512]"; none for "", "None", "[]".
// Throws std::out_of_range for one beyond int64.
std::vector<std::int64_t> integers_in(const std::string& text) {
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < text.size();) {
    if (!(std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '-')) { ++i; continue; }
    std::size_t j = i + 1;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i + (text[i] == '-' ? 1 : 0)) values.push_back(std::stoll(text.substr(i, j - i)));
    i = j;
  }
  return values;
}

// --- row operators: norms, softmax ---------------------------------------------------------------------------

Mapping map_norm(const Kernel& k, Mapping m, bool rms) {
  const CpuOp* op = rms ? find_op(k, {"aten::_fused_rms_norm", "aten::rms_norm"})
                        : find_op(k, {"aten::native_layer_norm", "aten::layer_norm"});
  if (!op) return unmapped(m, no_shapes(k, rms ? "aten::rms_norm" : "aten::layer_norm"));
  const auto& x = arg_dims(*op, 0);
  // The normalised size: the weight's elements, else normalized_shape as text ("[512]").
  std::int64_t cols = 0;
  if (!arg_dims(*op, 2).empty()) {
    cols = numel(arg_dims(*op, 2));
  } else {
    const std::vector<std::int64_t> shape = integers_in(arg_value(*op, 1));
    if (!shape.empty()) cols = numel(shape);
  }
  const std::string dtype = float_dtype(arg_type(*op, 0));
  if (x.empty() || cols < 1 || numel(x) % cols != 0)
    return unmapped(m, fmt::format("{}: cannot tell the normalised size of input {}", op->name, dims_text(x)));
  const std::int64_t rows = numel(x) / cols;
  m.shape = fmt::format("{}x{} {}", rows, cols, dtype.empty() ? arg_type(*op, 0) : dtype);
  if (dtype.empty()) return unmapped(m, fmt::format("{}: type '{}' not synthesized (fp16, bf16, fp32)", op->name, arg_type(*op, 0)));
  if (cols % 4 != 0) return unmapped(m, fmt::format("{}: {} columns, the synthesizer takes a multiple of 4", op->name, cols));
  m.status = MapStatus::Mapped;
  m.synthesizer = rms ? "rmsnorm" : "layernorm";
  m.keys = {{"rows", std::to_string(rows)}, {"cols", std::to_string(cols)}, {"dtype", dtype}};
  if (!rms) m.keys["elementwise_affine"] = arg_dims(*op, 2).empty() ? "false" : "true";
  m.note = "from " + op->name;
  return m;
}

Mapping map_softmax(const Kernel& k, Mapping m) {
  const CpuOp* op = find_op(k, {"aten::_softmax", "aten::softmax", "aten::_safe_softmax"});
  if (!op) return unmapped(m, no_shapes(k, "aten::softmax"));
  const auto& x = arg_dims(*op, 0);
  const std::string dim = arg_value(*op, 1), dtype = float_dtype(arg_type(*op, 0));
  if (x.empty()) return unmapped(m, op->name + ": no input shape");
  const bool last = dim == "-1" || dim == std::to_string(x.size() - 1);
  m.shape = fmt::format("{} dim {} {}", dims_text(x), dim, dtype);
  if (!last) return unmapped(m, fmt::format("{}: softmax over dim {} of {}: the synthesizer normalises the last dim", op->name, dim, dims_text(x)));
  if (dtype.empty()) return unmapped(m, fmt::format("{}: type '{}' not synthesized", op->name, arg_type(*op, 0)));
  m.status = MapStatus::Mapped;
  m.synthesizer = "softmax";
  m.keys = {{"rows", std::to_string(numel(x) / x.back())}, {"cols", std::to_string(x.back())}, {"dtype", dtype}};
  m.note = "from " + op->name;
  return m;
}

// --- memory-bound: elementwise, copies -------------------------------------------------------------------------

// Whether argument i of `op` is a tensor (not a scalar, a list of scalars or a list of tensors).
bool is_tensor_arg(const CpuOp& op, std::size_t i) {
  const std::string t = arg_type(op, i);
  return !(t.empty() || t == "Scalar" || t == "ScalarList" || t == "TensorList");
}

// Broadcast shape of the tensor arguments (numpy rules), or empty when there is none.
std::vector<std::int64_t> broadcast_shape(const CpuOp& op, std::size_t& tensors) {
  std::vector<std::int64_t> out;
  tensors = 0;
  for (std::size_t i = 0; i < op.dims.size(); ++i) {
    if (!is_tensor_arg(op, i)) continue;
    const auto& d = op.dims[i];
    ++tensors;
    if (d.size() > out.size()) out.insert(out.begin(), d.size() - out.size(), 1);
    for (std::size_t j = 0; j < d.size(); ++j) {
      std::int64_t& o = out[out.size() - d.size() + j];
      if (o == 1) o = d[j];
    }
  }
  return out;
}

// The dimensions TensorIterator's OffsetCalculator keeps for an op's tensor operands over the broadcast `shape`:
// unit dimensions dropped, and neighbours merged while every operand is full along both or broadcast along both
// (contiguous tensors). At least 1.
std::int64_t offset_dims(const CpuOp& op, const std::vector<std::int64_t>& shape) {
  std::int64_t dims = 0;
  std::vector<bool> previous;
  for (std::size_t j = 0; j < shape.size(); ++j) {
    if (shape[j] == 1) continue;
    std::vector<bool> full;  // per tensor operand: full along dim j (else broadcast)
    for (std::size_t i = 0; i < op.dims.size(); ++i) {
      if (!is_tensor_arg(op, i)) continue;
      const auto& d = op.dims[i];
      const std::size_t lead = shape.size() - d.size();
      full.push_back(j >= lead && d[j - lead] == shape[j]);
    }
    if (dims == 0 || full != previous) ++dims;
    previous = std::move(full);
  }
  return std::max<std::int64_t>(dims, 1);
}

// aten ops -> elementwise synthesizer op. `exact` when the synthesizer builds that very operation.
struct ElementwiseOp { const char* aten; const char* synth; bool exact; };
constexpr ElementwiseOp kElementwiseOps[] = {
    {"aten::gelu", "gelu", true},  {"aten::gelu_", "gelu", true}, {"aten::silu", "silu", true},
    {"aten::silu_", "silu", true}, {"aten::relu", "relu", true},  {"aten::relu_", "relu", true},
    {"aten::add", "add", true},    {"aten::add_", "add", true},   {"aten::mul", "mul", true},
    {"aten::mul_", "mul", true},   {"aten::sub", "add", false},   {"aten::sub_", "add", false},
    {"aten::div", "mul", false},   {"aten::div_", "mul", false},  {"aten::where", "add", false},
    // One input, a few fp32 operations: relu's cost class (2 fp32 per element).
    {"aten::neg", "relu", false},  {"aten::abs", "relu", false},  {"aten::clamp", "relu", false},
    {"aten::rsqrt", "relu", false}, {"aten::sqrt", "relu", false}, {"aten::reciprocal", "relu", false},
    {"aten::pow", "relu", false},  {"aten::eq", "relu", false},   {"aten::ne", "relu", false},
    {"aten::lt", "relu", false},   {"aten::gt", "relu", false},   {"aten::le", "relu", false},
    {"aten::ge", "relu", false},  {"aten::masked_fill", "relu", false}, {"aten::masked_fill_", "relu", false},
    // One input, a transcendental function: silu's cost class (expf and a division).
    {"aten::exp", "silu", false},  {"aten::cos", "silu", false},  {"aten::sin", "silu", false},
    {"aten::tanh", "silu", false}, {"aten::sigmoid", "silu", false}, {"aten::erf", "silu", false},
    {"aten::log", "silu", false},
    // Writes only / reads and writes: copy.
    {"aten::fill_", "copy", false}, {"aten::zero_", "copy", false}, {"aten::copy_", "copy", true},
    {"aten::clone", "copy", true},
};

// PyTorch's elementwise kernels as the captured one was launched: vectorized_elementwise_kernel<vec_size, ...>
// loads vec_size-element vectors, elementwise_kernel<num_threads, work_per_thread, ...> scalars; the elements per
// thread are what the captured grid gives (128 x that per CTA; 4 up to PyTorch 2.2, 8 since). Other kernels (copies
// of cat, index_select, conversions) keep the synthesizer's defaults.
void elementwise_launch(const Kernel& k, std::int64_t elements, std::int64_t element_bytes, std::int64_t index_dims, Mapping& m) {
  static const std::regex vectorized("vectorized_elementwise_kernel<([0-9]{1,3}),"), legacy("[^_]elementwise_kernel<128, ([0-9]{1,3}),");
  std::smatch match;
  std::int64_t vec = 0, per_thread = 0;
  if (std::regex_search(k.name, match, vectorized)) {
    vec = std::stoll(match[1]);
  } else if (std::regex_search(k.name, match, legacy)) {  // strided operands: offsets computed per element
    vec = 1;
    per_thread = std::stoll(match[1]);
  } else if (k.name.find("unrolled_elementwise_kernel") != std::string::npos) {
    vec = 1;
  } else {
    return;
  }
  constexpr std::int64_t kThreads = 128, kMaxPerThread = 32, kMaxVectorBytes = 16;
  if (k.block[0] != kThreads || vec < 1) return;
  if (vec * element_bytes > kMaxVectorBytes) {  // a conversion whose narrower side sets vec_size: the widest access
    vec = kMaxVectorBytes / element_bytes;
    m.note += fmt::format("; {}-byte vectors (the kernel's vec_size {} of the narrower type)", kMaxVectorBytes, match[1].str());
  }
  if (per_thread == 0) {
    const std::int64_t ctas = std::max<std::int64_t>(1, static_cast<std::int64_t>(k.grid[0]) * k.grid[1] * k.grid[2]);
    const auto needed = static_cast<std::int64_t>(ceil_div(static_cast<std::uint64_t>(elements), static_cast<std::uint64_t>(ctas * kThreads)));
    per_thread = 1;
    while (per_thread < needed && per_thread < kMaxPerThread) per_thread *= 2;
  }
  m.keys["vec"] = std::to_string(vec);
  m.keys["elements_per_thread"] = std::to_string(std::max(per_thread, vec));
  const bool strided = vec == 1 && k.name.find("unrolled_elementwise_kernel") == std::string::npos;
  if (strided && index_dims > 0) m.keys["index_dims"] = std::to_string(index_dims);
}

Mapping map_elementwise(const Kernel& k, Mapping m, bool copy_kernel) {
  if (k.ops.empty()) return unmapped(m, no_shapes(k, "an elementwise aten op"));
  // The innermost op that the table knows (copies also from index_select, gather, embedding; cat has map_cat).
  for (auto it = k.ops.rbegin(); it != k.ops.rend(); ++it) {
    const CpuOp& op = *it;
    std::int64_t elements = 0, index_dims = 0;
    std::string synth, type, how;
    bool exact = false;
    if (op.name == "aten::index_select" || op.name == "aten::embedding" || op.name == "aten::gather") {
      const auto& table = arg_dims(op, 0);
      const auto& index = op.name == "aten::index_select" ? arg_dims(op, 2) : arg_dims(op, op.name == "aten::gather" ? 2 : 1);
      if (table.empty() || index.empty()) continue;
      elements = op.name == "aten::gather" ? numel(index) : numel(index) * (numel(table) / table[0]);
      synth = "copy"; type = arg_type(op, 0);
      how = fmt::format("{} as a copy of the {} gathered elements", op.name, elements);
    } else {
      const ElementwiseOp* e = nullptr;
      for (const ElementwiseOp& c : kElementwiseOps) if (op.name == c.aten) e = &c;
      if (!e) continue;
      std::size_t tensors = 0;
      const auto shape = broadcast_shape(op, tensors);
      elements = numel(shape);
      index_dims = offset_dims(op, shape);
      synth = e->synth; exact = e->exact;
      type = arg_type(op, 0);
      // A binary op with one tensor (x + scalar) reads one array: the one-input cost class.
      if ((synth == "add" || synth == "mul") && tensors < 2) { synth = "relu"; exact = false; }
      if (op.name == "aten::copy_") {  // a conversion copies between types: the wider one
        const std::string src = arg_type(op, 1);
        if (src == "float" || type == "float") type = "float";
      }
      if (!exact) how = fmt::format("{} as elementwise {}", op.name, synth);
    }
    const std::string dtype = float_dtype(type);
    m.shape = fmt::format("{} elements {}", elements, dtype.empty() ? type : dtype);
    if (copy_kernel && synth != "copy") { synth = "copy"; exact = false; how = op.name + " (a copy kernel) as elementwise copy"; }
    if (dtype.empty()) return unmapped(m, fmt::format("{}: type '{}' not synthesized (elementwise takes fp16, bf16, fp32)", op.name, type));
    if (elements < 1) return unmapped(m, fmt::format("{}: no elements", op.name));
    m.status = exact ? MapStatus::Mapped : MapStatus::Approx;
    m.synthesizer = "elementwise";
    m.keys = {{"op", synth}, {"elements", std::to_string(elements)}, {"dtype", dtype}};
    m.note = exact ? "from " + op.name : how;
    elementwise_launch(k, elements, dtype == "fp32" ? 4 : 2, index_dims, m);
    return m;
  }
  return unmapped(m, fmt::format("launched by {}: no elementwise mapping for it", innermost_name(k)));
}

// --- cat ---------------------------------------------------------------------------------------------------------

// A TensorList's element type is not recorded: the cat kernel's template argument (CatArrayBatchedCopy<OpaqueType<
// bytes>, ...>, or the type's name in older releases) gives its size. 16-bit types copy alike, so OpaqueType<2> is
// taken as bf16.
std::string cat_kernel_dtype(const Kernel& k) {
  static const std::regex opaque("OpaqueType<([0-9]+)u?>");
  std::smatch size;
  if (k.name.find("BFloat16") != std::string::npos) return "bf16";
  if (k.name.find("Half") != std::string::npos) return "fp16";
  if (std::regex_search(k.name, size, opaque)) return size[1] == "2" ? "bf16" : size[1] == "4" ? "fp32" : "";
  if (k.name.find("<float,") != std::string::npos) return "fp32";  // releases before the OpaqueType dispatch
  return "";
}

// "1x8x2048x128,1x8x1x128" from a TensorList's dims (or strides).
std::string shapes_key(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::vector<std::string> items;
  for (const auto& s : shapes) items.push_back(fmt::format("{}", fmt::join(s, "x")));
  return fmt::format("{}", fmt::join(items, ","));
}

// aten::cat(tensors, dim) -> the cat synthesizer, which launches the kernel PyTorch picks from the inputs' layout.
Mapping map_cat(const Kernel& k, Mapping m) {
  const CpuOp* op = find_op(k, {"aten::cat"});
  if (!op) return map_elementwise(k, m, true);  // a cat kernel launched by another op (index_select & co)
  if (op->list_dims.empty() || op->list_dims[0].empty()) return unmapped(m, "aten::cat without its tensors' shapes (no record_shapes)");
  const auto& shapes = op->list_dims[0];
  const std::string dim = arg_value(*op, 1).empty() ? "0" : arg_value(*op, 1), dtype = cat_kernel_dtype(k);
  for (const auto& s : shapes) {
    if (s.empty()) return unmapped(m, "aten::cat of 0-dim tensors (torch.cat refuses them; not a cat kernel's input)");
    for (std::int64_t d : s)
      if (d < 0) return unmapped(m, fmt::format("aten::cat: a negative size in {}", shapes_key(shapes)));
  }
  m.shape = fmt::format("cat({}, dim={}) {}", shapes_key(shapes), dim, dtype);
  if (dtype.empty()) return unmapped(m, "aten::cat: element type not in the kernel's name (the synthesizer takes 2- and 4-byte types)");
  m.synthesizer = "cat";
  m.keys = {{"inputs", shapes_key(shapes)}, {"dim", dim}, {"dtype", dtype}};
  const bool strides_recorded = !op->list_strides.empty() && op->list_strides[0].size() == shapes.size();
  if (strides_recorded) {
    m.keys["strides"] = shapes_key(op->list_strides[0]);
    m.status = MapStatus::Mapped;
    m.note = "from aten::cat (shapes and strides)";
  } else {
    m.status = MapStatus::Approx;
    m.note = "aten::cat without recorded strides: inputs taken as contiguous";
  }
  return m;
}

// --- reductions --------------------------------------------------------------------------------------------------

// aten reductions -> the reduction synthesizer's op.
struct ReductionOp { const char* aten; const char* synth; };
constexpr ReductionOp kReductionOps[] = {
    {"aten::sum", "sum"},   {"aten::mean", "mean"},     {"aten::amax", "max"},      {"aten::amin", "min"},
    {"aten::max", "max"},   {"aten::min", "min"},       {"aten::argmax", "argmax"}, {"aten::argmin", "argmin"},
};

// ReduceOp's vt0 and input_vec_size from the kernel's name: the last two integer template arguments of
// ReduceOp<scalar_t, ops_t, index_t, out_scalar_t, vt0, input_vec_size> (older releases have vt0 only).
void reduce_op_template(const std::string& name, std::map<std::string, std::string>& keys) {
  const std::size_t open = name.find("ReduceOp<");
  if (open == std::string::npos) return;
  int depth = 0;
  std::size_t close = open + 8;
  for (; close < name.size(); ++close) {
    if (name[close] == '<') ++depth;
    if (name[close] == '>' && --depth == 0) break;
  }
  if (close >= name.size()) return;
  std::vector<std::string> top;  // the top-level arguments
  std::string arg;
  depth = 0;
  for (std::size_t i = open + 9; i < close; ++i) {
    const char ch = name[i];
    if (ch == '<' || ch == '(') ++depth;
    if (ch == '>' || ch == ')') --depth;
    if (ch == ',' && depth == 0) { top.push_back(arg); arg.clear(); continue; }
    if (ch != ' ') arg += ch;
  }
  top.push_back(arg);
  auto integer = [](const std::string& t) {
    return !t.empty() && t.size() <= 3 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (top.size() >= 6 && integer(top[4]) && integer(top[5])) {
    keys["vt0"] = top[4];
    keys["input_vec_size"] = top[5];
  } else if (top.size() == 5 && integer(top[4])) {
    keys["vt0"] = top[4];
    keys["input_vec_size"] = top[4];  // before input_vec_size existed, vectors were of vt0 elements
  }
}

Mapping map_reduction(const Kernel& k, Mapping m) {
  const CpuOp* op = nullptr;
  const ReductionOp* kind = nullptr;
  for (auto it = k.ops.rbegin(); it != k.ops.rend() && !op; ++it)
    for (const ReductionOp& r : kReductionOps)
      if (it->name == r.aten) { op = &*it; kind = &r; break; }
  if (!op) return unmapped(m, no_shapes(k, "aten::sum/mean/amax/amin/max/min/argmax/argmin"));
  const auto& x = arg_dims(*op, 0);
  const std::string dtype = float_dtype(arg_type(*op, 0));
  // The dims argument: a list or an int (sum/mean's dtype-only overload, aten::sum(self, dtype), reduces all).
  const std::string dim_type = arg_type(*op, 1);
  const bool has_dims = dim_type == "ScalarList" || dim_type == "Scalar" || dim_type.empty();
  bool all = true;
  std::vector<std::int64_t> reduced;
  try {
    if (has_dims) reduced = integers_in(arg_value(*op, 1));
    all = reduced.empty();
  } catch (const std::out_of_range&) {
    return unmapped(m, fmt::format("{}: dim argument '{}' out of range", op->name, arg_value(*op, 1)));
  }
  const auto rank = static_cast<std::int64_t>(x.size());
  std::vector<bool> is_reduced(x.size(), all);
  for (std::int64_t d : reduced) {
    const std::int64_t i = d < 0 ? d + rank : d;
    if (i < 0 || i >= rank) return unmapped(m, fmt::format("{}: dim {} out of range for input {}", op->name, d, dims_text(x)));
    is_reduced[static_cast<std::size_t>(i)] = true;
  }
  // Size-1 dimensions do not matter; the rest must be reduced as a trailing block (inner) or a leading one (outer).
  std::int64_t inputs = 1, outputs = 1;
  std::string pattern;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] == 1) continue;
    (is_reduced[i] ? inputs : outputs) *= x[i];
    const char c = is_reduced[i] ? 'r' : 'k';
    if (pattern.empty() || pattern.back() != c) pattern += c;
  }
  m.shape = fmt::format("{} dim {} {}", dims_text(x), all ? "all" : arg_value(*op, 1), dtype.empty() ? arg_type(*op, 0) : dtype);
  if (dtype.empty()) return unmapped(m, fmt::format("{}: type '{}' not synthesized (fp16, bf16, fp32)", op->name, arg_type(*op, 0)));
  if (x.empty() || inputs * outputs < 1) return unmapped(m, fmt::format("{}: no elements in input {}", op->name, dims_text(x)));
  const bool inner = pattern == "r" || pattern == "kr" || pattern == "k" || pattern.empty();
  if (!inner && pattern != "rk")
    return unmapped(m, fmt::format("{}: reduces dims {} of {}: neither the trailing nor the leading ones (a strided reduction "
                                   "the reduction synthesizer does not build)", op->name, arg_value(*op, 1), dims_text(x)));
  // max/min along a dim return the values and their indices: MaxOps/MinOps over (value, index) pairs, argmax's cost.
  const bool with_indices = (op->name == "aten::max" || op->name == "aten::min") && !all;
  m.status = MapStatus::Mapped;
  m.synthesizer = "reduction";
  m.keys = {{"op", with_indices ? (op->name == "aten::max" ? "argmax" : "argmin") : kind->synth},
            {"layout", inner ? "inner" : "outer"}, {"outputs", std::to_string(outputs)},
            {"inputs", std::to_string(inputs)}, {"dtype", dtype}};
  reduce_op_template(k.name, m.keys);
  m.note = "from " + op->name;
  const std::int64_t element_bytes = dtype == "fp32" ? 4 : 2, widest = 16 / element_bytes;
  if (m.keys.count("input_vec_size") && std::stoll(m.keys["input_vec_size"]) > widest) {  // loaded as 16-byte pieces
    m.note += fmt::format("; input_vec_size {} taken as {} (16-byte loads)", m.keys["input_vec_size"], widest);
    m.keys["input_vec_size"] = std::to_string(widest);
  }
  if (with_indices) {
    m.status = MapStatus::Approx;
    m.note = op->name + " along a dim (values and indices) as " + m.keys["op"] + ": the same (value, index) pairs, one output";
  }
  if (k.name.find("reduce_kernel") == std::string::npos) {  // another library's reduction: PyTorch's kernel stands in
    m.status = MapStatus::Approx;
    m.note = op->name + " as PyTorch's reduce_kernel (the traced kernel is another implementation)";
  }
  return m;
}

}  // namespace

const std::vector<NameRule>& kernel_name_rules() {
  static const std::vector<NameRule> rules = {
      // Helpers of library calls (before their main kernels' patterns).
      {"splitKreduce|splitK_reduce|splitk_reduce", "gemm", true, "cuBLAS/cuBLASLt split-K reduction after a split GEMM"},
      {"lean_reduction_kernel|splitkv_combine|flash_fwd_splitkv_combine", "attention", true,
       "cuDNN / flash-attention split-KV combine after a decode attention kernel"},
      // Attention.
      {"flash_fwd|flash_bwd|fmha|sdpa|flash_attn|attention|mem_eff|efficient_attention", "attention", false,
       "FlashAttention (pytorch_flash), cuDNN SDPA (cudnn_generated_fort_native_sdpa), memory-efficient (fmha_cutlass)"},
      // GEMMs.
      {"gemm|nvjet|xmma|cublas|cutlass.*(tensorop|wmma|simt)|s[0-9]+gemm|sgemm|hgemm", "gemm", false,
       "cuBLAS (ampere_*gemm, sm90_xmma_gemm, nvjet_*), cuBLASLt, CUTLASS (cutlass_80_*gemm) kernels"},
      // Row operators.
      {"layer_norm|layernorm|LayerNorm", "layernorm", false, "PyTorch vectorized_layer_norm_kernel, apex/others"},
      {"rms_norm|rmsnorm|RMSNorm|RmsNorm", "rmsnorm", false, "fused RMSNorm kernels (aten::_fused_rms_norm, vLLM, apex)"},
      {"softmax|SoftMax|Softmax", "softmax", false, "PyTorch softmax_warp_forward / cunn_SoftMaxForward"},
      {"rotary|Rotary", "rotary", false, "fused rotary-embedding kernels (vLLM rotary_embedding_kernel)"},
      // Memory-bound.
      {"CatArrayBatchedCopy", "cat", false, "torch.cat's kernels (CatArrayBatchedCopy, _contig, _aligned*, _vectorized)"},
      {"direct_copy|copy_kernel|indexSelect|index_select|gather_kernel|embedding", "copy", false,
       "to/copy_ conversions, index_select / embedding gathers"},
      {"reduce_kernel|Reduce|reduction|argmax|argmin", "reduction", false, "PyTorch reduce_kernel (sum, mean, max, argmax, all)"},
      {"elementwise", "elementwise", false,
       "PyTorch vectorized_/unrolled_elementwise_kernel, elementwise_kernel (add, mul, gelu, silu, ...)"},
  };
  return rules;
}

const char* map_status_name(MapStatus status) {
  switch (status) {
    case MapStatus::Mapped: return "mapped";
    case MapStatus::Approx: return "approx";
    case MapStatus::Helper: return "helper";
    case MapStatus::Unmapped: return "unmapped";
  }
  return "?";
}

std::string operator_key(const Kernel& kernel) {
  if (kernel.ops.empty()) return "";
  const CpuOp& op = kernel.ops.back();
  return op.external_id >= 0 ? fmt::format("{}#{}", op.name, op.external_id) : fmt::format("{}@{:.3f}", op.name, op.start_us);
}

Mapping classify_kernel(const Kernel& kernel) {
  Mapping m;
  const auto& rules = kernel_name_rules();
  const auto& regexes = compiled_rules();
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (!std::regex_search(kernel.name, regexes[i])) continue;
    m.category = rules[i].category;
    if (rules[i].helper) {
      m.status = MapStatus::Helper;
      m.note = kernel.ops.empty() ? std::string("helper kernel") : "helper kernel of " + kernel.ops.back().name;
      return m;
    }
    const std::string c = m.category;
    if (c == "gemm") return map_gemm(kernel, m);
    if (c == "attention") return map_attention(kernel, m);
    if (c == "layernorm") return map_norm(kernel, m, false);
    if (c == "rmsnorm") return map_norm(kernel, m, true);
    if (c == "softmax") return map_softmax(kernel, m);
    if (c == "cat") return map_cat(kernel, m);
    if (c == "copy") return map_elementwise(kernel, m, true);
    if (c == "elementwise") return map_elementwise(kernel, m, false);
    if (c == "reduction") return map_reduction(kernel, m);
    if (c == "rotary") return unmapped(m, "fused rotary kernel: its operator's arguments (positions, q, k, cos/sin cache) are not read yet");
  }
  return unmapped(m, "the kernel name matches no rule of the name table (traces/kineto/classify.cpp)");
}

}  // namespace warpsim::kineto
