#include "app/sweep/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "app/fnv1a.h"
#include "app/gpu_configs.h"
#include "app/json_input.h"
#include "app/result_set.h"
#include "app/workload_cache.h"
#include "sim/config/input_file.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "traces/synth/registry.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace warpsim::sweep {

namespace {

// A scenario key's number, read as the config reader reads a parameter of `type`; an InputError naming the key and
// `expected` otherwise.
double scenario_number(const std::string& key, const std::string& value, ParamType type, const char* expected) {
  double number = 0;
  std::string error;
  if (!parse_quantity(value, type, number, error))
    throw InputError(fmt::format("{}: expected {}, got '{}'", key, expected, value));
  return number;
}

}  // namespace

llm::Scenario llm_scenario(const std::map<std::string, std::string>& keys) {
  llm::Scenario s;
  for (const auto& [key, value] : keys) {
    if (key == "phase") {
      if (value != "decode" && value != "prefill") throw InputError(fmt::format("phase: expected decode or prefill, got '{}'", value));
      s.phase = value;
    } else if (key == "dtype") {
      s.dtype = value;
    } else if (key == "kv_dtype") {
      s.kv_dtype = value;
    } else if (key == "moe_skew") {
      s.moe_skew = scenario_number(key, value, ParamType::Real, "a number");
    } else {
      const double number = scenario_number(key, value, ParamType::UInt, "a whole number");
      std::uint64_t& field = key == "batch"     ? s.batch
                             : key == "prompt"  ? s.prompt
                             : key == "context" ? s.context
                             : key == "ep"      ? s.ep
                                                : s.tp;
      field = static_cast<std::uint64_t>(number);
    }
  }
  return s;
}

namespace {

std::string short_hash(const std::string& text) {
  Fnv1a64 h;
  h.add(text);
  return h.hex().substr(0, 8);
}

// Keeps letters, digits and . = + - _ (readable in a shell and on every file system); anything else becomes '-'.
std::string sanitize(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) out += std::isalnum(c) || c == '.' || c == '=' || c == '+' || c == '-' || c == '_' ? static_cast<char>(c) : '-';
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');  // no hidden or empty names
  return out;
}

// A config key's value in a resolved config: "sm.count" is section sm, parameter count; "l2.impl" is the
// section's implementation. Null when the config has no such parameter.
const ParamValue* find_param(const Config& config, const std::string& key, std::string* impl) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) return nullptr;
  const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
  if (!config.has_section(section)) return nullptr;
  const Params& params = config.section(section);
  if (name == "impl") {
    *impl = params.impl();
    return nullptr;
  }
  return params.has(name) ? &params.value(name) : nullptr;
}

// Base units (Hz, B/s, bytes): whole numbers as integers, so that CSV and SQLite show 1980000000, not 1.98e9.
ordered_json number_json(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9e15) return static_cast<std::int64_t>(v);
  return v;
}

ordered_json value_json(const ParamValue& v) {
  switch (v.type) {
    case ParamType::Bool: return v.flag;
    case ParamType::String:
    case ParamType::Choice: return v.text;
    case ParamType::UInt: return static_cast<std::uint64_t>(v.number);
    default: return number_json(v.number);
  }
}

ordered_json column_value(const Config& config, const std::string& key) {
  std::string impl;
  const ParamValue* v = find_param(config, key, &impl);
  if (v) return value_json(*v);
  return impl.empty() ? ordered_json() : ordered_json(impl);
}

