// Validated, typed parameter values of one config section, as a model reads them when it builds its Spec.
// Values are in base units (Hz, bytes/s, bytes) and remember where they came from, so that a model that
// rejects a combination of values (e.g. a cache size not divisible by its line size) can still name the
// file, line and key.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sim/config/schema.h"

namespace warpsim {

struct SourceLoc {
  std::string file;  // config file, or "--set" for a command-line override, or "default"
  int line = 0;      // 1-based; 0 when not applicable
  int column = 0;
  std::string override_text;  // for "--set": the override as given, e.g. "sm.count=144"
  // "configs/h100_sxm.yaml:12:9", "command line (--set sm.count=144)" or "default"
  std::string str() const;

  static SourceLoc schema_default();                        // file "default"
  static SourceLoc command_line(std::string override_text);  // file "--set"
  bool is_default() const;
};

struct ParamValue {
  ParamType type = ParamType::UInt;
  double number = 0.0;      // UInt, Real, Frequency, Bandwidth, Size (base units)
  bool flag = false;        // Bool
  std::string text;         // String, Choice; for every type also the text as written
  SourceLoc where;
};

class Params {
 public:
  Params() = default;
  Params(std::string section, std::string impl) : section_(std::move(section)), impl_(std::move(impl)) {}

  void set(const std::string& name, ParamValue v) { values_[name] = std::move(v); }

  // Typed getters; asking for an undeclared name or the wrong type is a programming error (asserts).
  std::uint64_t u64(const std::string& name) const;
  std::uint32_t u32(const std::string& name) const;
  double real(const std::string& name) const;   // also for Frequency/Bandwidth/Size
  bool boolean(const std::string& name) const;
  const std::string& str(const std::string& name) const;  // String and Choice
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const ParamValue& value(const std::string& name) const;
  const std::map<std::string, ParamValue>& values() const noexcept { return values_; }
  const std::string& section() const noexcept { return section_; }
  const std::string& impl() const noexcept { return impl_; }

  // Throws ConfigError "file:line:col: section.name: <what>" for a value a model rejects after reading it.
  [[noreturn]] void fail(const std::string& name, const std::string& what) const;

 private:
  std::string section_, impl_;
  std::map<std::string, ParamValue> values_;
};

}  // namespace warpsim
