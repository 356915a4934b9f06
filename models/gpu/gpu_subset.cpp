#include "models/gpu/gpu_subset.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "sim/core/error.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

// A parameter's value as config text that reads back as the same value (sizes in whole bytes).
std::string subset_value_text(const ParamSpec& spec, double value) {
  if (spec.type == ParamType::UInt) return std::to_string(static_cast<std::uint64_t>(value));
  if (spec.type == ParamType::Size) return std::to_string(static_cast<std::uint64_t>(value)) + "B";
  return format_quantity(value, spec.type);
}

double numeric_value(const Params& params, const ParamSpec& spec) {
  return spec.type == ParamType::UInt ? static_cast<double>(params.u64(spec.name)) : params.real(spec.name);
}

}  // namespace

Config subset_config(const Config& full, GpuSubset& subset) {
  subset = GpuSubset{};
  subset.divisor = full.section("sim").u32("subset");
  subset.gpu_sms = full.section("sm").u32("count");
  if (!subset.active()) return full;
  const Registry& registry = Registry::instance();
  struct Param {
    std::string key;
    const ParamSpec* spec;
    double value;
  };
  std::vector<Schema> schemas;  // keeps the specs alive
  schemas.reserve(full.sections().size());
  std::vector<Param> counts, totals;
  std::vector<std::string> overrides;
  for (const auto& [section, params] : full.sections()) {
    const ComponentType* type = registry.find(section, params.impl());
    if (!type) continue;
    schemas.push_back(registry.schema(*type));
    for (const ParamSpec& spec : schemas.back().params()) {
      if (spec.subset_scaling.empty() || !params.has(spec.name)) continue;
      if (spec.subset_scaling == kSubsetPerUnit) {  // a list per unit: the subset's units are not among them
        const std::string key = section + "." + spec.name, text = params.str(spec.name);
        if (text == *spec.default_text) continue;
        subset.scaled.push_back({key, text, *spec.default_text});
        overrides.push_back(key + "=" + *spec.default_text);
        continue;
      }
      Param p{section + "." + spec.name, &spec, numeric_value(params, spec)};
      (spec.subset_scaling == kSubsetUnitCount ? counts : totals).push_back(p);
    }
  }
  std::map<std::string, double>& fraction = subset.kept;
  auto record = [&](const Param& p, double value) {
    const std::string text = subset_value_text(*p.spec, value);
    subset.scaled.push_back({p.key, subset_value_text(*p.spec, p.value), text});
    overrides.push_back(p.key + "=" + text);
  };
  for (const Param& c : counts) {
    if (c.value < subset.divisor)
      throw ConfigError(fmt::format("sim.subset: {} is {}, fewer units than the subset divisor {}: the GPU cannot be "
                                    "simulated as 1/{} of itself (a smaller sim.subset, or 1 for the whole GPU)",
                                    c.key, c.value, subset.divisor, subset.divisor));
    const double kept = std::max(1.0, std::round(c.value / subset.divisor));
    fraction[c.key] = kept / c.value;
    record(c, kept);
  }
  for (const Param& t : totals) {
    const auto it = fraction.find(t.spec->subset_scaling);
    WARPSIM_ASSERT(it != fraction.end(), t.key + " is declared a total over " + t.spec->subset_scaling +
                                             ", which is not a unit count of this GPU");
    if (t.value == 0) continue;  // none (a power cap of 0: no cap)
    double scaled = t.value * it->second;
    if (t.spec->type == ParamType::UInt || t.spec->type == ParamType::Size) scaled = std::max(1.0, std::round(scaled));
    record(t, scaled);
  }
  const std::string name = full.files().empty() ? std::string("config") : full.files().front();
  try {
    return Config::parse(full.resolved_yaml(), fmt::format("{} (1/{} subset)", name, subset.divisor), overrides, registry);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("sim.subset {} cuts the GPU to 1/{} of itself (its values set as overrides), which "
                                  "the config rejects: {}", subset.divisor, subset.divisor, e.what()));
  }
}

}  // namespace warpsim
