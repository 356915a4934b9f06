// A bounded, latency-carrying one-way channel between two components, possibly in different clock domains.
// The only way components exchange data. Every message takes at least one receiver cycle, so a message sent
// in a cycle is never seen in that cycle. Components due in the same cycle run in a fixed order (construction
// order), which makes results deterministic; a shared resource that serves senders in call order (the
// crossbar's bandwidth reservations) still favours earlier components within one cycle.
//
//   sender:   if (port.can_send()) port.send(msg);      // wakes the receiver at the delivery cycle
//             else port.wait_for_space(this);           // back-pressure: woken when the receiver pops
//   receiver: while (port.ready()) { use(port.front()); port.pop(); }   // pop wakes a sender that was blocked
//
// Ports are bounded: the capacity is part of the receiver's contract (a DRAM controller's queue depth, say).
// `Port::kUnbounded` is allowed only where something else bounds the traffic, and says so at its use.
#pragma once

#include <cstdint>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/component.h"
#include "sim/core/error.h"
#include "sim/core/probe.h"
#include "sim/core/ring_queue.h"

namespace warpsim {

// What a port's probe points report: the message, and the receiver cycle it is (was) due.
template <class T>
struct PortEvent {
  const T& msg;
  Cycle delivery;
};

template <class T>
class Port {
 public:
  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);

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
  // A sender that found the port full asks to be woken when a message leaves it (any number of senders).
  void wait_for_space(Component* sender) {
    if (std::find(waiting_senders_.begin(), waiting_senders_.end(), sender) == waiting_senders_.end())
      waiting_senders_.push_back(sender);
  }
  void send(T msg) {
    WARPSIM_ASSERT(can_send(), "port '" + name_ + "' overflow");
    ClockDomain& rx = receiver_->domain();
    // Delivery counts from the receiver cycle in progress when the sender acts.
    Cycle deliver = rx.cycle_at_or_before(sender_->domain().now_fs()) + latency_;
    if (!queue_.empty() && queue_.back().ready > deliver) deliver = queue_.back().ready;  // FIFO order
    enqueue(std::move(msg), deliver);
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
      if (sent_probe_.active()) sent_probe_.notify(PortEvent<T>{msg, deliver});
      return;
    }
    if (!queue_.empty() && queue_.back().ready > deliver) deliver = queue_.back().ready;
    enqueue(std::move(msg), deliver);
  }

  bool ready() const noexcept {
    return !queue_.empty() && queue_.front().ready <= receiver_->domain().now();
  }
  T& front() { return queue_.front().msg; }
  void pop() {
    const bool was_full = !can_send();
    if (received_probe_.active()) received_probe_.notify(PortEvent<T>{queue_.front().msg, queue_.front().ready});
    queue_.pop_front();
    if (!was_full) return;
    const TimeFs now = receiver_->domain().now_fs();
    if (sender_) sender_->wake_at(sender_->domain().cycle_at_or_before(now) + 1);
    for (Component* s : waiting_senders_) s->wake_at(s->domain().cycle_at_or_before(now) + 1);
    waiting_senders_.clear();
  }
  // Cycle at which the front message becomes available (kSleep when empty).
  Cycle front_ready() const noexcept { return queue_.empty() ? kSleep : queue_.front().ready; }
  std::size_t occupancy() const noexcept { return queue_.size(); }
  std::uint64_t messages_sent() const noexcept { return sent_; }
  const std::string& name() const noexcept { return name_; }
  std::size_t capacity() const noexcept { return capacity_; }
  // Probe points: every message sent (with its delivery cycle), every message taken by the receiver.
  ProbePoint<PortEvent<T>>& sent_probe() noexcept { return sent_probe_; }
  ProbePoint<PortEvent<T>>& received_probe() noexcept { return received_probe_; }
  void add_probes(ProbeRegistry& probes) {
    probes.add(name_ + ".send", sent_probe_);
    probes.add(name_ + ".receive", received_probe_);
  }

 private:
  void enqueue(T msg, Cycle deliver) {
    if (sent_probe_.active()) sent_probe_.notify(PortEvent<T>{msg, deliver});
    queue_.push_back(Entry{deliver, std::move(msg)});
    ++sent_;
    receiver_->wake_at(deliver);
  }

  struct Entry {
    Cycle ready;
    T msg;
  };
  std::string name_;
  Cycle latency_;
  std::size_t capacity_;
  Component* sender_ = nullptr;
  Component* receiver_ = nullptr;
  RingQueue<Entry> queue_;
  std::function<bool(const T&, Cycle)> on_send_;
  std::vector<Component*> waiting_senders_;
  ProbePoint<PortEvent<T>> sent_probe_, received_probe_;
  std::uint64_t sent_ = 0;
};

}  // namespace warpsim
