// Warp-scheduler policies (config `sm.scheduler.policy`): which eligible warp a sub-partition issues from.
//   gto: greedy-then-oldest: keep issuing from the warp that issued last while it can, else the oldest.
//   lrr: loose round-robin: the first eligible warp after the one that issued last.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace warpsim {

enum class SchedulerPolicy : std::uint8_t { Gto, Lrr };

struct SchedulerState {
  std::uint32_t greedy = ~0u;  // GTO: warp slot that issued last
  std::size_t rr_next = 0;     // LRR: position in the warp list to start from
};

inline constexpr std::uint32_t kNoWarp = ~0u;

// `warps`: warp slots in age order (oldest first). Returns the chosen slot or kNoWarp, and updates `state`.
template <class Eligible>
std::uint32_t pick_warp(SchedulerPolicy policy, const std::vector<std::uint32_t>& warps, Eligible&& eligible,
                        SchedulerState& state) {
  std::uint32_t pick = kNoWarp;
  if (policy == SchedulerPolicy::Gto) {
    if (state.greedy != kNoWarp && std::find(warps.begin(), warps.end(), state.greedy) != warps.end() &&
        eligible(state.greedy)) {
      pick = state.greedy;
    } else {
      for (std::uint32_t w : warps)
        if (eligible(w)) {
          pick = w;
          break;
        }
    }
  } else {
    const std::size_t n = warps.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = (state.rr_next + i) % n;
      if (eligible(warps[k])) {
        pick = warps[k];
        state.rr_next = (k + 1) % n;
        break;
      }
    }
  }
  if (pick != kNoWarp) state.greedy = pick;
  return pick;
}

}  // namespace warpsim
