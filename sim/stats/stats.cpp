#include "sim/stats/stats.h"

#include <algorithm>

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
    if (entries_[i].kind == kind && entries_[i].name == name) total += to[i] - from[i];
  return total;
}

std::uint64_t StatsRegistry::max(const std::string& kind, const std::string& name, const StatSnapshot& from,
                                 const StatSnapshot& to) const {
  std::uint64_t best = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].kind == kind && entries_[i].name == name) best = std::max(best, to[i] - from[i]);
  return best;
}

}  // namespace warpsim
