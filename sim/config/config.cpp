// Config loading: files with `base:` inheritance, --set overrides, validation against the registered schemas,
// and the resolved YAML dump.
#include "sim/config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <sstream>

#include "sim/config/input_file.h"
#include "sim/config/text_util.h"
#include "sim/config/yaml_tree.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

namespace warpsim {

namespace fs = std::filesystem;
using config_detail::describe_node;
using config_detail::join;
using config_detail::quoted;
using config_detail::TreeEntry;
using config_detail::TreeNode;
using config_detail::trim;

namespace {

constexpr const char* kBaseKey = "base";  // the only reserved top-level key
constexpr const char* kImplKey = "impl";  // inside a section: which implementation

[[noreturn]] void fail_at(const SourceLoc& where, const std::string& dotted_key, const std::string& what) {
  throw ConfigError(where.str() + ": " + dotted_key + ": " + what);
}

std::string join_quoted(const std::vector<std::string>& items) {
  std::vector<std::string> q;
  for (const std::string& item : items) q.push_back("'" + item + "'");
  return join(q);
}

std::string suggestion_text(const std::string& suggestion) {
  return suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?";
}

// The config loader's errors are ConfigErrors; `error_prefix` says where a `base:` named the file.
std::string read_config_file(const std::string& path, const std::string& error_prefix) {
  try {
    return read_input_file(path, kMaxConfigFileBytes, "config file");
  } catch (const InputError& e) {
    throw ConfigError(error_prefix + e.what());
  }
}

// --- expectations: the "expected ..." part of messages ------------------------------------------------------------

std::string range_text(const ParamSpec& spec) {
  // UInt and quantities cannot be negative, so ">= 0" would only be noise for them.
  const bool lower = std::isfinite(spec.min) && (spec.min != 0.0 || spec.type == ParamType::Real);
  const bool upper = std::isfinite(spec.max);
  if (upper && std::isfinite(spec.min)) {
    return " in [" + format_quantity(spec.min, spec.type) + ", " + format_quantity(spec.max, spec.type) + "]";
  }
  if (upper) return " <= " + format_quantity(spec.max, spec.type);
  if (lower) return " >= " + format_quantity(spec.min, spec.type);
  return "";
}

std::string expectation(const ParamSpec& spec) {
  switch (spec.type) {
    case ParamType::UInt: return "unsigned integer" + range_text(spec);
    case ParamType::Real: return "real number" + range_text(spec);
    case ParamType::Bool: return "true or false";
    case ParamType::String: return "a string";
    case ParamType::Choice: return "one of " + join_quoted(spec.choices);
    case ParamType::Frequency:
    case ParamType::Bandwidth:
    case ParamType::Size:
    case ParamType::Power:
    case ParamType::Energy:
    case ParamType::Duration: return std::string("a ") + param_type_name(spec.type) + range_text(spec);
  }
  return "?";
}

// Parses `node` (a scalar, or an empty value) as the parameter `spec`; `dotted_key` names it in messages.
ParamValue parse_value(const ParamSpec& spec, const TreeNode& node, const std::string& dotted_key) {
  const bool is_scalar = node.kind == TreeNode::Kind::Scalar;
  if (!is_scalar) fail_at(node.where, dotted_key, "expected " + expectation(spec) + ", got " + describe_node(node));
  ParamValue v;
  v.type = spec.type;
  v.text = node.scalar;
  v.where = node.where;
  const std::string& text = node.scalar;
  switch (spec.type) {
    case ParamType::UInt:
    case ParamType::Real:
    case ParamType::Frequency:
    case ParamType::Bandwidth:
    case ParamType::Size:
    case ParamType::Power:
    case ParamType::Energy:
    case ParamType::Duration: {
      std::string error;
      if (!parse_quantity(text, spec.type, v.number, error)) {
        // For plain numbers the range says more than parse_quantity's "expected an unsigned integer".
        const bool plain_number = spec.type == ParamType::UInt || spec.type == ParamType::Real;
        fail_at(node.where, dotted_key, plain_number ? "expected " + expectation(spec) + ", got " + quoted(text)
                                                     : error);
      }
      if (v.number < spec.min || v.number > spec.max) {
        fail_at(node.where, dotted_key, "expected " + expectation(spec) + ", got " + text);
      }
      break;
    }
    case ParamType::Bool:
      if (text != "true" && text != "false") {
        fail_at(node.where, dotted_key, "expected true or false, got " + quoted(text));
      }
      v.flag = text == "true";
      break;
    case ParamType::String: break;
    case ParamType::Choice:
      if (std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
        fail_at(node.where, dotted_key,
                "expected " + expectation(spec) + ", got " + quoted(text) +
                    suggestion_text(did_you_mean(text, spec.choices)));
      }
      break;
  }
  return v;
}

// --- loading: files, bases, overrides -----------------------------------------------------------------------------

// Follows `base:` chains and applies overrides, producing one merged tree.
class Loader {
 public:
  Loader(const Registry& registry, std::vector<std::string> config_dirs)
      : registry_(registry), config_dirs_(std::move(config_dirs)) {}

