// Retargeting: a kernel captured for one GPU (KernelInfo::target_arch, e.g. sm_90) run on the config of an older
// one (gpu.arch, e.g. sm_80). A TraceSource decorator rewrites, warp by warp as the simulator reads them, the
// instructions the target lacks, following one table of rules (retarget.cpp, kRules):
//   HGMMA (sm_90)                       -> each warp's share as mma.sync m16n8kK HMMAs of the same dtype and the
//                                          same FLOPs (K = 16 for f16/bf16, 8 for tf32, 32 for fp8/i8)
//   WARPGROUP_ARRIVE/COMMIT/DEPBAR      -> dropped (mma.sync results are scoreboarded)
//   UTMALDG, SYNCS_*, MBARRIER_INIT     -> refused: an InputError naming the kernel (no mapping is invented)
//   LDGSTS (sm_80)                      -> LDG into a staging register now, its STS when the group is waited for
//   LDGDEPBAR, DEPBAR (sm_80)           -> dropped; DEPBAR N issues the STSs of the groups it waited for
// Anything else passes through; a kernel whose target_arch is the config's, newer, or unknown is handed out
// untouched (the same KernelSource object), so such runs are bit-identical to unwrapped ones. Grid and CTA shapes
// stay as captured: the kernel binary is fixed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/trace/source.h"

namespace warpsim {

// One kind of rewrite done on one kernel, e.g. from "HGMMA.64x128x16.BF16" to "8 x HMMA.16816.BF16 per warp".
struct RetargetMapping {
  std::string from;                // the captured instruction
  std::string to;                  // what it ran as ("dropped: ..." for removed records)
  std::uint64_t instructions = 0;  // captured warp-instructions rewritten this way
  std::uint64_t emitted = 0;       // warp-instructions they became
};

// "sm_90" -> 90, "sm_90a" -> 90, "sm_100" -> 100; 0 when the text is not of that form (then nothing is mapped).
int sm_version(std::string_view arch) noexcept;

// A kernel captured for `captured` is rewritten to run on `target`: both known and the target older.
bool needs_retargeting(std::string_view captured, std::string_view target) noexcept;

// The decorator: wraps any trace source; app/run_one.cpp applies it with the config's gpu.arch.
class RetargetedTrace final : public TraceSource {
 public:
  RetargetedTrace(std::unique_ptr<TraceSource> inner, std::string target_arch);
  ~RetargetedTrace() override;

  std::size_t num_kernels() const override { return inner_->num_kernels(); }
  std::unique_ptr<KernelSource> open_kernel(std::size_t index) override;
  std::string description() const override { return inner_->description(); }
  std::vector<UntimedOpcode> untimed(std::size_t index) const override { return inner_->untimed(index); }

  const std::string& target_arch() const noexcept { return target_arch_; }
  // The arch kernel `index` was captured for when it differs from the target (else ""), from its latest opening.
  std::string captured_arch(std::size_t index) const;
  // What was rewritten in kernel `index` by its latest opening (its counts complete once every warp has been
  // read, i.e. after the simulation), in a fixed order; empty when it ran as captured.
  std::vector<RetargetMapping> mappings(std::size_t index) const;
  // Reads the first CTA of every kernel to be retargeted and throws InputError for an instruction no rule can
  // map (TMA, mbarriers) before anything is simulated; later CTAs are checked as they are read.
  void check_mappable();

  struct KernelTally;  // retarget.cpp

 private:
  std::unique_ptr<TraceSource> inner_;
  std::string target_arch_;
  std::vector<std::shared_ptr<KernelTally>> tallies_;  // per kernel index, from its latest opening
};

}  // namespace warpsim
