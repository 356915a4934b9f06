// Observers of a run (Akita's hooks at the level of the whole GPU): the kernel scheduler announces kernels,
// CTAs and progress, and whatever wants them — the per-kernel results, the CTA timeline, the progress display —
// listens without the scheduler knowing it exists.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/core/types.h"
#include "sim/trace/source.h"

namespace warpsim {

struct KernelLaunch {
  std::size_t index = 0, count = 0;  // this kernel's position in the trace, and how many there are
  const KernelInfo* info = nullptr;
  Cycle cycle = 0;                   // SM clock
  Cycle submitted = 0;               // when the host had submitted it (launch.mode's interval after the previous)
  Cycle host_wait = 0;               // SM cycles the GPU sat idle before it, waiting for that submission
};

struct RunProgress {
  std::size_t kernel = 0, kernels = 0;
  std::uint64_t ctas_done = 0, ctas = 0;  // of the current kernel
  Cycle cycle = 0;                        // SM clock
  std::uint64_t warp_instructions = 0;    // issued so far in the run
  // Fraction of the run done: kernels finished plus the current kernel's finished CTAs (each kernel counts alike).
  double fraction() const {
    return kernels ? (static_cast<double>(kernel) + (ctas ? static_cast<double>(ctas_done) / ctas : 0.0)) / kernels : 0.0;
  }
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void kernel_started(const KernelLaunch&) {}
  virtual void kernel_finished(const KernelLaunch&) {}  // `cycle`: the cycle it finished
  virtual void cta_started(std::size_t kernel, unsigned sm, std::uint64_t cta, Cycle) {}
  virtual void cta_finished(std::size_t kernel, unsigned sm, std::uint64_t cta, Cycle) {}
  // Every `sim.progress_check_cycles` SM cycles.
  virtual void progress(const RunProgress&) {}
};

}  // namespace warpsim
