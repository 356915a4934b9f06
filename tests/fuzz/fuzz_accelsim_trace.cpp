// libFuzzer harness: the Accel-Sim trace reader (traces/readers/accelsim) on arbitrary bytes as one kernel-N.traceg:
// indexes it, then opens every CTA and reads every warp to its end, as the simulator would. Malformed input must
// end in an InputError; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>

#include "fuzz_input_file.h"
#include "read_every_warp.h"
#include "sim/core/error.h"
#include "traces/readers/accelsim/accelsim_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace warpsim_fuzz;
  static InputFile file("_kernel-1.traceg");
  try {
    warpsim::accelsim::AccelSimTrace trace(file.write(data, size));
    read_every_warp(trace);  // every CTA is in the file (indexed), so all of them are read
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
