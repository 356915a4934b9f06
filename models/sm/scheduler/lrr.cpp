// Loose round-robin warp scheduling: the first eligible warp after the one that issued last, in list order.
#include "models/sm/scheduler/warp_scheduler.h"

namespace warpsim {
namespace {

class LooseRoundRobin final : public WarpSchedulerPolicy {
 public:
  std::uint32_t pick(const IssueCandidates& c) override {
    const auto& warps = c.warps();
    const std::size_t n = warps.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = (next_ + i) % n;
      if (c.eligible(warps[k])) {
        next_ = (k + 1) % n;
        return warps[k];
      }
    }
    return kNoWarp;
  }
  void warps_removed(std::size_t remaining) override {
    if (next_ >= remaining) next_ = 0;
  }

 private:
  std::size_t next_ = 0;  // position in the warp list to start from
};

WARPSIM_REGISTER_SCHEDULER_POLICY(LooseRoundRobin, "lrr", "loose round-robin");

}  // namespace
}  // namespace warpsim
