// Statistics as plain counters registered once (gem5 ADD_STAT / Ramulator register_stat): a component keeps
// `std::uint64_t` members and increments them like any integer; the registry only holds pointers, reads them
// at snapshot time and never sits in the hot path. Per-kernel figures are differences of two snapshots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpsim {

struct StatEntry {
  std::string component;    // instance path, e.g. "gpu.sm[17]"
  std::string kind;         // component kind, e.g. "sm", for sums over all instances
  std::string name;         // e.g. "warp_instructions"
  std::string unit;         // e.g. "warp-instructions", "cycles", "bytes"
  std::string description;
  const std::uint64_t* value;
};

using StatSnapshot = std::vector<std::uint64_t>;

class StatsRegistry {
 public:
  void add(StatEntry entry) { entries_.push_back(std::move(entry)); }
  const std::vector<StatEntry>& entries() const noexcept { return entries_; }
  StatSnapshot snapshot() const;

  // Sum of stat `name` over all components of `kind`, between two snapshots (to - from).
  std::uint64_t sum(const std::string& kind, const std::string& name, const StatSnapshot& from,
                    const StatSnapshot& to) const;
  // Largest per-instance difference (e.g. the busiest SM).
  std::uint64_t max(const std::string& kind, const std::string& name, const StatSnapshot& from,
                    const StatSnapshot& to) const;

 private:
  std::vector<StatEntry> entries_;
};

// Registration helper for one component: `StatGroup g(reg, path, "sm"); g.add("cycles", "cycles", "...", c_);`
class StatGroup {
 public:
  StatGroup(StatsRegistry& registry, std::string component, std::string kind)
      : registry_(&registry), component_(std::move(component)), kind_(std::move(kind)) {}
  StatGroup& add(std::string name, std::string unit, std::string description, const std::uint64_t& value) {
    registry_->add(StatEntry{component_, kind_, std::move(name), std::move(unit), std::move(description), &value});
    return *this;
  }

 private:
  StatsRegistry* registry_;
  std::string component_, kind_;
};

}  // namespace warpsim
