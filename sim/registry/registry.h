// Registry of component implementations, after Ramulator 2's interface/implementation factory and SST's
// self-documenting ELI. A config section (e.g. `hbm:`) names a slot; its `impl:` key picks an implementation.
// A slot is declared once (declare_slot): the parameters every implementation shares (e.g. `hbm.channels`,
// `hbm.bandwidth`) and the name of its default implementation. Each implementation registers its own Schema
// on top, so that configs are validated against the union and `warpsim describe` prints it. Sections that only
// hold parameters (`gpu:`, `clocks:`) register one schema and no factory.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/config/params.h"
#include "sim/config/schema.h"

namespace warpsim {

class Config;

// Host bytes one instance of an implementation will allocate (its large state: tag arrays, per-warp state),
// from its section's parameters and the whole config, before anything is built: the model's memory estimate.
using MemoryEstimator = std::uint64_t (*)(const Params& params, const Config& config);

struct ComponentType {
  std::string section;      // config section / slot name
  std::string impl;         // implementation name
  std::string description;
  Schema (*schema)() = nullptr;
  std::any factory;         // Factory<Interface>, see below; empty for sections that only hold parameters
  MemoryEstimator estimate_bytes = nullptr;  // the class's static estimate_bytes, if it has one (small otherwise)
};

// What every implementation of a slot shares (declared once, next to the slot's interface in sim/slots).
struct SlotDeclaration {
  std::string section;
  std::string default_impl;  // named explicitly: registration order never decides
  std::string description;
  Schema (*shared_schema)() = nullptr;
};

class BuildContext;  // sim/slots: domains, stats, probes, named lookups of the parts already built

template <class Interface>
using Factory = std::function<std::unique_ptr<Interface>(BuildContext&, const Params&, unsigned index)>;

class Registry {
 public:
  static Registry& instance();

  void add(ComponentType type);
  void declare_slot(SlotDeclaration slot);
  // nullptr when unknown. impl "" means the slot's default implementation (its declared default, or the only
  // implementation of a section that declares no slot).
  const ComponentType* find(const std::string& section, const std::string& impl = "") const;
  const SlotDeclaration* slot(const std::string& section) const;
  // The parameters of an implementation: its slot's shared ones first, then its own.
  Schema schema(const ComponentType& type) const;
  std::vector<std::string> sections() const;  // in registration order
  std::vector<const ComponentType*> implementations(const std::string& section) const;

  template <class Interface>
  std::unique_ptr<Interface> create(const std::string& section, const Params& params, BuildContext& ctx,
                                    unsigned index) const {
    const ComponentType* t = find(section, params.impl());
    const auto* f = t ? std::any_cast<Factory<Interface>>(&t->factory) : nullptr;
    if (!f) missing_factory(section, params.impl());
    return (*f)(ctx, params, index);
  }

 private:
  [[noreturn]] static void missing_factory(const std::string& section, const std::string& impl);
  std::vector<ComponentType> types_;
  std::vector<SlotDeclaration> slots_;
};

namespace detail {
// Class::estimate_bytes when the class declares one, else nullptr.
template <class Class, class = void>
inline constexpr MemoryEstimator estimator_of = nullptr;
template <class Class>
inline constexpr MemoryEstimator estimator_of<Class, std::void_t<decltype(&Class::estimate_bytes)>> = &Class::estimate_bytes;

struct Registrar {
  explicit Registrar(ComponentType t) { Registry::instance().add(std::move(t)); }
};
}  // namespace detail

}  // namespace warpsim

#define WARPSIM_CONCAT_(a, b) a##b
#define WARPSIM_CONCAT(a, b) WARPSIM_CONCAT_(a, b)

// Registers `Class` (constructor `Class(BuildContext&, const Params&, unsigned index)`, static
// `Schema schema()` with the parameters it adds to its slot's shared ones, and, if it allocates much, a static
// `std::uint64_t estimate_bytes(const Params&, const Config&)` (MemoryEstimator)) as implementation `impl` of
// config section `section`, built through `Interface`.
#define WARPSIM_REGISTER_COMPONENT(Interface, Class, section, impl, description)                       \
  static ::warpsim::detail::Registrar WARPSIM_CONCAT(warpsim_registrar_, __LINE__){                    \
      ::warpsim::ComponentType{section, impl, description, &Class::schema,                             \
                               ::warpsim::Factory<Interface>([](::warpsim::BuildContext& ctx,          \
                                                                const ::warpsim::Params& p,            \
                                                                unsigned i) -> std::unique_ptr<Interface> { \
                                 return std::make_unique<Class>(ctx, p, i);                            \
                               }),                                                                     \
                               ::warpsim::detail::estimator_of<Class>}}

// Registers a section that only holds parameters (e.g. `gpu:`, `clocks:`).
#define WARPSIM_REGISTER_SECTION(section, schema_fn, description)                                        \
  static ::warpsim::detail::Registrar WARPSIM_CONCAT(warpsim_registrar_, __LINE__){                    \
      ::warpsim::ComponentType{section, section, description, schema_fn, {}}}
