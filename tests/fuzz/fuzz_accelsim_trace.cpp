// libFuzzer harness: the Accel-Sim trace reader (traces/readers/accelsim) on arbitrary bytes as one kernel-N.traceg:
// indexes it, then opens every CTA and reads every warp to its end, as the simulator would. Malformed input must
// end in an InputError; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>

#include "fuzz_input_file.h"
#include "sim/core/error.h"
#include "traces/readers/accelsim/accelsim_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file("_kernel-1.traceg");
  try {
    warpsim::accelsim::AccelSimTrace trace(file.write(data, size));
    warpsim::WarpInst batch[64];
    for (std::size_t k = 0; k < trace.num_kernels(); ++k) {
      auto kernel = trace.open_kernel(k);
      for (std::uint64_t c = 0; c < kernel->info().grid.count(); ++c) {  // every CTA is in the file (indexed)
        auto cta = kernel->open_cta(c);
        for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
          auto warp = cta->open_warp(w);
          while (warp->read(batch, 64) > 0) {
          }
        }
      }
    }
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
