// Shared pieces of the microbenchmark synthesizers (traces/synth/README.md, "Microbenchmarks"): a warp program
// emitted step by step, a one-kernel trace, and the config values several of them read. Each microbenchmark is
// its own file here and registers itself with WARPSIM_REGISTER_SYNTHESIZER.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sim/config/config.h"
#include "sim/trace/source.h"
#include "traces/synth/generated.h"
#include "traces/synth/registry.h"

namespace warpsim::synth::microbench {

// The predicate register a generated loop branches on.
inline constexpr std::uint16_t kLoopPred = 248;

// A warp's program: `prologue`, then step(c, i) for i in [0, steps), then `epilogue`; the generator appends the
// EXIT. Steps are emitted a few hundred instructions per chunk. The functions are shared by all warps of a
// kernel and must be deterministic (they get the warp's identity from their captures).
struct StepProgram {
  std::function<void(InstChunk&)> prologue;  // optional
  std::uint64_t steps = 0;
  std::function<void(InstChunk&, std::uint64_t)> step;
  std::function<void(InstChunk&)> epilogue;  // optional
  // Code layout: 0 = straight-line code (or the step sets its own pc); n = the steps are a loop whose unrolled
  // body holds n of them: step i is at the code address of step i % n, as a benchmark's loop is (its branch
  // not emitted), so the instruction cache sees a small body, not megabytes of code.
  std::uint64_t body_steps = 0;
};

// Steps in a loop body of about `insts` instructions, for steps of `insts_per_step` instructions.
inline std::uint64_t body_of(std::uint64_t insts, std::uint64_t insts_per_step) {
  return insts_per_step >= insts ? 1 : insts / insts_per_step;
}
// The unrolled body of a generated benchmark loop: 64 instructions (1 KiB of code, well inside any L0
// instruction cache), as microbenchmarks unroll their timed loops.
inline constexpr std::uint64_t kBenchLoopBodyInsts = 64;

class StepWarp final : public WarpGenerator {
 public:
  explicit StepWarp(StepProgram program) : program_(std::move(program)) {}
  bool generate(InstChunk& chunk) override;

 private:
  static constexpr std::size_t kChunkInsts = 256;
  StepProgram program_;
  std::uint64_t next_ = 0;
  std::uint32_t body_pc_ = 0;   // code address of the loop body's first step
  std::uint32_t body_end_ = 0;  // end of the loop body's code, over every chunk so far
  bool started_ = false, ended_ = false;
};

// A trace of one generated kernel whose warps run `make(cta, warp)`.
std::unique_ptr<TraceSource> one_kernel_trace(KernelInfo info,
                                              std::function<StepProgram(std::uint64_t cta, std::uint32_t warp)> make,
                                              std::string description);

// The CTA's block of `warps` warps, checked against the SM's thread limit (InputError naming KIND key `key`).
Dim3 block_of_warps(const std::string& kind, const std::string& key, std::uint64_t warps, const Config& config);

// Sums a kernel's counted bytes or operations into a rate: per second of simulated time.
inline double per_second(double amount, const WorkloadTiming& t) { return t.time_us > 0 ? amount / (t.time_us * 1e-6) : 0.0; }

}  // namespace warpsim::synth::microbench
