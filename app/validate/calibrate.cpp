#include "app/validate/calibrate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "app/gpu_configs.h"
#include "app/validate/metrics.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

namespace warpsim {
namespace {

// A proposal carries no more significant digits than a measurement does (quantities and reals; UInt values
// are whole numbers anyway).
constexpr int kProposalDigits = 4;
// A real-valued fit has converged when the simulated figure is this close to the measured one (relative): well
// inside any measurement's precision; tighter, a bandwidth's step-wise response (whole transfers per cycle) can
// keep the search from converging in its budget (a100.bw.dram_read.gb: 1731 against 1730 GB/s after 8 steps).
constexpr double kRealTolerance = 1e-3;
// The first step of a search scales the value by measured/simulated, limited to this factor either way so that
// a figure far off (a metric that barely depends on the parameter) does not send it to the bounds at once.
constexpr double kMaxFirstStep = 4.0;
// A case determines its parameter only if the figure responds to it: the relative change of the figure per
// relative change of the parameter (elasticity) must be at least this (a 10% step moving the figure by 0.5%).
// Below it the fit would be set by the simulator's small residual terms (a chase's amortised cold misses),
// not by the measurement.
constexpr double kMinElasticity = 0.05;

bool is_numeric(ParamType type) {
  return type == ParamType::UInt || type == ParamType::Real || type == ParamType::Frequency ||
         type == ParamType::Bandwidth || type == ParamType::Size || type == ParamType::Power ||
         type == ParamType::Energy || type == ParamType::Duration;
}
bool is_integral(ParamType type) { return type == ParamType::UInt || type == ParamType::Size; }

// A value as an override or overlay reads it back: a plain number, or a quantity in its unit.
std::string value_text(double value, ParamType type) {
  return type == ParamType::UInt || type == ParamType::Real ? format_number(value) : format_quantity(value, type);
}

double round_significant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(std::abs(value))));
  return std::round(value * scale) / scale;
}

// A value in a message or the table: 6 significant digits are plenty to read.
std::string shown(double value, ParamType type) { return value_text(round_significant(value, 6), type); }

// The tuned parameter's declaration and its value in the config.
struct Tunable {
  std::string name;
  ParamSpec spec;
  double value = 0;
};

[[noreturn]] void fail_case(const ReferenceCase& c, const std::string& what) {
  throw InputError(fmt::format("{}:{}: case {}: tunes: {}", c.file, c.line, c.id, what));
}