// The values of a range, as override texts that read back exactly.
std::vector<std::string> expand_range(const ParamValues& values, ParamType type, const std::string& key,
                                      const std::string& where) {
  if (type != ParamType::UInt && type != ParamType::Real && type != ParamType::Frequency &&
      type != ParamType::Bandwidth && type != ParamType::Size)
    throw InputError(fmt::format("{}: {}: a range needs a numeric parameter, this one is a {}", where, key, param_type_name(type)));
  double from = 0, to = 0, step = 0;
  for (auto [text, out] : {std::pair{&values.from, &from}, {&values.to, &to}, {&values.step, &step}}) {
    std::string error;
    if (!parse_quantity(*text, type, *out, error))
      throw InputError(fmt::format("{}: {}: range value '{}': {}", where, key, *text, error));
  }
  if (!(step > 0) || to < from)
    throw InputError(fmt::format("{}: {}: a range needs step > 0 and from <= to, got from {} to {} step {}", where, key,
                                 values.from, values.to, values.step));
  const double count = std::floor((to - from) / step * (1 + 1e-12)) + 1;
  if (count > 100000) throw InputError(fmt::format("{}: {}: the range has {:.0f} values, more than 100000", where, key, count));
  static const std::map<ParamType, const char*> base_unit{{ParamType::Frequency, "Hz"}, {ParamType::Bandwidth, "B/s"}, {ParamType::Size, "B"}};
  std::vector<std::string> out;
  for (int i = 0; i < static_cast<int>(count); ++i) {
    const double v = from + i * step;
    // The readable form ("1.7GHz") when it reads back as the same number; else the base unit, exactly.
    std::string text = format_quantity(v, type), error;
    double back = 0;
    if (!parse_quantity(text, type, back, error) || back != v) {
      const auto unit = base_unit.find(type);
      text = format_number(v) + (unit == base_unit.end() ? "" : unit->second);
    }
    out.push_back(text);
  }
  return out;
}

std::string where_of(const Candidate& c) { return c.where; }

struct Expanded {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // per axis value: one text per key
};

std::vector<Expanded> expand_axes(const SweepSpec& spec, const Config& base) {
  std::vector<Expanded> axes;
  for (const Axis& axis : spec.axes) {
    Expanded e;
    e.keys = axis.keys;
    std::vector<std::vector<std::string>> lists;
    for (std::size_t k = 0; k < axis.keys.size(); ++k) {
      const ParamValues& v = axis.values[k];
      if (!v.is_range()) {
        lists.push_back(v.list);
        continue;
      }
      std::string impl;
      const ParamValue* p = find_param(base, axis.keys[k], &impl);
      if (!p) {
        std::vector<std::string> known;
        for (const auto& [section, params] : base.sections())
          for (const auto& [name, value] : params.values()) known.push_back(section + "." + name);
        const std::string hint = did_you_mean(axis.keys[k], known);
        throw InputError(fmt::format("{}: parameters: {}: no such config parameter{}", axis.where, axis.keys[k],
                                     hint.empty() ? " (warpsim describe lists them)" : "; did you mean '" + hint + "'?"));
      }
      lists.push_back(expand_range(v, p->type, axis.keys[k], axis.where));
    }
    for (std::size_t i = 0; i < lists[0].size(); ++i) {
      std::vector<std::string> point;
      for (const auto& list : lists) point.push_back(list[i]);
      e.values.push_back(std::move(point));
    }
    axes.push_back(std::move(e));
  }
  return axes;
}

// The cartesian product of an entry's key lists, in the order written: calls `each` with one value per key.
void for_each_combination(const std::vector<std::pair<std::string, std::vector<std::string>>>& keys,
                          const std::function<void(const std::vector<std::pair<std::string, std::string>>&)>& each) {
  std::vector<std::size_t> index(keys.size(), 0);
  for (;;) {
    std::vector<std::pair<std::string, std::string>> point;
    for (std::size_t k = 0; k < keys.size(); ++k) point.emplace_back(keys[k].first, keys[k].second[index[k]]);
    each(point);
    std::size_t k = 0;
    while (k < index.size() && ++index[k] == keys[k].second.size()) index[k++] = 0;
    if (k == index.size()) return;
  }
}

void expand_llm(const WorkloadEntry& w, const std::string& context, std::vector<PlannedWorkload>& out) {
  llm::LlmModel model;
  try {
    model = llm::load_model(w.llm);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: llm: {}", context, e.what()));
  }
  for_each_combination(w.keys, [&](const std::vector<std::pair<std::string, std::string>>& point) {
    PlannedWorkload p;
    p.llm_model = w.llm;
    std::string label = w.label.empty() ? "llm_" + model.name : w.label;
    for (std::size_t k = 0; k < point.size(); ++k) {
      p.llm_scenario[point[k].first] = point[k].second;
      p.given[point[k].first] = point[k].second;
      if (w.label.empty() || w.keys[k].second.size() > 1) label += "_" + point[k].first + point[k].second;
    }
    p.label = label;
    p.given["llm"] = w.llm;
    try {
      const llm::Scenario scenario = llm_scenario(p.llm_scenario);
      llm::build_plan(model, scenario);  // the scenario's own checks (a batch of 0, fp8 on an old GPU, ...)
      p.params = {{"model", model.name}, {"phase", scenario.phase}, {"batch", scenario.batch}, {"prompt", scenario.prompt},
                  {"context", scenario.context}, {"dtype", scenario.dtype}, {"kv_dtype", scenario.kv_dtype},
                  {"tp", scenario.tp}, {"ep", scenario.ep}, {"moe_skew", scenario.moe_skew}};
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", context, e.what()));
    }
    out.push_back(std::move(p));
  });
}

