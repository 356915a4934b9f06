// A bounded, latency-carrying one-way channel between two components, possibly in different clock domains.
// The only way components exchange data. Every message takes at least one receiver cycle, so a message sent
// in a cycle is never seen in that cycle. Components due in the same cycle run in a fixed order (construction
// order), which makes results deterministic; a shared resource that serves senders in call order (the
// crossbar's bandwidth reservations) still favours earlier components within one cycle.
//
//   sender:   if (port.can_send()) port.send(msg);      // wakes the receiver at the delivery cycle
//   receiver: while (port.ready()) { use(port.front()); port.pop(); }   // pop wakes a sender that was blocked
#pragma once

#include <cstdint>
#include <algorithm>
#include <deque>
#include <functional>
#include <string>

#include "sim/core/component.h"
#include "sim/core/error.h"

namespace warpsim {

template <class T>
class Port {
 public:
  // latency: receiver-domain cycles from send to availability (>= 1). capacity: messages in flight + queued.
  Port(std::string name, Cycle latency, std::size_t capacity)
      : name_(std::move(name)), latency_(latency), capacity_(capacity) {
    WARPSIM_ASSERT(latency_ >= 1, "port '" + name_ + "' needs a latency of at least one cycle");
    WARPSIM_ASSERT(capacity_ >= 1, "port '" + name_ + "' needs a capacity of at least one message");
  }
  void bind(Component* sender, Component* receiver) {
    sender_ = sender;
    receiver_ = receiver;
  }

  // A receiver whose reaction to some messages only schedules work at or after their delivery cycle may take
  // them when they are sent, instead of being ticked at delivery: handler(msg, delivery_cycle) returns true
  // when it took the message, false to have it queued as usual. The handler must not change anything observable
  // before the delivery cycle, so that results do not depend on when, in global time, the sender ran.
  void take_on_send(std::function<bool(const T&, Cycle)> handler) { on_send_ = std::move(handler); }

  bool can_send() const noexcept { return queue_.size() < capacity_; }
  void send(T msg) {
    WARPSIM_ASSERT(can_send(), "port '" + name_ + "' overflow");
    ClockDomain& rx = receiver_->domain();
    // Delivery counts from the receiver cycle in progress when the sender acts.
    Cycle deliver = rx.cycle_at_or_before(sender_->domain().now_fs()) + latency_;
    if (!queue_.empty() && queue_.back().ready > deliver) deliver = queue_.back().ready;  // FIFO order
    queue_.push_back(Entry{deliver, std::move(msg)});
    ++sent_;
    receiver_->wake_at(deliver);
  }

  // Delivery at the first receiver cycle starting at or after `earliest` (global time), and at least one
  // receiver cycle after `now` (the sender's current time). For links that compute their own timing
  // (bandwidth reservations in a crossbar).
  void send_at(T msg, TimeFs earliest, TimeFs now) {
    WARPSIM_ASSERT(can_send(), "port '" + name_ + "' overflow");
    ClockDomain& rx = receiver_->domain();
    Cycle deliver = std::max(rx.cycle_at_or_after(earliest), rx.cycle_at_or_before(now) + 1);
    if (on_send_ && on_send_(msg, deliver)) {
      ++sent_;
      return;
    }
    if (!queue_.empty() && queue_.back().ready > deliver) deliver = queue_.back().ready;
    queue_.push_back(Entry{deliver, std::move(msg)});
    ++sent_;
    receiver_->wake_at(deliver);
  }

  bool ready() const noexcept {
    return !queue_.empty() && queue_.front().ready <= receiver_->domain().now();
  }
  T& front() { return queue_.front().msg; }
  void pop() {
    const bool was_full = !can_send();
    queue_.pop_front();
    if (was_full && sender_) sender_->wake_at(sender_->domain().cycle_at_or_before(receiver_->domain().now_fs()) + 1);
  }
  // Cycle at which the front message becomes available (kSleep when empty).
  Cycle front_ready() const noexcept { return queue_.empty() ? kSleep : queue_.front().ready; }
  std::size_t occupancy() const noexcept { return queue_.size(); }
  std::uint64_t messages_sent() const noexcept { return sent_; }
  const std::string& name() const noexcept { return name_; }

 private:
  struct Entry {
    Cycle ready;
    T msg;
  };
  std::string name_;
  Cycle latency_;
  std::size_t capacity_;
  Component* sender_ = nullptr;
  Component* receiver_ = nullptr;
  std::deque<Entry> queue_;
  std::function<bool(const T&, Cycle)> on_send_;
  std::uint64_t sent_ = 0;
};

}  // namespace warpsim
