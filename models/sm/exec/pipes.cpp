// Execution-pipe and tensor-core timing (see pipes.h). All numbers come from the GPU's config.
#include "models/sm/exec/pipes.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/slots/build_context.h"

namespace warpsim {

namespace {

// Opcodes whose timing can be overridden one by one: those of the fixed-latency pipes. Tensor instructions are
// timed from their shape and the tensor throughput; memory instructions by the LSU and memory system.
bool has_opcode_override(Opcode op) {
  const OpClass c = op_class(op);
  return c == OpClass::Int || c == OpClass::Fp32 || c == OpClass::Fp64 || c == OpClass::Sfu || c == OpClass::Branch;
}

}  // namespace

void ExecutionTiming::declare(Schema& s) {
  const auto req = std::nullopt;
  // Fixed-latency pipes; the tensor pipe is timed from tensor.* and the MMA shape, the LSU by the memory system.
  for (std::size_t i = 0; i < kPipeNames.size(); ++i) {
    const std::string pipe = kPipeNames[i];
    if (pipe == "tensor") continue;
    if (pipe != "ldst")
      s.uint("pipes." + pipe + ".latency", "cycles", req, "cycles from issue to a dependent instruction's issue, " + pipe + " pipe", 1, 10000);
    s.uint("pipes." + pipe + ".issue_interval", "cycles", req, "cycles the " + pipe + " pipe of a sub-partition is busy per warp-instruction", 1, 10000);
  }
  for (std::size_t o = 0; o < static_cast<std::size_t>(Opcode::Count); ++o) {
    const Opcode op = static_cast<Opcode>(o);
    if (!has_opcode_override(op)) continue;
    const std::string name(opcode_info(op).name);
    s.uint("opcodes." + name + ".latency", "cycles", 0, "latency of " + name + " if it differs from its pipe's (0 = the pipe's)", 0, 10000);
    s.uint("opcodes." + name + ".issue_interval", "cycles", 0, "issue interval of " + name + " if it differs from its pipe's (0 = the pipe's)", 0, 10000);
    s.choice("opcodes." + name + ".pipe", {"class", "int", "fp32", "fp64", "sfu", "branch"}, std::string("class"),
             "the pipe " + name + " executes on, if not its instruction class's (class); its latency and issue interval "
             "default to that pipe's");
  }
  s.uint("tensor.latency", "cycles", req, "cycles from issue of an m16n8k16 MMA to its result; larger MMAs add their extra pipe occupancy", 1, 10000);
  for (DType t : kTensorDTypes)
    s.uint("tensor.flops_per_cycle." + std::string(dtype_name(t)), "FLOP/cycle", req,
           "dense tensor-core " + std::string(dtype_name(t)) + " operations per cycle per SM (0 = unsupported); "
           "the warpgroup-MMA (HGMMA) rate, and mma.sync's unless tensor.mma_sync_flops_per_cycle caps it", 0, 1 << 20);
  for (DType t : kTensorDTypes)
    s.uint("tensor.mma_sync_flops_per_cycle." + std::string(dtype_name(t)), "FLOP/cycle", 0,
           "dense " + std::string(dtype_name(t)) + " operations per cycle per SM that mma.sync (HMMA) reaches, where it is "
           "below tensor.flops_per_cycle (Hopper: only wgmma reaches the peak); 0 = tensor.flops_per_cycle", 0, 1 << 20);
  // wgmma result latency: latency_fixed + latency_per_n8 * N / 8, at least the instruction's tensor-pipe occupancy.
  s.uint("tensor.wgmma.latency_fixed", "cycles", 0,
         "part of a warpgroup MMA's (HGMMA) issue-to-completion latency that does not depend on N "
         "(0 with latency_per_n8 0: HGMMA latency as mma.sync's, tensor.latency + extra occupancy)", 0, 100000);
  s.uint("tensor.wgmma.latency_per_n8", "cycles", 0,
         "cycles a warpgroup MMA's (HGMMA) latency grows per 8 columns of N (m64nNk*)", 0, 100000);
  // Blackwell's tcgen05: the SM's tensor core takes MMAs from one thread and accumulates in tensor memory.
  s.uint("tensor.tcgen05.latency", "cycles", 0,
         "cycles from the end of a tcgen05.mma's (UTCMMA's) occupancy of the SM's tensor core to its completion "
         "(0 = no tcgen05 tensor cores: UTCMMA is an error)", 0, 100000);
  s.uint("tensor.tcgen05.datapath_rows", "rows", 128,
         "rows (TMEM lanes) the SM's tcgen05 tensor core computes at once: a tcgen05.mma of fewer rows (m64) "
         "occupies it as long as one of this many", 1, 1024);
  s.uint("tensor.tcgen05.ld_latency", "cycles", 0,
         "cycles from a tcgen05.ld (LDTM) to its registers' use", 0, 100000);
  // Structured (2:4) sparsity: a sparse MMA (aux bit kMmaSparse) does the dense-equivalent work 2mnk this much faster.
  s.real("tensor.sparse_speedup", "", 0.0,
         "how much faster a sparse (2:4) warpgroup MMA does its dense-equivalent work than a dense one (0 = no sparse "
         "tensor cores)", 0.0, 16.0);
  s.real("tensor.mma_sync_sparse_speedup", "", 0.0,
         "how much faster a sparse mma.sp (HMMA) does its dense-equivalent work than a dense mma.sync (0 = none)", 0.0, 16.0);
}

void ExecutionTiming::read(const Params& p) {
  for (std::size_t i = 0; i < kPipeNames.size(); ++i) {
    const std::string pipe = kPipeNames[i];
    if (pipe == "tensor") continue;  // timed by tensor_timing()
    if (pipe != "ldst") pipe_latency_[i] = p.u64("pipes." + pipe + ".latency");
    pipe_interval_[i] = p.u64("pipes." + pipe + ".issue_interval");
  }
  for (std::size_t o = 0; o < static_cast<std::size_t>(Opcode::Count); ++o) {
    const Opcode op = static_cast<Opcode>(o);
    Pipe pipe = pipe_of(op_class(op));
    const std::string key = "opcodes." + std::string(opcode_info(op).name);
    if (has_opcode_override(op) && p.str(key + ".pipe") != "class") {
      const auto named = std::find(kPipeNames.begin(), kPipeNames.end(), p.str(key + ".pipe"));
      pipe = static_cast<Pipe>(named - kPipeNames.begin());
    }
    op_pipe_[o] = pipe;
    if (pipe == Pipe::None) continue;
    op_latency_[o] = pipe_latency_[static_cast<std::size_t>(pipe)];
    op_interval_[o] = pipe_interval_[static_cast<std::size_t>(pipe)];
    if (!has_opcode_override(op)) continue;
    if (const auto v = p.u64(key + ".latency")) op_latency_[o] = v;
    if (const auto v = p.u64(key + ".issue_interval")) op_interval_[o] = v;
  }
  tensor_latency_ = p.u64("tensor.latency");
  wgmma_latency_fixed_ = p.u64("tensor.wgmma.latency_fixed");
  wgmma_latency_per_n8_ = p.u64("tensor.wgmma.latency_per_n8");
  tcgen05_latency_ = p.u64("tensor.tcgen05.latency");
  tcgen05_ld_latency_ = p.u64("tensor.tcgen05.ld_latency");
  tcgen05_datapath_rows_ = p.u32("tensor.tcgen05.datapath_rows");
  op_pipe_[static_cast<std::size_t>(Opcode::UTCMMA)] = Pipe::None;  // queued at the SM's tensor core (tcgen05_timing)
  sparse_speedup_ = p.real("tensor.sparse_speedup");
  mma_sync_sparse_speedup_ = p.real("tensor.mma_sync_sparse_speedup");
  for (DType t : kTensorDTypes) {
    const auto i = static_cast<std::size_t>(t);
    tensor_flops_per_cycle_[i] = static_cast<double>(p.u64("tensor.flops_per_cycle." + std::string(dtype_name(t))));
    const double cap = static_cast<double>(p.u64("tensor.mma_sync_flops_per_cycle." + std::string(dtype_name(t))));
    mma_sync_flops_per_cycle_[i] = cap > 0 ? std::min(cap, tensor_flops_per_cycle_[i]) : tensor_flops_per_cycle_[i];
  }
}

void ExecutionTiming::begin_kernel(const KernelInfo& k, unsigned subpartitions) {
  const double per_sp = 1.0 / subpartitions;
  tensor_rate_.fill(0.0);
  mma_sync_rate_.fill(0.0);
  last_mma_ = LastMma{};
  tensor_carry_.assign(subpartitions, 0.0);
  for (DType t : kTensorDTypes) {
    const auto i = static_cast<std::size_t>(t);
    tensor_rate_[i] = tensor_flops_per_cycle_[i] * per_sp;
    mma_sync_rate_[i] = mma_sync_flops_per_cycle_[i] * per_sp;
  }
  kernel_ = &k;
}

void ExecutionTiming::add_stats(StatGroup& g) const {
  g.add("tensor_flops", "FLOP", "tensor-core operations performed", tensor_flops_);
}

// Tensor pipe occupancy from the instruction's work and the SM's tensor throughput for its type and instruction
// (mma.sync may be capped below the warpgroup MMA's rate). mma.sync: the result latency grows by the extra
// occupancy over the m16n8k16 instruction the configured latency refers to. Warpgroup MMA, when sm.tensor.wgmma.*
// is configured: latency_fixed + latency_per_n8 * N/8 (the measured latencies depend on N, not on the type:
// h800pcie.lat.wgmma_fp16.luo24 note), never shorter than the instruction's own pipe occupancy.
void ExecutionTiming::tensor_timing(const WarpInst& in, unsigned subpartition, Cycle& interval, Cycle& latency) {
  const bool warpgroup = in.op == Opcode::HGMMA;
  const bool sparse = (in.aux & kMmaSparse) != 0;
  const double speedup = warpgroup ? sparse_speedup_ : mma_sync_sparse_speedup_;
  if (sparse && speedup <= 0) {
    ctx_.fail("kernel '" + kernel_->name + "' has a sparse " + std::string(opcode_info(in.op).name) +
              " (2:4 structured sparsity), but this GPU's sm.tensor." +
              (warpgroup ? "sparse_speedup" : "mma_sync_sparse_speedup") + " is 0 (no sparse tensor cores)");
    interval = latency = 1;
    return;
  }
  const double rate = (warpgroup ? tensor_rate_ : mma_sync_rate_)[static_cast<std::size_t>(in.dtype)] *
                      (sparse ? speedup : 1.0);
  const bool tensor_type = std::find(std::begin(kTensorDTypes), std::end(kTensorDTypes), in.dtype) != std::end(kTensorDTypes);
  if (!tensor_type || rate <= 0.0 || mma_flops_per_warp(in) == 0) {
    std::string why = !tensor_type ? std::string(dtype_name(in.dtype)) + " is not a tensor-core operand type"
                      : mma_flops_per_warp(in) == 0 ? "its MMA shape is empty"
                      : "this GPU's sm.tensor.flops_per_cycle." + std::string(dtype_name(in.dtype)) + " is 0 (unsupported)";
    ctx_.fail("kernel '" + kernel_->name + "' has a " + std::string(opcode_info(in.op).name) + " on " +
              std::string(dtype_name(in.dtype)) + " operands, but " + why);
    interval = latency = 1;
    return;
  }
  const std::uint64_t flops = mma_flops_per_warp(in);
  tensor_flops_ += flops;
  if (!(in.op == last_mma_.op && in.dtype == last_mma_.dtype && in.mma.n == last_mma_.n && sparse == last_mma_.sparse &&
        flops == last_mma_.flops))
    mma_timing(in, sparse, flops, rate);
  latency = last_mma_.latency;
  // Whole cycles of pipe time whose running sum follows the exact work / rate (an integral one is given as is).
  double& carry = tensor_carry_[subpartition];
  carry += last_mma_.exact;
  interval = std::max<Cycle>(1, static_cast<Cycle>(std::floor(carry + 1e-9)));
  carry = std::max(0.0, carry - static_cast<double>(interval));
}

void ExecutionTiming::tcgen05_timing(const WarpInst& in, double& occupancy, Cycle& latency) {
  occupancy = 1.0;
  latency = 1;
  const bool sparse = (in.aux & kMmaSparse) != 0;
  const double rate = tensor_flops_per_cycle_[static_cast<std::size_t>(in.dtype)] * (sparse ? sparse_speedup_ : 1.0);
  std::string why;
  if (tcgen05_latency_ == 0) why = "this GPU has no tcgen05 tensor cores (sm.tensor.tcgen05.latency is 0)";
  else if (sparse && sparse_speedup_ <= 0) why = "it is sparse and this GPU's sm.tensor.sparse_speedup is 0";
  else if (rate <= 0) why = "this GPU's sm.tensor.flops_per_cycle." + std::string(dtype_name(in.dtype)) + " is 0 (unsupported)";
  if (!why.empty()) {
    ctx_.fail("kernel '" + kernel_->name + "' has a UTCMMA (tcgen05.mma) on " + std::string(dtype_name(in.dtype)) +
              " operands, but " + why);
    return;
  }
  tensor_flops_ += mma_flops_per_warp(in);
  const double rows = std::max<double>(in.mma.m, tcgen05_datapath_rows_);
  occupancy = 2.0 * rows * in.mma.n * in.mma.k / rate;
  latency = tcgen05_latency_;
}

// The timing of one MMA kind (remembered in last_mma_): exact pipe time and result latency.
void ExecutionTiming::mma_timing(const WarpInst& in, bool sparse, std::uint64_t flops, double rate) {
  const bool warpgroup = in.op == Opcode::HGMMA;
  const double exact = static_cast<double>(flops) / rate;
  Cycle interval = 0, latency = 0;
  interval = std::max<Cycle>(1, static_cast<Cycle>(std::ceil(exact)));
  if (warpgroup && (wgmma_latency_fixed_ || wgmma_latency_per_n8_)) {
    const Cycle by_n = wgmma_latency_fixed_ + wgmma_latency_per_n8_ * ((in.mma.n + 7u) / 8u);
    latency = std::max(interval, by_n);
  } else {
    const Cycle reference = std::max<Cycle>(1, static_cast<Cycle>(std::ceil(2.0 * 16 * 8 * 16 / rate)));
    latency = tensor_latency_ + (interval > reference ? interval - reference : 0);
  }
  last_mma_ = LastMma{in.op, in.dtype, in.mma.n, sparse, exact, flops, interval, latency};
}

}  // namespace warpsim
