// A FIFO queue in one power-of-two ring that grows by doubling and never shrinks: for the queues on the hot path
// (port queues, per-warp group lists), where std::deque allocates a block map on construction and allocates and
// frees blocks as the queue wanders through memory. Once a queue has reached its working size, pushes and pops
// do not touch the allocator.
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

namespace warpsim {

template <class T>
class RingQueue {
 public:
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }

  T& front() noexcept { return slots_[head_]; }
  const T& front() const noexcept { return slots_[head_]; }
  T& back() noexcept { return slots_[(head_ + size_ - 1) & mask_]; }
  const T& back() const noexcept { return slots_[(head_ + size_ - 1) & mask_]; }
  // i-th element from the front.
  T& operator[](std::size_t i) noexcept { return slots_[(head_ + i) & mask_]; }
  const T& operator[](std::size_t i) const noexcept { return slots_[(head_ + i) & mask_]; }

  void push_back(T value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & mask_] = std::move(value);
    ++size_;
  }
  void pop_front() {
    if constexpr (!std::is_trivially_destructible_v<T>) slots_[head_] = T{};  // release what it holds now
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void clear() {
    while (!empty()) pop_front();
    head_ = 0;
  }

  template <class Q, class V>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::remove_const_t<V>;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;
    Iter(Q* q, std::size_t i) : q_(q), i_(i) {}
    V& operator*() const { return (*q_)[i_]; }
    V* operator->() const { return &(*q_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    Q* q_;
    std::size_t i_;
  };
  using iterator = Iter<RingQueue, T>;
  using const_iterator = Iter<const RingQueue, const T>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 8 : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
    mask_ = slots_.size() - 1;
  }

  std::vector<T> slots_;
  std::size_t head_ = 0, size_ = 0, mask_ = 0;
};

}  // namespace warpsim
