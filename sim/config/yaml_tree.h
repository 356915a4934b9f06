// Internal to sim/config: a YAML document as a tree that remembers, for every key and value, the file, line and
// column it was written at, so that values merged from several files (and --set overrides) keep their origin.
#pragma once

#include <string>
#include <vector>

#include "sim/config/params.h"

namespace warpsim::config_detail {

struct TreeEntry;

struct TreeNode {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string scalar;              // Scalar: the text, unquoted
  std::vector<TreeEntry> entries;  // Map, in document order; keys never contain '.' (split into nested maps)
  std::vector<TreeNode> items;     // Sequence, in document order (no config parameter takes a list; other YAML
                                   // inputs, such as validate's reference files, are lists)
  SourceLoc where;                 // where the value starts

  const TreeNode* find(const std::string& key) const;
  TreeNode* find(const std::string& key);
  void erase(const std::string& key);
};

struct TreeEntry {
  std::string key;
  SourceLoc key_where;
  TreeNode value;
};

// "pipes.fp32.latency" -> {"pipes", "fp32", "latency"}.
std::vector<std::string> split_dotted(const std::string& key);

// `leaf` under the dotted path `key` ("a.b" -> {a: {b: leaf}}), keys located at `key_where`. Throws ConfigError
// naming `name_in_messages` (the key with its enclosing path) when a component is empty ("a..b").
TreeNode make_nested(const std::string& key, TreeNode leaf, const SourceLoc& key_where,
                     const std::string& name_in_messages);

// Parses YAML text. Dotted keys (`pipes.fp32.latency: 4`) become nested maps. Throws ConfigError naming
// file:line:col on a syntax error, a non-scalar key or a key given twice in one mapping.
TreeNode parse_yaml(const std::string& text, const std::string& file);

// Parses the value of an override as YAML; every node gets the location `where`.
TreeNode parse_yaml_value(const std::string& text, const SourceLoc& where);

// Deep merge: maps merge key by key (the overlay's entries win), anything else replaces the base, except that an
// empty value over a map leaves the map alone (`sm:` with nothing under it sets nothing).
void merge_into(TreeNode& base, TreeNode overlay);

// "a map", "a list", "nothing", or the scalar quoted: the "got ..." of a message.
std::string describe_node(const TreeNode& node);

}  // namespace warpsim::config_detail
