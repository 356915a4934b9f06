// Tests of the GEMM synthesizer (traces/synth/gemm.h) and of the generated-trace base (traces/synth/generated.h).
// Expected values are derived by hand from the documented kernel structure (traces/synth/README.md).
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/core/types.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/trace/inst.h"
#include "sim/slots/cluster.h"
#include "traces/synth/gemm.h"
#include "tests/unit/gemm_test_layout.h"
#include "traces/synth/gemm_synthesizer.h"
#include "traces/synth/generated.h"

using namespace warpsim;

namespace {

using namespace warpsim::test;

// By hand, per data type (README.md, "GEMM"): input element bytes and output element bytes without split-K.
std::uint64_t input_bytes(DType t) { return t == DType::FP8 || t == DType::I8 ? 1 : t == DType::TF32 ? 4 : 2; }
std::uint64_t output_bytes(DType t) { return t == DType::TF32 || t == DType::I8 ? 4 : 2; }
// The widest access of at most 16 bytes whose size divides a row pitch (a power of two).
std::uint64_t widest_access(std::uint64_t pitch) {
  for (std::uint64_t b : {16, 8, 4, 2})
    if (pitch % b == 0) return b;
  return 1;
}

std::vector<WarpInst> read_all(WarpStream& s, std::size_t batch, std::vector<std::array<std::uint64_t, 32>>* lanes) {
  std::vector<WarpInst> out;
  std::vector<WarpInst> buf(batch);
  for (;;) {
    const std::size_t n = s.read(buf.data(), batch);
    if (n == 0) break;
    REQUIRE(n <= batch);
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(check_inst(buf[i]) == "");  // every record is one the trace sources accept (FORMAT.md "Validity")
      out.push_back(buf[i]);
      if (lanes) {
        std::array<std::uint64_t, 32> a{};
        // Resolve lane addresses now: Deltas pointers are only valid until the next read().
        for (int l = 0; l < 32; ++l) a[l] = buf[i].addr_mode == AddrMode::None ? 0 : buf[i].lane_address(l);
        lanes->push_back(a);
      }
      out.back().deltas = nullptr;
    }
  }
  return out;
}

std::uint64_t flops_of(const WarpInst& i) {  // by hand: mma.sync is per warp, a warpgroup MMA is split over 4 warps
  const std::uint64_t full = 2ull * i.mma.m * i.mma.n * i.mma.k;
  if (i.op == Opcode::HMMA) return full;
  if (i.op == Opcode::HGMMA) return full / 4;
  return 0;
}

struct KernelCheck {
  std::uint64_t mma_flops = 0;
  std::uint64_t warps = 0;
  std::uint64_t insts = 0;
  std::map<Opcode, std::uint64_t> op_counts;
  std::uint64_t ldgsts_lanes = 0;  // active lanes of all LDGSTS
  std::set<std::pair<DType, std::uint16_t>> mma_kinds;  // (dtype, K) of every MMA
};

// Walks every warp of every CTA and checks the invariants the simulator relies on.
//  Every batch's A and B are read and its C written exactly once per byte, by the CTAs of grid.z = batch only;
//  copies are as wide as the rows of A and B allow (16 bytes at most), stores as wide as C's rows allow.
KernelCheck check_gemm_kernel(const GemmProblem& p, const GemmTiling& t, const std::string& arch) {
  auto trace = make_gemm_trace(p, t, arch, limits_for(arch));
  REQUIRE(trace->num_kernels() == 1);
  auto kernel = trace->open_kernel(0);
  const KernelInfo& info = kernel->info();
  REQUIRE(check_kernel_info(info) == "");
  REQUIRE(info.flops == 2 * p.batch * p.m * p.n * p.k);
  REQUIRE(info.grid.x == (p.n + t.tile_n - 1) / t.tile_n);
  REQUIRE(info.grid.y == (p.m + t.tile_m - 1) / t.tile_m);
  REQUIRE(info.grid.z == p.batch);
  REQUIRE(info.block.x == t.warps * 32);

  const std::uint64_t eb = input_bytes(p.dtype), c_eb = output_bytes(p.dtype);
  const std::uint64_t a_size = p.m * p.k * eb, b_size = p.n * p.k * eb, c_size = p.m * p.n * c_eb;
  const std::uint64_t a_end = kA + p.batch * a_size;
  const std::uint64_t b_base = align_mib(a_end), b_end = b_base + p.batch * b_size;
  const std::uint64_t c_base = align_mib(b_end), c_end = c_base + p.batch * c_size;
  const std::uint64_t copy_bytes = widest_access(p.k * eb), store_bytes = widest_access(p.n * c_eb);
  std::vector<std::uint8_t> a_read(a_end - kA), b_read(b_end - b_base), c_written(c_end - c_base);
  std::uint64_t wrong_batch = 0;  // accesses of a CTA to another batch's matrices

  KernelCheck r;
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    const std::uint64_t batch = cta / (std::uint64_t{info.grid.x} * info.grid.y);
    auto cs = kernel->open_cta(cta);
    REQUIRE(cs->num_warps() == t.warps);
    std::vector<std::uint64_t> bars;
    for (std::uint32_t w = 0; w < cs->num_warps(); ++w) {
      auto ws = cs->open_warp(w);
      std::vector<std::array<std::uint64_t, 32>> lanes;
      const auto insts = read_all(*ws, 97, &lanes);
      REQUIRE(!insts.empty());
      REQUIRE(insts.back().op == Opcode::EXIT);
      ++r.warps;
      r.insts += insts.size();
      std::uint64_t bar = 0, committed = 0, exits = 0;
      std::set<std::uint16_t> written;  // registers written so far in this warp
      for (std::size_t i = 0; i < insts.size(); ++i) {
        const WarpInst& in = insts[i];
        ++r.op_counts[in.op];
        r.mma_flops += flops_of(in);
        if (in.op == Opcode::HMMA || in.op == Opcode::HGMMA) r.mma_kinds.insert({in.dtype, in.mma.k});
        if (in.op == Opcode::LDGSTS)
          for (int l = 0; l < 32; ++l) r.ldgsts_lanes += in.active_mask >> l & 1;
        if (in.op == Opcode::EXIT) ++exits;
        if (in.op == Opcode::BAR) {
          CHECK(in.aux == 0);
          ++bar;
        }
        if (in.op == Opcode::LDGDEPBAR) ++committed;
        if (in.op == Opcode::DEPBAR) {
          CHECK(in.aux == t.stages - 2);
          CHECK(committed > in.aux);  // it waits for a group that was committed
        }
        if (in.op == Opcode::HMMA) {
          // fragments were loaded by an earlier LDSM of this warp; the accumulator chains
          CHECK(written.count(in.src[0]) == 1);
          CHECK(written.count(in.src[1]) == 1);
          CHECK(in.src[2] == in.dst[0]);
          CHECK(in.num_dst == 4);
        }
        if (in.op == Opcode::HGMMA) {
          CHECK(in.num_dst == 4);
          CHECK(in.num_src == 4);
          for (int k = 0; k < 4; ++k) CHECK(in.src[k] == in.dst[k]);
          CHECK(in.mma.m == 64);
          CHECK(in.mma.n == t.tile_n);
          CHECK(in.dtype == p.dtype);
        }
        if (in.op == Opcode::STG) CHECK(written.count(in.src[0]) == 1);  // stores data an LDS loaded
        if (in.op == Opcode::LDGSTS) CHECK(in.num_dst == 0);
        for (int k = 0; k < in.num_dst; ++k) written.insert(in.dst[k]);

        if (!in.is_memory()) continue;
        CHECK(in.active_mask != 0);
        const std::uint64_t bytes = in.access_bytes;
        for (int l = 0; l < 32; ++l) {
          if (!(in.active_mask >> l & 1)) continue;
          const std::uint64_t addr = lanes[i][l];
          if (in.space == MemSpace::Shared) {
            CHECK(addr + bytes <= info.shared_mem_bytes);
            CHECK(addr % bytes == 0);
            continue;
          }
          REQUIRE(in.space == MemSpace::Global);
          if (in.op == Opcode::LDGSTS) {
            REQUIRE(bytes == copy_bytes);
            if (addr >= kA && addr + bytes <= a_end) {
              wrong_batch += (addr - kA) / a_size != batch || (addr + bytes - 1 - kA) / a_size != batch;
              for (std::uint64_t b = 0; b < bytes; ++b) a_read[addr - kA + b] = 1;
            } else if (addr >= b_base && addr + bytes <= b_end) {
              wrong_batch += (addr - b_base) / b_size != batch || (addr + bytes - 1 - b_base) / b_size != batch;
              for (std::uint64_t b = 0; b < bytes; ++b) b_read[addr - b_base + b] = 1;
            } else {
              FAIL("LDGSTS outside A and B: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            }
          } else if (in.op == Opcode::STG) {
            REQUIRE(bytes == store_bytes);
            if (!(addr >= c_base && addr + bytes <= c_end))
              FAIL("STG outside C: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            wrong_batch += (addr - c_base) / c_size != batch;
            for (std::uint64_t b = 0; b < bytes; ++b) ++c_written[addr - c_base + b];
          } else {
            FAIL("unexpected global access by opcode " << static_cast<int>(in.op));
          }
        }
        if (in.op == Opcode::LDSM) {
          // ldmatrix phases of 8 lanes (one 8x8 matrix each): 8 distinct 16-byte bank groups
          for (int ph = 0; ph < 4; ++ph) {
            std::set<std::uint64_t> slots;
            for (int l = 0; l < 8; ++l) slots.insert(lanes[i][ph * 8 + l] / 16 % 8);
            CHECK(slots.size() == 8);
          }
        }
      }
      CHECK(exits == 1);
      bars.push_back(bar);
    }
    for (std::uint64_t b : bars) CHECK(b == bars.front());
  }
  std::uint64_t a_missing = 0, b_missing = 0, c_bad = 0;
  for (auto v : a_read) a_missing += v == 0;
  for (auto v : b_read) b_missing += v == 0;
  for (auto v : c_written) c_bad += v != 1;
  CHECK(a_missing == 0);
  CHECK(b_missing == 0);
  CHECK(c_bad == 0);
  CHECK(wrong_batch == 0);
  return r;
}

}  // namespace

TEST_CASE("gemm sm_80 256x256x128: complete, exact flops, valid addresses", "[synth][gemm]") {
  const GemmProblem p{256, 256, 128, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_80", p.dtype);
  KernelCheck r = check_gemm_kernel(p, t, "sm_80");
  CHECK(r.mma_flops == 2ull * 256 * 256 * 128);
  CHECK(r.warps == 4 * 4);  // 2x2 CTAs of 4 warps
  // k-tiles = 128/32 = 4, 2 k-steps of 4x8 HMMA each -> 256 HMMA per warp
  CHECK(r.op_counts[Opcode::HMMA] == 16 * 256);
  // every LDGSTS lane of every warp: each CTA copies (128+128)*128*2 B = 64 KiB in 16-byte chunks
  CHECK(r.op_counts[Opcode::LDGSTS] == 4 * (256 * 128 * 2 / 16 / 32));
}

TEST_CASE("gemm sm_80 ragged 200x136x96: masked edges, padded MMAs", "[synth][gemm]") {
  const GemmProblem p{200, 136, 96, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_80", p.dtype);
  KernelCheck r = check_gemm_kernel(p, t, "sm_80");
  CHECK(r.mma_flops >= 2ull * 200 * 136 * 96);
  // MMAs run over whole tiles: 2x2 CTAs of 128x128, 3 k-tiles of 32
  CHECK(r.mma_flops == 4ull * 2 * 128 * 128 * 96);
}

TEST_CASE("gemm f16 sm_80 with 8 warps (256x128 tile, 64x64 warp tiles)", "[synth][gemm]") {
  const GemmProblem p{512, 256, 64, DType::F16};
  GemmTiling t = default_gemm_tiling("sm_80", p.dtype);
  t.tile_m = 256;
  t.warps = 8;
  t.stages = 3;
  t.swizzle_group = 2;
  KernelCheck r = check_gemm_kernel(p, t, "sm_80");
  CHECK(r.mma_flops == 2ull * 512 * 256 * 64);
}

TEST_CASE("gemm sm_90 256x256x128: complete, exact flops, valid addresses", "[synth][gemm]") {
  const GemmProblem p{256, 256, 128, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
  KernelCheck r = check_gemm_kernel(p, t, "sm_90");
  CHECK(r.mma_flops == 2ull * 256 * 256 * 128);
  CHECK(r.warps == 2 * 12);
  // 2 CTAs x 8 consumer warps x 2 k-tiles x 4 HGMMA
  CHECK(r.op_counts[Opcode::HGMMA] == 2 * 8 * 2 * 4);
  CHECK(r.op_counts[Opcode::HMMA] == 0);
  CHECK(r.op_counts[Opcode::LDSM] == 0);
  // consumers: 16 STG.128 per thread = per warp
  CHECK(r.op_counts[Opcode::STG] == 2 * 8 * 16);
}

TEST_CASE("gemm sm_90 ragged 200x136x96 and fp8, sm_100", "[synth][gemm]") {
  {
    const GemmProblem p{200, 136, 96, DType::BF16};
    KernelCheck r = check_gemm_kernel(p, default_gemm_tiling("sm_90", p.dtype), "sm_90");
    CHECK(r.mma_flops >= 2ull * 200 * 136 * 96);
    CHECK(r.mma_flops == 2ull * 2 * 128 * 256 * 128);  // 1x2 CTAs, 2 k-tiles of 64 (the second half-masked)
  }
  {
    const GemmProblem p{256, 512, 256, DType::FP8};
    const GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
    CHECK(t.tile_k == 128);
    KernelCheck r = check_gemm_kernel(p, t, "sm_90");
    CHECK(r.mma_flops == 2ull * 256 * 512 * 256);
  }
  {
    const GemmProblem p{128, 256, 64, DType::F16};
    KernelCheck r = check_gemm_kernel(p, default_gemm_tiling("sm_100", p.dtype), "sm_100");
    CHECK(r.mma_flops == 2ull * 128 * 256 * 64);
  }
}

TEST_CASE("gemm sm_90 with one consumer warpgroup and a small tile", "[synth][gemm]") {
  const GemmProblem p{192, 200, 64, DType::BF16};
  GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
  t.tile_m = 64;
  t.tile_n = 128;
  t.warps = 8;
  t.stages = 3;
  t.swizzle_group = 2;
  REQUIRE(validate_gemm(p, t, kH100Limits).empty());
  KernelCheck r = check_gemm_kernel(p, t, "sm_90");
  CHECK(r.mma_flops == 3ull * 2 * 2 * 64 * 128 * 64);  // 3x2 CTAs of 64x128, 1 k-tile
}

TEST_CASE("gemm odd shapes: tiny, one partial k-tile, more k-tiles than stages", "[synth][gemm]") {
  struct Shape {
    std::uint64_t m, n, k;
  };
  for (const Shape s : {Shape{1, 8, 16}, Shape{17, 24, 48}, Shape{130, 264, 80}, Shape{64, 64, 320}}) {
    for (const char* arch : {"sm_80", "sm_90"}) {
      INFO(arch << " " << s.m << "x" << s.n << "x" << s.k);
      const GemmProblem p{s.m, s.n, s.k, DType::BF16};
      const GemmTiling t = default_gemm_tiling(arch, p.dtype);
      REQUIRE(validate_gemm(p, t, limits_for(arch)).empty());
      KernelCheck r = check_gemm_kernel(p, t, arch);
      const std::uint64_t k_tiles = (s.k + t.tile_k - 1) / t.tile_k;
      const std::uint64_t ctas = ((s.m + t.tile_m - 1) / t.tile_m) * ((s.n + t.tile_n - 1) / t.tile_n);
      CHECK(r.mma_flops == ctas * 2 * t.tile_m * t.tile_n * t.tile_k * k_tiles);
    }
  }
}

TEST_CASE("gemm streams are deterministic and independent of the read batch size", "[synth][gemm]") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GemmProblem p{200, 136, 96, DType::BF16};
    const GemmTiling t = default_gemm_tiling(arch, p.dtype);
    auto trace1 = make_gemm_trace(p, t, arch, limits_for(arch));
    auto trace2 = make_gemm_trace(p, t, arch, limits_for(arch));
    auto k1 = trace1->open_kernel(0);
    auto k2 = trace2->open_kernel(0);
    for (std::uint64_t cta = 0; cta < k1->info().grid.count(); ++cta) {
      auto c1 = k1->open_cta(cta);
      auto c2 = k2->open_cta(cta);
      for (std::uint32_t w = 0; w < c1->num_warps(); ++w) {
        std::vector<std::array<std::uint64_t, 32>> l1, l2;
        auto s1 = c1->open_warp(w);
        auto s2 = c2->open_warp(w);
        const auto a = read_all(*s1, 1, &l1);
        const auto b = read_all(*s2, 256, &l2);
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          INFO(arch << " cta " << cta << " warp " << w << " inst " << i);
          CHECK(a[i].pc == b[i].pc);
          CHECK(a[i].op == b[i].op);
          CHECK(a[i].active_mask == b[i].active_mask);
          CHECK(a[i].dst == b[i].dst);
          CHECK(a[i].src == b[i].src);
          CHECK(a[i].aux == b[i].aux);
          CHECK(a[i].access_bytes == b[i].access_bytes);
          CHECK(l1[i] == l2[i]);
        }
      }
    }
  }
}

TEST_CASE("gemm default tilings and 4096^3 kernel shape", "[synth][gemm]") {
  const GemmProblem p{4096, 4096, 4096, DType::BF16};
  {
    const GemmTiling t = default_gemm_tiling("sm_80", DType::BF16);
    CHECK(t.tile_m == 128);
    CHECK(t.tile_n == 128);
    CHECK(t.tile_k == 32);
    CHECK(t.stages == 4);
    CHECK(t.warps == 4);
    CHECK_FALSE(t.warpgroup_mma);
    auto k = make_gemm_trace(p, t, "sm_80", kA100Limits)->open_kernel(0);
    const KernelInfo& i = k->info();
    CHECK(i.name == "warpsim_gemm_bf16_tn_128x128x32_s4_sm80 (4096x4096x4096)");
    CHECK(i.grid == Dim3{32, 32, 1});
    CHECK(i.block == Dim3{128, 1, 1});
    CHECK(i.shared_mem_bytes == 4 * (128 + 128) * 32 * 2);  // 64 KiB: two CTAs per A100 SM
    CHECK(i.registers_per_thread == 232);                   // 128 acc + 64 fragment + 40
    CHECK(2 * i.registers_per_thread * 128 <= 65536);
    CHECK(i.target_arch == "sm_80");
    CHECK(i.flops == 2ull * 4096 * 4096 * 4096);
  }
  {
    const GemmTiling t = default_gemm_tiling("sm_90", DType::BF16);
    CHECK(t.tile_m == 128);
    CHECK(t.tile_n == 256);
    CHECK(t.tile_k == 64);
    CHECK(t.stages == 4);
    CHECK(t.warps == 12);
    CHECK(t.warpgroup_mma);
    auto k = make_gemm_trace(p, t, "sm_90", kH100Limits)->open_kernel(0);
    const KernelInfo& i = k->info();
    CHECK(i.name == "warpsim_gemm_bf16_tn_128x256x64_s4_sm90 (4096x4096x4096)");
    CHECK(i.grid == Dim3{16, 32, 1});
    CHECK(i.block == Dim3{384, 1, 1});
    CHECK(i.shared_mem_bytes == 4 * (128 + 256) * 64 * 2);  // 192 KiB
    CHECK(i.registers_per_thread == 168);                   // (128*40 + 256*232) / 384, rounded up to 8
    CHECK(i.registers_per_thread * 384 <= 65536);
  }
  {
    auto k =
        make_gemm_trace(GemmProblem{4096, 4096, 4096, DType::FP8}, default_gemm_tiling("sm_90", DType::FP8), "sm_90",
                        kH100Limits)
            ->open_kernel(0);
    CHECK(k->info().name == "warpsim_gemm_fp8_tn_128x256x128_s4_sm90 (4096x4096x4096)");
    CHECK(k->info().shared_mem_bytes == 4 * (128 + 256) * 128);
  }
  CHECK_THROWS_AS(default_gemm_tiling("sm_70", DType::BF16), InputError);
}

TEST_CASE("gemm 4096^3 per-warp instruction mix matches the documented structure", "[synth][gemm]") {
  const GemmProblem p{4096, 4096, 4096, DType::BF16};
  {
    auto k = make_gemm_trace(p, default_gemm_tiling("sm_80", p.dtype), "sm_80", kA100Limits)->open_kernel(0);
    auto s = k->open_cta(37)->open_warp(3);
    const auto insts = read_all(*s, 256, nullptr);
    std::map<Opcode, std::uint64_t> n;
    std::set<std::uint32_t> hmma_pcs;
    for (const auto& i : insts) {
      ++n[i.op];
      if (i.op == Opcode::HMMA) hmma_pcs.insert(i.pc);
    }
    // 128 k-tiles x 2 k-steps x 32 HMMA; LDSM: 8 per k-step, loaded one step ahead (none after the last)
    CHECK(n[Opcode::HMMA] == 8192);
    CHECK(n[Opcode::LDSM] == 2048);
    CHECK(n[Opcode::LDGSTS] == 128 * 8);
    CHECK(n[Opcode::LDGDEPBAR] == 3 + 128);
    CHECK(n[Opcode::DEPBAR] == 1 + 128);
    CHECK(n[Opcode::BAR] == 1 + 128);
    CHECK(n[Opcode::STS] == 64);
    CHECK(n[Opcode::LDS] == 16);
    CHECK(n[Opcode::STG] == 16);
    CHECK(n[Opcode::FMUL] == 192);
    CHECK(insts.size() == 12863);
    CHECK(hmma_pcs.size() == 64);  // the loop body has one address per HMMA, reused every k-tile
  }
  {
    auto k = make_gemm_trace(p, default_gemm_tiling("sm_90", p.dtype), "sm_90", kH100Limits)->open_kernel(0);
    auto cta = k->open_cta(100);
    std::uint64_t total = 0;
    for (std::uint32_t w = 0; w < 12; ++w) {
      auto s = cta->open_warp(w);
      const auto insts = read_all(*s, 256, nullptr);
      std::map<Opcode, std::uint64_t> n;
      for (const auto& i : insts) ++n[i.op];
      total += insts.size();
      // Each warp's one setmaxnreg after the role dispatch: the producers' dec to 40, the consumers' inc.
      REQUIRE(n[Opcode::USETMAXREG] == 1);
      for (const auto& i : insts)
        if (i.op == Opcode::USETMAXREG) CHECK((w < 4 ? i.group == 0 && i.aux == 40 : i.group == 1 && i.aux > 40));
      if (w < 4) {  // producer: 64 k-tiles x 24 LDGSTS
        CHECK(n[Opcode::LDGSTS] == 64 * 24);
        CHECK(n[Opcode::HGMMA] == 0);
        CHECK(insts.size() == 2141);
      } else {
        CHECK(n[Opcode::HGMMA] == 64 * 4);
        CHECK(n[Opcode::STG] == 16);
        CHECK(n[Opcode::LDGSTS] == 0);
        CHECK(insts.size() == 949);
      }
      CHECK(n[Opcode::BAR] == 64 + 1);
    }
    CHECK(total == 4 * 2141 + 8 * 949);
  }
}

TEST_CASE("gemm validation", "[synth][gemm]") {
  const GemmProblem bf16{1024, 1024, 1024, DType::BF16};
  const GemmProblem fp8{1024, 1024, 1024, DType::FP8};
  const GemmTiling a = default_gemm_tiling("sm_80", DType::BF16);
  const GemmTiling h = default_gemm_tiling("sm_90", DType::BF16);
  const GemmLimits a100 = kA100Limits, h100 = kH100Limits;
  auto with_smem = [](GemmLimits l, std::uint64_t bytes) {
    l.shared_mem_per_cta = bytes;
    return l;
  };
  CHECK(validate_gemm(bf16, a, a100).empty());
  CHECK(validate_gemm(bf16, h, h100).empty());
  CHECK(validate_gemm(fp8, default_gemm_tiling("sm_90", DType::FP8), h100).empty());

  // fp8 has no mma.sync path on sm_80
  const std::string fp8_msg = validate_gemm(fp8, default_gemm_tiling("sm_80", DType::FP8), a100);
  CHECK(fp8_msg.find("fp8") != std::string::npos);
  CHECK_THROWS_AS(make_gemm_trace(fp8, default_gemm_tiling("sm_80", DType::FP8), "sm_80", a100), InputError);

  // shared memory: 4 x 384 x 64 x 2 = 196608 B
  CHECK(validate_gemm(bf16, h, with_smem(h100, 196608)).empty());
  CHECK(validate_gemm(bf16, h, with_smem(h100, 196607)).find("shared memory") != std::string::npos);
  GemmTiling deep = h;
  deep.stages = 5;  // 245760 B > 227 KiB
  CHECK_FALSE(validate_gemm(bf16, deep, h100).empty());
  CHECK_THROWS_AS(make_gemm_trace(bf16, deep, "sm_90", h100), InputError);

  // dimensions
  // any m, n, k (predicated tails, narrower accesses where rows are not 16-byte aligned)
  CHECK(validate_gemm(GemmProblem{1024, 1024, 1000, DType::BF16}, a, a100).empty());
  CHECK(validate_gemm(GemmProblem{1024, 1020, 1024, DType::BF16}, a, a100).empty());
  CHECK(validate_gemm(GemmProblem{1000, 1024, 1024, DType::BF16}, a, a100).empty());
  CHECK(validate_gemm(GemmProblem{1024, 30522, 1001, DType::BF16}, a, a100).empty());
  CHECK(validate_gemm(GemmProblem{1024, 1024, 1041, DType::FP8}, h, h100).empty());
  CHECK_FALSE(validate_gemm(GemmProblem{0, 1024, 1024, DType::BF16}, a, a100).empty());
  CHECK(validate_gemm(GemmProblem{64, 64, 64, DType::F32}, a, a100).find("not f32") != std::string::npos);
  // fp64 runs only in its own tiling (8-byte accumulators, tests/unit/test_gemm_fp64.cpp), not in bf16's
  CHECK(validate_gemm(GemmProblem{64, 64, 64, DType::F64}, a, a100).find("8-byte accumulators") != std::string::npos);
  CHECK(validate_gemm(GemmProblem{64, 64, 64, DType::BF16, 0}, a, a100).find("batch") != std::string::npos);
  GemmTiling split = a;
  split.split_k = 2;
  CHECK(validate_gemm(GemmProblem{64, 64, 4096, DType::BF16, 32768}, split, a100).find("grid.z") !=
        std::string::npos);

  // structure
  GemmTiling bad = h;
  bad.warps = 8;  // 128 rows need 2 consumer warpgroups + the producer
  CHECK_FALSE(validate_gemm(bf16, bad, h100).empty());
  bad = a;
  bad.tile_k = 16;  // one k-step: no room for the fragment double buffer
  CHECK_FALSE(validate_gemm(bf16, bad, a100).empty());
  bad = a;
  bad.stages = 1;
  CHECK_FALSE(validate_gemm(bf16, bad, a100).empty());
  bad = a;
  bad.tile_m = 256;
  bad.tile_n = 256;  // 4 warps of 128x128: 512 accumulators per thread
  CHECK(validate_gemm(bf16, bad, with_smem(h100, 1u << 30)).find("registers") != std::string::npos);

  // registers come from the GPU too: the sm_80 default needs 232 per thread (x 128 threads = 29696 per CTA),
  // the sm_90 default 168 per thread (x 384 = 64512 per CTA)
  GemmLimits few = a100;
  few.max_registers_per_thread = 231;
  CHECK(validate_gemm(bf16, a, few).find("232 registers per thread, more than the GPU's 231") != std::string::npos);
  CHECK_THROWS_WITH(make_gemm_trace(bf16, a, "sm_80", few), Catch::Contains("232 registers per thread"));
  few.max_registers_per_thread = 232;
  CHECK(validate_gemm(bf16, a, few).empty());
  few = h100;
  few.max_registers_per_thread = 160;
  CHECK(validate_gemm(bf16, h, few).find("168 registers per thread at launch") != std::string::npos);
  few = h100;
  few.registers_per_sm = 64511;
  CHECK(validate_gemm(bf16, h, few).find("64512 registers, more than an SM's 64511") != std::string::npos);
  few.registers_per_sm = 64512;
  CHECK(validate_gemm(bf16, h, few).empty());

  // arch / structure mismatch
  CHECK_THROWS_AS(make_gemm_trace(bf16, h, "sm_80", a100), InputError);
  CHECK_THROWS_AS(make_gemm_trace(bf16, a, "sm_90", h100), InputError);
  CHECK_THROWS_WITH(make_gemm_trace(bf16, a, "sm_75", a100), Catch::Contains("unknown architecture 'sm_75'"));
}

TEST_CASE("gemm CTA rasterisation groups M-tiles around each N-tile", "[synth][gemm]") {
  // 5 M-tiles x 3 N-tiles, groups of 2 M-tiles (the last group has 1)
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> expect = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2},
                                                                       {1, 2}, {2, 0}, {3, 0}, {2, 1}, {3, 1},
                                                                       {2, 2}, {3, 2}, {4, 0}, {4, 1}, {4, 2}};
  for (std::uint64_t id = 0; id < expect.size(); ++id) {
    const GemmTileIndex t = gemm_cta_tile(id, 5, 3, 2);
    CHECK(t.m == expect[id].first);
    CHECK(t.n == expect[id].second);
  }
  for (std::uint64_t id = 0; id < 15; ++id) {  // group 1: row-major, N fastest
    const GemmTileIndex t = gemm_cta_tile(id, 5, 3, 1);
    CHECK(t.m == id / 3);
    CHECK(t.n == id % 3);
  }
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;  // bijection with a group larger than the grid
  for (std::uint64_t id = 0; id < 7 * 9; ++id) {
    const GemmTileIndex t = gemm_cta_tile(id, 7, 9, 8);
    seen.insert({t.m, t.n});
  }
  CHECK(seen.size() == 63);
}

