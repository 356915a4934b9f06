// Registry of warp-scheduler policies (see warp_scheduler.h).
#include "models/sm/scheduler/warp_scheduler.h"

#include <algorithm>

#include "sim/core/error.h"

namespace warpsim {

namespace {
// Function-local so that registrations from any translation unit's static initialisation find it built.
std::vector<SchedulerPolicyType>& policies() {
  static std::vector<SchedulerPolicyType> list;
  return list;
}
}  // namespace

const std::vector<SchedulerPolicyType>& scheduler_policies() { return policies(); }

std::vector<std::string> scheduler_policy_names() {
  std::vector<std::string> names;
  for (const auto& p : policies()) names.push_back(p.name);
  return names;
}

std::unique_ptr<WarpSchedulerPolicy> make_scheduler_policy(const std::string& name) {
  for (const auto& p : policies())
    if (p.name == name) return p.make();
  return nullptr;
}

detail::SchedulerPolicyRegistrar::SchedulerPolicyRegistrar(SchedulerPolicyType type) {
  const bool taken = std::any_of(policies().begin(), policies().end(), [&](const auto& p) { return p.name == type.name; });
  WARPSIM_ASSERT(!taken, "scheduler policy registered twice");
  policies().push_back(std::move(type));
}

}  // namespace warpsim
