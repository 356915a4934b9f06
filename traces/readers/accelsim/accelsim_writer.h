// Writes any TraceSource as an Accel-Sim trace directory (kernelslist.g + kernel-N.traceg, tracer version 5), so
// that Accel-Sim and warpsim can run identical input (`warpsim convert --to accelsim`). What the format cannot
// carry is listed in traces/readers/accelsim/README.md ("Writing").
#pragma once

#include <cstdint>
#include <string>

#include "sim/trace/inst.h"
#include "sim/trace/source.h"

namespace warpsim::accelsim {

struct AccelSimWriteStats {
  std::uint64_t kernels = 0;
  std::uint64_t instructions = 0;
  std::uint64_t bytes = 0;
  // Spin-wait polls (LDG with a wait count, format 1.6) written as one load each: Accel-Sim traces hold the polls
  // a real run made, and have no field for the count.
  std::uint64_t spin_waits_as_loads = 0;
};

// Creates `dir` (or reuses an empty one) and writes the kernels of `source` in order. InputError when a kernel's
// target_arch is not "sm_NN" (Accel-Sim needs a binary version) or the directory cannot be written.
AccelSimWriteStats write_accelsim_trace(const std::string& dir, TraceSource& source);

// The SASS spelling of one record (opcode with modifiers: "LDG.E.128", "HMMA.16816.F32.BF16"), as the writer
// emits it and the reader's tables take it back.
std::string sass_opcode_of(const WarpInst& inst);

}  // namespace warpsim::accelsim
