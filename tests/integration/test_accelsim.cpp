// Accel-Sim / NVBit traces through the warpsim command line: the real traces under ../shared/traces/accelsim run
// (skipped when absent) with per-kernel warp-instruction counts equal to the tracer's stats.csv and, for
// pascal-vectoradd, to Accel-Sim's own log; malformed input exits 2; `warpsim convert` both ways keeps results.
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "test_helpers.h"

using namespace wstest;

namespace {

fs::path accelsim_traces() { return fs::path(WARPSIM_SHARED_DIR) / "traces" / "accelsim"; }

// The kernel files of kernelslist.g, in order, as "kernel-N".
std::vector<std::string> listed_kernels(const fs::path& dir) {
  std::vector<std::string> out;
  std::istringstream in(read_text(dir / "kernelslist.g"));
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(".traceg");
    if (at != std::string::npos) out.push_back(line.substr(0, at));
  }
  return out;
}

// stats.csv beside a trace: "kernel-N" -> total_insts (column 11: warp instructions, the sum of the traceg's
// "insts = " lines; the tracer counts each warp's executed instructions).
std::map<std::string, std::uint64_t> tracer_counts(const fs::path& dir) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream in(read_text(dir / "stats.csv"));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
    if (cols.size() < 12) continue;
    const std::string id = cols[0].substr(0, cols[0].find(".trace"));
    out[id] = std::stoull(cols[10]);
  }
  return out;
}

}  // namespace

TEST_CASE("accelsim: the shared traces run and their warp-instruction counts match the tracer's stats.csv",
          "[accelsim][shared]") {
  if (!fs::exists(accelsim_traces())) {
    WARN("warpsim-skip: " << accelsim_traces() << " is absent");
    return;
  }
  int ran = 0;
  for (const char* name : {"pascal-vectoradd", "pascal-matrixmul", "a100-flashinfer-gemm", "a100-nn-onestep"}) {
    const fs::path dir = accelsim_traces() / name;
    if (!fs::exists(dir / "kernelslist.g")) continue;
    INFO(name);
    TempDir out;
    RUN_WARPSIM(r, {"run", "--gpu", "a100_sxm", "--trace", (dir / "kernelslist.g").string(), "--out", out.path().string(),
                    "-q", "--no-progress"});
    REQUIRE(r.exit_code == 0);
    const std::string stats = read_text(out.path() / "stats.json");
    const std::vector<std::string> kernels = listed_kernels(dir);
    const auto expected = tracer_counts(dir);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      INFO(kernels[i]);
      REQUIRE(expected.count(kernels[i]));
      const std::string k = "kernels[" + std::to_string(i) + "]";
      CHECK(stats_number(stats, k + ".warp_instructions") == static_cast<double>(expected.at(kernels[i])));
      CHECK(stats_number(stats, k + ".cycles") > 0);
    }
    CHECK_FALSE(json::find(stats, "kernels[" + std::to_string(kernels.size()) + "]").has_value());
    ++ran;
  }
  if (ran == 0) WARN("warpsim-skip: no trace under " << accelsim_traces());
}

TEST_CASE("accelsim: pascal-vectoradd runs the warp and thread instructions Accel-Sim's own log counts", "[accelsim][shared]") {
  const fs::path dir = accelsim_traces() / "pascal-vectoradd";
  if (!fs::exists(dir / "accelsim_log.txt")) {
    WARN("warpsim-skip: " << dir << " is absent");
    return;
  }
  std::smatch m;
  const std::string log = read_text(dir / "accelsim_log.txt");
  REQUIRE(std::regex_search(log, m, std::regex("gpgpu_n_tot_w_icount = (\\d+)")));
  const double accelsim_warp_insts = std::stod(m[1]);
  REQUIRE(std::regex_search(log, m, std::regex("gpu_sim_insn = (\\d+)")));  // thread instructions (active lanes)
  const double accelsim_thread_insts = std::stod(m[1]);
  TempDir out;
  RUN_WARPSIM(r, {"run", "--gpu", "a100_sxm", "--trace", (dir / "kernelslist.g").string(), "--out", out.path().string(),
                  "-q", "--no-progress"});
  REQUIRE(r.exit_code == 0);
  const std::string stats = read_text(out.path() / "stats.json");
  CHECK(stats_number(stats, "kernels[0].warp_instructions") == accelsim_warp_insts);
  CHECK(stats_number(stats, "kernels[0].thread_instructions") == accelsim_thread_insts);
}

