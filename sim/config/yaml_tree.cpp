#include "sim/config/yaml_tree.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "sim/config/input_file.h"
#include "sim/config/text_util.h"
#include "sim/core/error.h"

namespace warpsim::config_detail {

const TreeNode* TreeNode::find(const std::string& key) const {
  for (const TreeEntry& e : entries) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

TreeNode* TreeNode::find(const std::string& key) {
  return const_cast<TreeNode*>(static_cast<const TreeNode&>(*this).find(key));
}

void TreeNode::erase(const std::string& key) {
  entries.erase(std::remove_if(entries.begin(), entries.end(), [&](const TreeEntry& e) { return e.key == key; }),
                entries.end());
}

namespace {

// Far above any real config (the shipped ones have a few hundred values and 4 levels), far below trouble.
constexpr std::size_t kMaxConfigNodes = 100000;
constexpr int kMaxConfigDepth = 64;

// Converts yaml-cpp nodes, taking locations from their marks (0-based; ours are 1-based) or, for override
// values, giving every node one fixed location.
class Converter {
 public:
  Converter(std::string file, std::optional<SourceLoc> fixed) : file_(std::move(file)), fixed_(std::move(fixed)) {}

  // `path`: the dotted key of `node`, for messages ("" at the top).
  TreeNode convert(const YAML::Node& node, const SourceLoc& fallback, const std::string& path, int depth = 0) {
    TreeNode out;
    out.where = location(node.Mark(), fallback);
    // Aliases make yaml-cpp nodes a graph that converting expands into a tree: nested aliases ("billion laughs")
    // would grow exponentially, so the tree is bounded before it is built.
    if (++nodes_converted_ > kMaxConfigNodes)
      throw ConfigError(out.where.str() + ": more than " + std::to_string(kMaxConfigNodes) +
                        " YAML values (nested aliases?); a config holds at most that many");
    if (depth > kMaxConfigDepth)
      throw ConfigError(out.where.str() + ": YAML nested deeper than " +
                        std::to_string(kMaxConfigDepth) + " levels");
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        // yaml-cpp marks the empty value of `count:` where the next token starts (the next line); its key is
        // the place to point at.
        out.where = fixed_ ? *fixed_ : fallback;
        out.kind = TreeNode::Kind::Null;
        break;
      case YAML::NodeType::Scalar:
        out.kind = TreeNode::Kind::Scalar;
        out.scalar = node.Scalar();
        break;
      case YAML::NodeType::Sequence:
        out.kind = TreeNode::Kind::Sequence;
        for (auto it = node.begin(); it != node.end(); ++it)
          out.items.push_back(convert(*it, out.where, path + "[" + std::to_string(out.items.size()) + "]", depth + 1));
        break;
      case YAML::NodeType::Map: convert_map(node, path, depth, out); break;
    }
    return out;
  }

 private:
  SourceLoc location(const YAML::Mark& mark, const SourceLoc& fallback) const {
    if (fixed_) return *fixed_;
    if (mark.is_null()) return fallback;
    return SourceLoc{file_, mark.line + 1, mark.column + 1, ""};
  }

  void convert_map(const YAML::Node& node, const std::string& path, int depth, TreeNode& out) {
    out.kind = TreeNode::Kind::Map;
    std::vector<std::pair<std::string, SourceLoc>> seen;  // raw keys of this mapping, to catch repeats
    for (auto it = node.begin(); it != node.end(); ++it) {
      const SourceLoc key_where = location(it->first.Mark(), out.where);
      if (!it->first.IsScalar()) {
        throw ConfigError(key_where.str() + ": " + (path.empty() ? "" : path + ": ") +
                          "expected a name as key, got " + (it->first.IsMap() ? "a map" : "a list"));
      }
      const std::string key = it->first.Scalar();
      const std::string dotted = path.empty() ? key : path + "." + key;
      for (const auto& [earlier_key, earlier_where] : seen) {
        if (earlier_key == key) {
          throw ConfigError(key_where.str() + ": " + dotted + ": key given twice in the same mapping (first at " +
                            earlier_where.str() + ")");
        }
      }
      seen.emplace_back(key, key_where);

      // `pipes.fp32.latency: 4` is `pipes: {fp32: {latency: 4}}`, so files and overrides may mix both forms.
      merge_new_keys(out, make_nested(key, convert(it->second, key_where, dotted, depth + 1), key_where, dotted),
                     path);
    }
  }

  // Like merge_into, but one document must not set a value twice, e.g. `sm.count: 1` and `sm: {count: 2}`.
  static void merge_new_keys(TreeNode& base, TreeNode overlay, const std::string& path) {
    using Kind = TreeNode::Kind;
    for (TreeEntry& entry : overlay.entries) {
      const std::string dotted = path.empty() ? entry.key : path + "." + entry.key;
      const auto existing = std::find_if(base.entries.begin(), base.entries.end(),
                                         [&](const TreeEntry& b) { return b.key == entry.key; });
      if (existing == base.entries.end()) {
        base.entries.push_back(std::move(entry));
      } else if (existing->value.kind == Kind::Map && entry.value.kind == Kind::Map) {
        merge_new_keys(existing->value, std::move(entry.value), dotted);
      } else if (existing->value.kind == Kind::Null && entry.value.kind == Kind::Map) {
        existing->value = std::move(entry.value);  // `sm:` with nothing under it sets nothing
      } else if (entry.value.kind != Kind::Null || existing->value.kind != Kind::Map) {
        throw ConfigError(entry.key_where.str() + ": " + dotted + ": given twice (also at " +
                          existing->key_where.str() + ")");
      }
    }
  }

  std::string file_;
  std::optional<SourceLoc> fixed_;
  std::size_t nodes_converted_ = 0;
};

// Where an error in `text` is: an override's fixed location, or file:line:col from 0-based coordinates.
SourceLoc error_location(const std::string& file, const std::optional<SourceLoc>& fixed, std::size_t line0,
                         std::size_t column0) {
  if (fixed) return *fixed;
  return SourceLoc{file, static_cast<int>(line0 + 1), static_cast<int>(column0 + 1), ""};
}

SourceLoc mark_location(const std::string& file, const std::optional<SourceLoc>& fixed, const YAML::Mark& mark) {
  if (!fixed && mark.is_null()) return SourceLoc{file, 0, 0, ""};
  return error_location(file, fixed, static_cast<std::size_t>(mark.line), static_cast<std::size_t>(mark.column));
}

// yaml-cpp would take a NUL byte as the end of the text or misread it as an escape; JSON results need UTF-8.
void check_text(const std::string& text, const std::string& file, const std::optional<SourceLoc>& fixed) {
  std::size_t offset = 0;
  const std::string problem = text_problem(text, offset);
  if (problem.empty()) return;
  const std::size_t newline = text.rfind('\n', offset);  // text[offset] is the bad byte, never a newline
  const std::size_t line0 = static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  const std::size_t column0 = newline == std::string::npos ? offset : offset - newline - 1;
  throw ConfigError(error_location(file, fixed, line0, column0).str() + ": " + problem);
}

// Where each document of a YAML stream starts; nothing else. Used to count documents without YAML::LoadAll,
// which loops forever (allocating) on some malformed streams, e.g. one starting with ',' (yaml-cpp 0.7,
// jbeder/yaml-cpp#1040; fixed upstream by #1319): here at most two documents are ever asked for.
class DocumentStarts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;  // of each document's first node (its content, not the `---`)
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    at_start_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { node(m); }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { node(m); }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (at_start_) starts.back() = m;
    at_start_ = false;
  }
  bool at_start_ = false;
};