std::vector<PlannedWorkload> expand_workloads(const SweepSpec& spec, const Config& base) {
  std::vector<PlannedWorkload> out;
  for (std::size_t i = 0; i < spec.workloads.size(); ++i) {
    const WorkloadEntry& w = spec.workloads[i];
    const std::string context = fmt::format("{}: workloads[{}]", w.where, i);
    if (!w.llm.empty()) {
      expand_llm(w, context, out);
      continue;
    }
    if (!w.trace.empty()) {
      const std::string problem = input_file_problem(w.trace, kNoSizeLimit);
      if (!problem.empty()) throw InputError(fmt::format("{}: trace: cannot open '{}': {}", context, w.trace, problem));
      PlannedWorkload p;
      p.spec.trace_file = w.trace;
      p.label = w.label.empty() ? fs::path(w.trace).stem().string() : w.label;
      p.given = {{"trace", w.trace}};
      out.push_back(std::move(p));
      continue;
    }
    const SynthesizerInfo* info = nullptr;
    try {
      info = &SynthRegistry::instance().get(w.synthesizer);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: synth: {}", context, e.what()));
    }
    for_each_combination(w.keys, [&](const std::vector<std::pair<std::string, std::string>>& point) {
      PlannedWorkload p;
      p.spec.synthesizer = w.synthesizer;
      std::string label = w.label.empty() ? w.synthesizer : w.label;
      for (std::size_t k = 0; k < point.size(); ++k) {
        p.spec.synth_keys[point[k].first] = point[k].second;
        p.given[point[k].first] = point[k].second;
        if (w.label.empty() || w.keys[k].second.size() > 1) label += "_" + point[k].first + point[k].second;
      }
      p.label = label;
      try {
        const SynthArgs args = SynthRegistry::instance().validate(w.synthesizer, p.spec.synth_keys);
        for (const ParamSpec& key : info->keys) {
          const bool numeric = key.type != ParamType::String && key.type != ParamType::Choice && key.type != ParamType::Bool;
          if (numeric) p.params[key.name] = number_json(args.number(key.name));
          else p.params[key.name] = args.text(key.name);
        }
        // The synthesizer's own checks of the combination (a head_dim it has no kernel for), on the base GPU.
        SynthRegistry::instance().make(w.synthesizer, p.spec.synth_keys, base);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", context, e.what()));
      }
      out.push_back(std::move(p));
    });
  }
  return out;
}

Config load_design_config(const std::string& file, const std::vector<std::pair<std::string, std::string>>& overrides,
                          const std::string& context) {
  std::vector<std::string> set;
  bool sets_clock = false, sets_cap_mode = false;
  for (const auto& [key, value] : overrides) {
    set.push_back(key + "=" + value);
    sets_clock = sets_clock || key == "clocks.sm";
    sets_cap_mode = sets_cap_mode || key == "power.cap_mode";
  }
  // A design point that sets clocks.sm runs at that clock, as `--set clocks.sm` pins a single run: its job runs
  // from the resolved config, which keeps the clock but not that it was set, and under power.cap_mode boost the
  // clock would be searched from power.reference_clock and the setting lost.
  if (sets_clock && !sets_cap_mode) set.push_back("power.cap_mode=report");
  try {
    return Config::load(file, set, Registry::instance(), config_dirs());
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", context, e.what()));
  }
}

}  // namespace

std::string sensitivity_candidate_name(const std::string& key, int direction, double step) {
  return fmt::format("{}{}{:g}pct", key, direction > 0 ? "+" : "-", step * 100);
}

