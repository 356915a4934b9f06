// A bucketed timing wheel of components due at future cycles. Near-future cycles (within kBuckets) go into
// buckets with an occupancy bitmap, so finding the next due cycle is a few word scans; far-future ones wait in
// a heap until the wheel comes near them. A component may have several entries (one per cycle it asked for).
#pragma once

#include <array>
#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/types.h"

namespace warpsim {

class Component;

class TimingWheel {
 public:
  static constexpr std::size_t kBuckets = 4096;  // power of two

  // `cycle` must be >= the wheel's current base (the cycle being or last processed).
  void push(Cycle cycle, Component* c);
  // Earliest cycle that has an entry, or kSleep.
  Cycle next_cycle() const;
  // Moves the base to `cycle` (must be <= next_cycle()) and returns the components due then, leaving the
  // bucket empty. Components pushed for `cycle` while the caller processes the returned list land in a
  // fresh bucket vector and are returned by the next call with the same cycle.
  void take(Cycle cycle, std::vector<Component*>& out);
  bool empty() const { return size_ == 0; }
  Cycle base() const { return base_; }

 private:
  struct Far {
    Cycle cycle;
    std::uint64_t seq;  // FIFO among equal cycles, for determinism
    Component* c;
    bool operator>(const Far& o) const { return cycle != o.cycle ? cycle > o.cycle : seq > o.seq; }
  };
  void migrate_far();
  std::array<std::vector<Component*>, kBuckets> buckets_;
  std::array<std::uint64_t, kBuckets / 64> bitmap_{};
  std::priority_queue<Far, std::vector<Far>, std::greater<Far>> far_;
  std::uint64_t far_seq_ = 0;
  Cycle base_ = 0;
  std::size_t size_ = 0;
};

}  // namespace warpsim
