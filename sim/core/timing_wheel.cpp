#include "sim/core/timing_wheel.h"

#include "sim/core/error.h"

namespace warpsim {

namespace {
constexpr std::size_t kMask = TimingWheel::kBuckets - 1;
}

void TimingWheel::push(Cycle cycle, Component* c) {
  WARPSIM_ASSERT(cycle >= base_, "timing wheel: scheduling into the past");
  ++size_;
  if (cycle - base_ < kBuckets) {
    const std::size_t slot = cycle & kMask;
    buckets_[slot].push_back(c);
    bitmap_[slot / 64] |= std::uint64_t{1} << (slot % 64);
  } else {
    far_.push(Far{cycle, far_seq_++, c});
  }
}

Cycle TimingWheel::next_cycle() const {
  if (size_ == 0) return kSleep;
  Cycle best = far_.empty() ? kSleep : far_.top().cycle;
  // Scan the bitmap starting at base_, wrapping around once.
  const std::size_t start = base_ & kMask;
  constexpr std::size_t kWords = kBuckets / 64;
  for (std::size_t i = 0; i <= kWords; ++i) {
    const std::size_t word_index = ((start / 64) + i) % kWords;
    std::uint64_t word = bitmap_[word_index];
    if (i == 0) word &= ~std::uint64_t{0} << (start % 64);              // bits before start belong to the wrap
    if (i == kWords) word &= (std::uint64_t{1} << (start % 64)) - 1;    // the wrapped part of the first word
    if (word == 0) continue;
    const std::size_t slot = word_index * 64 + static_cast<std::size_t>(__builtin_ctzll(word));
    const Cycle offset = (slot - start) & kMask;
    const Cycle cycle = base_ + offset;
    return cycle < best ? cycle : best;
  }
  return best;
}

void TimingWheel::migrate_far() {
  while (!far_.empty() && far_.top().cycle - base_ < kBuckets) {
    const Far f = far_.top();
    far_.pop();
    const std::size_t slot = f.cycle & kMask;
    buckets_[slot].push_back(f.c);
    bitmap_[slot / 64] |= std::uint64_t{1} << (slot % 64);
  }
}

void TimingWheel::take(Cycle cycle, std::vector<Component*>& out) {
  WARPSIM_ASSERT(cycle >= base_, "timing wheel: taking a past cycle");
  base_ = cycle;
  migrate_far();
  out.clear();
  const std::size_t slot = cycle & kMask;
  out.swap(buckets_[slot]);
  bitmap_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
  size_ -= out.size();
}

}  // namespace warpsim
