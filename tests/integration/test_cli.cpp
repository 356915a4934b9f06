// The `warpsim` command line, driven as a user would: help and usage, `describe`, configuration and trace
// errors (exit status 2 and one message that says where and what), the output files of `run`, and round trips
// (resolved config -> same results; synthesized trace file -> same results as the in-memory GEMM).
#include <catch2/catch.hpp>

#include <random>
#include <regex>
#include <set>

#include "test_helpers.h"

using namespace wstest;

namespace {

// A failed run: exit status 2, exactly one "error:" line on stderr, nothing written to `out`.
void check_input_error(const CmdResult& r, const fs::path& out) {
  CHECK(r.exit_code == 2);
  CHECK_FALSE(r.err.empty());
  CHECK(count_lines_containing(r.err, "error:") == 1);
  CHECK_FALSE(fs::exists(out / "stats.json"));
}

std::vector<std::string> small_run(const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"run", "--out", out, "-q", "--no-progress"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

// ---- help and usage ------------------------------------------------------------------------------------------

TEST_CASE("help: every command prints its usage and exits 0", "[cli][help]") {
  {
    RUN_WARPSIM(r, {"--help"});
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "usage: warpsim"));
    for (const char* cmd : {"run", "synth", "describe", "config"}) CHECK(contains(r.out, cmd));
  }
  for (const std::string cmd : {"run", "synth", "describe", "config"}) {
    RUN_WARPSIM(r, {cmd, "--help"});
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "usage: warpsim " + cmd));
    CHECK(contains(r.out, "--help"));
  }
  {
    RUN_WARPSIM(r, {"run", "--help"});
    for (const char* opt : {"--gpu", "--trace", "--gemm", "--dtype", "--set", "--out", "--driver"}) CHECK(contains(r.out, opt));
  }
}

TEST_CASE("usage: an unknown command exits 2 with a suggestion", "[cli][help]") {
  RUN_WARPSIM(r, {"rnu"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "rnu"));
  CHECK(contains(r.err, "did you mean 'run'"));
  CHECK(count_lines_containing(r.err, "error:") == 1);
}

TEST_CASE("usage: an unknown option of run exits 2", "[cli][help]") {
  TempDir out;
  RUN_WARPSIM(r, small_run(out / "res", {"--gemm", "256x256x256", "--gpuu", "h100_sxm"}));
  check_input_error(r, out.path() / "res");
  CHECK(contains(r.err, "gpuu"));
}

// ---- describe ------------------------------------------------------------------------------------------------

TEST_CASE("describe sm lists parameters with type and default", "[cli][describe]") {
  RUN_WARPSIM(r, {"describe", "sm"});
  REQUIRE(r.exit_code == 0);
  // Hardware numbers have no default in code (the GPU config must give them):
  // "  count    uint [SMs]    required" then an indented description line.
  CHECK(std::regex_search(r.out, std::regex(R"(\n  count +uint\b[^\n]*required\n +\S)")));
  CHECK(std::regex_search(r.out, std::regex(R"(\n  scheduler\.policy +choice \{[^}]*gto[^}]*\}[^\n]*required\n +\S)")));
  // Optional per-opcode overrides do have one.
  CHECK(std::regex_search(r.out, std::regex(R"(\n  opcodes\.MUFU\.latency +uint\b[^\n]*default 0\n +\S)")));
  // Only the sm section.
  CHECK_FALSE(contains(r.out, "\nl2:"));
  CHECK_FALSE(contains(r.out, "\nhbm:"));
}

TEST_CASE("describe with an unknown section exits 2 with a suggestion", "[cli][describe]") {
  RUN_WARPSIM(r, {"describe", "hmb"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "hmb"));
  CHECK(contains(r.err, "did you mean 'hbm'"));
  CHECK(count_lines_containing(r.err, "error:") == 1);
}

