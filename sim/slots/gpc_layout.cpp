#include "sim/slots/gpc_layout.h"

#include <algorithm>
#include <string>

#include "sim/config/config.h"
#include "sim/core/error.h"

namespace warpsim {

namespace {

// TPCs dealt to `gpcs` GPCs as evenly as they go, the first GPCs taking one more where they do not divide.
std::vector<unsigned> even_tpcs(unsigned tpcs, unsigned gpcs) {
  std::vector<unsigned> per_gpc(gpcs);
  for (unsigned g = 0; g < gpcs; ++g) per_gpc[g] = tpcs / gpcs + (g < tpcs % gpcs ? 1u : 0u);
  return per_gpc;
}

}  // namespace

GpcLayout::GpcLayout(unsigned sms, unsigned gpcs, unsigned sms_per_tpc)
    : GpcLayout(sms, even_tpcs((sms + sms_per_tpc - 1) / std::max(1u, sms_per_tpc), std::max(1u, gpcs)),
                sms_per_tpc) {}

GpcLayout::GpcLayout(unsigned sms, const std::vector<unsigned>& tpcs_per_gpc, unsigned sms_per_tpc) {
  const auto gpcs = static_cast<unsigned>(tpcs_per_gpc.size());
  WARPSIM_ASSERT(gpcs >= 1 && sms_per_tpc >= 1, "a GPU has at least one GPC and one SM per TPC");
  // Room of each GPC in SMs; a last, partial TPC (sms not a multiple of sms_per_tpc) is short in the GPC that
  // was dealt the last TPC.
  std::vector<unsigned> room(gpcs);
  unsigned tpcs = 0;
  for (unsigned g = 0; g < gpcs; ++g) {
    WARPSIM_ASSERT(tpcs_per_gpc[g] >= 1, "every GPC holds at least one TPC");
    room[g] = tpcs_per_gpc[g] * sms_per_tpc;
    tpcs += tpcs_per_gpc[g];
  }
  WARPSIM_ASSERT(tpcs == (sms + sms_per_tpc - 1) / sms_per_tpc, "the GPCs' TPCs must hold the SMs");
  if (tpcs > 0) room[(tpcs + gpcs - 1) % gpcs] -= tpcs * sms_per_tpc - sms;
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

unsigned GpcLayout::largest_gpc() const {
  std::size_t n = 0;
  for (const auto& m : members_) n = std::max(n, m.size());
  return static_cast<unsigned>(n);
}

std::uint64_t GpcLayout::resident_ctas(std::uint64_t ctas_per_sm, std::uint64_t cluster_ctas) const {
  const std::uint64_t size = std::max<std::uint64_t>(1, cluster_ctas);
  std::uint64_t ctas = 0;
  for (const auto& m : members_) ctas += m.size() * ctas_per_sm / size * size;
  return ctas;
}

GpcLayout gpc_layout(const Config& config, std::string* unused_list_note) {
  const unsigned sms = config.section("sm").u32("count");
  unsigned gpcs = 1, sms_per_tpc = 1;
  std::string listed = kEvenTpcs;
  const Params* noc = config.has_section("noc") ? &config.section("noc") : nullptr;
  if (noc) {
    if (noc->has("gpcs")) gpcs = std::max(1u, noc->u32("gpcs"));
    if (noc->has("sms_per_tpc")) sms_per_tpc = std::max(1u, noc->u32("sms_per_tpc"));
    if (noc->has("tpcs_per_gpc")) listed = noc->str("tpcs_per_gpc");
  }
  // A GPU with fewer TPCs than noc.gpcs (a small test GPU) has one GPC per TPC: a GPC holds at least one.
  const unsigned tpcs = std::max(1u, (sms + sms_per_tpc - 1) / sms_per_tpc);
  if (listed == kEvenTpcs) return GpcLayout(sms, std::min(gpcs, tpcs), sms_per_tpc);
  std::vector<unsigned> per_gpc;
  unsigned listed_tpcs = 0;
  // Items are separated by commas: "9,9,8" and "9, 9, 8"; an empty item (",," or a trailing comma) is malformed.
  for (std::size_t begin = 0; begin <= listed.size();) {
    const std::size_t comma = std::min(listed.find(',', begin), listed.size());
    std::string item = listed.substr(begin, comma - begin);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    const bool digits = !item.empty() && item.size() <= 4 &&
                        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    const unsigned long n = digits ? std::stoul(item) : 0;
    if (n == 0 || n > 4096)
      noc->fail("tpcs_per_gpc", "expected '" + std::string(kEvenTpcs) +
                                    "' or a comma-separated TPC count per GPC (each 1 to 4096), got '" + listed + "'");
    per_gpc.push_back(static_cast<unsigned>(n));
    listed_tpcs += static_cast<unsigned>(n);
    begin = comma + 1;
  }
  if (per_gpc.size() == gpcs && listed_tpcs == tpcs) return GpcLayout(sms, per_gpc, sms_per_tpc);
  // The list is one part's fuses; a GPU of another size (sm.count or noc.gpcs set to hypothetical counts) has
  // TPCs or GPCs the list does not place, so the TPCs are dealt evenly, and the caller says so.
  if (unused_list_note)
    *unused_list_note = "noc.tpcs_per_gpc (" + listed + ") places " + std::to_string(listed_tpcs) + " TPCs in " +
                        std::to_string(per_gpc.size()) + " GPCs, but the config has " + std::to_string(tpcs) +
                        " TPCs (sm.count " + std::to_string(sms) + ", noc.sms_per_tpc " + std::to_string(sms_per_tpc) +
                        ") in " + std::to_string(gpcs) + " GPCs (noc.gpcs): the TPCs are dealt evenly (set "
                        "noc.tpcs_per_gpc to a list that fits, or to 'even')";
  return GpcLayout(sms, std::min(gpcs, tpcs), sms_per_tpc);
}

}  // namespace warpsim
