// Tiled tensor-core GEMM synthesizer: instruction and address streams shaped like CUTLASS/cuBLAS kernels for
// the target architecture, generated lazily per warp (one main-loop k-tile at a time). See README.md here for
// the generated code per architecture and its instruction mix per k-tile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/trace/source.h"

namespace warpsim {

// C[m,n] = A[m,k] * B[k,n]. A is row-major (K contiguous); B is stored N x K (K contiguous: "TN", as the weight
// of a PyTorch Linear); C is row-major. Accumulation is fp32; C is bf16 for bf16 and fp8 inputs, f16 for f16.
struct GemmProblem {
  std::uint64_t m = 0, n = 0, k = 0;
  DType dtype = DType::BF16;
};

struct GemmTiling {
  std::uint32_t tile_m = 0, tile_n = 0, tile_k = 0;  // CTA tile
  std::uint32_t stages = 0;                          // shared-memory pipeline depth
  std::uint32_t warps = 0;                           // warps per CTA
  bool warpgroup_mma = false;       // false: sm_80 multistage (mma.sync); true: sm_90 warp-specialised (HGMMA)
  std::uint32_t swizzle_group = 1;  // CTA rasterisation: this many consecutive M-tiles share each N-tile column
  // Split-K: grid.z = split_k CTAs share each output tile, CTA z reducing k-tiles
  // [z*k_tiles/split_k, (z+1)*k_tiles/split_k). With split_k > 1 every CTA adds its fp32 partial tile into C with
  // global reductions (RED.ADD.F32), so C is an fp32 workspace (zeroed before the kernel), not bf16/f16.
  std::uint32_t split_k = 1;
};

// Resource limits of the target GPU that a kernel must respect, taken from its config (`sm` section:
// shared_memory_per_cta, registers, max_registers_per_thread, count).
// H100: {227 KiB, 65536, 255, 132}; A100: {163 KiB, 65536, 255, 108}.
struct GemmLimits {
  std::uint64_t shared_mem_per_cta = 0;        // largest shared-memory allocation of one CTA, in bytes
  std::uint32_t registers_per_sm = 0;          // 32-bit registers per SM: one CTA's registers must fit
  std::uint32_t max_registers_per_thread = 0;  // most registers one thread may use
  std::uint32_t sm_count = 0;                  // SMs of the GPU (0 = unknown: the tiling heuristic never splits K)
};

// True for the architectures the GEMM code paths exist for: "sm_80" (mma.sync multistage), "sm_90" and
// "sm_100" (warpgroup MMA).
bool gemm_supports_arch(const std::string& arch);

// The large-GEMM tiling per architecture ("sm_80", "sm_90", "sm_100"; sm_100 uses the sm_90 structure for now),
// split_k = 1, whatever the shape. Throws InputError for any other architecture. The tiling is not validated
// against the dtype (validate_gemm does).
GemmTiling default_gemm_tiling(const std::string& arch, DType dtype);

// Shape-aware default, as a library heuristic would pick it (README.md, "Tiling heuristic"): the tiling above,
// with a 64-row tile when problem.m <= 64 and split-K when the output tiles leave SMs of `limits.sm_count` idle
// and K is deep enough. Large shapes (e.g. 4096^3, 2048^3 on H100/A100) get exactly the 2-argument tiling.
GemmTiling default_gemm_tiling(const std::string& arch, DType dtype, const GemmProblem& problem,
                               const GemmLimits& limits);

// "" when the problem and tiling can be generated and one CTA fits within `limits`; otherwise one message saying
// what is wrong.
std::string validate_gemm(const GemmProblem& problem, const GemmTiling& tiling, const GemmLimits& limits);

// One-kernel trace. Throws InputError when the arch is unknown, does not match the tiling's structure, or
// validate_gemm against `limits` fails.
std::unique_ptr<TraceSource> make_gemm_trace(const GemmProblem& problem, const GemmTiling& tiling,
                                             const std::string& arch, const GemmLimits& limits);

// CTA rasterisation: the output tile computed by linear CTA id `cta_id`. CTAs walk groups of `group` M-tiles
// (the last group may be smaller), M fastest within a group, so that consecutive CTAs share one N-tile (the same
// B columns) and a wave touches only `group` A row-blocks. group = 1 is plain row-major (N fastest).
struct GemmTileIndex {
  std::uint32_t m = 0, n = 0;
};
GemmTileIndex gemm_cta_tile(std::uint64_t cta_id, std::uint32_t tiles_m, std::uint32_t tiles_n, std::uint32_t group);

}  // namespace warpsim
