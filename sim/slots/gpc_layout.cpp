#include "sim/slots/gpc_layout.h"

#include <algorithm>

#include "sim/config/config.h"
#include "sim/core/error.h"

namespace warpsim {

GpcLayout::GpcLayout(unsigned sms, unsigned gpcs, unsigned sms_per_tpc) {
  WARPSIM_ASSERT(gpcs >= 1 && sms_per_tpc >= 1, "a GPU has at least one GPC and one SM per TPC");
  // Room of each GPC in SMs: whole TPCs dealt evenly; a last, partial TPC (sms not a multiple of sms_per_tpc)
  // is short in the GPC that took it.
  const unsigned tpcs = (sms + sms_per_tpc - 1) / sms_per_tpc;
  std::vector<unsigned> room(gpcs);
  for (unsigned g = 0; g < gpcs; ++g) room[g] = (tpcs / gpcs + (g < tpcs % gpcs ? 1u : 0u)) * sms_per_tpc;
  room[(tpcs + gpcs - 1) % gpcs] -= tpcs * sms_per_tpc - sms;  // the last GPC dealt a TPC
  members_.assign(gpcs, {});
  gpc_of_.assign(sms, 0);
  unsigned g = 0;
  for (unsigned sm = 0; sm < sms; ++sm) {
    while (members_[g].size() == room[g]) g = (g + 1) % gpcs;
    gpc_of_[sm] = g;
    members_[g].push_back(sm);
    g = (g + 1) % gpcs;
  }
}

unsigned GpcLayout::smallest_gpc() const {
  std::size_t n = gpc_of_.size();
  for (const auto& m : members_)
    if (!m.empty()) n = std::min(n, m.size());
  return static_cast<unsigned>(n);
}

std::uint64_t GpcLayout::resident_ctas(std::uint64_t ctas_per_sm, std::uint64_t cluster_ctas) const {
  const std::uint64_t size = std::max<std::uint64_t>(1, cluster_ctas);
  std::uint64_t ctas = 0;
  for (const auto& m : members_) ctas += m.size() * ctas_per_sm / size * size;
  return ctas;
}

GpcLayout gpc_layout(const Config& config) {
  const unsigned sms = config.section("sm").u32("count");
  unsigned gpcs = 1, sms_per_tpc = 1;
  if (config.has_section("noc")) {
    const Params& noc = config.section("noc");
    if (noc.has("gpcs")) gpcs = std::max(1u, noc.u32("gpcs"));
    if (noc.has("sms_per_tpc")) sms_per_tpc = std::max(1u, noc.u32("sms_per_tpc"));
  }
  // A GPU with fewer TPCs than noc.gpcs (a small test GPU) has one GPC per TPC: a GPC holds at least one.
  const unsigned tpcs = std::max(1u, (sms + sms_per_tpc - 1) / sms_per_tpc);
  return GpcLayout(sms, std::min(gpcs, tpcs), sms_per_tpc);
}

}  // namespace warpsim