// ---- split-K and the shape-aware default tiling ------------------------------------------------------------

namespace {

// H100 and A100 with their SM counts (sm.count: 132 and 108), as make_gemm_for_gpu
// (traces/synth/gemm_synthesizer.cpp) fills them.
const GemmLimits kH100Sms{227 * 1024, 65536, 255, 132};
const GemmLimits kA100Sms{163 * 1024, 65536, 255, 108};

struct SplitCheck {
  std::uint64_t mma_flops = 0;
  std::map<Opcode, std::uint64_t> op_counts;
};

// Walks every warp of a (possibly split-K) kernel and checks, independently of the synthesizer's code:
//  * grid = ceil(n/tile_n) x ceil(m/tile_m) x split_k; the name carries "_splitk<N>" exactly when split_k > 1;
//  * CTA z (= linear id / tiles) copies only k-tiles [z*k_tiles/split_k, (z+1)*k_tiles/split_k) of A and B, so
//    the K ranges of the splits are disjoint; every 16-byte chunk of A is copied exactly tiles_n times and every
//    chunk of B exactly tiles_m times (once per CTA of its split that needs it), nothing outside A and B;
//  * split_k > 1, atomic: no STG; every fp32 element of C (workspace of m x n x 4 B after B) receives exactly one
//    RED (4 bytes per lane) from each split, none outside C; parallel: no RED; split z stores (STG of fp32) each
//    element of its slice z (m x n x 4 B, slices one after another from C's place) exactly once;
//    split_k == 1: bf16 STG covering C once;
//  * every warp of a CTA executes the same number of BARs; shared accesses stay within the allocation.
// With split-K and a 16-bit C: parallel = GEMM, reduce; atomic = zero, GEMM, convert.
std::unique_ptr<KernelSource> gemm_kernel_of(TraceSource& trace, const GemmTiling& t) {
  if (t.split_k == 1) {
    REQUIRE(trace.num_kernels() == 1);
    return trace.open_kernel(0);
  }
  const bool parallel = t.split_k_reduction == GemmTiling::SplitKReduction::Parallel;
  REQUIRE(trace.num_kernels() == (parallel ? 2u : 3u));
  return trace.open_kernel(parallel ? 0 : 1);
}

SplitCheck check_split_kernel(const GemmProblem& p, const GemmTiling& t, const std::string& arch,
                              const GemmLimits& limits) {
  auto trace = make_gemm_trace(p, t, arch, limits);
  auto kernel = gemm_kernel_of(*trace, t);
  const KernelInfo& info = kernel->info();
  REQUIRE(check_kernel_info(info) == "");
  REQUIRE(info.flops == 2 * p.m * p.n * p.k);
  const std::uint64_t tiles_m = (p.m + t.tile_m - 1) / t.tile_m, tiles_n = (p.n + t.tile_n - 1) / t.tile_n;
  const std::uint64_t k_tiles = (p.k + t.tile_k - 1) / t.tile_k;
  REQUIRE(info.grid == Dim3{static_cast<std::uint32_t>(tiles_n), static_cast<std::uint32_t>(tiles_m), t.split_k});
  REQUIRE(info.block.x == t.warps * 32);
  const bool split = t.split_k > 1;
  const bool parallel = split && t.split_k_reduction == GemmTiling::SplitKReduction::Parallel;
  CHECK((info.name.find("_splitk" + std::to_string(t.split_k) + " (") != std::string::npos) == split);

  const std::uint64_t eb = p.dtype == DType::FP8 ? 1 : 2;
  const std::uint64_t a_end = kA + p.m * p.k * eb;
  const std::uint64_t b_base = align_mib(a_end), b_end = b_base + p.n * p.k * eb;
  const std::uint64_t c_eb = split ? 4 : 2;
  const std::uint64_t slice_bytes = p.m * p.n * c_eb;
  const std::uint64_t c_base = align_mib(b_end), c_end = c_base + (parallel ? t.split_k : 1) * slice_bytes;
  std::vector<std::uint16_t> a_reads((a_end - kA) / 16), b_reads((b_end - b_base) / 16);
  std::vector<std::uint16_t> c_count(p.m * p.n);       // RED lanes (split) or STG bytes / 2 per element
  std::vector<std::int32_t> c_last_z(p.m * p.n, -1);   // split of the last RED: each split adds once
  auto split_of_k = [&](std::uint64_t kel) {  // the split whose k-tile range holds element column kel
    const std::uint64_t kt = kel / t.tile_k;
    std::uint64_t z = 0;
    while ((z + 1) * k_tiles / t.split_k <= kt) ++z;
    return z;
  };

  SplitCheck r;
  std::uint64_t wrong_split = 0;       // A/B chunks copied by a CTA of another split than their k-tile's
  std::uint64_t twice_from_split = 0;  // C elements reduced into twice by one split
  std::uint64_t bad_shared = 0;        // shared accesses outside the allocation or misaligned
  const std::uint64_t tiles = tiles_m * tiles_n;
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    const std::uint64_t z = cta / tiles;
    auto cs = kernel->open_cta(cta);
    REQUIRE(cs->num_warps() == t.warps);
    std::vector<std::uint64_t> bars;
    for (std::uint32_t w = 0; w < cs->num_warps(); ++w) {
      auto ws = cs->open_warp(w);
      std::vector<std::array<std::uint64_t, 32>> lanes;
      const auto insts = read_all(*ws, 61, &lanes);
      REQUIRE(!insts.empty());
      REQUIRE(insts.back().op == Opcode::EXIT);
      std::uint64_t bar = 0;
      std::set<std::uint16_t> written;
      for (std::size_t i = 0; i < insts.size(); ++i) {
        const WarpInst& in = insts[i];
        ++r.op_counts[in.op];
        r.mma_flops += flops_of(in);
        if (in.op == Opcode::BAR) ++bar;
        if (in.op == Opcode::RED || in.op == Opcode::STG) CHECK(written.count(in.src[0]) == 1);
        if (in.op == Opcode::RED) CHECK(in.num_dst == 0);
        for (int k = 0; k < in.num_dst; ++k) written.insert(in.dst[k]);
        if (!in.is_memory()) continue;
        CHECK(in.active_mask != 0);
        const std::uint64_t bytes = in.access_bytes;
        if (in.space == MemSpace::Global) {
          const bool expected = in.op == Opcode::LDGSTS ? bytes == 16
                                : parallel              ? in.op == Opcode::STG
                                : split                 ? in.op == Opcode::RED && bytes == 4
                                                        : in.op == Opcode::STG;
          if (!expected) FAIL("unexpected global access by opcode " << static_cast<int>(in.op) << ", " << bytes << " B");
        } else {
          REQUIRE(in.space == MemSpace::Shared);
        }
        for (int l = 0; l < 32; ++l) {
          if (!(in.active_mask >> l & 1)) continue;
          const std::uint64_t addr = lanes[i][l];
          if (in.space == MemSpace::Shared) {
            bad_shared += addr + bytes > info.shared_mem_bytes || addr % bytes != 0;
          } else if (in.op == Opcode::LDGSTS) {
            if (addr >= kA && addr + bytes <= a_end && addr % 16 == 0) {
              const std::uint64_t off = addr - kA;
              wrong_split += split_of_k(off % (p.k * eb) / eb) != z;
              ++a_reads[off / 16];
            } else if (addr >= b_base && addr + bytes <= b_end && addr % 16 == 0) {
              const std::uint64_t off = addr - b_base;
              wrong_split += split_of_k(off % (p.k * eb) / eb) != z;
              ++b_reads[off / 16];
            } else {
              FAIL("LDGSTS outside A and B: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            }
          } else if (in.op == Opcode::RED) {
            if (!(addr >= c_base && addr + bytes <= c_end && addr % 4 == 0))
              FAIL("RED outside C: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            const std::uint64_t e = (addr - c_base) / 4;
            twice_from_split += c_last_z[e] >= static_cast<std::int32_t>(z);
            c_last_z[e] = static_cast<std::int32_t>(z);
            ++c_count[e];
          } else if (parallel) {  // STG of fp32 partial sums into slice z
            if (!(addr >= c_base && addr + bytes <= c_end && addr % 4 == 0))
              FAIL("STG outside the workspace: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            CHECK((addr - c_base) / slice_bytes == z);
            for (std::uint64_t b = 0; b < bytes; b += 4) {
              const std::uint64_t e = (addr - c_base) % slice_bytes / 4 + b / 4;
              twice_from_split += c_last_z[e] >= static_cast<std::int32_t>(z);
              c_last_z[e] = static_cast<std::int32_t>(z);
              ++c_count[e];
            }
          } else {  // STG of bf16 C (split_k == 1)
            if (!(addr >= c_base && addr + bytes <= c_end))
              FAIL("STG outside C: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            for (std::uint64_t b = 0; b < bytes; b += 2) ++c_count[(addr - c_base + b) / 2];
          }
        }
      }
      bars.push_back(bar);
    }
    for (std::uint64_t b : bars) CHECK(b == bars.front());
  }
  std::uint64_t a_bad = 0, b_bad = 0, c_bad = 0;
  for (auto v : a_reads) a_bad += v != tiles_n;
  for (auto v : b_reads) b_bad += v != tiles_m;
  for (auto v : c_count) c_bad += v != t.split_k;
  CHECK(bad_shared == 0);
  CHECK(wrong_split == 0);
  CHECK(twice_from_split == 0);
  CHECK(a_bad == 0);
  CHECK(b_bad == 0);
  CHECK(c_bad == 0);
  return r;
}

}  // namespace

TEST_CASE("gemm shape-aware default: large shapes keep exactly the 2-argument tilings", "[synth][gemm][splitk]") {
  struct Case {
    const char* arch;
    GemmLimits limits;
    std::uint64_t m, n, k;
  };
  // 2048^3 on H100: 8 x 16 = 128 tiles of 128x256 on 132 SMs. Split 2 would be 256 CTAs in 2 waves of 16
  // k-tiles (+4): 40 > 1 wave of 32 (+4) = 36, so no split.
  for (const Case& c : {Case{"sm_90", kH100Sms, 4096, 4096, 4096}, Case{"sm_90", kH100Sms, 2048, 2048, 2048},
                        Case{"sm_80", kA100Sms, 4096, 4096, 4096}, Case{"sm_80", kA100Sms, 2048, 2048, 2048},
                        Case{"sm_80", kA100Sms, 8192, 1024, 1024}, Case{"sm_90", kH100Sms, 4096, 4096, 2048}}) {
    INFO(c.arch << " " << c.m << "x" << c.n << "x" << c.k);
    const GemmProblem p{c.m, c.n, c.k, DType::BF16};
    const GemmTiling old = default_gemm_tiling(c.arch, p.dtype);
    const GemmTiling t = default_gemm_tiling(c.arch, p.dtype, p, c.limits);
    CHECK(t.tile_m == old.tile_m);
    CHECK(t.tile_n == old.tile_n);
    CHECK(t.tile_k == old.tile_k);
    CHECK(t.stages == old.stages);
    CHECK(t.warps == old.warps);
    CHECK(t.warpgroup_mma == old.warpgroup_mma);
    CHECK(t.swizzle_group == old.swizzle_group);
    CHECK(t.split_k == 1);
    CHECK(old.split_k == 1);
    const KernelInfo a = make_gemm_trace(p, old, c.arch, c.limits)->open_kernel(0)->info();
    const KernelInfo b = make_gemm_trace(p, t, c.arch, c.limits)->open_kernel(0)->info();
    CHECK(a.name == b.name);
    CHECK(a.grid == b.grid);
    CHECK(b.grid.z == 1);
  }
}

TEST_CASE("gemm shape-aware default: narrow tiles for small M, split-K only where SMs would idle",
          "[synth][gemm][splitk]") {
  // 64 tokens x 65536 outputs: 256 tiles of 64x256 cover the 132 SMs: narrow tile, no split.
  const GemmProblem wide{64, 65536, 2048, DType::BF16};
  GemmTiling t = default_gemm_tiling("sm_90", wide.dtype, wide, kH100Sms);
  CHECK(t.tile_m == 64);
  CHECK(t.tile_n == 256);
  CHECK(t.warps == 8);
  CHECK(t.split_k == 1);
  // Unknown SM count: narrow tile, never split.
  const GemmProblem decode{64, 8192, 8192, DType::BF16};
  t = default_gemm_tiling("sm_90", decode.dtype, decode, kH100Limits);
  CHECK(t.tile_m == 64);
  CHECK(t.split_k == 1);
  // M = 65 keeps the 128-row tile.
  t = default_gemm_tiling("sm_90", DType::BF16, GemmProblem{65, 8192, 8192, DType::BF16}, kH100Sms);
  CHECK(t.tile_m == 128);
  CHECK(t.warps == 12);
  // K too short for splits of >= 4 (= stages) k-tiles: 256^3 on H100 has 4 k-tiles.
  t = default_gemm_tiling("sm_90", DType::BF16, GemmProblem{256, 256, 256, DType::BF16}, kH100Sms);
  CHECK(t.split_k == 1);
  // 512^3 on H100: 4x2 = 8 tiles, 8 k-tiles. Filling 132 SMs would need 17 splits; the largest split with 4
  // k-tiles each is 2: 1 wave x (4 + 4) = 8 < 1 x (8 + 4) = 12.
  t = default_gemm_tiling("sm_90", DType::BF16, GemmProblem{512, 512, 512, DType::BF16}, kH100Sms);
  CHECK(t.split_k == 2);
  // fp8 decode on H100: 64x256x128 tiles, 32 tiles, 64 k-tiles: fills with s >= 5; waves x (ceil(64/s) + 4):
  // s=5: 2x17=34, 6: 2x15=30, 7: 2x14=28, 8: 2x12=24, 9: 3x12, 12: 3x10=30, 16: 4x8=32 -> 8.
  t = default_gemm_tiling("sm_90", DType::FP8, GemmProblem{64, 8192, 8192, DType::FP8}, kH100Sms);
  CHECK(t.tile_m == 64);
  CHECK(t.tile_k == 128);
  CHECK(t.split_k == 8);
}

TEST_CASE("gemm split-K with the GPU's rates: the workspace traffic of DRAM-bound decode shapes counts",
          "[synth][gemm][splitk]") {
  // A100 (a100_sxm.yaml): 2048 fp16 FLOP/clk/SM, 1.41 GHz, 2.039 TB/s. 64x12288x12288 fp16: 96 tiles of 64x128x32,
  // 384 k-tiles, 3 CTAs per SM = 324 slots. Tensor work alone (the rates unknown): s=10, 3 waves x (39+4) = 129
  // k-tile steps against s=3's 1 x (128+4) = 132.
  const GemmProblem p{64, 12288, 12288, DType::F16};
  CHECK(default_gemm_tiling("sm_80", p.dtype, p, kA100Sms).split_k == 10);
  // With the rates, by hand: a k-tile step is 64*128*32*2 / 2048 / 1.41e9 = 0.18 us, so the 196 steps of s=2 take
  // 36 us while its DRAM traffic is (64+12288)*12288*2 B = 303.6 MB of A and B + 2*64*12288*4 B = 6.3 MB of
  // workspace = 309.9 MB, streamed by 192 CTAs on 108 SMs: the SMs with 2 CTAs (mean 1.78) take x1.125, so
  // 309.9 x 1.125 / 2.039 TB/s = 171.0 us, plus its reduction (6.3 MB + 1.6 MB of C) 3.9 us: 174.9 us.
  // s=3: 313.0 MB x 1.125 -> 172.7 + 5.4 = 178.1; s=9 (864 CTAs, 8 per SM): 331.9 MB -> 162.8 + 14.7 = 177.5;
  // s=10: 335.1 MB x 1.0125 -> 166.4 + 16.2 = 182.6. No split: DRAM-bound (305.2 MB x 108/96 -> 168.4 us against
  // 70.5 us of tensor work) on 96 of 108 SMs, so no candidate (below).
  GemmLimits rates = kA100Sms;
  rates.tensor_flops_per_cycle = 2048;
  rates.sm_clock_hz = 1.41e9;
  rates.dram_bytes_per_second = 2.039e12;
  CHECK(default_gemm_tiling("sm_80", p.dtype, p, rates).split_k == 2);
  // A tensor-bound shape keeps the tensor estimate's choice: 512^3 (16 tiles, 16 k-tiles; every split's traffic
  // is under 10 MB, microseconds) splits 4 ways either way.
  const GemmProblem cube{512, 512, 512, DType::F16};
  CHECK(default_gemm_tiling("sm_80", cube.dtype, cube, kA100Sms).split_k ==
        default_gemm_tiling("sm_80", cube.dtype, cube, rates).split_k);
  // Twice the DRAM bandwidth: s=2 87.4 us, s=9 81.4 + 7.3 = 88.7 us (its 25.6 us of tensor work still hidden).
  rates.dram_bytes_per_second *= 2;
  CHECK(default_gemm_tiling("sm_80", p.dtype, p, rates).split_k == 2);
  // A problem that fits in L2 (an L2 as large as the A100's 40 MB holding 1.2 GB) pays no workspace traffic, and
  // the balanced split wins: s=9 puts exactly 8 CTAs on every SM.
  rates.l2_bytes = 1.2e9;
  CHECK(default_gemm_tiling("sm_80", p.dtype, p, rates).split_k == 9);
}

TEST_CASE("gemm split-K decode 64x8192x8192 bf16 on sm_90 (H100, 132 SMs)", "[synth][gemm][splitk]") {
  const GemmProblem p{64, 8192, 8192, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_90", p.dtype, p, kH100Sms);
  // By hand (README, "Tiling heuristic"): 64x256x64 tiles, one consumer warpgroup (8 warps), 160 KiB of shared
  // memory: 1 CTA per SM. 1 x 32 = 32 tiles < 132 SMs; 128 k-tiles. Splits that fill every SM: s >= 5, with at
  // least 4 k-tiles each: s <= 32. Cost waves x (ceil(128/s) + 4): s=5: 2x30=60, 6: 2x26, 7: 2x23, 8: 2x20=40,
  // 9-11: 3 waves (>= 3x16), 12: 3x15=45, 16: 4x12=48, ... 32: 8x8=64; no split: 1x132. -> split_k = 8.
  CHECK(t.tile_m == 64);
  CHECK(t.tile_n == 256);
  CHECK(t.tile_k == 64);
  CHECK(t.warps == 8);
  CHECK(t.warpgroup_mma);
  CHECK(t.split_k == 8);
  REQUIRE(validate_gemm(p, t, kH100Sms).empty());
  auto k = gemm_kernel_of(*make_gemm_trace(p, t, "sm_90", kH100Sms), t);
  const KernelInfo& info = k->info();
  CHECK(info.name == "warpsim_gemm_bf16_tn_64x256x64_s4_sm90_splitk8 (64x8192x8192)");
  CHECK(info.grid == Dim3{32, 1, 8});
  CHECK(info.grid.count() >= 132);
  CHECK(info.block == Dim3{256, 1, 1});
  CHECK(info.shared_mem_bytes == 4 * (64 + 256) * 64 * 2);
  CHECK(info.registers_per_thread == 136);  // (128*40 + 128*232) / 256
  CHECK(info.flops == 2ull * 64 * 8192 * 8192);

  SplitCheck r = check_split_kernel(p, t, "sm_90", kH100Sms);
  // No padding: 64 rows, n and k multiples of the tile. 256 CTAs x 4 consumer warps x 16 k-tiles x 4 HGMMA.
  CHECK(r.mma_flops == 2ull * 64 * 8192 * 8192);
  CHECK(r.op_counts[Opcode::HGMMA] == 256 * 4 * 16 * 4);
  CHECK(r.op_counts[Opcode::STG] == 0);
  // Each consumer warp reduces 16 rows x 256 fp32 = 128 RED of 32 lanes (one 128-byte row each), read back by
  // as many LDS.32 after 64 STS.64 (2 per n8 block).
  CHECK(r.op_counts[Opcode::RED] == 256 * 4 * 128);
  CHECK(r.op_counts[Opcode::LDS] == 256 * 4 * 128);
  CHECK(r.op_counts[Opcode::STS] == 256 * 4 * 64);
  // Producers: 16 k-tiles x 20 LDGSTS (4 A + 16 B) per thread.
  CHECK(r.op_counts[Opcode::LDGSTS] == 256 * 4 * 16 * 20);
  CHECK(r.op_counts[Opcode::BAR] == 256 * 8 * (16 + 1));
}

TEST_CASE("gemm split-K decode 64x8192x8192 bf16 on sm_80 (A100, 108 SMs)", "[synth][gemm][splitk]") {
  const GemmProblem p{64, 8192, 8192, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_80", p.dtype, p, kA100Sms);
  // By hand: 64x128x32 tiles, 4 warps side by side (warp tiles 64x32: 64 accumulators + 48 fragment registers
  // + 40 = 152 registers), 48 KiB: 3 CTAs per SM (163 KiB / 48 KiB; 65536 / (152*128) = 3), 324 CTA slots.
  // 64 tiles < 108 SMs; 256 k-tiles. Fill: s >= 2, s <= 64. Cost waves x (ceil(256/s) + 4): s=2: 1x132,
  // 5: 320 CTAs = 1 wave x 56, 6: 2x47, 10: 2x30, 11-15: 3 waves (>= 3x22), ...; -> split_k = 5.
  CHECK(t.tile_m == 64);
  CHECK(t.tile_n == 128);
  CHECK(t.tile_k == 32);
  CHECK(t.warps == 4);
  CHECK_FALSE(t.warpgroup_mma);
  CHECK(t.split_k == 5);
  auto k = gemm_kernel_of(*make_gemm_trace(p, t, "sm_80", kA100Sms), t);
  const KernelInfo& info = k->info();
  CHECK(info.name == "warpsim_gemm_bf16_tn_64x128x32_s4_sm80_splitk5 (64x8192x8192)");
  CHECK(info.grid == Dim3{64, 1, 5});
  CHECK(info.grid.count() >= 108);
  CHECK(info.registers_per_thread == 152);
  CHECK(info.shared_mem_bytes == 4 * (64 + 128) * 32 * 2);

  SplitCheck r = check_split_kernel(p, t, "sm_80", kA100Sms);
  CHECK(r.mma_flops == 2ull * 64 * 8192 * 8192);
  // splits of 256*z/5: 51, 51, 51, 51, 52 k-tiles; per warp and k-tile 2 k-steps x 4x4 HMMA
  CHECK(r.op_counts[Opcode::HMMA] == 64ull * 4 * (4 * 51 + 52) * 2 * 16);
  CHECK(r.op_counts[Opcode::RED] == 0);
  // Each warp stores 64 rows x 32 fp32 into its split's slice: 128-byte rows of 8 lanes x 16 B, 4 rows per STG:
  // 16 STG.
  CHECK(r.op_counts[Opcode::STG] == 320 * 4 * 16);
}

TEST_CASE("gemm split-K ragged shapes, both structures, and uneven splits", "[synth][gemm][splitk]") {
  // k = 1040: the last k-tile is partial; m, n ragged. Explicit split_k 3 and 4.
  {
    // sm_90, 128x256x64 (two consumer warpgroups), 17 k-tiles: splits [0,5) [5,11) [11,17)
    const GemmProblem p{200, 136, 1040, DType::BF16};
    GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
    t.split_k = 3;
    SplitCheck r = check_split_kernel(p, t, "sm_90", kH100Sms);
    CHECK(r.mma_flops == 2ull * 1 * 2 * 128 * 256 * 64 * 17);  // 2x1 tiles, whole (zero-filled) k-tiles
  }
  {
    // sm_90, 64x48 tiles: 48 accumulator columns -> reduction passes of 16 fp32 columns, 2 rows per RED
    const GemmProblem p{50, 200, 1040, DType::BF16};
    GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
    t.tile_m = 64;
    t.tile_n = 48;
    t.warps = 8;
    t.stages = 3;
    t.split_k = 4;
    REQUIRE(validate_gemm(p, t, kH100Sms).empty());
    SplitCheck r = check_split_kernel(p, t, "sm_90", kH100Sms);
    CHECK(r.mma_flops == 2ull * 5 * 64 * 48 * 64 * 17);
  }
  {
    // sm_80, 64x128x32: 33 k-tiles in 4 splits of 8, 8, 8, 9
    const GemmProblem p{50, 200, 1040, DType::F16};
    GemmTiling t = default_gemm_tiling("sm_80", p.dtype);
    t.tile_m = 64;
    t.split_k = 4;
    SplitCheck r = check_split_kernel(p, t, "sm_80", kA100Sms);
    CHECK(r.mma_flops == 2ull * 2 * 64 * 128 * 32 * 33);
  }
  {
    // as many splits as k-tiles: one k-tile per CTA (fewer than stages-1: the prologue copies only it)
    const GemmProblem p{64, 64, 320, DType::BF16};
    GemmTiling t = default_gemm_tiling("sm_80", p.dtype);
    t.split_k = 10;
    SplitCheck r = check_split_kernel(p, t, "sm_80", kA100Sms);
    CHECK(r.mma_flops == 2ull * 128 * 128 * 320);
  }
  {
    // the split_k = 1 path of the same checker: bf16 C written once
    const GemmProblem p{200, 136, 1040, DType::BF16};
    check_split_kernel(p, default_gemm_tiling("sm_90", p.dtype), "sm_90", kH100Sms);
  }
}

TEST_CASE("gemm split-K validation", "[synth][gemm][splitk]") {
  const GemmProblem p{64, 1024, 1024, DType::BF16};  // 16 k-tiles of 64 on sm_90
  GemmTiling t = default_gemm_tiling("sm_90", p.dtype, p, kH100Sms);
  t.split_k = 0;
  CHECK(validate_gemm(p, t, kH100Sms).find("split_k") != std::string::npos);
  t.split_k = 16;
  CHECK(validate_gemm(p, t, kH100Sms).empty());
  t.split_k = 17;
  CHECK(validate_gemm(p, t, kH100Sms).find("k-tiles") != std::string::npos);
  CHECK_THROWS_AS(make_gemm_trace(p, t, "sm_90", kH100Sms), InputError);
}

TEST_CASE("gemm split-K streams are deterministic and independent of the read batch size", "[synth][gemm][splitk]") {
  const GemmProblem p{64, 8192, 8192, DType::BF16};
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GemmLimits& limits = std::string(arch) == "sm_80" ? kA100Sms : kH100Sms;
    const GemmTiling t = default_gemm_tiling(arch, p.dtype, p, limits);
    REQUIRE(t.split_k > 1);
    auto k1 = gemm_kernel_of(*make_gemm_trace(p, t, arch, limits), t);
    auto k2 = gemm_kernel_of(*make_gemm_trace(p, t, arch, limits), t);
    const std::uint64_t n = k1->info().grid.count();
    for (std::uint64_t cta : {std::uint64_t{0}, std::uint64_t{7}, n / 2 + 3, n - 1}) {
      auto c1 = k1->open_cta(cta);
      auto c2 = k2->open_cta(cta);
      for (std::uint32_t w = 0; w < c1->num_warps(); ++w) {
        std::vector<std::array<std::uint64_t, 32>> l1, l2;
        auto s1 = c1->open_warp(w);
        auto s2 = c2->open_warp(w);
        const auto a = read_all(*s1, 1, &l1);
        const auto b = read_all(*s2, 256, &l2);
        REQUIRE(a.size() == b.size());
        std::uint64_t mismatches = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
          mismatches += a[i].pc != b[i].pc || a[i].op != b[i].op || a[i].active_mask != b[i].active_mask ||
                        a[i].dst != b[i].dst || a[i].src != b[i].src || a[i].aux != b[i].aux ||
                        a[i].access_bytes != b[i].access_bytes || l1[i] != l2[i];
        }
        INFO(arch << " cta " << cta << " warp " << w);
        CHECK(mismatches == 0);
      }
    }
  }
}

namespace {

// Chunks of 3 instructions whose lane offsets live in the chunk itself.
class OwnedDeltasGenerator final : public WarpGenerator {
 public:
  explicit OwnedDeltasGenerator(int chunks) : chunks_(chunks) {}
  bool generate(InstChunk& c) override {
    if (done_ == chunks_) return false;
    for (int i = 0; i < 3; ++i) {
      WarpInst& in = c.emit(Opcode::LDS);
      in.space = MemSpace::Shared;
      in.access_bytes = 4;
      std::array<std::int32_t, kWarpSize> d{};
      for (int l = 0; l < kWarpSize; ++l) d[l] = (done_ * 3 + i) * 1000 + l;
      c.own_deltas(d);
    }
    if (++done_ == chunks_) c.emit(Opcode::EXIT);
    return true;
  }

 private:
  int chunks_;
  int done_ = 0;
};

}  // namespace

TEST_CASE("generated trace base: lazy chunks, owned lane offsets stay valid for the batch", "[synth]") {
  GeneratedKernelSpec spec;
  spec.info.name = "owned";
  spec.info.grid = Dim3{2, 1, 1};
  spec.info.block = Dim3{64, 1, 1};
  spec.make_warp = [](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
    return std::make_unique<OwnedDeltasGenerator>(static_cast<int>(2 + cta + warp));
  };
  std::vector<GeneratedKernelSpec> v;
  v.push_back(spec);
  GeneratedTrace trace(std::move(v), "test");
  CHECK(trace.num_kernels() == 1);
  CHECK_THROWS_AS(trace.open_kernel(1), TraceError);
  auto k = trace.open_kernel(0);
  CHECK_THROWS_AS(k->open_cta(2), TraceError);
  auto cta = k->open_cta(1);
  CHECK(cta->num_warps() == 2);
  CHECK_THROWS_AS(cta->open_warp(2), TraceError);
  auto s = cta->open_warp(1);  // 4 chunks
  std::array<WarpInst, 256> buf;
  int lds = 0;
  std::uint32_t last_pc = 0;
  std::size_t n;
  bool first = true;
  while ((n = s->read(buf.data(), buf.size())) != 0) {
    CHECK(n <= 4);  // a batch ends at a chunk holding its own offsets
    for (std::size_t i = 0; i < n; ++i) {
      if (!first) CHECK(buf[i].pc == last_pc + kInstBytes);
      first = false;
      last_pc = buf[i].pc;
      if (buf[i].op != Opcode::LDS) continue;
      REQUIRE(buf[i].deltas != nullptr);
      CHECK(buf[i].lane_address(7) == static_cast<std::uint64_t>(lds * 1000 + 7));
      ++lds;
    }
  }
  CHECK(lds == 12);
  CHECK(s->read(buf.data(), buf.size()) == 0);  // stays ended
}

TEST_CASE("gemm k tail: k-tiles rounded up, the lanes past k masked", "[synth][gemm][tails]") {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    const GemmTiling t = default_gemm_tiling(arch, DType::BF16);
    const GemmProblem tail{256, 256, 1000, DType::BF16}, full{256, 256, 1024, DType::BF16};
    // 1000 and 1024 have the same k-tiles (32 of 32 on sm_80, 16 of 64 on sm_90): the same instructions
    const KernelCheck a = check_gemm_kernel(tail, t, arch), b = check_gemm_kernel(full, t, arch);
    CHECK(a.op_counts == b.op_counts);
    CHECK(a.insts == b.insts);
    // Each 16-byte chunk (8 bf16) of A is copied once per N-tile, of B once per M-tile; rows of 1000 have 125.
    const std::uint64_t tiles_m = 256 / t.tile_m, tiles_n = 256 / t.tile_n;
    CHECK(a.ldgsts_lanes == 256 * 125 * tiles_n + 256 * 125 * tiles_m);
    CHECK(b.ldgsts_lanes == 256 * 128 * tiles_n + 256 * 128 * tiles_m);
  }
}

TEST_CASE("gemm k not 16-byte aligned: copies as wide as the rows allow", "[synth][gemm][tails]") {
  const GemmTiling t = default_gemm_tiling("sm_80", DType::BF16);
  // k = 1001 bf16: rows of 2002 bytes, 2-byte aligned -> 2-byte copies, 8 per 16-byte chunk of k = 1024
  const KernelCheck odd = check_gemm_kernel(GemmProblem{128, 128, 1001, DType::BF16}, t, "sm_80");
  const KernelCheck full = check_gemm_kernel(GemmProblem{128, 128, 1024, DType::BF16}, t, "sm_80");
  CHECK(odd.op_counts.at(Opcode::LDGSTS) == 8 * full.op_counts.at(Opcode::LDGSTS));
  CHECK(odd.op_counts.at(Opcode::HMMA) == full.op_counts.at(Opcode::HMMA));  // ceil(1001/32) = 32 k-tiles
  CHECK(odd.ldgsts_lanes == 2 * 128 * 1001);  // one lane per element of A and of B (one tile each)
  // k = 1004: 2008-byte rows, 8-byte copies
  const KernelCheck four = check_gemm_kernel(GemmProblem{128, 128, 1004, DType::BF16}, t, "sm_80");
  CHECK(four.op_counts.at(Opcode::LDGSTS) == 2 * full.op_counts.at(Opcode::LDGSTS));
  // fp8 on sm_90, k = 1041: byte copies
  check_gemm_kernel(GemmProblem{64, 256, 1041, DType::FP8}, default_gemm_tiling("sm_90", DType::FP8), "sm_90");
}

TEST_CASE("gemm n tail: a vocabulary projection of 30522 columns", "[synth][gemm][tails]") {
  // 30522 bf16 = 61044-byte rows of C, 4-byte aligned: 4-byte stores (check_gemm_kernel: each byte of C once)
  for (const std::string arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    const GemmProblem p{64, 30522, 64, DType::BF16};
    const GemmTiling t = default_gemm_tiling(arch, DType::BF16);
    const KernelCheck r = check_gemm_kernel(p, t, arch);
    const std::uint64_t tiles_n = (30522 + t.tile_n - 1) / t.tile_n;
    CHECK(r.warps == tiles_n * t.warps);
  }
  // 250 columns: 500-byte rows, 4-byte stores; 125 columns: 250-byte rows, 2-byte stores
  check_gemm_kernel(GemmProblem{100, 250, 96, DType::F16}, default_gemm_tiling("sm_80", DType::F16), "sm_80");
  check_gemm_kernel(GemmProblem{100, 125, 96, DType::F16}, default_gemm_tiling("sm_80", DType::F16), "sm_80");
  check_gemm_kernel(GemmProblem{100, 125, 96, DType::F16}, default_gemm_tiling("sm_90", DType::F16), "sm_90");
}

TEST_CASE("gemm data types: tf32 and int8 MMA shapes, element sizes in addresses", "[synth][gemm][dtypes]") {
  // PTX ISA: mma.sync m16n8k8 for tf32, m16n8k32 for s8; wgmma K = 8 (tf32), 32 (s8). tf32 operands are 4-byte
  // fp32 in memory with fp32 C; int8 is 1 byte with int32 C (check_gemm_kernel checks the addresses with these).
  struct Case {
    const char* arch;
    DType dtype;
    std::uint16_t k;
  };
  for (const Case c : {Case{"sm_80", DType::TF32, 8}, Case{"sm_80", DType::I8, 32}, Case{"sm_90", DType::TF32, 8},
                       Case{"sm_90", DType::I8, 32}, Case{"sm_80", DType::F16, 16}}) {
    INFO(c.arch << " " << static_cast<int>(c.dtype));
    const GemmProblem p{256, 256, 256, c.dtype};
    const GemmTiling t = default_gemm_tiling(c.arch, c.dtype);
    CHECK(t.tile_k * input_bytes(c.dtype) == (std::string(c.arch) == "sm_80" ? 64u : 128u));  // bytes of K per row
    const KernelCheck r = check_gemm_kernel(p, t, c.arch);
    CHECK(r.mma_kinds == std::set<std::pair<DType, std::uint16_t>>{{c.dtype, c.k}});
    CHECK(r.mma_flops == 2ull * 256 * 256 * 256);
  }
  auto trace = make_gemm_trace(GemmProblem{256, 256, 256, DType::TF32}, default_gemm_tiling("sm_80", DType::TF32),
                               "sm_80", kA100Limits);
  CHECK(trace->open_kernel(0)->info().name == "warpsim_gemm_tf32_tn_128x128x16_s4_sm80 (256x256x256)");
}

TEST_CASE("gemm strided batched: batch x tiles CTAs, each on its own matrices", "[synth][gemm][batch]") {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    const GemmTiling t = default_gemm_tiling(arch, DType::BF16);
    const GemmProblem one{200, 136, 96, DType::BF16}, three{200, 136, 96, DType::BF16, 3};
    const KernelCheck a = check_gemm_kernel(one, t, arch);
    const KernelCheck b = check_gemm_kernel(three, t, arch);  // grid.z = 3, addresses per batch checked there
    CHECK(b.warps == 3 * a.warps);
    for (const auto& [op, n] : a.op_counts) CHECK(b.op_counts.at(op) == 3 * n);
    auto trace = make_gemm_trace(three, t, arch, limits_for(arch));
    CHECK(trace->open_kernel(0)->info().name.find("(3x200x136x96)") != std::string::npos);
  }
}

namespace {

// Bytes of global memory each helper kernel instruction touches, by opcode, with per-byte counts over [base, end).
struct HelperWalk {
  std::map<Opcode, std::uint64_t> op_counts;
  std::map<Opcode, std::map<std::uint64_t, std::uint32_t>> bytes;  // opcode -> address -> times touched
  std::set<std::uint32_t> access_bytes;
};
HelperWalk walk_helper(KernelSource& k) {
  HelperWalk w;
  const KernelInfo& info = k.info();
  REQUIRE(check_kernel_info(info) == "");
  CHECK(info.flops == 0);
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    auto cs = k.open_cta(cta);
    for (std::uint32_t warp = 0; warp < cs->num_warps(); ++warp) {
      auto ws = cs->open_warp(warp);
      std::vector<std::array<std::uint64_t, 32>> lanes;
      const auto insts = read_all(*ws, 64, &lanes);
      REQUIRE(insts.back().op == Opcode::EXIT);
      for (std::size_t i = 0; i < insts.size(); ++i) {
        ++w.op_counts[insts[i].op];
        if (!insts[i].is_memory()) continue;
        w.access_bytes.insert(insts[i].access_bytes);
        for (int l = 0; l < 32; ++l)
          if (insts[i].active_mask >> l & 1)
            for (std::uint32_t b = 0; b < insts[i].access_bytes; ++b) ++w.bytes[insts[i].op][lanes[i][l] + b];
      }
    }
  }
  return w;
}
// True when `touched` holds exactly the bytes [base, base + size), each once.
bool covers_once(const std::map<std::uint64_t, std::uint32_t>& touched, std::uint64_t base, std::uint64_t size) {
  if (touched.size() != size || touched.begin()->first != base || touched.rbegin()->first != base + size - 1)
    return false;
  for (const auto& [addr, n] : touched)
    if (n != 1) return false;
  return true;
}

}  // namespace

TEST_CASE("gemm split-K, parallel (sm_80): the reduction kernel sums the workspace slices", "[synth][gemm][splitk]") {
  // 64x8192x8192 bf16 on A100: split 5 (see above), partial tiles into 5 fp32 slices of 64 x 8192 at C's place
  // (after B), then one kernel reading each slice once and writing bf16 C once, after the workspace.
  const GemmProblem p{64, 8192, 8192, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_80", p.dtype, p, kA100Sms);
  REQUIRE(t.split_k == 5);
  REQUIRE(t.split_k_reduction == GemmTiling::SplitKReduction::Parallel);
  auto trace = make_gemm_trace(p, t, "sm_80", kA100Sms);
  REQUIRE(trace->num_kernels() == 2);
  const std::uint64_t b_base = align_mib(kA + 64ull * 8192 * 2);
  const std::uint64_t ws = align_mib(b_base + 8192ull * 8192 * 2), slice = 64ull * 8192 * 4;
  const std::uint64_t out = align_mib(ws + 5 * slice), out_bytes = 64ull * 8192 * 2;
  CHECK(trace->open_kernel(0)->info().name == "warpsim_gemm_bf16_tn_64x128x32_s4_sm80_splitk5 (64x8192x8192)");
  auto reduce = trace->open_kernel(1);
  CHECK(reduce->info().name == "warpsim_gemm_splitk_reduce_bf16 (64x8192x8192)");
  HelperWalk r = walk_helper(*reduce);
  CHECK(covers_once(r.bytes[Opcode::LDG], ws, 5 * slice));   // every partial sum read once
  CHECK(covers_once(r.bytes[Opcode::STG], out, out_bytes));  // bf16 C written once
  CHECK(r.access_bytes == std::set<std::uint32_t>{16, 8});   // 4 fp32 in, 4 bf16 out per lane
  CHECK(r.op_counts.at(Opcode::FADD) == r.op_counts.at(Opcode::LDG) / 5 * 4 * 4);  // 4 adds per extra slice
  CHECK(reduce->info().grid.count() * reduce->info().block.x * 4 == 64ull * 8192);  // 4 elements per thread

  // 32-bit C (tf32: fp32, int8: int32): the reduction writes it directly, 16 bytes per lane
  for (DType d : {DType::TF32, DType::I8}) {
    GemmTiling st = default_gemm_tiling("sm_80", d);
    st.split_k = 2;
    auto tr = make_gemm_trace(GemmProblem{128, 128, 4096, d}, st, "sm_80", kA100Sms);
    REQUIRE(tr->num_kernels() == 2);
    auto k = tr->open_kernel(1);
    CHECK(walk_helper(*k).access_bytes == std::set<std::uint32_t>{16});
  }
}

TEST_CASE("gemm split-K, atomic (sm_90): zeroing and conversion kernels around the GEMM", "[synth][gemm][splitk]") {
  // 64x8192x8192 bf16 on H100: split 8 (see above), RED into one fp32 workspace of 64 x 8192 at C's place.
  const GemmProblem p{64, 8192, 8192, DType::BF16};
  const GemmTiling t = default_gemm_tiling("sm_90", p.dtype, p, kH100Sms);
  REQUIRE(t.split_k == 8);
  REQUIRE(t.split_k_reduction == GemmTiling::SplitKReduction::Atomic);
  auto trace = make_gemm_trace(p, t, "sm_90", kH100Sms);
  REQUIRE(trace->num_kernels() == 3);
  const std::uint64_t b_base = align_mib(kA + 64ull * 8192 * 2);
  const std::uint64_t ws = align_mib(b_base + 8192ull * 8192 * 2), ws_bytes = 64ull * 8192 * 4;
  const std::uint64_t out = align_mib(ws + ws_bytes), out_bytes = 64ull * 8192 * 2;

  auto zero = trace->open_kernel(0);
  CHECK(zero->info().name == "warpsim_gemm_splitk_zero (64x8192x8192)");
  HelperWalk z = walk_helper(*zero);
  CHECK(z.op_counts.count(Opcode::LDG) == 0);
  CHECK(z.access_bytes == std::set<std::uint32_t>{16});
  CHECK(covers_once(z.bytes[Opcode::STG], ws, ws_bytes));
  CHECK(zero->info().grid.count() * zero->info().block.x * 16 == ws_bytes);  // one 16-byte store per thread

  CHECK(trace->open_kernel(1)->info().name == "warpsim_gemm_bf16_tn_64x256x64_s4_sm90_splitk8 (64x8192x8192)");

  auto convert = trace->open_kernel(2);
  CHECK(convert->info().name == "warpsim_gemm_splitk_convert_bf16 (64x8192x8192)");
  HelperWalk c = walk_helper(*convert);
  CHECK(covers_once(c.bytes[Opcode::LDG], ws, ws_bytes));   // the fp32 sums, read once
  CHECK(covers_once(c.bytes[Opcode::STG], out, out_bytes));  // bf16 C, written once, after the workspace
  CHECK(c.op_counts.count(Opcode::FADD) == 0);
  CHECK(c.op_counts.at(Opcode::FMUL) == c.op_counts.at(Opcode::LDG) * 2);  // 4 values per lane, 2 packs

  // A ragged size: 3 x 37 x 1000 fp32 = 111000 elements: 16-byte zeroing (a multiple of 4), the last warp masked.
  const GemmProblem r{37, 1000, 4096, DType::F16, 3};
  GemmTiling rt = default_gemm_tiling("sm_80", r.dtype);
  rt.split_k = 3;
  rt.split_k_reduction = GemmTiling::SplitKReduction::Atomic;
  auto rtrace = make_gemm_trace(r, rt, "sm_80", kA100Sms);
  REQUIRE(rtrace->num_kernels() == 3);
  const std::uint64_t rb = align_mib(kA + 3ull * 37 * 4096 * 2);
  const std::uint64_t rws = align_mib(rb + 3ull * 1000 * 4096 * 2);
  auto rz = rtrace->open_kernel(0);
  HelperWalk rzw = walk_helper(*rz);
  CHECK(covers_once(rzw.bytes[Opcode::STG], rws, 111000ull * 4));
  auto rc = rtrace->open_kernel(2);
  HelperWalk rcw = walk_helper(*rc);
  CHECK(covers_once(rcw.bytes[Opcode::LDG], rws, 111000ull * 4));
  CHECK(covers_once(rcw.bytes[Opcode::STG], align_mib(rws + 111000ull * 4), 111000ull * 2));
  // ... and the same in parallel: 3 slices of 111000 fp32 summed
  rt.split_k_reduction = GemmTiling::SplitKReduction::Parallel;
  auto ptrace = make_gemm_trace(r, rt, "sm_80", kA100Sms);
  REQUIRE(ptrace->num_kernels() == 2);
  auto pr = ptrace->open_kernel(1);
  HelperWalk prw = walk_helper(*pr);
  CHECK(covers_once(prw.bytes[Opcode::LDG], rws, 3 * 111000ull * 4));
  CHECK(covers_once(prw.bytes[Opcode::STG], align_mib(rws + 3 * 111000ull * 4), 111000ull * 2));

  // 32-bit C (tf32: fp32, int8: int32) is the atomic workspace itself: zeroing only, no conversion.
  for (DType d : {DType::TF32, DType::I8}) {
    GemmTiling st = default_gemm_tiling("sm_90", d);
    st.split_k = 2;
    CHECK(make_gemm_trace(GemmProblem{128, 128, 4096, d}, st, "sm_90", kH100Sms)->num_kernels() == 2);
  }
}

// ---- sm_90 main loop on TMA + mbarriers + asynchronous wgmma ------------------------------------------------------

namespace {

// H100 with its TMA unit (async_copy.issue_bytes_per_cycle > 0 in configs/h100_sxm.yaml).
const GemmLimits kH100Tma{227 * 1024, 65536, 255, 132, true};

struct TmaCheck {
  std::map<Opcode, std::uint64_t> op_counts;
  std::uint64_t tma_bytes = 0;  // bytes of every UTMALDG box of the kernel
};

// Walks every warp of an sm_90 kernel generated for a GPU with TMA and checks, from the CUTLASS 3 structure
// (README.md, "sm_90"): no LDGSTS, LDGDEPBAR, DEPBAR anywhere; CTA-wide BARs only outside the main loop (one
// after the mbarrier inits, one before the epilogue); warp 0 initialises full[s] (1 arrival) and empty[s] (one
// per consumer warp of every CTA of the cluster) for every stage; warp 0 alone issues UTMALDG (lane 0), two boxes
// per k-tile: the A box tile_m rows and the B box tile_n rows (with a cluster of c CTAs: tile_n / c rows multicast
// to every CTA of the cluster) of tile_k elements; every CTA's full barrier gets, per k-tile, exactly the bytes its
// arrive announced, from its own boxes and its cluster peers' multicasts; a CTA's A boxes hold its A rows times
// k and its cluster's B boxes its B rows times k, each byte read once; the j-th wait on a barrier waits for parity
// j % 2 (consumers on full) or (j % 2) ^ 1 (producer on empty); consumers fence, commit and wait_group(1) once per
// k-tile and release k_tiles - 1 stages, on every CTA of the cluster.
// A persistent kernel (README.md, "Persistent kernels"): CTA c computes the tiles c, c + grid, ...; all of the above
// holds per tile, the barrier phases run on across tiles, consumers also release each tile's last stage, and the
// only CTA-wide barrier is the one after the inits.
TmaCheck check_tma_kernel(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits = kH100Tma) {
  auto trace = make_gemm_trace(p, t, "sm_90", limits);
  REQUIRE(trace->num_kernels() == 1);
  auto kernel = trace->open_kernel(0);
  const KernelInfo& info = kernel->info();
  const std::uint64_t cluster = info.cluster.count();
  REQUIRE(info.cluster.y * info.cluster.z == 1);
  const std::uint32_t all_ranks = cluster > 1 ? (1u << cluster) - 1 : 0u;
  const std::uint64_t eb = input_bytes(p.dtype);
  const std::uint64_t k_tiles = (p.k + t.tile_k - 1) / t.tile_k;
  const std::uint64_t consumer_warps = t.warps - 4;
  const std::uint64_t a_base = kA, b_base = align_mib(kA + p.m * p.k * eb);
  const std::uint64_t pitch = p.k * eb;
  const auto tiles_m = static_cast<std::uint32_t>((p.m + t.tile_m - 1) / t.tile_m);
  const auto tiles_n = static_cast<std::uint32_t>((p.n + t.tile_n - 1) / t.tile_n);
  const std::uint64_t tiles = std::uint64_t{tiles_m} * tiles_n;
  const bool persistent = info.name.find("_persistent") != std::string::npos;
  const std::uint64_t grid = info.grid.count();
  const GpcLayout gpcs = limits.gpcs.sms() > 0 ? limits.gpcs : GpcLayout(limits.sm_count, 1, 1);
  CHECK(grid == (persistent ? std::min<std::uint64_t>(tiles, gpcs.resident_ctas(1, cluster)) : tiles));
  TmaCheck r;
  // (CTA, k-tile of its whole loop) -> bytes announced on its full barrier / delivered there by its own and its
  // peers' boxes
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::int64_t> announced, delivered;
  // (cluster, its tile number j) -> B byte offset -> reads
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::map<std::uint64_t, int>> b_read_by_cluster;
  for (std::uint64_t cta = 0; cta < grid; ++cta) {
    auto cs = kernel->open_cta(cta);
    std::vector<std::uint64_t> units;  // the linear tiles the CTA computes, in order
    for (std::uint64_t u = cta; u < tiles && (persistent || u == cta); u += grid) units.push_back(u);
    const std::uint64_t n_units = units.size();
    std::map<std::uint64_t, std::map<std::uint64_t, int>> a_read;  // tile number j -> byte offset in A -> reads
    std::uint64_t cta_box_bytes = 0;
    for (std::uint32_t w = 0; w < cs->num_warps(); ++w) {
      auto ws = cs->open_warp(w);
      const auto insts = read_all(*ws, 61, nullptr);
      REQUIRE(insts.back().op == Opcode::EXIT);
      const bool consumer = w >= 4;
      std::map<std::uint32_t, std::uint32_t> waits_on;  // mbarrier id -> waits so far
      std::uint64_t bars = 0, hgmma = 0, bars_between_hgmmas = 0, fences = 0, commits = 0, wait1 = 0, wait0 = 0;
      std::uint64_t releases = 0, inits = 0, producer_k_tile = 0;
      std::uint32_t pending_barrier = ~0u;
      for (const WarpInst& in : insts) {
        ++r.op_counts[in.op];
        switch (in.op) {
          case Opcode::LDGSTS:
          case Opcode::LDGDEPBAR:
          case Opcode::DEPBAR:
            FAIL("cp.async instruction in a TMA kernel: warp " << w);
            break;
          case Opcode::BAR:
            ++bars;
            if (hgmma > 0 && hgmma < k_tiles * (t.tile_k * eb / 32)) ++bars_between_hgmmas;
            break;
          case Opcode::HGMMA:
            ++hgmma;
            break;
          case Opcode::MBARRIER_INIT:
            CHECK(w == 0);
            CHECK(in.group < 2 * t.stages);
            CHECK(in.aux == (in.group < t.stages ? 1u : consumer_warps * cluster));
            ++inits;
            break;
          case Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT: {
            const std::uint32_t j = waits_on[in.group]++;
            if (consumer) {
              CHECK(in.group < t.stages);  // full barriers
              CHECK(in.aux == j % 2);
            } else {
              CHECK(in.group >= t.stages);  // empty barriers (the loop's and, with a cluster, the tail's)
              CHECK(in.aux == ((j % 2) ^ 1u));
            }
            break;
          }
          case Opcode::SYNCS_ARRIVE_TRANS64:
            if (consumer) {
              CHECK(in.group >= t.stages);
              CHECK(in.aux == 0);
              CHECK(in.cluster_cta_mask() == all_ranks);  // released on every CTA of the cluster
              ++releases;
            } else {
              CHECK(in.group < t.stages);
              CHECK(in.cluster_cta_mask() == 0);
              announced[{cta, producer_k_tile++}] += in.aux;
              pending_barrier = in.group;
            }
            break;
          case Opcode::UTMALDG: {
            CHECK(w == 0);
            CHECK(in.active_mask == 1u);
            CHECK(in.group == pending_barrier);
            const std::uint64_t rows = in.aux, row_bytes = static_cast<std::uint64_t>(in.group_stride);
            CHECK(static_cast<std::uint64_t>(in.stride) == pitch);
            CHECK(row_bytes % 16 == 0);
            CHECK(row_bytes <= t.tile_k * eb);
            cta_box_bytes += rows * row_bytes;
            const bool is_a = in.base < b_base;
            // A boxes are the CTA's own; B boxes are multicast to the whole cluster when there is one.
            CHECK(in.cluster_cta_mask() == (is_a ? 0u : all_ranks));
            CHECK(rows <= (is_a ? t.tile_m : t.tile_n / cluster));
            const std::uint64_t j = (producer_k_tile - 1) / k_tiles;  // the CTA's tile number
            const std::uint64_t kt = j * k_tiles + (in.base - (is_a ? a_base : b_base)) % pitch / (t.tile_k * eb);
            if (is_a || cluster == 1)
              delivered[{cta, kt}] += static_cast<std::int64_t>(rows * row_bytes);
            else
              for (std::uint32_t rank = 0; rank < cluster; ++rank)
                delivered[{cluster_peer(info, cta, rank), kt}] += static_cast<std::int64_t>(rows * row_bytes);
            for (std::uint64_t row = 0; row < rows; ++row)
              for (std::uint64_t b = 0; b < row_bytes; b += 16) {
                const std::uint64_t addr = in.base + row * pitch + b;
                if (is_a) {
                  CHECK(addr + 16 <= a_base + p.m * p.k * eb);
                  ++a_read[j][addr - a_base];
                } else {
                  CHECK(addr + 16 <= b_base + p.n * p.k * eb);
                  ++b_read_by_cluster[{cta / cluster, j}][addr - b_base];
                }
              }
            break;
          }
          case Opcode::WARPGROUP_ARRIVE:
            ++fences;
            break;
          case Opcode::WARPGROUP_COMMIT:
            ++commits;
            break;
          case Opcode::WARPGROUP_DEPBAR:
            (in.aux == 1 ? wait1 : wait0) += 1;
            break;
          default:
            break;
        }
      }
      CHECK(inits == (w == 0 ? 2 * t.stages : 0));
      CHECK(bars_between_hgmmas == 0);
      const std::uint64_t loop = n_units * k_tiles;  // k-tiles of the CTA's whole loop
      if (consumer) {
        CHECK(bars == (persistent ? 1u : 2u));  // persistent: the staging has its own shared memory
        CHECK(waits_on.size() == std::min<std::uint64_t>(t.stages, loop));
        CHECK(fences == loop);
        CHECK(commits == loop);
        CHECK(wait1 == loop);
        CHECK(wait0 == n_units);
        CHECK(releases == (persistent ? loop : k_tiles - 1));  // persistent: each tile's last stage too
        CHECK(hgmma == loop * (t.tile_k * eb / 32));  // 32 bytes of K per wgmma
      } else {
        CHECK(hgmma == 0);
        // warps 1-3 have no role: they exit after the inits' barrier
        CHECK(bars == (w == 0 && !persistent ? 2u : 1u));
        if (w == 0) CHECK(producer_k_tile == loop);
        // With a cluster, peers arrive on this CTA's empty barriers: before it exits the producer waits for every
        // release, one wait per iteration in the loop and a tail for the last stages' releases (persistent: the
        // last k-tile's too), so that no peer arrives on a CTA that has gone.
        std::uint64_t empty_waits = 0;
        for (const auto& [barrier, n] : waits_on) empty_waits += barrier >= t.stages ? n : 0;
        const std::uint64_t released = persistent ? loop : loop - 1;
        if (w == 0 && cluster > 1 && loop >= t.stages)
          CHECK(empty_waits == loop + std::min<std::uint64_t>(released, persistent ? t.stages : t.stages - 1));
      }
    }
    for (std::uint64_t j = 0; j < n_units; ++j) {
      // First principles: for each of its tiles the CTA reads the tile's A rows over all of K, each 16-byte piece once.
      const GemmTileIndex tile = gemm_cta_tile(units[j], tiles_m, tiles_n, t.swizzle_group);
      const std::uint64_t a_rows = std::min<std::uint64_t>(t.tile_m, p.m - std::uint64_t{tile.m} * t.tile_m);
      CHECK(a_read[j].size() * 16 == a_rows * p.k * eb);
      for (const auto& [offset, times] : a_read[j]) CHECK(offset / pitch / t.tile_m == tile.m);
      for (const auto& [offset, times] : a_read[j]) CHECK(times == 1);
      // ... and the CTAs of a cluster compute the same N tile (they share B).
      CHECK(gemm_cta_tile(units[j] - units[j] % cluster, tiles_m, tiles_n, t.swizzle_group).n == tile.n);
    }
    r.tma_bytes += cta_box_bytes;
  }
  // A cluster's B boxes hold its N tile's rows over all of K, each 16-byte piece once.
  for (const auto& [cluster_tile, b_read] : b_read_by_cluster) {
    const std::uint64_t c = cluster_tile.first * cluster + cluster_tile.second * grid;  // its rank-0 CTA's tile
    const GemmTileIndex tile = gemm_cta_tile(c, tiles_m, tiles_n, t.swizzle_group);
    const std::uint64_t b_rows = std::min<std::uint64_t>(t.tile_n, p.n - std::uint64_t{tile.n} * t.tile_n);
    CHECK(b_read.size() * 16 == b_rows * p.k * eb);
    for (const auto& [offset, times] : b_read) CHECK(offset / pitch / t.tile_n == tile.n);
    for (const auto& [offset, times] : b_read) CHECK(times == 1);
  }
  // Every full barrier phase gets the bytes announced for it.
  CHECK(announced == delivered);
  return r;
}

}  // namespace

TEST_CASE("gemm sm_90 persistent: as many CTAs as fit, each looping over its tiles through one pipeline",
          "[synth][gemm][tma][persistent]") {
  GemmTiling t = default_gemm_tiling("sm_90", DType::BF16);
  CHECK_FALSE(t.persistent);  // the bare tiling: make_gemm_for_gpu makes it the default where it applies
  t.persistent = true;
  GemmLimits h100 = kH100Tma;
  h100.gpcs = GpcLayout(132, 8, 2);  // configs/h100_sxm.yaml: 8 GPCs of whole 2-SM TPCs
  SECTION("2048 x 4096 x 256 on the H100: 256 tiles over 132 CTAs in 1x2 clusters, 124 CTAs with two") {
    const GemmProblem p{2048, 4096, 256, DType::BF16};
    auto kernel = make_gemm_trace(p, t, "sm_90", h100)->open_kernel(0);
    const KernelInfo& info = kernel->info();
    CHECK(info.grid == (Dim3{132, 1, 1}));
    CHECK(info.cluster == (Dim3{2, 1, 1}));
    CHECK(info.name.find("_persistent") != std::string::npos);
    // The stages (4 x 48 KiB) and each consumer warp's staging (16 rows of 64 bf16 + 16 B of padding) beside them.
    CHECK(info.shared_mem_bytes == 4u * 48 * 1024 + 8 * 16 * (64 * 2 + 16));
    const TmaCheck r = check_tma_kernel(p, t, h100);
    // Per tile: A read once per N tile (16 of them), B once per cluster of two M tiles (8): nothing more, nothing less.
    CHECK(r.tma_bytes == 16 * (2048ull * 256 * 2) + 8 * (4096ull * 256 * 2));
    CHECK(r.op_counts.at(Opcode::HGMMA) == 256ull * 8 * 4 * 4);  // tiles x consumer warps x k-tiles x k-steps
  }
  SECTION("GPCs of single SMs: an odd GPC strands an SM, so 128 CTAs fit") {
    GemmLimits odd = h100;
    odd.gpcs = GpcLayout(132, 8, 1);
    const GemmProblem p{2048, 4096, 128, DType::BF16};
    CHECK(make_gemm_trace(p, t, "sm_90", odd)->open_kernel(0)->info().grid == (Dim3{128, 1, 1}));
    check_tma_kernel(p, t, odd);
  }
  SECTION("fewer tiles than SMs, ragged edges, fp8, no cluster: one tile per CTA still checks out") {
    check_tma_kernel(GemmProblem{256, 512, 512, DType::BF16}, t, h100);
    check_tma_kernel(GemmProblem{1000, 1800, 328, DType::BF16}, t, h100);
    GemmTiling fp8 = default_gemm_tiling("sm_90", DType::FP8);
    fp8.persistent = true;
    check_tma_kernel(GemmProblem{2048, 4096, 256, DType::FP8}, fp8, h100);
    GemmTiling single = t;
    single.cluster_m = 1;
    check_tma_kernel(GemmProblem{2048, 4096, 256, DType::BF16}, single, h100);
  }
  SECTION("where it cannot apply: one CTA per tile") {
    GemmTiling split = t;
    split.split_k = 2;
    GemmTiling ldgsts = t;
    ldgsts.mainloop = GemmTiling::Mainloop::Ldgsts;
    for (const GemmTiling& u : {split, ldgsts}) {
      auto trace = make_gemm_trace(GemmProblem{2048, 4096, 512, DType::BF16}, u, "sm_90", h100);
      for (std::size_t k = 0; k < trace->num_kernels(); ++k)
        CHECK(trace->open_kernel(k)->info().name.find("_persistent") == std::string::npos);
    }
  }
}

TEST_CASE("gemm sm_90 with TMA: mbarrier pipeline, no LDGSTS or BAR in the main loop", "[synth][gemm][tma]") {
  SECTION("bf16 256x512x512: 2 x 2 CTAs of 128x256, 8 k-tiles through 4 stages, without a cluster") {
    const GemmProblem p{256, 512, 512, DType::BF16};
    GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
    t.cluster_m = 1;
    const TmaCheck r = check_tma_kernel(p, t);
    // per CTA and k-tile: a 128 x 128 B box of A and a 256 x 128 B box of B (the tiles' 48 KiB)
    CHECK(r.op_counts.at(Opcode::UTMALDG) == 4 * 8 * 2);
    CHECK(r.tma_bytes == 4ull * 8 * (128 + 256) * 64 * 2);
    // every CTA reads all of A's and B's rows of its tile: tiles_n x A + tiles_m x B
    CHECK(r.tma_bytes == 2 * (256ull * 512 * 2) + 2 * (512ull * 512 * 2));
    CHECK(r.op_counts.count(Opcode::LDGSTS) == 0);
  }
  SECTION("bf16 256x512x512 with the default 2x1 cluster: B read once per cluster, multicast") {
    const GemmProblem p{256, 512, 512, DType::BF16};
    const GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
    CHECK(t.cluster_m == 2);  // cuBLAS's H100 kernels run clusters of 2
    auto kernel = make_gemm_trace(p, t, "sm_90", kH100Tma)->open_kernel(0);
    CHECK(kernel->info().cluster == (Dim3{2, 1, 1}));
    const TmaCheck r = check_tma_kernel(p, t);
    // per CTA and k-tile: a 128 x 128 B box of A and half (128 rows) of the 256 x 128 B tile of B
    CHECK(r.op_counts.at(Opcode::UTMALDG) == 4 * 8 * 2);
    CHECK(r.tma_bytes == 4ull * 8 * (128 + 128) * 64 * 2);
    // tiles_n x A + tiles_m / 2 x B: the two CTAs of a cluster share their B tile
    CHECK(r.tma_bytes == 2 * (256ull * 512 * 2) + 1 * (512ull * 512 * 2));
    // producer tail: stages - 1 waits more on the empty barriers than without a cluster
    GemmTiling single = t;
    single.cluster_m = 1;
    CHECK(r.op_counts.at(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT) ==
          check_tma_kernel(p, single).op_counts.at(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT) + 4 * (t.stages - 1));
  }
  SECTION("a cluster is taken only where the M tiles pair up; the N tile count is free") {
    GemmTiling t = default_gemm_tiling("sm_90", DType::BF16);
    const GemmProblem three_m{384, 512, 256, DType::BF16};
    auto kernel = make_gemm_trace(three_m, t, "sm_90", kH100Tma)->open_kernel(0);
    CHECK(kernel->info().cluster == (Dim3{1, 1, 1}));  // 3 M tiles
    check_tma_kernel(three_m, t);
    // 2 M tiles of one N tile (an odd count): one cluster, on a grid laid out M first so that grid.x holds it.
    const GemmProblem one_n{256, 256, 256, DType::BF16};
    kernel = make_gemm_trace(one_n, t, "sm_90", kH100Tma)->open_kernel(0);
    CHECK(kernel->info().cluster == (Dim3{2, 1, 1}));
    CHECK(kernel->info().grid == (Dim3{2, 1, 1}));
    const TmaCheck r = check_tma_kernel(one_n, t);
    CHECK(r.tma_bytes == 256ull * 256 * 2 + 256ull * 256 * 2);  // A and B each read once
    // cuBLAS's fp8 tile for 8192^3 (nvjet_sm90_qqtst_144x128_128x6_1x2, ncu_h100.csv): 144 columns give an odd
    // N tile count (57 of 8192; 7 here), still in 1x2 clusters, data-parallel and persistent.
    GemmTiling fp8 = default_gemm_tiling("sm_90", DType::FP8);
    fp8.tile_n = 144;
    fp8.stages = 6;
    const GemmProblem odd_n{512, 1000, 512, DType::FP8};
    kernel = make_gemm_trace(odd_n, fp8, "sm_90", kH100Tma)->open_kernel(0);
    CHECK(kernel->info().cluster == (Dim3{2, 1, 1}));
    CHECK(kernel->info().grid == (Dim3{4, 7, 1}));
    const std::uint64_t b_once = 4 / 2 * (1000ull * 512);  // B once per cluster of 2 M tiles
    CHECK(check_tma_kernel(odd_n, fp8).tma_bytes == 7 * (512ull * 512) + b_once);
    GemmLimits h100 = kH100Tma;
    h100.gpcs = GpcLayout(132, 8, 2);
    fp8.persistent = true;
    const GemmProblem rounds{2048, 2000, 256, DType::FP8};  // 16 x 14 = 224 tiles over 132 CTAs
    kernel = make_gemm_trace(rounds, fp8, "sm_90", h100)->open_kernel(0);
    CHECK(kernel->info().cluster == (Dim3{2, 1, 1}));
    CHECK(kernel->info().grid == (Dim3{132, 1, 1}));
    CHECK(check_tma_kernel(rounds, fp8, h100).tma_bytes == 14 * (2048ull * 256) + 16 / 2 * (2000ull * 256));
    t.mainloop = GemmTiling::Mainloop::Ldgsts;  // the LDGSTS main loop has no clusters
    kernel = make_gemm_trace(GemmProblem{256, 512, 512, DType::BF16}, t, "sm_90", kH100Tma)->open_kernel(0);
    CHECK(kernel->info().cluster == (Dim3{1, 1, 1}));
  }
  SECTION("fp8 256x256x1024 (tile_k 128: 128-byte rows), fewer k-tiles than stages, ragged M/N/K") {
    const GemmProblem fp8{256, 256, 1024, DType::FP8};
    check_tma_kernel(fp8, default_gemm_tiling("sm_90", fp8.dtype));
    const GemmProblem short_k{128, 256, 128, DType::BF16};  // 2 k-tiles, 4 stages
    check_tma_kernel(short_k, default_gemm_tiling("sm_90", short_k.dtype));
    const GemmProblem ragged{200, 136, 104, DType::BF16};  // k * 2 = 208 B rows: 16-byte aligned, TMA
    const TmaCheck r = check_tma_kernel(ragged, default_gemm_tiling("sm_90", ragged.dtype));
    // 2 M tiles x 1 N tile: one 1x2 cluster, B read once and multicast; boxes clipped to the matrices
    CHECK(r.tma_bytes == 1 * (200ull * 104 * 2) + 1 * (136ull * 104 * 2));
  }
  SECTION("rows not 16-byte aligned, or no TMA unit: the LDGSTS pipeline") {
    const GemmProblem odd{128, 256, 100, DType::BF16};  // 200-byte rows
    const GemmTiling t = default_gemm_tiling("sm_90", odd.dtype);
    for (const GemmLimits& limits : {kH100Tma, kH100Limits}) {
      std::map<Opcode, std::uint64_t> ops;
      auto kernel = make_gemm_trace(odd, t, "sm_90", limits)->open_kernel(0);
      auto cs = kernel->open_cta(0);
      for (std::uint32_t w = 0; w < cs->num_warps(); ++w)
        for (const WarpInst& in : read_all(*cs->open_warp(w), 64, nullptr)) ++ops[in.op];
      CHECK(ops[Opcode::LDGSTS] > 0);
      CHECK(ops[Opcode::UTMALDG] == 0);
      CHECK(ops[Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT] == 0);
    }
    const GemmProblem aligned{128, 256, 128, DType::BF16};
    std::map<Opcode, std::uint64_t> ops;
    auto kernel = make_gemm_trace(aligned, t, "sm_90", kH100Limits)->open_kernel(0);
    auto cs = kernel->open_cta(0);
    for (std::uint32_t w = 0; w < cs->num_warps(); ++w)
      for (const WarpInst& in : read_all(*cs->open_warp(w), 64, nullptr)) ++ops[in.op];
    CHECK(ops[Opcode::UTMALDG] == 0);  // limits.tma false: no TMA unit
  }
  SECTION("the GPU's config decides: H100 and B200 have a TMA unit, A100 none") {
    const GemmProblem p{128, 256, 128, DType::BF16};
    for (const char* gpu : {"h100_sxm", "b200", "a100_sxm"}) {
      const Config config =
          Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/" + gpu + ".yaml", {}, Registry::instance());
      const bool tma = config.section("async_copy").u64("issue_bytes_per_cycle") > 0;
      CHECK(tma == (std::string(gpu) != "a100_sxm"));
      auto kernel = make_gemm_for_gpu(p, config)->open_kernel(0);
      auto ws = kernel->open_cta(0)->open_warp(0);
      std::uint64_t tma_loads = 0, ldgsts = 0;
      for (const WarpInst& in : read_all(*ws, 64, nullptr)) {
        tma_loads += in.op == Opcode::UTMALDG;
        ldgsts += in.op == Opcode::LDGSTS;
      }
      INFO(gpu);
      CHECK((tma_loads > 0) == tma);
      CHECK((ldgsts > 0) == !tma);
    }
  }
}

TEST_CASE("gemm tile keys: an asked tile replaces the heuristic's before the split is chosen", "[synth][gemm]") {
  const Config h100 =
      Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml", {}, Registry::instance());
  const Config a100 =
      Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/a100_sxm.yaml", {}, Registry::instance());
  GemmMainloopChoice choice;
  choice.tile = GemmTileShape{0, 144, 6};
  const GemmProblem fp8{1024, 1152, 1024, DType::FP8};
  const KernelInfo info = make_gemm_for_gpu(fp8, h100, choice)->open_kernel(0)->info();
  CHECK(info.name.find("_tn_128x144x128_s6_") != std::string::npos);
  // tile_m = 64 on sm_90: one consumer warpgroup beside the producer's (8 warps), as the decode tile.
  choice.tile = GemmTileShape{64, 0, 0};
  const KernelInfo narrow =
      make_gemm_for_gpu(GemmProblem{4096, 4096, 512, DType::BF16}, h100, choice)->open_kernel(0)->info();
  INFO(narrow.name);
  CHECK(narrow.name.find("_tn_64x256x64_s4_") != std::string::npos);
  CHECK(narrow.block.x == 8 * 32);
  // The split follows the asked tile: 512 x 4096 x 8192 on the A100 makes 128 tiles of its own 128x128, enough for
  // 108 SMs unsplit; 256x128 tiles (8 warps) make 64, and the heuristic splits K to fill the SMs.
  const GemmProblem deep{512, 4096, 8192, DType::BF16};
  const std::string own = make_gemm_for_gpu(deep, a100)->open_kernel(0)->info().name;
  choice.tile = GemmTileShape{256, 0, 0};
  const std::string tall = make_gemm_for_gpu(deep, a100, choice)->open_kernel(0)->info().name;
  INFO(own << " / " << tall);
  CHECK(own.find("_128x128x32_s4_sm80 (") != std::string::npos);
  CHECK(tall.find("_256x128x32_s4_sm80_splitk") != std::string::npos);
  // Tiles the structure cannot run are refused with the key's name and what it needs.
  choice.tile = GemmTileShape{96, 0, 0};
  CHECK_THROWS_WITH(make_gemm_for_gpu(fp8, h100, choice), Catch::Contains("tile_m=96") && Catch::Contains("64"));
  choice.tile = GemmTileShape{0, 260, 0};
  CHECK_THROWS_WITH(make_gemm_for_gpu(fp8, h100, choice), Catch::Contains("tile_n=260"));
  choice.tile = GemmTileShape{0, 0, 16};
  CHECK_THROWS_WITH(make_gemm_for_gpu(fp8, h100, choice), Catch::Contains("shared memory"));
}

// ---- fp4 (NVFP4): two elements per byte, block scales beside the tiles ---------------------------------------------

TEST_CASE("gemm fp4 on sm_100: MMAs count elements and boxes bytes, the block scales ride along with each k-tile",
          "[synth][gemm][fp4]") {
  const GemmLimits b200{227 * 1024, 65536, 255, 148, true};
  const GemmProblem p{512, 1024, 1024, DType::FP4};
  const GemmTiling t = default_gemm_tiling("sm_100", p.dtype);
  CHECK(t.tile_k == 256);  // 128 bytes of K per tile row, as every other type
  REQUIRE(validate_gemm(p, t, b200).empty());
  auto trace = make_gemm_trace(p, t, "sm_100", b200);
  REQUIRE(trace->num_kernels() == 1);
  auto kernel = trace->open_kernel(0);
  const KernelInfo& info = kernel->info();
  CHECK(info.flops == 2ull * 512 * 1024 * 1024);
  CHECK(info.name.find("fp4_tn_128x256x256_s4") != std::string::npos);
  CHECK(info.name.find("(512x1024x1024)") != std::string::npos);
  REQUIRE(info.cluster.x == 2);
  // By hand: A is 512 rows x 512 bytes, B 1024 x 512, 1 MiB aligned; then the scales: a row per 128-row block of
  // 1024 / 64 atoms of 512 bytes (4 scales x 128 rows) = 8 KiB, A's 4 rows, B's 8.
  const std::uint64_t b_base = align_mib(kA + 512 * 512), scales_a = align_mib(b_base + 1024 * 512);
  const std::uint64_t scales_b = align_mib(scales_a + 4 * 8192), scales_end = scales_b + 8 * 8192;
  // A stage: the A tile (128 x 128 B), the B tile (256 x 128 B) and their scales for 256 elements of K: 4 atoms
  // per 128-row block, A's one block, B's two.
  const std::uint64_t stage = 128 * 128 + 256 * 128 + 3 * 4 * 512;
  CHECK(info.shared_mem_bytes == 4 * stage);
  std::uint64_t flops = 0, bytes_a = 0, bytes_b = 0, bytes_sa = 0, bytes_sb = 0;
  std::set<std::pair<DType, std::uint16_t>> kinds;
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    auto cs = kernel->open_cta(cta);
    for (std::uint32_t w = 0; w < cs->num_warps(); ++w) {
      auto ws = cs->open_warp(w);
      for (const WarpInst& in : read_all(*ws, 64, nullptr)) {
        if (in.op == Opcode::HGMMA) {
          flops += flops_of(in);
          kinds.insert({in.dtype, in.mma.k});
        }
        if (in.op == Opcode::SYNCS_ARRIVE_TRANS64 && w == 0) CHECK(in.aux == stage);  // every k-tile whole
        if (in.op != Opcode::UTMALDG) continue;
        const std::uint64_t bytes = std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride);
        if (in.base < b_base) {
          bytes_a += bytes;
        } else if (in.base < scales_a) {
          bytes_b += bytes;
          CHECK(in.cluster_cta_mask() == 3u);
        } else if (in.base < scales_b) {
          bytes_sa += bytes;
          CHECK((in.group_stride == 2048 && in.stride == 8192 && in.cluster_cta_mask() == 0u));
        } else {
          REQUIRE(in.base + bytes <= scales_end);
          bytes_sb += bytes;
          CHECK((in.group_stride == 2048 && in.stride == 8192 && in.cluster_cta_mask() == 3u));
        }
      }
    }
  }
  CHECK(flops == 2ull * 512 * 1024 * 1024);
  CHECK(kinds == std::set<std::pair<DType, std::uint16_t>>{{DType::FP4, 64}});  // m64nNk64, 32 bytes of K
  // A once per N tile (4), B and its scales once per cluster of two M tiles (2), A's scales once per N tile.
  CHECK(bytes_a == 4ull * 512 * 512);
  CHECK(bytes_b == 2ull * 1024 * 512);
  CHECK(bytes_sa == 4ull * 4 * 8192);
  CHECK(bytes_sb == 2ull * 8 * 8192);
}

