// Shared by the memory-bound operator synthesizers (elementwise, softmax, layernorm, rmsnorm): the data types
// they take, where their arrays live, the per-element instruction sequences of the math library functions
// PyTorch's kernels call (expf, tanhf, IEEE division) and the 16-bit <-> fp32 conversions. See README.md here,
// "Memory-bound operators".
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/schema.h"
#include "sim/trace/inst.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/registry.h"

namespace warpsim::synth::ops {

// Element type of an operator's tensors. PyTorch computes in fp32 ("opmath") whatever the storage type.
struct OpDType {
  DType dtype = DType::F16;
  std::uint32_t bytes = 2;
  std::string name = "fp16";
  bool is_16bit() const { return bytes == 2; }
  bool is_packed() const { return bytes < 4; }  // several elements per 32-bit register
};

// The `dtype` key every operator declares: fp16 | bf16 | fp32, default fp16.
Schema& declare_dtype(Schema& s);
OpDType op_dtype(const SynthArgs& args);
// fp16 | bf16 | fp32 | fp8 (e4m3: a storage type only, which a converting copy writes).
OpDType op_dtype_named(const std::string& name);

// Arrays of a kernel, one after another from kOpArrayBase, each starting on a 1 MiB boundary (as the GEMM's).
inline constexpr std::uint64_t kOpArrayBase = 0x7f0000000000;
inline constexpr std::uint64_t kOpArrayAlign = std::uint64_t{1} << 20;
class ArrayLayout {
 public:
  std::uint64_t add(std::uint64_t bytes) {
    const std::uint64_t base = next_;
    next_ = (next_ + bytes + kOpArrayAlign - 1) / kOpArrayAlign * kOpArrayAlign;
    if (bytes == 0) next_ += kOpArrayAlign;
    return base;
  }

 private:
  std::uint64_t next_ = kOpArrayBase;
};

// Dynamic instructions of one fp32 math-library call per element, as nvcc emits them without --use_fast_math
// (PyTorch's default build). Counted from the SASS of the accurate routines:
//   expf:   FFMA.SAT, FFMA.RM, FADD, FFMA, FFMA (range reduction), SHF (exponent), MUFU.EX2, FMUL  -> 6 fp32, 1 int, 1 sfu
//   x / y:  MUFU.RCP + 4 FFMA (Newton step, quotient, residual, correction; the slow path for denormal or huge
//           operands is not taken)                                                             -> 4 fp32, 1 sfu
//   tanhf:  |x|, exp2 of 2|x| (MUFU.EX2 with 2 FFMA of range reduction), 1 - 2/(e+1) (MUFU.RCP, FADD, FFMA),
//           the small-|x| polynomial (4 FFMA) and the select                                  -> 10 fp32, 2 sfu
struct MathCost {
  std::uint32_t fp32 = 0, int_ = 0, sfu = 0;
  constexpr MathCost operator+(const MathCost& o) const { return {fp32 + o.fp32, int_ + o.int_, sfu + o.sfu}; }
  constexpr std::uint32_t total() const { return fp32 + int_ + sfu; }
};
inline constexpr MathCost kExpf{6, 1, 1};
inline constexpr MathCost kDivision{4, 0, 1};
inline constexpr MathCost kTanhf{10, 0, 2};
inline constexpr MathCost fp32_ops(std::uint32_t n) { return {n, 0, 0}; }

// Emits `cost` as a dependent chain on register `value` (each instruction reads and writes it): the FP32 ops,
// then the integer ones, with the SFU ops (MUFU) in the middle of the chain as in the real sequences.
void emit_math(InstChunk& c, const MathCost& cost, std::uint16_t value);

// Conversions of 16-bit storage to and from fp32: HADD2.F32 per element in (the ISA's HADD2), F2FP.PACK per pair of
// elements out (counted as an FMUL on the fp32 pipe, as the GEMM epilogue does). None for fp32. fp8 (e4m3), out
// only: one F2FP.SATFINITE.E4M3.F32.PACK_AB per pair (an FMUL, as above) and a PRMT per four elements merging two
// pairs into one register (a LOP3 on the integer pipe).
// `packed` = first of the elems*bytes/4 registers holding the loaded vector, `values` = first of `elems` fp32 registers.
void emit_unpack(InstChunk& c, const OpDType& t, std::uint32_t elems, std::uint16_t packed, std::uint16_t values);
void emit_pack(InstChunk& c, const OpDType& t, std::uint32_t elems, std::uint16_t values, std::uint16_t packed);

// Registers of a vector of `elems` elements: 32-bit registers of the packed data (at least one).
inline std::uint32_t packed_regs(const OpDType& t, std::uint32_t elems) { return (elems * t.bytes + 3) / 4; }

// PyTorch's kernels are compiled for the default per-block shared-memory limit unless they opt in to more; the
// block softmax keeps a row in shared memory only below it (SoftMax.cu: sharedMemPerBlock). CUDA C++ Programming
// Guide: "allocations above 48 KB per block ... require an explicit opt-in" (every architecture since cc 3.0).
inline constexpr std::uint64_t kDefaultSharedMemPerBlock = 48 * 1024;

// Registers per thread of an operator kernel: its register ids rounded up to the allocation granule of 8, at least
// 16 (what nvcc gives the smallest kernels).
inline std::uint32_t op_thread_registers(const RegisterAllocator& regs) {
  return std::max<std::uint32_t>(16, (regs.used() + 7u) / 8u * 8u);
}

// The trace of an operator that is one kernel, described as "synthesized <kernel name>".
std::unique_ptr<TraceSource> single_kernel_trace(GeneratedKernelSpec spec);

// Predicate id used by loop tails and bounds checks.
inline constexpr std::uint16_t kPredicate = 248;

// A guard for grid sizes: CUDA's grid.x limit 2^31 - 1 (CUDA C++ Programming Guide, technical specifications).
inline constexpr std::uint64_t kMaxGridX = (std::uint64_t{1} << 31) - 1;

// A warp of a row kernel as a sequence of phases, each straight-line code (setup, a reduction, the end) or a loop
// whose body is emitted once per iteration at the same pc (a pass over the row's column chunks). generate() fills a
// chunk with whole phases or loop iterations until it holds at least kMinChunkInsts records.
class PhasedWarp : public WarpGenerator {
 public:
  bool generate(InstChunk& c) final;

 protected:
  struct Phase {
    bool loop = false;
    std::uint32_t iterations = 0;  // loops only
  };
  static Phase straight() { return Phase{false, 0}; }
  static Phase loop(std::uint32_t iterations) { return Phase{true, iterations}; }
  // Called once in the constructor of the derived class. The last phase must emit EXIT.
  void set_phases(std::vector<Phase> phases) { phases_ = std::move(phases); }
  // Emits phase `phase` (iteration `iteration` of a loop; 0 for straight-line code).
  virtual void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t iteration) = 0;

 private:
  static constexpr std::size_t kMinChunkInsts = 256;
  std::vector<Phase> phases_;
  std::size_t phase_ = 0;
  std::uint32_t iteration_ = 0;
  std::uint32_t loop_pc_ = 0;
};

}  // namespace warpsim::synth::ops
