// Shared-memory bank conflicts: how many wavefronts (conflict-free passes through the banks, one per cycle of the
// shared-memory data path) a warp's shared-memory instruction needs, from the per-lane addresses the trace carries.
//
// The rules (CUDA C++ Programming Guide, "Shared Memory" of compute capability 5.x and later; Nsight Compute Kernel
// Profiling Guide, "Shared Memory" wavefronts and bank conflicts; Jia et al., "Dissecting the NVIDIA Volta GPU
// Architecture via Microbenchmarking", 2018, and "Dissecting the NVIDIA Turing T4 GPU", 2019, shared memory):
//  - successive `bank_bytes` (4 B) words map to successive banks, `banks` (32) of them;
//  - a request is processed in phases of lanes that can move one bank row (banks x bank_bytes = 128 B) at most:
//    the whole warp for accesses of up to 4 B per lane, half-warps (lanes 0-15, 16-31) for 8 B (LDS.64), quarter
//    warps (8 lanes) for 16 B (LDS.128); ldmatrix/LDSM reads one 8x8 matrix (8 row addresses of 16 B, lanes
//    8q..8q+7 for matrix q) per phase, .x1/.x2/.x4 = 1/2/4 matrices;
//  - within a phase, lanes reading the same word share it (broadcast; multicast for several), and the phase takes
//    as many wavefronts as the most distinct words any one bank holds among the phase's accesses (an n-way
//    conflict replays n times); phases without active lanes take none.
// The ideal is the wavefronts the phase's distinct words need at best (ceil(words / banks), at least one): the
// difference is what Nsight Compute counts as l1tex__data_bank_conflicts_pipe_lsu_mem_shared.
// Known simplification: Volta and later can merge the two half-warps of an LDS.64 (and quarter-warps of an
// LDS.128) when they read the same words; every phase is counted here, which over-counts only such broadcasts.
#pragma once

#include <cstdint>

#include "sim/trace/inst.h"

namespace warpsim {

inline constexpr std::uint32_t kMaxSharedBanks = 1024;  // the most smem.banks a config may give

struct SharedBankGeometry {
  std::uint32_t banks = 32;      // smem.banks
  std::uint32_t bank_bytes = 4;  // smem.bank_bytes
  std::uint32_t row_bytes() const { return banks * bank_bytes; }
};

struct SharedWavefronts {
  std::uint32_t wavefronts = 0;  // conflict-free passes the instruction takes
  std::uint32_t ideal = 0;       // the fewest its distinct words allow (wavefronts - ideal = bank conflicts)
  std::uint32_t conflicts() const { return wavefronts - ideal; }
};

// Lanes per phase of a shared-memory instruction (LDS/STS: by access width; LDSM: 8, one matrix).
std::uint32_t shared_phase_lanes(const WarpInst& in, const SharedBankGeometry& g);
// Lanes whose addresses the instruction uses: all 32, or 8 per matrix of an LDSM (num_dst matrices: 1, 2 or 4).
std::uint32_t shared_addressed_lanes(const WarpInst& in);
// Wavefronts of one shared-memory instruction (LDS, STS, LDSM) over its active lanes' addresses. Remembered per
// address pattern (a small per-thread table): a kernel issues the same few patterns at many bases, and the count
// depends on the base only modulo the bank row, so a repeat costs a key comparison instead of a pass over the lanes.
SharedWavefronts shared_wavefronts(const WarpInst& in, const SharedBankGeometry& g);
// The same count, computed afresh (what the table remembers; tests compare the two).
SharedWavefronts count_shared_wavefronts(const WarpInst& in, const SharedBankGeometry& g);

}  // namespace warpsim
