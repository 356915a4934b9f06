#include "sim/core/timing_wheel.h"

#include "sim/core/error.h"

namespace warpsim {

namespace {
constexpr std::size_t kMask = TimingWheel::kBuckets - 1;
}

std::uint32_t TimingWheel::add_member(Component* c) {
  const auto index = static_cast<std::uint32_t>(members_.size());
  members_.push_back(c);
  const std::size_t words = (members_.size() + 63) / 64;
  if (words != words_) {  // widen every bucket, keeping what is scheduled
    std::vector<std::uint64_t> wider(kBuckets * words, 0);
    for (std::size_t b = 0; b < kBuckets; ++b)
      for (std::size_t w = 0; w < words_; ++w) wider[b * words + w] = bits_[b * words_ + w];
    bits_.swap(wider);
    words_ = words;
  }
  return index;
}

void TimingWheel::set(std::size_t slot, std::uint32_t member) {
  bits_[slot * words_ + member / 64] |= std::uint64_t{1} << (member % 64);
  occupied_[slot / 64] |= std::uint64_t{1} << (slot % 64);
}

void TimingWheel::push(Cycle cycle, std::uint32_t member) {
  WARPSIM_ASSERT(cycle >= base_, "timing wheel: scheduling into the past");
  WARPSIM_ASSERT(member < members_.size(), "timing wheel: unknown component");
  if (cycle - base_ < kBuckets) set(cycle & kMask, member);
  else far_.push(Far{cycle, member});
}

bool TimingWheel::empty() const {
  if (!far_.empty()) return false;
  for (std::uint64_t w : occupied_)
    if (w) return false;
  return true;
}

Cycle TimingWheel::next_cycle() const {
  Cycle best = far_.empty() ? kSleep : far_.top().cycle;
  // Scan the occupancy bitmap starting at base_, wrapping around once.
  const std::size_t start = base_ & kMask;
  constexpr std::size_t kWords = kBuckets / 64;
  for (std::size_t i = 0; i <= kWords; ++i) {
    const std::size_t word_index = ((start / 64) + i) % kWords;
    std::uint64_t word = occupied_[word_index];
    if (i == 0) word &= ~std::uint64_t{0} << (start % 64);              // bits before start belong to the wrap
    if (i == kWords) word &= (std::uint64_t{1} << (start % 64)) - 1;    // the wrapped part of the first word
    if (word == 0) continue;
    const std::size_t slot = word_index * 64 + static_cast<std::size_t>(__builtin_ctzll(word));
    const Cycle cycle = base_ + ((slot - start) & kMask);
    return cycle < best ? cycle : best;
  }
  return best;
}

void TimingWheel::migrate_far() {
  while (!far_.empty() && far_.top().cycle - base_ < kBuckets) {
    set(far_.top().cycle & kMask, far_.top().member);
    far_.pop();
  }
}

void TimingWheel::take(Cycle cycle, std::vector<Component*>& out) {
  WARPSIM_ASSERT(cycle >= base_, "timing wheel: taking a past cycle");
  base_ = cycle;
  migrate_far();
  out.clear();
  const std::size_t slot = cycle & kMask;
  std::uint64_t* words = &bits_[slot * words_];
  for (std::size_t w = 0; w < words_; ++w) {
    for (std::uint64_t bits = words[w]; bits; bits &= bits - 1)
      out.push_back(members_[w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))]);
    words[w] = 0;
  }
  occupied_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
}

}  // namespace warpsim
