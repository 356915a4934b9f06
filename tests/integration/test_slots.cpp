// Slot contracts end to end: a DRAM implementation other than the default, selected from a user's YAML, reports
// its own counters and the right DRAM totals, and its bounded queue pushes back on L2; the per-component
// statistics add up; probe points are listed.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_helpers.h"

using namespace wstest;

namespace {

using Json = nlohmann::json;

Json run_stats(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"run", "--out", dir / "out", "-q", "--no-progress"};
  all.insert(all.end(), args.begin(), args.end());
  const CmdResult r = run_warpsim(all);
  INFO(describe(all, r));
  REQUIRE(r.exit_code == 0);
  return Json::parse(read_text(dir.path() / "out" / "stats.json"));
}

}  // namespace

TEST_CASE("A second DRAM implementation selected from YAML reports its counters and the DRAM totals", "[slots]") {
  TempDir dir;
  // A user's config anywhere, deriving from the shipped H100 by name: only the DRAM model changes; the slot's
  // shared parameters (bandwidth, channels, granularity) carry over from the base.
  // hbm_simple with two-entry queues, so that a burst of misses must wait for room.
  write_text(dir.path() / "simple.yaml",
             "base: h100_sxm\n"
             "hbm:\n  impl: hbm_simple\n  read_queue_depth: 1\n  write_queue_depth: 1\n");
  const Json simple = run_stats(dir, {"--gpu", dir / "simple.yaml", "--gemm", "1024x1024x1024"});
  std::uint64_t simple_waits = 0;
  for (const Json& kernel : simple["kernels"]) simple_waits += kernel["counters"]["l2.dram_backpressure_waits"].get<std::uint64_t>();
  CHECK(simple_waits > 0);
  // The detailed model with two-entry read and write queues.
  write_text(dir.path() / "banked.yaml",
             "base: h100_sxm\n"
             "hbm:\n  impl: hbm_detailed\n  read_queue_depth: 2\n  write_queue_depth: 2\n"
             "  write_high_watermark: 2\n  write_low_watermark: 1\n");
  const Json stats = run_stats(dir, {"--gpu", dir / "banked.yaml", "--gemm", "1024x1024x1024"});
  // The GEMM is the kernel with the tensor work (split-K runs a zeroing kernel before it and a conversion after).
  const Json* gemm = &stats["kernels"][0];
  for (const Json& kernel : stats["kernels"])
    if (kernel["flops"].get<std::uint64_t>() > 0) gemm = &kernel;
  const Json& k = *gemm;
  const Json& c = k["counters"];
  // Every byte of A and B (1024x1024 bf16 each) comes from DRAM exactly once: the 50 MB L2 holds them all.
  CHECK(k["dram_bytes_read"].get<std::uint64_t>() == 2ull * 1024 * 1024 * 2);
  CHECK(c["hbm.bytes_read"].get<std::uint64_t>() == k["dram_bytes_read"].get<std::uint64_t>());
  // The implementation's own counters, summed and per channel; every request is a row hit, miss or conflict.
  REQUIRE(c.contains("hbm.row_hits"));
  REQUIRE(c.contains("hbm.row_misses"));
  REQUIRE(c.contains("hbm.row_conflicts"));
  CHECK(c["hbm.row_hits"].get<std::uint64_t>() + c["hbm.row_misses"].get<std::uint64_t>() +
            c["hbm.row_conflicts"].get<std::uint64_t>() ==
        c["hbm.requests"].get<std::uint64_t>());
  CHECK(c["hbm.row_misses"].get<std::uint64_t>() > 0);
  CHECK(k["instances"].contains("hbm.channel[0].row_hits"));
  CHECK(c["hbm.row_hit_rate"].get<double>() > 0.0);
  // A two-entry queue cannot take a burst of misses: the slices waited for room.
  CHECK(c["l2.dram_backpressure_waits"].get<std::uint64_t>() > 0);
  // The per-instance values add up to the totals.
  std::uint64_t per_channel = 0;
  for (const auto& [name, value] : k["instances"].items())
    if (name.rfind("hbm.channel[", 0) == 0 && name.size() > 11 && name.substr(name.size() - 11) == ".bytes_read")
      per_channel += value.get<std::uint64_t>();
  CHECK(per_channel == c["hbm.bytes_read"].get<std::uint64_t>());
}

TEST_CASE("describe lists a slot's implementations with the shared parameters, and the statistics", "[slots]") {
  const CmdResult r = run_warpsim({"describe", "hbm"});
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "hbm:  (impl: hbm_detailed)"));
  CHECK(contains(r.out, "hbm:  (impl: hbm_simple)"));
  // The slot's shared parameter appears with every implementation (hbm_simple, hbm_detailed, ideal, ...).
  const int impls = count_lines_containing(r.out, "hbm:  (impl: ");
  CHECK(impls >= 3);
  CHECK(count_lines_containing(r.out, "  channels ") == impls);
  CHECK(contains(r.out, "hbm.bytes_read"));
  CHECK(contains(r.out, "hbm.utilization"));
}

TEST_CASE("An unknown DRAM implementation is a config error that lists the known ones", "[slots]") {
  TempDir dir;
  const CmdResult r = run_warpsim({"run", "--set", "hbm.impl=hbm_detaild", "--gemm", "128x128x128", "--out", dir / "o"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "did you mean 'hbm_detailed'"));
}

TEST_CASE("compare --gpu simulates each candidate through run_one and matches separate runs", "[compare]") {
  TempDir dir;
  // K = 64 is too shallow for split-K: one kernel on each GPU, so the rows compare one kernel's time.
  const Json alone = run_stats(dir, {"--gpu", "a100_sxm", "--gemm", "256x512x64"});
  const CmdResult r = run_warpsim({"compare", "--gpu", "h100_sxm", "--gpu", "a100_sxm", "--gemm", "256x512x64"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "[0] h100_sxm: NVIDIA H100"));
  CHECK(contains(r.out, "[1] a100_sxm: NVIDIA A100"));
  // The A100 row shows the same time as `warpsim run` on the A100 (the plain driver gives identical results).
  const std::string a100_time = fmt::format("{:.2f}", alone["kernels"][0]["time_us"].get<double>());
  CHECK(contains(r.out, "  [1] " + std::string(12 - a100_time.size(), ' ') + a100_time + " "));
  CHECK(contains(r.out, "  [0] "));
  // One candidate is no comparison; finished runs and configs to simulate do not mix.
  CHECK(run_warpsim({"compare", "--gpu", "h100_sxm", "--gemm", "128x128x128"}).exit_code == 2);
  CHECK(run_warpsim({"compare", dir / "out", "--gpu", "h100_sxm", "--gpu", "a100_sxm"}).exit_code == 2);
}
