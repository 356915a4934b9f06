#include "sim/core/clock_domain.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/core/component.h"
#include "sim/core/error.h"

namespace warpsim {

ClockDomain::ClockDomain(std::string name, double frequency_hz)
    : name_(std::move(name)), freq_hz_(static_cast<std::uint64_t>(std::llround(frequency_hz))) {
  WARPSIM_ASSERT(freq_hz_ > 0, "clock domain '" + name_ + "' needs a positive frequency");
  const std::uint64_t g = std::gcd(kFsPerSecond, freq_hz_);
  period_num_ = kFsPerSecond / g;
  period_den_ = freq_hz_ / g;
}

namespace {
// floor(a * b / d) without overflow; 64-bit division when the product fits (the common case).
inline std::uint64_t mul_div(std::uint64_t a, std::uint64_t b, std::uint64_t d) noexcept {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  if ((p >> 64) == 0) return static_cast<std::uint64_t>(p) / d;
  return static_cast<std::uint64_t>(p / d);
}
}  // namespace

TimeFs ClockDomain::time_of(Cycle c) const noexcept { return mul_div(c, period_num_, period_den_); }

Cycle ClockDomain::cycle_at_or_before(TimeFs t) const noexcept {
  if (t == memo_time_) return memo_cycle_;
  // Largest c with floor(c * num / den) <= t  <=>  c * num < (t + 1) * den  <=>  c = floor(((t+1)*den - 1) / num).
  const unsigned __int128 x = (static_cast<unsigned __int128>(t) + 1) * period_den_ - 1;
  memo_cycle_ = (x >> 64) == 0 ? static_cast<std::uint64_t>(x) / period_num_ : static_cast<Cycle>(x / period_num_);
  memo_time_ = t;
  return memo_cycle_;
}

Cycle ClockDomain::cycle_at_or_after(TimeFs t) const noexcept {
  // Smallest c with floor(c * num / den) >= t  <=>  c * num >= t * den  <=>  c = ceil(t * den / num): one division.
  const unsigned __int128 x = static_cast<unsigned __int128>(t) * period_den_ + (period_num_ - 1);
  return (x >> 64) == 0 ? static_cast<std::uint64_t>(x) / period_num_ : static_cast<Cycle>(x / period_num_);
}

void ClockDomain::schedule(Component* c, Cycle cycle) {
  WARPSIM_ASSERT(cycle > now_ || (cycle == now_ && !running_),
                 "component '" + c->path() + "' scheduled in the past of domain '" + name_ + "'");
  wheel_.push(cycle, c->order());
  if (wake_listener_) {
    const TimeFs t = time_of(cycle);
    if (t < armed_time_) {
      armed_time_ = t;
      wake_listener_(t);
    }
  }
}

TimeFs ClockDomain::next_time() const {
  const Cycle c = wheel_.next_cycle();
  return c == kSleep ? kTimeNever : time_of(c);
}

void ClockDomain::run_cycle(Cycle cycle) {
  WARPSIM_ASSERT(cycle >= now_, "domain '" + name_ + "' asked to run a past cycle");
  now_ = cycle;
  running_ = true;
  wheel_.take(cycle, due_);  // in component order, each once
  bool any = false;
  // Components scheduled for this same cycle while we run land in the wheel, not in due_; by the port
  // latency rule (>= 1 cycle) that never happens, and schedule() asserts it.
  for (Component* c : due_) {
    ++ticks_;
    any = true;
    const Cycle next = c->tick(cycle);
    if (next != kSleep) {
      WARPSIM_ASSERT(next > cycle, "component '" + c->path() + "' asked to run again in the same cycle");
      c->wake_at(next);
    }
  }
  if (any) ++active_cycles_;
  running_ = false;
  const TimeFs next = next_time();
  armed_time_ = next;
}

}  // namespace warpsim
