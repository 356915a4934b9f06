// In-memory trace sources: VectorWarpStream and InMemoryTrace (tests, fixtures, small generated kernels).
// Both validate what they hand out (check_inst, check_kernel_info, the warp count of each CTA), as the file
// reader does, so that a malformed hand-built kernel is a TraceError rather than a crash in the simulator.
#include "sim/trace/source.h"

#include <string>

#include "sim/config/input_file.h"
#include "sim/core/error.h"

namespace warpsim {

namespace {

constexpr std::uint32_t kMaxRegistersPerThread = 255;  // R0..R254 allocatable, R255 = RZ
// The format's limit of 2^32 - 1 warps per CTA (traces/FORMAT.md, "Limits"); warps_per_cta() is 32-bit.
constexpr std::uint64_t kMaxThreadsPerCta = std::uint64_t{kWarpSize} * 0xffffffffu;

std::string dim3_text(const Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

}  // namespace

std::string check_kernel_info(const KernelInfo& info) {
  // Products of 32-bit dimensions can exceed 64 bits: a wrapped grid would run as a few CTAs.
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(std::uint64_t{info.grid.x} * info.grid.y, info.grid.z, &product))
    return "grid " + dim3_text(info.grid) + " has more than 2^64 - 1 CTAs";
  if (info.grid.count() == 0) return "grid " + dim3_text(info.grid) + " has no CTAs";
  if (__builtin_mul_overflow(std::uint64_t{info.block.x} * info.block.y, info.block.z, &product) ||
      product > kMaxThreadsPerCta)
    return "block " + dim3_text(info.block) + " has more than " + std::to_string(kMaxThreadsPerCta) +
           " threads (2^32 - 1 warps)";
  if (info.block.count() == 0) return "block " + dim3_text(info.block) + " has no threads";
  if (info.cluster.x == 0 || info.cluster.y == 0 || info.cluster.z == 0 || info.cluster.count() > kMaxClusterCtas)
    return "cluster " + dim3_text(info.cluster) + " must have 1 to " + std::to_string(kMaxClusterCtas) + " CTAs";
  if (info.grid.x % info.cluster.x || info.grid.y % info.cluster.y || info.grid.z % info.cluster.z)
    return "grid " + dim3_text(info.grid) + " is not a whole number of clusters " + dim3_text(info.cluster);
  std::size_t offset = 0;
  if (const std::string problem = text_problem(info.name, offset); !problem.empty())
    return "kernel name: " + problem + " at byte " + std::to_string(offset);
  if (const std::string problem = text_problem(info.target_arch, offset); !problem.empty())
    return "target arch: " + problem + " at byte " + std::to_string(offset);
  if (info.registers_per_thread < 1 || info.registers_per_thread > kMaxRegistersPerThread)
    return "registers_per_thread " + std::to_string(info.registers_per_thread) + " out of range (expected 1.." +
           std::to_string(kMaxRegistersPerThread) + ")";
  return {};
}

std::size_t VectorWarpStream::read(WarpInst* out, std::size_t max) {
  std::size_t n = 0;
  for (; n < max && pos_ < insts_.size(); ++n, ++pos_) {
    out[n] = insts_[pos_];
    if (out[n].addr_mode == AddrMode::Deltas) {
      if (next_delta_ + kWarpSize > deltas_.size()) {
        throw TraceError("in-memory warp stream: instruction " + std::to_string(pos_) +
                         " uses per-lane deltas but the stream holds offsets for only " +
                         std::to_string(deltas_.size() / kWarpSize) + " such instructions");
      }
      out[n].deltas = deltas_.data() + next_delta_;
      next_delta_ += kWarpSize;
    }
    const std::string error = check_inst(out[n]);
    if (!error.empty())
      throw TraceError("in-memory warp stream: instruction " + std::to_string(pos_) + ": " + error);
  }
  return n;
}

namespace {

// One warp of an InMemoryKernel, read in place: Deltas records point at the kernel's own lane_deltas arrays
// (valid as long as the trace, longer than the interface promises).
class InMemoryWarpStream final : public WarpStream {
 public:
  InMemoryWarpStream(const InMemoryKernel::Warp& warp, std::string where) : warp_(warp), where_(std::move(where)) {}

