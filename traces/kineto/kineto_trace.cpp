#include "traces/kineto/kineto_trace.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace warpsim::kineto {
namespace {

using nlohmann::json;

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& in, const std::string& path, std::uint64_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw InputError(fmt::format("'{}': cannot start gzip decompression", path));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());  // read_input_file's limit keeps it below 4 GiB
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = rc == Z_BUF_ERROR ? "the gzip stream is truncated" : fmt::format("corrupt gzip data ({})", z.msg ? z.msg : "zlib error");
      inflateEnd(&z);
      throw InputError(fmt::format("cannot read Kineto trace '{}': {} after {} bytes of JSON; expected a complete "
                                   "gzip-compressed JSON document", path, why, out.size()));
    }
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      throw InputError(fmt::format("'{}': more than {} bytes of JSON once decompressed", path, max_bytes));
    }
  }
  inflateEnd(&z);
  return out;
}

std::string kernel_label(std::size_t index, const json& e) {
  const auto name = e.find("name");
  std::string n = name != e.end() && name->is_string() ? name->get<std::string>() : std::string("?");
  if (n.size() > 80) n = n.substr(0, 77) + "...";
  return fmt::format("kernel event {} ('{}')", index, n);
}

// A required number of a kernel event (or of its args).
double required_number(const json& obj, const char* key, const std::string& where, const std::string& label,
                       const char* prefix) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number())
    throw InputError(fmt::format("'{}': {}: expected {}{} as a number{}", where, label, prefix, key,
                                 it == obj.end() ? " (missing)" : ""));
  return it->get<double>();
}

void read_dim3(const json& args, const char* key, std::uint32_t (&out)[3], const std::string& where, const std::string& label) {
  const auto it = args.find(key);
  bool ok = it != args.end() && it->is_array() && it->size() == 3;
  if (ok)
    for (const json& v : *it) ok = ok && v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= 0xffffffffLL;
  if (!ok) throw InputError(fmt::format("'{}': {}: expected args.{} as [x, y, z] of positive integers", where, label, key));
  for (int i = 0; i < 3; ++i) out[i] = (*it)[i].get<std::uint32_t>();
}

std::uint32_t optional_u32(const json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) return 0;
  return static_cast<std::uint32_t>(std::min<std::int64_t>(it->get<std::int64_t>(), 0xffffffffLL));
}

