// libFuzzer harness: a fuzzed native trace simulated on a small GPU (2 SMs, 2 L2 slices, 2 HBM channels, plain
// driver, short watchdog). What the reader accepts, the model must run to an end: results, an InputError (e.g. a
// kernel that does not fit) or a SimulationError with a diagnosis; never a crash or a hang. Traces too large to
// simulate in a fuzzing iteration (many CTAs or instructions, from the index) are skipped.
#include <cstdint>
#include <string>

#include "fuzz_input_file.h"
#include "models/gpu/gpu.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/trace/trace_file.h"

namespace {

const warpsim::Config& small_gpu() {
  static const warpsim::Config config = warpsim::Config::load(
      WARPSIM_SOURCE_DIR "/configs/h100_sxm.yaml",
      {"sm.count=2", "l2.slices=2", "hbm.channels=2", "sim.watchdog_cycles=20000", "sim.progress_check_cycles=1000"},
      warpsim::Registry::instance());
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".wst");
  try {
    warpsim::TraceFileReader reader(file.write(data, size));
    std::uint64_t ctas = 0, instructions = 0;
    for (std::size_t k = 0; k < reader.num_kernels(); ++k) {
      ctas += reader.kernel_cta_count(k);
      instructions += reader.kernel_instruction_count(k);
    }
    if (reader.num_kernels() > 8 || ctas > 32 || instructions > 20000) return 0;
    warpsim::Gpu gpu(small_gpu());
    (void)gpu.run(reader, warpsim::run_without_systemc);
  } catch (const warpsim::InputError&) {
  } catch (const warpsim::SimulationError&) {
  }
  return 0;
}
