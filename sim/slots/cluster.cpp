#include "sim/slots/cluster.h"

namespace warpsim {
namespace {

struct Coord {
  std::uint64_t x, y, z;
};
Coord coord_of(const KernelInfo& k, std::uint64_t cta) {
  return {cta % k.grid.x, cta / k.grid.x % k.grid.y, cta / (std::uint64_t{k.grid.x} * k.grid.y)};
}

}  // namespace

std::uint32_t cluster_rank(const KernelInfo& k, std::uint64_t cta) {
  const Coord c = coord_of(k, cta);
  return static_cast<std::uint32_t>(c.x % k.cluster.x + k.cluster.x * (c.y % k.cluster.y + k.cluster.y * (c.z % k.cluster.z)));
}

std::uint64_t cluster_peer(const KernelInfo& k, std::uint64_t cta, std::uint32_t rank) {
  const Coord c = coord_of(k, cta);
  const std::uint64_t x = c.x / k.cluster.x * k.cluster.x + rank % k.cluster.x;
  const std::uint64_t y = c.y / k.cluster.y * k.cluster.y + rank / k.cluster.x % k.cluster.y;
  const std::uint64_t z = c.z / k.cluster.z * k.cluster.z + rank / (k.cluster.x * k.cluster.y);
  return x + k.grid.x * (y + std::uint64_t{k.grid.y} * z);
}

}  // namespace warpsim