TEST_CASE("accelsim: a malformed trace exits 2 with one error naming the file and line", "[accelsim]") {
  TempDir dir;
  write_text(dir.path() / "kernelslist.g", "MemcpyHtoD,0x1000,64\nkernel-1.traceg\n");
  RUN_WARPSIM(missing, {"run", "--gpu", "a100_sxm", "--trace", dir / "kernelslist.g", "--out", dir / "out", "-q"});
  CHECK(missing.exit_code == 2);
  CHECK(count_lines_containing(missing.err, "error:") == 1);
  CHECK(contains(missing.err, dir / "kernelslist.g" + ":2: kernel file"));
  CHECK_FALSE(fs::exists(dir.path() / "out" / "stats.json"));

  write_text(dir.path() / "kernel-1.traceg",
             "-kernel name = k\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-shmem = 0\n-nregs = 8\n-binary version = 80\n"
             "-accelsim tracer version = 5\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
             "0000 ffffffff 1 R1 FROB 0 0 0\n0010 ffffffff 0 EXIT 0 0 0\n#END_TB\n");
  RUN_WARPSIM(unknown, {"run", "--gpu", "a100_sxm", "--trace", dir / "kernelslist.g", "--out", dir / "out", "-q"});
  CHECK(unknown.exit_code == 2);
  CHECK(count_lines_containing(unknown.err, "error:") == 1);
  CHECK(contains(unknown.err, dir / "kernel-1.traceg" + ":12: unknown SASS opcode 'FROB'"));
}

TEST_CASE("accelsim: convert native -> accelsim -> native keeps the simulated results", "[accelsim][convert]") {
  TempDir dir;
  RUN_WARPSIM(synth, {"synth", "gemm", "--m", "128", "--n", "128", "--k", "64", "--gpu", "a100_sxm", "-o", dir / "g.wst"});
  REQUIRE(synth.exit_code == 0);
  RUN_WARPSIM(to_accelsim, {"convert", "--from", "native", dir / "g.wst", "--to", "accelsim", dir / "acc"});
  REQUIRE(to_accelsim.exit_code == 0);
  REQUIRE(fs::exists(dir.path() / "acc" / "kernelslist.g"));
  RUN_WARPSIM(to_native, {"convert", "--from", "accelsim", dir / "acc", "--to", "native", dir / "back.wst"});
  REQUIRE(to_native.exit_code == 0);
  std::vector<std::string> results;
  for (const std::string& trace : {dir / "g.wst", dir / "acc/kernelslist.g", dir / "back.wst"}) {
    const std::string out = dir / ("out" + std::to_string(results.size()));
    RUN_WARPSIM(r, {"run", "--gpu", "a100_sxm", "--trace", trace, "--out", out, "-q", "--no-progress"});
    REQUIRE(r.exit_code == 0);
    results.push_back(read_text(fs::path(out) / "stats.json"));
  }
  for (std::size_t i = 1; i < results.size(); ++i) {
    INFO("conversion " << i);
    CHECK(stats_number(results[i], "kernels[0].warp_instructions") == stats_number(results[0], "kernels[0].warp_instructions"));
    CHECK(stats_number(results[i], "kernels[0].cycles") == stats_number(results[0], "kernels[0].cycles"));
  }
}

