#include "traces/synth/registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/config/config.h"
#include "sim/core/error.h"

namespace warpsim {

const std::string& SynthArgs::text(const std::string& key) const {
  const auto it = values_.find(key);
  WARPSIM_ASSERT(it != values_.end(), "synthesizer '" + kind_ + "' read undeclared key '" + key + "'");
  return it->second;
}

double SynthArgs::number(const std::string& key) const {
  const auto it = numbers_.find(key);
  WARPSIM_ASSERT(it != numbers_.end(), "synthesizer '" + kind_ + "' read '" + key + "' as a number");
  return it->second;
}

bool is_hopper_arch(const std::string& arch) { return arch == "sm_90" || arch == "sm_100"; }

bool gpu_has_tma(const Config& config) {
  if (!config.has_section("async_copy")) return false;
  const Params& async_copy = config.section("async_copy");
  return async_copy.has("issue_bytes_per_cycle") && async_copy.u64("issue_bytes_per_cycle") > 0 &&
         async_copy.has("max_outstanding") && async_copy.u64("max_outstanding") > 0;
}

SynthRegistry& SynthRegistry::instance() {
  static SynthRegistry registry;
  return registry;
}

void SynthRegistry::add(SynthesizerInfo info) {
  WARPSIM_ASSERT(!info.name.empty() && info.factory, "a synthesizer needs a name and a factory");
  WARPSIM_ASSERT(!kinds_.count(info.name), "synthesizer '" + info.name + "' registered twice");
  WARPSIM_ASSERT(info.metrics.empty() == !info.derive,
                 "synthesizer '" + info.name + "': declared metrics and a derive function go together");
  const std::string name = info.name;
  kinds_.emplace(name, std::move(info));
}

const SynthesizerInfo* SynthRegistry::find(const std::string& kind) const {
  const auto it = kinds_.find(kind);
  return it == kinds_.end() ? nullptr : &it->second;
}

std::vector<std::string> SynthRegistry::kinds() const {
  std::vector<std::string> names;
  for (const auto& entry : kinds_) names.push_back(entry.first);
  return names;
}

const SynthesizerInfo& SynthRegistry::get(const std::string& kind) const {
  if (const SynthesizerInfo* info = find(kind)) return *info;
  std::string msg = "unknown synthesizer kind '" + kind + "'";
  const std::string hint = did_you_mean(kind, kinds());
  if (!hint.empty()) throw InputError(msg + "; did you mean '" + hint + "'?");
  throw InputError(fmt::format("{} (known kinds: {})", msg, fmt::join(kinds(), ", ")));
}

SynthArgs SynthRegistry::validate(const std::string& kind, const std::map<std::string, std::string>& given) const {
  const SynthesizerInfo& info = get(kind);
  std::vector<std::string> key_names;
  for (const ParamSpec& key : info.keys) key_names.push_back(key.name);
  for (const auto& entry : given) {
    if (std::find(key_names.begin(), key_names.end(), entry.first) != key_names.end()) continue;
    std::string msg = kind + ": unknown key '" + entry.first + "'";
    const std::string hint = did_you_mean(entry.first, key_names);
    if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
    else msg += " (keys: " + fmt::format("{}", fmt::join(key_names, ", ")) + ")";
    throw InputError(msg);
  }
  std::map<std::string, std::string> values;
  std::map<std::string, double> numbers;
  for (const ParamSpec& key : info.keys) {
    const auto it = given.find(key.name);
    if (it == given.end() && key.required()) throw InputError(kind + ": key '" + key.name + "' is required (" + key.description + ")");
    const std::string text = it != given.end() ? it->second : *key.default_text;
    const std::string where = kind + " key '" + key.name + "'";
    if (key.type == ParamType::Choice) {
      if (std::find(key.choices.begin(), key.choices.end(), text) == key.choices.end())
        throw InputError(where + ": expected one of " + fmt::format("{}", fmt::join(key.choices, " | ")) + ", got '" + text + "'");
    } else if (key.type != ParamType::String && key.type != ParamType::Bool) {
      double value = 0;
      std::string error;
      if (!parse_quantity(text, key.type, value, error)) throw InputError(where + ": " + error);
      if (value < key.min || value > key.max)
        throw InputError(where + ": " + text + " is out of range [" + format_quantity(key.min, key.type) + ", " +
                         format_quantity(key.max, key.type) + "]");
      numbers[key.name] = value;
    }
    values[key.name] = text;
  }
  return SynthArgs(kind, std::move(values), std::move(numbers));
}

std::unique_ptr<TraceSource> SynthRegistry::make(const std::string& kind,
                                                 const std::map<std::string, std::string>& given,
                                                 const Config& config) const {
  const SynthArgs args = validate(kind, given);
  return get(kind).factory(args, config);
}

}  // namespace warpsim
