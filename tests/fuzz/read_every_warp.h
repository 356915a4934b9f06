// Reads a trace as the simulator would: every kernel, CTA and warp to its end. Shared by the trace-reader
// harnesses so that each states only how its reader is constructed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/trace/source.h"

namespace warpsim_fuzz {

// A fuzzed grid can claim billions of CTAs; readers that do not index CTAs up front (native) are read up to
// max_ctas per kernel, which is still every CTA a small input can hold.
inline void read_every_warp(warpsim::TraceSource& trace,
                            std::uint64_t max_ctas = std::numeric_limits<std::uint64_t>::max()) {
  warpsim::WarpInst batch[64];
  for (std::size_t k = 0; k < trace.num_kernels(); ++k) {
    auto kernel = trace.open_kernel(k);
    const std::uint64_t ctas = std::min<std::uint64_t>(kernel->info().grid.count(), max_ctas);
    for (std::uint64_t c = 0; c < ctas; ++c) {
      auto cta = kernel->open_cta(c);
      for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
        auto warp = cta->open_warp(w);
        while (warp->read(batch, 64) > 0) {
        }
      }
    }
  }
}

}  // namespace warpsim_fuzz
