#include "sim/stats/stats.h"

#include <algorithm>
#include <map>

#include "sim/core/error.h"

namespace warpsim {

StatSnapshot StatsRegistry::snapshot() const {
  StatSnapshot s;
  s.reserve(entries_.size());
  for (const auto& e : entries_) s.push_back(*e.value);
  return s;
}

std::uint64_t StatsRegistry::sum(const std::string& kind, const std::string& name, const StatSnapshot& from,
                                 const StatSnapshot& to) const {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].kind == kind && entries_[i].name == name) total += delta(i, from, to);
  return total;
}

std::uint64_t StatsRegistry::max(const std::string& kind, const std::string& name, const StatSnapshot& from,
                                 const StatSnapshot& to) const {
  std::uint64_t best = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].kind == kind && entries_[i].name == name) best = std::max(best, delta(i, from, to));
  return best;
}

const StatValue* StatReport::find(const std::string& name) const {
  for (const StatValue& v : totals)
    if (v.name == name) return &v;
  return nullptr;
}

StatReport StatsRegistry::report(const StatSnapshot& from, const StatSnapshot& to, double seconds) const {
  StatReport r;
  // Totals keep the order in which kinds and names first appear; instances keep registration order.
  std::map<std::pair<std::string, std::string>, std::size_t> total_index;
  std::map<std::pair<std::string, std::string>, std::uint64_t> by_instance;  // (component, name) -> value
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const StatEntry& e = entries_[i];
    const std::uint64_t v = delta(i, from, to);
    by_instance[{e.component, e.name}] = v;
    r.instances.push_back(StatValue{e.component + "." + e.name, e.unit, static_cast<double>(v), static_cast<double>(v), true});
    auto [it, fresh] = total_index.emplace(std::make_pair(e.kind, e.name), r.totals.size());
    if (fresh) r.totals.push_back(StatValue{e.kind + "." + e.name, e.unit, 0.0, 0.0, true});
    StatValue& t = r.totals[it->second];
    t.value += static_cast<double>(v);
    t.max = std::max(t.max, static_cast<double>(v));
  }
  // Metrics: per instance, and over all instances of a kind (sums of numerators over sums of denominators).
  struct Aggregate {
    std::string unit;
    double num = 0, den = 0, max = 0;
  };
  std::vector<std::pair<std::string, Aggregate>> kinds;  // "l2.hit_rate" -> sums, in first-seen order
  auto lookup = [&](const MetricEntry& m, const std::string& counter) {
    auto it = by_instance.find({m.component, counter});
    WARPSIM_ASSERT(it != by_instance.end(), "metric " + m.component + "." + m.name + " names counter '" + counter +
                                                "', which the component does not register");
    return static_cast<double>(it->second);
  };
  for (const MetricEntry& m : metrics_) {
    const double num = lookup(m, m.numerator);
    const double den = m.denominator.empty() ? seconds * m.peak_per_second : lookup(m, m.denominator);
    const double v = den > 0 ? num / den : 0.0;
    r.instances.push_back(StatValue{m.component + "." + m.name, m.unit, v, v, false});
    const std::string total_name = m.kind + "." + m.name;
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == total_name; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {total_name, Aggregate{m.unit}});
    it->second.num += num;
    it->second.den += den;
    it->second.max = std::max(it->second.max, v);
  }
  for (const auto& [name, a] : kinds)
    r.totals.push_back(StatValue{name, a.unit, a.den > 0 ? a.num / a.den : 0.0, a.max, false});
  return r;
}

}  // namespace warpsim
