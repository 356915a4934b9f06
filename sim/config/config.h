// A GPU configuration: YAML files with inheritance (`base: h100_sxm.yaml`), units, command-line overrides
// (`--set sm.count=144`) and validation of every key against the registered schemas. Errors name
// file:line:col, the dotted key, what was expected and, for misspelt keys, what was probably meant.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/config/params.h"

namespace warpsim {

class Registry;

class Config {
 public:
  // Loads `path`, following `base:`, merges `overrides` ("a.b=v", applied in order, last wins), and validates
  // against `registry`. Throws ConfigError. A `base:` that is a config name (is_config_name: `base: h100_sxm`)
  // is looked up in `config_dirs` (the caller's search path, e.g. the shipped configs); any other `base:` is a
  // path relative to the including file.
  static Config load(const std::string& path, const std::vector<std::string>& overrides,
                     const Registry& registry, const std::vector<std::string>& config_dirs = {});
  // Same, from YAML text; `name` stands in for the file name in messages. A `base:` path is resolved relative
  // to `base_dir`.
  static Config parse(const std::string& yaml_text, const std::string& name,
                      const std::vector<std::string>& overrides, const Registry& registry,
                      const std::string& base_dir = ".", const std::vector<std::string>& config_dirs = {});

  // Validated parameters of a section; every registered section exists (defaults filled in).
  const Params& section(const std::string& name) const;
  bool has_section(const std::string& name) const { return sections_.count(name) != 0; }
  const std::map<std::string, Params>& sections() const noexcept { return sections_; }
  // Files read, the top-level one first, then its bases.
  const std::vector<std::string>& files() const noexcept { return files_; }

  // The fully resolved configuration as YAML: every parameter of every section, defaults included, each with
  // a comment saying where its value came from. Loading this text again gives the same Config.
  std::string resolved_yaml() const;

 private:
  // What resolved_yaml() needs beyond the values: schema order of the parameters, and whether to name the impl.
  struct SectionLayout {
    std::vector<std::string> param_order;
    bool show_impl = false;  // more than one implementation is registered for the section
    SourceLoc impl_where;    // where `impl:` was set ("default" when it was not)
  };

  std::map<std::string, Params> sections_;
  std::vector<std::string> section_order_;
  std::vector<std::string> files_;
  std::map<std::string, SectionLayout> layouts_;
};

// True for a config *name* such as "h100_sxm" (no path separator, no ".yaml"), which is looked up in a list of
// config directories rather than as a path.
bool is_config_name(const std::string& text);
// `<dir>/<name>.yaml` for the first of `dirs` that has it; "" when none has.
std::string find_named_config(const std::string& name, const std::vector<std::string>& dirs);

// Unit parsing, shared with the CLI (e.g. `warpsim synth` sizes). Return false when `text` is not a valid
// quantity of that type; `error` then says what was expected.
// Numeric types only (UInt, Real, Frequency, Bandwidth, Size); range limits are the caller's business. A size
// must come to a whole number of bytes.
bool parse_quantity(const std::string& text, ParamType type, double& out, std::string& error);
// A quantity in its most readable unit for messages, e.g. 1.98e9 Hz -> "1.98GHz", 262144 bytes -> "256KiB".
// UInt and Real values are printed as plain numbers.
std::string format_quantity(double value, ParamType type);
// Shortest text that reads back as the same double; integral values without exponent or decimals ("132").
std::string format_number(double value);
// Closest candidate by edit distance, or "" when none is close enough to suggest.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace warpsim
