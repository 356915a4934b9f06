// Thread-block clusters (sm_90): the CTAs of a cluster run at once on the SMs of one GPC and reach each other's
// shared memory (TMA multicast, remote mbarrier arrives). The kernel scheduler places them and publishes itself
// as the directory of slot "clusters", through which an SM or its TMA unit finds the SM a peer CTA runs on.
#pragma once

#include <cstdint>

#include "sim/trace/source.h"

namespace warpsim {

class StreamingMultiprocessor;

class ClusterDirectory {
 public:
  virtual ~ClusterDirectory() = default;
  // The kernel running now (its grid and cluster dimensions).
  virtual const KernelInfo& kernel() const = 0;
  // The SM CTA `cta` of the running kernel is resident on; nullptr when it is not running.
  virtual StreamingMultiprocessor* sm_of_cta(std::uint64_t cta) const = 0;
};

// Rank of CTA `cta` (linear id, x fastest) in its cluster, x fastest as %cluster_ctarank counts, and the linear
// id of the CTA of rank `rank` in the same cluster.
std::uint32_t cluster_rank(const KernelInfo& k, std::uint64_t cta);
std::uint64_t cluster_peer(const KernelInfo& k, std::uint64_t cta, std::uint32_t rank);

}  // namespace warpsim
