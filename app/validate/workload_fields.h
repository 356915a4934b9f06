// The fields that reference files (app/validate/reference.h) and Nsight Compute mapping files
// (app/validate/ncu_import.h) share, read from the bounded YAML tree of sim/config: `workload:` (a synthesizer kind
// and its keys) and `set:` (config overrides, as --set). One reader for both, so the two files accept the same
// forms and give the same messages.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/config/yaml_tree.h"

namespace warpsim {

// The start of a message about the value at `line` of the file being read: "FILE:LINE: " for a mapping file,
// "FILE:LINE: case ID: " for a reference file.
using FieldErrorPrefix = std::function<std::string(int line)>;

// `workload: {kind: gemm, m: 1024, ...}`: the kind ("" when absent) and the other keys, values as text.
struct WorkloadFields {
  std::string kind;
  std::map<std::string, std::string> keys;
  std::map<std::string, int> lines;  // the line of each key, "kind" included
};
// Throws InputError (prefix(line) + "workload: expected a map ...") when `node` is not a map or a value is not a
// scalar.
WorkloadFields read_workload(const config_detail::TreeNode& node, const FieldErrorPrefix& prefix);

// `set:`: a map ({hbm.bandwidth: 2TB/s}; dotted keys arrive as nested maps) or a list of "section.key=value";
// nothing for an empty value. Returns "section.key=value" strings, in document order. Throws InputError
// (prefix(line) + "set...: expected ...") for anything else.
std::vector<std::string> read_overrides(const config_detail::TreeNode& node, const FieldErrorPrefix& prefix);

// The text of a scalar; throws InputError (prefix(line) + "FIELD: expected a value, got a map") otherwise.
std::string read_scalar(const config_detail::TreeNode& node, const std::string& field, const FieldErrorPrefix& prefix);

}  // namespace warpsim
