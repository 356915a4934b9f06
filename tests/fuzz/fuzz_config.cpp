// libFuzzer harness: the config loader (sim/config) on arbitrary YAML, validated against every registered model
// schema, with `base:` resolution as for a user's file. Bad input must end in a ConfigError/InputError.
#include <cstdint>
#include <string>

#include "fuzz_input_file.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".yaml");
  try {
    // `base: h100_sxm` finds the shipped configs, as from the command line.
    const warpsim::Config config = warpsim::Config::load(file.write(data, size), {}, warpsim::Registry::instance(),
                                                         {WARPSIM_SOURCE_DIR "/configs"});
    (void)config.resolved_yaml();  // the dump must cope with whatever was accepted
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
