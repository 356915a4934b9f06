#include "sim/config/params.h"

#include <cmath>
#include <limits>

#include "sim/core/error.h"

namespace warpsim {

// Marker values of SourceLoc::file for values that come from no file.
namespace {
constexpr const char* kDefaultSource = "default";
constexpr const char* kOverrideSource = "--set";
}  // namespace

std::string SourceLoc::str() const {
  if (file == kOverrideSource) {
    return override_text.empty() ? "command line" : "command line (--set " + override_text + ")";
  }
  if (file == kDefaultSource || line <= 0) return file;
  return file + ":" + std::to_string(line) + (column > 0 ? ":" + std::to_string(column) : "");
}

SourceLoc SourceLoc::schema_default() { return SourceLoc{kDefaultSource, 0, 0, ""}; }

SourceLoc SourceLoc::command_line(std::string override_text) {
  return SourceLoc{kOverrideSource, 0, 0, std::move(override_text)};
}

bool SourceLoc::is_default() const { return file == kDefaultSource; }

const ParamValue& Params::value(const std::string& name) const {
  const auto it = values_.find(name);
  WARPSIM_ASSERT(it != values_.end(), section_ + "." + name + " is not a parameter of implementation " + impl_);
  return it->second;
}

namespace {

void check_type(const Params& params, const std::string& name, bool ok, const char* wanted) {
  WARPSIM_ASSERT(ok, params.section() + "." + name + " is a " + param_type_name(params.value(name).type) +
                         " parameter, read as " + wanted);
}

}  // namespace

// Sizes are whole bytes (the parser rounds them), so they read as integers too.
std::uint64_t Params::u64(const std::string& name) const {
  const ParamValue& v = value(name);
  check_type(*this, name, v.type == ParamType::UInt || v.type == ParamType::Size, "an integer");
  if (!(v.number < 18446744073709551616.0)) fail(name, "value too large for a 64-bit integer");  // 2^64
  return static_cast<std::uint64_t>(v.number);
}

std::uint32_t Params::u32(const std::string& name) const {
  const std::uint64_t v = u64(name);
  WARPSIM_ASSERT(v <= std::numeric_limits<std::uint32_t>::max(),
                 section_ + "." + name + " = " + std::to_string(v) + " does not fit 32 bits; declare a max");
  return static_cast<std::uint32_t>(v);
}

double Params::real(const std::string& name) const {
  const ParamValue& v = value(name);
  const bool numeric = v.type == ParamType::UInt || v.type == ParamType::Real || v.type == ParamType::Frequency ||
                       v.type == ParamType::Bandwidth || v.type == ParamType::Size ||
                       v.type == ParamType::Power || v.type == ParamType::Energy || v.type == ParamType::Duration;
  check_type(*this, name, numeric, "a number");
  return v.number;
}

bool Params::boolean(const std::string& name) const {
  const ParamValue& v = value(name);
  check_type(*this, name, v.type == ParamType::Bool, "a bool");
  return v.flag;
}

const std::string& Params::str(const std::string& name) const {
  const ParamValue& v = value(name);
  check_type(*this, name, v.type == ParamType::String || v.type == ParamType::Choice, "a string");
  return v.text;
}

void Params::fail(const std::string& name, const std::string& what) const {
  throw ConfigError(value(name).where.str() + ": " + section_ + "." + name + ": " + what);
}

}  // namespace warpsim