YAML::Node load_yaml(const std::string& text, const std::string& file, const std::optional<SourceLoc>& fixed) {
  check_text(text, file, fixed);
  YAML::Node document;
  DocumentStarts documents;
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    while (documents.starts.size() < 2 && parser.HandleNextDocument(documents)) {
    }
    document = YAML::Load(text);  // the first document
  } catch (const YAML::DeepRecursion& e) {
    throw ConfigError(mark_location(file, fixed, e.mark).str() + ": YAML nested deeper than " +
                      std::to_string(e.depth() - 1) + " levels");
  } catch (const YAML::Exception& e) {
    throw ConfigError(mark_location(file, fixed, e.mark).str() + ": YAML syntax error: " + e.msg);
  }
  if (documents.starts.size() > 1) {
    const YAML::Mark& second = documents.starts[1];
    // A parser stuck on a token it cannot place reports "documents" that start where the first did.
    if (second.pos <= documents.starts[0].pos)
      throw ConfigError(mark_location(file, fixed, second).str() + ": YAML syntax error: unexpected text at the start of the document");
    // yaml-cpp's Load() would silently drop everything after a `---`.
    throw ConfigError(mark_location(file, fixed, second).str() + ": a second YAML document (after ---); a config is one document");
  }
  return document;
}

}  // namespace

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

