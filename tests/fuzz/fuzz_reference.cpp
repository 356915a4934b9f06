// libFuzzer harness: validate's reference-file loader (app/validate/reference.cpp) on arbitrary YAML: the case
// fields, workload keys checked against the synthesizers, metrics, GPU configs and their `set:` overrides. Bad
// input must end in an InputError naming the file and line.
#include <cstdint>
#include <string>

#include "app/validate/reference.h"
#include "fuzz_input_file.h"
#include "sim/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".yaml");
  try {
    (void)warpsim::load_reference(file.write(data, size));
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
