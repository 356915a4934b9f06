// Occupancy: how many CTAs of a kernel fit on one SM under its resource limits (warps, threads, CTAs,
// registers, shared memory), and which limit binds.
#include "sim/slots/sm.h"

namespace warpsim {

SmLimits SmLimits::from(const Params& sm) {
  SmLimits l;
  l.max_warps = sm.u32("max_warps");
  l.max_threads = sm.u32("max_threads");
  l.max_ctas = sm.u32("max_ctas");
  l.registers = sm.u32("registers");
  l.register_alloc_unit = sm.u32("register_alloc_unit");
  l.max_registers_per_thread = sm.u32("max_registers_per_thread");
  l.shared_memory = sm.u64("shared_memory");
  l.shared_memory_per_cta = sm.u64("shared_memory_per_cta");
  l.cta_reserved_shared_memory = sm.u64("cta_reserved_shared_memory");
  return l;
}

Occupancy compute_occupancy(const KernelInfo& k, const SmLimits& l) {
  Occupancy o;
  const std::uint32_t warps = k.warps_per_cta();
  const std::uint64_t threads = k.block.count();
  const std::uint64_t regs_per_warp =
      (std::uint64_t{k.registers_per_thread} * kWarpSize + l.register_alloc_unit - 1) / l.register_alloc_unit *
      l.register_alloc_unit;
  o.registers_per_cta = regs_per_warp * warps;
  o.shared_memory_per_cta = k.shared_mem_bytes + l.cta_reserved_shared_memory;
  struct Limit {
    const char* name;
    std::uint64_t ctas;
  };
  const auto per = [](std::uint64_t have, std::uint64_t need) { return need ? have / need : ~std::uint64_t{0}; };
  const Limit limits[] = {
      {"ctas", l.max_ctas},
      {"warps", per(l.max_warps, warps)},
      {"threads", per(l.max_threads, threads)},
      {"registers", per(l.registers, o.registers_per_cta)},
      {"shared_memory", k.shared_mem_bytes > l.shared_memory_per_cta ? 0 : per(l.shared_memory, o.shared_memory_per_cta)},
      {"registers_per_thread", k.registers_per_thread > l.max_registers_per_thread ? 0 : ~std::uint64_t{0}},
  };
  std::uint64_t best = ~std::uint64_t{0};
  for (const auto& lim : limits)
    if (lim.ctas < best) {
      best = lim.ctas;
      o.limiter = lim.name;
    }
  o.ctas_per_sm = static_cast<std::uint32_t>(best);
  return o;
}

}  // namespace warpsim