  // `doc` is the parsed file `display_name`, whose bases are looked up relative to `dir`.
  TreeNode resolve(TreeNode doc, const std::string& display_name, const fs::path& identity, const fs::path& dir) {
    if (doc.kind == TreeNode::Kind::Null) doc.kind = TreeNode::Kind::Map;  // an empty file sets nothing
    if (doc.kind != TreeNode::Kind::Map) {
      throw ConfigError(doc.where.str() + ": expected a map of sections (e.g. `sm:`) at the top level, got " +
                        describe_node(doc));
    }
    const TreeNode* base_node = doc.find(kBaseKey);
    if (!base_node) return doc;

    if (base_node->kind != TreeNode::Kind::Scalar || base_node->scalar.empty()) {
      fail_at(base_node->where, kBaseKey, "expected the name of a config file, got " + describe_node(*base_node));
    }
    const SourceLoc base_where = base_node->where;
    const fs::path base_path = base_file(base_node->scalar, base_where, dir);
    const fs::path base_identity = identify(base_path);
    chain_.emplace_back(identity, display_name);
    if (std::any_of(chain_.begin(), chain_.end(), [&](const auto& link) { return link.first == base_identity; })) {
      std::vector<std::string> names;
      for (const auto& link : chain_) names.push_back(link.second);
      names.push_back(base_path.string());
      fail_at(base_where, kBaseKey, "inheritance cycle: " + join(names, " -> "));
    }
    files.push_back(base_path.string());
    const std::string text = read_config_file(base_path.string(), base_where.str() + ": " + kBaseKey + ": ");
    TreeNode merged = resolve(config_detail::parse_yaml(text, base_path.string()), base_path.string(),
                              base_identity, base_path.parent_path());
    chain_.pop_back();

    doc.erase(kBaseKey);
    merge_document(merged, std::move(doc));
    return merged;
  }

  // A named base from the config directories; a path relative to the including file's directory.
  fs::path base_file(const std::string& base, const SourceLoc& where, const fs::path& dir) const {
    if (!is_config_name(base)) return (dir / base).lexically_normal();
    const std::string found = find_named_config(base, config_dirs_);
    if (found.empty()) {
      fail_at(where, kBaseKey,
              "no config named '" + base + "' (looked for " + base + ".yaml in " +
                  (config_dirs_.empty() ? std::string("no config directories") : join(config_dirs_)) +
                  "); write a path such as ./" + base + ".yaml for a file next to this one");
    }
    return fs::path(found).lexically_normal();
  }

