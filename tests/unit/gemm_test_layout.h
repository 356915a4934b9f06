// What the GEMM synthesizer's tests know by hand: where it places its operands and the GPU limits it is given.
#pragma once

#include <cstdint>
#include <string>

#include "sim/core/types.h"
#include "traces/synth/gemm.h"

namespace warpsim::test {

// A's base address; B, C and the rest follow, each 1 MiB aligned (traces/synth/gemm.h).
inline constexpr std::uint64_t kA = 0x7f0000000000ull;
inline std::uint64_t align_mib(std::uint64_t x) { return (x + kMiB - 1) / kMiB * kMiB; }

// The GPU limits the synthesizer is given, as in configs/h100_sxm.yaml and configs/a100_sxm.yaml (sm section):
// H100 (sm_90): 227 KiB of shared memory per CTA, A100 (sm_80): 163 KiB; both 65536 registers per SM and at most
// 255 per thread. sm_100 is tested with the H100 values.
inline const GemmLimits kH100Limits{227 * 1024, 65536, 255};
inline const GemmLimits kA100Limits{163 * 1024, 65536, 255};
inline GemmLimits limits_for(const std::string& arch) { return arch == "sm_80" ? kA100Limits : kH100Limits; }

}  // namespace warpsim::test
