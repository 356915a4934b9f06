// Execution pipes of a sub-partition and their timing: per-class latency and issue interval from
// `sm.pipes.<pipe>.*`, per-opcode overrides from `sm.opcodes.<OP>.*`, and the tensor pipe timed from the MMA's
// work (shape and operand type) and the SM's tensor throughput for that type: warpgroup MMA (HGMMA) at
// `sm.tensor.flops_per_cycle.<type>`, mma.sync (HMMA) at `sm.tensor.mma_sync_flops_per_cycle.<type>` where a GPU
// runs it slower (Hopper), with the HGMMA result latency a function of N (`sm.tensor.wgmma.*`). Blackwell's
// tcgen05.mma (UTCMMA) is the SM's, not a sub-partition's: tcgen05_timing gives its occupancy of the SM's tensor
// core and its latency (`sm.tensor.tcgen05.*`), and the SM queues it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/params.h"
#include "sim/config/schema.h"
#include "sim/core/types.h"
#include "sim/stats/stats.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"

namespace warpsim {

class BuildContext;

// Pipes a warp-instruction can occupy, one of each per sub-partition.
enum class Pipe : std::uint8_t { Int, Fp32, Fp64, Sfu, Tensor, Ldst, Branch, None, Count };
inline constexpr std::size_t kTimedPipes = 7;  // Int .. Branch
inline constexpr std::array<const char*, kTimedPipes> kPipeNames = {"int", "fp32", "fp64", "sfu", "tensor", "ldst", "branch"};

inline Pipe pipe_of(OpClass c) {
  switch (c) {
    case OpClass::Int: return Pipe::Int;
    case OpClass::Fp32: return Pipe::Fp32;
    case OpClass::Fp64: return Pipe::Fp64;
    case OpClass::Sfu: return Pipe::Sfu;
    case OpClass::Tensor: return Pipe::Tensor;
    case OpClass::Ldst: return Pipe::Ldst;
    case OpClass::Branch: return Pipe::Branch;
    default: return Pipe::None;
  }
}

class ExecutionTiming {
 public:
  // Declares the timing keys of the `sm` section (pipes.*, opcodes.*, tensor.*).
  static void declare(Schema& s);

  explicit ExecutionTiming(BuildContext& ctx) : ctx_(ctx) {}
  void read(const Params& sm);
  // Tensor throughput per sub-partition for the kernel's run; the kernel is named in error messages.
  void begin_kernel(const KernelInfo& k, unsigned subpartitions);
  void add_stats(StatGroup& g) const;

  // Cycles `in` keeps its pipe busy, and cycles until its result can be used. `pipe` is pipe(in.op)
  // and not Pipe::None. An MMA this GPU cannot execute fails the run (BuildContext::fail) and takes 1 cycle.
  // `subpartition`: the issuing one (an MMA's pipe time is fractional: whole cycles are given out so that their
  // sum over a sub-partition's MMAs follows the exact work / rate).
  // The pipe `op` executes on: its instruction class's, or the config's sm.opcodes.<OP>.pipe (IMAD on the FMA pipe
  // since Volta).
  Pipe pipe(Opcode op) const { return op_pipe_[static_cast<std::size_t>(op)]; }
  // Result latency of an opcode of a fixed-latency pipe (int, fp32, fp64, sfu, branch), without side effects.
  Cycle fixed_latency(Opcode op) const { return op_latency_[static_cast<std::size_t>(op)]; }

  // tcgen05.mma: cycles it occupies the SM's tensor core (exact: work / the SM's rate, an MMA of fewer rows than
  // tcgen05.datapath_rows taking as long as one of that many) and cycles from the end of that occupancy to its
  // completion. A GPU without tcgen05, or without the type, fails the run and gets 1 / 1.
  void tcgen05_timing(const WarpInst& in, double& occupancy, Cycle& latency);
  // tcgen05.ld: cycles from issue until its registers can be read.
  Cycle tmem_load_latency() const { return tcgen05_ld_latency_; }
  bool has_tcgen05() const { return tcgen05_latency_ != 0; }

  void timing(const WarpInst& in, Pipe pipe, unsigned subpartition, Cycle& interval, Cycle& latency) {
    interval = op_interval_[static_cast<std::size_t>(in.op)];
    latency = op_latency_[static_cast<std::size_t>(in.op)];
    if (pipe == Pipe::Tensor) tensor_timing(in, subpartition, interval, latency);
  }

 private:
  void tensor_timing(const WarpInst& in, unsigned subpartition, Cycle& interval, Cycle& latency);
  void mma_timing(const WarpInst& in, bool sparse, std::uint64_t flops, double rate);

  BuildContext& ctx_;
  const KernelInfo* kernel_ = nullptr;
  std::array<Cycle, kTimedPipes> pipe_latency_{}, pipe_interval_{};
  // Per-opcode timing (the pipe's unless overridden by sm.opcodes.<OP>.*), indexed by Opcode.
  std::array<Cycle, static_cast<std::size_t>(Opcode::Count)> op_latency_{}, op_interval_{};
  std::array<Pipe, static_cast<std::size_t>(Opcode::Count)> op_pipe_{};
  Cycle tensor_latency_ = 0;
  Cycle wgmma_latency_fixed_ = 0, wgmma_latency_per_n8_ = 0;  // both 0: HGMMA latency as HMMA's
  Cycle tcgen05_latency_ = 0, tcgen05_ld_latency_ = 0;           // latency 0: no tcgen05 tensor cores
  std::uint32_t tcgen05_datapath_rows_ = 0;
  double sparse_speedup_ = 0, mma_sync_sparse_speedup_ = 0;      // 0: no structured sparsity
  std::vector<double> tensor_carry_;  // per sub-partition: pipe time owed (fraction of a cycle) by earlier MMAs
  std::array<double, kDTypeCount> tensor_flops_per_cycle_{};  // per SM, indexed by DType
  std::array<double, kDTypeCount> mma_sync_flops_per_cycle_{};  // per SM, indexed by DType; 0 = tensor_flops_per_cycle_
  std::array<double, kDTypeCount> tensor_rate_{};             // HGMMA, per sub-partition, for the current kernel
  std::array<double, kDTypeCount> mma_sync_rate_{};           // HMMA, per sub-partition, for the current kernel
  // Kernels repeat one MMA shape and type: the last timing is remembered.
  struct LastMma {
    Opcode op = Opcode::NOP;
    DType dtype = DType::None;
    std::uint16_t n = 0;
    bool sparse = false;
    double exact = 0;  // pipe cycles: work / rate
    std::uint64_t flops = 0;
    Cycle interval = 0, latency = 0;
  } last_mma_;
  std::uint64_t tensor_flops_ = 0;
};

}  // namespace warpsim
