#include "sim/app/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <variant>
#include <vector>

#include "sim/stats/json.h"

namespace warpsim {
namespace {

std::string dim(const Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Every per-kernel scalar, once: the JSON object and the CSV row are both written from this table.
using FieldValue = std::variant<std::monostate, std::string, double, std::uint64_t>;
struct KernelField {
  const char* name;
  FieldValue (*get)(const KernelResult&);
};

const std::vector<KernelField>& kernel_fields() {
  static const std::vector<KernelField> fields = {
      {"name", [](const KernelResult& k) -> FieldValue { return k.name; }},
      {"grid", [](const KernelResult& k) -> FieldValue { return dim(k.grid); }},
      {"block", [](const KernelResult& k) -> FieldValue { return dim(k.block); }},
      {"registers_per_thread", [](const KernelResult& k) -> FieldValue { return std::uint64_t{k.registers_per_thread}; }},
      {"shared_mem_bytes", [](const KernelResult& k) -> FieldValue { return std::uint64_t{k.shared_mem_bytes}; }},
      {"start_cycle", [](const KernelResult& k) -> FieldValue { return k.start_cycle; }},
      {"cycles", [](const KernelResult& k) -> FieldValue { return k.cycles; }},
      {"time_us", [](const KernelResult& k) -> FieldValue { return k.time_us; }},
      {"warp_instructions", [](const KernelResult& k) -> FieldValue { return k.warp_instructions; }},
      {"thread_instructions", [](const KernelResult& k) -> FieldValue { return k.thread_instructions; }},
      {"ipc", [](const KernelResult& k) -> FieldValue { return k.ipc; }},
      {"flops", [](const KernelResult& k) -> FieldValue { return k.flops; }},
      {"achieved_tflops",
       [](const KernelResult& k) -> FieldValue { return k.achieved_tflops ? FieldValue{*k.achieved_tflops} : FieldValue{}; }},
      {"dram_bytes_read", [](const KernelResult& k) -> FieldValue { return k.dram_bytes_read; }},
      {"dram_bytes_written", [](const KernelResult& k) -> FieldValue { return k.dram_bytes_written; }},
      {"l2_dirty_bytes_at_end", [](const KernelResult& k) -> FieldValue { return k.l2_dirty_bytes_at_end; }},
      {"achieved_dram_gbps", [](const KernelResult& k) -> FieldValue { return k.achieved_dram_gbps; }},
      {"occupancy", [](const KernelResult& k) -> FieldValue { return k.occupancy; }},
      {"theoretical_occupancy", [](const KernelResult& k) -> FieldValue { return k.theoretical_occupancy; }},
      {"ctas_per_sm", [](const KernelResult& k) -> FieldValue { return std::uint64_t{k.ctas_per_sm}; }},
      {"occupancy_limiter", [](const KernelResult& k) -> FieldValue { return k.occupancy_limiter; }},
      {"l1_hit_rate", [](const KernelResult& k) -> FieldValue { return k.l1_hit_rate; }},
      {"l2_hit_rate", [](const KernelResult& k) -> FieldValue { return k.l2_hit_rate; }},
  };
  return fields;
}

void write_json(JsonWriter& j, const char* key, const FieldValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) j.value(key, *s);
  else if (const auto* d = std::get_if<double>(&v)) j.value(key, *d);
  else if (const auto* u = std::get_if<std::uint64_t>(&v)) j.value(key, *u);
  else j.null(key);
}

std::string csv_text(const FieldValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return csv_field(*s);
  if (const auto* d = std::get_if<double>(&v)) return JsonWriter::number(*d);
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return std::to_string(*u);
  return {};
}

}  // namespace

std::string results_json(const RunResult& r) {
  JsonWriter j;
  j.begin_object();
  j.value("schema_version", std::uint64_t{1});
  j.value("gpu", r.gpu);
  j.value("trace", r.trace);
  j.begin_array("kernels");
  for (const auto& k : r.kernels) {
    j.begin_object();
    for (const KernelField& f : kernel_fields()) write_json(j, f.name, f.get(k));
    j.begin_object("utilization");
    for (const auto& [unit, v] : k.utilization) j.value(unit, v);
    j.end_object();
    j.begin_object("stalls");
    for (const auto& [reason, v] : k.stalls) j.value(reason, v);
    j.end_object();
    j.end_object();
  }
  j.end_array();
  j.value("total_cycles", r.total_cycles);
  j.value("total_time_us", r.total_time_us);
  j.begin_object("sim");
  j.value("version", r.sim.version);
  j.value("config_files", r.sim.config_files);
  j.value("config_hash", r.sim.config_hash);
  j.value("driver", r.sim.driver);
  j.value("wall_s", r.sim.wall_s);
  j.value("warp_instructions_per_s", r.sim.warp_instructions_per_s);
  j.value("peak_rss_mb", r.sim.peak_rss_mb);
  j.value("simulated_sm_cycles", r.sim.simulated_cycles);
  j.begin_object("domain_ticks");
  for (const auto& [d, n] : r.sim.domain_ticks) j.value(d, n);
  j.end_object();
  j.end_object();
  j.end_object();
  return j.str();
}

// One row per kernel: the same fields as stats.json, utilisation and stalls flattened.
std::string results_csv(const RunResult& r) {
  std::ostringstream o;
  o << "gpu";
  for (const KernelField& f : kernel_fields()) o << "," << f.name;
  if (!r.kernels.empty()) {
    for (const auto& u : r.kernels[0].utilization) o << ",utilization_" << u.first;
    for (const auto& s : r.kernels[0].stalls) o << "," << s.first;
  }
  o << "\n";
  for (const auto& k : r.kernels) {
    o << csv_field(r.gpu);
    for (const KernelField& f : kernel_fields()) o << "," << csv_text(f.get(k));
    for (const auto& u : k.utilization) o << "," << JsonWriter::number(u.second);
    for (const auto& s : k.stalls) o << "," << s.second;
    o << "\n";
  }
  return o.str();
}

std::string results_summary(const RunResult& r) {
  std::ostringstream o;
  o << "warpsim: " << r.gpu << ", " << r.kernels.size() << " kernel(s) from " << r.trace << "\n";
  for (const auto& k : r.kernels) {
    o << "\n  " << k.name << "\n";
    o << "    grid " << dim(k.grid) << ", block " << dim(k.block) << ", " << k.ctas_per_sm << " CTA/SM (limited by "
      << k.occupancy_limiter << ")\n";
    o << "    time        " << fmt("%.2f us", k.time_us) << "  (" << k.cycles << " SM cycles)\n";
    if (k.achieved_tflops) o << "    throughput  " << fmt("%.1f TFLOP/s", *k.achieved_tflops) << "\n";
    o << "    DRAM        " << fmt("%.1f MB read, ", k.dram_bytes_read / 1e6) << fmt("%.1f MB written, ", k.dram_bytes_written / 1e6)
      << fmt("%.0f GB/s", k.achieved_dram_gbps) << "\n";
    o << "    IPC         " << fmt("%.2f warp-inst/cycle/SM", k.ipc) << ", occupancy " << fmt("%.0f%%", 100 * k.occupancy)
      << " (theoretical " << fmt("%.0f%%", 100 * k.theoretical_occupancy) << ")\n";
    o << "    hit rates   L1 " << fmt("%.0f%%", 100 * k.l1_hit_rate) << ", L2 " << fmt("%.0f%%", 100 * k.l2_hit_rate) << "\n";
    o << "    utilization";
    for (const auto& [unit, v] : k.utilization) o << " " << unit << " " << fmt("%.0f%%", 100 * v);
    o << "\n";
    std::uint64_t total = 0;
    for (const auto& s : k.stalls) total += s.second;
    auto sorted = k.stalls;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    o << "    warp states";
    int shown = 0;
    for (const auto& [reason, v] : sorted) {
      if (shown++ == 4 || v == 0) break;
      o << " " << reason << " " << fmt("%.0f%%", total ? 100.0 * v / total : 0.0);
    }
    o << "\n";
  }
  o << "\n  total " << fmt("%.2f us", r.total_time_us) << "; simulated in " << fmt("%.2f s", r.sim.wall_s) << " ("
    << fmt("%.1f M warp-instructions/s", r.sim.warp_instructions_per_s / 1e6) << ", peak RSS "
    << fmt("%.0f MB", r.sim.peak_rss_mb) << ")\n";
  return o.str();
}

}  // namespace warpsim

