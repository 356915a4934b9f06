// libFuzzer harness: the native trace reader (sim/trace/trace_file.h) on arbitrary bytes. Opens the file, every
// kernel, every CTA and reads every warp to its end, as the simulator would. Malformed input must end in a
// TraceError/InputError; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>

#include "fuzz_input_file.h"
#include "sim/core/error.h"
#include "sim/trace/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".wst");
  try {
    warpsim::TraceFileReader reader(file.write(data, size));
    warpsim::WarpInst batch[64];
    for (std::size_t k = 0; k < reader.num_kernels(); ++k) {
      auto kernel = reader.open_kernel(k);
      // A fuzzed grid can claim billions of CTAs; the reader's job is to read the ones that exist.
      const std::uint64_t ctas = std::min<std::uint64_t>(kernel->info().grid.count(), 64);
      for (std::uint64_t c = 0; c < ctas; ++c) {
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