TEST_CASE("gemm fp4 is refused where it cannot run and says why", "[synth][gemm][fp4]") {
  const GemmLimits b200{227 * 1024, 65536, 255, 148, true};
  GemmTiling t = default_gemm_tiling("sm_100", DType::FP4);
  CHECK_THAT(validate_gemm(GemmProblem{256, 256, 1000, DType::FP4}, t, b200), Catch::Contains("k a multiple of 32, not 1000"));
  CHECK(validate_gemm(GemmProblem{256, 256, 1024 + 32, DType::FP4}, t, b200).empty());  // a partial last k-tile
  GemmLimits no_tma = b200;
  no_tma.tma = false;
  CHECK_THAT(validate_gemm(GemmProblem{256, 256, 1024, DType::FP4}, t, no_tma), Catch::Contains("TMA main loop"));
  t.mainloop = GemmTiling::Mainloop::Ldgsts;
  CHECK_THAT(validate_gemm(GemmProblem{256, 256, 1024, DType::FP4}, t, b200), Catch::Contains("TMA main loop"));
  CHECK_THAT(validate_gemm(GemmProblem{256, 256, 1024, DType::FP4}, default_gemm_tiling("sm_80", DType::FP4), b200),
             Catch::Contains("warpgroup-MMA"));
  t = default_gemm_tiling("sm_100", DType::FP4);
  t.stages = 5;  // 5 x 55296 B of stages exceed 227 KiB
  CHECK_THAT(validate_gemm(GemmProblem{256, 256, 1024, DType::FP4}, t, b200), Catch::Contains("and the block scales"));
}

