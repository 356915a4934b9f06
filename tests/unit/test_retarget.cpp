// Retargeting (sim/trace/retarget.h): HGMMA on an sm_80 target becomes mma.sync with the same FLOPs, the wgmma
// ordering records go, TMA is refused, LDGSTS on an sm_75 target becomes LDG + STS at the group's wait, and a
// kernel run on its own (or a newer) arch is handed out untouched.
#include <catch2/catch.hpp>

#include <map>

#include "sim/core/error.h"
#include "sim/trace/retarget.h"

using namespace warpsim;

namespace {

WarpInst op(Opcode o) {
  WarpInst in;
  in.op = o;
  in.space = opcode_info(o).space;
  return in;
}

// wgmma m64nNkK: each of the warpgroup's warps carries the record, with its 4 accumulator ids as dst and src.
WarpInst hgmma(DType t, std::uint16_t n, std::uint16_t k) {
  WarpInst in = op(Opcode::HGMMA);
  in.dtype = t;
  in.mma = MmaShape{64, n, k};
  in.num_dst = in.num_src = 4;
  for (int i = 0; i < 4; ++i) in.dst[i] = in.src[i] = static_cast<std::uint16_t>(40 + i);
  return in;
}

WarpInst ldgsts(std::uint64_t base) {
  WarpInst in = op(Opcode::LDGSTS);
  in.addr_mode = AddrMode::Strided;
  in.access_bytes = 16;
  in.base = base;
  in.stride = 16;
  in.num_src = 1;
  in.src[0] = 2;
  return in;
}

// One CTA of `warps` warps running the same instructions.
std::unique_ptr<TraceSource> one_cta(const std::string& arch, std::uint32_t warps, const std::vector<WarpInst>& insts) {
  InMemoryKernel k;
  k.info.name = "captured_kernel";
  k.info.block = Dim3{warps * kWarpSize, 1, 1};
  k.info.registers_per_thread = 64;
  k.info.target_arch = arch;
  k.ctas.assign(1, std::vector<InMemoryKernel::Warp>(warps));
  for (auto& w : k.ctas[0]) w.insts = insts;
  std::vector<InMemoryKernel> kernels;
  kernels.push_back(std::move(k));
  return std::make_unique<InMemoryTrace>(std::move(kernels));
}

std::vector<std::vector<WarpInst>> read_all(TraceSource& trace) {
  std::vector<std::vector<WarpInst>> out;
  auto kernel = trace.open_kernel(0);
  auto cta = kernel->open_cta(0);
  WarpInst batch[7];  // a batch size that splits expansions across reads
  for (std::uint32_t w = 0; w < cta->num_warps(); ++w) {
    out.emplace_back();
    auto warp = cta->open_warp(w);
    for (std::size_t n; (n = warp->read(batch, 7)) > 0;) out.back().insert(out.back().end(), batch, batch + n);
  }
  return out;
}

}  // namespace

TEST_CASE("retarget: sm_NN parsing and when a kernel needs it", "[retarget]") {
  CHECK(sm_version("sm_90") == 90);
  CHECK(sm_version("sm_90a") == 90);
  CHECK(sm_version("sm_100") == 100);
  CHECK(sm_version("") == 0);
  CHECK(sm_version("compute_90") == 0);
  CHECK(sm_version("sm_9x0") == 0);
  CHECK(needs_retargeting("sm_90", "sm_80"));
  CHECK_FALSE(needs_retargeting("sm_80", "sm_90"));  // a newer target runs the binary as is
  CHECK_FALSE(needs_retargeting("sm_90", "sm_90"));
  CHECK_FALSE(needs_retargeting("", "sm_80"));       // unknown: nothing to compare
}

