// `warpsim validate --ncu`: the Nsight Compute importer run through the real binary on the hand-made fixture
// (tests/data/ncu/sample_raw.csv, seven launches, and sample_map.yaml, which gives four of them a workload):
// cases per launch and metric, the skipped launches listed and counted, the ignored columns named, and the
// errors of the options and of the mapping file (exit status 2 naming the file and line).
#include <catch2/catch.hpp>

#include "test_helpers.h"

using namespace wstest;

namespace {

std::string ncu_data(const std::string& name) { return (source_dir() / "tests" / "data" / "ncu" / name).string(); }

// One clear message: exit status 2 and exactly one "error:" line on stderr, containing every `expected` part.
void check_error(const CmdResult& r, const std::vector<std::string>& expected) {
  CHECK(r.exit_code == 2);
  CHECK(count_lines_containing(r.err, "error:") == 1);
  for (const std::string& e : expected) CHECK(contains(r.err, e));
}

}  // namespace

TEST_CASE("validate --ncu: mapped launches become cases, the others are listed and counted as skipped",
          "[validate][ncu]") {
  TempDir dir;
  RUN_WARPSIM(r, {"validate", "--ncu", ncu_data("sample_raw.csv"), "--gpu", "h100_sxm", "--map",
                  ncu_data("sample_map.yaml"), "--json", dir / "v.json", "-j", "2"});
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir / "v.json");
  // The fixture: 7 launches; the map gives rows 1-4 a workload (3 GEMMs, 1 attention); its header has 7 metric
  // columns that give cases (time, cycles, DRAM read and written, which also give the bandwidth, L2 hit rate,
  // occupancy, and the SM throughput of the Speed Of Light section): 8 cases per launch.
  CHECK(json::number(j, "summary.overall.cases") == 4 * 8);
  CHECK(json::number(j, "summary.overall.ok") == 4 * 8);
  CHECK(json::number(j, "summary.overall.unsupported") == 0);
  CHECK(json::number(j, "summary.overall.failed") == 0);
  CHECK(json::number(j, "summary.by_category.gemm.ok") == 3 * 8);
  // Rows 5 (elementwise), 6 (NCCL) and 7 (the CUTLASS GEMM the map leaves out): skipped, with their reasons.
  CHECK(json::number(j, "summary.skipped_launches") == 3);
  CHECK(json::number(j, "ncu.launches") == 7);
  CHECK(json::number(j, "skipped_launches[0].row") == 5);
  CHECK(json::string(j, "skipped_launches[0].reason") == "shape unknown: add it to --map");  // the kind exists; its size is not in the export
  CHECK(json::number(j, "skipped_launches[1].row") == 6);
  CHECK(json::string(j, "skipped_launches[1].reason") == "no synthesizer for nccl");
  CHECK(json::number(j, "skipped_launches[2].row") == 7);
  CHECK(json::number(j, "skipped_launches[2].line") == 10);
  CHECK(json::string(j, "skipped_launches[2].reason") == "shape unknown: add it to --map");
  CHECK(contains(*json::string(j, "skipped_launches[2].kernel"), "cutlass_80_tensorop_f16_s16816gemm"));
  CHECK_FALSE(json::has(j, "skipped_launches[3]"));
  // The four launch__ columns give no case; each is named (the SM throughput is the compute_throughput case).
  CHECK(json::string(j, "ncu.ignored_columns[0].column") == "launch__block_size");
  CHECK(json::has(j, "ncu.ignored_columns[3]"));
  CHECK_FALSE(json::has(j, "ncu.ignored_columns[4]"));
  // A case carries the export's cell: row 1's duration, 702,528 ns.
  CHECK(json::string(j, "cases[0].id") == "ncu.1.sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64.time_us");
  CHECK(*json::number(j, "cases[0].measured") == Approx(702.528));
  CHECK(json::string(j, "cases[0].gpu") == "h100_sxm");
  CHECK(json::string(j, "cases[0].status") == "ok");

  // Before the table: the skipped launches (row, line, kernel, reason) and one line of ignored columns.
  CHECK(contains(r.out, "7 launches, 32 cases, 3 launches skipped"));
  CHECK(count_lines_containing(r.out, "skipped row ") == 3);
  CHECK(contains(r.out, "skipped row 5 (line 8) vectorized_elementwise_kernel: shape unknown: add it to --map"));
  CHECK(count_lines_containing(r.out, "ignored 4 columns: launch__block_size, launch__grid_size, "
                                      "launch__registers_per_thread, launch__shared_mem_per_block_static: launch "
                                      "parameter") == 1);
  CHECK(r.out.find("skipped row 5") < r.out.find("measured"));
  // And counted in the summary.
  CHECK(contains(r.out, "3 of 7 launches of " + ncu_data("sample_raw.csv")));
}