  // Merges "section.key=value" overrides over `doc`, later ones winning.
  void apply_overrides(TreeNode& doc, const std::vector<std::string>& overrides) const {
    // Combined first, so that their order does not matter for an impl switch (see merge_document).
    TreeNode combined;
    combined.kind = TreeNode::Kind::Map;
    for (const std::string& assignment : overrides) {
      const SourceLoc where = SourceLoc::command_line(assignment);
      const std::size_t equals = assignment.find('=');
      const std::string key = equals == std::string::npos ? "" : trim(assignment.substr(0, equals));
      if (key.empty()) throw ConfigError(where.str() + ": expected SECTION.KEY=VALUE, e.g. --set sm.count=144");
      if (config_detail::split_dotted(key).front() == kBaseKey) {
        fail_at(where, kBaseKey, "cannot be set on the command line; write `base:` in a config file");
      }
      TreeNode value = config_detail::parse_yaml_value(assignment.substr(equals + 1), where);
      config_detail::merge_into(combined, config_detail::make_nested(key, std::move(value), where, key));
    }
    merge_document(doc, std::move(combined));
  }

  // An id for cycle detection: the same file reached by different relative paths is the same file.
  static fs::path identify(const fs::path& path) {
    std::error_code ignored;
    const fs::path canonical = fs::weakly_canonical(path, ignored);
    return canonical.empty() ? path.lexically_normal() : canonical;
  }

  std::vector<std::string> files;  // read so far: top-level file, then bases

 private:
  // Deep merge of two documents, except that a section whose `impl:` changes keeps only the parameters its slot
  // shares between implementations (hbm.bandwidth, hbm.channels): the old implementation's own mean nothing to
  // the new one.
  void merge_document(TreeNode& base, TreeNode overlay) const {
    for (const TreeEntry& entry : overlay.entries) {
      TreeNode* existing = base.find(entry.key);
      if (!existing || !switches_impl(entry.key, *existing, entry.value)) continue;
      const SlotDeclaration* slot = registry_.slot(entry.key);
      std::vector<std::string> keep;  // top-level keys of the shared parameters ("pipes" of "pipes.fp32.latency")
      if (slot && slot->shared_schema) {
        const Schema shared = slot->shared_schema();
        for (const ParamSpec& p : shared.params()) keep.push_back(config_detail::split_dotted(p.name).front());
      }
      std::vector<TreeEntry> kept;
      if (existing->kind == TreeNode::Kind::Map)
        for (TreeEntry& e : existing->entries)
          if (std::find(keep.begin(), keep.end(), e.key) != keep.end()) kept.push_back(std::move(e));
      existing->entries = std::move(kept);
    }
    config_detail::merge_into(base, std::move(overlay));
  }

  bool switches_impl(const std::string& section, const TreeNode& base, const TreeNode& overlay) const {
    const auto impl_of = [](const TreeNode& node) -> const TreeNode* {
      const TreeNode* impl = node.kind == TreeNode::Kind::Map ? node.find(kImplKey) : nullptr;
      return impl && impl->kind == TreeNode::Kind::Scalar ? impl : nullptr;
    };
    const TreeNode* new_impl = impl_of(overlay);
    if (!new_impl) return false;
    const TreeNode* old_impl = impl_of(base);
    const std::string old_name = old_impl ? old_impl->scalar : "";  // "" = the default implementation
    const ComponentType* old_type = registry_.find(section, old_name);
    const ComponentType* new_type = registry_.find(section, new_impl->scalar);
    return old_type && new_type ? old_type != new_type : old_name != new_impl->scalar;
  }

  const Registry& registry_;
  const std::vector<std::string> config_dirs_;
  std::vector<std::pair<fs::path, std::string>> chain_;  // files being resolved: identity, name for messages
};

// --- validation ---------------------------------------------------------------------------------------------------

struct ValidatedSection {
  Params params;
  std::vector<std::string> param_order;
  bool show_impl = false;
  SourceLoc impl_where;
};

class Validator {
 public:
  Validator(const Registry& registry, std::string top_file) : registry_(registry), top_file_(std::move(top_file)) {}

