#include "app/sweep/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "app/fnv1a.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/config/yaml_tree.h"
#include "sim/core/error.h"

namespace fs = std::filesystem;

namespace warpsim::sweep {
namespace {

using config_detail::TreeEntry;
using config_detail::TreeNode;

// Sweep specs are small: a few candidates, parameters and workloads.
constexpr std::size_t kMaxListValues = 100000;

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  std::string where(const SourceLoc& loc) const { return fmt::format("{}:{}", file_, loc.line > 0 ? loc.line : 1); }

  [[noreturn]] void fail(const SourceLoc& loc, const std::string& key, const std::string& what) const {
    throw InputError(fmt::format("{}:{}:{}: {}: {}", file_, loc.line > 0 ? loc.line : 1, loc.column > 0 ? loc.column : 1,
                                 key, what));
  }

  // Every key of `map` is one of `allowed`; `context` names the map in messages ("candidates.more_sms").
  void check_keys(const TreeNode& map, const std::vector<std::string>& allowed, const std::string& context,
                  const std::string& expected) const {
    for (const TreeEntry& e : map.entries) {
      if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
      const std::string hint = did_you_mean(e.key, allowed);
      fail(e.key_where, context.empty() ? e.key : context + "." + e.key,
           fmt::format("unknown key{}; expected {}", hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                       expected));
    }
  }

  void expect_map(const TreeNode& node, const std::string& key, const std::string& expected) const {
    if (node.kind != TreeNode::Kind::Map)
      fail(node.where, key, fmt::format("expected {}, got {}", expected, config_detail::describe_node(node)));
  }

  std::string scalar(const TreeNode& node, const std::string& key, const std::string& expected) const {
    if (node.kind != TreeNode::Kind::Scalar || node.scalar.empty())
      fail(node.where, key, fmt::format("expected {}, got {}", expected, config_detail::describe_node(node)));
    return node.scalar;
  }

  // A path relative to the spec file, made absolute (the plan runs from anywhere).
  std::string relative_path(const std::string& path) const {
    const fs::path p(path);
    return (p.is_absolute() ? p : fs::absolute(fs::path(file_).parent_path() / p)).lexically_normal().string();
  }

  // A scalar or a list of scalars, as a list.
  std::vector<std::string> value_list(const TreeNode& node, const std::string& key) const {
    if (node.kind == TreeNode::Kind::Scalar) return {node.scalar};
    if (node.kind != TreeNode::Kind::Sequence || node.items.empty())
      fail(node.where, key, fmt::format("expected a value or a non-empty list of values, got {}",
                                        config_detail::describe_node(node)));
    if (node.items.size() > kMaxListValues)
      fail(node.where, key, fmt::format("expected at most {} values, got {}", kMaxListValues, node.items.size()));
    std::vector<std::string> values;
    for (const TreeNode& item : node.items) values.push_back(scalar(item, key, "a value (a number with its unit, or a word)"));
    return values;
  }

  static bool is_range(const TreeNode& node) {
    if (node.kind != TreeNode::Kind::Map || node.entries.empty()) return false;
    for (const TreeEntry& e : node.entries)
      if (e.key != "from" && e.key != "to" && e.key != "step") return false;
    return true;
  }

  ParamValues param_values(const TreeNode& node, const std::string& key) const {
    ParamValues v;
    if (!is_range(node)) {
      v.list = value_list(node, key);
      return v;
    }
    for (const char* part : {"from", "to", "step"}) {
      const TreeNode* p = node.find(part);
      if (!p) fail(node.where, key, fmt::format("a range needs from, to and step; '{}' is missing", part));
      (part[0] == 'f' ? v.from : part[0] == 't' ? v.to : v.step) = scalar(*p, key + "." + part, "a value with its unit");
    }
    return v;
  }