TEST_CASE("validate --ncu with --reference: both sets of cases run, --only selects among them", "[validate][ncu]") {
  TempDir dir;
  RUN_WARPSIM(r, {"validate", "--ncu", ncu_data("sample_raw.csv"), "--gpu", "h100_sxm", "--map",
                  ncu_data("sample_map.yaml"), "--reference",
                  (source_dir() / "tests" / "data" / "validate_small.yaml").string(), "--only",
                  "^ncu\\.2\\..*time_us$|^h100\\.gemm\\.bf16\\.256$", "--json", dir / "v.json"});
  REQUIRE(r.exit_code == 0);
  const std::string j = read_text(dir / "v.json");
  CHECK(json::number(j, "summary.overall.cases") == 2);
  CHECK(json::string(j, "cases[0].id") == "h100.gemm.bf16.256");  // reference files first, then the export
  CHECK(json::string(j, "cases[1].id") == "ncu.2.sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64.time_us");
  CHECK(json::number(j, "summary.skipped_launches") == 3);  // --only selects cases, the skips stay reported
}

TEST_CASE("validate --ncu: option errors and a bad mapping are exit 2 naming the option or FILE:LINE",
          "[validate][ncu][errors]") {
  TempDir dir;
  const std::string csv = ncu_data("sample_raw.csv");
  {
    RUN_WARPSIM(r, {"validate", "--ncu", csv, "--map", ncu_data("sample_map.yaml")});
    check_error(r, {"--ncu: give --gpu CONFIG too"});
  }
  {
    RUN_WARPSIM(r, {"validate", "--map", ncu_data("sample_map.yaml"), "--gpu", "h100_sxm"});
    check_error(r, {"--map:", "--ncu REPORT.csv"});
  }
  {
    RUN_WARPSIM(r, {"validate", "--ncu", csv, "--gpu", "h100_sxn"});
    check_error(r, {"h100_sxn", "did you mean 'h100_sxm'?"});
  }
  {
    // Without a mapping no launch gives a case: each is listed, then one error.
    RUN_WARPSIM(r, {"validate", "--ncu", csv, "--gpu", "h100_sxm"});
    check_error(r, {"no launch of " + csv + " gave one"});
    CHECK(count_lines_containing(r.out, "skipped row ") == 7);
  }
  {
    RUN_WARPSIM(r, {"validate", "--ncu", csv, "--gpu", "h100_sxm", "--map", dir / "absent.yaml"});
    check_error(r, {"cannot open --map file '" + dir / "absent.yaml" + "': No such file or directory"});
  }
  const std::string map = dir / "map.yaml";
  struct Bad {
    std::string text;
    std::vector<std::string> expected;
  };
  // Nested aliases: 9 levels of 10 would expand to 10^9 values.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::vector<Bad> bad = {
      {"- match: gemm\n  shape: {m: 1}\n", {map + ":2: unknown field 'shape'"}},
      {"- match: '^nvjet'\n  workload: {kind: gemm, m: 64, n: 64, kk: 64, dtype: fp16}\n", {map + ":2:", "workload:", "kk"}},
      {"- match: '^nvjet'\n  workload: {kind: gemm, m: 64}\n  workload: {kind: gemm}\n", {map + ":3:", "given twice"}},
      {bomb, {map + ":", "nested aliases"}},
      {"- match: gemm\n  note: \"caf\xe9\"\n", {map + ":2:", "not UTF-8"}},
  };
  for (const Bad& b : bad) {
    write_text(map, b.text);
    RUN_WARPSIM(r, {"validate", "--ncu", csv, "--gpu", "h100_sxm", "--map", map});
    INFO(b.text);
    check_error(r, b.expected);
  }
}

TEST_CASE("validate --help describes --ncu and --map", "[validate][ncu][help]") {
  RUN_WARPSIM(r, {"validate", "--help"});
  CHECK(r.exit_code == 0);
  for (const char* s : {"--ncu REPORT.csv --gpu CONFIG", "--map", "skipped", "docs/ncu-import.md"}) CHECK(contains(r.out, s));
}
