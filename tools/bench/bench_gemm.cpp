// bench_gemm: simulator-speed benchmark on synthesized bf16 GEMMs (see README.md here).
//
//   bench_gemm                 every case, each in its own child process (SystemC allows one elaboration per
//                              process, and peak RSS is per process)
//   bench_gemm --case NAME     one case, in this process
//   bench_gemm --quick         smaller GEMMs (M and N halved: a quarter of the work) for a fast check
//   bench_gemm --driver plain  the plain C++ driver instead of SystemC (same simulated results)
//   bench_gemm --list          the cases
//
// Prints one row per case: simulated time and TFLOP/s (what the model predicts) and the simulator's own cost:
// wall seconds, warp-instructions per second, simulated SM cycles per second, peak RSS.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "app/run_one.h"

namespace {

using namespace warpsim;

struct BenchCase {
  const char* name;
  const char* gpu;  // shipped config
  std::uint64_t m, n, k;
  const char* what;
};

const BenchCase kCases[] = {
    {"h100_4096", "h100_sxm", 4096, 4096, 4096, "4096^3 bf16 on H100 SXM (reference case)"},
    {"a100_4096", "a100_sxm", 4096, 4096, 4096, "4096^3 bf16 on A100 SXM"},
    {"llama3_8b_mlp", "h100_sxm", 4096, 14336, 4096, "Llama-3-8B MLP up-projection, 4096 tokens (warpsim run's default)"},
};

struct Options {
  std::vector<std::string> cases;  // empty: all
  bool quick = false;
  bool child = false;              // internal: run one case and print a BENCH line
  std::string driver = "systemc";
};

// One case's numbers, as a child prints them and the parent reads them back.
struct Row {
  std::string name, gemm;
  double time_us = 0, tflops = 0, peak_fraction = 0, warp_instructions = 0, thread_instructions = 0, wall_s = 0,
         sim_cycles = 0, rss_mb = 0;
  bool ok = false;
  std::string error;
};

const BenchCase* find_case(const std::string& name) {
  for (const auto& c : kCases)
    if (name == c.name) return &c;
  return nullptr;
}

Row run_case(const BenchCase& c, const Options& o) {
  Row row;
  row.name = c.name;
  const std::uint64_t m = o.quick ? c.m / 2 : c.m, n = o.quick ? c.n / 2 : c.n, k = c.k;
  row.gemm = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  RunSpec spec;
  spec.gpu = c.gpu;
  spec.workload.synthesizer = "gemm";
  spec.workload.synth_keys = {{"m", std::to_string(m)}, {"n", std::to_string(n)}, {"k", std::to_string(k)}, {"dtype", "bf16"}};
  spec.driver = o.driver;
  spec.progress = false;
  const RunOutcome run = run_one(spec);
  const RunResult& r = run.result;
  for (const auto& kr : r.kernels) {
    row.warp_instructions += static_cast<double>(kr.warp_instructions);
    row.thread_instructions += static_cast<double>(kr.thread_instructions);
  }
  row.time_us = r.total_time_us;
  row.tflops = r.total_time_us > 0 ? 2.0 * m * n * k / (r.total_time_us * 1e-6) / 1e12 : 0;
  const Params& sm = run.config.section("sm");
  const double peak = static_cast<double>(sm.u64("count")) * static_cast<double>(sm.u64("tensor.flops_per_cycle.bf16")) *
                      run.config.section("clocks").real("sm");
  row.peak_fraction = peak > 0 ? row.tflops * 1e12 / peak : 0;
  row.wall_s = r.sim.wall_s;
  row.sim_cycles = static_cast<double>(r.sim.simulated_cycles);
  row.rss_mb = r.sim.peak_rss_mb;
  row.ok = true;
  return row;
}

std::string to_line(const Row& r) {
  std::ostringstream o;
  o.precision(17);
  o << "BENCH " << r.name << " " << r.gemm << " " << r.time_us << " " << r.tflops << " " << r.peak_fraction << " "
    << r.warp_instructions << " " << r.thread_instructions << " " << r.wall_s << " " << r.sim_cycles << " "
    << r.rss_mb;
  return o.str();
}

bool from_line(const std::string& line, Row& r) {
  std::istringstream in(line);
  std::string tag;
  in >> tag >> r.name >> r.gemm >> r.time_us >> r.tflops >> r.peak_fraction >> r.warp_instructions >>
      r.thread_instructions >> r.wall_s >> r.sim_cycles >> r.rss_mb;
  r.ok = tag == "BENCH" && !in.fail();
  return r.ok;
}

// Runs this program again for one case and reads its BENCH line.
Row run_child(const std::string& self, const BenchCase& c, const Options& o) {
  std::string cmd = "'" + self + "' --child --case " + c.name + " --driver " + o.driver + (o.quick ? " --quick" : "");
  Row row;
  row.name = c.name;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    row.error = "cannot start " + cmd;
    return row;
  }
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  const int status = pclose(pipe);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("BENCH ", 0) == 0 && from_line(line, row)) break;
  if (!row.ok || status != 0) {
    row.ok = false;
    row.error = "child exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ": " + out;
  }
  return row;
}

