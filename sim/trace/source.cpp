// In-memory trace sources: VectorWarpStream and InMemoryTrace (tests, fixtures, small generated kernels).
#include "sim/trace/source.h"

#include <string>

#include "sim/core/error.h"

namespace warpsim {

std::size_t VectorWarpStream::read(WarpInst* out, std::size_t max) {
  std::size_t n = 0;
  for (; n < max && pos_ < insts_.size(); ++n, ++pos_) {
    out[n] = insts_[pos_];
    if (out[n].addr_mode != AddrMode::Deltas) continue;
    if (next_delta_ + kWarpSize > deltas_.size()) {
      throw TraceError("in-memory warp stream: instruction " + std::to_string(pos_) +
                       " uses per-lane deltas but the stream holds offsets for only " +
                       std::to_string(deltas_.size() / kWarpSize) + " such instructions");
    }
    out[n].deltas = deltas_.data() + next_delta_;
    next_delta_ += kWarpSize;
  }
  return n;
}

namespace {

class InMemoryCta final : public CtaSource {
 public:
  explicit InMemoryCta(const std::vector<InMemoryKernel::Warp>& warps) : warps_(warps) {}
  std::uint32_t num_warps() const override { return static_cast<std::uint32_t>(warps_.size()); }
  std::unique_ptr<WarpStream> open_warp(std::uint32_t warp) override {
    if (warp >= warps_.size()) {
      throw TraceError("in-memory trace: warp " + std::to_string(warp) + " out of range (CTA has " +
                       std::to_string(warps_.size()) + " warps)");
    }
    const InMemoryKernel::Warp& w = warps_[warp];
    std::vector<std::int32_t> flat;
    flat.reserve(w.lane_deltas.size() * kWarpSize);
    for (const auto& lanes : w.lane_deltas) flat.insert(flat.end(), lanes.begin(), lanes.end());
    return std::make_unique<VectorWarpStream>(w.insts, std::move(flat));
  }

 private:
  const std::vector<InMemoryKernel::Warp>& warps_;
};

class InMemoryKernelSource final : public KernelSource {
 public:
  InMemoryKernelSource(const InMemoryKernel& kernel, const std::string& trace_name)
      : kernel_(kernel), trace_name_(trace_name) {}
  const KernelInfo& info() const override { return kernel_.info; }
  std::unique_ptr<CtaSource> open_cta(std::uint64_t cta_id) override {
    // Both bounds matter: a hand-built kernel may hold fewer CTAs than its grid announces.
    if (cta_id >= kernel_.info.grid.count() || cta_id >= kernel_.ctas.size()) {
      throw TraceError(trace_name_ + ": kernel '" + kernel_.info.name + "': CTA " + std::to_string(cta_id) +
                       " out of range (grid has " + std::to_string(kernel_.info.grid.count()) + " CTAs, " +
                       std::to_string(kernel_.ctas.size()) + " held in memory)");
    }
    return std::make_unique<InMemoryCta>(kernel_.ctas[cta_id]);
  }

 private:
  const InMemoryKernel& kernel_;
  const std::string& trace_name_;
};

}  // namespace

// The returned source refers to this trace's storage: the trace must outlive it.
std::unique_ptr<KernelSource> InMemoryTrace::open_kernel(std::size_t index) {
  if (index >= kernels_.size()) {
    throw TraceError(name_ + ": kernel " + std::to_string(index) + " out of range (trace has " +
                     std::to_string(kernels_.size()) + " kernels)");
  }
  return std::make_unique<InMemoryKernelSource>(kernels_[index], name_);
}

}  // namespace warpsim
