// The collective model (models/node/collective.h) on the shipped configs' node: sections.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/node/collective.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

using namespace warpsim;

namespace {

Config collective_test_config(const std::string& gpu, const std::vector<std::string>& overrides = {}) {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/" + gpu + ".yaml", overrides, Registry::instance());
}

CollectiveEstimate all_reduce_on(const Config& c, double bytes, unsigned gpus) {
  return estimate_collective(CollectiveParams::from(c), CollectiveOp::all_reduce, bytes, gpus);
}

}  // namespace

TEST_CASE("collective: small messages take a low-latency protocol, large ones a high-bandwidth one", "[collective]") {
  for (const std::string gpu : {"a100_sxm", "h100_sxm"}) {
    INFO(gpu);
    const Config c = collective_test_config(gpu);
    const Params& node = c.section("node");
    // The premise, from the config's own figures: LL has the lowest latency and the lowest bandwidth factor.
    REQUIRE(node.real("ring.ll.base_latency_us") < node.real("ring.simple.base_latency_us"));
    REQUIRE(node.real("ring.ll.hop_latency_us") < node.real("ring.simple.hop_latency_us"));
    REQUIRE(node.real("ring.ll.bandwidth_factor") < node.real("ring.simple.bandwidth_factor"));
    const CollectiveEstimate tiny = all_reduce_on(c, 1024, 4);
    CHECK(tiny.chosen.protocol == "LL");
    const CollectiveEstimate huge = all_reduce_on(c, 1024.0 * 1024 * 1024, 4);
    CHECK(huge.chosen.protocol == "Simple");
    CHECK(tiny.candidates.size() >= 6);  // ring and tree x three protocols (and NVLS where enabled)
  }
  // NVLS only where the config enables it: H100's NVSwitch has NVLink SHARP, A100's has not.
  auto has_nvls = [](const CollectiveEstimate& e) {
    for (const CollectiveCandidate& c : e.candidates)
      if (c.algorithm == "nvls") return true;
    return false;
  };
  CHECK(has_nvls(all_reduce_on(collective_test_config("h100_sxm"), 1 << 20, 8)));
  CHECK_FALSE(has_nvls(all_reduce_on(collective_test_config("a100_sxm"), 1 << 20, 8)));
}

TEST_CASE("collective: a large ring all-reduce approaches link bandwidth x n / (2(n-1))", "[collective]") {
  // Only ring Simple at the links' full bandwidth: no efficiency, no ceilings, no tree, no NVLS.
  const Config c = collective_test_config("h100_sxm", {"node.link_efficiency=1", "node.bus_bandwidth_ceiling=0B/s",
                                                       "node.nvls.enabled=false", "node.tree.ll.bandwidth_factor=0",
                                                       "node.tree.ll128.bandwidth_factor=0",
                                                       "node.tree.simple.bandwidth_factor=0"});
  const double link = 450e9;  // configs/h100_sxm.yaml node.link_bandwidth
  for (unsigned n : {2u, 4u, 8u}) {
    const double bytes = 64.0 * 1024 * 1024 * 1024;
    const CollectiveEstimate e = all_reduce_on(c, bytes, n);
    INFO("n=" << n << " chosen " << collective_choice_text(e.chosen));
    CHECK(e.chosen.algorithm == "ring");
    const double algbw = bytes / (e.chosen.time_us * 1e-6);
    CHECK(algbw == Approx(link * n / (2.0 * (n - 1))).epsilon(0.01));
    CHECK(algbw < link * n / (2.0 * (n - 1)));  // the latency is still paid
  }
}

TEST_CASE("collective: doubling the link bandwidth halves a large all-reduce, not a tiny one", "[collective]") {
  for (const std::string gpu : {"a100_sxm", "h100_sxm"}) {
    INFO(gpu);
    const Config base = collective_test_config(gpu);
    const double link = base.section("node").real("link_bandwidth");
    const double ceiling = base.section("node").real("bus_bandwidth_ceiling");
    std::vector<std::string> doubled{"node.link_bandwidth=" + std::to_string(2 * link / 1e9) + "GB/s"};
    if (ceiling > 0) doubled.push_back("node.bus_bandwidth_ceiling=" + std::to_string(2 * ceiling / 1e9) + "GB/s");
    const Config fast = collective_test_config(gpu, doubled);
    const double big = 4.0 * 1024 * 1024 * 1024, small = 64;
    CHECK(all_reduce_on(fast, big, 8).chosen.time_us / all_reduce_on(base, big, 8).chosen.time_us ==
          Approx(0.5).epsilon(0.02));
    const double tiny_before = all_reduce_on(base, small, 8).chosen.time_us;
    CHECK(all_reduce_on(fast, small, 8).chosen.time_us == Approx(tiny_before).epsilon(0.01));
    CHECK(tiny_before > 5.0);  // a tiny message costs its latency, microseconds (NCCL's baseLat of LL is 6.6 us)
  }
}

