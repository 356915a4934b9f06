#include "traces/synth/ops/op_common.h"

#include "sim/core/error.h"

namespace warpsim::synth::ops {

Schema& declare_dtype(Schema& s) {
  return s.choice("dtype", {"fp16", "bf16", "fp32"}, "fp16", "element type of the tensors (arithmetic in fp32)");
}

std::unique_ptr<TraceSource> single_kernel_trace(GeneratedKernelSpec spec) {
  const std::string description = "synthesized " + spec.info.name;
  std::vector<GeneratedKernelSpec> kernels;
  kernels.push_back(std::move(spec));
  return std::make_unique<GeneratedTrace>(std::move(kernels), description);
}

OpDType op_dtype(const SynthArgs& args) { return op_dtype_named(args.text("dtype")); }

OpDType op_dtype_named(const std::string& name) {
  if (name == "fp16") return OpDType{DType::F16, 2, name};
  if (name == "bf16") return OpDType{DType::BF16, 2, name};
  if (name == "fp8") return OpDType{DType::FP8, 1, name};
  WARPSIM_ASSERT(name == "fp32", "operator dtype choice '" + name + "' has no DType");
  return OpDType{DType::F32, 4, name};
}

void emit_math(InstChunk& c, const MathCost& cost, std::uint16_t value) {
  const std::uint32_t before_sfu = cost.fp32 / 2;
  for (std::uint32_t i = 0; i < before_sfu; ++i) emit_alu(c, Opcode::FFMA, value, {value});
  for (std::uint32_t i = 0; i < cost.int_; ++i) emit_alu(c, Opcode::SHF, value, {value});
  for (std::uint32_t i = 0; i < cost.sfu; ++i) emit_alu(c, Opcode::MUFU, value, {value});
  for (std::uint32_t i = before_sfu; i < cost.fp32; ++i) emit_alu(c, Opcode::FFMA, value, {value});
}

void emit_unpack(InstChunk& c, const OpDType& t, std::uint32_t elems, std::uint16_t packed, std::uint16_t values) {
  if (!t.is_16bit()) return;  // inputs are fp16, bf16 or fp32 (fp8 is an output type only)
  for (std::uint32_t e = 0; e < elems; ++e) emit_alu(c, Opcode::HADD2, reg(values + e), {reg(packed + e / 2)});
}

void emit_pack(InstChunk& c, const OpDType& t, std::uint32_t elems, std::uint16_t values, std::uint16_t packed) {
  if (!t.is_packed()) return;
  const std::uint32_t per_reg = 4 / t.bytes;
  for (std::uint32_t e = 0; e < elems; e += 2)
    emit_alu(c, Opcode::FMUL, reg(packed + e / per_reg), {reg(values + e), reg(values + (e + 1 < elems ? e + 1 : e))});
  if (t.bytes == 1)  // two pairs merged into a register (none to merge for a lone pair)
    for (std::uint32_t e = 0; e + 2 < elems; e += 4) emit_alu(c, Opcode::LOP3, reg(packed + e / per_reg), {reg(packed + e / per_reg)});
}

bool PhasedWarp::generate(InstChunk& c) {
  if (phase_ >= phases_.size()) return false;
  while (phase_ < phases_.size() && c.size() < kMinChunkInsts) {
    const Phase& ph = phases_[phase_];
    if (!ph.loop) {
      emit_phase(c, static_cast<std::uint32_t>(phase_), 0);
      ++phase_;
      continue;
    }
    if (iteration_ == 0) loop_pc_ = c.pc();
    if (iteration_ < ph.iterations) {
      c.set_pc(loop_pc_);
      emit_phase(c, static_cast<std::uint32_t>(phase_), iteration_);
      ++iteration_;
    }
    if (iteration_ >= ph.iterations) {
      ++phase_;
      iteration_ = 0;
    }
  }
  WARPSIM_ASSERT(!c.empty(), "a row kernel's warp produced an empty chunk");
  return true;
}

}  // namespace warpsim::synth::ops
