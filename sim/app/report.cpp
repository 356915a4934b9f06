#include "sim/app/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

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
    j.value("name", k.name);
    j.value("grid", dim(k.grid));
    j.value("block", dim(k.block));
    j.value("registers_per_thread", k.registers_per_thread);
    j.value("shared_mem_bytes", k.shared_mem_bytes);
    j.value("start_cycle", k.start_cycle);
    j.value("cycles", k.cycles);
    j.value("time_us", k.time_us);
    j.value("warp_instructions", k.warp_instructions);
    j.value("thread_instructions", k.thread_instructions);
    j.value("ipc", k.ipc);
    j.value("flops", k.flops);
    if (k.achieved_tflops) j.value("achieved_tflops", *k.achieved_tflops);
    else j.null("achieved_tflops");
    j.value("dram_bytes_read", k.dram_bytes_read);
    j.value("dram_bytes_written", k.dram_bytes_written);
    j.value("achieved_dram_gbps", k.achieved_dram_gbps);
    j.value("occupancy", k.occupancy);
    j.value("theoretical_occupancy", k.theoretical_occupancy);
    j.value("ctas_per_sm", k.ctas_per_sm);
    j.value("occupancy_limiter", k.occupancy_limiter);
    j.value("l1_hit_rate", k.l1_hit_rate);
    j.value("l2_hit_rate", k.l2_hit_rate);
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

std::string results_csv(const RunResult& r) {
  std::ostringstream o;
  o << "gpu,kernel,grid,block,cycles,time_us,warp_instructions,ipc,achieved_tflops,dram_bytes_read,"
       "dram_bytes_written,achieved_dram_gbps,occupancy,l1_hit_rate,l2_hit_rate";
  if (!r.kernels.empty()) {
    for (const auto& u : r.kernels[0].utilization) o << ",utilization_" << u.first;
    for (const auto& s : r.kernels[0].stalls) o << "," << s.first;
  }
  o << "\n";
  for (const auto& k : r.kernels) {
    o << csv_field(r.gpu) << "," << csv_field(k.name) << "," << dim(k.grid) << "," << dim(k.block) << "," << k.cycles
      << "," << JsonWriter::number(k.time_us) << "," << k.warp_instructions << "," << JsonWriter::number(k.ipc) << ","
      << (k.achieved_tflops ? JsonWriter::number(*k.achieved_tflops) : std::string()) << "," << k.dram_bytes_read << ","
      << k.dram_bytes_written << "," << JsonWriter::number(k.achieved_dram_gbps) << "," << JsonWriter::number(k.occupancy)
      << "," << JsonWriter::number(k.l1_hit_rate) << "," << JsonWriter::number(k.l2_hit_rate);
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
