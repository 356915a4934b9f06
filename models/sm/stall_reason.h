// Why a resident warp did not issue in a cycle, named after Nsight Compute's warp-state sampling metrics
// (smsp__pcsamp_warps_issue_stalled_<name>), so that numbers line up with what architects already read.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace warpsim {

enum class StallReason : std::uint8_t {
  Selected,          // issued this cycle
  NotSelected,       // eligible, but the scheduler picked another warp
  LongScoreboard,    // waiting for a global/local memory result (incl. cp.async groups at DEPBAR)
  ShortScoreboard,   // waiting for a shared-memory (MIO) or special-function result
  Wait,              // waiting for a fixed-latency result (ALU, FMA, tensor)
  MathPipeThrottle,  // operands ready, the functional unit it needs is busy
  LgThrottle,        // global/local memory instruction, LSU queue full
  MioThrottle,       // shared-memory instruction, LSU queue full
  Barrier,           // waiting at a CTA barrier
  Drain,             // at EXIT, waiting for its memory operations and results to complete
  // Appended (GH100's smsp__warp_issue_stalled_gmma, a Hopper-only Nsight state): waiting at WARPGROUP_DEPBAR
  // (wgmma.wait_group) for committed warpgroup-MMA groups, or reading an accumulator an HGMMA still writes.
  Gmma,
  // Appended: the warp's next instruction is not in its sub-partition's L0 instruction cache yet.
  NoInstruction,
  // Appended (Nsight's smsp__pcsamp_warps_issue_stalled_misc): a setmaxnreg.inc waiting for registers other
  // warpgroups of the CTA have not released yet.
  Misc,
  Count
};

inline constexpr std::array<std::string_view, static_cast<std::size_t>(StallReason::Count)> kStallNames = {
    "selected",       "stall_not_selected", "stall_long_scoreboard", "stall_short_scoreboard", "stall_wait",
    "stall_math_pipe_throttle", "stall_lg_throttle", "stall_mio_throttle", "stall_barrier", "stall_drain",
    "stall_gmma",     "stall_no_instruction", "stall_misc"};

inline std::string_view stall_name(StallReason r) { return kStallNames[static_cast<std::size_t>(r)]; }

}  // namespace warpsim