TEST_CASE("retarget: HGMMA on sm_80 becomes mma.sync of the same dtype and FLOPs - wgmma records go", "[retarget]") {
  const std::vector<WarpInst> warp{op(Opcode::WARPGROUP_ARRIVE),  hgmma(DType::BF16, 128, 16),
                                   hgmma(DType::BF16, 128, 16),   hgmma(DType::FP8, 64, 32),
                                   hgmma(DType::TF32, 32, 8),     op(Opcode::WARPGROUP_COMMIT),
                                   op(Opcode::WARPGROUP_DEPBAR),  op(Opcode::EXIT)};
  RetargetedTrace trace(one_cta("sm_90", 4, warp), "sm_80");
  REQUIRE_NOTHROW(trace.check_mappable());
  const auto warps = read_all(trace);
  REQUIRE(warps.size() == 4);

  // First principles: a warpgroup MMA m64nNkK is 2*64*N*K operations, shared by the warpgroup's 4 warps.
  const std::uint64_t expected_flops = 2ull * 64 * 128 * 16 * 2 + 2ull * 64 * 64 * 32 + 2ull * 64 * 32 * 8;
  std::uint64_t flops = 0;
  std::map<DType, std::uint64_t> hmma_per_type;
  for (const auto& insts : warps) {
    for (const WarpInst& in : insts) {
      CHECK(in.op != Opcode::HGMMA);
      CHECK(in.op != Opcode::WARPGROUP_ARRIVE);
      CHECK(in.op != Opcode::WARPGROUP_COMMIT);
      CHECK(in.op != Opcode::WARPGROUP_DEPBAR);
      CHECK(check_inst(in).empty());
      if (in.op != Opcode::HMMA) continue;
      CHECK(in.mma.m == 16);
      CHECK(in.mma.n == 8);
      CHECK(in.mma.k == (in.dtype == DType::BF16 ? 16 : in.dtype == DType::FP8 ? 32 : 8));
      flops += 2ull * in.mma.m * in.mma.n * in.mma.k;
      ++hmma_per_type[in.dtype];
    }
    CHECK(insts.back().op == Opcode::EXIT);
  }
  CHECK(flops == expected_flops);
  // A warp's quarter of m64nNkK in m16n8kK pieces: (16 rows / 16) * (N / 8) per instruction.
  CHECK(hmma_per_type[DType::BF16] == 4 * 2 * (128 / 8));
  CHECK(hmma_per_type[DType::FP8] == 4 * (64 / 8));
  CHECK(hmma_per_type[DType::TF32] == 4 * (32 / 8));

  // The accumulator: written (and read) by the last HMMA of each HGMMA, not by the ones before it.
  const auto& w0 = warps[0];
  CHECK(w0[0].num_dst == 0);
  CHECK(w0[15].num_dst == 4);
  CHECK(w0[15].dst[0] == 40);
  CHECK(w0[15].src[0] == 40);

  const std::vector<RetargetMapping> m = trace.mappings(0);
  CHECK(trace.captured_arch(0) == "sm_90");
  REQUIRE(m.size() == 6);  // 3 HGMMA kinds, 3 WARPGROUP opcodes
  std::uint64_t hgmma_records = 0, emitted = 0;
  for (const RetargetMapping& r : m) {
    if (r.from.rfind("HGMMA", 0) == 0) {
      hgmma_records += r.instructions;
      emitted += r.emitted;
    } else {
      CHECK(r.instructions == 4);
      CHECK(r.emitted == 0);
    }
  }
  CHECK(hgmma_records == 4 * 4);
  CHECK(emitted == 4 * (2 * 16 + 8 + 4));
  const auto bf16 = std::find_if(m.begin(), m.end(), [](const RetargetMapping& r) { return r.from == "HGMMA.64x128x16.BF16"; });
  REQUIRE(bf16 != m.end());
  CHECK(bf16->to == "16 x HMMA.16816.BF16 per warp");
  CHECK(bf16->instructions == 8);
}

