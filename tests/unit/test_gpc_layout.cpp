// The GPC layout: whole TPCs per GPC, SM ids round robin, and how many clusters fit at once.
#include <catch2/catch.hpp>

#include <numeric>

#include "sim/slots/gpc_layout.h"

using warpsim::GpcLayout;

namespace {

std::vector<unsigned> gpc_sizes(const GpcLayout& l) {
  std::vector<unsigned> n;
  for (unsigned g = 0; g < l.gpcs(); ++g) n.push_back(static_cast<unsigned>(l.sms_of(g).size()));
  return n;
}

}  // namespace

TEST_CASE("GPCs hold whole TPCs: the H100's 132 SMs as 66 TPCs over 8 GPCs", "[gpc]") {
  const GpcLayout h100(132, 8, 2);
  CHECK(gpc_sizes(h100) == std::vector<unsigned>{18, 18, 16, 16, 16, 16, 16, 16});
  CHECK(h100.smallest_gpc() == 16);
  // Consecutive SMs sit in different GPCs (the breadth-first fill), and every SM is in the GPC that lists it.
  for (unsigned sm = 0; sm < 8; ++sm) CHECK(h100.gpc_of(sm) == sm);
  for (unsigned g = 0; g < h100.gpcs(); ++g)
    for (unsigned sm : h100.sms_of(g)) CHECK(h100.gpc_of(sm) == g);
  // Every 2-CTA cluster fits at once (cuBLAS's persistent 1x2-cluster GEMMs launch 132 CTAs on a real H100); a
  // 4-CTA cluster leaves the two spare SMs of each 18-SM GPC idle.
  CHECK(h100.resident_ctas(1, 2) == 132);
  CHECK(h100.resident_ctas(1, 4) == 128);
  CHECK(h100.resident_ctas(2, 1) == 264);
}

TEST_CASE("one SM per TPC is SM i in GPC i mod gpcs", "[gpc]") {
  const GpcLayout l(132, 8, 1);
  CHECK(gpc_sizes(l) == std::vector<unsigned>{17, 17, 17, 17, 16, 16, 16, 16});
  for (unsigned sm = 0; sm < 132; ++sm) CHECK(l.gpc_of(sm) == sm % 8);
  CHECK(l.resident_ctas(1, 2) == 128);  // an odd GPC strands one SM per 2-CTA cluster pass
}

TEST_CASE("a partial last TPC and the A100's 7 GPCs", "[gpc]") {
  const GpcLayout a100(108, 7, 2);
  CHECK(gpc_sizes(a100) == std::vector<unsigned>{16, 16, 16, 16, 16, 14, 14});
  const GpcLayout odd(9, 2, 2);  // 5 TPCs, the last with one SM
  const std::vector<unsigned> sizes = gpc_sizes(odd);
  CHECK(std::accumulate(sizes.begin(), sizes.end(), 0u) == 9);
  CHECK(sizes == std::vector<unsigned>{5, 4});
}
