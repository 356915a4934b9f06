// Nsight Compute import for `warpsim validate --ncu REPORT.csv --gpu CONFIG [--map MAP.yaml]`: each kernel launch
// of an `ncu --csv --page raw` export that warpsim can reproduce becomes validation cases, measured against
// simulated, one per metric, as Accel-Sim's correlator compares hardware counters with its simulation. The
// export does not hold the problem shapes: a mapping file names them (docs/ncu-import.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/validate/reference_case.h"

namespace warpsim {

// An export is read whole into memory: a full-set raw page of 10,000 launches is about 100 MiB.
inline constexpr std::uint64_t kMaxNcuReportBytes = std::uint64_t{256} << 20;

// A launch of the export that gives no case, and why ("shape unknown: add it to --map", "no synthesizer for
// elementwise", ...). Every launch gives cases or a skip: none is dropped silently.
struct NcuSkipped {
  std::string kernel;  // the kernel name as in the export
  std::string reason;
  int row = 0;         // 1-based launch row of the export
  int line = 0;        // line of the CSV file
};

// A metric column of the export that gives no case, and why (warpsim simulates no equivalent, or it is a launch
// parameter rather than a measurement). Each column once.
struct NcuIgnoredMetric {
  std::string metric, reason;
};

struct NcuImport {
  std::vector<ReferenceCase> cases;
  std::vector<NcuSkipped> skipped;
  std::vector<NcuIgnoredMetric> ignored;
};

// Reads the export `csv_path` (and the mapping `map_path`, when not empty) and returns the cases for `gpu`
// (a shipped config name or a path, copied into each case). Throws InputError naming the file, line and column or
// metric for a malformed export (ragged row, unknown unit, number that is not one, missing "Kernel Name" or
// "gpu__time_duration.sum" column, ...) or mapping (YAML, unknown field, bad regex, workload keys the
// synthesizer rejects).
NcuImport import_ncu_csv(const std::string& csv_path, const std::string& gpu, const std::string& map_path = "");

// --- the pieces, for tests ------------------------------------------------------------------------------------

// What a kernel name says: its family ("gemm", "attention", "elementwise", "reduction", "nccl", or "" when not
// recognised), its input data type when the name gives it ("fp16", "bf16", "fp8", "tf32", "fp32", or ""), and a
// short name for case ids ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_tn").
struct NcuKernelClass {
  std::string family, dtype, short_name;
};
NcuKernelClass classify_ncu_kernel(const std::string& name);

// A value of the export in the unit warpsim reports for its kind of quantity: times in microseconds, sizes in
// bytes, rates in GB/s (1e9 bytes per second), percentages as fractions, cycles and instructions per cycle as
// they are. `quantity` is "time", "bytes", "rate", "percent", "cycles" or "per_cycle". Numbers may have
// thousands separators ("1,234,567.5"). Returns false for a unit that is not one of the quantity's (`*error`
// says which are); throws nothing.
bool ncu_unit_scale(const std::string& quantity, const std::string& unit, double& scale, std::string* error);
// Parses a number of the export ("1,234.5", "3e-05"); false when `text` is not one.
bool parse_ncu_number(const std::string& text, double& value);

}  // namespace warpsim
