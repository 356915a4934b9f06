#include "app/validate/workload_fields.h"

#include <fmt/format.h>

#include "sim/core/error.h"

namespace warpsim {
namespace {

using config_detail::describe_node;
using config_detail::TreeEntry;
using config_detail::TreeNode;

void collect_overrides(const TreeNode& node, const std::string& prefix_key, const FieldErrorPrefix& prefix,
                       std::vector<std::string>& out) {
  for (const TreeEntry& e : node.entries) {
    const std::string key = prefix_key.empty() ? e.key : prefix_key + "." + e.key;
    if (e.value.kind == TreeNode::Kind::Map) collect_overrides(e.value, key, prefix, out);
    else out.push_back(key + "=" + read_scalar(e.value, "set." + key, prefix));
  }
}

}  // namespace

std::string read_scalar(const TreeNode& node, const std::string& field, const FieldErrorPrefix& prefix) {
  if (node.kind != TreeNode::Kind::Scalar)
    throw InputError(prefix(node.where.line) + fmt::format("{}: expected a value, got {}", field, describe_node(node)));
  return node.scalar;
}

WorkloadFields read_workload(const TreeNode& node, const FieldErrorPrefix& prefix) {
  if (node.kind != TreeNode::Kind::Map)
    throw InputError(prefix(node.where.line) + fmt::format("workload: expected a map ({{kind: gemm, m: 1024, ...}}), got {}",
                                                           describe_node(node)));
  WorkloadFields w;
  for (const TreeEntry& e : node.entries) {
    w.lines[e.key] = e.key_where.line;
    if (e.key == "kind") w.kind = read_scalar(e.value, "workload.kind", prefix);
    else w.keys[e.key] = read_scalar(e.value, "workload." + e.key, prefix);
  }
  return w;
}

std::vector<std::string> read_overrides(const TreeNode& node, const FieldErrorPrefix& prefix) {
  std::vector<std::string> out;
  if (node.kind == TreeNode::Kind::Sequence) {
    for (const TreeNode& item : node.items) out.push_back(read_scalar(item, "set", prefix));
  } else if (node.kind == TreeNode::Kind::Map) {
    collect_overrides(node, "", prefix, out);
  } else if (node.kind != TreeNode::Kind::Null) {
    throw InputError(prefix(node.where.line) +
                     fmt::format("set: expected a map of overrides ({{hbm.bandwidth: 2TB/s}}), got {}", describe_node(node)));
  }
  return out;
}

}  // namespace warpsim