namespace {

// The candidates of a sensitivity spec: the base, and each parameter at the base's value times (1 -/+ step), as
// an override text in the parameter's base unit.
std::vector<Candidate> sensitivity_candidates(const Sensitivity& s, const Config& base,
                                              std::vector<SensitivityPoint>& points) {
  std::vector<Candidate> out(1);
  out[0].name = kSensitivityBase;
  out[0].where = s.where;
  for (const std::string& key : s.keys) {
    std::string impl;
    const ParamValue* v = find_param(base, key, &impl);
    const std::string where = fmt::format("{}: sensitivity.parameters: {}", s.where, key);
    if (!v) throw InputError(fmt::format("{}: the base config has no such numeric parameter", where));
    const char* unit = v->type == ParamType::Frequency ? "Hz" : v->type == ParamType::Bandwidth ? "B/s"
                     : v->type == ParamType::Size ? "B" : "";
    if (v->type != ParamType::UInt && v->type != ParamType::Real && v->type != ParamType::Frequency &&
        v->type != ParamType::Bandwidth && v->type != ParamType::Size)
      throw InputError(fmt::format("{}: a {} parameter cannot be scaled; expected a number, frequency, bandwidth or size",
                                   where, param_type_name(v->type)));
    // Counts and bytes are whole; Hz and B/s are small enough units to round to as well.
    const bool whole = v->type != ParamType::Real;
    for (int direction : {-1, +1}) {
      double value = v->number * (1 + direction * s.step);
      if (whole) value = std::round(value);
      if (value == v->number)
        throw InputError(fmt::format("{}: a {:g}% step leaves its value {} unchanged; use a larger step", where,
                                     s.step * 100, format_number(v->number)));
      Candidate c;
      c.name = sensitivity_candidate_name(key, direction, s.step);
      c.where = s.where;
      c.set.emplace_back(key, (whole ? fmt::format("{}", static_cast<std::uint64_t>(value)) : fmt::format("{:.17g}", value)) + unit);
      out.push_back(std::move(c));
      points.push_back({out.back().name, key, direction, v->number, value});
    }
  }
  return out;
}

}  // namespace