TEST_CASE("describe: every section has described parameters", "[cli][describe]") {
  RUN_WARPSIM(r, {"describe"});
  REQUIRE(r.exit_code == 0);
  // Sections start in column 0 ("sm:  (impl: ...)"); a parameter is "  name  type  default X|required" followed by
  // "      description".
  std::map<std::string, int> described;
  std::string section;
  std::istringstream in(r.out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::regex param(R"(^  [a-z0-9_.]+ +\S.*(default \S.*|required)$)");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (!l.empty() && l[0] != ' ') {
      section = l.substr(0, l.find(':'));
      described.emplace(section, 0);
    } else if (std::regex_match(l, param) && i + 1 < lines.size()) {
      const std::string& d = lines[i + 1];
      if (d.rfind("      ", 0) == 0 && d.find_first_not_of(' ') != std::string::npos) ++described[section];
    }
  }
  // The sections a GPU config has (configs/h100_sxm.yaml) must all be there.
  for (const char* s : {"gpu", "clocks", "sm", "l1", "smem", "noc", "l2", "hbm", "sim"}) {
    INFO("section " << s);
    CHECK(described.count(s) == 1);
  }
  // A section may have no parameters (the address map takes its geometry from l2 and hbm), and then says so.
  for (const auto& [s, n] : described) {
    INFO("section '" << s << "' has " << n << " described parameters");
    CHECK((n >= 1 || r.out.find(s + ":  (impl: xor_fold)\n") != std::string::npos));
  }
  CHECK(r.out.find("(no parameters of its own)") != std::string::npos);
}

// ---- configuration errors -----------------------------------------------------------------------------------

namespace {

// A config file `base: <shipped h100>` plus `body` (which starts on line 2).
std::string write_config(const TempDir& dir, const std::string& body) {
  const std::string base = shipped_config("h100_sxm");
  REQUIRE(fs::exists(base));
  const std::string path = dir / "my_gpu.yaml";
  write_text(path, "base: " + base + "\n" + body);
  return path;
}

}  // namespace

