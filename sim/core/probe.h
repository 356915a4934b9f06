// Probe points (gem5's ProbePoint, Akita's hooks): a component announces events at named points, and anything
// that wants to watch them (an energy model, a tracer, a timeline) listens by name, without editing the component.
// A point nobody listens to costs one branch.
//
//   component:  ProbePoint<DramAccess> access_;  ctx.probes.add(path() + ".access", access_);
//               if (access_.active()) access_.notify(DramAccess{...});
//   observer:   probes.listen<DramAccess>("hbm.channel[*].access", [&](const DramAccess& a) { ... });
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <typeindex>
#include <vector>

#include "sim/core/error.h"

namespace warpsim {

template <class Event>
class ProbePoint {
 public:
  using Listener = std::function<void(const Event&)>;
  bool active() const noexcept { return !listeners_.empty(); }
  void notify(const Event& event) const {
    for (const Listener& l : listeners_) l(event);
  }
  void listen(Listener l) { listeners_.push_back(std::move(l)); }

 private:
  std::vector<Listener> listeners_;
};

// Every probe point of a built GPU, by hierarchical name ("l2.slice[3].access", "hbm.channel[0].request.send").
class ProbeRegistry {
 public:
  template <class Event>
  void add(std::string name, ProbePoint<Event>& point) {
    for (const Entry& e : entries_) WARPSIM_ASSERT(e.name != name, "probe point '" + name + "' added twice");
    entries_.push_back(Entry{std::move(name), std::type_index(typeid(Event)), &point});
  }

  // Attaches `listener` to every point whose name matches `pattern` ('*' stands for any run of characters, '?'
  // for one; brackets are literal, so "l2.slice[*].access" is every slice) and returns how many it attached to.
  // A match carrying another event type than the listener expects is a programming error (std::logic_error).
  template <class Event>
  std::size_t listen(const std::string& pattern, typename ProbePoint<Event>::Listener listener) {
    std::size_t matched = 0;
    for (const Entry& e : entries_) {
      if (!wildcard_match(pattern, e.name)) continue;
      if (e.type != std::type_index(typeid(Event)))
        throw std::logic_error("probe point '" + e.name + "' carries another event type than the listener expects");
      static_cast<ProbePoint<Event>*>(e.point)->listen(listener);
      ++matched;
    }
    return matched;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const Entry& e : entries_) n.push_back(e.name);
    return n;
  }

 private:
  // Glob with '*' and '?' only (iterative, with backtracking to the last '*').
  static bool wildcard_match(const std::string& pattern, const std::string& name) {
    std::size_t p = 0, n = 0, star = std::string::npos, resume = 0;
    while (n < name.size()) {
      if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
        ++p;
        ++n;
      } else if (p < pattern.size() && pattern[p] == '*') {
        star = p++;
        resume = n;
      } else if (star != std::string::npos) {
        p = star + 1;
        n = ++resume;
      } else {
        return false;
      }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
  }

  struct Entry {
    std::string name;
    std::type_index type;
    void* point;
  };
  std::vector<Entry> entries_;
};

}  // namespace warpsim
