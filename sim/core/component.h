// Base class of every simulated hardware block. A component lives in one clock domain; the domain ticks it
// only in cycles it asked for (Akita's "smart ticking", SST's clock handlers that go idle): tick() returns
// the next cycle it needs, or kSleep to wait for input. Ports wake their receiver when data arrives and
// their sender when space frees up. Nothing here knows about SystemC.
#pragma once

#include <string>

#include "sim/core/clock_domain.h"
#include "sim/core/types.h"

namespace warpsim {

class Component {
 public:
  Component(std::string path, ClockDomain& domain)
      : path_(std::move(path)), domain_(&domain), order_(domain.register_component(this)) {}
  virtual ~Component() = default;
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;

  // Does this cycle's work; returns the next cycle it needs (> now) or kSleep.
  virtual Cycle tick(Cycle now) = 0;
  // Human-readable state for "no progress" diagnoses (what is it waiting for?). Empty when idle.
  virtual std::string describe_state() const { return {}; }

  const std::string& path() const noexcept { return path_; }
  ClockDomain& domain() const noexcept { return *domain_; }

  // Asks to be ticked at `cycle` of its own domain. Every request stands: a component woken earlier is still
  // ticked at `cycle` too (a tick must therefore tolerate having nothing to do). Repeated requests for the
  // same cycle tick it once.
  void wake_at(Cycle cycle) {
    if (cycle == last_wake_request_) return;
    last_wake_request_ = cycle;
    domain_->schedule(this, cycle);
  }
  // Asks to be ticked in the next cycle of its domain (from within its own or another domain's tick).
  void wake_next() { wake_at(domain_->now() + 1); }
  // Position in its domain's fixed tick order (construction order).
  std::uint32_t order() const noexcept { return order_; }

 private:
  friend class ClockDomain;
  std::string path_;
  ClockDomain* domain_;
  std::uint32_t order_;
  Cycle last_wake_request_ = kSleep;
};

}  // namespace warpsim