TEST_CASE("config error: misspelt key names file:line:col and the dotted key and suggests a fix", "[cli][config]") {
  TempDir dir;
  const std::string cfg = write_config(dir, "sm: {cuont: 140}\n");
  RUN_WARPSIM(r, small_run(dir / "out", {"--gpu", cfg, "--gemm", "256x256x256"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, cfg + ":2:"));
  CHECK(std::regex_search(r.err, std::regex(std::regex_replace(cfg, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                                            R"(:2:[0-9]+)")));
  CHECK(contains(r.err, "sm.cuont"));
  CHECK(contains(r.err, "did you mean 'count'"));
}

TEST_CASE("config error: wrong type names file:line and the key", "[cli][config]") {
  TempDir dir;
  const std::string cfg = write_config(dir, "sm: {count: many}\n");
  RUN_WARPSIM(r, small_run(dir / "out", {"--gpu", cfg, "--gemm", "256x256x256"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, cfg + ":2:"));
  CHECK(contains(r.err, "sm.count"));
  CHECK(contains(r.err, "many"));
}

TEST_CASE("config error: value out of range names file:line and the key", "[cli][config]") {
  TempDir dir;
  const std::string cfg = write_config(dir, "# a comment line\nsm: {count: 0}\n");
  RUN_WARPSIM(r, small_run(dir / "out", {"--gpu", cfg, "--gemm", "256x256x256"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, cfg + ":3:"));
  CHECK(contains(r.err, "sm.count"));
}

TEST_CASE("config error: --set with an unknown key", "[cli][config]") {
  TempDir dir;
  RUN_WARPSIM(r, small_run(dir / "out", {"--gemm", "256x256x256", "--set", "l2.sise=1MiB"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, "l2.sise"));
  CHECK(contains(r.err, "did you mean 'size'"));
}

TEST_CASE("config error: --set without '='", "[cli][config]") {
  TempDir dir;
  RUN_WARPSIM(r, small_run(dir / "out", {"--gemm", "256x256x256", "--set", "sm.count"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, "sm.count"));
}

TEST_CASE("config error: missing config file", "[cli][config]") {
  TempDir dir;
  const std::string missing = dir / "no_such_gpu.yaml";
  RUN_WARPSIM(r, small_run(dir / "out", {"--gpu", missing, "--gemm", "256x256x256"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, missing));
}

TEST_CASE("config error: unknown shipped GPU name gets a suggestion", "[cli][config]") {
  TempDir dir;
  RUN_WARPSIM(r, small_run(dir / "out", {"--gpu", "h100_sxn", "--gemm", "256x256x256"}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, "h100_sxn"));
  CHECK(contains(r.err, "did you mean 'h100_sxm'"));
}

TEST_CASE("config: warpsim config prints the resolved configuration with overrides", "[cli][config]") {
  RUN_WARPSIM(r, {"config", "--gpu", "a100_sxm", "--set", "sm.count=100"});
  REQUIRE(r.exit_code == 0);
  const auto cfg = read_flat_yaml(r.out);
  CHECK(config_number(cfg, "sm.count") == 100);
  CHECK(config_number(cfg, "clocks.sm") == Approx(1.41e9));
  CHECK(config_number(cfg, "hbm.bandwidth") == Approx(2.039e12));
  CHECK(cfg.at("gpu.arch") == "sm_80");
}

// ---- trace errors -------------------------------------------------------------------------------------------

TEST_CASE("trace error: missing trace file names the path", "[cli][trace]") {
  TempDir dir;
  const std::string missing = dir / "missing.wst";
  RUN_WARPSIM(r, small_run(dir / "out", {"--trace", missing}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, missing));
}

TEST_CASE("trace error: a file that is not a warpsim trace", "[cli][trace]") {
  TempDir dir;
  const std::string junk = dir / "junk.bin";
  std::mt19937 rng(12345);
  std::string bytes(8192, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng() & 0xff);
  write_text(junk, bytes);
  RUN_WARPSIM(r, small_run(dir / "out", {"--trace", junk}));
  check_input_error(r, dir.path() / "out");
  CHECK(contains(r.err, junk));
}

TEST_CASE("trace error: a truncated warpsim trace names the file", "[cli][trace]") {
  TempDir dir;
  const std::string full = dir / "gemm.wst";
  {
    RUN_WARPSIM(s, {"synth", "gemm", "--m", "256", "--n", "256", "--k", "256", "-o", full});
    REQUIRE(s.exit_code == 0);
  }
  const std::string bytes = read_text(full);
  REQUIRE(bytes.size() > 64);
  for (const std::size_t keep : {bytes.size() / 2, bytes.size() - 1, std::size_t{16}}) {
    const std::string cut = dir / ("cut_" + std::to_string(keep) + ".wst");
    write_text(cut, bytes.substr(0, keep));
    RUN_WARPSIM(r, small_run(dir / "out", {"--trace", cut}));
    INFO("kept " << keep << " of " << bytes.size() << " bytes");
    check_input_error(r, dir.path() / "out");
    CHECK(contains(r.err, cut));
  }
}

TEST_CASE("trace error: a corrupt CTA block found mid-run is an input error under both drivers", "[cli][trace]") {
  // The index and footer are intact, so the file opens; the damage shows only when the dispatcher opens the
  // CTA during the simulation (inside the SystemC process with the default driver).
  TempDir dir;
  const std::string full = dir / "gemm.wst";
  {
    RUN_WARPSIM(s, {"synth", "gemm", "--m", "512", "--n", "512", "--k", "256", "-o", full});
    REQUIRE(s.exit_code == 0);
  }
  std::string bytes = read_text(full);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0xff);  // inside a CTA block
  const std::string bad = dir / "bad.wst";
  write_text(bad, bytes);
  for (const char* driver : {"systemc", "plain"}) {
    RUN_WARPSIM(r, small_run(dir / "out", {"--trace", bad, "--driver", driver}));
    INFO("driver " << driver);
    check_input_error(r, dir.path() / "out");
    CHECK(contains(r.err, bad));
    CHECK(contains(r.err, "CTA"));
    CHECK(!contains(r.err, "internal error"));
  }
}

// ---- outputs and round trips ------------------------------------------------------------------------------

TEST_CASE("run writes stats.json and stats.csv and a reproducible config.resolved.yaml", "[cli][outputs]") {
  TempDir dir;
  const fs::path out = dir.path() / "res";
  // K = 128 is 2 k-tiles on H100: too short to split (a split-K GEMM would add its helper kernels)
  RUN_WARPSIM(r, {"run", "--gemm", "512x512x128", "--out", out.string(), "--no-progress"});
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "TFLOP/s"));  // the summary (no -q)

  const std::string js = read_text(out / "stats.json");
  CHECK(json::string(js, "gpu").value_or("").size() > 0);
  for (const char* f : {"cycles", "time_us", "warp_instructions", "ipc", "achieved_tflops", "dram_bytes_read",
                        "dram_bytes_written", "achieved_dram_gbps", "occupancy", "utilization.tensor",
                        "utilization.fp32", "utilization.lsu", "utilization.l1", "utilization.l2", "utilization.dram",
                        "stalls.stall_long_scoreboard", "stalls.stall_barrier", "stalls.stall_math_pipe_throttle"}) {
    INFO("kernels[0]." << f);
    CHECK(json::number(js, std::string("kernels[0].") + f).has_value());
  }
  CHECK(json::string(js, "kernels[0].name").value_or("").size() > 0);
  for (const char* f : {"total_cycles", "total_time_us", "sim.wall_s", "sim.warp_instructions_per_s", "sim.peak_rss_mb"}) {
    INFO(f);
    CHECK(json::number(js, f).has_value());
  }
  CHECK_FALSE(json::has(js, "kernels[1]"));
  // Basic sanity of the values.
  CHECK(json::number(js, "kernels[0].cycles").value_or(0) > 0);
  CHECK(json::number(js, "kernels[0].achieved_tflops").value_or(0) > 0);
  for (const char* u : {"tensor", "fp32", "lsu", "l1", "l2", "dram"}) {
    const double v = json::number(js, std::string("kernels[0].utilization.") + u).value_or(-1);
    INFO("utilization." << u << " = " << v);
    CHECK(v >= 0);
    CHECK(v <= 1.0 + 1e-9);
  }
  // Reading A and B once is the least DRAM traffic: 2 * (512*128 + 512*128) bytes.
  CHECK(json::number(js, "kernels[0].dram_bytes_read").value_or(0) >= 2.0 * 2 * 512 * 128);

  // stats.csv: a header and one row per kernel, with as many fields as the header.
  std::istringstream csv(read_text(out / "stats.csv"));
  std::vector<std::string> rows;
  for (std::string line; std::getline(csv, line);)
    if (!line.empty()) rows.push_back(line);
  REQUIRE(rows.size() == 2);
  CHECK(contains(rows[0], "time_us"));
  CHECK(contains(rows[0], "cycles"));
  CHECK(std::count(rows[0].begin(), rows[0].end(), ',') == std::count(rows[1].begin(), rows[1].end(), ','));
  CHECK(contains(rows[1], json::raw(js, "kernels[0].cycles").value_or("<missing>")));

  // The resolved config reproduces the run.
  const fs::path resolved = out / "config.resolved.yaml";
  REQUIRE(fs::exists(resolved));
  const fs::path out2 = dir.path() / "res2";
  RUN_WARPSIM(again, {"run", "--gpu", resolved.string(), "--gemm", "512x512x128", "--out", out2.string(), "-q",
                      "--no-progress"});
  REQUIRE(again.exit_code == 0);
  const std::string js2 = read_text(out2 / "stats.json");
  REQUIRE(json::raw(js, "kernels").has_value());
  CHECK(json::raw(js, "kernels") == json::raw(js2, "kernels"));
  CHECK(json::raw(js, "gpu") == json::raw(js2, "gpu"));
}

TEST_CASE("synth round trip: a written trace replays like the in-memory GEMM", "[cli][outputs]") {
  TempDir dir;
  const std::string trace = dir / "gemm256.wst";
  {
    RUN_WARPSIM(s, {"synth", "gemm", "--m", "256", "--n", "256", "--k", "256", "-o", trace});
    REQUIRE(s.exit_code == 0);
    CHECK(contains(s.out, trace));
  }
  RUN_WARPSIM(from_file, small_run(dir / "file", {"--trace", trace}));
  REQUIRE(from_file.exit_code == 0);
  RUN_WARPSIM(in_memory, small_run(dir / "mem", {"--gemm", "256x256x256"}));
  REQUIRE(in_memory.exit_code == 0);
  const std::string a = read_text(dir.path() / "file" / "stats.json");
  const std::string b = read_text(dir.path() / "mem" / "stats.json");
  REQUIRE(json::raw(a, "kernels").has_value());
  CHECK(json::raw(a, "kernels") == json::raw(b, "kernels"));
}

TEST_CASE("run without a workload simulates the default Llama-3-8B MLP GEMM on the H100", "[cli][default][slow]") {
  TempDir dir;
  // The default workload at the configured clock: under the power cap (boost) this tensor-bound GEMM needs three
  // simulations to find its clock (test_power.cpp tests that), and this test is about what runs by default. Its
  // persistent grid is sampled by rounds (13.6 rounds of 132 CTAs; README "Sampling"), a third of the time.
  RUN_WARPSIM(r, small_run(dir / "out", {"--set", "power.cap_mode=report", "--sample", "waves"}));
  REQUIRE(r.exit_code == 0);
  const std::string js = read_text(dir.path() / "out" / "stats.json");
  CHECK(json::number(js, "kernels[0].achieved_tflops").value_or(0) > 0);
  CHECK(contains(json::string(js, "trace").value_or(""), "4096x14336x4096"));
  CHECK(contains(json::string(js, "gpu").value_or(""), "H100"));
  // 2 * 4096 * 14336 * 4096 useful FLOPs.
  CHECK(json::number(js, "kernels[0].flops").value_or(0) == Approx(2.0 * 4096 * 14336 * 4096));
  if (r.wall_s > 60) WARN("the default run took " << r.wall_s << " s (over 60 s)");
}

TEST_CASE("compare lists each run with its speed-up over the first", "[cli][compare]") {
  TempDir dir;
  const fs::path a = dir.path() / "a", b = dir.path() / "b";
  {
    RUN_WARPSIM(r, {"run", "--gemm", "512x512x512", "--out", a.string(), "-q", "--no-progress"});
    REQUIRE(r.exit_code == 0);
  }
  {
    // Half the tensor throughput: this small GEMM gets slower, so the second run's speed-up is below 1.
    RUN_WARPSIM(r, {"run", "--gemm", "512x512x512", "--set", "sm.tensor.flops_per_cycle.bf16=1024", "--out", b.string(),
                    "-q", "--no-progress"});
    REQUIRE(r.exit_code == 0);
  }
  RUN_WARPSIM(c, {"compare", a.string(), (b / "stats.json").string()});
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(contains(c.out, "1.000x"));
  const double t_a = json::number(read_text(a / "stats.json"), "total_time_us").value();
  const double t_b = json::number(read_text(b / "stats.json"), "total_time_us").value();
  REQUIRE(t_b > t_a);
  char expect[32];
  std::snprintf(expect, sizeof expect, "%.3fx", t_a / t_b);
  CHECK(contains(c.out, expect));

  RUN_WARPSIM(bad, {"compare", a.string(), (dir.path() / "missing").string()});
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.err, "missing"));
}

// ---- the model's memory, estimated before it is built -------------------------------------------------------

namespace {

// "needs an estimated 51.6 GB" (or "... 96 MB") in a memory refusal -> bytes; 0 when absent.
double estimated_bytes(const std::string& message) {
  std::smatch m;
  if (!std::regex_search(message, m, std::regex(R"(needs an estimated ([0-9.]+) (GB|MB))"))) return 0;
  return std::stod(m[1]) * (m[2] == "GB" ? 1e9 : 1e6);
}

double physical_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  meminfo >> key >> kib;  // "MemTotal: N kB"
  return kib * 1024;
}

}  // namespace

TEST_CASE("memory: a GPU whose model cannot fit is refused at once, naming the estimate and its causes", "[cli][memory]") {
  // Issue 6, finding 4: in-range values that need ~50 GB were OOM-killed after 258 s.
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const std::vector<std::string> huge = {"--set", "sm.count=4096", "--set", "l1.unified_size=64MiB"};
  std::vector<std::string> args = small_run(out.string(), huge);
  args.insert(args.end(), {"--max-memory", "16GiB"});
  RUN_WARPSIM(r, args);
  check_input_error(r, out);
  CHECK(r.wall_s < 1.0);
  CHECK(estimated_bytes(r.err) > 40e9);
  CHECK(contains(r.err, "l1 "));  // the biggest contributor
  CHECK(contains(r.err, "17.2 GB"));  // the limit
  CHECK(contains(r.err, "--max-memory"));
  if (physical_memory_bytes() * 0.8 < 40e9) {  // the default limit refuses it too on this machine
    RUN_WARPSIM(by_default, small_run(out.string(), huge));
    check_input_error(by_default, out);
    CHECK(by_default.wall_s < 1.0);
  }
  // compare --gpu checks every candidate before simulating any.
  const std::string huge_yaml = dir / "huge.yaml";
  write_text(huge_yaml, "base: h100_sxm\nsm:\n  count: 4096\nl1:\n  unified_size: 64MiB\n");
  RUN_WARPSIM(compare, {"compare", "--gpu", "h100_sxm", "--gpu", huge_yaml, "--max-memory", "16GiB"});
  CHECK(compare.exit_code == 2);
  CHECK(estimated_bytes(compare.err) > 40e9);
  RUN_WARPSIM(bad, small_run(out.string(), {"--max-memory", "lots"}));
  check_input_error(bad, out);
  CHECK(contains(bad.err, "--max-memory"));
}

TEST_CASE("memory: every shipped config is accepted, and the estimate is within 2x of the peak RSS", "[cli][memory]") {
  TempDir dir;
  for (const std::string gpu : {"a100_sxm", "h100_sxm", "h200_sxm", "b200"}) {
    const fs::path out = dir.path() / gpu;
    RUN_WARPSIM(run, small_run(out.string(), {"--gpu", gpu, "--gemm", "512x512x512", "--driver", "plain"}));
    REQUIRE(run.exit_code == 0);
    const double peak_rss = json::number(read_text(out / "stats.json"), "sim.peak_rss_mb").value() * 1024 * 1024;
    // A limit of 1 MB refuses the run and states the estimate.
    RUN_WARPSIM(refused, small_run(out.string(), {"--gpu", gpu, "--max-memory", "1MiB"}));
    CHECK(refused.exit_code == 2);
    const double estimate = estimated_bytes(refused.err);
    INFO(gpu << ": estimate " << estimate / 1e6 << " MB, peak RSS " << peak_rss / 1e6 << " MB");
    CHECK(estimate > peak_rss / 2);
    CHECK(estimate < peak_rss * 2);
  }
}
