// Row reductions of row kernels (softmax, layer/RMS norm, later attention's online softmax): a butterfly
// all-reduce across the lanes of a warp with SHFL, and across the warps of a CTA through shared memory and BAR.
// See README.md here, "Memory-bound operators".
#pragma once

#include <cstdint>

#include "sim/core/error.h"
#include "traces/synth/emit.h"

namespace warpsim::synth {

// What is reduced: `values` consecutive registers from `first` (e.g. one max, or Welford's mean, m2, count),
// exchanged through `scratch` (as many registers), combined by `combine_ops` instructions of `combine` per step
// (1 for a sum or a max: value = value op scratch; Welford's combine needs several) and `combine_sfu` MUFU.
struct WarpReduction {
  std::uint16_t first = 0;
  std::uint16_t scratch = 0;
  std::uint32_t values = 1;
  Opcode combine = Opcode::FADD;
  std::uint32_t combine_ops = 1;
  std::uint32_t combine_sfu = 0;  // MUFU per step besides (a division in Welford's combine)
};

inline std::uint32_t reduction_steps(std::uint32_t lanes) {
  std::uint32_t steps = 0;
  while ((1u << steps) < lanes) ++steps;
  return steps;
}

// All-reduce over groups of `lanes` consecutive lanes (a power of two <= 32): log2(lanes) steps of shfl.xor, each
// one SHFL per value (into scratch) followed by the combining instructions. As CUDA's warp_reduce helpers
// (PyTorch's persistent softmax, cuWelfordCombine, apex) are written: values inside the offset loop.
inline void emit_warp_allreduce(InstChunk& c, const WarpReduction& r, std::uint32_t lanes) {
  for (std::uint32_t step = 0; step < reduction_steps(lanes); ++step) {
    for (std::uint32_t v = 0; v < r.values; ++v) emit_alu(c, Opcode::SHFL, reg(r.scratch + v), {reg(r.first + v)});
    for (std::uint32_t i = 0; i < r.combine_ops; ++i) {
      const std::uint32_t v = i % r.values;
      emit_alu(c, r.combine, reg(r.first + v), {reg(r.first + v), reg(r.scratch + v)});
    }
    for (std::uint32_t i = 0; i < r.combine_sfu; ++i) emit_alu(c, Opcode::MUFU, reg(r.first + i % r.values), {reg(r.first + i % r.values)});
  }
}

// A CTA-wide all-reduce: each warp all-reduces, lane 0 stores its partials (STS.32 per value) at
// smem_base + (value * warps + warp) * 4, BAR, every warp loads the `warps` partials of each value into lanes
// 0..warps-1 (LDS.32) and all-reduces them over `warps` lanes, BAR (the buffer may then be reused). `warps` is a
// power of two <= 32; with one warp only the warp all-reduce is emitted. `addr` = a register holding the address.
struct CtaReduction {
  WarpReduction warp;
  std::uint32_t warps = 1;
  std::uint64_t smem_base = 0;
  std::uint16_t addr = 0;
  std::uint32_t buffer_bytes() const { return warps > 1 ? warp.values * warps * 4 : 0; }
};

inline void emit_cta_allreduce(InstChunk& c, const CtaReduction& r, std::uint32_t warp) {
  emit_warp_allreduce(c, r.warp, kWarpSize);
  if (r.warps <= 1) return;
  WARPSIM_ASSERT(r.warps <= kWarpSize && (r.warps & (r.warps - 1)) == 0, "CTA reduction over a power of two of warps");
  constexpr std::uint32_t kPartialBytes = 4;
  for (std::uint32_t v = 0; v < r.warp.values; ++v) {
    const LaneRows slot{r.smem_base + (std::uint64_t{v} * r.warps + warp) * kPartialBytes, kPartialBytes, kWarpSize, 0};
    emit_store(c, Opcode::STS, MemSpace::Shared, slot, 1u, {reg(r.warp.first + v), r.addr});
  }
  emit_barrier(c);
  const std::uint32_t partial_lanes = first_lanes_mask(r.warps);
  for (std::uint32_t v = 0; v < r.warp.values; ++v) {
    const LaneRows partials{r.smem_base + std::uint64_t{v} * r.warps * kPartialBytes, kPartialBytes, kWarpSize, 0};
    emit_load(c, Opcode::LDS, MemSpace::Shared, partials, partial_lanes, reg(r.warp.first + v), 1, {r.addr});
  }
  emit_warp_allreduce(c, r.warp, r.warps);
  emit_barrier(c);
}

}  // namespace warpsim::synth
