// Streaming multiprocessor slot (config section `sm`). The dispatcher asks an SM how many CTAs of a kernel
// fit, launches CTAs onto it and hears back when each finishes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sim/config/params.h"
#include "sim/core/component.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"

namespace warpsim {

// Per-SM resource limits that decide occupancy (from the `sm` section).
struct SmLimits {
  std::uint32_t max_warps = 0, max_threads = 0, max_ctas = 0;
  std::uint32_t registers = 0, register_alloc_unit = 1, max_registers_per_thread = 0;
  std::uint64_t shared_memory = 0, shared_memory_per_cta = 0, cta_reserved_shared_memory = 0;
  static SmLimits from(const Params& sm);
};

struct Occupancy {
  std::uint32_t ctas_per_sm = 0;
  std::string limiter;  // "warps", "threads", "ctas", "registers", "registers_per_thread", "shared_memory"
  std::uint64_t shared_memory_per_cta = 0;  // including the per-CTA reserve
  std::uint64_t registers_per_cta = 0;
};

// CTAs of `k` that fit on one SM; ctas_per_sm == 0 with a limiter when one CTA alone does not fit.
Occupancy compute_occupancy(const KernelInfo& k, const SmLimits& limits);

// A warp-instruction as the probe point `sm[i].issue` reports it, when the SM issues it (the energy model counts
// instructions by class, type and operand from it). Every SM implementation announces its issues there.
struct InstIssue {
  const WarpInst& inst;
  unsigned sm;
};

class StreamingMultiprocessor : public Component {
 public:
  using Component::Component;
  // Prepares for a kernel (functional-unit timings for its data types, L1 capacity left by shared memory).
  // Throws InputError when the kernel needs something this GPU lacks (e.g. fp8 tensor cores).
  virtual void begin_kernel(const KernelInfo& kernel, const Occupancy& occ) = 0;
  virtual bool can_launch() const = 0;
  virtual void launch_cta(std::uint64_t cta_id, std::unique_ptr<CtaSource> cta) = 0;
  virtual std::uint32_t resident_ctas() const = 0;
  // Called (in the SM's domain, during its tick) when a CTA has finished.
  void on_cta_done(std::function<void(unsigned sm, std::uint64_t cta_id)> callback) { cta_done_ = std::move(callback); }
  // Instructions issued so far (for progress and the no-progress watchdog).
  virtual std::uint64_t issued() const = 0;
  // The latest cycle at which something already issued completes after a latency known now (0 when none): until
  // then a quiet SM is slow (e.g. a huge but legal MMA), not stuck. For the no-progress watchdog.
  virtual Cycle last_known_completion() const = 0;
  // Thread-block clusters: another SM's TMA multicast delivered `bytes` for mbarrier `mbarrier` of resident CTA
  // `cta` at `at`; another SM's warp arrived (mbarrier.arrive on a cluster peer) on that mbarrier at `at`.
  virtual void cluster_transaction_bytes(std::uint64_t cta, std::uint32_t mbarrier, std::uint32_t bytes, Cycle at) = 0;
  virtual void cluster_arrive(std::uint64_t cta, std::uint32_t mbarrier, Cycle at) = 0;

 protected:
  std::function<void(unsigned sm, std::uint64_t cta_id)> cta_done_;
};

}  // namespace warpsim