namespace warpsim {

std::string results_timeline(const RunResult& r) {
  const double us_per_cycle = r.sm_clock_hz > 0 ? 1e6 / r.sm_clock_hz : 0.0;
  std::ostringstream o;
  o << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  o << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": " << JsonWriter::quote(r.gpu + " kernels") << "}},\n";
  o << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": " << JsonWriter::quote(r.gpu + " SMs") << "}}";
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const auto& k = r.kernels[i];
    o << ",\n{\"name\": " << JsonWriter::quote(k.name) << ", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": "
      << JsonWriter::number(static_cast<double>(k.start_cycle) * us_per_cycle) << ", \"dur\": " << JsonWriter::number(k.time_us)
      << ", \"args\": {\"cycles\": " << k.cycles << "}}";
  }
  std::uint32_t max_sm = 0;
  for (const auto& c : r.timeline) max_sm = std::max(max_sm, c.sm);
  for (std::uint32_t sm = 0; !r.timeline.empty() && sm <= max_sm; ++sm)
    o << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": " << sm << ", \"args\": {\"name\": \"SM " << sm << "\"}}";
  for (const auto& c : r.timeline) {
    const std::string kernel = c.kernel < r.kernels.size() ? r.kernels[c.kernel].name : "kernel " + std::to_string(c.kernel);
    o << ",\n{\"name\": \"CTA " << c.cta << "\", \"cat\": \"cta\", \"ph\": \"X\", \"pid\": 1, \"tid\": " << c.sm
      << ", \"ts\": " << JsonWriter::number(static_cast<double>(c.start_cycle) * us_per_cycle)
      << ", \"dur\": " << JsonWriter::number(static_cast<double>(c.end_cycle - c.start_cycle) * us_per_cycle)
      << ", \"args\": {\"kernel\": " << JsonWriter::quote(kernel) << ", \"cycles\": " << (c.end_cycle - c.start_cycle) << "}}";
  }
  o << "\n]}\n";
  return o.str();
}

}  // namespace warpsim
