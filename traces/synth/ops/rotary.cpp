// Rotary position embedding applied in place to q and k, shaped like vLLM's rotary_embedding_kernel
// (csrc/pos_encoding_kernels.cu, GPT-NeoX style: the rotated pairs are (r, r + head_dim/2) of each head): one
// block per token of min(heads * head_dim/2, 512) threads; thread i of a loop over heads * head_dim/2 pairs
// (stride blockDim) loads cos and sin of its pair's rotary offset from the cos/sin cache row of the token's
// position (cos in the first half of the row, sin in the second), x and y of its head, writes x*cos - y*sin and
// y*cos + x*sin back in place: first the query's heads, then the key's. The arithmetic is in the storage type, as
// vLLM's (HMUL2/HFMA2 for 16-bit types). Positions are taken as 0..tokens-1.
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

constexpr std::uint32_t kMaxThreads = 512;  // vLLM: block(std::min<int64_t>(num_heads * rot_dim / 2, 512))

struct RotaryPlan {
  OpDType type;
  std::uint64_t tokens = 0, heads = 0, head_dim = 0, pairs = 0;  // pairs per token and tensor = heads * head_dim/2
  std::uint32_t block = 0, iterations = 0;
  std::uint64_t q = 0, k = 0, cache = 0;
  std::uint16_t r_tid = 0, r_addr = 0, r_count = 0, r_cos = 0, r_sin = 0, r_x = 0, r_y = 0, r_t = 0;
};

class RotaryWarp final : public PhasedWarp {
 public:
  RotaryWarp(std::shared_ptr<const RotaryPlan> p, std::uint64_t token, std::uint32_t warp)
      : p_(std::move(p)), token_(token), warp_(warp) {
    set_phases({straight(), loop(p_->iterations), loop(p_->iterations), straight()});
  }

 private:
  enum : std::uint32_t { kSetup, kQuery, kKey, kEnd };

  void emit_phase(InstChunk& c, std::uint32_t phase, std::uint32_t j) override {
    const RotaryPlan& p = *p_;
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
    const std::uint64_t first = std::uint64_t{j} * p.block + std::uint64_t{warp_} * kWarpSize;
    std::uint32_t mask = 0;
    std::array<std::int32_t, kWarpSize> head_offsets{}, rot_offsets{};
    const std::uint64_t half = p.head_dim / 2;
    for (std::uint32_t l = 0; l < kWarpSize; ++l) {
      const std::uint64_t i = first + l;
      const std::uint64_t pair = i < p.pairs ? i : first;  // inactive lanes: any in-range offset
      head_offsets[l] = static_cast<std::int32_t>(((pair / half) * p.head_dim + pair % half) * p.type.bytes);
      rot_offsets[l] = static_cast<std::int32_t>((pair % half) * p.type.bytes);
      if (i < p.pairs && lane_in_block(first, l)) mask |= 1u << l;
    }
    if (mask == 0) return;  // lanes past the last pair left the loop
    const std::uint64_t row = (phase == kQuery ? p.q : p.k) + token_ * p.heads * p.head_dim * p.type.bytes;
    const std::uint64_t cache_row = p.cache + token_ * p.head_dim * p.type.bytes;
    const std::uint64_t half_bytes = half * p.type.bytes;
    load(c, cache_row, rot_offsets, mask, p.r_cos, reg(p.r_addr + 2));
    load(c, cache_row + half_bytes, rot_offsets, mask, p.r_sin, reg(p.r_addr + 2));
    load(c, row, head_offsets, mask, p.r_x, p.r_addr);
    load(c, row + half_bytes, head_offsets, mask, p.r_y, p.r_addr);
    const Opcode mul = p.type.is_16bit() ? Opcode::HFMA2 : Opcode::FMUL;
    const Opcode fma = p.type.is_16bit() ? Opcode::HFMA2 : Opcode::FFMA;
    emit_alu(c, mul, p.r_t, {p.r_x, p.r_cos});                 // x*cos
    emit_alu(c, mul, reg(p.r_t + 1), {p.r_y, p.r_cos});        // y*cos
    emit_alu(c, fma, p.r_x, {p.r_y, p.r_sin, p.r_t});          // x*cos - y*sin
    emit_alu(c, fma, p.r_y, {p.r_x, p.r_sin, reg(p.r_t + 1)}); // y*cos + x*sin
    store(c, row, head_offsets, mask, p.r_x, p.r_addr);
    store(c, row + half_bytes, head_offsets, mask, p.r_y, p.r_addr);
    emit_loop_tail(c, p.r_count, kPredicate);
  }

