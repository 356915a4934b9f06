// Statistics as plain counters registered once (gem5 ADD_STAT / Ramulator register_stat): a component keeps
// `std::uint64_t` members and increments them like any integer; the registry only holds pointers, reads them
// at snapshot time and never sits in the hot path. Per-kernel figures are differences of two snapshots (a
// gauge, such as dirty bytes held, is read as it stands at the end instead).
//
// Names are hierarchical. A component instance has a path ("l2.slice[3]") and a kind, the name its instances
// are summed under ("l2"): counter `read_sectors` is reported as `l2.slice[3].read_sectors` and
// `l2.read_sectors`. Components also declare their derived metrics next to their counters (gem5's formulas):
// a ratio of two of their counters (a hit rate), or a counter against the component's own peak rate (a
// utilisation). The summary computes only figures that cross components.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpsim {

struct StatEntry {
  std::string component;    // instance path, e.g. "sm[17]", "l2.slice[3]"
  std::string kind;         // what instances are summed under, e.g. "sm", "l2", "noc.slice_port"
  std::string name;         // e.g. "warp_instructions"
  std::string unit;         // e.g. "warp-instructions", "cycles", "bytes"
  std::string description;
  const std::uint64_t* value;
  bool gauge = false;       // a level (read at the end), not a count (differenced)
};

// A derived figure of one component: numerator / denominator (both counters of the same component), or
// numerator / (elapsed seconds * peak_per_second) when `denominator` is empty (a utilisation).
struct MetricEntry {
  std::string component, kind, name, unit, description;
  std::string numerator, denominator;
  double peak_per_second = 0.0;
};

using StatSnapshot = std::vector<std::uint64_t>;

// One named value of a report. For metrics over several instances, `max` is the largest instance's value
// (the busiest port, the hottest slice): the mean alone hides the limiter.
struct StatValue {
  std::string name, unit;
  double value = 0.0;
  double max = 0.0;
  bool is_counter = true;
};

struct StatReport {
  std::vector<StatValue> totals;     // per kind: "l2.read_sectors", "l2.hit_rate" (counters, then metrics)
  std::vector<StatValue> instances;  // per instance: "l2.slice[3].read_sectors", "l2.slice[3].hit_rate"
  const StatValue* find(const std::string& name) const;  // among totals
};

class StatsRegistry {
 public:
  void add(StatEntry entry) { entries_.push_back(std::move(entry)); }
  void add_metric(MetricEntry metric) { metrics_.push_back(std::move(metric)); }
  const std::vector<StatEntry>& entries() const noexcept { return entries_; }
  const std::vector<MetricEntry>& metrics() const noexcept { return metrics_; }
  StatSnapshot snapshot() const;

  // Sum of stat `name` over all components of `kind`, between two snapshots (to - from; a gauge: its level at `to`).
  std::uint64_t sum(const std::string& kind, const std::string& name, const StatSnapshot& from,
                    const StatSnapshot& to) const;
  // Largest per-instance difference (e.g. the busiest SM).
  std::uint64_t max(const std::string& kind, const std::string& name, const StatSnapshot& from,
                    const StatSnapshot& to) const;
  // Every counter and metric between two snapshots, `seconds` apart in simulated time.
  StatReport report(const StatSnapshot& from, const StatSnapshot& to, double seconds) const;

 private:
  std::uint64_t delta(std::size_t i, const StatSnapshot& from, const StatSnapshot& to) const {
    return entries_[i].gauge ? to[i] : to[i] - from[i];
  }
  std::vector<StatEntry> entries_;
  std::vector<MetricEntry> metrics_;
};

// Registration helper for one component:
//   StatGroup g(ctx.stats, path(), "l2");
//   g.add("read_sectors", "sectors", "...", read_sectors_).ratio("hit_rate", "read_hit_sectors", "read_sectors", "...");
class StatGroup {
 public:
  StatGroup(StatsRegistry& registry, std::string component, std::string kind)
      : registry_(&registry), component_(std::move(component)), kind_(std::move(kind)) {}
  StatGroup& add(std::string name, std::string unit, std::string description, const std::uint64_t& value) {
    registry_->add(StatEntry{component_, kind_, std::move(name), std::move(unit), std::move(description), &value});
    return *this;
  }
  StatGroup& gauge(std::string name, std::string unit, std::string description, const std::uint64_t& value) {
    registry_->add(StatEntry{component_, kind_, std::move(name), std::move(unit), std::move(description), &value, true});
    return *this;
  }
  StatGroup& ratio(std::string name, std::string numerator, std::string denominator, std::string description) {
    registry_->add_metric(MetricEntry{component_, kind_, std::move(name), "ratio", std::move(description),
                                      std::move(numerator), std::move(denominator), 0.0});
    return *this;
  }
  // counter / (elapsed seconds * peak_per_second): the fraction of this instance's peak that was used.
  StatGroup& utilization(std::string name, std::string counter, double peak_per_second, std::string description) {
    registry_->add_metric(MetricEntry{component_, kind_, std::move(name), "fraction of peak", std::move(description),
                                      std::move(counter), "", peak_per_second});
    return *this;
  }

 private:
  StatsRegistry* registry_;
  std::string component_, kind_;
};

}  // namespace warpsim
