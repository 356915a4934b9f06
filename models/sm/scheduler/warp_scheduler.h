// Warp-scheduler policies (config `sm.scheduler.policy`): which eligible warp a sub-partition issues from.
// Each policy is one file that derives from WarpSchedulerPolicy and registers itself with
// WARPSIM_REGISTER_SCHEDULER_POLICY; the SM makes one instance per sub-partition (so a policy keeps its own
// state without indexing) and asks it once per scheduling decision, through one virtual call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/sm/core/warp.h"

namespace warpsim {

inline constexpr std::uint32_t kNoWarp = ~0u;

// The warps of one sub-partition at one scheduling decision, read-only. A policy asks eligible() only for the
// warps it considers (most decisions look at one or two); the test is inline, so that asking costs what it
// cost before policies were separate files. The SM keeps one per sub-partition and only moves it to the
// current cycle (at()) before each decision.
class IssueCandidates {
 public:
  IssueCandidates(const std::vector<std::uint32_t>& warps, const Warp* warp_table, const PipeFreeTimes& pipe_free)
      : warps_(warps), table_(warp_table), pipe_free_(pipe_free) {}

  // The decision at cycle `now`, with or without room in the LSU queue for a memory instruction.
  const IssueCandidates& at(Cycle now, bool lsu_has_room) {
    now_ = now;
    lsu_has_room_ = lsu_has_room;
    return *this;
  }

  // Warp slots in age order, oldest first.
  const std::vector<std::uint32_t>& warps() const noexcept { return warps_; }
  // The state of warp slot `warp_slot` (for policies that look at more than eligibility).
  const Warp& warp(std::uint32_t warp_slot) const noexcept { return table_[warp_slot]; }
  // Whether `warp_slot` (one of warps()) can issue this cycle: operands ready, its pipe free, and for a memory
  // instruction room in the LSU queue.
  bool eligible(std::uint32_t warp_slot) const {
    const Warp& w = table_[warp_slot];
    if (earliest_issue(w, pipe_free_) > now_) return false;
    return !(w.head_ldst && !lsu_has_room_);
  }

 private:
  const std::vector<std::uint32_t>& warps_;
  const Warp* table_;
  const PipeFreeTimes& pipe_free_;
  Cycle now_ = 0;
  bool lsu_has_room_ = true;
};

class WarpSchedulerPolicy {
 public:
  virtual ~WarpSchedulerPolicy() = default;
  // The warp slot to issue from, or kNoWarp when none is eligible.
  virtual std::uint32_t pick(const IssueCandidates& candidates) = 0;
  // Exited warps were removed from the list; `remaining` warps are left (in the same relative order).
  virtual void warps_removed(std::size_t remaining) { (void)remaining; }
};

struct SchedulerPolicyType {
  std::string name;
  std::string description;
  std::unique_ptr<WarpSchedulerPolicy> (*make)();
};

// Registered policies, in registration order.
const std::vector<SchedulerPolicyType>& scheduler_policies();
std::vector<std::string> scheduler_policy_names();
// nullptr when no policy of that name is registered.
std::unique_ptr<WarpSchedulerPolicy> make_scheduler_policy(const std::string& name);

namespace detail {
struct SchedulerPolicyRegistrar {
  explicit SchedulerPolicyRegistrar(SchedulerPolicyType type);
};
}  // namespace detail

}  // namespace warpsim

// Registers `Class` (default-constructible, derived from WarpSchedulerPolicy) as policy `name`.
#define WARPSIM_REGISTER_SCHEDULER_POLICY(Class, name, description)                                          \
  static ::warpsim::detail::SchedulerPolicyRegistrar WARPSIM_SCHED_CONCAT(warpsim_policy_, __LINE__){        \
      ::warpsim::SchedulerPolicyType{name, description, []() -> std::unique_ptr<::warpsim::WarpSchedulerPolicy> { \
                                       return std::make_unique<Class>();                                       \
                                     }}}
#define WARPSIM_SCHED_CONCAT_(a, b) a##b
#define WARPSIM_SCHED_CONCAT(a, b) WARPSIM_SCHED_CONCAT_(a, b)