  std::size_t read(WarpInst* out, std::size_t max) override {
    std::size_t n = 0;
    for (; n < max && pos_ < warp_.insts.size(); ++n, ++pos_) {
      out[n] = warp_.insts[pos_];
      out[n].deltas = nullptr;
      if (out[n].addr_mode == AddrMode::Deltas) {
        if (next_delta_ >= warp_.lane_deltas.size())
          fail("uses per-lane deltas but the warp holds offsets for only " +
               std::to_string(warp_.lane_deltas.size()) + " such instructions");
        out[n].deltas = warp_.lane_deltas[next_delta_++].data();
      }
      const std::string error = check_inst(out[n]);
      if (!error.empty()) fail(error);
    }
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(where_ + ", instruction " + std::to_string(pos_) + ": " + what);
  }

  const InMemoryKernel::Warp& warp_;
  std::string where_;
  std::size_t pos_ = 0;
  std::size_t next_delta_ = 0;  // index in lane_deltas of the next Deltas-mode record's offsets
};

class InMemoryCta final : public CtaSource {
 public:
  InMemoryCta(const std::vector<InMemoryKernel::Warp>& warps, std::string where)
      : warps_(warps), where_(std::move(where)) {}
  std::uint32_t num_warps() const override { return static_cast<std::uint32_t>(warps_.size()); }
  std::unique_ptr<WarpStream> open_warp(std::uint32_t warp) override {
    if (warp >= warps_.size()) {
      throw TraceError(where_ + ": warp " + std::to_string(warp) + " out of range (CTA has " +
                       std::to_string(warps_.size()) + " warps)");
    }
    return std::make_unique<InMemoryWarpStream>(warps_[warp], where_ + ", warp " + std::to_string(warp));
  }

 private:
  const std::vector<InMemoryKernel::Warp>& warps_;
  std::string where_;
};

class InMemoryKernelSource final : public KernelSource {
 public:
  InMemoryKernelSource(const InMemoryKernel& kernel, const std::string& trace_name)
      : kernel_(kernel), where_(trace_name + ": kernel '" + kernel.info.name + "'") {}
  const KernelInfo& info() const override { return kernel_.info; }
  std::unique_ptr<CtaSource> open_cta(std::uint64_t cta_id) override {
    // Both bounds matter: a hand-built kernel may hold fewer CTAs than its grid announces.
    if (cta_id >= kernel_.info.grid.count() || cta_id >= kernel_.ctas.size()) {
      throw TraceError(where_ + ": CTA " + std::to_string(cta_id) + " out of range (grid has " +
                       std::to_string(kernel_.info.grid.count()) + " CTAs, " + std::to_string(kernel_.ctas.size()) +
                       " held in memory)");
    }
    const std::string cta_where = where_ + ", CTA " + std::to_string(cta_id);
    const std::vector<InMemoryKernel::Warp>& warps = kernel_.ctas[cta_id];
    if (warps.size() != kernel_.info.warps_per_cta()) {
      throw TraceError(cta_where + ": " + std::to_string(warps.size()) + " warps, but a block of " +
                       std::to_string(kernel_.info.block.count()) + " threads has " +
                       std::to_string(kernel_.info.warps_per_cta()));
    }
    return std::make_unique<InMemoryCta>(warps, cta_where);
  }

 private:
  const InMemoryKernel& kernel_;
  std::string where_;
};

}  // namespace

// The returned source refers to this trace's storage: the trace must outlive it.
std::unique_ptr<KernelSource> InMemoryTrace::open_kernel(std::size_t index) {
  if (index >= kernels_.size()) {
    throw TraceError(name_ + ": kernel " + std::to_string(index) + " out of range (trace has " +
                     std::to_string(kernels_.size()) + " kernels)");
  }
  const KernelInfo& info = kernels_[index].info;
  const std::string error = check_kernel_info(info);
  if (!error.empty())
    throw TraceError(name_ + ": kernel " + std::to_string(index) + " ('" + info.name + "'): " + error);
  return std::make_unique<InMemoryKernelSource>(kernels_[index], name_);
}

std::uint64_t estimate_warp_instructions(TraceSource& trace) {
  constexpr std::size_t kBatch = 4096;
  std::vector<WarpInst> batch(kBatch);
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < trace.num_kernels(); ++k) {
    const std::unique_ptr<KernelSource> kernel = trace.open_kernel(k);
    const std::unique_ptr<CtaSource> cta = kernel->open_cta(0);
    std::uint64_t per_cta = 0;
    for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
      const std::unique_ptr<WarpStream> warp = cta->open_warp(w);
      for (std::size_t n; (n = warp->read(batch.data(), batch.size())) > 0;) per_cta += n;
    }
    std::uint64_t kernel_total = 0;
    if (__builtin_mul_overflow(per_cta, kernel->info().grid.count(), &kernel_total) ||
        __builtin_add_overflow(total, kernel_total, &total))
      return ~std::uint64_t{0};
  }
  return total;
}

}  // namespace warpsim
