#include "sim/registry/registry.h"

#include <algorithm>
#include <stdexcept>

#include "sim/core/error.h"

namespace warpsim {

// A function-local static: built on first use, so registrars in other translation units may run in any order.
Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

void Registry::add(ComponentType type) {
  const bool duplicate = std::any_of(types_.begin(), types_.end(), [&](const ComponentType& t) {
    return t.section == type.section && t.impl == type.impl;
  });
  WARPSIM_ASSERT(!duplicate, "implementation '" + type.impl + "' of section '" + type.section +
                                 "' is registered twice");
  WARPSIM_ASSERT(!type.section.empty() && !type.impl.empty(), "a component needs a section and an impl name");
  types_.push_back(std::move(type));
}

const ComponentType* Registry::find(const std::string& section, const std::string& impl) const {
  for (const ComponentType& t : types_) {
    // The first implementation registered for a section is its default.
    if (t.section == section && (impl.empty() || t.impl == impl)) return &t;
  }
  return nullptr;
}

std::vector<std::string> Registry::sections() const {
  std::vector<std::string> names;
  for (const ComponentType& t : types_) {
    if (std::find(names.begin(), names.end(), t.section) == names.end()) names.push_back(t.section);
  }
  return names;
}

std::vector<const ComponentType*> Registry::implementations(const std::string& section) const {
  std::vector<const ComponentType*> impls;
  for (const ComponentType& t : types_) {
    if (t.section == section) impls.push_back(&t);
  }
  return impls;
}

void Registry::missing_factory(const std::string& section, const std::string& impl) {
  throw std::logic_error("registry: no factory for implementation '" + impl + "' of section '" + section +
                         "' with the requested interface (not registered, or registered as another interface)");
}

}  // namespace warpsim
