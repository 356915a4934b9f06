// libFuzzer harness: the PyTorch profiler (Kineto) reader of `warpsim import-kineto` (traces/kineto) on arbitrary
// bytes as one trace file: read (gzip or plain), parsed as JSON, its kernels linked to their aten ops, and every
// kernel classified and mapped onto a synthesizer, as the importer does before simulating. Malformed input must
// end in an InputError; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>

#include "app/json_input.h"
#include "fuzz_input_file.h"
#include "sim/core/error.h"
#include "traces/kineto/classify.h"
#include "traces/kineto/kineto_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".json");
  try {
    const std::string& path = file.write(data, size);
    const std::string text = warpsim::kineto::read_trace_text(path, std::uint64_t{64} << 20);
    const warpsim::kineto::Trace trace = warpsim::kineto::parse_trace(warpsim::parse_json_input(text, path), path);
    for (const warpsim::kineto::Kernel& k : trace.kernels) warpsim::kineto::classify_kernel(k);
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