void print_table(const std::vector<Row>& rows, const Options& o) {
  std::printf("bench_gemm: bf16 GEMMs, driver %s%s\n\n", o.driver.c_str(), o.quick ? ", --quick (M, N halved)" : "");
  std::printf("%-14s %-16s %10s %8s %6s %10s %8s %10s %11s %11s %8s\n", "case", "gemm", "sim_us", "TFLOP/s",
              "%peak", "warp-inst", "wall_s", "Mwinst/s", "Mthrinst/s", "SMcycles/s", "RSS_MB");
  for (const Row& r : rows) {
    if (!r.ok) {
      std::printf("%-14s FAILED: %s\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    const double wall = r.wall_s > 0 ? r.wall_s : 1e-9;
    std::printf("%-14s %-16s %10.2f %8.1f %5.1f%% %9.2fM %8.2f %10.3f %11.2f %11.0f %8.0f\n", r.name.c_str(),
                r.gemm.c_str(), r.time_us, r.tflops, 100 * r.peak_fraction, r.warp_instructions / 1e6, r.wall_s,
                r.warp_instructions / wall / 1e6, r.thread_instructions / wall / 1e6, r.sim_cycles / wall, r.rss_mb);
  }
  std::printf(
      "\nsim_us, TFLOP/s, %%peak: the model's prediction (2MNK / simulated time; %%peak of sm.count x bf16 "
      "FLOP/clk x SM clock).\nwall_s: host seconds in Gpu::run (simulation only); Mwinst/s: million "
      "warp-instructions simulated per host second (target >= 10 on one core);\nMthrinst/s: the same in "
      "thread-instructions (Accel-Sim: 0.1-1); SMcycles/s: simulated SM-clock cycles per host second; RSS_MB: "
      "peak resident set of the process.\n");
}

int usage(int rc) {
  std::fprintf(rc ? stderr : stdout,
               "usage: bench_gemm [--case NAME ...] [--quick] [--driver systemc|plain] [--list]\n");
  return rc;
}

int bench_main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // no "GPU config ..." lines between the table's rows
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--case" && i + 1 < argc) o.cases.push_back(argv[++i]);
    else if (a == "--quick") o.quick = true;
    else if (a == "--child") o.child = true;
    else if (a == "--driver" && i + 1 < argc) o.driver = argv[++i];
    else if (a == "--list") {
      for (const auto& c : kCases)
        std::printf("%-14s %s, %llux%llux%llu: %s\n", c.name, c.gpu, static_cast<unsigned long long>(c.m),
                    static_cast<unsigned long long>(c.n), static_cast<unsigned long long>(c.k), c.what);
      return 0;
    } else if (a == "--help" || a == "-h") return usage(0);
    else {
      std::fprintf(stderr, "bench_gemm: unknown argument '%s'\n", a.c_str());
      return usage(2);
    }
  }
  if (o.driver != "systemc" && o.driver != "plain") {
    std::fprintf(stderr, "bench_gemm: --driver: expected systemc or plain, got '%s'\n", o.driver.c_str());
    return 2;
  }
  std::vector<const BenchCase*> selected;
  for (const auto& n : o.cases) {
    const BenchCase* c = find_case(n);
    if (!c) {
      std::fprintf(stderr, "bench_gemm: unknown case '%s' (see --list)\n", n.c_str());
      return 2;
    }
    selected.push_back(c);
  }
  if (selected.empty())
    for (const auto& c : kCases) selected.push_back(&c);

  if (o.child) {
    if (selected.size() != 1) return usage(2);
    const Row r = run_case(*selected[0], o);
    std::printf("%s\n", to_line(r).c_str());
    return 0;
  }

  std::vector<Row> rows;
  if (selected.size() == 1) {
    rows.push_back(run_case(*selected[0], o));
  } else {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      std::fprintf(stderr, "bench_gemm: cannot find its own executable\n");
      return 1;
    }
    self[n] = '\0';
    for (const BenchCase* c : selected) {
      std::fprintf(stderr, "bench_gemm: running %s ...\n", c->name);
      rows.push_back(run_child(self, *c, o));
    }
  }
  print_table(rows, o);
  for (const Row& r : rows)
    if (!r.ok) return 1;
  return 0;
}

}  // namespace

// libsystemc.so brings its own main(), which starts the SystemC kernel and calls sc_main; this main, like
// warpsim's, switches the banner off first and hands over to it.
extern "C" int sc_elab_and_sim(int argc, char* argv[]);

extern "C" int sc_main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm: error: %s\n", e.what());
    return 1;
  }
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_elab_and_sim(argc, argv);
}