TEST_CASE("gemm persistent stages fit beside the epilogue staging as CUTLASS's StageCountAutoCarveout sizes them",
          "[synth][gemm][fp4][persistent]") {
  // By hand: the staging of the 128x256 tile's 8 consumer warps is 8 x 2304 B (README.md, "Kernel info").
  const GemmTiling bf16 = default_gemm_tiling("sm_90", DType::BF16);
  // bf16: 4 x 48 KiB + 18 KiB = 210 KiB fit in 227 KiB: the heuristic's 4 stay.
  CHECK(gemm_persistent_stages(GemmProblem{4096, 4096, 4096, DType::BF16}, bf16, kH100Tma) == 4);
  // fp4: a stage is 48 KiB of tiles and 6 KiB of scales; 4 of them and the staging (234 KiB) do not fit, 3
  // (180 KiB) do.
  const GemmLimits b200{227 * 1024, 65536, 255, 148, true};
  const GemmTiling fp4 = default_gemm_tiling("sm_100", DType::FP4);
  CHECK(gemm_persistent_stages(GemmProblem{4096, 4096, 4096, DType::FP4}, fp4, b200) == 3);
  // Where not even 3 fit, the tiling's own count is kept (and the persistent grid refused for its memory).
  GemmLimits small = b200;
  small.shared_mem_per_cta = 160 * 1024;
  CHECK(gemm_persistent_stages(GemmProblem{4096, 4096, 4096, DType::FP4}, fp4, small) == 4);
  GemmTiling fp4_3 = fp4;
  fp4_3.stages = 3;
  CHECK_THAT(gemm_persistent_refusal(GemmProblem{4096, 4096, 4096, DType::FP4}, fp4_3, small),
             Catch::Contains("exceed the CTA's shared memory"));
  CHECK(gemm_persistent_refusal(GemmProblem{4096, 4096, 4096, DType::FP4}, fp4_3, b200).empty());
}

