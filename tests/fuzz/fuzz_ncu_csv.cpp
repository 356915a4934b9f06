// libFuzzer harness: the Nsight Compute importer (app/validate/ncu_import.cpp) on an arbitrary `ncu --csv --page
// raw` export, with the sample mapping (tests/data/ncu/sample_map.yaml) so that mapped launches become cases and
// are checked as validate checks them. Bad input must end in an InputError naming the file, line and column.
#include <cstdint>
#include <set>
#include <string>

#include "app/validate/ncu_import.h"
#include "app/validate/reference.h"
#include "fuzz_input_file.h"
#include "sim/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".csv");
  // The GPU configs a mapping names are fixed files: load each (with its overrides) once per process, not once per
  // input, as one import does; the config loader has its own harness (fuzz_config).
  static std::set<std::string> checked_configs;
  try {
    const warpsim::NcuImport im =
        warpsim::import_ncu_csv(file.write(data, size), "h100_sxm", WARPSIM_SOURCE_DIR "/tests/data/ncu/sample_map.yaml");
    for (const warpsim::ReferenceCase& c : im.cases) warpsim::check_reference_case(c, checked_configs);
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
