// Lazily generated trace sources: see generated.h.
#include "traces/synth/generated.h"

#include <algorithm>
#include <string>

#include "sim/core/error.h"

namespace warpsim {

void InstChunk::own_deltas(const std::array<std::int32_t, kWarpSize>& lane_offsets) {
  WARPSIM_ASSERT(!insts_.empty(), "own_deltas() needs an emitted instruction");
  deltas_.push_back(lane_offsets);
  owned_.push_back(insts_.size() - 1);
  WarpInst& inst = insts_.back();
  inst.addr_mode = AddrMode::Deltas;
  inst.deltas = nullptr;  // set by finalize(): deltas_ may still reallocate
}

void InstChunk::finalize() {
  for (std::size_t i = 0; i < owned_.size(); ++i) insts_[owned_[i]].deltas = deltas_[i].data();
}

std::size_t GeneratedWarpStream::read(WarpInst* out, std::size_t max) {
  std::size_t n = 0;
  while (n < max) {
    if (pos_ == chunk_.size()) {
      if (ended_) break;
      // Records already handed out in this batch may point into the chunk's own offsets: refilling would free
      // them before the caller's next read(), so end the batch here instead.
      if (n > 0 && chunk_.owns_deltas()) break;
      chunk_.clear();
      pos_ = 0;
      if (!generator_->generate(chunk_)) {
        WARPSIM_ASSERT(chunk_.empty(), "a warp generator appended instructions after its stream ended");
        ended_ = true;
        break;
      }
      chunk_.finalize();
      continue;
    }
    const std::size_t take = std::min(max - n, chunk_.size() - pos_);
    std::copy_n(chunk_.data() + pos_, take, out + n);
    n += take;
    pos_ += take;
  }
  return n;
}

namespace {

class GeneratedCta final : public CtaSource {
 public:
  GeneratedCta(std::shared_ptr<const GeneratedKernelSpec> spec, WarpGeneratorFactory make_warp, std::uint64_t cta_id)
      : spec_(std::move(spec)), make_warp_(std::move(make_warp)), cta_id_(cta_id) {}
  std::uint32_t num_warps() const override { return spec_->info.warps_per_cta(); }
  std::unique_ptr<WarpStream> open_warp(std::uint32_t warp) override {
    if (warp >= num_warps()) {
      throw TraceError("generated kernel '" + spec_->info.name + "': warp " + std::to_string(warp) +
                       " out of range (CTA has " + std::to_string(num_warps()) + " warps)");
    }
    return std::make_unique<GeneratedWarpStream>(make_warp_(cta_id_, warp));
  }

 private:
  std::shared_ptr<const GeneratedKernelSpec> spec_;
  WarpGeneratorFactory make_warp_;
  std::uint64_t cta_id_;
};

}  // namespace

std::unique_ptr<CtaSource> GeneratedKernel::open_cta(std::uint64_t cta_id) {
  if (cta_id >= spec_->info.grid.count()) {
    throw TraceError("generated kernel '" + spec_->info.name + "': CTA " + std::to_string(cta_id) +
                     " out of range (grid has " + std::to_string(spec_->info.grid.count()) + " CTAs)");
  }
  return std::make_unique<GeneratedCta>(spec_, make_warp_, cta_id);
}

bool GeneratedKernel::skip_rounds(std::uint64_t first, std::uint64_t count) {
  if (!spec_->skipping_rounds) return false;
  make_warp_ = count == 0 ? spec_->make_warp : spec_->skipping_rounds(first, count);
  return true;
}

GeneratedTrace::GeneratedTrace(std::vector<GeneratedKernelSpec> kernels, std::string description)
    : description_(std::move(description)) {
  kernels_.reserve(kernels.size());
  for (auto& k : kernels) kernels_.push_back(std::make_shared<const GeneratedKernelSpec>(std::move(k)));
}

std::unique_ptr<KernelSource> GeneratedTrace::open_kernel(std::size_t index) {
  if (index >= kernels_.size()) {
    throw TraceError(description_ + ": kernel " + std::to_string(index) + " out of range (trace has " +
                     std::to_string(kernels_.size()) + " kernels)");
  }
  return std::make_unique<GeneratedKernel>(kernels_[index]);
}

}  // namespace warpsim
