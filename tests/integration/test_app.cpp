// The application floor's papercuts, each driven as a user hits it: stray positional arguments, config names
// versus paths (the current directory must not shadow a shipped config; `base: h100_sxm` from anywhere), the
// synthesizer and trace-reader registries on the command line, ranges in `describe`, and `compare` matching
// kernels by name and shape.
#include <catch2/catch.hpp>

#include <regex>

#include "test_helpers.h"

using namespace wstest;

namespace {

// One clear message: exit status 2 and exactly one "error:" line on stderr.
void check_one_error(const CmdResult& r) {
  CHECK(r.exit_code == 2);
  CHECK(count_lines_containing(r.err, "error:") == 1);
}

std::vector<std::string> quiet_run(const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> a{"run", "--out", out, "-q", "--no-progress"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

// ---- command-line parsing ------------------------------------------------------------------------------------

TEST_CASE("run: a stray positional argument is an error, not a silent H100 run", "[app][args]") {
  TempDir dir;
  RUN_WARPSIM(r, {"run", "a100_sxm", "--gemm", "256x256x256", "--out", dir / "out", "-q", "--no-progress"});
  check_one_error(r);
  CHECK(contains(r.err, "unexpected argument 'a100_sxm'"));
  CHECK_FALSE(fs::exists(dir.path() / "out" / "stats.json"));
  RUN_WARPSIM(c, {"config", "h200_sxm"});
  check_one_error(c);
  CHECK(contains(c.err, "'h200_sxm'"));
}

// ---- config names ----------------------------------------------------------------------------------------------

TEST_CASE("config name: a folder or file in the current directory does not shadow a shipped config", "[app][config]") {
  TempDir cwd;
  fs::create_directory(cwd.path() / "h200_sxm");                   // e.g. an earlier `--out h200_sxm`
  write_text(cwd.path() / "a100_sxm", "not: a config\n");          // a stray file of the same name
  RUN_WARPSIM_IN(r, cwd.path().string(), {"config", "--gpu", "h200_sxm"});
  REQUIRE(r.exit_code == 0);
  CHECK(read_flat_yaml(r.out).at("gpu.arch") == "sm_90");
  // The log line names the shipped file (and its base).
  CHECK(contains(r.err, shipped_config("h200_sxm")));
  RUN_WARPSIM_IN(a, cwd.path().string(), {"config", "--gpu", "a100_sxm"});
  REQUIRE(a.exit_code == 0);
  CHECK(read_flat_yaml(a.out).at("gpu.arch") == "sm_80");
}

TEST_CASE("config name: the run records and logs the config file it used", "[app][config]") {
  TempDir dir;
  RUN_WARPSIM(r, quiet_run(dir / "out", {"--gpu", "a100_sxm", "--gemm", "256x256x256"}));
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.err, "info: GPU config " + shipped_config("a100_sxm")));
  CHECK(json::string(read_text(dir.path() / "out" / "stats.json"), "sim.config_files").value_or("") ==
        shipped_config("a100_sxm"));
}

TEST_CASE("config name: `base: h100_sxm` works from a user's YAML anywhere, and a wrong name is one error", "[app][config]") {
  TempDir dir;
  write_text(dir.path() / "mine.yaml", "base: h100_sxm\nsm: {count: 100}\n");
  RUN_WARPSIM_IN(r, dir.path().string(), {"config", "--gpu", "mine.yaml"});
  REQUIRE(r.exit_code == 0);
  const auto cfg = read_flat_yaml(r.out);
  CHECK(config_number(cfg, "sm.count") == 100);
  CHECK(config_number(cfg, "clocks.sm") == Approx(1.83e9));  // inherited from the shipped H100
  write_text(dir.path() / "typo.yaml", "base: h100_sxn\n");
  RUN_WARPSIM_IN(bad, dir.path().string(), {"config", "--gpu", "typo.yaml"});
  check_one_error(bad);
  CHECK(contains(bad.err, "typo.yaml:1:"));
  CHECK(contains(bad.err, "h100_sxn"));
}

TEST_CASE("config name: WARPSIM_CONFIG_DIR replaces the shipped configs", "[app][config]") {
  TempDir dir;
  write_text(dir.path() / "tiny.yaml", "base: " + shipped_config("h100_sxm") + "\nsm: {count: 8}\n");
  setenv("WARPSIM_CONFIG_DIR", dir.path().c_str(), 1);
  RUN_WARPSIM(r, {"config", "--gpu", "tiny"});
  RUN_WARPSIM(missing, {"config", "--gpu", "h100_sxm"});
  unsetenv("WARPSIM_CONFIG_DIR");
  REQUIRE(r.exit_code == 0);
  CHECK(config_number(read_flat_yaml(r.out), "sm.count") == 8);
  check_one_error(missing);
  CHECK(contains(missing.err, dir.path().string()));
}

// ---- synthesizer and trace-reader registries ------------------------------------------------------------------

TEST_CASE("synth --help lists every registered kind with its keys", "[app][synth]") {
  RUN_WARPSIM(r, {"synth", "--help"});
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "\ngemm: "));
  for (const char* key : {"m", "n", "k", "dtype"})
    CHECK(std::regex_search(r.out, std::regex(std::string("\n  ") + key + " +\\S")));
  CHECK(contains(r.out, "choice {bf16|fp16|f16|fp8|tf32|int8|i8|fp64|f64|fp4}"));
}

