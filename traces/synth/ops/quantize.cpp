// Activation quantization to NVFP4 before an fp4 GEMM, shaped like vLLM's scaled_fp4_quant kernel
// (csrc/quantization/fp4/nvfp4_quant_kernels.cu, cvt_fp16_to_fp4; read, not copied): each thread converts 8
// consecutive 16-bit elements of a row (one 16-byte load) into 8 e2m1 values (one 4-byte store); the two threads
// of a 16-element scale block exchange their absolute maxima with a shuffle, and the first of them writes the
// block's e4m3 scale into the 128x4 scale-factor atoms the GEMM reads (traces/synth/gemm.cpp, block_scaled).
// Block: min(cols / 8, 512) threads; grid: min(rows, sm.count x 2048 / block); CTA b converts rows b, b + grid, ...
// and thread t chunks t, t + block, ... of each row.
//
// Per chunk: IMAD (offset), LDG.128; the absolute maximum of the 4 pairs (4 HMNMX2, counted as HADD2), SHFL.BFLY
// with the partner and its max (FMNMX, counted as FADD); the scale: x global scale / 6 (2 FMUL), to e4m3 and back
// (F2FP, HADD2.F32), the output scale's reciprocal (MUFU.RCP, FMUL); the 8 elements to fp32 (8 HADD2.F32),
// scaled (8 FMUL), packed two by two into e2m1 (4 F2FP.E2M1X2, counted as FMUL) and merged (3 PRMT, as LOP3);
// STG.32; the scale's swizzled offset (4 integer ops) and STG.U8 by the even lanes; the loop tail.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/generated.h"
#include "traces/synth/ops/op_common.h"
#include "traces/synth/registry.h"

namespace warpsim::synth::ops {
namespace {

constexpr std::uint32_t kElemsPerThread = 8;   // CVT_FP4_ELTS_PER_THREAD
constexpr std::uint32_t kScaleBlock = 16;      // CVT_FP4_SF_VEC_SIZE: elements per e4m3 scale
constexpr std::uint32_t kMaxThreads = 512;     // block(std::min(n / ELTS_PER_THREAD, 512))
constexpr std::uint32_t kThreadsPerSm = 2048;  // numBlocksPerSM = 2048 / block.x
constexpr std::uint32_t kAtomRows = 128, kAtomScales = 4, kAtomBytes = 512;  // the GEMM's scale-factor atoms
// A chunk's instructions (the list in the header comment) before the loop tail: IMAD, LDG; 4 + 8 for the scale;
// 8 + 8 + 4 + 3 for the values; STG; 4 + 1 for the scale's store.
constexpr std::uint32_t kChunkInsts = 2 + (kElemsPerThread / 2 + 8) + (2 * kElemsPerThread + kElemsPerThread / 2 + 3) + 1 + 5;

struct QuantizePlan {
  OpDType type;
  std::uint64_t rows = 0, cols = 0, chunks = 0;  // chunks: 8-element pieces of a row
  std::uint32_t block = 0, grid = 0, passes = 0;  // passes: a thread's chunks per row
  std::uint64_t in = 0, out = 0, scales = 0;
  std::uint64_t scale_k_atoms = 0;  // atoms along a row block's K
  std::uint16_t r_tid = 0, r_addr = 0, r_count = 0, r_packed = 0, r_values = 0, r_max = 0, r_scale = 0;
};

class QuantizeWarp final : public PhasedWarp {
 public:
  QuantizeWarp(std::shared_ptr<const QuantizePlan> p, std::uint64_t cta, std::uint32_t warp)
      : p_(std::move(p)), cta_(cta), warp_(warp) {
    const std::uint64_t rows = p_->rows > cta_ ? (p_->rows - cta_ + p_->grid - 1) / p_->grid : 0;
    set_phases({straight(), loop(static_cast<std::uint32_t>(rows * p_->passes)), straight()});
  }

 private:
  enum : std::uint32_t { kSetup, kChunks, kEnd };