Tunable find_tunable(const ReferenceCase& c, const Config& config, const std::string& gpu) {
  const std::size_t dot = c.tunes.find('.');
  const std::string section = dot == std::string::npos ? c.tunes : c.tunes.substr(0, dot);
  const std::string key = dot == std::string::npos ? "" : c.tunes.substr(dot + 1);
  if (!config.has_section(section) || !config.section(section).has(key)) {
    std::vector<std::string> names;
    for (const auto& [name, params] : config.sections())
      for (const auto& [param, value] : params.values()) names.push_back(name + "." + param);
    const std::string hint = did_you_mean(c.tunes, names);
    fail_case(c, fmt::format("no parameter '{}' in the config of {}{} (`warpsim describe` lists them)", c.tunes, gpu,
                             hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  const Params& params = config.section(section);
  const ComponentType* type = Registry::instance().find(section, params.impl());
  const Schema schema = type ? Registry::instance().schema(*type) : Schema();
  const ParamSpec* spec = schema.find(key);
  if (!spec) fail_case(c, fmt::format("no declaration of '{}' in section {}", key, section));
  if (!is_numeric(spec->type))
    fail_case(c, fmt::format("{} is a {} parameter; only numeric ones (uint, real, frequency, bandwidth, size) can be "
                             "fitted to a measurement", c.tunes, param_type_name(spec->type)));
  return Tunable{c.tunes, *spec, params.value(key).number};
}

// The override key of "key=value", trimmed.
std::string override_key(const std::string& assignment) {
  std::string key = assignment.substr(0, assignment.find('='));
  key.erase(0, key.find_first_not_of(" \t"));
  key.erase(key.find_last_not_of(" \t") + 1);
  return key;
}

// The search for one case's value: the points simulated so far, and how it ended.
struct Search {
  std::size_t fit = 0;                          // index into the result's fits
  std::vector<std::pair<double, double>> points;  // (value, simulated)
  bool done = false;
  std::optional<double> fitted;
  std::string reason;
};

double residual(const std::pair<double, double>& p, double measured) { return p.second - measured; }

// The value to simulate next, or none when the search is over (fitted or reason set).
std::optional<double> next_trial(Search& s, const Tunable& t, const ReferenceCase& c, const std::string& unit,
                                 int budget) {
  const double m = c.measured;
  const auto& last = s.points.back();
  const auto finish = [&](double value) -> std::optional<double> {
    s.done = true;
    s.fitted = value;
    return std::nullopt;
  };
  const auto give_up = [&](std::string why) -> std::optional<double> {
    s.done = true;
    s.reason = std::move(why);
    return std::nullopt;
  };
  const bool integral = is_integral(t.spec.type);
  const auto matches = [&](const std::pair<double, double>& q) {
    return integral ? residual(q, m) == 0 : std::abs(residual(q, m)) <= kRealTolerance * std::abs(m);
  };
  const std::string p = t.name;
  if (s.points.size() >= 2) {
    const auto& prev = s.points[s.points.size() - 2];
    const bool all_equal = std::all_of(s.points.begin(), s.points.end(), [&](const auto& q) { return q.second == last.second; });
    if (all_equal)
      return give_up(fmt::format("the simulated {} does not depend on {} ({:.6g} {} at {} and at {})", c.metric, p,
                                 last.second, unit, shown(prev.first, t.spec.type), shown(last.first, t.spec.type)));
    const auto& first = s.points[0];
    const auto second = std::find_if(s.points.begin(), s.points.end(), [&](const auto& q) { return q.second != first.second; });
    if (first.first != 0 && first.second != 0) {
      const double elasticity = ((second->second - first.second) / first.second) / ((second->first - first.first) / first.first);
      if (std::abs(elasticity) < kMinElasticity)
        return give_up(fmt::format("the simulated {} hardly depends on {} ({} -> {} moves it from {:.6g} to {:.6g} {}): "
                                   "this case cannot determine it", c.metric, p, shown(first.first, t.spec.type),
                                   shown(second->first, t.spec.type), first.second, second->second, unit));
    }
    for (const auto& q : s.points)
      if (matches(q)) return finish(q.first);
    if (last.second == prev.second)
      return give_up(fmt::format("the simulated {} stays at {:.6g} {} from {} to {}: no unique fit", c.metric,
                                 last.second, unit, shown(prev.first, t.spec.type), shown(last.first, t.spec.type)));
  } else if (matches(last)) {
    // Already right at the start: one step away shows whether the figure depends on the parameter at all, so
    // that a case which cannot determine it is not counted as a fit.
    const double step = last.first > 0 ? last.first * 0.1 : 1.0;
    double probe = last.first + (integral ? std::max(1.0, std::round(step)) : step);
    if (probe > t.spec.max) probe = last.first - (integral ? std::max(1.0, std::round(step)) : step);
    if (probe >= t.spec.min && probe <= t.spec.max) return probe;
    return finish(last.first);
  }
  // The closest pair of points on either side of the measured figure, if any.
  std::optional<std::pair<std::size_t, std::size_t>> bracket;
  for (std::size_t i = 0; i < s.points.size(); ++i)
    for (std::size_t j = 0; j < s.points.size(); ++j)
      if (residual(s.points[i], m) < 0 && residual(s.points[j], m) > 0 &&
          (!bracket || std::abs(s.points[i].first - s.points[j].first) <
                           std::abs(s.points[bracket->first].first - s.points[bracket->second].first)))
        bracket = std::make_pair(i, j);
  if (integral && bracket && std::abs(s.points[bracket->first].first - s.points[bracket->second].first) <= 1) {
    const auto& a = s.points[bracket->first];
    const auto& b = s.points[bracket->second];
    return finish(std::abs(residual(a, m)) <= std::abs(residual(b, m)) ? a.first : b.first);
  }
  const std::string closest = fmt::format("{}={}", p, shown(last.first, t.spec.type));
  if (static_cast<int>(s.points.size()) >= budget)
    return give_up(fmt::format("did not converge in {} simulations (last: {} gives {:.4g} {}, measured {:.4g})",
                               budget, closest, last.second, unit, m));
  double v;
  if (s.points.size() == 1) {
    const double ratio = last.second > 0 ? std::clamp(m / last.second, 1 / kMaxFirstStep, kMaxFirstStep) : kMaxFirstStep;
    v = last.first > 0 ? last.first * ratio : std::max(t.spec.min, 1.0);
  } else {
    const auto& prev = s.points[s.points.size() - 2];
    v = last.first + (m - last.second) * (last.first - prev.first) / (last.second - prev.second);
    if (bracket) {
      const double lo = std::min(s.points[bracket->first].first, s.points[bracket->second].first);
      const double hi = std::max(s.points[bracket->first].first, s.points[bracket->second].first);
      if (!(v > lo && v < hi)) v = (lo + hi) / 2;  // the secant left the bracket: bisect
    }
  }
  const double unrounded = v;
  v = std::clamp(v, t.spec.min, t.spec.max);
  if (integral) v = std::round(v);
  const auto evaluated = [&](double value) {
    return std::any_of(s.points.begin(), s.points.end(), [&](const auto& q) { return q.first == value; });
  };
  if (evaluated(v)) {
    if (!bracket && (v == t.spec.min || v == t.spec.max))
      return give_up(fmt::format("the fit needs {} {} its bound {} ({} gives {:.4g} {}, measured {:.4g})", p,
                                 v == t.spec.min ? "below" : "above", shown(v, t.spec.type),
                                 shown(v, t.spec.type), last.second, unit, m));
    if (!integral) return finish(v);  // the secant stands still: as close as doubles get
    v += unrounded > v ? 1 : -1;      // the root lies within half a step of an evaluated integer: try its neighbour
    if (v < t.spec.min || v > t.spec.max || evaluated(v))
      return give_up(fmt::format("did not converge (last: {} gives {:.4g} {}, measured {:.4g})", closest, last.second,
                                 unit, m));
  }
  return v;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double round_proposal(double value, const ParamSpec& spec) {
  if (is_integral(spec.type)) return std::clamp(std::round(value), spec.min, spec.max);
  return std::clamp(round_significant(value, kProposalDigits), spec.min, spec.max);
}

std::optional<double> mape(const std::vector<CaseFit>& fits, bool after) {
  double sum = 0;
  std::size_t n = 0;
  for (const CaseFit& f : fits) {
    const std::optional<double>& s = after ? f.after : f.before;
    if (!f.used || !s) continue;
    sum += std::abs((*s - f.reference.measured) / f.reference.measured * 100);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

std::optional<double> error_pct(const CaseFit& f, const std::optional<double>& simulated) {
  if (!simulated) return std::nullopt;
  return (*simulated - f.reference.measured) / f.reference.measured * 100;
}

}  // namespace

CalibrationResult calibrate(const std::vector<ReferenceCase>& cases, const std::string& gpu,
                            const CalibrationOptions& options) {
  CalibrationResult result;
  result.gpu = gpu;
  const Config config = Config::load(resolve_gpu_config(gpu), {}, Registry::instance(), config_dirs());
  std::vector<Tunable> parameters;  // in order of first appearance
  std::vector<std::size_t> parameter_of;  // per fit
  for (const ReferenceCase& c : cases) {
    if (c.tunes.empty()) {
      result.untuned.push_back(c);
      continue;
    }
    const Tunable t = find_tunable(c, config, gpu);
    auto it = std::find_if(parameters.begin(), parameters.end(), [&](const Tunable& p) { return p.name == t.name; });
    if (it == parameters.end()) it = parameters.insert(parameters.end(), t);
    parameter_of.push_back(static_cast<std::size_t>(it - parameters.begin()));
    CaseFit fit;
    fit.reference = c;
    if (const std::optional<MetricInfo> metric = find_metric(c.kind, c.metric)) fit.unit = metric->unit;
    for (const std::string& o : c.overrides)
      if (override_key(o) == c.tunes) fit.reason = fmt::format("its set: fixes {} ({})", c.tunes, o);
    result.fits.push_back(std::move(fit));
  }
  if (result.fits.empty())
    throw InputError(fmt::format("calibrate: none of the {} cases on {} has `tunes:` (the parameter a measurement "
                                 "determines): nothing to fit", cases.size(), gpu));
  ValidateOptions run_options;
  run_options.jobs = options.jobs;
  run_options.max_memory_bytes = options.max_memory_bytes;
  const auto progress = [&](const std::string& message) {
    if (options.on_progress) options.on_progress(message);
  };

  // Before: the config as it is (the cases that can take part; one whose set: fixes its parameter cannot).
  std::vector<ReferenceCase> all;
  std::vector<std::size_t> fit_of;  // per entry of `all`
  for (std::size_t i = 0; i < result.fits.size(); ++i)
    if (result.fits[i].reason.empty()) {
      all.push_back(result.fits[i].reference);
      fit_of.push_back(i);
    }
  progress(fmt::format("simulating the {} tuned cases with {} as it is", all.size(), gpu));
  const std::vector<CaseResult> before = run_cases(all, run_options);
  for (std::size_t k = 0; k < before.size(); ++k) {
    CaseFit& fit = result.fits[fit_of[k]];
    if (before[k].status == CaseStatus::Ok) fit.before = before[k].simulated;
    else fit.reason = fmt::format("{}: {}", status_name(before[k].status), before[k].reason);
  }

  // The parameters one after another, each with the values fitted before it applied.
  std::vector<std::string> fitted_overrides;
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    const Tunable& t = parameters[p];
    std::vector<Search> searches;
    for (std::size_t i = 0; i < result.fits.size(); ++i)
      if (parameter_of[i] == p && result.fits[i].reason.empty()) {
        Search s;
        s.fit = i;
        searches.push_back(s);
      }
    progress(fmt::format("fitting {} ({}) to {} cases", t.name, value_text(t.value, t.spec.type), searches.size()));
    run_options.extra_overrides = fitted_overrides;
    // Each round simulates every unfinished case once, at its own trial value (a per-case override).
    std::vector<std::pair<std::size_t, double>> trials;  // (search, value)
    for (std::size_t k = 0; k < searches.size(); ++k) {
      CaseFit& fit = result.fits[searches[k].fit];
      if (!fitted_overrides.empty()) {
        trials.emplace_back(k, t.value);
        continue;
      }
      // Nothing fitted yet: the config as it is, already simulated.
      searches[k].points.emplace_back(t.value, *fit.before);
      ++fit.simulations;
      if (const std::optional<double> v = next_trial(searches[k], t, fit.reference, fit.unit, options.max_simulations_per_case))
        trials.emplace_back(k, *v);
    }
    while (!trials.empty()) {
      std::vector<ReferenceCase> round;
      for (const auto& [k, value] : trials) {
        ReferenceCase c = result.fits[searches[k].fit].reference;
        c.overrides.push_back(t.name + "=" + value_text(value, t.spec.type));
        round.push_back(std::move(c));
      }
      const std::vector<CaseResult> simulated = run_cases(round, run_options);
      std::vector<std::pair<std::size_t, double>> next;
      for (std::size_t r = 0; r < trials.size(); ++r) {
        Search& s = searches[trials[r].first];
        CaseFit& fit = result.fits[s.fit];
        ++fit.simulations;
        if (simulated[r].status != CaseStatus::Ok) {
          s.done = true;
          s.reason = fmt::format("at {}={}: {}: {}", t.name, shown(trials[r].second, t.spec.type),
                                 status_name(simulated[r].status), simulated[r].reason);
          continue;
        }
        s.points.emplace_back(trials[r].second, simulated[r].simulated);
        if (const std::optional<double> v = next_trial(s, t, fit.reference, fit.unit, options.max_simulations_per_case))
          next.emplace_back(trials[r].first, *v);
      }
      trials = std::move(next);
    }
    ParameterProposal proposal;
    proposal.name = t.name;
    proposal.type = t.spec.type;
    proposal.old_value = t.value;
    std::vector<double> values;
    for (const Search& s : searches) {
      CaseFit& fit = result.fits[s.fit];
      fit.fitted = s.fitted;
      fit.used = s.fitted.has_value();
      fit.reason = s.reason;
      if (fit.used) {
        values.push_back(*s.fitted);
        proposal.cases.push_back(s.fit);
      }
    }
    if (values.empty()) continue;
    proposal.new_value = round_proposal(median(values), t.spec);
    fitted_overrides.push_back(t.name + "=" + value_text(proposal.new_value, t.spec.type));
    result.proposals.push_back(std::move(proposal));
  }

  // After: every proposal applied.
  progress(fmt::format("simulating the {} tuned cases with the proposed values", all.size()));
  run_options.extra_overrides = fitted_overrides;
  const std::vector<CaseResult> after = run_cases(all, run_options);
  for (std::size_t k = 0; k < after.size(); ++k)
    if (after[k].status == CaseStatus::Ok) result.fits[fit_of[k]].after = after[k].simulated;
  result.mape_before_pct = mape(result.fits, false);
  result.mape_after_pct = mape(result.fits, true);
  return result;
}

std::string calibration_table(const CalibrationResult& result) {
  const auto number = [](const std::optional<double>& v) { return v ? fmt::format("{:.4g}", *v) : std::string("-"); };
  const auto percent = [](const std::optional<double>& v) { return v ? fmt::format("{:+.1f}", *v) : std::string("-"); };
  std::size_t id_width = 4, param_width = 9;
  for (const CaseFit& f : result.fits) {
    id_width = std::max(id_width, f.reference.id.size());
    param_width = std::max(param_width, f.reference.tunes.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}  {:>8}  {:>8}  {:>12}  {}\n", "case", id_width,
                                "parameter", param_width, "measured", "before", "after", "err0 %", "err1 %", "fitted", "");
  for (const CaseFit& f : result.fits) {
    std::string fitted_text = "-";
    for (const ParameterProposal& p : result.proposals)
      if (p.name == f.reference.tunes && f.fitted) fitted_text = shown(*f.fitted, p.type);
    out += fmt::format("{:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}  {:>8}  {:>8}  {:>12}  {}\n", f.reference.id, id_width,
                       f.reference.tunes, param_width, fmt::format("{:.4g}", f.reference.measured), number(f.before),
                       number(f.after), percent(error_pct(f, f.before)), percent(error_pct(f, f.after)),
                       f.used ? fitted_text : "-", f.used ? std::string() : "not used: " + f.reason);
  }
  for (const ReferenceCase& c : result.untuned) out += fmt::format("{:<{}}  not used: no tunes:\n", c.id, id_width);
  out += "\nproposed changes:\n";
  if (result.proposals.empty()) out += "  none (no case could be fitted)\n";
  for (const ParameterProposal& p : result.proposals)
    out += fmt::format("  {:<{}}  {:>14} -> {:<14}  median of {} case{}\n", p.name, param_width,
                       value_text(p.old_value, p.type), value_text(p.new_value, p.type), p.cases.size(),
                       p.cases.size() == 1 ? "" : "s");
  std::size_t used = 0;
  for (const CaseFit& f : result.fits) used += f.used;
  out += fmt::format("\nMAPE over the {} used cases: before {}%, after {}%\n", used,
                     result.mape_before_pct ? fmt::format("{:.2f}", *result.mape_before_pct) : "-",
                     result.mape_after_pct ? fmt::format("{:.2f}", *result.mape_after_pct) : "-");
  return out;
}

std::string calibration_json(const CalibrationResult& result) {
  const auto optional_number = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json j;
  j["gpu"] = result.gpu;
  j["cases"] = nlohmann::json::array();
  for (const CaseFit& f : result.fits) {
    j["cases"].push_back({{"id", f.reference.id},
                          {"parameter", f.reference.tunes},
                          {"metric", f.reference.metric},
                          {"unit", f.unit},
                          {"measured", f.reference.measured},
                          {"simulated_before", optional_number(f.before)},
                          {"simulated_after", optional_number(f.after)},
                          {"error_before_pct", optional_number(error_pct(f, f.before))},
                          {"error_after_pct", optional_number(error_pct(f, f.after))},
                          {"fitted", optional_number(f.fitted)},
                          {"simulations", f.simulations},
                          {"used", f.used},
                          {"reason", f.reason}});
  }
  j["not_used"] = nlohmann::json::array();
  for (const ReferenceCase& c : result.untuned) j["not_used"].push_back({{"id", c.id}, {"reason", "no tunes:"}});
  j["proposals"] = nlohmann::json::array();
  for (const ParameterProposal& p : result.proposals) {
    std::vector<std::string> ids;
    for (std::size_t i : p.cases) ids.push_back(result.fits[i].reference.id);
    j["proposals"].push_back({{"parameter", p.name},
                              {"old", p.old_value},
                              {"new", p.new_value},
                              {"old_text", value_text(p.old_value, p.type)},
                              {"new_text", value_text(p.new_value, p.type)},
                              {"cases", ids}});
  }
  j["mape_before_pct"] = optional_number(result.mape_before_pct);
  j["mape_after_pct"] = optional_number(result.mape_after_pct);
  return j.dump(2) + "\n";
}

std::string calibration_overlay(const CalibrationResult& result, const std::vector<std::string>& header,
                                const std::string& base) {
  std::string out;
  for (const std::string& line : header) out += "# " + line + "\n";
  out += fmt::format("base: {}\n", base);
  std::size_t width = 0;
  for (const ParameterProposal& p : result.proposals)
    width = std::max(width, p.name.size() + 2 + value_text(p.new_value, p.type).size());
  for (const ParameterProposal& p : result.proposals) {
    std::vector<std::string> fitted_to;
    for (std::size_t i : p.cases)
      fitted_to.push_back(fmt::format("{} ({:.4g})", result.fits[i].reference.id, result.fits[i].reference.measured));
    const std::string entry = fmt::format("{}: {}", p.name, value_text(p.new_value, p.type));
    const std::string how = p.cases.size() == 1 ? "" : ": median";
    if (p.new_value == p.old_value)
      out += fmt::format("# {:<{}}  # unchanged; fitted to {}{}\n", entry, width, fmt::join(fitted_to, ", "), how);
    else
      out += fmt::format("{:<{}}  # was {}; fitted to {}{}\n", entry, width, value_text(p.old_value, p.type),
                         fmt::join(fitted_to, ", "), how);
  }
  return out;
}

}  // namespace warpsim
