// PyTorch profiler (Kineto) traces: the GPU kernels of a Chrome trace-event JSON document, each with the aten
// operators that launched it (../shared/docs/TRACE-FORMATS.md, section 0.1). A kernel event (`cat: kernel`) is
// linked through its `correlation` id to the CUDA runtime/driver launch (`cat: cuda_runtime` or `cuda_driver`), and
// the launch to the CPU operators (`cat: cpu_op`) whose time range encloses it on the same thread: with
// record_shapes, those carry `Input Dims`, `Input type` and `Concrete Inputs`. No models/ here: `warpsim
// import-kineto` (app/import_kineto.h) classifies (traces/kineto/classify.h), simulates and reports.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace warpsim::kineto {

// One aten operator of the CPU side (record_shapes): argument i has dims[i] (empty for a scalar or a missing
// tensor; a TensorList's tensors are flattened into `list_dims[i]`), strides[i] / list_strides[i] in the same
// shape ("Input Strides", recorded since PyTorch 2.1; empty when absent), types[i] ("c10::BFloat16", "float",
// "Scalar", "TensorList", ...) and concrete[i] (the value of a scalar argument as text, else "").
struct CpuOp {
  std::string name;  // "aten::addmm"
  std::int64_t external_id = -1;  // args."External id": identifies the op instance (-1 when absent)
  double start_us = 0;
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::vector<std::vector<std::int64_t>>> list_dims;
  std::vector<std::vector<std::int64_t>> strides;
  std::vector<std::vector<std::vector<std::int64_t>>> list_strides;
  std::vector<std::string> types;
  std::vector<std::string> concrete;
};

struct Kernel {
  std::string name;
  double start_us = 0, duration_us = 0;  // ts, dur of the trace (measured)
  std::int64_t stream = 0, correlation = -1;
  std::uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::uint32_t registers_per_thread = 0, shared_memory_bytes = 0;
  std::vector<CpuOp> ops;  // the enclosing CPU operators of its launch, outermost first; empty when not found
  std::string launch;      // the runtime call that launched it ("cudaLaunchKernel"), "" when not found
};

// Other GPU activity (memcpy, memset) that is not a kernel: reported, not simulated.
struct OtherGpuEvent {
  std::string category, name;
  double duration_us = 0;
};

struct Trace {
  std::string device_name;          // deviceProperties[0].name, "" when absent
  std::uint32_t device_sms = 0;     // deviceProperties[0].numSms
  std::string device_capability;    // "9.0"
  bool record_shapes = false;
  std::vector<Kernel> kernels;      // in start order
  std::vector<OtherGpuEvent> other_gpu_events;
};

// The text of a trace file: gzip-compressed (recognised by its magic bytes, whatever the name) or plain.
// InputError naming the file for a missing file, a truncated or corrupt gzip stream, or more than `max_bytes`
// of text.
std::string read_trace_text(const std::string& path, std::uint64_t max_bytes);

// The kernels of a parsed document. `where` names the file in errors: InputError when the document is not an
// object with a `traceEvents` array, or a kernel event lacks (or has a mistyped) name, ts, dur or args.grid /
// block / correlation ("'FILE': kernel event 12 ('NAME'): expected args.grid as [x, y, z]").
Trace parse_trace(const nlohmann::json& doc, const std::string& where);

}  // namespace warpsim::kineto
