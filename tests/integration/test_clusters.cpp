// Thread-block clusters end to end: the sm_90 GEMM's 2-CTA clusters are co-scheduled on one GPC (GPCs of whole
// TPCs, sim/slots/gpc_layout.h), start together, and share their B tile by TMA multicast (read from L2 once, counted).
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <string>

#include "sim/config/config.h"
#include "sim/registry/registry.h"
#include "sim/slots/gpc_layout.h"
#include "test_helpers.h"

using namespace wstest;

namespace {

struct CtaPlacement {
  unsigned sm = 0;
  std::string start;  // the timeline's start stamp, as printed
};

// CTA id -> SM and start, from a run's timeline.json (kernel 0's CTAs only: the run has one kernel).
std::map<unsigned, CtaPlacement> cta_placements(const fs::path& timeline) {
  const std::string text = read_text(timeline);
  const std::regex cta("\"name\":\"CTA (\\d+)\",\"cat\":\"cta\",\"ph\":\"X\",\"pid\":1,\"tid\":(\\d+),\"ts\":([-+0-9.eE]+)");
  std::map<unsigned, CtaPlacement> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), cta); it != std::sregex_iterator(); ++it)
    out[static_cast<unsigned>(std::stoul((*it)[1]))] = CtaPlacement{static_cast<unsigned>(std::stoul((*it)[2])), (*it)[3]};
  return out;
}

// Kernel 0's counter `key` (a name with dots: a quoted member of the path).
double counter(const std::string& stats, const std::string& key) {
  const auto v = json::number(stats, "kernels[0].counters[\"" + key + "\"]");
  REQUIRE(v);
  return *v;
}

}  // namespace

TEST_CASE("a GEMM's 2-CTA clusters start together on one GPC and multicast their shared B tile", "[cluster][gemm]") {
  // 4096 x 2048 x 128 bf16, one CTA per tile: 32 x 8 = 256 CTAs of 128 x 256, 2 k-tiles each, clusters of CTAs
  // (2q, 2q+1).
  TempDir dir;
  RUN_WARPSIM(r, {"run", "--gpu", "h100_sxm", "--synth", "gemm", "--synth-key", "m=4096", "--synth-key", "n=2048",
                  "--synth-key", "k=128", "--synth-key", "decomposition=data_parallel", "--out", dir / "out",
                  "--no-progress"});
  REQUIRE(r.exit_code == 0);
  // The layout of the config the run used (noc.tpcs_per_gpc: the H100's uneven GPCs).
  const warpsim::GpcLayout layout = warpsim::gpc_layout(warpsim::Config::load(
      (dir.path() / "out" / "config.resolved.yaml").string(), {}, warpsim::Registry::instance()));
  CHECK(layout.largest_gpc() == 18);
  const auto placed = cta_placements(dir.path() / "out" / "timeline.json");
  REQUIRE(placed.size() == 256);
  for (unsigned q = 0; q < 128; ++q) {
    INFO("cluster " << q);
    const CtaPlacement& a = placed.at(2 * q);
    const CtaPlacement& b = placed.at(2 * q + 1);
    CHECK(layout.gpc_of(a.sm) == layout.gpc_of(b.sm));  // one GPC
    CHECK(a.sm != b.sm);                // one CTA per SM fits (register-limited)
    CHECK(a.start == b.start);          // launched in the same cycle
  }
  // The first wave: each GPC takes as many whole clusters as it has pairs of SMs (an odd SM would stay idle; the
  // H100's GPCs hold whole TPCs of two SMs, so all 132 SMs start).
  unsigned first_wave = 0;
  for (unsigned g = 0; g < layout.gpcs(); ++g) first_wave += static_cast<unsigned>(layout.sms_of(g).size()) / 2 * 2;
  CHECK(first_wave == 132);
  unsigned at_zero = 0;
  for (const auto& [id, p] : placed) at_zero += std::stod(p.start) == 0.0;
  CHECK(at_zero == first_wave);
  // Multicast: per CTA and k-tile one copy of its half of the B tile (128 rows x 64 bf16) lands in both CTAs;
  // the half written into the other CTA is an L2 read saved.
  const std::string stats = read_text(dir.path() / "out" / "stats.json");
  CHECK(counter(stats, "tma.multicast_copies") == Approx(256.0 * 2));
  CHECK(counter(stats, "tma.multicast_bytes_saved") == Approx(256.0 * 2 * 128 * 64 * 2));
  // The consumers release each stage on both CTAs: k_tiles - 1 = 1 release per consumer warp (8) lands on the peer.
  CHECK(counter(stats, "sm.mbarrier_remote_arrivals") == Approx(256.0 * 8 * 1));

  // Without clusters every CTA reads its whole B tile: its TMA line requests grow from (128 + 128) to (128 + 256)
  // rows per k-tile.
  TempDir single;
  RUN_WARPSIM(s, {"run", "--gpu", "h100_sxm", "--synth", "gemm", "--synth-key", "m=4096", "--synth-key", "n=2048",
                  "--synth-key", "k=128", "--synth-key", "cluster_m=1", "--synth-key", "decomposition=data_parallel",
                  "--out", single / "out", "--no-progress"});
  REQUIRE(s.exit_code == 0);
  const std::string single_stats = read_text(single.path() / "out" / "stats.json");
  CHECK(counter(single_stats, "tma.multicast_copies") == Approx(0));
  CHECK(counter(single_stats, "tma.requests") * 256 ==
        Approx(counter(stats, "tma.requests") * 384));
}

TEST_CASE("a cluster that cannot fit on one GPC is refused with one clear error", "[cluster][bad input]") {
  // 132 GPCs of one SM each (one SM per TPC), one CTA per SM: a 2-CTA cluster can never start.
  TempDir dir;
  RUN_WARPSIM(r, {"run", "--gpu", "h100_sxm", "--gemm", "512x512x128", "--set", "noc.gpcs=132", "--set",
                  "noc.sms_per_tpc=1", "--out", dir / "out", "--no-progress"});
  CHECK(r.exit_code == 2);
  CHECK(count_lines_containing(r.err, "error:") == 1);
  CHECK(contains(r.err, "a cluster of 2 CTAs does not fit on one GPC (the largest: 1 SMs x 1 CTAs; noc.gpcs = 132)"));
}
