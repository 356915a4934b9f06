// libFuzzer harness: the native trace reader (sim/trace/trace_file.h) on arbitrary bytes. Opens the file, every
// kernel, every CTA and reads every warp to its end, as the simulator would. Malformed input must end in a
// TraceError/InputError; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>

#include "fuzz_input_file.h"
#include "read_every_warp.h"
#include "sim/core/error.h"
#include "sim/trace/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".wst");
  try {
    warpsim::TraceFileReader reader(file.write(data, size));
    warpsim_fuzz::read_every_warp(reader, 64);
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