SweepPlan make_plan(const SweepSpec& given) {
  SweepPlan plan;
  const std::string base_file = resolve_gpu_config(given.base);
  const Config base = load_design_config(base_file, {}, fmt::format("{}: base", given.file));
  SweepSpec spec = given;
  if (given.sensitivity) spec.candidates = sensitivity_candidates(*given.sensitivity, base, plan.sensitivity);
  plan.spec = spec;
  const std::vector<Expanded> axes = expand_axes(spec, base);
  plan.workloads = expand_workloads(spec, base);

  // Columns: every overridden key, in the order written, then whatever a candidate's own config changes.
  std::vector<std::string> columns;
  std::set<std::string> column_set;
  const auto add_column = [&](const std::string& key) {
    if (column_set.insert(key).second) columns.push_back(key);
  };
  for (const Candidate& c : spec.candidates)
    for (const auto& kv : c.set) add_column(kv.first);
  for (const Expanded& e : axes)
    for (const auto& key : e.keys) add_column(key);

  // A candidate's own config file: the parameters it changes from the base are columns too (the axes' keys are
  // columns already, so the candidate's config without them tells).
  for (const Candidate& c : spec.candidates) {
    if (c.config.empty()) continue;
    const Config config = load_design_config(c.config, c.set, fmt::format("{}: candidate {}", where_of(c), c.name));
    for (const auto& [section, params] : config.sections()) {
      if (!base.has_section(section)) continue;
      const Params& b = base.section(section);
      if (b.impl() != params.impl()) add_column(section + ".impl");
      for (const auto& [name, v] : params.values())
        if (!b.has(name) || b.value(name).number != v.number || b.value(name).text != v.text) add_column(section + "." + name);
    }
  }
  plan.param_columns = columns;

  for (const Candidate& c : spec.candidates) {
    const std::string file = c.config.empty() ? base_file : c.config;
    std::vector<std::size_t> index(axes.size(), 0);
    for (;;) {
      DesignPoint d;
      d.candidate = c.name;
      d.config_file = file;
      d.overrides = c.set;
      for (std::size_t a = 0; a < axes.size(); ++a)
        for (std::size_t k = 0; k < axes[a].keys.size(); ++k) {
          d.overrides.emplace_back(axes[a].keys[k], axes[a].values[index[a]][k]);
          d.axis_values.emplace_back(axes[a].keys[k], axes[a].values[index[a]][k]);
        }
      std::string context = fmt::format("{}: candidate {}", where_of(c), c.name);
      if (!d.axis_values.empty()) {
        std::vector<std::string> point;
        for (const auto& [key, value] : d.axis_values) point.push_back(key + "=" + value);
        context += fmt::format(" with {}", fmt::join(point, ", "));
      }
      const Config config = load_design_config(file, d.overrides, context);
      d.resolved_yaml = config.resolved_yaml();
      d.config_hash = config_hash(config);
      for (const std::string& key : columns) d.params[key] = column_value(config, key);
      plan.design_points.push_back(std::move(d));
      std::size_t a = 0;
      while (a < index.size() && ++index[a] == axes[a].values.size()) index[a++] = 0;
      if (a == index.size()) break;
    }
  }

  std::set<std::string> workload_columns;
  for (const PlannedWorkload& w : plan.workloads)
    for (const auto& item : w.params.items())
      if (workload_columns.insert(item.key()).second) plan.workload_columns.push_back(item.key());

  // Jobs: every design point on every workload; equal (resolved config, workload) pairs run once.
  std::unordered_map<std::string, std::string> first_job;  // workload-cache key -> job name
  std::set<std::string> names;
  for (std::size_t d = 0; d < plan.design_points.size(); ++d) {
    const DesignPoint& point = plan.design_points[d];
    std::string design = sanitize(point.candidate);
    for (const auto& [key, value] : point.axis_values) {
      std::string k = key;
      std::replace(k.begin(), k.end(), '.', '_');
      design += "+" + sanitize(k) + "=" + sanitize(value);
    }
    for (std::size_t w = 0; w < plan.workloads.size(); ++w) {
      PlannedJob job;
      job.design_point = d;
      job.workload = w;
      std::string name = design + "__" + sanitize(plan.workloads[w].label);
      if (name.size() > kMaxJobNameLength) name = name.substr(0, kMaxJobNameLength - 9) + "~" + short_hash(name);
      if (names.count(name)) name += "~" + short_hash(fmt::format("{}/{}/{}", name, d, w));
      names.insert(name);
      job.name = name;
      const PlannedWorkload& workload = plan.workloads[w];
      const std::string key = workload.llm_model.empty() ? WorkloadCache::key(workload.spec, point.config_hash)
                                                          : "llm:" + workload.given.dump() + ":" + point.config_hash;
      const auto [it, inserted] = first_job.emplace(key, name);
      if (!inserted) job.alias_of = it->second;
      plan.jobs.push_back(std::move(job));
    }
  }
  return plan;
}

ordered_json manifest_json(const SweepPlan& plan) {
  ordered_json m;
  m["format"] = kManifestFormat;
  m["name"] = plan.spec.name;
  m["spec"] = fs::absolute(plan.spec.file).lexically_normal().string();
  m["spec_hash"] = plan.spec.hash;
  m["base"] = plan.spec.base;
  m["warpsim_version"] = WARPSIM_VERSION;
  m["param_columns"] = plan.param_columns;
  m["workload_columns"] = plan.workload_columns;
  if (plan.spec.sensitivity) {
    ordered_json points = ordered_json::array();
    for (const SensitivityPoint& p : plan.sensitivity)
      points.push_back({{"candidate", p.candidate}, {"key", p.key}, {"direction", p.direction},
                        {"base_value", number_json(p.base_value)}, {"value", number_json(p.value)}});
    m["sensitivity"] = {{"step", plan.spec.sensitivity->step}, {"base", kSensitivityBase}, {"points", points}};
  }
  ordered_json jobs = ordered_json::array();
  for (const PlannedJob& job : plan.jobs) {
    const DesignPoint& d = plan.design_points[job.design_point];
    const PlannedWorkload& w = plan.workloads[job.workload];
    ordered_json j;
    j["name"] = job.name;
    j["candidate"] = d.candidate;
    j["config_hash"] = d.config_hash;
    j["design_point"] = d.params;
    ordered_json overrides = ordered_json::array();
    for (const auto& [key, value] : d.overrides) overrides.push_back(key + "=" + value);
    j["overrides"] = overrides;
    j["workload"] = {{"label", w.label},
                     {"kind", !w.llm_model.empty() ? std::string("llm") : w.spec.trace_file.empty() ? w.spec.synthesizer : "trace"},
                     {"given", w.given},
                     {"params", w.params}};
    if (!job.alias_of.empty()) j["alias_of"] = job.alias_of;
    jobs.push_back(std::move(j));
  }
  m["jobs"] = std::move(jobs);
  return m;
}

