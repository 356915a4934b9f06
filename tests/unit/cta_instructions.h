// Test helper: walks a synthesized or read kernel's instruction stream, one CTA at a time.
#pragma once

#include <array>
#include <cstdint>

#include "sim/trace/source.h"

namespace warpsim::test {

// Calls visit(inst) for every instruction of every warp of CTA `cta`, warp by warp, in stream order.
template <class Visit>
void for_each_cta_instruction(KernelSource& kernel, std::uint64_t cta, Visit&& visit) {
  auto cs = kernel.open_cta(cta);
  for (std::uint32_t w = 0; w < cs->num_warps(); ++w) {
    auto ws = cs->open_warp(w);
    std::array<WarpInst, 64> buf;
    for (std::size_t n; (n = ws->read(buf.data(), buf.size())) > 0;)
      for (std::size_t i = 0; i < n; ++i) visit(buf[i]);
  }
}

}  // namespace warpsim::test