// Every CTA's full barrier gets, per k-tile, exactly the bytes its producer announced: its own A box and A scales,
// and the B slices and B scale blocks its cluster's ranks multicast to it. Ragged M, N and K, and B tiles of 256, 128
// and 64 rows (two, one and part of a 128-row scale atom, shared by two ranks).
TEST_CASE("gemm fp4 with clusters: each full barrier receives what it expects at ragged edges", "[synth][gemm][fp4]") {
  const GemmLimits b200{227 * 1024, 65536, 255, 148, true};
  for (const std::uint32_t tile_n : {256u, 128u, 64u}) {
    INFO("tile_n " << tile_n);
    GemmTiling t = default_gemm_tiling("sm_100", DType::FP4);
    t.tile_n = tile_n;
    const GemmProblem p{500, 1000, 1056, DType::FP4};  // 4 M tiles (the last of 116 rows), K's last k-tile 32 wide
    REQUIRE(validate_gemm(p, t, b200).empty());
    auto trace = make_gemm_trace(p, t, "sm_100", b200);
    auto kernel = trace->open_kernel(0);
    const KernelInfo& info = kernel->info();
    REQUIRE(info.cluster.x == 2);
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::int64_t> announced, delivered;
    std::uint64_t scale_loads = 0;
    for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
      auto cs = kernel->open_cta(cta);
      auto ws = cs->open_warp(0);  // the producer
      std::uint64_t k_tile = 0;
      for (const WarpInst& in : read_all(*ws, 64, nullptr)) {
        if (in.op == Opcode::SYNCS_ARRIVE_TRANS64) announced[{cta, k_tile++}] += in.aux;
        if (in.op != Opcode::UTMALDG) continue;
        const auto bytes = static_cast<std::int64_t>(std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride));
        scale_loads += in.group_stride == 2048 || in.group_stride == 512 ? 1 : 0;  // full and K's last scale columns
        if (in.cluster_cta_mask() == 0) delivered[{cta, k_tile - 1}] += bytes;
        for (std::uint32_t rank = 0; rank < 2; ++rank)
          if (in.cluster_cta_mask() >> rank & 1u) delivered[{cluster_peer(info, cta, rank), k_tile - 1}] += bytes;
      }
    }
    CHECK(announced.size() == info.grid.count() * 5);  // 5 k-tiles of 256
    CHECK(delivered == announced);
    CHECK(scale_loads > 0);
  }
  GemmTiling odd = default_gemm_tiling("sm_100", DType::FP4);
  odd.tile_n = 192;
  CHECK_THAT(validate_gemm(GemmProblem{512, 768, 512, DType::FP4}, odd, b200),
             Catch::Contains("tile_n=192 must divide or be a multiple of 128"));
}

