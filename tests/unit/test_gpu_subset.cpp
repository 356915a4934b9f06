// SM subsetting's config (models/gpu/gpu_subset.h): which parameters a 1/N GPU divides, which it keeps per unit,
// and the errors for a GPU that cannot be cut. The expected values are the shipped H100's, worked by hand.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "models/gpu/gpu.h"
#include "models/gpu/gpu_subset.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"

using namespace warpsim;

namespace {

Config subset_test_h100(std::vector<std::string> overrides) {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml", overrides, Registry::instance());
}

// The ConfigError message `build` throws (a test failure when it throws none).
std::string subset_config_error(const std::function<void()>& build) {
  try {
    build();
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("no error");
  return "";
}

std::string subset_value_of(const GpuSubset& s, const std::string& key) {
  for (const GpuSubset::Scaled& p : s.scaled)
    if (p.key == key) return p.subset;
  return "";
}

}  // namespace

TEST_CASE("SM subsetting: a quarter H100 keeps a quarter of every unit and each unit's own figures", "[subset]") {
  const Config full = subset_test_h100({"sim.subset=4"});
  GpuSubset s;
  const Config quarter = subset_config(full, s);
  CHECK(s.divisor == 4);
  CHECK(s.gpu_sms == 132);
  CHECK(s.growth("sm.count") == 4);
  // Unit counts: 132 SMs, 8 GPCs, 80 slices, 160 pseudo-channels.
  CHECK(quarter.section("sm").u32("count") == 33);
  CHECK(quarter.section("noc").u32("gpcs") == 2);
  CHECK(quarter.section("l2").u32("slices") == 20);
  CHECK(quarter.section("hbm").u32("channels") == 40);
  // Totals over units keep their value per unit: 50 MiB / 80 slices x 20; 3.352 TB/s / 160 x 40.
  CHECK(quarter.section("l2").u64("size") == 50ull * 1024 * 1024 / 4);
  CHECK(quarter.section("hbm").real("bandwidth") == Approx(3.352e12 / 4));
  CHECK(quarter.section("l2").real("bandwidth") == Approx(full.section("l2").real("bandwidth") / 4));
  CHECK(quarter.section("noc").u32("partition_link_bandwidth") == 1280 / 4);
  CHECK(quarter.section("power").real("leakage") == Approx(60.0 / 4));
  CHECK(quarter.section("power").real("cap") == Approx(700.0 / 4));
  CHECK(quarter.section("power").real("hbm_background") == Approx(10.0 / 4));
  CHECK(subset_value_of(s, "sm.count") == "33");
  CHECK(subset_value_of(s, "l2.size") == "13107200B");
  // Per-unit figures, latencies, partitions and clocks stay.
  for (const char* key : {"gpc_port_bandwidth", "slice_port_bandwidth", "partition_link_latency"})
    CHECK(quarter.section("noc").u32(key) == full.section("noc").u32(key));
  CHECK(quarter.section("l2").u32("partitions") == 2);
  CHECK(quarter.section("l2").u32("mshrs_per_slice") == full.section("l2").u32("mshrs_per_slice"));
  CHECK(quarter.section("l1").u32("bandwidth") == full.section("l1").u32("bandwidth"));
  CHECK(quarter.section("clocks").real("sm") == full.section("clocks").real("sm"));
  CHECK(quarter.section("power").real("sm_active_cycle") == full.section("power").real("sm_active_cycle"));
}

TEST_CASE("SM subsetting: sim.subset 1 is the whole GPU, unchanged", "[subset]") {
  const Config full = subset_test_h100({});
  GpuSubset s;
  const Config same = subset_config(full, s);
  CHECK_FALSE(s.active());
  CHECK(s.scaled.empty());
  CHECK(same.resolved_yaml() == full.resolved_yaml());
}

TEST_CASE("SM subsetting: a GPU that cannot be cut so is one error naming sim.subset and the unit", "[subset]") {
  // More than the GPCs: no GPC would be left.
  const std::string cut = subset_config_error([] {
    GpuSubset s;
    subset_config(subset_test_h100({"sim.subset=16"}), s);
  });
  INFO(cut);
  CHECK(cut.find("sim.subset") != std::string::npos);
  CHECK(cut.find("noc.gpcs is 8") != std::string::npos);
  // The same through the GPU's constructor: one message, not wrapped twice.
  const std::string built = subset_config_error([] { Gpu gpu(subset_test_h100({"sim.subset=16"})); });
  INFO(built);
  CHECK(built.rfind("sim.subset: noc.gpcs is 8", 0) == 0);
  CHECK(built.find("cuts the GPU") == std::string::npos);
  // 1/8: one GPC for two L2 partitions, which the interconnect rejects when the subset GPU is built.
  const std::string rejected = subset_config_error([] { Gpu gpu(subset_test_h100({"sim.subset=8"})); });
  INFO(rejected);
  CHECK(rejected.find("sim.subset 8 cuts the GPU to 1/8") != std::string::npos);
  CHECK(rejected.find("fewer GPCs than L2 partitions") != std::string::npos);
}
