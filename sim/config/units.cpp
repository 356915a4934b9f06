// Quantities with units: parsing ("1.98GHz", "3.35TB/s", "50MiB") and printing for messages.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/config/text_util.h"
#include "sim/core/error.h"

namespace warpsim {

namespace {

using config_detail::join;
using config_detail::quoted;
using config_detail::trim;

// A unit smaller than the base unit is given by how many of it make one base unit (`per_base`: 1e6 for us), and a
// value in it is divided by that power of ten, which doubles hold exactly; multiplying by the reciprocal (1e-6,
// not exact in binary) would round twice: 10us would read as 9.999999999999999e-06 s instead of 1e-05 s. One of
// scale and per_base is 1, so converting a number rounds once.
struct Unit {
  const char* name;
  double scale;         // base units (Hz, B/s, bytes, W, J, s) per unit; 1 for a unit smaller than the base unit
  double per_base = 1;  // units per base unit, for a unit smaller than the base unit; 1 otherwise
};

constexpr double kKilo = 1e3, kMega = 1e6, kGiga = 1e9, kTera = 1e12;
constexpr double kKibi = 1024.0, kMebi = kKibi * 1024.0, kGibi = kMebi * 1024.0, kTebi = kGibi * 1024.0;

// Constant-initialized arrays, not vectors: synthesizers declare Size/Frequency keys with defaults while static
// registrations run, possibly before this file's dynamic initializers (static initialization order).
constexpr Unit kFrequencyUnits[] = {{"Hz", 1.0}, {"kHz", kKilo}, {"MHz", kMega}, {"GHz", kGiga}};
// Decimal prefixes first: vendors quote bandwidth in decimal units.
constexpr Unit kBandwidthUnits[] = {
    {"B/s", 1.0},    {"KB/s", kKilo},  {"MB/s", kMega},  {"GB/s", kGiga},  {"TB/s", kTera},
    {"KiB/s", kKibi}, {"MiB/s", kMebi}, {"GiB/s", kGibi}, {"TiB/s", kTebi}};
// Binary prefixes first: memories come in powers of two.
constexpr Unit kSizeUnits[] = {{"B", 1.0},     {"KiB", kKibi}, {"MiB", kMebi}, {"GiB", kGibi},
                                      {"TiB", kTebi}, {"KB", kKilo},  {"MB", kMega},  {"GB", kGiga},
                                      {"TB", kTera}};

constexpr Unit kPowerUnits[] = {{"W", 1.0}, {"mW", 1.0, 1e3}, {"kW", kKilo}};
constexpr Unit kEnergyUnits[] = {{"J", 1.0},        {"fJ", 1.0, 1e15}, {"pJ", 1.0, 1e12},
                                 {"nJ", 1.0, 1e9},  {"uJ", 1.0, 1e6},  {"mJ", 1.0, 1e3}};
constexpr Unit kDurationUnits[] = {{"s", 1.0}, {"ns", 1.0, 1e9}, {"us", 1.0, 1e6}, {"ms", 1.0, 1e3}};

struct QuantityKind {
  const char* noun;     // "a frequency"
  const char* example;  // "1.98GHz"
  const Unit* units;
  std::size_t count;
  const Unit* begin() const { return units; }
  const Unit* end() const { return units + count; }
};

const QuantityKind* quantity_kind(ParamType type) {
  static const QuantityKind frequency{"a frequency", "1.98GHz", kFrequencyUnits, std::size(kFrequencyUnits)};
  static const QuantityKind bandwidth{"a bandwidth", "3.35TB/s", kBandwidthUnits, std::size(kBandwidthUnits)};
  static const QuantityKind size{"a size", "50MiB", kSizeUnits, std::size(kSizeUnits)};
  static const QuantityKind power{"a power", "700W", kPowerUnits, std::size(kPowerUnits)};
  static const QuantityKind energy{"an energy", "0.5pJ", kEnergyUnits, std::size(kEnergyUnits)};
  static const QuantityKind duration{"a duration", "10us", kDurationUnits, std::size(kDurationUnits)};
  switch (type) {
    case ParamType::Frequency: return &frequency;
    case ParamType::Bandwidth: return &bandwidth;
    case ParamType::Size: return &size;
    case ParamType::Power: return &power;
    case ParamType::Energy: return &energy;
    case ParamType::Duration: return &duration;
    default: return nullptr;
  }
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Length of the unsigned decimal number (digits, optional fraction, optional exponent) at the start of `s`;
// 0 when there is none. Written out rather than strtod's grammar, which also takes "inf", "nan" and hex.
std::size_t scan_unsigned_number(const std::string& s) {
  std::size_t i = 0, digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const std::size_t exponent_start = j;
    while (j < s.size() && is_digit(s[j])) ++j;
    if (j > exponent_start) i = j;  // "5e" is the number 5 followed by "e"
  }
  return i;
}

bool parse_uint(const std::string& text, double& out, std::string& error) {
  const bool all_digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  std::uint64_t value = 0;
  bool overflow = false;
  for (char c : text) {
    if (!all_digits) break;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
    value = value * 10 + digit;
  }
  if (!all_digits || overflow) {
    error = std::string("expected an unsigned integer") + (overflow ? " below 2^64" : "") + ", got " +
            quoted(text);
    return false;
  }
  out = static_cast<double>(value);
  return true;
}

bool parse_real(const std::string& text, double& out, std::string& error) {
  const std::size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const std::size_t length = scan_unsigned_number(text.substr(sign));
  const double value = length > 0 ? std::strtod(text.c_str(), nullptr) : 0.0;
  if (length == 0 || sign + length != text.size() || !std::isfinite(value)) {
    error = "expected a real number, got " + quoted(text);
    return false;
  }
  out = value;
  return true;
}

bool parse_with_unit(const std::string& text, ParamType type, const QuantityKind& kind, double& out,
                     std::string& error) {
  const std::string expected_with_unit =
      std::string("expected ") + kind.noun + " with a unit, e.g. " + kind.example + ", got " + quoted(text);
  if (!text.empty() && text[0] == '-' && scan_unsigned_number(text.substr(1)) > 0) {
    error = std::string("expected ") + kind.noun + " >= 0, got " + quoted(text);
    return false;
  }
  const std::size_t length = scan_unsigned_number(text);
  if (length == 0) {
    error = expected_with_unit;
    return false;
  }
  const std::string unit = trim(text.substr(length));  // "1.98 GHz" is fine too
  if (unit.empty()) {  // a bare number: GHz or MHz? Bytes or KiB? Too easy to get wrong silently.
    error = expected_with_unit;
    return false;
  }
  const Unit* match = nullptr;
  std::vector<std::string> names;
  for (const Unit& u : kind) {
    if (unit == u.name) match = &u;
    names.push_back(u.name);
  }
  if (!match) {
    const std::string suggestion = did_you_mean(unit, names);
    error = std::string("expected ") + kind.noun + " with a unit (" + join(names) + "), got " +
            quoted(text) + (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?");
    return false;
  }
  double value = std::strtod(text.substr(0, length).c_str(), nullptr) * match->scale / match->per_base;
  if (!std::isfinite(value)) {
    error = std::string("expected ") + kind.noun + ", got " + quoted(text) + ", which is too large";
    return false;
  }
  if (type == ParamType::Size) {
    // Allow the rounding error of decimal fractions ("1.1KB" = 1100.0000000000002), not fractional bytes.
    constexpr double kWholeByteTolerance = 1e-9;
    const double whole = std::round(value);
    if (std::fabs(value - whole) > kWholeByteTolerance * std::max(1.0, whole)) {
      error = "expected a whole number of bytes, got " + quoted(text);
      return false;
    }
    value = whole;
  }
  out = value;
  return true;
}

}  // namespace

bool parse_quantity(const std::string& raw_text, ParamType type, double& out, std::string& error) {
  const std::string text = trim(raw_text);
  switch (type) {
    case ParamType::UInt: return parse_uint(text, out, error);
    case ParamType::Real: return parse_real(text, out, error);
    case ParamType::Frequency:
    case ParamType::Bandwidth:
    case ParamType::Size:
    case ParamType::Power:
    case ParamType::Energy:
    case ParamType::Duration: return parse_with_unit(text, type, *quantity_kind(type), out, error);
    default: break;
  }
  WARPSIM_ASSERT(false, std::string("parse_quantity: ") + param_type_name(type) + " is not a numeric type");
  return false;
}

std::string format_number(double value) {
  // Integral values as plain digits, up to where doubles stop holding every integer exactly.
  constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
  char buffer[64];
  if (value == std::floor(value) && std::fabs(value) < kExactIntegerLimit) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  // The fewest significant digits that read back as the same double ("0.1", not "0.10000000000000001").
  constexpr int kMaxSignificantDigits = std::numeric_limits<double>::max_digits10;
  for (int digits = 1; digits <= kMaxSignificantDigits; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string format_quantity(double value, ParamType type) {
  const QuantityKind* kind = quantity_kind(type);
  if (!kind || !std::isfinite(value)) return format_number(value);
  // Of the units not above the value, the one that prints shortest ("1.5MiB", not "1572.864KB"; 1e9 bytes
  // -> "1GB", not "953.674316406MiB"); on a tie the larger unit. 12 significant digits hide the rounding
  // noise of the division.
  constexpr int kSignificantDigits = 12;
  std::string best;
  double best_size = 0.0;
  for (const Unit& u : *kind) {
    const double size = u.scale / u.per_base;  // of one unit, in base units
    if (size > value && size != 1.0) continue;  // the base unit also prints values below 1 (and 0)
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*g%s", kSignificantDigits, value / u.scale * u.per_base, u.name);
    const bool shorter = best.empty() || std::string(buffer).size() < best.size();
    const bool tie_larger = std::string(buffer).size() == best.size() && size > best_size;
    if (shorter || tie_larger) {
      best = buffer;
      best_size = size;
    }
  }
  return best;
}

}  // namespace warpsim
