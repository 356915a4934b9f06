#include "sim/core/simulation.h"

#include <algorithm>

namespace warpsim {

ClockDomain& Simulation::add_domain(const std::string& name, double frequency_hz) {
  domains_.push_back(std::make_unique<ClockDomain>(name, frequency_hz));
  return *domains_.back();
}

ClockDomain* Simulation::find_domain(const std::string& name) const {
  for (const auto& d : domains_)
    if (d->name() == name) return d.get();
  return nullptr;
}

TimeFs Simulation::next_time() const {
  TimeFs t = kTimeNever;
  for (const auto& d : domains_) t = std::min(t, d->next_time());
  return t;
}

void Simulation::run_at(TimeFs t) {
  for (const auto& d : domains_)
    if (d->next_time() == t) d->run_cycle(d->next_cycle());
}

bool Simulation::run(const std::function<bool()>& finished) {
  while (!finished()) {
    const TimeFs t = next_time();
    if (t == kTimeNever) break;
    run_at(t);
  }
  return finished();
}

}  // namespace warpsim
