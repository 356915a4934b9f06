// CTA-wave sampling inside a run of several kernels: a sampled kernel ends with its resident CTAs drained, the
// next kernel runs on a consistent simulator, and the run's time (start cycles, CTA timeline, launch waits) moves on
// by the sampled kernel's extrapolated cycles. A 4-SM H100 keeps each run to about a second.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/registry/registry.h"
#include "traces/synth/gemm_synthesizer.h"

using namespace warpsim;

namespace {

// Kernel 0 of each of `parts`, one after another.
class KernelSequence final : public TraceSource {
 public:
  explicit KernelSequence(std::vector<std::unique_ptr<TraceSource>> parts) : parts_(std::move(parts)) {}
  std::size_t num_kernels() const override { return parts_.size(); }
  std::unique_ptr<KernelSource> open_kernel(std::size_t i) override { return parts_.at(i)->open_kernel(0); }
  std::string description() const override { return "kernel sequence"; }

 private:
  std::vector<std::unique_ptr<TraceSource>> parts_;
};

Config four_sm_h100(const std::string& sample) {
  return Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml",
                      {"sm.count=4", "noc.gpcs=2", "l2.partitions=2", "l2.slices=4", "hbm.channels=4",
                       "launch.mode=eager", "sim.sample=" + sample},
                      Registry::instance());
}

std::unique_ptr<TraceSource> gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k, const Config& cfg,
                                  bool persistent) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  GemmMainloopChoice choice;
  choice.persistent = persistent;
  return make_gemm_for_gpu(p, cfg, choice);
}

// A GEMM of 64 tiles of 128x256 (16 waves of 4 CTAs on 4 SMs, or 16 rounds of its 4 persistent CTAs), then a
// GEMM of one wave (round), then the first again.
RunResult run_sequence(const Config& cfg, bool persistent) {
  std::vector<std::unique_ptr<TraceSource>> parts;
  parts.push_back(gemm(2048, 1024, 256, cfg, persistent));
  parts.push_back(gemm(256, 512, 256, cfg, persistent));
  parts.push_back(gemm(2048, 1024, 256, cfg, persistent));
  KernelSequence trace(std::move(parts));
  Gpu gpu(cfg);
  return gpu.run(trace, run_without_systemc);
}

}  // namespace

TEST_CASE("A sampled kernel leaves the next kernel a consistent simulator, and the run's time moves on by its estimate",
          "[sampling]") {
  // Sampled by waves (one CTA per tile) and by rounds (persistent CTAs).
  const bool persistent = GENERATE(false, true);
  INFO((persistent ? "persistent: rounds" : "one CTA per tile: waves"));
  const RunResult full = run_sequence(four_sm_h100("off"), persistent);
  const RunResult sampled = run_sequence(four_sm_h100("waves"), persistent);
  REQUIRE(full.kernels.size() == 3);
  REQUIRE(sampled.kernels.size() == 3);
  // The premise: the big GEMMs are sampled, the small one is not.
  REQUIRE(sampled.kernels[0].sampling);
  REQUIRE(sampled.kernels[2].sampling);
  REQUIRE_FALSE(sampled.kernels[1].sampling);
  CHECK(sampled.kernels[0].sampling->method == (persistent ? "rounds" : "waves"));
  if (persistent)
    CHECK(sampled.kernels[0].sampling->skipped_rounds == 12);  // 16 rounds: 1 warm-up + 2 measured + 1 run
  else
    CHECK(sampled.kernels[0].sampling->simulated_ctas < sampled.kernels[0].sampling->total_ctas);

  for (std::size_t i = 0; i < 3; ++i) {
    INFO("kernel " << i);
    // Every kernel ran to its end: the same instructions as the full run (counted from the trace where not run).
    CHECK(sampled.kernels[i].warp_instructions == full.kernels[i].warp_instructions);
    // Times within 5% of the full run's (the small kernel runs whole, after a drained sampled kernel); rounds within
    // 8%: four persistent CTAs vary more from round to round than four CTAs per wave do from wave to wave
    // (measured up to +6.6%).
    CHECK(static_cast<double>(sampled.kernels[i].cycles) ==
          Approx(static_cast<double>(full.kernels[i].cycles)).epsilon(persistent ? 0.08 : 0.05));
  }
  // Kernels follow one another on the run's time: each starts after the previous one's (extrapolated) end and its
  // launch wait, and the run's total is the kernels' cycles and waits.
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const KernelResult& k = sampled.kernels[i];
    if (i > 0) {
      const KernelResult& prev = sampled.kernels[i - 1];
      CHECK(k.start_cycle == prev.start_cycle + prev.cycles + k.launch_wait_cycles);
    }
    total += k.cycles + k.launch_wait_cycles;
  }
  CHECK(sampled.total_cycles == total);
  // The CTA timeline is on the same time: the CTAs of kernel i lie within its span.
  for (const CtaSpan& span : sampled.timeline) {
    const KernelResult& k = sampled.kernels.at(span.kernel);
    INFO("CTA " << span.cta << " of kernel " << span.kernel);
    CHECK(span.start_cycle >= k.start_cycle);
    CHECK(span.end_cycle <= k.start_cycle + k.cycles);
  }
  // The sampled kernels' CTAs in the timeline are the simulated ones only.
  std::uint64_t first_kernel_ctas = 0;
  for (const CtaSpan& span : sampled.timeline) first_kernel_ctas += span.kernel == 0;
  CHECK(first_kernel_ctas == sampled.kernels[0].sampling->simulated_ctas);

  // Deterministic: a second sampled run gives the same cycles and counters.
  const RunResult again = run_sequence(four_sm_h100("waves"), persistent);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(again.kernels[i].cycles == sampled.kernels[i].cycles);
    CHECK(again.kernels[i].start_cycle == sampled.kernels[i].start_cycle);
    CHECK(again.kernels[i].dram_bytes_read == sampled.kernels[i].dram_bytes_read);
  }
}