  // Every registered section, in registration order. Errors come in document order; the first one is thrown.
  std::vector<ValidatedSection> validate(const TreeNode& doc) {
    std::map<std::string, ValidatedSection> done;
    for (const TreeEntry& entry : doc.entries) {
      if (!registry_.find(entry.key)) unknown_section(entry);
      done.emplace(entry.key, validate_section(entry.key, &entry.value));
    }
    std::vector<ValidatedSection> out;
    for (const std::string& section : registry_.sections()) {
      auto it = done.find(section);
      out.push_back(it != done.end() ? std::move(it->second) : validate_section(section, nullptr));
    }
    return out;
  }

 private:
  const Schema& schema_of(const ComponentType* type) {
    auto it = schemas_.find(type);
    if (it == schemas_.end()) {
      it = schemas_.emplace(type, registry_.schema(*type)).first;
    }
    return it->second;
  }

  // `node` is the section's value, nullptr when the config does not mention the section.
  ValidatedSection validate_section(const std::string& section, const TreeNode* node) {
    if (node && (node->kind == TreeNode::Kind::Scalar || node->kind == TreeNode::Kind::Sequence)) {
      fail_at(node->where, section, "expected a map of the section's parameters, got " + describe_node(*node));
    }
    const TreeNode* impl_node = node ? node->find(kImplKey) : nullptr;
    const ComponentType* type = registry_.find(section);
    if (impl_node) type = find_impl(section, *impl_node);

    const Schema& schema = schema_of(type);
    ValidatedSection out{Params(section, type->impl), {}, registry_.implementations(section).size() > 1,
                         impl_node ? impl_node->where : SourceLoc::schema_default()};
    if (node) read_params(*node, "", schema, out.params);
    for (const ParamSpec& spec : schema.params()) {
      out.param_order.push_back(spec.name);
      if (out.params.has(spec.name)) continue;
      const std::string dotted = section + "." + spec.name;
      if (spec.required()) {
        throw ConfigError(top_file_ + ": " + dotted + ": required parameter is not set (" + expectation(spec) +
                          "); set it under `" + section + ":` in " + top_file_ + " or with --set " + dotted +
                          "=VALUE");
      }
      TreeNode default_node;
      default_node.kind = TreeNode::Kind::Scalar;
      default_node.scalar = *spec.default_text;
      default_node.where = SourceLoc::schema_default();
      out.params.set(spec.name, parse_value(spec, default_node, dotted));
    }
    return out;
  }

  const ComponentType* find_impl(const std::string& section, const TreeNode& impl_node) {
    std::vector<std::string> names;
    for (const ComponentType* t : registry_.implementations(section)) names.push_back(t->impl);
    const std::string dotted = section + "." + kImplKey;
    if (impl_node.kind != TreeNode::Kind::Scalar) {
      fail_at(impl_node.where, dotted, "expected one of " + join_quoted(names) + ", got " + describe_node(impl_node));
    }
    const ComponentType* type = registry_.find(section, impl_node.scalar);
    if (!type) {
      fail_at(impl_node.where, dotted,
              "unknown implementation '" + impl_node.scalar + "' of section " + section +
                  suggestion_text(did_you_mean(impl_node.scalar, names)) + " (implementations: " + join(names) +
                  ")");
    }
    return type;
  }

  // Walks a section's (nested) map; `prefix` is the dotted path of `map` inside the section.
  void read_params(const TreeNode& map, const std::string& prefix, const Schema& schema, Params& params) {
    const std::string& section = params.section();
    for (const TreeEntry& entry : map.entries) {
      if (prefix.empty() && entry.key == kImplKey) continue;
      const std::string name = prefix.empty() ? entry.key : prefix + "." + entry.key;
      const std::string dotted = section + "." + name;
      const TreeNode& value = entry.value;
      if (const ParamSpec* spec = schema.find(name)) {
        params.set(name, parse_value(*spec, value, dotted));
      } else if (const std::vector<std::string> members = group_members(schema, name); !members.empty()) {
        if (value.kind == TreeNode::Kind::Map) {
          read_params(value, name, schema, params);
        } else if (value.kind != TreeNode::Kind::Null) {  // `pipes:` with nothing under it sets nothing
          fail_at(value.where, dotted, "expected a map (of " + join(members) + "), got " + describe_node(value));
        }
      } else {
        unknown_parameter(entry, name, schema, params);
      }
    }
  }