TEST_CASE("synth: unknown kinds and keys, missing and bad values are one clear error each", "[app][synth]") {
  {
    RUN_WARPSIM(r, {"synth", "gemn", "--m", "256"});
    check_one_error(r);
    CHECK(contains(r.err, "did you mean 'gemm'"));
  }
  {
    RUN_WARPSIM(r, {"synth", "gemm", "--mm", "256", "--n", "256", "--k", "256"});
    check_one_error(r);
    CHECK(contains(r.err, "'--mm'"));
    CHECK(contains(r.err, "did you mean '--m'"));
  }
  {
    RUN_WARPSIM(r, {"synth", "gemm", "--m", "256", "--n", "256"});
    check_one_error(r);
    CHECK(contains(r.err, "'k' is required"));
  }
  {
    RUN_WARPSIM(r, {"synth", "gemm", "--m", "256", "--n", "0", "--k", "256"});
    check_one_error(r);
    CHECK(contains(r.err, "gemm key 'n'"));
  }
  {
    RUN_WARPSIM(r, {"synth", "gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", "fp6"});
    check_one_error(r);
    CHECK(contains(r.err, "bf16 | fp16 | f16 | fp8"));
  }
  {
    RUN_WARPSIM(r, {"synth", "gemm", "stray", "--m", "256", "--n", "256", "--k", "256"});
    check_one_error(r);
    CHECK(contains(r.err, "unexpected argument 'stray'"));
  }
}

TEST_CASE("run --synth KIND --synth-key k=v is the same run as the --gemm shorthand", "[app][synth]") {
  TempDir dir;
  RUN_WARPSIM(a, quiet_run(dir / "a", {"--synth", "gemm", "--synth-key", "m=256", "--synth-key", "n=512",
                                       "--synth-key", "k=256", "--synth-key", "dtype=fp16"}));
  REQUIRE(a.exit_code == 0);
  RUN_WARPSIM(b, quiet_run(dir / "b", {"--gemm", "256x512x256", "--dtype", "fp16"}));
  REQUIRE(b.exit_code == 0);
  const std::string ja = read_text(dir.path() / "a" / "stats.json"), jb = read_text(dir.path() / "b" / "stats.json");
  REQUIRE(json::raw(ja, "kernels").has_value());
  CHECK(json::raw(ja, "kernels") == json::raw(jb, "kernels"));
  RUN_WARPSIM(bad, quiet_run(dir / "c", {"--synth", "gemm", "--synth-key", "mm=256"}));
  check_one_error(bad);
  CHECK(contains(bad.err, "did you mean 'm'"));
  RUN_WARPSIM(both, quiet_run(dir / "d", {"--synth", "gemm", "--gemm", "256x256x256"}));
  check_one_error(both);
}

