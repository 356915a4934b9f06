// Parameter declarations. Every model declares its parameters next to its code (name, type, unit, default,
// range, description); the same declarations validate YAML configs and generate `warpsim describe`.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace warpsim {

enum class ParamType {
  UInt,       // non-negative integer; unit is informative ("cycles", "SMs", "registers")
  Real,       // floating point
  Bool,
  String,
  Choice,     // one of `choices`
  Frequency,  // "1.98GHz", "1410MHz"      -> Hz
  Bandwidth,  // "3.35TB/s", "900GB/s"     -> bytes per second (decimal prefixes, as vendors quote them)
  Size,       // "50MiB", "228KiB", "128B" -> bytes (binary prefixes KiB/MiB/GiB; KB/MB/GB are decimal)
  Power,      // "700W", "1.2kW"           -> watts
  Energy,     // "0.5pJ", "2nJ"            -> joules
  Duration,   // "10us", "25ms"            -> seconds
};

const char* param_type_name(ParamType t) noexcept;

struct ParamSpec {
  std::string name;           // dotted path inside the section, e.g. "pipes.fp32.latency"
  ParamType type = ParamType::UInt;
  std::string unit;           // shown by describe; for UInt/Real the unit of the number
  std::optional<std::string> default_text;  // YAML text of the default; nullopt = required
  double min = 0.0;
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;
  std::string description;
  // How the value changes when the GPU is simulated as a fraction of itself (SM subsetting, sim.subset;
  // models/gpu/gpu_subset.h): empty, it stays (a per-unit figure, a latency, not hardware); kSubsetUnitCount, it
  // counts units and is divided; kSubsetPerUnit, it describes each unit and takes its default; otherwise it is a
  // total over the units a count names ("l2.slices": a capacity, bandwidth or power of all of them) and keeps its
  // value per unit.
  std::string subset_scaling;
  bool required() const noexcept { return !default_text.has_value(); }
};

inline constexpr const char* kSubsetUnitCount = "count";
inline constexpr const char* kSubsetPerUnit = "per_unit";

// The parameters of one config section (one registered component implementation).
class Schema {
 public:
  Schema() = default;
  Schema(std::string section, std::string impl, std::string description)
      : section_(std::move(section)), impl_(std::move(impl)), description_(std::move(description)) {}

  // Fluent declaration, e.g.
  //   s.uint("count", "SMs", 132, "number of streaming multiprocessors", 1, 1024);
  Schema& uint(std::string name, std::string unit, std::optional<std::uint64_t> def, std::string desc,
               std::uint64_t min = 0, std::uint64_t max = std::numeric_limits<std::uint32_t>::max());
  Schema& real(std::string name, std::string unit, std::optional<double> def, std::string desc,
               double min = 0.0, double max = std::numeric_limits<double>::infinity());
  Schema& boolean(std::string name, std::optional<bool> def, std::string desc);
  Schema& string(std::string name, std::optional<std::string> def, std::string desc);
  Schema& choice(std::string name, std::vector<std::string> choices, std::optional<std::string> def,
                 std::string desc);
  // Quantities with units: default given as text ("1.98GHz"); min/max in base units (Hz, B/s, bytes).
  Schema& quantity(std::string name, ParamType type, std::optional<std::string> def, std::string desc,
                   double min = 0.0, double max = std::numeric_limits<double>::infinity());

  // SM subsetting (ParamSpec::subset_scaling) of the parameter declared last: it counts units of the GPU, or it
  // is a total over the units that `count` ("section.key" of a unit count) counts.
  Schema& unit_count();
  Schema& total_over(std::string count);
  // ... or it describes the units one by one (a list per GPC), which no fraction of the GPU keeps: the subset
  // takes its default.
  Schema& per_unit();

  // Adds another schema's parameters after these (a slot's shared parameters, then an implementation's own):
  // the description and implementation name become `other`'s. Asserts that no name is declared twice.
  Schema& append(const Schema& other);

  const std::string& section() const noexcept { return section_; }
  const std::string& impl() const noexcept { return impl_; }
  const std::string& description() const noexcept { return description_; }
  const std::vector<ParamSpec>& params() const noexcept { return params_; }
  const ParamSpec* find(const std::string& name) const noexcept;

 private:
  // Checks the declaration (asserts: a bad schema is a programming error) and appends it. `default_value` is
  // the numeric default, checked against min/max.
  Schema& add(ParamSpec p, std::optional<double> default_value = std::nullopt);

  std::string section_, impl_, description_;
  std::vector<ParamSpec> params_;
};

}  // namespace warpsim
