// The GPC layout: whole TPCs per GPC (dealt evenly or as a config lists them), SM ids round robin, and how many
// clusters fit at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "models/gpu/gpu_subset.h"
#include "sim/core/simulation.h"
#include "sim/trace/source.h"
#include "sim/config/config.h"
#include "sim/registry/registry.h"
#include "sim/slots/gpc_layout.h"

using namespace warpsim;

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
  CHECK(h100.largest_gpc() == 18);
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

TEST_CASE("GPCs as the part's fuses leave them: the H100's measured cluster counts", "[gpc]") {
  // configs/h100_sxm.yaml noc.tpcs_per_gpc: Nsight's launch__cluster_max_active on this project's H100 was 66
  // for 2-CTA clusters and 30 for 4-CTA clusters, one CTA per SM.
  const GpcLayout h100(132, std::vector<unsigned>{9, 9, 9, 9, 8, 8, 7, 7}, 2);
  CHECK(gpc_sizes(h100) == std::vector<unsigned>{18, 18, 18, 18, 16, 16, 14, 14});
  CHECK(h100.largest_gpc() == 18);
  CHECK(h100.resident_ctas(1, 2) == 66 * 2);
  CHECK(h100.resident_ctas(1, 4) == 30 * 4);
  CHECK(h100.resident_ctas(1, 8) == (4 * 2 + 2 * 2 + 2 * 1) * 8);
  for (unsigned sm = 0; sm < 8; ++sm) CHECK(h100.gpc_of(sm) == sm);
  for (unsigned g = 0; g < h100.gpcs(); ++g)
    for (unsigned sm : h100.sms_of(g)) CHECK(h100.gpc_of(sm) == g);
  // The even dealing is the same constructor's special case.
  CHECK(gpc_sizes(GpcLayout(132, std::vector<unsigned>{9, 9, 8, 8, 8, 8, 8, 8}, 2)) ==
        gpc_sizes(GpcLayout(132, 8, 2)));
}

TEST_CASE("noc.tpcs_per_gpc from a config: used, not used for another SM count, refused when malformed", "[gpc][config]") {
  const std::string h100 = std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml";
  const auto load = [&](std::vector<std::string> overrides) {
    return Config::load(h100, std::move(overrides), Registry::instance());
  };
  std::string note;
  CHECK(gpc_sizes(gpc_layout(load({}), &note)) == std::vector<unsigned>{18, 18, 16, 14, 18, 18, 16, 14});
  CHECK(note.empty());
  // "An H100 with 30% more SMs": 172 SMs are 86 TPCs, which the 66-TPC list does not place; dealt evenly, said.
  const GpcLayout more = gpc_layout(load({"sm.count=172"}), &note);
  CHECK(gpc_sizes(more) == std::vector<unsigned>{22, 22, 22, 22, 22, 22, 20, 20});
  CHECK_THAT(note, Catch::Contains("noc.tpcs_per_gpc") && Catch::Contains("86") && Catch::Contains("evenly"));
  // A list for other GPCs is not used either (small test GPUs set noc.gpcs=2).
  CHECK(gpc_sizes(gpc_layout(load({"noc.tpcs_per_gpc=9,9,9,9,8,8,14"}), &note)) == gpc_sizes(GpcLayout(132, 8, 2)));
  CHECK_THAT(note, Catch::Contains("in 7 GPCs") && Catch::Contains("in 8 GPCs (noc.gpcs)"));
  CHECK_THROWS_WITH(gpc_layout(load({"noc.tpcs_per_gpc=9,9,9,9,8,8,7,seven"})),
                    Catch::Contains("noc.tpcs_per_gpc") && Catch::Contains("comma-separated TPC count"));
  CHECK_THROWS_WITH(gpc_layout(load({"noc.tpcs_per_gpc=9,9,9,9,8,8,14,0"})), Catch::Contains("each 1 to 4096"));
  for (const char* bad : {"noc.tpcs_per_gpc=9,9,9,9,8,8,7,7,", "noc.tpcs_per_gpc=9,,9", "noc.tpcs_per_gpc=+9",
                          "noc.tpcs_per_gpc=-1", "noc.tpcs_per_gpc=''"})
    CHECK_THROWS_WITH(gpc_layout(load({bad})), Catch::Contains("comma-separated TPC count"));
  CHECK(gpc_sizes(gpc_layout(load({"noc.tpcs_per_gpc=9, 9, 8, 7,\t9, 9, 8, 7"}))) ==
        std::vector<unsigned>{18, 18, 16, 14, 18, 18, 16, 14});
  // A subset GPU (sim.subset) has none of the listed GPCs: it deals its TPCs evenly, and says it changed the key.
  GpuSubset subset;
  const Config quarter = subset_config(load({"sim.subset=4"}), subset);
  CHECK(quarter.section("noc").str("tpcs_per_gpc") == "even");
  CHECK(gpc_sizes(gpc_layout(quarter)) == std::vector<unsigned>{17, 16});  // 33 SMs: 17 TPCs, the last one short
  CHECK(std::any_of(subset.scaled.begin(), subset.scaled.end(),
                    [](const GpuSubset::Scaled& s) { return s.key == "noc.tpcs_per_gpc" && s.subset == "even"; }));
}

TEST_CASE("a cluster larger than the smallest GPC runs on the GPCs that hold it", "[gpc][cluster]") {
  // The H100's GPCs of 14 SMs cannot hold a 15-CTA cluster at one CTA per SM (200 KiB of shared memory each); its
  // GPCs of 16 and 18 can, so the kernel runs there rather than being refused.
  InMemoryKernel k;
  k.info.name = "cluster15";
  k.info.grid = Dim3{30, 1, 1};
  k.info.cluster = Dim3{15, 1, 1};
  k.info.block = Dim3{32, 1, 1};
  k.info.registers_per_thread = 32;
  k.info.shared_mem_bytes = 200 * 1024;
  k.info.target_arch = "sm_90";
  WarpInst exit;
  exit.op = Opcode::EXIT;
  for (std::uint32_t c = 0; c < k.info.grid.count(); ++c) k.ctas.push_back({InMemoryKernel::Warp{{exit}, {}}});
  InMemoryTrace trace({k}, "cluster15");
  Gpu gpu(Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml", {}, Registry::instance()));
  RunOptions options;
  const RunResult r = gpu.run(trace, run_without_systemc, options);
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.kernels[0].cycles > 0);
}