TEST_CASE("retarget: a kernel on its own or a newer arch is handed out untouched", "[retarget]") {
  const std::vector<WarpInst> warp{hgmma(DType::BF16, 64, 16), op(Opcode::WARPGROUP_DEPBAR), op(Opcode::EXIT)};
  for (const char* target : {"sm_90", "sm_100"}) {
    RetargetedTrace trace(one_cta("sm_90", 4, warp), target);
    const auto warps = read_all(trace);
    REQUIRE(warps[0].size() == 3);
    CHECK(warps[0][0].op == Opcode::HGMMA);
    CHECK(trace.mappings(0).empty());
    CHECK(trace.captured_arch(0).empty());
  }
}

TEST_CASE("retarget: TMA on sm_80 is refused naming the kernel", "[retarget]") {
  WarpInst tma = op(Opcode::UTMALDG);
  tma.active_mask = 1;
  tma.addr_mode = AddrMode::Strided;
  tma.access_bytes = 16;
  tma.base = 4096;
  tma.aux = 4;
  tma.stride = tma.group_stride = 128;
  RetargetedTrace trace(one_cta("sm_90", 1, {tma, op(Opcode::EXIT)}), "sm_80");
  try {
    trace.check_mappable();
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("'captured_kernel'") != std::string::npos);
    CHECK(what.find("uses TMA") != std::string::npos);
    CHECK(what.find("sm_80 lacks") != std::string::npos);
  }
  CHECK_THROWS_AS(read_all(trace), InputError);  // also when read without the check first
}

TEST_CASE("retarget: tcgen05 on sm_90 is refused naming tensor memory and sm_100", "[retarget][tcgen05]") {
  WarpInst mma = op(Opcode::UTCMMA);
  mma.active_mask = 1;
  mma.dtype = DType::BF16;
  mma.mma = {128, 256, 16};
  RetargetedTrace trace(one_cta("sm_100", 1, {mma, op(Opcode::EXIT)}), "sm_90");
  try {
    trace.check_mappable();
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("uses tcgen05 (MMAs into tensor memory") != std::string::npos);
    CHECK(what.find("sm_90 lacks") != std::string::npos);
    CHECK(what.find("run it on an sm_100 or newer config") != std::string::npos);
  }
}

TEST_CASE("retarget: LDGSTS on sm_75 becomes LDG now and STS when its group is waited for", "[retarget]") {
  WarpInst wait_one = op(Opcode::DEPBAR);
  wait_one.aux = 1;
  WarpInst ffma = op(Opcode::FFMA);
  const std::vector<WarpInst> warp{ldgsts(0x1000), ldgsts(0x2000), op(Opcode::LDGDEPBAR), ldgsts(0x3000),
                                   op(Opcode::LDGDEPBAR), wait_one, ffma, op(Opcode::DEPBAR), op(Opcode::EXIT)};
  RetargetedTrace trace(one_cta("sm_80", 1, warp), "sm_75");
  const auto warps = read_all(trace);
  const auto& w = warps[0];
  const std::vector<Opcode> expected{Opcode::LDG, Opcode::LDG, Opcode::LDG,  Opcode::STS, Opcode::STS,
                                     Opcode::FFMA, Opcode::STS, Opcode::EXIT};
  REQUIRE(w.size() == expected.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].op == expected[i]);
    CHECK(check_inst(w[i]).empty());
  }
  // Each STS stores the register its LDG loaded, a register above the kernel's own 64.
  CHECK(w[0].base == 0x1000);
  CHECK(w[0].dst[0] >= 64);
  CHECK(w[3].src[0] == w[0].dst[0]);
  CHECK(w[4].src[0] == w[1].dst[0]);
  CHECK(w[6].src[0] == w[2].dst[0]);
  CHECK(w[0].dst[0] != w[1].dst[0]);
  CHECK(w[3].access_bytes == 16);
  std::uint64_t ldgsts_count = 0;
  for (const RetargetMapping& m : trace.mappings(0))
    if (m.from == "LDGSTS.128") {
      ldgsts_count = m.instructions;
      CHECK(m.emitted == 2 * 3);
    }
  CHECK(ldgsts_count == 3);
}