// ---- sm_100: tcgen05 (README.md, "sm_100") ---------------------------------------------------------------------

namespace {

GemmLimits b200_tcgen05_limits() {
  GemmLimits limits{227 * 1024, 65536, 255, 148, true};
  limits.tcgen05 = true;
  return limits;
}

std::vector<WarpInst> warp_of(KernelSource& kernel, std::uint64_t cta, std::uint32_t warp) {
  return read_all(*kernel.open_cta(cta)->open_warp(warp), 64, nullptr);
}

std::uint64_t count_of(const std::vector<WarpInst>& insts, Opcode op) {
  std::uint64_t n = 0;
  for (const WarpInst& in : insts) n += in.op == op;
  return n;
}

}  // namespace

TEST_CASE("gemm sm_100 tcgen05: an MMA warp, an epilogue warpgroup, commits per stage and per accumulator",
          "[synth][gemm][tcgen05]") {
  const GemmLimits limits = b200_tcgen05_limits();
  // 512 x 1024 x 512: 4 x 4 tiles of 128 x 256, 8 k-tiles of 64, 4 MMAs (k16) each; one CTA per tile.
  const GemmProblem p{512, 1024, 512, DType::BF16};
  const GemmTiling t = gemm_with_tcgen05(p, default_gemm_tiling("sm_100", p.dtype), limits);
  REQUIRE(t.tcgen05);
  CHECK(t.warps == 8);
  REQUIRE(validate_gemm(p, t, limits).empty());
  auto kernel = make_gemm_trace(p, t, "sm_100", limits)->open_kernel(0);
  const KernelInfo& info = kernel->info();
  CHECK(info.name.find("_sm100_tcgen05") != std::string::npos);
  CHECK(info.block.x == 8 * 32);
  REQUIRE(info.cluster.x == 2);
  REQUIRE(info.grid.count() == 16);
  std::uint64_t mma_flops = 0;
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    INFO("CTA " << cta);
    // Warp 0 loads, warp 1 issues every MMA of the CTA from lane 0, warps 2 and 3 have no role.
    const auto loader = warp_of(*kernel, cta, 0), mma = warp_of(*kernel, cta, 1);
    CHECK(count_of(loader, Opcode::UTMALDG) == 2 * 8);
    CHECK(count_of(loader, Opcode::UTCMMA) == 0);
    CHECK(count_of(mma, Opcode::UTMALDG) == 0);
    REQUIRE(count_of(mma, Opcode::UTCMMA) == 8 * 4);
    std::uint64_t stage_commits = 0, acc_commits = 0;
    for (const WarpInst& in : mma) {
      if (in.op == Opcode::UTCMMA) {
        CHECK(in.active_mask == 1u);
        CHECK(in.dtype == DType::BF16);
        CHECK((in.mma.m == 128 && in.mma.n == 256 && in.mma.k == 16));
        mma_flops += mma_flops_per_warp(in);
      }
      if (in.op == Opcode::UTCBAR) {
        // The stages' empty barriers (ids 4..7 after the 4 full ones) on both CTAs of the pair, whose B slices
        // landed in both; the accumulator's full barrier (id 8: after the 8 stage barriers) on its own CTA.
        if (in.group >= 4 && in.group < 8) {
          ++stage_commits;
          CHECK(in.cluster_cta_mask() == 3u);
        } else {
          ++acc_commits;
          CHECK(in.group == 8);
          CHECK(in.cluster_cta_mask() == 0u);
        }
      }
    }
    CHECK(stage_commits == 8);
    CHECK(acc_commits == 1);
    for (std::uint32_t w = 2; w < 4; ++w) {
      const auto idle = warp_of(*kernel, cta, w);
      CHECK(count_of(idle, Opcode::UTCMMA) + count_of(idle, Opcode::UTMALDG) + count_of(idle, Opcode::LDTM) == 0);
    }
    // The 4 epilogue warps: 32 rows each, two passes of 16, each read out of tensor memory first; the buffer is
    // released once (an arrival on its empty barrier, id 10) after the last read.
    for (std::uint32_t w = 4; w < 8; ++w) {
      const auto epi = warp_of(*kernel, cta, w);
      CHECK(count_of(epi, Opcode::LDTM) == 2);
      CHECK(count_of(epi, Opcode::HGMMA) + count_of(epi, Opcode::UTCMMA) == 0);
      CHECK(count_of(epi, Opcode::STG) > 0);
      std::uint64_t releases = 0;
      for (const WarpInst& in : epi) releases += in.op == Opcode::SYNCS_ARRIVE_TRANS64 && in.group == 10;
      CHECK(releases == 1);
    }
  }
  CHECK(mma_flops == info.flops);
}

