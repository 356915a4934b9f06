// Which GPC each SM sits in: one answer for the CTA scheduler (clusters are co-scheduled on one GPC), the
// interconnect (each GPC has its own crossbar port) and the synthesizers that size persistent grids.
//
// SMs come in TPCs of `sms_per_tpc` (two on Ampere, Hopper and Blackwell: the whitepapers' texture processing
// cluster) and a product part fuses off whole TPCs, so a GPC holds whole TPCs. The TPCs are dealt to the GPCs as
// evenly as they go (the first GPCs take one more where they do not divide), and SM ids go round robin over the
// GPCs that still have room: consecutive SMs sit in different GPCs, as the hardware's breadth-first CTA dispatch
// fills them. With sms_per_tpc = 1 this is SM i in GPC i mod gpcs. A part's fuses need not leave the GPCs even
// (an H100 SXM5 holds 66 of GH100's 8 x 9 TPCs): the TPCs of each GPC may be given instead (noc.tpcs_per_gpc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpsim {

class Config;

inline constexpr const char* kEvenTpcs = "even";  // noc.tpcs_per_gpc: TPCs dealt evenly

class GpcLayout {
 public:
  GpcLayout() = default;  // no SMs
  GpcLayout(unsigned sms, unsigned gpcs, unsigned sms_per_tpc);
  // GPC g holds tpcs_per_gpc[g] TPCs; their SMs add up to `sms` (the last TPC dealt may be short).
  GpcLayout(unsigned sms, const std::vector<unsigned>& tpcs_per_gpc, unsigned sms_per_tpc);

  unsigned gpcs() const { return static_cast<unsigned>(members_.size()); }
  unsigned sms() const { return static_cast<unsigned>(gpc_of_.size()); }
  unsigned gpc_of(unsigned sm) const { return gpc_of_[sm]; }
  const std::vector<unsigned>& sms_of(unsigned gpc) const { return members_[gpc]; }
  unsigned largest_gpc() const;  // SMs of the largest GPC
  // CTAs resident at once when each SM holds `ctas_per_sm` and a cluster's `cluster_ctas` CTAs must share a GPC
  // (what cudaOccupancyMaxActiveClusters x the cluster size tells a persistent kernel).
  std::uint64_t resident_ctas(std::uint64_t ctas_per_sm, std::uint64_t cluster_ctas) const;

 private:
  std::vector<unsigned> gpc_of_;
  std::vector<std::vector<unsigned>> members_;
};

// The layout of a GPU config: sm.count SMs over noc.gpcs GPCs (one without that key) in TPCs of noc.sms_per_tpc
// (1 without it), dealt evenly or as noc.tpcs_per_gpc lists them; fewer GPCs where there are fewer TPCs than
// noc.gpcs (every GPC holds at least one). A malformed list is a ConfigError naming the key; one of another GPC
// or TPC count (noc.gpcs or sm.count changed) is not used, and `unused_list_note`, where given, says so.
GpcLayout gpc_layout(const Config& config, std::string* unused_list_note = nullptr);

}  // namespace warpsim
