// Trace-source interface: where kernels come from. A file reader, a synthesizer (no file materialised) and,
// later, converters of Accel-Sim or Kineto traces all implement it. The simulator pulls instructions per warp
// in small batches, so only the CTAs resident on the GPU are ever decoded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/trace/inst.h"

namespace warpsim {

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const noexcept { return std::uint64_t{x} * y * z; }
  bool operator==(const Dim3& o) const noexcept { return x == o.x && y == o.y && z == o.z; }
};

struct KernelInfo {
  std::string name;
  Dim3 grid;
  Dim3 block;
  std::uint32_t registers_per_thread = 32;
  std::uint32_t shared_mem_bytes = 0;   // static + dynamic, per CTA
  std::string target_arch;              // e.g. "sm_90": the GPU the instruction stream was made for
  // Useful work of the kernel, for achieved-throughput metrics (0 when unknown).
  std::uint64_t flops = 0;
  // Thread-block cluster (sm_90): CTAs launched together on the SMs of one GPC (1x1x1: none). The grid is a whole
  // number of clusters in each dimension.
  Dim3 cluster;
  // A persistent kernel (a grid of the CTAs the GPU holds at once, each looping over work units: CTA c takes units
  // c, c + grid, c + 2 x grid, ..., as CUTLASS's persistent tile schedulers do): its units over the grid (0: not
  // persistent), the pc of the instruction that `unit_head_warps` warps of each CTA issue as they start a unit (the
  // warps that compute it: their progress is the kernel's). Round sampling (models/gpu/kernel_scheduler.h) counts
  // those issues and leaves out whole rounds (KernelSource::skip_rounds).
  std::uint64_t persistent_units = 0;
  std::uint32_t unit_head_pc = 0, unit_head_warps = 1;
  std::uint32_t warps_per_cta() const noexcept {
    return static_cast<std::uint32_t>((block.count() + kWarpSize - 1) / kWarpSize);
  }
};

// One warp's instruction stream. read() fills up to `max` records and returns how many; 0 means the warp's
// stream has ended. Pointers inside returned records (WarpInst::deltas) stay valid until the next read().
class WarpStream {
 public:
  virtual ~WarpStream() = default;
  virtual std::size_t read(WarpInst* out, std::size_t max) = 0;
};

// The instructions of one CTA: one stream per warp.
class CtaSource {
 public:
  virtual ~CtaSource() = default;
  virtual std::uint32_t num_warps() const = 0;
  virtual std::unique_ptr<WarpStream> open_warp(std::uint32_t warp) = 0;
};

class KernelSource {
 public:
  virtual ~KernelSource() = default;
  virtual const KernelInfo& info() const = 0;
  // Random access by linear CTA id (x fastest, then y, then z), in [0, grid.count()).
  virtual std::unique_ptr<CtaSource> open_cta(std::uint64_t cta_id) = 0;
  // Round sampling of a persistent kernel (KernelInfo::persistent_units): the CTAs opened after this call leave out
  // their units of rounds [first, first + count) (round r: units r x grid .. (r + 1) x grid - 1; every CTA has a
  // unit in each, first + count <= units / grid) and run the others as they would; count 0 runs every round again.
  // false: this source cannot (its kernel is simulated whole).
  virtual bool skip_rounds(std::uint64_t /*first*/, std::uint64_t /*count*/) { return false; }
};

// Captured instructions a trace reader runs as untimed NOPs, because the trace lacks what timing them needs (an
// Accel-Sim trace's TMA copies carry no box, its mbarrier operations no barrier id): per opcode, with the reason.
struct UntimedOpcode {
  std::string opcode;              // as the trace spells it, up to the table row that matched (e.g. "UTMALDG")
  std::uint64_t instructions = 0;  // warp-instructions of the kernel
  std::string why;
};

class TraceSource {
 public:
  virtual ~TraceSource() = default;
  virtual std::size_t num_kernels() const = 0;
  virtual std::unique_ptr<KernelSource> open_kernel(std::size_t index) = 0;
  virtual std::string description() const = 0;
  // What kernel `index` holds that runs untimed, in a fixed order; empty where everything is timed (native traces
  // and synthesizers time every record).
  virtual std::vector<UntimedOpcode> untimed(std::size_t /*index*/) const { return {}; }
};

// A warp stream backed by a vector, for tests and small generated kernels.
class VectorWarpStream final : public WarpStream {
 public:
  explicit VectorWarpStream(std::vector<WarpInst> insts, std::vector<std::int32_t> deltas = {})
      : insts_(std::move(insts)), deltas_(std::move(deltas)) {}
  std::size_t read(WarpInst* out, std::size_t max) override;

 private:
  std::vector<WarpInst> insts_;
  std::vector<std::int32_t> deltas_;  // Deltas-mode records point into this
  std::size_t pos_ = 0;
  std::size_t next_delta_ = 0;  // index in deltas_ of the next Deltas-mode record's 32 offsets
};

// A whole kernel held in memory (tests, fixtures, and the writer's input).
struct InMemoryKernel {
  KernelInfo info;
  // ctas[cta][warp] = instruction list. Deltas-mode records keep their 32 offsets in `lane_deltas`
  // (one array per such record, in order of appearance within the warp).
  struct Warp {
    std::vector<WarpInst> insts;
    std::vector<std::array<std::int32_t, kWarpSize>> lane_deltas;
  };
  std::vector<std::vector<Warp>> ctas;
};

// Warp-instructions of the whole trace, estimated from the first CTA of each kernel times its CTAs: exact when
// every CTA runs the same program (synthesized kernels, up to their edge tiles), cheap (one CTA per kernel is
// read). Lets a caller refuse a workload too large for its time budget before simulating it.
std::uint64_t estimate_warp_instructions(TraceSource& trace);

class InMemoryTrace final : public TraceSource {
 public:
  explicit InMemoryTrace(std::vector<InMemoryKernel> kernels, std::string name = "in-memory")
      : kernels_(std::move(kernels)), name_(std::move(name)) {}
  std::size_t num_kernels() const override { return kernels_.size(); }
  // The returned source refers to this trace's storage: keep the trace alive while using it.
  std::unique_ptr<KernelSource> open_kernel(std::size_t index) override;
  std::string description() const override { return name_; }
  const std::vector<InMemoryKernel>& kernels() const { return kernels_; }

 private:
  std::vector<InMemoryKernel> kernels_;
  std::string name_;
};

}  // namespace warpsim