TEST_CASE("run --trace: a file no reader recognises lists the known formats", "[app][trace]") {
  TempDir dir;
  // kernelslist.g is now an Accel-Sim trace (traces/readers/accelsim): a name and content no reader claims.
  write_text(dir.path() / "profile.dat", "-kernel-1.traceg\n");
  RUN_WARPSIM(r, quiet_run(dir / "out", {"--trace", dir / "profile.dat"}));
  check_one_error(r);
  CHECK(contains(r.err, dir / "profile.dat"));
  CHECK(contains(r.err, "native"));
  CHECK(contains(r.err, "Accel-Sim"));
  CHECK(contains(r.err, "Kineto"));
}

// ---- describe ranges ------------------------------------------------------------------------------------------

TEST_CASE("describe prints the range of parameters that have one", "[app][describe]") {
  RUN_WARPSIM(r, {"describe", "sm"});
  REQUIRE(r.exit_code == 0);
  // sm.count is declared with a range of 1..4096 SMs (models/sm); a choice has none.
  CHECK(std::regex_search(r.out, std::regex(R"(\n  count +uint \[SMs\] in \[1, [0-9]+\][^\n]*required\n)")));
  CHECK_FALSE(std::regex_search(r.out, std::regex(R"(\n  scheduler\.policy +choice[^\n]* in \[)")));
}

// ---- compare -------------------------------------------------------------------------------------------------

TEST_CASE("compare matches kernels by name and shape, lists unmatched ones and totals each run", "[app][compare]") {
  TempDir dir;
  const std::string trace_a = dir / "a.wst", trace_b = dir / "b.wst";
  // Run a: GEMMs 256^3 then 512x256x256; run b: the same two in the other order, so position would mismatch,
  // plus a kernel run a lacks (via a third trace).
  for (const auto& [file, m] : {std::pair{trace_a, "256"}, std::pair{trace_b, "512"}}) {
    RUN_WARPSIM(s, {"synth", "gemm", "--m", m, "--n", "256", "--k", "256", "-o", file});
    REQUIRE(s.exit_code == 0);
  }
  RUN_WARPSIM(a, quiet_run(dir / "a", {"--trace", trace_a}));
  RUN_WARPSIM(b, quiet_run(dir / "b", {"--trace", trace_b}));
  RUN_WARPSIM(c, quiet_run(dir / "c", {"--trace", trace_a, "--set", "sm.tensor.flops_per_cycle.bf16=1024"}));
  REQUIRE((a.exit_code == 0 && b.exit_code == 0 && c.exit_code == 0));
  RUN_WARPSIM(cmp, {"compare", dir / "a", dir / "b", dir / "c"});
  REQUIRE(cmp.exit_code == 0);
  // a's kernel: [1] does not have it, [2] does (slower: half the tensor throughput).
  CHECK(std::regex_search(cmp.out, std::regex(R"(\(256x256x256\) \(grid [0-9x]+, block [0-9x]+\)\n.*\n  \[0\] +[0-9.]+ +1\.000x[^\n]*\n  \[1\] not in this run\n  \[2\] +[0-9.]+ +0\.[0-9]+x)")));
  // b's kernel is listed as unmatched.
  CHECK(std::regex_search(cmp.out, std::regex(R"(kernels not in the baseline[^\n]*\n  \[1\] [^\n]*\(512x256x256\))")));
  // A totals row per run.
  CHECK(std::regex_search(cmp.out, std::regex(R"(\ntotal[^\n]*\n[^\n]*\n  \[0\] +[0-9.]+ +1\.000x\n  \[1\] +[0-9.]+ +[0-9.]+x\n  \[2\] +[0-9.]+ +0\.[0-9]+x\n)")));
}
