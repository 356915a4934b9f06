#include "sim/registry/registry.h"

#include <algorithm>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/slots/slots.h"

namespace warpsim {

// A function-local static: built on first use, so registrars in other translation units may run in any order.
// The GPU's slots are declared here, explicitly, rather than by static registrars in a static library (which the
// linker would drop when nothing else in their file is referenced).
Registry& Registry::instance() {
  static Registry registry = [] {
    Registry r;
    declare_gpu_slots(r);
    return r;
  }();
  return registry;
}

void Registry::declare_slot(SlotDeclaration slot) {
  WARPSIM_ASSERT(this->slot(slot.section) == nullptr, "slot '" + slot.section + "' is declared twice");
  WARPSIM_ASSERT(!slot.default_impl.empty(), "slot '" + slot.section + "' needs a default implementation");
  slots_.push_back(std::move(slot));
}

const SlotDeclaration* Registry::slot(const std::string& section) const {
  for (const SlotDeclaration& s : slots_)
    if (s.section == section) return &s;
  return nullptr;
}

Schema Registry::schema(const ComponentType& type) const {
  Schema own = type.schema ? type.schema() : Schema(type.section, type.impl, type.description);
  const SlotDeclaration* s = slot(type.section);
  if (!s || !s->shared_schema) return own;
  Schema merged = s->shared_schema();
  merged.append(own);  // asserts that the implementation does not redeclare a shared parameter
  return merged;
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
  std::string wanted = impl;
  if (wanted.empty()) {
    if (const SlotDeclaration* s = slot(section)) {
      wanted = s->default_impl;
    } else {
      const auto impls = implementations(section);
      WARPSIM_ASSERT(impls.size() <= 1, "section '" + section + "' has several implementations but no declared "
                                        "slot naming its default (Registry::declare_slot)");
      return impls.empty() ? nullptr : impls.front();
    }
  }
  for (const ComponentType& t : types_)
    if (t.section == section && t.impl == wanted) return &t;
  WARPSIM_ASSERT(!impl.empty(), "the declared default implementation '" + wanted + "' of slot '" + section +
                                    "' is not registered (is its model linked in?)");
  return nullptr;
}

std::vector<std::string> Registry::sections() const {
  std::vector<std::string> names;
  // A slot declared without any implementation linked in is not a section a config can use.
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
