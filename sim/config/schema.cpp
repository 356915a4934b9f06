#include "sim/config/schema.h"

#include <string>

#include "sim/config/config.h"
#include "sim/core/error.h"

namespace warpsim {

const char* param_type_name(ParamType t) noexcept {
  switch (t) {
    case ParamType::UInt: return "uint";
    case ParamType::Real: return "real";
    case ParamType::Bool: return "bool";
    case ParamType::String: return "string";
    case ParamType::Choice: return "choice";
    case ParamType::Frequency: return "frequency";
    case ParamType::Bandwidth: return "bandwidth";
    case ParamType::Size: return "size";
    case ParamType::Power: return "power";
    case ParamType::Energy: return "energy";
    case ParamType::Duration: return "duration";
  }
  return "?";
}

namespace {

ParamSpec make_spec(std::string name, ParamType type, std::string unit, std::optional<std::string> default_text,
                    std::string desc, double min = 0.0,
                    double max = std::numeric_limits<double>::infinity()) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = type;
  p.unit = std::move(unit);
  p.default_text = std::move(default_text);
  p.min = min;
  p.max = max;
  p.description = std::move(desc);
  return p;
}

// True when `prefix` is a dotted prefix of `name` ("pipes" of "pipes.fp32.latency").
bool is_dotted_prefix(const std::string& prefix, const std::string& name) {
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.';
}

}  // namespace

const ParamSpec* Schema::find(const std::string& name) const noexcept {
  for (const ParamSpec& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// A schema is written by a model author, so a bad declaration is a programming error: it aborts at the first
// call of the model's schema() (every config load calls them all) instead of surfacing as a user's config error.
Schema& Schema::append(const Schema& other) {
  for (const ParamSpec& p : other.params_) {
    for (const ParamSpec& mine : params_)
      WARPSIM_ASSERT(mine.name != p.name, other.impl_ + " redeclares " + section_ + "." + p.name +
                                              ", a parameter its slot already declares for every implementation");
    params_.push_back(p);
  }
  impl_ = other.impl_;
  if (!other.description_.empty()) description_ = other.description_;
  return *this;
}

Schema& Schema::unit_count() {
  WARPSIM_ASSERT(!params_.empty() && params_.back().type == ParamType::UInt,
                 section_ + ": unit_count() follows the declaration of an unsigned count");
  params_.back().subset_scaling = kSubsetUnitCount;
  return *this;
}

Schema& Schema::total_over(std::string count) {
  WARPSIM_ASSERT(!params_.empty() && count.find('.') != std::string::npos,
                 section_ + ": total_over(\"section.key\") follows a parameter's declaration");
  params_.back().subset_scaling = std::move(count);
  return *this;
}

Schema& Schema::per_unit() {
  WARPSIM_ASSERT(!params_.empty() && params_.back().default_text.has_value(),
                 section_ + ": per_unit() follows the declaration of a parameter with a default");
  params_.back().subset_scaling = kSubsetPerUnit;
  return *this;
}

Schema& Schema::add(ParamSpec p, std::optional<double> default_value) {
  const std::string what = section_ + "." + p.name;
  WARPSIM_ASSERT(!p.name.empty() && p.name.front() != '.' && p.name.back() != '.' &&
                     p.name.find("..") == std::string::npos,
                 "malformed parameter name " + what);
  // `impl` selects the implementation inside a section, so it cannot also be a parameter.
  WARPSIM_ASSERT(p.name != "impl", what + ": `impl` is reserved");
  WARPSIM_ASSERT(p.min <= p.max, what + ": min > max");
  for (const ParamSpec& other : params_) {
    WARPSIM_ASSERT(other.name != p.name, what + " declared twice");
    // YAML cannot hold both `a: 1` and `a: {b: 2}`, so a name may not be a dotted prefix of another.
    WARPSIM_ASSERT(!is_dotted_prefix(other.name, p.name) && !is_dotted_prefix(p.name, other.name),
                   what + " clashes with " + section_ + "." + other.name);
  }
  if (default_value) {
    WARPSIM_ASSERT(*default_value >= p.min && *default_value <= p.max,
                   what + ": default " + *p.default_text + " is out of range");
  }
  params_.push_back(std::move(p));
  return *this;
}

Schema& Schema::uint(std::string name, std::string unit, std::optional<std::uint64_t> def, std::string desc,
                     std::uint64_t min, std::uint64_t max) {
  // to_string: exact and never an exponent (a UInt value is digits only).
  std::optional<std::string> text = def ? std::optional<std::string>(std::to_string(*def)) : std::nullopt;
  std::optional<double> value = def ? std::optional<double>(static_cast<double>(*def)) : std::nullopt;
  return add(make_spec(std::move(name), ParamType::UInt, std::move(unit), std::move(text), std::move(desc),
                       static_cast<double>(min), static_cast<double>(max)),
             value);
}

Schema& Schema::real(std::string name, std::string unit, std::optional<double> def, std::string desc,
                     double min, double max) {
  std::optional<std::string> text = def ? std::optional<std::string>(format_number(*def)) : std::nullopt;
  return add(make_spec(std::move(name), ParamType::Real, std::move(unit), std::move(text), std::move(desc), min,
                       max),
             def);
}

Schema& Schema::boolean(std::string name, std::optional<bool> def, std::string desc) {
  std::optional<std::string> text = def ? std::optional<std::string>(*def ? "true" : "false") : std::nullopt;
  return add(make_spec(std::move(name), ParamType::Bool, "", std::move(text), std::move(desc)));
}

Schema& Schema::string(std::string name, std::optional<std::string> def, std::string desc) {
  // default_text holds the scalar's text unquoted; resolved_yaml() quotes it where YAML needs it.
  return add(make_spec(std::move(name), ParamType::String, "", std::move(def), std::move(desc)));
}

Schema& Schema::choice(std::string name, std::vector<std::string> choices, std::optional<std::string> def,
                       std::string desc) {
  ParamSpec p = make_spec(std::move(name), ParamType::Choice, "", std::move(def), std::move(desc));
  p.choices = std::move(choices);
  const std::string what = section_ + "." + p.name;
  WARPSIM_ASSERT(!p.choices.empty(), what + ": a choice needs choices");
  if (p.default_text) {
    bool listed = false;
    for (const std::string& c : p.choices) listed = listed || c == *p.default_text;
    WARPSIM_ASSERT(listed, what + ": default '" + *p.default_text + "' is not one of the choices");
  }
  return add(std::move(p));
}

Schema& Schema::quantity(std::string name, ParamType type, std::optional<std::string> def, std::string desc,
                         double min, double max) {
  const std::string what = section_ + "." + name;
  WARPSIM_ASSERT(type == ParamType::Frequency || type == ParamType::Bandwidth || type == ParamType::Size ||
                     type == ParamType::Power || type == ParamType::Energy || type == ParamType::Duration,
                 what + ": quantity() takes Frequency, Bandwidth, Size, Power, Energy or Duration");
  std::optional<double> value;
  if (def) {
    double parsed = 0.0;
    std::string error;
    WARPSIM_ASSERT(parse_quantity(*def, type, parsed, error), what + ": bad default: " + error);
    value = parsed;
  }
  // Values and min/max are in base units; describe shows this unit next to min/max.
  const char* base_unit = type == ParamType::Frequency ? "Hz" : type == ParamType::Bandwidth ? "B/s"
                          : type == ParamType::Power   ? "W"  : type == ParamType::Energy    ? "J"
                          : type == ParamType::Duration ? "s" : "B";
  return add(make_spec(std::move(name), type, base_unit, std::move(def), std::move(desc), min, max), value);
}

}  // namespace warpsim
