// A bucketed timing wheel of the components due at future cycles of one clock domain. Each near-future cycle
// (within kBuckets) is a bucket holding one bit per component of the domain, so a component asked for twice
// in a cycle is due once, and a bucket is read out in component order: the fixed order in which a domain ticks
// what is due, whoever asked first. An occupancy bitmap over the buckets finds the next due cycle in a few word
// scans; far-future requests wait in a heap until the wheel comes near them.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/types.h"

namespace warpsim {

class Component;

class TimingWheel {
 public:
  static constexpr std::size_t kBuckets = 4096;  // power of two

  // Components are known by their index in this list (their tick order).
  std::uint32_t add_member(Component* c);
  // `cycle` must be >= the wheel's current base (the cycle being or last processed).
  void push(Cycle cycle, std::uint32_t member);
  // Earliest cycle that has an entry, or kSleep.
  Cycle next_cycle() const;
  // Moves the base to `cycle` (must be <= next_cycle()) and returns the components due then, in member order,
  // leaving the bucket empty.
  void take(Cycle cycle, std::vector<Component*>& out);
  bool empty() const;
  Cycle base() const { return base_; }

 private:
  struct Far {
    Cycle cycle;
    std::uint32_t member;
    bool operator>(const Far& o) const { return cycle != o.cycle ? cycle > o.cycle : member > o.member; }
  };
  void set(std::size_t slot, std::uint32_t member);
  void migrate_far();
  std::vector<Component*> members_;
  std::size_t words_ = 0;                   // 64-bit words per bucket
  std::vector<std::uint64_t> bits_;         // kBuckets * words_
  std::vector<std::uint64_t> occupied_ = std::vector<std::uint64_t>(kBuckets / 64, 0);  // bucket has any bit
  std::priority_queue<Far, std::vector<Far>, std::greater<Far>> far_;
  Cycle base_ = 0;
};

}  // namespace warpsim
