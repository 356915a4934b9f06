// The GEMM synthesizer fitted to a configured GPU, and its registration as synthesizer kind "gemm"
// (gemm_synthesizer.cpp). Wraps the public API of gemm.h.
#pragma once

#include <memory>
#include <optional>

#include "sim/config/config.h"
#include "sim/trace/source.h"
#include "traces/synth/gemm.h"

namespace warpsim {

// The synthesizer's main-loop and decomposition keys (`mainloop`, `cluster_m`, `split_k`, `decomposition`,
// `stream_k_ctas`): the TMA main loop with the default cluster unless
// asked otherwise (cluster_m 0 = the tiling's default).
struct GemmMainloopChoice {
  GemmTiling::Mainloop mainloop = GemmTiling::Mainloop::Tma;
  std::uint32_t cluster_m = 0;
  std::uint32_t split_k = 0;  // 0: the tiling heuristic's choice; otherwise K splits as a cuBLASLt algo's splitK
  bool stream_k = false;      // stream-K decomposition (no split-K then); GemmTiling::stream_k
  std::uint32_t stream_k_ctas = 0;
  // GemmTiling::persistent: unset = persistent where the kernel can be (the sm_90 TMA main loop without split-K:
  // cuBLAS's nvjet kernels for these shapes are; stream-K on sm_90 is persistent too), else one CTA per tile; true = persistent (an error where
  // the kernel cannot be: sm_80, ldgsts, split-K); false = one CTA per tile.
  std::optional<bool> persistent;
  GemmTileShape tile;  // zero fields: the heuristic's
  // The MMA instruction on sm_100: Auto = tcgen05 where the tiling allows it (gemm_tcgen05_refusal), else the
  // warpgroup-MMA structure; Tcgen05 = tcgen05 or an error saying why not; Wgmma = the sm_90 structure (HGMMA).
  enum class Mma { Auto, Tcgen05, Wgmma };
  Mma mma = Mma::Auto;
  // The warp-specialised kernel's consumer schedule: Cooperative (both consumer warpgroups on one tile, as cuBLAS's
  // nvjet "coop" kernels) or Pingpong (GemmTiling::pingpong: persistent, an error where it cannot run; the tile is
  // one warpgroup's, 64 rows unless tile_m asks otherwise).
  enum class Schedule { Cooperative, Pingpong };
  Schedule schedule = Schedule::Cooperative;
};

// The shape-aware default tiling for the config's `gpu.arch`, validated against its `sm` limits (shared memory
// per CTA, registers, SM count), with `choice`'s main loop. Throws InputError.
std::unique_ptr<TraceSource> make_gemm_for_gpu(const GemmProblem& problem, const Config& config,
                                               const GemmMainloopChoice& choice = {});

}  // namespace warpsim