namespace {

// job.yaml: YAML whose strings are written as JSON strings (a subset of YAML's double-quoted scalars).
std::string job_yaml(const PlannedJob& job, const DesignPoint& d, const PlannedWorkload& w) {
  const auto q = [](const std::string& s) { return ordered_json(s).dump(); };
  std::string y = "# A job of a warpsim sweep (written by `warpsim sweep plan`; run by `warpsim sweep run-jobs`).\n";
  y += fmt::format("name: {}\ncandidate: {}\nconfig: {}\nconfig_hash: {}\n", q(job.name), q(d.candidate),
                   q(kJobConfigFile), q(d.config_hash));
  if (!w.llm_model.empty()) {
    y += fmt::format("llm: {}\nkeys:\n", q(w.llm_model));
    for (const auto& [key, value] : w.llm_scenario) y += fmt::format("  {}: {}\n", q(key), q(value));
  } else if (!w.spec.trace_file.empty()) {
    y += fmt::format("trace: {}\n", q(w.spec.trace_file));
  } else {
    y += fmt::format("synth: {}\nkeys:\n", q(w.spec.synthesizer));
    for (const auto& [key, value] : w.spec.synth_keys) y += fmt::format("  {}: {}\n", q(key), q(value));
  }
  return y;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw InputError(fmt::format("cannot write '{}'", path.string()));
}

}  // namespace

std::string no_plan_message(const std::string& run_dir) {
  return fmt::format("'{}' holds no sweep plan (no {}; warpsim sweep plan SPEC -o DIR makes one)", run_dir, kManifestFile);
}

nlohmann::json read_manifest(const std::string& run_dir) {
  const fs::path manifest = fs::path(run_dir) / kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest, ec)) throw InputError(no_plan_message(run_dir));
  const nlohmann::json m =
      parse_json_input(read_input_file(manifest.string(), kNoSizeLimit, "sweep manifest"), manifest.string());
  if (m.value("format", "") != kManifestFormat)
    throw InputError(fmt::format("{}: not a sweep manifest of this warpsim (format '{}', expected '{}')", manifest.string(),
                                 m.value("format", ""), kManifestFormat));
  return m;
}

bool holds_plan_of(const std::string& run_dir, const std::string& spec_hash) {
  const fs::path manifest = fs::path(run_dir) / kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest, ec)) return false;
  std::string hash;
  try {
    hash = parse_json_input(read_input_file(manifest.string(), kNoSizeLimit, "sweep manifest"), manifest.string())
               .value("spec_hash", std::string());
  } catch (const InputError&) {
  }
  if (hash == spec_hash) return true;
  throw InputError(fmt::format("-o: '{}' holds the plan of another sweep spec (or another version of this one): "
                               "plan into a new directory, or remove it", run_dir));
}

bool write_plan(const SweepPlan& plan, const std::string& run_dir) {
  const fs::path dir(run_dir);
  std::error_code ec;
  if (holds_plan_of(run_dir, plan.spec.hash)) return false;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(fmt::format("-o: '{}' exists and is not a directory", run_dir));
  fs::create_directories(dir / kJobsDir, ec);
  if (ec) throw InputError(fmt::format("-o: cannot create '{}': {}", (dir / kJobsDir).string(), ec.message()));
  for (const PlannedJob& job : plan.jobs) {
    if (!job.alias_of.empty()) continue;
    const fs::path job_dir = dir / kJobsDir / job.name;
    fs::create_directory(job_dir, ec);
    if (ec) throw InputError(fmt::format("cannot create '{}': {}", job_dir.string(), ec.message()));
    const DesignPoint& d = plan.design_points[job.design_point];
    write_text(job_dir / kJobConfigFile, d.resolved_yaml);
    write_text(job_dir / kJobFile, job_yaml(job, d, plan.workloads[job.workload]));
  }
  // Last: a directory with a manifest is a complete plan.
  write_file_atomically(dir / kManifestFile, manifest_json(plan).dump(1) + "\n");
  return true;
}

}  // namespace warpsim::sweep