  // The parameters under the dotted group `name` ("pipes" -> "fp32.latency", ...); empty if it is no group.
  static std::vector<std::string> group_members(const Schema& schema, const std::string& name) {
    std::vector<std::string> members;
    const std::string prefix = name + ".";
    for (const ParamSpec& p : schema.params()) {
      if (p.name.compare(0, prefix.size(), prefix) == 0) members.push_back(p.name.substr(prefix.size()));
    }
    return members;
  }

  [[noreturn]] void unknown_parameter(const TreeEntry& entry, const std::string& name, const Schema& schema,
                                      const Params& params) {
    // Suggest among whole names and the groups on the way ("pipes", "pipes.fp32") for nested typos.
    std::vector<std::string> candidates;
    for (const ParamSpec& p : schema.params()) {
      const std::vector<std::string> parts = config_detail::split_dotted(p.name);
      std::string path;
      for (const std::string& part : parts) {
        path += (path.empty() ? "" : ".") + part;
        if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) candidates.push_back(path);
      }
    }
    const std::string suggestion = did_you_mean(name, candidates);
    std::string what = "unknown parameter" + suggestion_text(suggestion);

    // The key may be right but in the wrong place: another implementation of this section, or another section.
    std::vector<std::string> other_impls, other_sections;
    for (const std::string& section : registry_.sections()) {
      for (const ComponentType* t : registry_.implementations(section)) {
        if (!schema_of(t).find(name)) continue;
        if (section == params.section()) {
          if (t->impl != params.impl()) other_impls.push_back(t->impl);
        } else if (std::find(other_sections.begin(), other_sections.end(), section) == other_sections.end()) {
          other_sections.push_back(section);
        }
      }
    }
    if (!other_impls.empty()) {
      what += "; `" + name + "` is a parameter of implementation " + join_quoted(other_impls) + " of section " +
              params.section() + " (select it with `impl:`), not of '" + params.impl() + "'";
    }
    if (!other_sections.empty()) what += "; `" + name + "` is a parameter of section " + join(other_sections);
    if (suggestion.empty() && other_impls.empty() && other_sections.empty()) {
      std::vector<std::string> names;
      for (const ParamSpec& p : schema.params()) names.push_back(p.name);
      what += names.empty() ? "; section " + params.section() + " has no parameters"
                            : "; parameters of " + params.section() + ": " + join(names);
    }
    fail_at(entry.key_where, params.section() + "." + name, what);
  }

  [[noreturn]] void unknown_section(const TreeEntry& entry) {
    const std::vector<std::string> sections = registry_.sections();
    const std::string suggestion = did_you_mean(entry.key, sections);
    std::string what = "unknown section" + suggestion_text(suggestion);
    // A parameter written at the top level, e.g. `count: 4` instead of under `sm:`.
    std::vector<std::string> owners;
    for (const std::string& section : sections) {
      for (const ComponentType* t : registry_.implementations(section)) {
        if (schema_of(t).find(entry.key) && std::find(owners.begin(), owners.end(), section) == owners.end()) {
          owners.push_back(section);
        }
      }
    }
    if (!owners.empty()) what += "; `" + entry.key + "` is a parameter of section " + join(owners);
    if (suggestion.empty() && owners.empty()) what += "; sections: " + join(sections);
    fail_at(entry.key_where, entry.key, what);
  }

