// Grid-wide semaphores in global memory: the flags that CTAs of one kernel count on and spin on (stream-K's tile
// arrival counters, a serial split-K's turn, "last CTA done" counters). The simulator holds no data, so a flag's
// value is modelled by what changes it: each RED or ATOMG issued by one thread (one active lane) counts as one
// arrival on the word at that lane's address, and a spin-wait poll (an LDG whose `aux` is the arrivals it waits
// for, trace format 1.6) finds the arrivals issued before it. Both are taken when the SM issues them, so the
// request to L2 and the poll's request travel alike and the comparison stands for the order at L2. Counts start at
// zero with each kernel (the one running now: kernels do not overlap).
//
// The kernel scheduler owns the table, clears it when a kernel starts and publishes it as slot "grid_sync".
// Under SM subsetting it is off: the CTAs a wait counts on may not be simulated, so waits pass at their first
// poll (as a trace without waits would). CTA-wave sampling simulates a prefix of the grid, and a wait can only
// count on CTAs dispatched before it (on real GPUs, waiting for a later CTA may never end), so waits stay on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/core/error.h"
#include "sim/core/types.h"

namespace warpsim {

class GridSync {
 public:
  bool enabled() const noexcept { return enabled_; }
  void set_enabled(bool on) noexcept { enabled_ = on; }
  // A new kernel: every flag starts from no arrivals.
  void clear() { arrivals_.clear(); }

  // One arrival on the word at `address` at SM cycle `at` (calls come in non-decreasing cycle order).
  void arrive(std::uint64_t address, Cycle at) {
    if (!enabled_) return;
    std::vector<Cycle>& times = arrivals_[address];
    WARPSIM_ASSERT(times.empty() || times.back() <= at, "semaphore arrivals out of cycle order");
    times.push_back(at);
  }
  // The arrivals on `address` issued before cycle `at` (those of the same cycle are not seen, so the order in which
  // SMs are ticked within a cycle does not matter): how many, and the cycle of the latest (0 when none).
  struct Seen {
    std::uint64_t count = 0;
    Cycle last = 0;
  };
  Seen arrivals_before(std::uint64_t address, Cycle at) const {
    const auto it = arrivals_.find(address);
    if (it == arrivals_.end()) return {};
    const auto end = std::lower_bound(it->second.begin(), it->second.end(), at);
    const auto count = static_cast<std::uint64_t>(end - it->second.begin());
    return {count, count == 0 ? Cycle{0} : *(end - 1)};
  }

 private:
  bool enabled_ = true;
  std::unordered_map<std::uint64_t, std::vector<Cycle>> arrivals_;
};

}  // namespace warpsim