  // Leaves of nested maps as dotted keys: `sm: {count: 1}` and `sm.count: 1` alike (the YAML tree splits
  // dotted keys). A range map ({from, to, step}) is a leaf.
  void flatten(const TreeNode& node, const std::string& prefix, std::vector<std::pair<std::string, const TreeNode*>>& out) const {
    for (const TreeEntry& e : node.entries) {
      const std::string key = prefix.empty() ? e.key : prefix + "." + e.key;
      if (e.value.kind == TreeNode::Kind::Map && !is_range(e.value)) flatten(e.value, key, out);
      else out.emplace_back(key, &e.value);
    }
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

Candidate read_candidate(const SpecReader& r, const TreeEntry& entry) {
  Candidate c;
  c.name = entry.key;
  c.where = r.where(entry.key_where);
  const std::string context = "candidates." + entry.key;
  if (entry.value.kind == TreeNode::Kind::Null) return c;
  r.expect_map(entry.value, context, "a map with config: FILE and/or set: {key: value, ...} ({} for the base)");
  r.check_keys(entry.value, {"config", "set"}, context, "config (a GPU config file) or set (overrides)");
  if (const TreeNode* config = entry.value.find("config"))
    c.config = r.relative_path(r.scalar(*config, context + ".config", "a GPU config file"));
  if (const TreeNode* set = entry.value.find("set")) {
    if (set->kind == TreeNode::Kind::Sequence) {
      for (const TreeNode& item : set->items) {
        const std::string text = r.scalar(item, context + ".set", "KEY=VALUE, as --set");
        const auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0)
          r.fail(item.where, context + ".set", fmt::format("expected KEY=VALUE (e.g. sm.count=160), got '{}'", text));
        c.set.emplace_back(text.substr(0, eq), text.substr(eq + 1));
      }
    } else if (set->kind == TreeNode::Kind::Map) {
      std::vector<std::pair<std::string, const TreeNode*>> leaves;
      r.flatten(*set, "", leaves);
      for (const auto& [key, node] : leaves)
        c.set.emplace_back(key, r.scalar(*node, context + ".set." + key, "one value (candidates do not take lists; use parameters:)"));
    } else if (set->kind != TreeNode::Kind::Null) {
      r.fail(set->where, context + ".set", fmt::format("expected a map of overrides or a list of KEY=VALUE, got {}",
                                                        config_detail::describe_node(*set)));
    }
  }
  return c;
}

Axis make_axis(const SpecReader& r, const std::vector<std::pair<std::string, const TreeNode*>>& leaves,
               const std::string& context, const SourceLoc& where) {
  Axis axis;
  axis.where = r.where(where);
  for (const auto& [key, node] : leaves) {
    axis.keys.push_back(key);
    axis.values.push_back(r.param_values(*node, context + "." + key));
  }
  return axis;
}

void read_parameters(const SpecReader& r, const TreeNode& node, SweepSpec& spec) {
  r.expect_map(node, "parameters", "a map with grid: and/or zip:");
  r.check_keys(node, {"grid", "zip"}, "parameters", "grid (cartesian product) or zip (lists varied together)");
  std::set<std::string> seen;
  const auto note = [&](const std::string& key, const TreeNode& at, const std::string& context) {
    if (!seen.insert(key).second) r.fail(at.where, context, "this parameter is varied twice (in grid and zip, or in two zip groups)");
  };
  if (const TreeNode* grid = node.find("grid")) {
    r.expect_map(*grid, "parameters.grid", "a map of parameter: [values] or {from, to, step}");
    std::vector<std::pair<std::string, const TreeNode*>> leaves;
    r.flatten(*grid, "", leaves);
    for (const auto& leaf : leaves) {
      note(leaf.first, *leaf.second, "parameters.grid." + leaf.first);
      spec.axes.push_back(make_axis(r, {leaf}, "parameters.grid", leaf.second->where));
    }
  }
  if (const TreeNode* zip = node.find("zip")) {
    if (zip->kind != TreeNode::Kind::Sequence)
      r.fail(zip->where, "parameters.zip", fmt::format("expected a list of groups (- {{a: [..], b: [..]}}), got {}",
                                                       config_detail::describe_node(*zip)));
    for (std::size_t g = 0; g < zip->items.size(); ++g) {
      const std::string context = fmt::format("parameters.zip[{}]", g);
      r.expect_map(zip->items[g], context, "a map of parameter: [values], each list as long");
      std::vector<std::pair<std::string, const TreeNode*>> leaves;
      r.flatten(zip->items[g], "", leaves);
      for (const auto& leaf : leaves) note(leaf.first, *leaf.second, context + "." + leaf.first);
      Axis axis = make_axis(r, leaves, context, zip->items[g].where);
      for (std::size_t i = 0; i < axis.keys.size(); ++i) {
        if (axis.values[i].is_range())
          r.fail(leaves[i].second->where, context + "." + axis.keys[i], "a zip group takes lists, not ranges");
        if (axis.values[i].list.size() != axis.values[0].list.size())
          r.fail(leaves[i].second->where, context + "." + axis.keys[i],
                 fmt::format("{} values, but {} has {}: the lists of a zip group go together and must be as long",
                             axis.values[i].list.size(), axis.keys[0], axis.values[0].list.size()));
      }
      spec.axes.push_back(std::move(axis));
    }
  }
}

Sensitivity read_sensitivity(const SpecReader& r, const TreeNode& node) {
  r.expect_map(node, "sensitivity", "a map with step: and parameters:");
  r.check_keys(node, {"step", "parameters"}, "sensitivity", "step (10% or 0.1) and parameters (a list of config keys)");
  Sensitivity s;
  s.where = r.where(node.where);
  const TreeNode* step = node.find("step");
  if (!step) r.fail(node.where, "sensitivity.step", "missing: the relative change of each parameter (10% or 0.1)");
  std::string text = r.scalar(*step, "sensitivity.step", "a fraction (0.1) or a percentage (10%)");
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  s.step = percent ? value / 100 : value;
  if (text.empty() || *end != '\0' || !(s.step > 0) || !(s.step < 1))
    r.fail(step->where, "sensitivity.step", fmt::format("expected a fraction in (0, 1) or a percentage in (0%, 100%), got '{}'", step->scalar));
  const TreeNode* keys = node.find("parameters");
  if (!keys || keys->kind != TreeNode::Kind::Sequence || keys->items.empty())
    r.fail(keys ? keys->where : node.where, "sensitivity.parameters", "expected a non-empty list of config keys ([sm.count, hbm.bandwidth])");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < keys->items.size(); ++i) {
    const std::string context = fmt::format("sensitivity.parameters[{}]", i);
    const std::string key = r.scalar(keys->items[i], context, "a dotted config key (sm.count)");
    if (!seen.insert(key).second) r.fail(keys->items[i].where, context, fmt::format("'{}' is listed twice", key));
    s.keys.push_back(key);
  }
  return s;
}

WorkloadEntry read_workload(const SpecReader& r, const TreeNode& node, std::size_t index) {
  const std::string context = fmt::format("workloads[{}]", index);
  r.expect_map(node, context, "a map: {trace: FILE}, {synth: KIND, KEY: value, ...} or {llm: MODEL, ...}");
  WorkloadEntry w;
  w.where = r.where(node.where);
  const int kinds = (node.find("trace") != nullptr) + (node.find("synth") != nullptr) + (node.find("llm") != nullptr);
  if (kinds != 1)
    r.fail(node.where, context, "expected exactly one of trace: FILE, synth: KIND or llm: MODEL");
  if (const TreeNode* name = node.find("name")) w.label = r.scalar(*name, context + ".name", "a label");
  if (const TreeNode* trace = node.find("trace")) {
    r.check_keys(node, {"trace", "name"}, context, "trace and name (a trace takes no keys)");
    w.trace = r.relative_path(r.scalar(*trace, context + ".trace", "a trace file"));
  } else if (const TreeNode* synth = node.find("synth")) {
    w.synthesizer = r.scalar(*synth, context + ".synth", "a synthesizer kind (warpsim synth --help)");
    for (const TreeEntry& e : node.entries) {
      if (e.key == "synth" || e.key == "name") continue;
      if (e.value.kind == TreeNode::Kind::Map)
        r.fail(e.key_where, context + "." + e.key, "expected a value or a list of values of the synthesizer's key");
      w.keys.emplace_back(e.key, r.value_list(e.value, context + "." + e.key));
    }
  } else {
    const TreeNode& llm = *node.find("llm");
    w.llm = r.scalar(llm, context + ".llm", "a model (as warpsim llm --model)");
    // A path (not a preset name) is relative to the spec.
    if (w.llm.find('/') != std::string::npos || (w.llm.size() > 5 && w.llm.substr(w.llm.size() - 5) == ".json"))
      w.llm = r.relative_path(w.llm);
    r.check_keys(node, {"llm", "name", "phase", "batch", "prompt", "context", "dtype", "kv_dtype", "tp", "ep", "moe_skew"},
                 context, "llm, name and the scenario's phase, batch, prompt, context, dtype, kv_dtype, tp, ep, moe_skew "
                 "(warpsim llm --help)");
    for (const TreeEntry& e : node.entries)
      if (e.key != "llm" && e.key != "name") w.keys.emplace_back(e.key, r.value_list(e.value, context + "." + e.key));
  }
  return w;
}

}  // namespace

