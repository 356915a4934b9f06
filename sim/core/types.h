// Basic simulation types shared by the core and the models.
#pragma once

#include <cstdint>
#include <limits>

namespace warpsim {

using Cycle = std::uint64_t;        // a cycle count in one clock domain
using TimeFs = std::uint64_t;       // global simulated time in femtoseconds (2^64 fs ~ 5 hours simulated)

inline constexpr Cycle kSleep = std::numeric_limits<Cycle>::max();  // "wake me only on input"
inline constexpr TimeFs kTimeNever = std::numeric_limits<TimeFs>::max();
inline constexpr std::uint64_t kFsPerSecond = 1'000'000'000'000'000ull;
inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// a / b rounded up (tiles, waves, CTAs): b > 0.
inline constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace warpsim
