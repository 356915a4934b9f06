#include "traces/synth/microbench/microbench.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/core/error.h"

namespace warpsim::synth::microbench {

bool StepWarp::generate(InstChunk& chunk) {
  if (ended_) return false;
  if (!started_) {
    if (program_.prologue) program_.prologue(chunk);
    body_pc_ = chunk.pc();
    started_ = true;
  }
  while (next_ < program_.steps && chunk.size() < kChunkInsts) {
    if (program_.body_steps != 0 && next_ % program_.body_steps == 0) chunk.set_pc(body_pc_);
    program_.step(chunk, next_++);
    body_end_ = std::max(body_end_, chunk.pc());
  }
  if (next_ == program_.steps) {
    if (program_.body_steps != 0) chunk.set_pc(body_end_);  // the epilogue follows the loop's code
    if (program_.epilogue) program_.epilogue(chunk);
    chunk.emit(Opcode::EXIT);
    ended_ = true;
  }
  return true;
}

std::unique_ptr<TraceSource> one_kernel_trace(KernelInfo info,
                                              std::function<StepProgram(std::uint64_t cta, std::uint32_t warp)> make,
                                              std::string description) {
  GeneratedKernelSpec spec;
  spec.info = std::move(info);
  spec.make_warp = [make = std::move(make)](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
    return std::make_unique<StepWarp>(make(cta, warp));
  };
  std::vector<GeneratedKernelSpec> kernels;
  kernels.push_back(std::move(spec));
  return std::make_unique<GeneratedTrace>(std::move(kernels), std::move(description));
}

Dim3 block_of_warps(const std::string& kind, const std::string& key, std::uint64_t warps, const Config& config) {
  const std::uint64_t max_threads = config.section("sm").u64("max_threads");
  if (warps * kWarpSize > max_threads)
    throw InputError(fmt::format("{} key '{}': {} warps = {} threads per CTA exceed this GPU's sm.max_threads ({})",
                                 kind, key, warps, warps * kWarpSize, max_threads));
  Dim3 block;
  block.x = static_cast<std::uint32_t>(warps * kWarpSize);
  block.y = block.z = 1;
  return block;
}

}  // namespace warpsim::synth::microbench
