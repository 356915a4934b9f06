// Greedy-then-oldest warp scheduling: keep issuing from the warp that issued last while it can, else the
// oldest eligible warp.
#include <algorithm>

#include "models/sm/scheduler/warp_scheduler.h"

namespace warpsim {
namespace {

class GreedyThenOldest final : public WarpSchedulerPolicy {
 public:
  std::uint32_t pick(const IssueCandidates& c) override {
    const auto& warps = c.warps();
    std::uint32_t pick = kNoWarp;
    // The greedy warp may have exited since (and its slot been reused by a warp of another sub-partition): the
    // list is searched only when the slot could issue (eligibility is the cheaper test, and usually fails).
    if (greedy_ != kNoWarp && c.eligible(greedy_) && std::find(warps.begin(), warps.end(), greedy_) != warps.end()) {
      pick = greedy_;
    } else {
      for (std::uint32_t w : warps)
        if (c.eligible(w)) {
          pick = w;
          break;
        }
    }
    if (pick != kNoWarp) greedy_ = pick;
    return pick;
  }

 private:
  std::uint32_t greedy_ = kNoWarp;  // warp slot that issued last
};

WARPSIM_REGISTER_SCHEDULER_POLICY(GreedyThenOldest, "gto", "greedy-then-oldest");

}  // namespace
}  // namespace warpsim