  const Registry& registry_;
  std::string top_file_;
  std::map<const ComponentType*, Schema> schemas_;  // schema() builds a new Schema on every call
};

// --- resolved YAML ------------------------------------------------------------------------------------------------

// A scalar as YAML: plain when that reads back the same, quoted otherwise (yaml-cpp decides).
std::string yaml_scalar(const std::string& text) {
  YAML::Emitter emitter;
  emitter << text;
  return emitter.c_str();
}

// Parameters of a section regrouped into nested maps by their dotted names, in schema order.
struct YamlNode {
  std::string key;
  const ParamValue* value = nullptr;  // set on leaves
  std::vector<YamlNode> children;
};

void insert(YamlNode& root, const std::string& name, const ParamValue& value) {
  YamlNode* node = &root;
  for (const std::string& part : config_detail::split_dotted(name)) {
    auto it = std::find_if(node->children.begin(), node->children.end(),
                           [&](const YamlNode& child) { return child.key == part; });
    if (it == node->children.end()) {
      node->children.push_back(YamlNode{part, nullptr, {}});
      it = std::prev(node->children.end());
    }
    node = &*it;
  }
  node->value = &value;
}

constexpr int kIndentWidth = 2;

void emit(std::ostream& out, const YamlNode& node, int depth) {
  for (const YamlNode& child : node.children) {
    out << std::string(depth * kIndentWidth, ' ') << yaml_scalar(child.key) << ":";
    if (child.value) {
      out << " " << yaml_scalar(child.value->text) << "  # " << child.value->where.str() << "\n";
    } else {
      out << "\n";
      emit(out, child, depth + 1);
    }
  }
}

fs::path parent_dir(const std::string& path) { return fs::path(path).parent_path(); }

}  // namespace

bool is_config_name(const std::string& text) {
  const std::string suffix = ".yaml";
  const bool has_suffix = text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  return !text.empty() && text.find('/') == std::string::npos && !has_suffix;
}

std::string find_named_config(const std::string& name, const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    const fs::path candidate = fs::path(dir) / (name + ".yaml");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return "";
}

Config Config::load(const std::string& path, const std::vector<std::string>& overrides, const Registry& registry,
                    const std::vector<std::string>& config_dirs) {
  return parse(read_config_file(path, ""), path, overrides, registry, parent_dir(path).string(), config_dirs);
}

Config Config::parse(const std::string& yaml_text, const std::string& name, const std::vector<std::string>& overrides,
                     const Registry& registry, const std::string& base_dir, const std::vector<std::string>& config_dirs) {
  Loader loader(registry, config_dirs);
  loader.files.push_back(name);
  // `name` is a path when called from load(); otherwise a label, and then only bases can form a cycle.
  std::error_code ignored;
  const fs::path identity =
      Loader::identify(fs::exists(name, ignored) ? fs::path(name) : fs::path(base_dir) / name);
  TreeNode doc = loader.resolve(config_detail::parse_yaml(yaml_text, name), name, identity, base_dir);
  loader.apply_overrides(doc, overrides);

  Config config;
  config.files_ = loader.files;
  config.section_order_ = registry.sections();
  std::vector<ValidatedSection> sections = Validator(registry, name).validate(doc);
  for (ValidatedSection& s : sections) {
    const std::string section = s.params.section();
    config.layouts_[section] = SectionLayout{std::move(s.param_order), s.show_impl, std::move(s.impl_where)};
    config.sections_.emplace(section, std::move(s.params));
  }
  return config;
}

const Params& Config::section(const std::string& name) const {
  const auto it = sections_.find(name);
  WARPSIM_ASSERT(it != sections_.end(), "config section '" + name + "' is not registered");
  return it->second;
}

std::string Config::resolved_yaml() const {
  std::ostringstream out;
  out << "# warpsim resolved configuration (generated)\n";
  out << "# from: " << join(files_) << "\n";
  for (const std::string& name : section_order_) {
    const Params& params = sections_.at(name);
    const SectionLayout& layout = layouts_.at(name);
    if (layout.param_order.empty() && !layout.show_impl) {
      out << yaml_scalar(name) << ": {}\n";
      continue;
    }
    out << yaml_scalar(name) << ":\n";
    if (layout.show_impl) {
      out << std::string(kIndentWidth, ' ') << kImplKey << ": " << yaml_scalar(params.impl()) << "  # "
          << layout.impl_where.str() << "\n";
    }
    YamlNode root;
    for (const std::string& param : layout.param_order) insert(root, param, params.value(param));
    emit(out, root, 1);
  }
  return out.str();
}

}  // namespace warpsim
