// Reusable base for kernel synthesizers (GEMM, attention, norms, elementwise...): a TraceSource whose warps are
// produced lazily, chunk by chunk, by a per-warp generator. Nothing bigger than one chunk of one warp (e.g. one
// main-loop iteration) is ever held in memory, so kernels of 10^8 warp-instructions cost no memory to "open".
//
// A synthesizer supplies, per kernel, its KernelInfo and a factory that makes the generator of warp `w` of CTA
// `c`. Generators must be deterministic: opening the same warp twice yields the same stream.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/trace/source.h"

namespace warpsim {

// One SASS instruction occupies 16 bytes of code; generators lay their program out in these units.
inline constexpr std::uint32_t kInstBytes = 16;

// A batch of one warp's instructions under construction, plus the program counter of the next instruction
// (which carries over from chunk to chunk, so a loop body can reset it to the same address every iteration).
class InstChunk {
 public:
  // Appends a record for `op` at the current pc and advances the pc. The reference is valid until the next emit.
  WarpInst& emit(Opcode op) {
    WarpInst& inst = insts_.emplace_back();
    inst.op = op;
    inst.pc = pc_;
    pc_ += kInstBytes;
    return inst;
  }
  // Steps the pc over `count` instructions that are not emitted (e.g. predicated off for every lane), so that
  // the code after them keeps its address.
  void skip(std::uint32_t count = 1) { pc_ += count * kInstBytes; }
  void set_pc(std::uint32_t pc) { pc_ = pc; }
  std::uint32_t pc() const { return pc_; }

  // Gives the last emitted instruction per-lane offsets stored in the chunk itself (AddrMode::Deltas).
  // Generators whose offset tables outlive their streams can instead point WarpInst::deltas at them directly.
  void own_deltas(const std::array<std::int32_t, kWarpSize>& lane_offsets);

  std::size_t size() const { return insts_.size(); }
  bool empty() const { return insts_.empty(); }
  const WarpInst* data() const { return insts_.data(); }
  const WarpInst& operator[](std::size_t i) const { return insts_[i]; }
  // True when some record points into this chunk's own offset storage (see own_deltas()).
  bool owns_deltas() const { return !owned_.empty(); }

  // Empties the chunk (keeping its capacity); the pc carries on.
  void clear() {
    insts_.clear();
    deltas_.clear();
    owned_.clear();
  }
  // Points the records of own_deltas() at their offsets; called once the chunk is complete.
  void finalize();

 private:
  std::vector<WarpInst> insts_;
  std::vector<std::array<std::int32_t, kWarpSize>> deltas_;
  std::vector<std::size_t> owned_;  // index in insts_ of each record using deltas_, in deltas_ order
  std::uint32_t pc_ = 0;
};

// Produces one warp's stream piece by piece.
class WarpGenerator {
 public:
  virtual ~WarpGenerator() = default;
  // Appends the next piece of the stream to `chunk` (which arrives empty) and returns true, or returns false
  // once the stream has ended (an EXIT must have been emitted by then).
  virtual bool generate(InstChunk& chunk) = 0;
};

using WarpGeneratorFactory = std::function<std::unique_ptr<WarpGenerator>(std::uint64_t cta_id, std::uint32_t warp)>;

// WarpStream over a WarpGenerator: hands out the current chunk and asks for the next when it runs dry.
class GeneratedWarpStream final : public WarpStream {
 public:
  explicit GeneratedWarpStream(std::unique_ptr<WarpGenerator> generator) : generator_(std::move(generator)) {}
  std::size_t read(WarpInst* out, std::size_t max) override;

 private:
  std::unique_ptr<WarpGenerator> generator_;
  InstChunk chunk_;
  std::size_t pos_ = 0;
  bool ended_ = false;
};

struct GeneratedKernelSpec {
  KernelInfo info;
  WarpGeneratorFactory make_warp;  // called with cta_id < info.grid.count(), warp < info.warps_per_cta()
  // A persistent kernel's warps without its rounds [first, first + count) (KernelSource::skip_rounds); unset: the
  // kernel cannot skip rounds.
  std::function<WarpGeneratorFactory(std::uint64_t first, std::uint64_t count)> skipping_rounds;
};

// A kernel whose warps come from a generator factory. Self-contained: it may outlive the trace that opened it.
class GeneratedKernel final : public KernelSource {
 public:
  explicit GeneratedKernel(std::shared_ptr<const GeneratedKernelSpec> spec)
      : spec_(std::move(spec)), make_warp_(spec_->make_warp) {}
  const KernelInfo& info() const override { return spec_->info; }
  std::unique_ptr<CtaSource> open_cta(std::uint64_t cta_id) override;  // throws TraceError when out of range
  bool skip_rounds(std::uint64_t first, std::uint64_t count) override;

 private:
  std::shared_ptr<const GeneratedKernelSpec> spec_;
  WarpGeneratorFactory make_warp_;  // the spec's, or its factory without skipped rounds
};

class GeneratedTrace final : public TraceSource {
 public:
  GeneratedTrace(std::vector<GeneratedKernelSpec> kernels, std::string description);
  std::size_t num_kernels() const override { return kernels_.size(); }
  std::unique_ptr<KernelSource> open_kernel(std::size_t index) override;  // throws TraceError when out of range
  std::string description() const override { return description_; }

 private:
  std::vector<std::shared_ptr<const GeneratedKernelSpec>> kernels_;
  std::string description_;
};

}  // namespace warpsim
