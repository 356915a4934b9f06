// GEMM fused epilogues (bias, relu, gelu as cuBLASLt's CUBLASLT_EPILOGUE_*) and fp64 GEMMs. Expectations are
// derived from the tile shape and the documented per-element instruction counts (traces/synth/epilogue.h), not
// from the synthesizer's own helpers.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/core/types.h"
#include "sim/trace/inst.h"
#include "traces/synth/gemm.h"
#include "tests/unit/cta_instructions.h"
#include "tests/unit/gemm_test_layout.h"

using namespace warpsim;

namespace {

using namespace warpsim::test;

struct Counts {
  std::map<Opcode, std::uint64_t> ops;         // per CTA 0
  std::uint64_t bias_ldgs = 0;                 // LDGs into the bias vector, CTA 0
  std::set<std::uint64_t> bias_bytes_by_col0;  // bias bytes CTA 0 touched
  std::set<std::uint64_t> bias_bytes_col1;     // ... and the CTA of the next column tile
};

// Instruction counts of CTA 0 (output tile (0, 0)) and the bias bytes of it and of the CTA of output tile (0, 1)
// (CTA rasterisation: gemm_cta_tile). The bias vector lies after C's batch, 1 MiB aligned (gemm.h).
Counts count(const GemmProblem& p, const GemmTiling& t, const std::string& arch, std::uint64_t in_bytes,
             std::uint64_t out_bytes) {
  const std::uint64_t b_base = align_mib(kA + p.m * p.k * in_bytes);
  const std::uint64_t c_base = align_mib(b_base + p.n * p.k * in_bytes);
  const std::uint64_t bias_base = align_mib(c_base + p.m * p.n * out_bytes), bias_end = bias_base + p.n * out_bytes;
  auto trace = make_gemm_trace(p, t, arch, limits_for(arch));
  REQUIRE(trace->num_kernels() == 1);
  auto kernel = trace->open_kernel(0);
  const auto tiles_m = static_cast<std::uint32_t>(p.m / t.tile_m), tiles_n = static_cast<std::uint32_t>(p.n / t.tile_n);
  std::uint64_t next_column = 0;
  while (!(gemm_cta_tile(next_column, tiles_m, tiles_n, t.swizzle_group).m == 0 &&
           gemm_cta_tile(next_column, tiles_m, tiles_n, t.swizzle_group).n == 1))
    ++next_column;
  REQUIRE(gemm_cta_tile(0, tiles_m, tiles_n, t.swizzle_group).n == 0);
  Counts r;
  for (std::uint64_t cta : {std::uint64_t{0}, next_column})
    test::for_each_cta_instruction(*kernel, cta, [&](const WarpInst& in) {
      REQUIRE(check_inst(in) == "");
      if (cta == 0) ++r.ops[in.op];
      if (in.op != Opcode::LDG) return;
      bool bias = false;
      for (int l = 0; l < 32; ++l) {
        if (!(in.active_mask >> l & 1)) continue;
        const std::uint64_t a = in.lane_address(l);
        if (a < bias_base || a >= bias_end) continue;
        bias = true;
        for (std::uint64_t b = 0; b < in.access_bytes; ++b) (cta == 0 ? r.bias_bytes_by_col0 : r.bias_bytes_col1).insert(a + b);
      }
      if (bias && cta == 0) ++r.bias_ldgs;
    });
  return r;
}

std::int64_t delta(const Counts& with, const Counts& without, Opcode op) {
  auto get = [op](const Counts& c) {
    auto it = c.ops.find(op);
    return it == c.ops.end() ? std::int64_t{0} : static_cast<std::int64_t>(it->second);
  };
  return get(with) - get(without);
}

}  // namespace

TEST_CASE("gemm fused epilogues: bias loads and activation instructions per output element", "[synth][gemm][epilogue]") {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    DYNAMIC_SECTION(arch) {
      const GemmTiling t = default_gemm_tiling(arch, DType::BF16);
      GemmProblem p;
      p.m = 2 * t.tile_m;
      p.n = 2 * t.tile_n;
      p.k = 2 * t.tile_k;
      p.dtype = DType::BF16;  // bf16 C and bias: 2 bytes
      const Counts none = count(p, t, arch, 2, 2);
      p.epilogue = GemmEpilogue::Bias;
      const Counts bias = count(p, t, arch, 2, 2);
      p.epilogue = GemmEpilogue::Relu;
      const Counts relu = count(p, t, arch, 2, 2);
      p.epilogue = GemmEpilogue::GeluBias;
      const Counts gelu_bias = count(p, t, arch, 2, 2);

      // By hand: a CTA's accumulator is tile_m x tile_n elements, one per lane per warp-instruction, and it lies in
      // 16x8 blocks (m16n8 fragments), each needing one bias LDG of its 8 columns (two per lane).
      const std::int64_t elements = std::int64_t{t.tile_m} * t.tile_n / 32;
      const std::int64_t blocks = std::int64_t{t.tile_m / 16} * (t.tile_n / 8);
      CHECK(none.bias_ldgs == 0);
      CHECK(bias.bias_ldgs == static_cast<std::uint64_t>(blocks));
      CHECK(delta(bias, none, Opcode::LDG) == blocks);
      CHECK(delta(bias, none, Opcode::HADD2) == 2 * blocks);  // bf16 bias widened to fp32, per element
      CHECK(delta(bias, none, Opcode::FFMA) == elements);     // alpha*acc + bias replaces alpha*acc
      CHECK(delta(bias, none, Opcode::FMUL) == -elements);
      CHECK(delta(relu, none, Opcode::FMUL) == elements);     // FMNMX per element (recorded as FMUL)
      CHECK(delta(relu, none, Opcode::LDG) == 0);
      // gelu (tanh form): 3 FMUL, 2 FFMA, 1 MUFU per element, on top of bias.
      CHECK(delta(gelu_bias, none, Opcode::MUFU) == elements);
      CHECK(delta(gelu_bias, none, Opcode::FFMA) == elements + 2 * elements);
      CHECK(delta(gelu_bias, none, Opcode::FMUL) == -elements + 3 * elements);
      // Bias bytes: each CTA column tile reads its tile_n elements of the vector, and the next tile the next ones.
      CHECK(bias.bias_bytes_by_col0.size() == t.tile_n * 2u);
      CHECK(bias.bias_bytes_col1.size() == t.tile_n * 2u);
      CHECK(*bias.bias_bytes_col1.begin() == *bias.bias_bytes_by_col0.begin() + t.tile_n * 2u);
    }
  }
}

TEST_CASE("gemm fused epilogues are refused for int8 and never split K", "[synth][gemm][epilogue]") {
  GemmProblem p;
  p.m = 64;
  p.n = 1024;
  p.k = 8192;
  p.dtype = DType::I8;
  p.epilogue = GemmEpilogue::Bias;
  CHECK_THAT(validate_gemm(p, default_gemm_tiling("sm_80", DType::I8), limits_for("sm_80")),
             Catch::Contains("int8"));
  p.dtype = DType::BF16;
  GemmLimits many_sms = limits_for("sm_80");
  many_sms.sm_count = 108;
  CHECK(default_gemm_tiling("sm_80", DType::BF16, p, many_sms).split_k == 1);
  p.epilogue = GemmEpilogue::None;  // the same decode shape splits K without an epilogue
  CHECK(default_gemm_tiling("sm_80", DType::BF16, p, many_sms).split_k > 1);
}