TEST_CASE("gemm sm_100 tcgen05 persistent: accumulator buffers alternate, each reused once the epilogue read it",
          "[synth][gemm][tcgen05][persistent]") {
  GemmLimits limits = b200_tcgen05_limits();
  limits.sm_count = 4;  // 4 CTAs for 16 tiles: 4 tiles each
  const GemmProblem p{512, 1024, 128, DType::BF16};  // 2 k-tiles per tile
  GemmTiling t = gemm_with_tcgen05(p, default_gemm_tiling("sm_100", p.dtype), limits);
  t.persistent = true;
  t.stages = gemm_persistent_stages(p, t, limits);
  REQUIRE(gemm_persistent_refusal(p, t, limits).empty());
  auto kernel = make_gemm_trace(p, t, "sm_100", limits)->open_kernel(0);
  REQUIRE(kernel->info().grid.count() == 4);
  const std::uint32_t s = t.stages;
  // MMA warp: before tile j's first k-tile it waits on buffer j % 2's empty barrier with parity (j / 2 % 2) ^ 1 (a
  // fresh barrier passes the first use); epilogue warps wait on its full barrier with parity j / 2 % 2.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> mma_waits, epi_waits;  // (mbarrier, parity)
  for (const WarpInst& in : warp_of(*kernel, 0, 1))
    if (in.op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT && in.group >= 2 * s) mma_waits.emplace_back(in.group, in.aux);
  for (const WarpInst& in : warp_of(*kernel, 0, 4))
    if (in.op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT) epi_waits.emplace_back(in.group, in.aux);
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> want_mma = {
      {2 * s + 2, 1}, {2 * s + 3, 1}, {2 * s + 2, 0}, {2 * s + 3, 0}};
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> want_epi = {{2 * s, 0}, {2 * s + 1, 0}, {2 * s, 1}, {2 * s + 1, 1}};
  CHECK(mma_waits == want_mma);
  CHECK(epi_waits == want_epi);
}