std::int64_t optional_i64(const json& obj, const char* key, std::int64_t fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

std::string string_of(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The dims of one "Input Dims" (or "Input Strides") entry: [d0, d1, ...] (a tensor), [] (scalar / none), or
// [[...], [...]] (a list).
void read_dims(const json& entry, std::vector<std::int64_t>& dims, std::vector<std::vector<std::int64_t>>& list) {
  if (!entry.is_array()) return;
  for (const json& v : entry) {
    if (v.is_number_integer()) {
      dims.push_back(v.get<std::int64_t>());
    } else if (v.is_array()) {
      std::vector<std::int64_t> d;
      for (const json& x : v)
        if (x.is_number_integer()) d.push_back(x.get<std::int64_t>());
      list.push_back(std::move(d));
    }
  }
}

CpuOp read_op(const json& e) {
  CpuOp op;
  op.name = string_of(e, "name");
  op.start_us = e.at("ts").get<double>();
  const auto args = e.find("args");
  if (args == e.end() || !args->is_object()) return op;
  op.external_id = optional_i64(*args, "External id", -1);
  const auto read_all = [&](const char* key, auto& tensors, auto& lists) {
    const auto it = args->find(key);
    if (it == args->end() || !it->is_array()) return;
    for (const json& entry : *it) {
      tensors.emplace_back();
      lists.emplace_back();
      read_dims(entry, tensors.back(), lists.back());
    }
  };
  read_all("Input Dims", op.dims, op.list_dims);
  read_all("Input Strides", op.strides, op.list_strides);
  for (const char* key : {"Input type", "Concrete Inputs"}) {
    const auto it = args->find(key);
    if (it == args->end() || !it->is_array()) continue;
    auto& out = std::string(key) == "Input type" ? op.types : op.concrete;
    for (const json& v : *it) out.push_back(v.is_string() ? v.get<std::string>() : std::string());
  }
  return op;
}

bool has_span(const json& e) {
  const auto ts = e.find("ts"), dur = e.find("dur");
  return ts != e.end() && ts->is_number() && dur != e.end() && dur->is_number();
}

}  // namespace

std::string read_trace_text(const std::string& path, std::uint64_t max_bytes) {
  std::string bytes = read_input_file(path, max_bytes, "Kineto trace");
  if (is_gzip(bytes)) return gunzip(bytes, path, max_bytes);
  return bytes;
}

Trace parse_trace(const json& doc, const std::string& where) {
  if (!doc.is_object())
    throw InputError(fmt::format("'{}': expected a Kineto trace, a JSON object with a traceEvents array; the document "
                                 "is a JSON {}", where, doc.type_name()));
  const auto events = doc.find("traceEvents");
  if (events == doc.end() || !events->is_array())
    throw InputError(fmt::format("'{}': expected a Kineto trace, a JSON object with a traceEvents array; {}", where,
                                 events == doc.end() ? "there is no traceEvents" : "traceEvents is not an array"));
  Trace trace;
  if (const auto props = doc.find("deviceProperties"); props != doc.end() && props->is_array() && !props->empty() &&
                                                        (*props)[0].is_object()) {
    const json& p = (*props)[0];
    trace.device_name = string_of(p, "name");
    trace.device_sms = optional_u32(p, "numSms");
    const auto major = p.find("computeMajor"), minor = p.find("computeMinor");
    if (major != p.end() && minor != p.end() && major->is_number_integer() && minor->is_number_integer())
      trace.device_capability = fmt::format("{}.{}", major->get<int>(), minor->get<int>());
  }
  if (const auto rs = doc.find("record_shapes"); rs != doc.end()) trace.record_shapes = rs->is_boolean() ? rs->get<bool>() : rs->is_number() && rs->get<double>() != 0;

  struct Launch { std::int64_t pid, tid; double start, end; std::string name; };
  std::unordered_map<std::int64_t, Launch> launches;            // correlation -> runtime call
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>> ops_by_thread;  // -> indices in `ops`
  std::vector<CpuOp> ops;
  std::vector<double> op_end;
  std::vector<std::pair<std::int64_t, std::int64_t>> op_thread;

  std::size_t kernel_events = 0;
  for (const json& e : *events) {
    if (!e.is_object()) continue;
    const std::string cat = string_of(e, "cat");
    if (cat == "kernel" || cat == "Kernel") {
      const std::string label = kernel_label(kernel_events++, e);
      if (string_of(e, "name").empty())
        throw InputError(fmt::format("'{}': {}: expected a kernel name (\"name\": a non-empty string)", where, label));
      Kernel k;
      k.name = string_of(e, "name");
      k.start_us = required_number(e, "ts", where, label, "");
      k.duration_us = required_number(e, "dur", where, label, "");
      if (k.duration_us < 0) throw InputError(fmt::format("'{}': {}: expected dur >= 0, got {}", where, label, k.duration_us));
      const auto args = e.find("args");
      if (args == e.end() || !args->is_object())
        throw InputError(fmt::format("'{}': {}: expected args (grid, block, correlation, ...) as an object", where, label));
      read_dim3(*args, "grid", k.grid, where, label);
      read_dim3(*args, "block", k.block, where, label);
      k.correlation = static_cast<std::int64_t>(required_number(*args, "correlation", where, label, "args."));
      k.stream = optional_i64(*args, "stream", 0);
      k.registers_per_thread = optional_u32(*args, "registers per thread");
      k.shared_memory_bytes = optional_u32(*args, "shared memory");
      trace.kernels.push_back(std::move(k));
    } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
      if (has_span(e)) trace.other_gpu_events.push_back({cat, string_of(e, "name"), e["dur"].get<double>()});
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      const auto args = e.find("args");
      if (!has_span(e) || args == e.end() || !args->is_object()) continue;
      const std::int64_t corr = optional_i64(*args, "correlation", -1);
      if (corr < 0) continue;
      const double ts = e["ts"].get<double>();
      launches[corr] = Launch{optional_i64(e, "pid", 0), optional_i64(e, "tid", 0), ts, ts + e["dur"].get<double>(),
                              string_of(e, "name")};
    } else if (cat == "cpu_op") {
      if (!has_span(e)) continue;
      const std::pair<std::int64_t, std::int64_t> thread{optional_i64(e, "pid", 0), optional_i64(e, "tid", 0)};
      ops_by_thread[thread].push_back(ops.size());
      op_end.push_back(e["ts"].get<double>() + e["dur"].get<double>());
      op_thread.push_back(thread);
      ops.push_back(read_op(e));
    }
  }
  std::stable_sort(trace.kernels.begin(), trace.kernels.end(),
                   [](const Kernel& a, const Kernel& b) { return a.start_us < b.start_us; });

  // Each launch's enclosing operators: per thread, one sweep over the ops and launches in start order keeping the
  // stack of open ops (ops on one thread nest).
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<std::int64_t, const Launch*>>> launches_by_thread;
  for (const auto& [corr, l] : launches) launches_by_thread[{l.pid, l.tid}].push_back({corr, &l});
  std::unordered_map<std::int64_t, std::vector<std::size_t>> enclosing;  // correlation -> op indices, outermost first
  for (auto& [thread, ls] : launches_by_thread) {
    std::vector<std::size_t>& thread_ops = ops_by_thread[thread];
    std::sort(thread_ops.begin(), thread_ops.end(), [&](std::size_t a, std::size_t b) {
      return std::make_tuple(ops[a].start_us, -op_end[a], a) < std::make_tuple(ops[b].start_us, -op_end[b], b);
    });
    std::sort(ls.begin(), ls.end(), [](const auto& a, const auto& b) { return a.second->start < b.second->start; });
    std::vector<std::size_t> stack;
    std::size_t next_op = 0;
    for (const auto& [corr, l] : ls) {
      while (next_op < thread_ops.size() && ops[thread_ops[next_op]].start_us <= l->start) {
        const std::size_t o = thread_ops[next_op++];
        while (!stack.empty() && op_end[stack.back()] < ops[o].start_us) stack.pop_back();
        stack.push_back(o);
      }
      while (!stack.empty() && op_end[stack.back()] < l->end) stack.pop_back();
      enclosing[corr] = stack;
    }
  }
  for (Kernel& k : trace.kernels) {
    const auto l = launches.find(k.correlation);
    if (l == launches.end()) continue;
    k.launch = l->second.name;
    const auto chain = enclosing.find(k.correlation);
    if (chain == enclosing.end()) continue;
    for (std::size_t o : chain->second) k.ops.push_back(ops[o]);
  }
  return trace;
}

}  // namespace warpsim::kineto