TEST_CASE("accelsim: a native trace's spin-waits are written as one load each, and convert says so", "[accelsim][convert][semaphore]") {
  TempDir dir;
  // Stream-K over 12 CTAs: 4 tiles shared by 3-4 CTAs, whose later CTAs wait at their fixup (one poll each in the
  // trace).
  RUN_WARPSIM(synth, {"synth", "gemm", "--m", "64", "--n", "512", "--k", "8192", "--decomposition", "stream_k",
                      "--stream_k_ctas", "12", "--gpu", "a100_sxm", "-o", dir / "sk.wst"});
  REQUIRE(synth.exit_code == 0);
  RUN_WARPSIM(convert, {"convert", "--from", "native", dir / "sk.wst", "--to", "accelsim", dir / "acc"});
  INFO(convert.out << convert.err);
  REQUIRE(convert.exit_code == 0);
  CHECK(count_lines_containing(convert.err, "spin-wait polls (LDG with a wait count, trace format 1.6) written as one "
                                            "load each") == 1);
  // A trace without waits converts without the warning.
  RUN_WARPSIM(plain, {"synth", "gemm", "--m", "128", "--n", "128", "--k", "64", "--gpu", "a100_sxm", "-o", dir / "g.wst"});
  REQUIRE(plain.exit_code == 0);
  RUN_WARPSIM(quiet, {"convert", "--from", "native", dir / "g.wst", "--to", "accelsim", dir / "acc2"});
  REQUIRE(quiet.exit_code == 0);
  CHECK(count_lines_containing(quiet.err, "spin-wait") == 0);
}

TEST_CASE("accelsim: a B200 GEMM through Accel-Sim runs its tcgen05 MMAs timed and says what ran untimed",
          "[accelsim][convert][untimed][tcgen05]") {
  TempDir dir;
  // The tcgen05 kernel (sm_100): UTCMMA, UTCBAR, LDTM, TMA and mbarrier records. Written as Accel-Sim text, the
  // MMAs keep their shape modifier (timed); the TMA loads, mbarrier operations and commits lose what timing needs.
  RUN_WARPSIM(synth, {"synth", "gemm", "--m", "512", "--n", "1024", "--k", "512", "--split_k", "1", "--gpu", "b200",
                      "-o", dir / "g.wst"});
  REQUIRE(synth.exit_code == 0);
  RUN_WARPSIM(to_accelsim, {"convert", "--from", "native", dir / "g.wst", "--to", "accelsim", dir / "acc"});
  REQUIRE(to_accelsim.exit_code == 0);
  CHECK(contains(read_text(dir.path() / "acc" / "kernel-1.traceg"), "-binary version = 100"));
  RUN_WARPSIM(r, {"run", "--gpu", "b200", "--trace", dir / "acc", "--out", dir / "out", "--no-progress"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string stats = read_text(dir.path() / "out" / "stats.json");
  // Every MMA ran on the tensor pipe: executed tensor work equals the problem's 2mnk.
  CHECK(stats_number(stats, "kernels[0].speed_of_light.tensor.executed_flops") == 2.0 * 512 * 1024 * 512);
  std::set<std::string> untimed;
  for (int i = 0; json::string(stats, "kernels[0].untimed[" + std::to_string(i) + "].opcode"); ++i) {
    untimed.insert(*json::string(stats, "kernels[0].untimed[" + std::to_string(i) + "].opcode"));
    CHECK(stats_number(stats, "kernels[0].untimed[" + std::to_string(i) + "].instructions") > 0);
  }
  const std::set<std::string> expected{"SYNCS", "UTCBAR", "UTMALDG"};
  CHECK(untimed == expected);
  CHECK(count_lines_containing(r.out, "captured instructions ran as NOPs") == 1);
  // Converting back to native says what became NOPs; a native run has nothing untimed.
  RUN_WARPSIM(back, {"convert", "--from", "accelsim", dir / "acc", "--to", "native", dir / "back.wst"});
  REQUIRE(back.exit_code == 0);
  CHECK(count_lines_containing(back.err, "UTMALDG instruction(s) in 1 kernel(s) written as untimed NOPs") == 1);
  RUN_WARPSIM(native, {"run", "--gpu", "b200", "--trace", dir / "g.wst", "--out", dir / "out2", "-q", "--no-progress"});
  REQUIRE(native.exit_code == 0);
  CHECK_FALSE(json::string(read_text(dir.path() / "out2" / "stats.json"), "kernels[0].untimed[0].opcode"));
}
