#include "app/validate/reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include "app/gpu_configs.h"
#include "app/validate/metrics.h"
#include "app/validate/workload_fields.h"
#include "sim/config/config.h"
#include "sim/config/input_file.h"
#include "sim/config/yaml_tree.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "traces/synth/registry.h"

namespace fs = std::filesystem;

namespace warpsim {
namespace {

using config_detail::describe_node;
using config_detail::TreeEntry;
using config_detail::TreeNode;

const std::vector<std::string> kFields = {"id",       "gpu",    "set",      "workload", "metric", "measured",
                                          "source",   "category", "tunes",  "note"};

// "FILE:LINE: case ID: " for messages about one case.
std::string case_prefix(const std::string& file, int line, const std::string& id) {
  std::string where = file.empty() ? "" : line > 0 ? fmt::format("{}:{}: ", file, line) : file + ": ";
  return where + (id.empty() ? "case without id: " : fmt::format("case {}: ", id));
}

// The line a field of the case was written at (the case's own line when it is not known).
using LineOf = std::function<int(const std::string& field)>;

[[noreturn]] void fail(const ReferenceCase& c, int line, const std::string& what) {
  throw InputError(case_prefix(c.file, line, c.id) + what);
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string hint = did_you_mean(word, candidates);
  return hint.empty() ? fmt::format(" (expected one of: {})", fmt::join(candidates, ", "))
                      : fmt::format("; did you mean '{}'?", hint);
}

// One config per GPU and overrides: loading checks the config file and the `set:` values before anything runs.
void check_gpu(const ReferenceCase& c, const LineOf& line_of, std::set<std::string>& checked) {
  if (!checked.insert(fmt::format("{}\n{}", c.gpu, fmt::join(c.overrides, "\n"))).second) return;
  try {
    const std::string file = resolve_gpu_config(c.gpu);
    if (const std::string problem = input_file_problem(file, kMaxConfigFileBytes); !problem.empty())
      throw InputError(fmt::format("cannot open GPU config '{}': {}", file, problem));
    Config::load(file, c.overrides, Registry::instance(), config_dirs());
  } catch (const InputError& e) {
    fail(c, line_of(c.overrides.empty() ? "gpu" : "set"), fmt::format("gpu {}: {}", c.gpu, e.what()));
  }
}

void check_workload(const ReferenceCase& c, const LineOf& line_of) {
  const SynthRegistry& synths = SynthRegistry::instance();
  if (c.kind.empty()) fail(c, line_of("workload"), "workload: 'kind' is missing (a registered synthesizer, e.g. gemm)");
  const SynthesizerInfo* info = synths.find(c.kind);
  if (!info) {
    // Close to a registered kind: a typo, not a workload that is still to be built.
    const std::string hint = did_you_mean(c.kind, synths.kinds());
    if (!hint.empty())
      fail(c, line_of("workload"), fmt::format("workload: unknown kind '{}'; did you mean '{}'?", c.kind, hint));
  } else {
    std::vector<std::string> names;
    for (const ParamSpec& key : info->keys) names.push_back(key.name);
    for (const auto& [key, value] : c.keys)
      if (std::find(names.begin(), names.end(), key) == names.end())
        fail(c, line_of("workload." + key),
             fmt::format("workload: {} has no key '{}'{}", c.kind, key, suggestion(key, names)));
  }
  if (c.metric.empty()) fail(c, line_of("metric"), "'metric' is missing");
  if (!find_metric(c.kind, c.metric))
    fail(c, line_of("metric"), fmt::format("unknown metric '{}' for kind {}{}", c.metric, c.kind,
                                            suggestion(c.metric, metric_names(c.kind))));
}

// `checked`: the GPU configs (with their overrides) already loaded without error.
void check_case(const ReferenceCase& c, const LineOf& line_of, std::set<std::string>& checked) {
  if (c.id.empty()) fail(c, c.line, "'id' is missing");
  if (c.gpu.empty()) fail(c, c.line, "'gpu' is missing (a shipped config name such as a100_sxm, or a YAML path)");
  if (c.source.empty()) fail(c, c.line, "'source' is missing (where the measured figure comes from)");
  if (!std::isfinite(c.measured) || c.measured <= 0)
    fail(c, line_of("measured"), fmt::format("measured: expected a positive number, got {}", c.measured));
  check_workload(c, line_of);
  check_gpu(c, line_of, checked);
}

// --- reading the YAML ----------------------------------------------------------------------------------------

std::string scalar(const ReferenceCase& c, const TreeNode& node, const std::string& field) {
  return read_scalar(node, field, [&](int line) { return case_prefix(c.file, line, c.id); });
}

ReferenceCase read_case(const TreeNode& node, const std::string& file, std::size_t index,
                        std::map<std::string, int>& field_lines) {
  ReferenceCase c;
  c.file = file;
  c.line = node.where.line;
  if (node.kind != TreeNode::Kind::Map)
    throw InputError(fmt::format("{}:{}: case {} of the list: expected a map (id:, gpu:, workload:, ...), got {}", file,
                                 c.line, index + 1, describe_node(node)));
  if (const TreeNode* id = node.find("id")) {
    if (id->kind == TreeNode::Kind::Map)  // `id: a.b: x` or a dotted key under id: not an id
      fail(c, id->where.line, "id: expected a value, got a map");
    c.id = scalar(c, *id, "id");
  }
  for (const TreeEntry& e : node.entries) {
    field_lines[e.key] = e.key_where.line;
    if (std::find(kFields.begin(), kFields.end(), e.key) == kFields.end())
      fail(c, e.key_where.line, fmt::format("unknown field '{}'{}", e.key, suggestion(e.key, kFields)));
    if (e.key == "gpu") c.gpu = scalar(c, e.value, "gpu");
    if (e.key == "metric") c.metric = scalar(c, e.value, "metric");
    if (e.key == "source") c.source = scalar(c, e.value, "source");
    if (e.key == "category") c.category = scalar(c, e.value, "category");
    if (e.key == "tunes") c.tunes = scalar(c, e.value, "tunes");
    if (e.key == "note") c.note = scalar(c, e.value, "note");
    if (e.key == "measured") {
      const std::string text = scalar(c, e.value, "measured");
      char* end = nullptr;
      errno = 0;
      c.measured = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
        fail(c, e.value.where.line, fmt::format("measured: expected a number (in the metric's unit), got '{}'", text));
    }
    const FieldErrorPrefix prefix = [&](int line) { return case_prefix(c.file, line, c.id); };
    if (e.key == "set") c.overrides = read_overrides(e.value, prefix);
    if (e.key == "workload") {
      WorkloadFields w = read_workload(e.value, prefix);
      for (const auto& [key, line] : w.lines)
        if (key != "kind") field_lines["workload." + key] = line;
      c.kind = std::move(w.kind);
      c.keys = std::move(w.keys);
    }
  }
  if (!node.find("measured")) fail(c, c.line, "'measured' is missing (the figure measured on the GPU)");
  if (!node.find("metric")) fail(c, c.line, "'metric' is missing (e.g. time_us)");
  if (!node.find("workload")) fail(c, c.line, "'workload' is missing ({kind: gemm, m: ..., n: ..., k: ...})");
  if (c.category.empty()) c.category = c.kind;
  // A GPU given as a path is relative to the reference file, wherever warpsim runs.
  if (!c.gpu.empty() && !is_config_name(c.gpu) && fs::path(c.gpu).is_relative())
    c.gpu = (fs::path(file).parent_path() / c.gpu).lexically_normal().string();
  return c;
}

}  // namespace

void check_reference_case(const ReferenceCase& c, std::set<std::string>& checked_configs) {
  check_case(c, [&](const std::string&) { return c.line; }, checked_configs);
}

std::vector<ReferenceCase> load_reference(const std::string& path) {
  const TreeNode doc = config_detail::parse_yaml(read_input_file(path, kMaxConfigFileBytes, "reference file"), path);
  if (doc.kind != TreeNode::Kind::Sequence)
    throw InputError(fmt::format("{}:{}: expected a list of cases (- id: ...), got {}", path,
                                 doc.where.line > 0 ? doc.where.line : 1, describe_node(doc)));
  std::vector<ReferenceCase> cases;
  std::map<std::string, int> first_line;  // id -> line
  std::set<std::string> checked_configs;
  for (std::size_t i = 0; i < doc.items.size(); ++i) {
    std::map<std::string, int> field_lines;
    ReferenceCase c = read_case(doc.items[i], path, i, field_lines);
    const LineOf line_of = [&](const std::string& field) {
      const auto it = field_lines.find(field);
      return it != field_lines.end() ? it->second : c.line;
    };
    if (const auto [it, inserted] = first_line.emplace(c.id, c.line); !c.id.empty() && !inserted)
      fail(c, line_of("id"), fmt::format("duplicate id (first at line {})", it->second));
    check_case(c, line_of, checked_configs);
    cases.push_back(std::move(c));
  }
  if (cases.empty()) throw InputError(fmt::format("{}: no cases (expected a list of cases: - id: ...)", path));
  return cases;
}

}  // namespace warpsim