  void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t j) override {
    const QuantizePlan& p = *p_;
    if (phase == kSetup) {
      emit_alu(c, Opcode::S2R, p.r_tid, {});
      emit_alu(c, Opcode::S2R, reg(p.r_tid + 1), {});
      for (std::uint32_t a = 0; a < 3; ++a) emit_alu(c, Opcode::IMAD, reg(p.r_addr + a), {p.r_tid, reg(p.r_tid + 1)});
      return;
    }
    if (phase == kEnd) {
      c.emit(Opcode::EXIT);
      return;
    }
    const std::uint64_t row = cta_ + std::uint64_t{j / p.passes} * p.grid;
    const std::uint64_t first = std::uint64_t{j % p.passes} * p.block + std::uint64_t{warp_} * kWarpSize;
    std::uint32_t mask = 0;
    for (std::uint32_t l = 0; l < kWarpSize; ++l)
      if (std::uint64_t{warp_} * kWarpSize + l < p.block && first + l < p.chunks) mask |= 1u << l;
    if (mask == 0) {  // no lane has a chunk in this pass: the warp only goes round the loop
      c.skip(kChunkInsts);
      emit_loop_tail(c, p.r_count, kPredicate);
      return;
    }
    const std::size_t first_inst = c.size();
    const std::uint32_t in_regs = packed_regs(p.type, kElemsPerThread);
    emit_alu(c, Opcode::IMAD, p.r_addr, {p.r_addr});
    emit_load(c, Opcode::LDG, MemSpace::Global,
              LaneRows{p.in + (row * p.chunks + first) * kElemsPerThread * p.type.bytes, kElemsPerThread * p.type.bytes,
                       kWarpSize, 0},
              mask, p.r_packed, in_regs, {p.r_addr});
    for (std::uint32_t i = 0; i < kElemsPerThread / 2; ++i) emit_alu(c, Opcode::HADD2, p.r_max, {p.r_max, reg(p.r_packed + i)});
    emit_alu(c, Opcode::SHFL, reg(p.r_max + 1), {p.r_max});
    emit_alu(c, Opcode::FADD, p.r_max, {p.r_max, reg(p.r_max + 1)});
    emit_alu(c, Opcode::FMUL, p.r_scale, {p.r_max});
    emit_alu(c, Opcode::FMUL, p.r_scale, {p.r_scale});
    emit_alu(c, Opcode::FMUL, reg(p.r_scale + 1), {p.r_scale});  // F2FP to e4m3: the stored scale
    emit_alu(c, Opcode::HADD2, p.r_scale, {reg(p.r_scale + 1)});
    emit_alu(c, Opcode::MUFU, p.r_scale, {p.r_scale});
    emit_alu(c, Opcode::FMUL, p.r_scale, {p.r_scale});
    for (std::uint32_t e = 0; e < kElemsPerThread; ++e)
      emit_alu(c, Opcode::HADD2, reg(p.r_values + e), {reg(p.r_packed + e / 2)});
    for (std::uint32_t e = 0; e < kElemsPerThread; ++e)
      emit_alu(c, Opcode::FMUL, reg(p.r_values + e), {reg(p.r_values + e), p.r_scale});
    for (std::uint32_t e = 0; e < kElemsPerThread; e += 2)
      emit_alu(c, Opcode::FMUL, reg(p.r_packed + e / 2), {reg(p.r_values + e), reg(p.r_values + e + 1)});
    for (std::uint32_t i = 1; i < kElemsPerThread / 2; ++i)
      emit_alu(c, Opcode::LOP3, p.r_packed, {p.r_packed, reg(p.r_packed + i)});
    emit_store(c, Opcode::STG, MemSpace::Global,
               LaneRows{p.out + (row * p.chunks + first) * (kElemsPerThread / 2), kElemsPerThread / 2, kWarpSize, 0},
               mask, {p.r_packed, reg(p.r_addr + 1)});
    for (std::uint32_t i = 0; i < 4; ++i) emit_alu(c, Opcode::IMAD, reg(p.r_addr + 2), {reg(p.r_addr + 2), p.r_tid});
    // The even lanes' scales: scale s of the row is byte s % 4 of the word at (row % 32) x 16 + (row % 128 / 32) x 4
    // in atom s / 4 of its row block. Lane 2i holds scale scale0 + i (scale0 a multiple of 16: `first` is of 32
    // lanes), so a warp's 16 scales are 4 words in 4 consecutive atoms.
    const std::uint64_t scale0 = first * kElemsPerThread / kScaleBlock;
    const std::uint64_t atom = (row / kAtomRows) * p.scale_k_atoms + scale0 / kAtomScales;
    const std::uint64_t in_atom = (row % 32) * 16 + (row % kAtomRows / 32) * 4;
    std::array<std::int32_t, kWarpSize> offsets{};
    for (std::uint32_t l = 0; l < kWarpSize; ++l)
      offsets[l] = static_cast<std::int32_t>(l / (2 * kAtomScales) * kAtomBytes + l % (2 * kAtomScales) / 2);
    WarpInst& sf = c.emit(Opcode::STG);
    sf.space = MemSpace::Global;
    sf.active_mask = mask & 0x55555555u;
    sf.access_bytes = 1;
    sf.addr_mode = AddrMode::Deltas;
    sf.base = p.scales + atom * kAtomBytes + in_atom;
    set_src(sf, {p.r_scale, reg(p.r_addr + 2)});
    c.own_deltas(offsets);
    WARPSIM_ASSERT(c.size() - first_inst == kChunkInsts, "quantize: a chunk's instruction count differs from kChunkInsts");
    emit_loop_tail(c, p.r_count, kPredicate);
  }

