#include "app/validate/ncu_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "app/validate/csv_reader.h"
#include "app/validate/workload_fields.h"
#include "sim/config/input_file.h"
#include "sim/config/yaml_tree.h"
#include "sim/core/error.h"
#include "traces/synth/registry.h"

namespace warpsim {
namespace {

constexpr const char* kKernelNameColumn = "Kernel Name";
constexpr const char* kDurationColumn = "gpu__time_duration.sum";

// --- units ----------------------------------------------------------------------------------------------------

struct UnitScale {
  const char* unit;
  double scale;
};

// Nsight Compute scales units with SI prefixes (1 Kbyte = 1000 bytes); binary prefixes are accepted too.
const std::map<std::string, std::vector<UnitScale>>& unit_tables() {
  static const std::map<std::string, std::vector<UnitScale>> tables = {
      {"time", {{"nsecond", 1e-3}, {"usecond", 1.0}, {"msecond", 1e3}, {"second", 1e6},
                {"ns", 1e-3}, {"us", 1.0}, {"ms", 1e3}, {"s", 1e6}}},
      {"bytes", {{"byte", 1.0}, {"Kbyte", 1e3}, {"Mbyte", 1e6}, {"Gbyte", 1e9}, {"Tbyte", 1e12},
                 {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
                 {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}}},
      {"rate", {{"byte/second", 1e-9}, {"Kbyte/second", 1e-6}, {"Mbyte/second", 1e-3}, {"Gbyte/second", 1.0},
                {"Tbyte/second", 1e3}, {"byte/s", 1e-9}, {"KB/s", 1e-6}, {"MB/s", 1e-3}, {"GB/s", 1.0}, {"TB/s", 1e3}}},
      {"percent", {{"%", 0.01}}},
      {"cycles", {{"cycle", 1.0}, {"Kcycle", 1e3}, {"Mcycle", 1e6}, {"Gcycle", 1e9}}},
      {"per_cycle", {{"inst/cycle", 1.0}, {"warp inst/cycle", 1.0}}},
  };
  return tables;
}

// --- the metrics warpsim simulates ------------------------------------------------------------------------------

// A stats.json kernel field read from one column of the export (the first of `columns` that it has).
struct DirectMetric {
  const char* metric;     // warpsim's name (stats.json)
  const char* quantity;   // unit_tables() key
  std::vector<const char*> columns;
};

const std::vector<DirectMetric>& direct_metrics() {
  static const std::vector<DirectMetric> metrics = {
      {"time_us", "time", {kDurationColumn}},
      // Elapsed cycles of the SM (GPC) clock, the clock warpsim counts kernel cycles in; Accel-Sim's correlator
      // uses the GPC one.
      {"cycles", "cycles", {"gpc__cycles_elapsed.max", "sm__cycles_elapsed.max"}},
      {"dram_bytes_read", "bytes", {"dram__bytes_read.sum"}},
      {"dram_bytes_written", "bytes", {"dram__bytes_write.sum"}},
      // Nsight's "Executed Ipc Elapsed": warp instructions per SM per elapsed cycle, as warpsim's ipc.
      {"ipc", "per_cycle", {"sm__inst_executed.avg.per_cycle_elapsed"}},
      // Achieved occupancy: active warps per active cycle over the SM's maximum.
      {"occupancy", "percent", {"sm__warps_active.avg.pct_of_peak_sustained_active"}},
      {"l1_hit_rate", "percent", {"l1tex__t_sector_hit_rate.pct"}},
      {"l2_hit_rate", "percent", {"lts__t_sector_hit_rate.pct"}},
      // The Speed Of Light section's throughputs (percent of peak over elapsed cycles) and the units behind them.
      // Nsight's compute and memory throughputs are maxima over its sub-unit metrics, warpsim's over its modelled
      // units (README, "Speed of light"): the same question, answered over a coarser set of units.
      {"compute_throughput", "percent", {"sm__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"memory_throughput", "percent", {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"tensor_pipe_utilization", "percent", {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
      {"l2_throughput", "percent", {"lts__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"dram_throughput", "percent",
       {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"}},
  };
  return metrics;
}

// achieved_dram_gbps: DRAM bytes read and written over the duration, from the first of these the export has.
constexpr const char* kDramRead = "dram__bytes_read.sum";
constexpr const char* kDramWrite = "dram__bytes_write.sum";
constexpr const char* kDramTotal = "dram__bytes.sum";
constexpr const char* kDramRate = "dram__bytes.sum.per_second";

// Why a column that is no simulated metric gives no case.
std::string ignored_reason(const std::string& column) {
  if (column.rfind("launch__", 0) == 0)
    return "launch parameter, not a measurement: the synthesizer chooses the kernel's launch for the config";
  if (column.rfind("device__attribute", 0) == 0) return "device attribute, not a measurement";
  if (column.find("pct_of_peak") != std::string::npos)
    return "a percentage of a peak the config defines differently; warpsim has no such field";
  return "warpsim simulates no equivalent";
}

// --- numbers ----------------------------------------------------------------------------------------------------

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Nsight writes "n/a" (or nothing) where a metric could not be collected.
bool not_measured(const std::string& text) {
  const std::string t = trim(text);
  return t.empty() || t == "n/a" || t == "N/A";
}

// --- kernel names -----------------------------------------------------------------------------------------------

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The name without "void " and without a trailing parameter list: "void k<T>(float*, int)" -> "k<T>".
std::string without_signature(std::string name) {
  if (starts(name, "void ")) name = name.substr(5);
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      else if (name[i] == '(' && --depth == 0) {
        if (i > 0) name.resize(i);
        break;
      }
    }
  }
  return name;
}

// Alphanumeric runs of the lowercased name: "sm90_xmma_gemm_bf16bf16" -> sm90, xmma, gemm, bf16bf16.
std::vector<std::string> tokens_of(const std::string& lowered) {
  std::vector<std::string> out;
  std::string t;
  for (char c : lowered) {
    if (std::isalnum(static_cast<unsigned char>(c))) t += c;
    else if (!t.empty()) out.push_back(std::move(t)), t.clear();
  }
  if (!t.empty()) out.push_back(std::move(t));
  return out;
}

// The data type a token names, or "". The first such token of a name is the input type: "ampere_fp16_..._fp16",
// "xmma_gemm_bf16bf16_bf16f32" and "GemmUniversal<cutlass::half_t, ..., float>" name it before the accumulator.
std::string dtype_of_token(const std::string& t) {
  if (starts(t, "bf16") || starts(t, "bfloat16")) return "bf16";
  if (starts(t, "e4m3") || starts(t, "e5m2") || starts(t, "fp8") || starts(t, "float8")) return "fp8";
  if (starts(t, "fp16") || starts(t, "f16") || t == "half" || starts(t, "h16816") || starts(t, "h1688") || t == "hgemm")
    return "fp16";
  if (starts(t, "tf32")) return "tf32";
  if (t == "sgemm" || starts(t, "fp32") || starts(t, "f32")) return "fp32";
  return "";
}

// The wrapper templates whose first argument names the kernel (cutlass::Kernel2<cutlass_80_tensorop_...>).
bool is_wrapper(const std::string& base) {
  return base == "Kernel" || base == "Kernel2" || base == "device_kernel" || base == "kernel";
}

std::string last_component(const std::string& qualified) {
  const auto colon = qualified.rfind("::");
  return colon == std::string::npos ? qualified : qualified.substr(colon + 2);
}

std::string short_kernel_name(const std::string& name) {
  std::string s = without_signature(name);
  std::string base = last_component(s.substr(0, s.find('<')));
  if (is_wrapper(base) && s.find('<') != std::string::npos) {
    std::string arg = s.substr(s.find('<') + 1);
    arg = arg.substr(0, arg.find_first_of("<,>"));
    base = last_component(trim(arg));
  }
  std::string out;
  for (char c : base) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (keep) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  // Ids stay readable: at most 64 characters, cut at a '_' where the name has one in its second half.
  constexpr std::size_t kMaxShortName = 64;
  if (out.size() > kMaxShortName) {
    const std::size_t cut = out.rfind('_', kMaxShortName);
    out.resize(cut != std::string::npos && cut >= kMaxShortName / 2 ? cut : kMaxShortName);
  }
  return out.empty() ? "kernel" : out;
}

// --- the mapping file -------------------------------------------------------------------------------------------

struct MapEntry {
  int line = 0;
  std::string match;
  std::regex regex;
  std::optional<std::uint64_t> launch;
  std::string kind;
  std::map<std::string, std::string> keys;
  std::vector<std::string> overrides;
  std::optional<std::string> skip;
  std::string note;
  std::uint64_t seen = 0;  // launches matched so far
};

std::vector<MapEntry> load_map(const std::string& path) {
  using config_detail::TreeEntry;
  using config_detail::TreeNode;
  // The bounded YAML reader of configs and reference files: UTF-8 without NUL, one document, aliases and nesting
  // limited, errors at FILE:LINE:COLUMN.
  const TreeNode root = config_detail::parse_yaml(read_input_file(path, kMaxConfigFileBytes, "--map file"), path);
  if (root.kind == TreeNode::Kind::Null) return {};
  if (root.kind != TreeNode::Kind::Sequence)
    throw InputError(fmt::format("{}:{}: expected a list of entries (- match: REGEX, workload: {{kind: gemm, ...}}), got {}",
                                 path, std::max(root.where.line, 1), config_detail::describe_node(root)));
  static const std::set<std::string> kFields = {"match", "launch", "workload", "set", "skip", "note"};
  std::vector<MapEntry> entries;
  for (const TreeNode& node : root.items) {
    MapEntry e;
    e.line = node.where.line;
    const std::string where = fmt::format("{}:{}", path, e.line);
    const FieldErrorPrefix at = [&](int line) { return fmt::format("{}:{}: ", path, line); };
    if (node.kind != TreeNode::Kind::Map)
      throw InputError(fmt::format("{}: expected an entry (match: REGEX, workload: {{...}}), got {}", where,
                                   config_detail::describe_node(node)));
    for (const TreeEntry& kv : node.entries)
      if (!kFields.count(kv.key))
        throw InputError(fmt::format("{}:{}: unknown field '{}' (fields: match, launch, workload, set, skip, note)", path,
                                     kv.key_where.line, kv.key));
    const TreeNode* match = node.find("match");
    if (!match) throw InputError(where + ": entry without `match:` (a regular expression on the kernel name)");
    e.match = read_scalar(*match, "match", at);
    try {
      e.regex = std::regex(e.match, std::regex::ECMAScript);
    } catch (const std::regex_error& err) {
      throw InputError(fmt::format("{}:{}: match: '{}' is not a regular expression (ECMAScript): {}", path,
                                   match->where.line, e.match, err.what()));
    }
    if (const TreeNode* launch_node = node.find("launch")) {
      const std::string launch = read_scalar(*launch_node, "launch", at);
      std::uint64_t n = 0;
      const auto [end, ec] = std::from_chars(launch.data(), launch.data() + launch.size(), n);
      if (ec != std::errc() || end != launch.data() + launch.size())
        throw InputError(fmt::format("{}:{}: launch: expected a launch index (0 for the first launch that matches), got '{}'",
                                     path, launch_node->where.line, launch));
      e.launch = n;
    }
    if (const TreeNode* note = node.find("note")) e.note = read_scalar(*note, "note", at);
    if (const TreeNode* skip = node.find("skip")) e.skip = read_scalar(*skip, "skip", at);
    if (const TreeNode* set = node.find("set")) e.overrides = read_overrides(*set, at);
    if (const TreeNode* w = node.find("workload")) {
      WorkloadFields fields = read_workload(*w, at);
      e.kind = std::move(fields.kind);
      e.keys = std::move(fields.keys);
      if (e.kind.empty()) throw InputError(fmt::format("{}:{}: workload: no `kind:` (gemm, attention, ...)", path, w->where.line));
      // A registered synthesizer checks its keys now, so that the error points at the mapping.
      if (SynthRegistry::instance().find(e.kind)) {
        try {
          SynthRegistry::instance().validate(e.kind, e.keys);
        } catch (const InputError& err) {
          throw InputError(fmt::format("{}:{}: workload: {}", path, w->where.line, err.what()));
        }
      }
    }
    if (e.skip.has_value() == !e.kind.empty())
      throw InputError(where + ": an entry has either `workload:` (the kernel's problem) or `skip:` (why it has none)");
    entries.push_back(std::move(e));
  }
  return entries;
}

// --- the export -------------------------------------------------------------------------------------------------

struct Column {
  int index = -1;  // 0-based field index; -1 when the export has no such column
  double scale = 1.0;
  explicit operator bool() const { return index >= 0; }
};

class Export {
 public:
  Export(std::string file, std::vector<CsvRecord> records) : file_(std::move(file)), records_(std::move(records)) {
    if (records_.empty()) throw InputError(fmt::format("{}: empty: expected the output of `ncu --csv --page raw`", file_));
    const CsvRecord& header = records_[0];
    for (std::size_t i = 0; i < header.fields.size(); ++i) {
      const auto [it, inserted] = index_.emplace(header.fields[i], static_cast<int>(i));
      if (!inserted)
        throw InputError(fmt::format("{}:{}: column {} ('{}') repeats column {}", file_, header.line, i + 1,
                                     printable(header.fields[i]), it->second + 1));
    }
    if (index_.count("Metric Name") && index_.count("Metric Value"))
      throw InputError(fmt::format("{}:{}: one row per metric (`ncu --csv` without `--page raw`): export one row per "
                                   "kernel with `ncu --import REPORT.ncu-rep --csv --page raw`",
                                   file_, header.line));
    for (const char* required : {kKernelNameColumn, kDurationColumn})
      if (!index_.count(required))
        throw InputError(fmt::format("{}:{}: no '{}' column: expected the output of `ncu --csv --page raw` with the metric "
                                     "{} (docs/ncu-import.md)",
                                     file_, header.line, required, kDurationColumn));
    if (records_.size() < 2)
      throw InputError(fmt::format("{}:{}: the header is not followed by the units row of `--page raw`", file_, header.line));
    check_field_count(records_[1]);
    if (!trim(records_[1].fields[index_.at(kKernelNameColumn)]).empty())
      throw InputError(fmt::format("{}:{}: expected the units row of `--page raw` (empty under 'Kernel Name') after the "
                                   "header, got kernel '{}'",
                                   file_, records_[1].line, printable(records_[1].fields[index_.at(kKernelNameColumn)])));
  }

  const std::string& file() const { return file_; }
  const std::vector<CsvRecord>& records() const { return records_; }
  const CsvRecord& header() const { return records_[0]; }
  const CsvRecord& units() const { return records_[1]; }

  int index_of(const std::string& column) const {
    const auto it = index_.find(column);
    return it == index_.end() ? -1 : it->second;
  }

  // The column, with the scale from its unit to warpsim's for `quantity`; an absent column when the export has
  // none. A unit that is not one of the quantity's is an error naming the units row and the column.
  Column column(const std::string& name, const std::string& quantity) const {
    Column c;
    c.index = index_of(name);
    if (!c) return c;
    const std::string unit = trim(units().fields[c.index]);
    std::string error;
    if (!ncu_unit_scale(quantity, unit, c.scale, &error))
      throw InputError(fmt::format("{}:{}: column {} ({}): {}", file_, units().line, c.index + 1, name, error));
    return c;
  }

  void check_field_count(const CsvRecord& r) const {
    if (!field_count_ok(r))
      throw InputError(fmt::format("{}:{}: {} fields, but the header (line {}) has {} columns", file_, r.line,
                                   r.fields.size(), header().line, header().fields.size()));
  }

  // The value of `c` in record `r` in warpsim's unit; nullopt when Nsight did not measure it ("n/a", empty).
  std::optional<double> value(const CsvRecord& r, const Column& c) const {
    if (!c) return std::nullopt;
    const std::string& text = r.fields[c.index];
    if (not_measured(text)) return std::nullopt;
    double v = 0;
    if (!parse_ncu_number(text, v))
      throw InputError(fmt::format("{}:{}: column {} ({}): '{}' is not a number", file_, r.line, c.index + 1,
                                   printable(header().fields[c.index]), printable(text)));
    return v * c.scale;
  }

 private:
  bool field_count_ok(const CsvRecord& r) const { return r.fields.size() == header().fields.size(); }

  std::string file_;
  std::vector<CsvRecord> records_;
  std::map<std::string, int> index_;
};

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// A family warpsim could reproduce given the problem's shape: one with a synthesizer, or attention, whose
// synthesizer is planned (validate reports its cases unsupported until then).
bool shape_would_do(const std::string& family) {
  return family == "attention" || SynthRegistry::instance().find(family) != nullptr;
}

}  // namespace

// --- public pieces ----------------------------------------------------------------------------------------------

bool ncu_unit_scale(const std::string& quantity, const std::string& unit, double& scale, std::string* error) {
  const auto& tables = unit_tables();
  const auto table = tables.find(quantity);
  WARPSIM_ASSERT(table != tables.end(), "unknown quantity " + quantity);
  for (const UnitScale& u : table->second)
    if (unit == u.unit) {
      scale = u.scale;
      return true;
    }
  if (error) {
    std::vector<std::string> names;
    for (const UnitScale& u : table->second) names.push_back(u.unit);
    *error = fmt::format("unit '{}' is not a {} unit (expected one of: {})", printable(unit),
                         quantity == "per_cycle" ? "per-cycle" : quantity, join(names, ", "));
  }
  return false;
}

bool parse_ncu_number(const std::string& raw, double& value) {
  const std::string text = trim(raw);
  std::string digits;
  // Thousands separators: groups of three digits after the first group, before any decimal point.
  const std::size_t int_end = std::min(text.find_first_of(".eE"), text.size());
  std::size_t group = 0;
  bool grouped = false, first_group = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ',') {
      if (i >= int_end || group == 0 || (!first_group && group != 3) || (first_group && group > 3)) return false;
      grouped = true;
      first_group = false;
      group = 0;
      continue;
    }
    if (i < int_end && std::isdigit(static_cast<unsigned char>(c))) ++group;
    digits += c;
  }
  if (grouped && group != 3) return false;
  const char* begin = digits.data();
  const char* end = digits.data() + digits.size();
  if (begin != end && *begin == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  return ec == std::errc() && ptr == end && begin != end && std::isfinite(value);
}

NcuKernelClass classify_ncu_kernel(const std::string& name) {
  NcuKernelClass k;
  k.short_name = short_kernel_name(name);
  const std::string l = lower(without_signature(name));
  if (contains(l, "nccl")) k.family = "nccl";
  else if (contains(l, "flash_fwd") || contains(l, "flash_bwd") || contains(l, "flash::") || contains(l, "flash_attn") ||
           contains(l, "flashattn") || contains(l, "fmha") || contains(l, "attention"))
    k.family = "attention";
  else if (contains(l, "gemv")) k.family = "gemv";
  else if (contains(l, "gemm") || starts(l, "nvjet") || contains(l, "matmul")) k.family = "gemm";
  else if (contains(l, "elementwise")) k.family = "elementwise";
  else if (contains(l, "reduce") || contains(l, "reduction") || contains(l, "softmax") || contains(l, "layer_norm") ||
           contains(l, "layernorm") || contains(l, "rms_norm") || contains(l, "rmsnorm"))
    k.family = "reduction";

  const std::vector<std::string> tokens = tokens_of(l);
  if (!tokens.empty() && tokens[0] == "nvjet") {
    // nvjet_[smNN_]hsh_...: the first letter of the type code is A's and B's type; only h (half) is certain.
    for (std::size_t i = 1; i < tokens.size(); ++i) {
      if (starts(tokens[i], "sm") && tokens[i].size() > 2 && std::isdigit(static_cast<unsigned char>(tokens[i][2]))) continue;
      if (tokens[i].size() == 3 && tokens[i][0] == 'h') k.dtype = "fp16";
      break;
    }
  } else {
    for (const std::string& t : tokens)
      if (!(k.dtype = dtype_of_token(t)).empty()) break;
  }
  return k;
}

NcuImport import_ncu_csv(const std::string& csv_path, const std::string& gpu, const std::string& map_path) {
  std::vector<MapEntry> map = map_path.empty() ? std::vector<MapEntry>{} : load_map(map_path);
  const Export ex(csv_path, parse_csv(read_input_file(csv_path, kMaxNcuReportBytes, "Nsight Compute export"), csv_path,
                                      "=="));  // "==PROF== ...", "==WARNING== ...": ncu's own messages

  // The columns read, with their units' scales (unit errors surface here, before any row).
  const Column kernel{ex.index_of(kKernelNameColumn)};
  const Column grid{ex.index_of("Grid Size")}, block{ex.index_of("Block Size")}, ncu_id{ex.index_of("ID")};
  std::set<int> used;
  std::vector<std::pair<std::string, Column>> direct;
  for (const DirectMetric& m : direct_metrics())
    for (const char* name : m.columns)
      if (const Column c = ex.column(name, m.quantity)) {
        direct.emplace_back(m.metric, c);
        used.insert(c.index);
        break;
      }
  const Column duration = ex.column(kDurationColumn, "time");
  Column dram_read = ex.column(kDramRead, "bytes"), dram_write = ex.column(kDramWrite, "bytes");
  Column dram_total, dram_rate;
  if (!(dram_read && dram_write)) {
    dram_read = dram_write = Column{};
    if ((dram_total = ex.column(kDramTotal, "bytes"))) used.insert(dram_total.index);
    else if ((dram_rate = ex.column(kDramRate, "rate"))) used.insert(dram_rate.index);
  }

  std::set<std::string> alternatives = {kDramTotal, kDramRate};
  for (const DirectMetric& m : direct_metrics()) alternatives.insert(m.columns.begin(), m.columns.end());
  NcuImport out;
  for (std::size_t i = 0; i < ex.header().fields.size(); ++i) {
    const std::string& name = ex.header().fields[i];
    if (used.count(static_cast<int>(i)) || name.find("__") == std::string::npos) continue;  // identification columns
    out.ignored.push_back({name, alternatives.count(name) ? "another column of the export gives the same metric"
                                                          : ignored_reason(name)});
  }

  std::map<std::string, std::size_t> zero_measurements;  // metric -> launches where it measured 0
  for (std::size_t r = 2; r < ex.records().size(); ++r) {
    const CsvRecord& rec = ex.records()[r];
    ex.check_field_count(rec);
    const int row = static_cast<int>(r - 1);
    const std::string& name = rec.fields[kernel.index];
    const auto skip = [&](std::string reason) { out.skipped.push_back({name, std::move(reason), row, rec.line}); };
    const NcuKernelClass kc = classify_ncu_kernel(name);
    // Every value is read, whatever becomes of the launch: a malformed export is an error wherever it is.
    const std::optional<double> time_us = ex.value(rec, duration);
    if (time_us && *time_us <= 0)
      throw InputError(fmt::format("{}:{}: column {} ({}): a kernel's duration must be positive, got '{}'", ex.file(),
                                   rec.line, duration.index + 1, kDurationColumn, rec.fields[duration.index]));

    std::vector<std::pair<std::string, double>> measured;
    for (const auto& [metric, column] : direct)
      if (const std::optional<double> v = ex.value(rec, column)) measured.emplace_back(metric, *v);
    std::optional<double> gbps;
    const auto per_duration = [&](std::optional<double> bytes) -> std::optional<double> {
      if (!bytes || !time_us) return std::nullopt;
      return *bytes / (*time_us * 1e3);  // bytes per microsecond / 1e3 = GB/s
    };
    if (dram_read) {
      const auto rd = ex.value(rec, dram_read), wr = ex.value(rec, dram_write);
      if (rd && wr) gbps = per_duration(*rd + *wr);
    } else if (dram_total) {
      gbps = per_duration(ex.value(rec, dram_total));
    } else if (dram_rate) {
      gbps = ex.value(rec, dram_rate);
    }
    if (gbps) measured.emplace_back("achieved_dram_gbps", *gbps);

    MapEntry* chosen = nullptr;
    for (MapEntry& e : map) {
      if (!std::regex_search(name, e.regex)) continue;
      const std::uint64_t nth = e.seen++;
      if (!chosen && (!e.launch || *e.launch == nth)) chosen = &e;
    }
    if (!chosen) {
      if (kc.family.empty())
        skip("not recognised as a GEMM or attention kernel: map it with --map if warpsim can reproduce it");
      else if (shape_would_do(kc.family))
        skip("shape unknown: add it to --map");
      else
        skip("no synthesizer for " + kc.family);
      continue;
    }
    const std::string map_where = fmt::format("{}:{}", map_path, chosen->line);
    if (chosen->skip) {
      skip(fmt::format("skipped by {}: {}", map_where, *chosen->skip));
      continue;
    }
    std::map<std::string, std::string> keys = chosen->keys;
    const bool dtype_from_name = !keys.count("dtype") && chosen->kind == kc.family && !kc.dtype.empty();
    if (dtype_from_name) keys["dtype"] = kc.dtype;
    if (const SynthesizerInfo* synth = SynthRegistry::instance().find(chosen->kind)) {
      const bool takes_dtype = std::any_of(synth->keys.begin(), synth->keys.end(), [](const ParamSpec& p) { return p.name == "dtype"; });
      if (takes_dtype && !keys.count("dtype")) {
        skip(fmt::format("dtype unknown: the kernel name does not say it; add dtype to the --map entry at {}", map_where));
        continue;
      }
      if (dtype_from_name) {
        try {
          SynthRegistry::instance().validate(chosen->kind, keys);
        } catch (const InputError& e) {
          skip(fmt::format("no synthesizer for {} in {} (the type the kernel name gives): {}", chosen->kind, kc.dtype, e.what()));
          continue;
        }
      }
    }


    if (!time_us) {
      skip(fmt::format("{} not measured ('{}')", kDurationColumn, printable(rec.fields[duration.index])));
      continue;
    }
    std::string note = fmt::format("kernel '{}'", name);
    if (ncu_id && !trim(rec.fields[ncu_id.index]).empty()) note += ", ncu ID " + trim(rec.fields[ncu_id.index]);
    if (grid && !trim(rec.fields[grid.index]).empty()) note += ", grid " + trim(rec.fields[grid.index]);
    if (block && !trim(rec.fields[block.index]).empty()) note += ", block " + trim(rec.fields[block.index]);
    note += fmt::format("; workload from {}", map_where);
    if (dtype_from_name) note += fmt::format(", dtype {} from the kernel name", kc.dtype);
    if (!chosen->note.empty()) note += "; " + chosen->note;

    for (const auto& [metric, value] : measured) {
      if (!(value > 0)) {  // e.g. no DRAM writes (they stayed in L2): no relative error to report
        ++zero_measurements[metric];
        continue;
      }
      ReferenceCase c;
      c.id = fmt::format("ncu.{}.{}.{}", row, kc.short_name, metric);
      c.gpu = gpu;
      c.overrides = chosen->overrides;
      c.kind = chosen->kind;
      c.keys = keys;
      c.metric = metric;
      c.measured = value;
      c.source = fmt::format("{} row {} (ncu --csv --page raw)", csv_path, row);
      c.category = chosen->kind;
      c.note = note;
      c.file = csv_path;
      c.line = rec.line;
      out.cases.push_back(std::move(c));
    }
  }
  for (const auto& [metric, launches] : zero_measurements)
    out.ignored.push_back({metric, fmt::format("measured 0 in {} launch{}: no relative error, no case", launches,
                                               launches == 1 ? "" : "es")});
  return out;
}

}  // namespace warpsim