TEST_CASE("collective: link traffic and energy scale with the bytes, one GPU moves nothing", "[collective]") {
  const Config c = collective_test_config("a100_sxm");
  const CollectiveEstimate one = all_reduce_on(c, 256.0 * 1024 * 1024, 4);
  const CollectiveEstimate two = all_reduce_on(c, 512.0 * 1024 * 1024, 4);
  REQUIRE(collective_choice_text(one.chosen) == collective_choice_text(two.chosen));
  CHECK(one.link_energy_j > 0);
  CHECK(two.link_energy_j == Approx(2 * one.link_energy_j));
  CHECK(two.link_bytes == Approx(2 * one.link_bytes));
  // A ring all-reduce sends and receives at least the message itself through each GPU's links.
  CHECK(one.link_bytes >= 256.0 * 1024 * 1024);
  const CollectiveEstimate alone = all_reduce_on(c, 256.0 * 1024 * 1024, 1);
  CHECK(alone.chosen.time_us == 0);
  CHECK(alone.link_bytes == 0);
  CHECK(alone.link_energy_j == 0);
  const Config no_energy = collective_test_config("a100_sxm", {"node.link_energy_per_bit=0pJ"});
  CHECK(all_reduce_on(no_energy, 256.0 * 1024 * 1024, 4).link_energy_j == 0);
}

TEST_CASE("collective: an all-gather moves half an all-reduce's steps, bad input is one error", "[collective]") {
  const Config c = collective_test_config("a100_sxm");
  const CollectiveParams p = CollectiveParams::from(c);
  const double bytes = 1024.0 * 1024 * 1024;
  const CollectiveEstimate ar = estimate_collective(p, CollectiveOp::all_reduce, bytes, 4);
  const CollectiveEstimate ag = estimate_collective(p, CollectiveOp::all_gather, bytes, 4);
  CHECK(ag.chosen.time_us < ar.chosen.time_us);
  CHECK(ag.link_bytes == Approx(ar.link_bytes / 2));
  CHECK(collective_op("allreduce") == CollectiveOp::all_reduce);
  CHECK_THROWS_AS(collective_op("broadcast"), InputError);
  const CollectiveParams none = CollectiveParams::from(collective_test_config("a100_sxm", {"node.link_bandwidth=0B/s"}));
  CHECK_THROWS_WITH(estimate_collective(none, CollectiveOp::all_reduce, bytes, 4),
                    Catch::Matchers::Contains("node.link_bandwidth"));
}

TEST_CASE("collective: an all-to-all moves what a ring all-gather of the same bytes moves, in one step", "[collective]") {
  // Each GPU's send buffer of an all-to-all and the gathered output of an all-gather put (n-1)/n of the bytes on
  // each GPU's links both ways; the all-to-all sends to every peer at once (one hop of latency), the ring passes
  // shards on n-1 times. Compared with ring/Simple (NVLS off: the all-gather's candidates are ring x three protocols).
  const CollectiveParams p = CollectiveParams::from(collective_test_config("h100_sxm", {"node.nvls.enabled=false"}));
  for (unsigned n : {2u, 4u, 8u}) {
    INFO("n=" << n);
    auto ring_simple = [&](double bytes) {
      const CollectiveEstimate g = estimate_collective(p, CollectiveOp::all_gather, bytes, n);
      for (const CollectiveCandidate& c : g.candidates)
        if (c.algorithm == "ring" && c.protocol == "Simple") return c;
      FAIL("no ring/Simple candidate");
      return CollectiveCandidate{};
    };
    const double big = 8.0 * 1024 * 1024 * 1024;
    const CollectiveEstimate a2a = estimate_collective(p, CollectiveOp::all_to_all, big, n);
    CHECK(a2a.chosen.algorithm == "p2p");
    CHECK(a2a.link_bytes == Approx(estimate_collective(p, CollectiveOp::all_gather, big, n).link_bytes));
    CHECK(a2a.chosen.algorithm_bytes_per_s == Approx(ring_simple(big).algorithm_bytes_per_s));
    // The same bandwidth term; less latency where the ring takes more than one step.
    CHECK(a2a.chosen.time_us <= ring_simple(big).time_us);
    if (n > 2) CHECK(a2a.chosen.latency_us < ring_simple(4096).latency_us);
  }
  CHECK(estimate_collective(p, CollectiveOp::all_to_all, 1 << 20, 1).chosen.time_us == 0.0);  // one GPU: nothing
  CHECK(collective_op("alltoall") == CollectiveOp::all_to_all);
  CHECK_THROWS_WITH(estimate_collective(CollectiveParams::from(collective_test_config("h100_sxm", {"node.ring.simple.bandwidth_factor=0"})),
                                        CollectiveOp::all_to_all, 1 << 20, 8),
                    Catch::Contains("node.ring.simple.bandwidth_factor"));
}