  std::shared_ptr<const QuantizePlan> p_;
  std::uint64_t cta_;
  std::uint32_t warp_;
};

std::unique_ptr<TraceSource> make_quantize(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<QuantizePlan>();
  QuantizePlan& p = *plan;
  p.type = op_dtype(args);
  if (!p.type.is_16bit())
    throw InputError("quantize key 'dtype': scaled_fp4_quant converts 16-bit activations (fp16 or bf16), got " + p.type.name);
  p.rows = args.u64("rows");
  p.cols = args.u64("cols");
  if (p.cols % (2 * kScaleBlock) != 0)
    throw InputError(fmt::format("quantize key 'cols': nvfp4 quantization takes rows of whole 32-element groups (16-element "
                                 "scale blocks, 16-byte rows of the fp4 output for TMA), got {}", p.cols));
  p.chunks = p.cols / kElemsPerThread;
  p.block = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.chunks, kMaxThreads));
  const std::uint64_t sm_count = config.section("sm").u64("count");
  p.grid = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.rows, sm_count * (kThreadsPerSm / p.block)));
  p.passes = static_cast<std::uint32_t>((p.chunks + p.block - 1) / p.block);
  if ((p.rows + p.grid - 1) / p.grid * p.passes > 0xffffffffull)  // a warp's iterations: its CTA's rows x passes
    throw InputError(fmt::format("quantize: {} rows of {} columns are beyond what this synthesizer loops over", p.rows, p.cols));
  p.scale_k_atoms = (p.cols / kScaleBlock + kAtomScales - 1) / kAtomScales;
  ArrayLayout arrays;
  p.in = arrays.add(p.rows * p.cols * p.type.bytes);
  p.out = arrays.add(p.rows * p.cols / 2);
  p.scales = arrays.add((p.rows + kAtomRows - 1) / kAtomRows * p.scale_k_atoms * kAtomBytes);
  RegisterAllocator regs;
  p.r_tid = regs.take(2);
  p.r_addr = regs.take(3);
  p.r_count = regs.take();
  p.r_packed = regs.take(packed_regs(p.type, kElemsPerThread));
  p.r_values = regs.take(kElemsPerThread);
  p.r_max = regs.take(2);
  p.r_scale = regs.take(2);

  GeneratedKernelSpec spec;
  spec.info.name = fmt::format("warpsim_quantize_nvfp4_{} ({}x{})", p.type.name, p.rows, p.cols);
  spec.info.grid = Dim3{p.grid, 1, 1};
  spec.info.block = Dim3{p.block, 1, 1};
  spec.info.registers_per_thread = op_thread_registers(regs);
  spec.info.target_arch = config.section("gpu").str("arch");
  spec.info.flops = 2 * p.rows * p.cols;  // per element: |x| max and the scaling multiply
  std::shared_ptr<const QuantizePlan> shared = plan;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) { return std::make_unique<QuantizeWarp>(shared, cta, warp); };
  return single_kernel_trace(std::move(spec));
}

SynthesizerInfo quantize_synthesizer() {
  SynthesizerInfo info;
  info.name = "quantize";
  info.description =
      "activation quantization of rows x cols 16-bit elements to NVFP4 (e2m1 with an e4m3 scale per 16 elements in "
      "the fp4 GEMM's scale layout), as vLLM's scaled_fp4_quant runs it before each fp4 linear layer "
      "(traces/synth/README.md, \"Memory-bound operators\")";
  Schema s("synth", "quantize", info.description);
  s.uint("rows", "rows", std::nullopt, "rows (tokens)", 1, (std::uint64_t{1} << 31) - 1)
      .uint("cols", "elements", std::nullopt, "elements per row (the GEMM's k); a multiple of 32", 32, std::uint64_t{1} << 24)
      .choice("format", {"nvfp4"}, std::string("nvfp4"),
              "output format: nvfp4 (e2m1 values, e4m3 scale per 16 elements, a per-tensor fp32 global scale)");
  declare_dtype(s);
  info.keys = s.params();
  info.factory = make_quantize;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(quantize, synth::ops::quantize_synthesizer());
}