SweepSpec load_sweep_spec(const std::string& path) {
  const std::string text = read_input_file(path, kMaxConfigFileBytes, "sweep spec");
  const TreeNode doc = config_detail::parse_yaml(text, path);
  const SpecReader r(path);
  SweepSpec spec;
  spec.file = path;
  Fnv1a64 h;
  h.add(text);
  spec.hash = h.hex();
  if (doc.kind != TreeNode::Kind::Map)
    r.fail(doc.where, "(top level)", fmt::format("expected a map with base:, candidates:, parameters: and workloads:, got {}",
                                                  config_detail::describe_node(doc)));
  r.check_keys(doc, {"name", "base", "candidates", "parameters", "sensitivity", "workloads"}, "",
               "name, base, candidates, parameters, sensitivity or workloads (configs/sweeps/README.md)");
  if (const TreeNode* sensitivity = doc.find("sensitivity")) {
    for (const char* other : {"candidates", "parameters"})
      if (const TreeNode* n = doc.find(other))
        r.fail(n->where, other, "a spec with sensitivity: has no candidates: or parameters: (its candidates are the base and "
                                "each parameter perturbed)");
    spec.sensitivity = read_sensitivity(r, *sensitivity);
  }
  spec.name = fs::path(path).stem().string();
  if (const TreeNode* name = doc.find("name")) spec.name = r.scalar(*name, "name", "the sweep's name");
  const TreeNode* base = doc.find("base");
  if (!base) r.fail(doc.where, "base", "missing: the GPU config every candidate starts from (a name such as h100_sxm, or a path)");
  spec.base = r.scalar(*base, "base", "a GPU config name or path");
  if (!is_config_name(spec.base)) spec.base = r.relative_path(spec.base);
  if (const TreeNode* candidates = doc.find("candidates")) {
    r.expect_map(*candidates, "candidates", "a map of name: {config: FILE, set: {...}}");
    for (const TreeEntry& e : candidates->entries) {
      // Candidate names are the YAML tree's keys, which it splits at dots: a dotted name is a nested map.
      spec.candidates.push_back(read_candidate(r, e));
    }
  }
  if (spec.candidates.empty()) {
    Candidate only;
    only.name = is_config_name(spec.base) ? spec.base : fs::path(spec.base).stem().string();
    only.where = r.where(base->where);
    spec.candidates.push_back(only);
  }
  if (const TreeNode* parameters = doc.find("parameters")) read_parameters(r, *parameters, spec);
  const TreeNode* workloads = doc.find("workloads");
  if (!workloads || workloads->kind != TreeNode::Kind::Sequence || workloads->items.empty())
    r.fail(workloads ? workloads->where : doc.where, "workloads",
           "expected a non-empty list of workloads (- synth: gemm ..., - trace: FILE)");
  for (std::size_t i = 0; i < workloads->items.size(); ++i) spec.workloads.push_back(read_workload(r, workloads->items[i], i));
  return spec;
}

}  // namespace warpsim::sweep