  // The block may be narrower than a warp multiple (heads * head_dim/2 < 512 and not a multiple of 32).
  bool lane_in_block(std::uint64_t first, std::uint32_t lane) const {
    return std::uint64_t{warp_} * kWarpSize + lane < p_->block && first + lane < p_->pairs;
  }
  void load(InstChunk& c, std::uint64_t base, const std::array<std::int32_t, kWarpSize>& offsets, std::uint32_t mask,
            std::uint16_t dst, std::uint16_t addr) {
    WarpInst& in = c.emit(Opcode::LDG);
    fill(in, base, mask);
    set_dst(in, dst, 1);
    set_src(in, {addr});
    c.own_deltas(offsets);
  }
  void store(InstChunk& c, std::uint64_t base, const std::array<std::int32_t, kWarpSize>& offsets, std::uint32_t mask,
             std::uint16_t data, std::uint16_t addr) {
    WarpInst& in = c.emit(Opcode::STG);
    fill(in, base, mask);
    set_src(in, {data, addr});
    c.own_deltas(offsets);
  }
  void fill(WarpInst& in, std::uint64_t base, std::uint32_t mask) const {
    in.space = MemSpace::Global;
    in.active_mask = mask;
    in.access_bytes = static_cast<std::uint8_t>(p_->type.bytes);
    in.addr_mode = AddrMode::Deltas;
    in.base = base;
  }

  std::shared_ptr<const RotaryPlan> p_;
  std::uint64_t token_;
  std::uint32_t warp_;
};

std::unique_ptr<TraceSource> make_rotary(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<RotaryPlan>();
  RotaryPlan& p = *plan;
  p.type = op_dtype(args);
  p.tokens = args.u64("tokens");
  p.heads = args.u64("heads");
  p.head_dim = args.u64("head_dim");
  if (p.head_dim % 2 != 0)
    throw InputError("rotary key 'head_dim': rotary embedding rotates pairs of elements; head_dim must be even, got " +
                     std::to_string(p.head_dim));
  p.pairs = p.heads * p.head_dim / 2;
  if (p.heads * p.head_dim * p.type.bytes > (std::uint64_t{1} << 30))
    throw InputError("rotary: heads x head_dim = " + std::to_string(p.heads * p.head_dim) +
                     " elements per token is beyond what this synthesizer addresses (1 GiB per token)");
  p.block = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.pairs, kMaxThreads));
  p.iterations = static_cast<std::uint32_t>((p.pairs + p.block - 1) / p.block);
  ArrayLayout arrays;
  const std::uint64_t tensor_bytes = p.tokens * p.heads * p.head_dim * p.type.bytes;
  p.q = arrays.add(tensor_bytes);
  p.k = arrays.add(tensor_bytes);
  p.cache = arrays.add(p.tokens * p.head_dim * p.type.bytes);
  RegisterAllocator regs;
  p.r_tid = regs.take(2);
  p.r_addr = regs.take(3);
  p.r_count = regs.take();
  p.r_cos = regs.take();
  p.r_sin = regs.take();
  p.r_x = regs.take();
  p.r_y = regs.take();
  p.r_t = regs.take(2);

  GeneratedKernelSpec spec;
  spec.info.name = "warpsim_rotary_neox_" + p.type.name + " (" + std::to_string(p.tokens) + "x" +
                   std::to_string(p.heads) + "x" + std::to_string(p.head_dim) + ")";
  spec.info.grid = Dim3{static_cast<std::uint32_t>(p.tokens), 1, 1};
  spec.info.block = Dim3{p.block, 1, 1};
  spec.info.registers_per_thread = op_thread_registers(regs);
  spec.info.target_arch = config.section("gpu").str("arch");
  spec.info.flops = 2 * 6 * p.tokens * p.pairs;  // per pair: 4 multiplies, 2 adds; q and k
  std::shared_ptr<const RotaryPlan> shared = plan;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) { return std::make_unique<RotaryWarp>(shared, cta, warp); };
  return single_kernel_trace(std::move(spec));
}

SynthesizerInfo rotary_synthesizer() {
  SynthesizerInfo info;
  info.name = "rotary";
  info.description =
      "rotary position embedding of q and k in place, vLLM-style (GPT-NeoX pairs, one block per token; "
      "traces/synth/README.md, \"Memory-bound operators\")";
  Schema s("synth", "rotary", info.description);
  s.uint("tokens", "tokens", std::nullopt, "tokens (one block each)", 1, (std::uint64_t{1} << 31) - 1)
      .uint("heads", "heads", std::nullopt, "attention heads of q and of k", 1, 4096)
      .uint("head_dim", "elements", std::nullopt, "head dimension (rotated as head_dim/2 pairs); even", 2, 4096);
  declare_dtype(s);
  info.keys = s.params();
  info.factory = make_rotary;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::ops

namespace warpsim {
WARPSIM_REGISTER_SYNTHESIZER(rotary, synth::ops::rotary_synthesizer());
}