TreeNode make_nested(const std::string& key, TreeNode leaf, const SourceLoc& key_where,
                     const std::string& name_in_messages) {
  const std::vector<std::string> parts = split_dotted(key);
  if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
    throw ConfigError(key_where.str() + ": " + name_in_messages + ": empty name between dots");
  }
  TreeNode nested = std::move(leaf);
  for (auto part = parts.rbegin(); part != parts.rend(); ++part) {
    TreeNode map;
    map.kind = TreeNode::Kind::Map;
    map.where = key_where;
    map.entries.push_back(TreeEntry{*part, key_where, std::move(nested)});
    nested = std::move(map);
  }
  return nested;
}

TreeNode parse_yaml(const std::string& text, const std::string& file) {
  // A sweep plan resolves thousands of design points from the same config files, and parsing dominated its time:
  // the trees of the last few texts parsed are kept (a tree depends only on the text and the file name).
  constexpr std::size_t kRecentTrees = 4, kMaxRememberedText = 1 << 20;
  static std::mutex mutex;
  static std::deque<std::pair<std::string, TreeNode>> recent;
  const bool remember = text.size() <= kMaxRememberedText;
  std::string key;
  if (remember) {
    key = file + '\0' + text;
    const std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [k, tree] : recent)
      if (k == key) return tree;
  }
  Converter converter(file, std::nullopt);
  TreeNode tree = converter.convert(load_yaml(text, file, std::nullopt), SourceLoc{file, 1, 1, ""}, "");
  if (remember) {
    const std::lock_guard<std::mutex> lock(mutex);
    recent.emplace_front(std::move(key), tree);
    if (recent.size() > kRecentTrees) recent.pop_back();
  }
  return tree;
}

TreeNode parse_yaml_value(const std::string& text, const SourceLoc& where) {
  // Most override values are plain words or numbers with units ("132", "1.5GHz", "4TB/s"): they read as
  // themselves, without the YAML parser (a sweep plan applies tens of thousands of them). YAML's null words take
  // the parser's way.
  const bool plain = !text.empty() && std::isalnum(static_cast<unsigned char>(text[0])) && text != "null" &&
                     text != "Null" && text != "NULL" &&
                     std::all_of(text.begin(), text.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/' || c == '+' || c == '-';
                     });
  if (plain) {
    TreeNode node;
    node.kind = TreeNode::Kind::Scalar;
    node.scalar = text;
    node.where = where;
    return node;
  }
  Converter converter(where.file, where);
  return converter.convert(load_yaml(text, where.file, where), where, "");
}

void merge_into(TreeNode& base, TreeNode overlay) {
  using Kind = TreeNode::Kind;
  if (base.kind == Kind::Map && overlay.kind == Kind::Null) return;
  if (base.kind != Kind::Map || overlay.kind != Kind::Map) {
    base = std::move(overlay);
    return;
  }
  for (TreeEntry& entry : overlay.entries) {
    const auto existing = std::find_if(base.entries.begin(), base.entries.end(),
                                       [&](const TreeEntry& b) { return b.key == entry.key; });
    if (existing == base.entries.end()) {
      base.entries.push_back(std::move(entry));
    } else {
      merge_into(existing->value, std::move(entry.value));
      existing->key_where = entry.key_where;  // messages about the key point at whoever wrote it last
    }
  }
}

std::string describe_node(const TreeNode& node) {
  switch (node.kind) {
    case TreeNode::Kind::Null: return "nothing";
    case TreeNode::Kind::Scalar: return quoted(node.scalar);
    case TreeNode::Kind::Sequence: return "a list";
    case TreeNode::Kind::Map: return "a map";
  }
  return "?";
}

}  // namespace warpsim::config_detail
