// Open-addressing hash map from 64-bit keys (line addresses) to 32-bit values (pool indices), for the
// miss-tracking tables on the hot path. Linear probing with backward-shift deletion: no tombstones, no
// allocation after the table reaches its working size, iteration-free (only find/insert/erase).
#pragma once

#include <cstdint>
#include <vector>

namespace warpsim {

class FlatMap64 {
 public:
  static constexpr std::uint32_t kNone = ~0u;

  explicit FlatMap64(std::size_t expected = 64) { rehash(capacity_for(expected)); }

  std::uint32_t find(std::uint64_t key) const noexcept {
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.value == kNone) return kNone;
      if (e.key == key) return e.value;
    }
  }
  // Inserts or overwrites.
  void insert(std::uint64_t key, std::uint32_t value) {
    if ((size_ + 1) * 2 > table_.size()) rehash(table_.size() * 2);
    std::size_t i = slot(key);
    while (table_[i].value != kNone && table_[i].key != key) i = (i + 1) & mask_;
    if (table_[i].value == kNone) ++size_;
    table_[i] = Entry{key, value};
  }
  void erase(std::uint64_t key) noexcept {
    std::size_t i = slot(key);
    while (table_[i].value != kNone && table_[i].key != key) i = (i + 1) & mask_;
    if (table_[i].value == kNone) return;
    --size_;
    // Backward-shift: move later entries of the probe run into the hole when that shortens their probe.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; table_[j].value != kNone; j = (j + 1) & mask_) {
      const std::size_t home = slot(table_[j].key);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        table_[hole] = table_[j];
        hole = j;
      }
    }
    table_[hole] = Entry{};
  }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::uint32_t value = kNone;
  };
  static std::size_t capacity_for(std::size_t n) {
    std::size_t c = 16;
    while (c < n * 2) c *= 2;
    return c;
  }
  std::size_t slot(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;  // Fibonacci hashing
  }
  void rehash(std::size_t capacity) {
    std::vector<Entry> old;
    old.swap(table_);
    table_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    size_ = 0;
    for (const Entry& e : old)
      if (e.value != kNone) insert(e.key, e.value);
  }
  std::vector<Entry> table_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace warpsim
