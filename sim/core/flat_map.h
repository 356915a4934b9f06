// Open-addressing hash map from 64-bit keys (line addresses) to small values stored in the table itself, for
// the miss-tracking tables on the hot path: one probe touches key and value together. Linear probing with
// backward-shift deletion: no tombstones, and no allocation once the table has reached its working size.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace warpsim {

template <class V>
class FlatMap64 {
 public:
  explicit FlatMap64(std::size_t expected = 64) { rehash(capacity_for(expected)); }

  V* find(std::uint64_t key) noexcept {
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (!e.used) return nullptr;
      if (e.key == key) return &e.value;
    }
  }
  // The value of `key`, default-constructed if it was absent. References stay valid until the next insert.
  V& insert(std::uint64_t key) {
    if ((size_ + 1) * 2 > table_.size()) rehash(table_.size() * 2);
    std::size_t i = slot(key);
    while (table_[i].used && table_[i].key != key) i = (i + 1) & mask_;
    Entry& e = table_[i];
    if (!e.used) {
      ++size_;
      e.used = true;
      e.key = key;
      e.value = V{};
    }
    return e.value;
  }
  void erase(std::uint64_t key) noexcept {
    std::size_t i = slot(key);
    while (table_[i].used && table_[i].key != key) i = (i + 1) & mask_;
    if (!table_[i].used) return;
    --size_;
    // Backward shift: move later entries of the probe run into the hole when that shortens their probe.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; table_[j].used; j = (j + 1) & mask_) {
      const std::size_t home = slot(table_[j].key);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        table_[hole] = std::move(table_[j]);
        hole = j;
      }
    }
    table_[hole].used = false;
  }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

 private:
  struct Entry {
    std::uint64_t key = 0;
    bool used = false;
    V value{};
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
    for (Entry& e : old)
      if (e.used) insert(e.key) = std::move(e.value);
  }
  std::vector<Entry> table_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace warpsim
