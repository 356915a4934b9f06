// Classifying the kernels of a Kineto trace and mapping each onto a registered synthesizer (traces/synth):
// the kernel's name says what kind of kernel it is (a table of name patterns, kernel_name_rules(), first match
// wins), the aten operator that launched it gives the shapes (record_shapes). What cannot be mapped is said,
// never dropped: `status` "unmapped" with the reason.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "traces/kineto/kineto_trace.h"

namespace warpsim::kineto {

// A row of the name table: kernels whose name contains a match of `pattern` (ECMAScript regex, case-sensitive)
// belong to `category`. `helper` marks the second kernel of a library call (cuBLASLt's split-K reduction,
// cuDNN's split-KV combine): its time belongs to the main kernel launched by the same operator, whose synthesized
// workload includes its own helper kernels.
struct NameRule {
  const char* pattern;
  const char* category;  // gemm, attention, layernorm, rmsnorm, softmax, rotary, copy, reduction, elementwise
  bool helper;
  const char* why;       // what the pattern stands for (documentation, `import-kineto --rules`)
};
const std::vector<NameRule>& kernel_name_rules();

enum class MapStatus {
  Mapped,    // the synthesizer builds this kernel's operation with the traced shapes
  Approx,    // a synthesizer of the same cost class stands in for it (`note` says which, for what)
  Helper,    // a helper kernel: its time goes with the main kernel of the same operator
  Unmapped,  // not simulated: `note` says why
};
const char* map_status_name(MapStatus status);  // "mapped", "approx", "helper", "unmapped"

struct Mapping {
  std::string category = "unknown";
  MapStatus status = MapStatus::Unmapped;
  std::string shape;                          // what was read from the operator, e.g. "141x512x512 bf16"
  std::string synthesizer;                    // Mapped/Approx: the synthesizer kind ...
  std::map<std::string, std::string> keys;    // ... and its keys
  std::string note;                           // Approx: what stands in; Unmapped: why; Helper: which operator
};

Mapping classify_kernel(const Kernel& kernel);

// The operator a helper kernel belongs to: the innermost enclosing op (its external id, else its start), or
// "" when none. A helper's main kernel is the kernel before it with the same operator_key.
std::string operator_key(const Kernel& kernel);

}  // namespace warpsim::kineto
