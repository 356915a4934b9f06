// Kernel launch overhead: the front end starts kernel i+1 only once the host has submitted it, one launch
// interval (config `launch`) after kernel i. Expectations come from the config's interval and clock alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/registry/registry.h"
#include "traces/synth/gemm_synthesizer.h"

using namespace warpsim;

namespace {

// The same kernel `times` times, as a trace that launches one kernel after another.
class RepeatedKernel final : public TraceSource {
 public:
  RepeatedKernel(std::unique_ptr<TraceSource> inner, std::size_t times) : inner_(std::move(inner)), times_(times) {}
  std::size_t num_kernels() const override { return times_; }
  std::unique_ptr<KernelSource> open_kernel(std::size_t) override { return inner_->open_kernel(0); }
  std::string description() const override { return "repeated kernel"; }

 private:
  std::unique_ptr<TraceSource> inner_;
  std::size_t times_;
};

Config launch_test_h100(std::vector<std::string> overrides) {
  overrides.insert(overrides.end(), {"sm.count=8", "l2.slices=4", "hbm.channels=4"});
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml", overrides, Registry::instance());
}

RunResult run_gemms(const Config& cfg, std::uint64_t size, std::size_t times) {
  GemmProblem p;
  p.m = p.n = p.k = size;
  RepeatedKernel trace(make_gemm_for_gpu(p, cfg), times);
  Gpu gpu(cfg);
  return gpu.run(trace, run_without_systemc);
}

// SM cycles after the first kernel's submission at which the host submits kernel i.
std::uint64_t submitted(const Config& cfg, const std::string& key, std::size_t i) {
  return static_cast<std::uint64_t>(
      std::llround(static_cast<double>(i) * cfg.section("launch").real(key) * 1e-6 * cfg.section("clocks").real("sm")));
}

}  // namespace

TEST_CASE("Kernels shorter than the eager launch interval start one interval apart: the run is launch-bound", "[launch]") {
  const Config cfg = launch_test_h100({"launch.mode=eager"});
  const RunResult r = run_gemms(cfg, 64, 4);
  REQUIRE(r.kernels.size() == 4);
  const std::uint64_t interval = submitted(cfg, "eager_us_per_kernel", 1);
  REQUIRE(r.kernels[0].cycles < interval);  // the premise: a 64^3 GEMM is far shorter than 7 us
  CHECK(r.kernels[0].start_cycle == 0);     // the first kernel's submission opens the run
  CHECK(r.kernels[0].launch_wait_cycles == 0);
  std::uint64_t waits = 0;
  for (std::size_t i = 1; i < r.kernels.size(); ++i) {
    const KernelResult& k = r.kernels[i];
    CHECK(k.start_cycle == submitted(cfg, "eager_us_per_kernel", i));
    CHECK(k.launch_wait_cycles == k.start_cycle - (r.kernels[i - 1].start_cycle + r.kernels[i - 1].cycles));
    CHECK(k.launch_wait_us == Approx(k.launch_wait_cycles / cfg.section("clocks").real("sm") * 1e6));
    waits += k.launch_wait_cycles;
  }
  CHECK(r.total_cycles == r.kernels.back().start_cycle + r.kernels.back().cycles);
  CHECK(r.launch.wait_cycles == waits);
  CHECK(r.launch.kernels_waited == 3);
  CHECK(r.launch.launch_bound);
  CHECK(r.speed_of_light.limiter.launch_bound);
  CHECK(r.speed_of_light.limiter.verdict.rfind("launch-bound: ", 0) == 0);
}

TEST_CASE("A CUDA graph's shorter interval leaves less idle time than eager launches of the same kernels", "[launch]") {
  const Config eager = launch_test_h100({"launch.mode=eager"});
  const Config graph = launch_test_h100({"launch.mode=graph"});
  const RunResult e = run_gemms(eager, 64, 3), g = run_gemms(graph, 64, 3);
  REQUIRE(g.kernels.size() == 3);
  CHECK(g.launch.mode == "graph");
  CHECK(g.launch.us_per_kernel == graph.section("launch").real("graph_us_per_kernel"));
  // Each start is the later of the predecessor's end and the node's submission.
  for (std::size_t i = 1; i < g.kernels.size(); ++i) {
    const std::uint64_t previous_end = g.kernels[i - 1].start_cycle + g.kernels[i - 1].cycles;
    CHECK(g.kernels[i].start_cycle == std::max(previous_end, submitted(graph, "graph_us_per_kernel", i)));
  }
  CHECK(g.total_cycles < e.total_cycles);
  CHECK(g.launch.wait_cycles < e.launch.wait_cycles);
}

TEST_CASE("Kernels longer than the launch interval hide it: they run back to back, not launch-bound", "[launch]") {
  // 0.01 us is ~18 SM cycles, far below any GEMM's duration.
  const Config cfg = launch_test_h100({"launch.mode=eager", "launch.eager_us_per_kernel=0.01"});
  const RunResult r = run_gemms(cfg, 128, 3);
  REQUIRE(r.kernels.size() == 3);
  for (std::size_t i = 1; i < r.kernels.size(); ++i) {
    CHECK(r.kernels[i].start_cycle == r.kernels[i - 1].start_cycle + r.kernels[i - 1].cycles);
    CHECK(r.kernels[i].launch_wait_cycles == 0);
  }
  CHECK(r.launch.wait_cycles == 0);
  CHECK_FALSE(r.launch.launch_bound);
  CHECK_FALSE(r.speed_of_light.limiter.launch_bound);
  CHECK(r.launch.verdict.rfind("not launch-bound", 0) == 0);
}