TEST_CASE("gemm tcgen05 is taken where it applies and refused with the reason where asked for", "[synth][gemm][tcgen05]") {
  const GemmLimits limits = b200_tcgen05_limits();
  const GemmProblem p{512, 1024, 512, DType::BF16};
  GemmTiling t = default_gemm_tiling("sm_100", p.dtype);
  CHECK(gemm_tcgen05_refusal(p, t, limits).empty());
  GemmLimits hopper = limits;
  hopper.tcgen05 = false;
  CHECK_THAT(gemm_tcgen05_refusal(p, t, hopper), Catch::Contains("no tcgen05"));
  CHECK_FALSE(gemm_with_tcgen05(p, t, hopper).tcgen05);
  t.tile_m = 256;
  CHECK_THAT(gemm_tcgen05_refusal(p, t, limits), Catch::Contains("tile_m=256"));
  t.tile_m = 128;
  t.tile_n = 136;  // a multiple of 8, not of 16
  CHECK_THAT(gemm_tcgen05_refusal(p, t, limits), Catch::Contains("tile_n=136"));
  t.tile_n = 256;
  CHECK_THAT(gemm_tcgen05_refusal(GemmProblem{512, 1024, 500, DType::BF16}, t, limits), Catch::Contains("TMA"));
  // Through the configs: B200 takes it by default, mma=wgmma keeps the warpgroup MMA, an H100 refuses it by name.
  const Config b200 = Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/b200.yaml", {}, Registry::instance());
  const Config h100 = Config::load(std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml", {}, Registry::instance());
  const GemmProblem big{4096, 4096, 512, DType::BF16};  // enough tiles for every SM: no split-K kernels around it
  CHECK(make_gemm_for_gpu(big, b200)->open_kernel(0)->info().name.find("_tcgen05") != std::string::npos);
  GemmMainloopChoice choice;
  choice.mma = GemmMainloopChoice::Mma::Wgmma;
  auto wgmma = make_gemm_for_gpu(big, b200, choice)->open_kernel(0);
  CHECK(wgmma->info().name.find("_tcgen05") == std::string::npos);
  CHECK(count_of(warp_of(*wgmma, 0, 4), Opcode::HGMMA) > 0);
  choice.mma = GemmMainloopChoice::Mma::Tcgen05;
  CHECK_THROWS_WITH(make_gemm_for_gpu(p, h100, choice), Catch::Contains("'mma'") && Catch::Contains("sm_100"));
}

TEST_CASE("gemm tcgen05 code layout: producer, MMA warp and epilogue branches own disjoint code",
          "[synth][gemm][tcgen05]") {
  // A long epilogue (gelu with bias: several fp32 instructions per element) and a persistent grid: each branch's
  // code addresses must not reach another's, or the instruction cache would share lines between them.
  const GemmLimits limits = b200_tcgen05_limits();
  for (const bool persistent : {false, true}) {
    INFO("persistent " << persistent);
    const GemmProblem p{256, 512, 256, DType::BF16, 1, GemmEpilogue::GeluBias};
    GemmTiling t = gemm_with_tcgen05(p, default_gemm_tiling("sm_100", p.dtype), limits);
    REQUIRE(t.tcgen05);
    t.persistent = persistent;
    auto kernel = make_gemm_trace(p, t, "sm_100", limits)->open_kernel(0);
    // The code after the shared setup and role dispatch: the loader's (warp 0), the MMA warp's (1), an
    // epilogue warp's (4). Setup ends at the first branch every warp has in common; compare the pc ranges after it.
    std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> range;  // warp -> [first, last] pc past dispatch
    for (const std::uint32_t w : {0u, 1u, 4u}) {
      const auto insts = warp_of(*kernel, 0, w);
      std::uint32_t branches = 0, lo = ~0u, hi = 0;
      for (const WarpInst& in : insts) {
        if (branches >= (w == 4 ? 1u : 2u)) {
          lo = std::min(lo, in.pc);
          hi = std::max(hi, in.pc);
        }
        branches += in.op == Opcode::BRA && branches < 2;
      }
      range[w] = {lo, hi};
    }
    CHECK(range[0].second < range[1].first);
    CHECK(range[1].second < range[4].first);
  }
}

TEST_CASE("gemm tcgen05 refuses tilings whose resident CTAs would overflow tensor memory", "[synth][gemm][tcgen05]") {
  const GemmLimits limits = b200_tcgen05_limits();
  // tile_n 192 with 2 stages: small enough for two CTAs per SM, each allocating 512 columns (2 x 192 rounded up to a
  // power of two): 1024 of the 512.
  GemmTiling t = default_gemm_tiling("sm_100", DType::BF16);
  t.tile_n = 192;
  t.stages = 2;
  const GemmProblem p{4096, 4096, 1024, DType::BF16};
  CHECK_THAT(gemm_tcgen05_refusal(p, t, limits), Catch::Contains("columns of tensor memory") && Catch::Contains("512"));
  CHECK_FALSE(gemm_with_tcgen05(p, t, limits).tcgen05);
  t.stages = 4;  // one CTA per SM
  CHECK(gemm_tcgen05_refusal(p, t, limits).empty());
}

TEST_CASE("gemm sm_90 ping-pong: consumer warpgroups take alternate tiles, their MMAs and epilogues in turns",
          "[synth][gemm][tma][persistent][pingpong]") {
  GemmLimits limits = kH100Tma;
  limits.sm_count = 6;  // 6 CTAs (3 clusters of 2), 5 or 6 tiles each: both warpgroups loop, the first one more
  const GemmProblem p{512, 1024, 320, DType::BF16};  // 5 k-tiles of 64, 4 HGMMA k-steps each
  for (const auto& [tile_m, tile_n] : {std::pair{64u, 256u}, std::pair{128u, 128u}}) {
    INFO("tile " << tile_m << "x" << tile_n);
    GemmTiling t = default_gemm_tiling("sm_90", p.dtype);
    t.tile_m = tile_m;
    t.tile_n = tile_n;
    REQUIRE(gemm_pingpong_refusal(p, t, limits).empty());
    t = gemm_with_pingpong(p, t, limits);
    REQUIRE(t.pingpong);
    REQUIRE(t.persistent);
    CHECK(t.warps == 12);
    REQUIRE(validate_gemm(p, t, limits).empty());
    auto kernel = make_gemm_trace(p, t, "sm_90", limits)->open_kernel(0);
    const KernelInfo& info = kernel->info();
    CHECK(info.name.find("_pingpong") != std::string::npos);
    REQUIRE(info.cluster.x == 2);
    const std::uint64_t grid = info.grid.count(), tiles = (512 / tile_m) * (1024 / tile_n), m_blocks = tile_m / 64;
    REQUIRE(grid == 6);
    const std::uint32_t order0 = 2 * t.stages;  // the order barriers after the stages' full and empty ones
    const std::uint64_t c_base = align_mib(align_mib(kA + 512ull * 320 * 2) + 1024ull * 320 * 2);
    std::map<std::uint64_t, std::uint32_t> c_written;
    std::uint64_t hgmma_flops = 0;
    for (std::uint64_t cta = 0; cta < grid; ++cta) {
      std::vector<std::uint64_t> units;
      for (std::uint64_t u = cta; u < tiles; u += grid) units.push_back(u);
      // Warp 0 initialises the stages' barriers (an empty one is released by the 4 warps of one warpgroup in each
      // of the 2 CTAs) and the 4 order barriers (4 arrivals: the other warpgroup's warps).
      for (const WarpInst& in : warp_of(*kernel, cta, 0))
        if (in.op == Opcode::MBARRIER_INIT)
          CHECK(in.aux == (in.group < t.stages ? 1u : in.group < order0 ? 4u * 2 : 4u));
      for (std::uint32_t w = 4; w < 12; ++w) {
        INFO("CTA " << cta << " warp " << w);
        const std::uint32_t wg = (w - 4) / 4, q = (w - 4) % 4;
        std::vector<std::uint64_t> mine;  // the warpgroup's tiles: every other one of the CTA's
        for (std::size_t j = wg; j < units.size(); j += 2) mine.push_back(units[j]);
        std::vector<std::array<std::uint64_t, 32>> lanes;
        const auto insts = read_all(*kernel->open_cta(cta)->open_warp(w), 64, &lanes);
        // The warp's story as tokens: m = wait for the MMA turn, H = HGMMAs, M = hand the MMA turn on, e = wait for
        // the epilogue turn, S = stores, E = hand the epilogue turn on.
        std::string story;
        std::map<std::uint32_t, std::uint32_t> waits;  // order barrier -> waits so far
        std::uint64_t hgmma = 0, tile = 0;
        for (std::size_t i = 0; i < insts.size(); ++i) {
          const WarpInst& in = insts[i];
          auto add = [&](char token) {
            if (story.empty() || story.back() != token || (token != 'H' && token != 'S')) story += token;
          };
          if (in.op == Opcode::HGMMA) {
            ++hgmma;
            hgmma_flops += mma_flops_per_warp(in);
            add('H');
          }
          if (in.op == Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT && in.group >= order0) {
            const std::uint32_t turn = (in.group - order0) / 2;
            CHECK((in.group - order0) % 2 == wg);  // its own barriers
            const std::uint32_t j = waits[in.group]++;
            CHECK(in.aux == ((j & 1u) ^ (wg == 0 ? 1u : 0u)));  // warpgroup 0's first turn is free
            add(turn == 0 ? 'm' : 'e');
            tile += turn == 1;  // the stores that follow are of the warpgroup's next tile
          }
          if (in.op == Opcode::SYNCS_ARRIVE_TRANS64 && in.group >= order0) {
            CHECK((in.group - order0) % 2 == 1 - wg);  // the other warpgroup's
            add((in.group - order0) / 2 == 0 ? 'M' : 'E');
          }
          if (in.op == Opcode::STG) {
            add('S');
            REQUIRE(tile >= 1);
            REQUIRE(tile <= mine.size());
            for (int l = 0; l < 32; ++l)
              if (in.active_mask >> l & 1)
                for (std::uint32_t b = 0; b < in.access_bytes; ++b) {
                  const std::uint64_t off = lanes[i][l] + b - c_base;
                  ++c_written[off];
                  // Rows 16q.. of each 64-row block of one of the warpgroup's tiles.
                  const std::uint64_t row = off / (1024 * 2), col = off % (1024 * 2) / 2;
                  const GemmTileIndex ti = gemm_cta_tile(mine[tile - 1], 512 / tile_m, 1024 / tile_n, t.swizzle_group);
                  CHECK(row / tile_m == ti.m);
                  CHECK(col / tile_n == ti.n);
                  CHECK(row % 64 / 16 == q);
                }
          }
        }
        CHECK(hgmma == mine.size() * 5 * 4 * m_blocks);
        std::string expected;
        for (std::size_t j = 0; j < mine.size(); ++j) expected += "mHMeSE";
        CHECK(story == expected);
      }
    }
    CHECK(hgmma_flops == info.flops);
    CHECK(covers_once(c_written, 0, 512ull * 1024 * 2));
  }
}

TEST_CASE("gemm ping-pong is refused where it cannot run, naming the reason", "[synth][gemm][pingpong]") {
  auto contains = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  const GemmProblem p{1024, 1024, 1024, DType::BF16};
  GemmTiling t = default_gemm_tiling("sm_90", p.dtype);  // 128 x 256: 256 accumulator registers for one warpgroup
  CHECK(contains(gemm_pingpong_refusal(p, t, kH100Tma), "take 256 registers per thread"));
  CHECK_FALSE(gemm_with_pingpong(p, t, kH100Tma).pingpong);
  t.tile_m = 64;
  CHECK(gemm_pingpong_refusal(p, t, kH100Tma).empty());
  GemmTiling split = t;
  split.split_k = 2;
  CHECK(contains(gemm_pingpong_refusal(p, split, kH100Tma), "excludes split_k > 1"));
  GemmLimits no_tma = kH100Tma;
  no_tma.tma = false;
  CHECK(contains(gemm_pingpong_refusal(p, t, no_tma), "needs the TMA main loop"));
  CHECK(contains(gemm_pingpong_refusal(p, default_gemm_tiling("sm_80", p.dtype), kH100Tma), "not the sm_80 multistage"));
  GemmTiling deep = t;
  deep.stages = 15;  // 30 stage barriers and 4 order barriers exceed the 32 mbarriers
  CHECK(contains(gemm_pingpong_refusal(p, deep, kH100Tma), "stages=15"));
  // validate_gemm judges the tiling as it is: ping-pong is persistent only (its second warpgroup would have no tile).
  GemmTiling one_per_tile = gemm_with_pingpong(p, t, kH100Tma);
  REQUIRE(one_per_tile.pingpong);
  CHECK(validate_gemm(p, one_per_tile, kH100Tma).empty());
  one_per_tile.persistent = false;
  CHECK(contains(validate_gemm(p, one_per_tile, kH100Tma), "ping-pong is the persistent kernel's schedule"));
}
