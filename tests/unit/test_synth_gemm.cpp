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

#include "sim/core/error.h"
#include "sim/trace/inst.h"
#include "traces/synth/gemm.h"
#include "traces/synth/generated.h"

using namespace warpsim;

namespace {

constexpr std::uint64_t kA = 0x7f0000000000ull;
constexpr std::uint64_t kMiB = 1ull << 20;
std::uint64_t align_mib(std::uint64_t x) { return (x + kMiB - 1) / kMiB * kMiB; }

// The GPU limits the synthesizer is given, as in configs/h100_sxm.yaml and configs/a100_sxm.yaml (sm section):
// H100 (sm_90): 227 KiB of shared memory per CTA, A100 (sm_80): 163 KiB; both 65536 registers per SM and at most
// 255 per thread. sm_100 is tested with the H100 values.
constexpr GemmLimits kH100Limits{227 * 1024, 65536, 255};
constexpr GemmLimits kA100Limits{163 * 1024, 65536, 255};
GemmLimits limits_for(const std::string& arch) { return arch == "sm_80" ? kA100Limits : kH100Limits; }

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
};

// Walks every warp of every CTA and checks the invariants the simulator relies on.
KernelCheck check_gemm_kernel(const GemmProblem& p, const GemmTiling& t, const std::string& arch) {
  auto trace = make_gemm_trace(p, t, arch, limits_for(arch));
  REQUIRE(trace->num_kernels() == 1);
  auto kernel = trace->open_kernel(0);
  const KernelInfo& info = kernel->info();
  REQUIRE(check_kernel_info(info) == "");
  REQUIRE(info.flops == 2 * p.m * p.n * p.k);
  REQUIRE(info.grid.x == (p.n + t.tile_n - 1) / t.tile_n);
  REQUIRE(info.grid.y == (p.m + t.tile_m - 1) / t.tile_m);
  REQUIRE(info.block.x == t.warps * 32);

  const std::uint64_t eb = p.dtype == DType::FP8 ? 1 : 2;
  const std::uint64_t a_end = kA + p.m * p.k * eb;
  const std::uint64_t b_base = align_mib(a_end), b_end = b_base + p.n * p.k * eb;
  const std::uint64_t c_base = align_mib(b_end), c_end = c_base + p.m * p.n * 2;
  std::vector<std::uint8_t> a_read(a_end - kA), b_read(b_end - b_base), c_written(c_end - c_base);

  KernelCheck r;
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
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
            REQUIRE(bytes == 16);
            if (addr >= kA && addr + bytes <= a_end) {
              for (std::uint64_t b = 0; b < bytes; ++b) a_read[addr - kA + b] = 1;
            } else if (addr >= b_base && addr + bytes <= b_end) {
              for (std::uint64_t b = 0; b < bytes; ++b) b_read[addr - b_base + b] = 1;
            } else {
              FAIL("LDGSTS outside A and B: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
            }
          } else if (in.op == Opcode::STG) {
            if (!(addr >= c_base && addr + bytes <= c_end))
              FAIL("STG outside C: cta " << cta << " warp " << w << " lane " << l << " addr " << addr);
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
      if (w < 4) {  // producer: 64 k-tiles x 24 LDGSTS
        CHECK(n[Opcode::LDGSTS] == 64 * 24);
        CHECK(n[Opcode::HGMMA] == 0);
        CHECK(insts.size() == 2140);
      } else {
        CHECK(n[Opcode::HGMMA] == 64 * 4);
        CHECK(n[Opcode::STG] == 16);
        CHECK(n[Opcode::LDGSTS] == 0);
        CHECK(insts.size() == 948);
      }
      CHECK(n[Opcode::BAR] == 64 + 1);
    }
    CHECK(total == 4 * 2140 + 8 * 948);
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
  CHECK_FALSE(validate_gemm(GemmProblem{1024, 1024, 1000, DType::BF16}, a, a100).empty());  // k % 16
  CHECK_FALSE(validate_gemm(GemmProblem{1024, 1020, 1024, DType::BF16}, a, a100).empty());  // n % 8
  CHECK(validate_gemm(GemmProblem{1000, 1024, 1024, DType::BF16}, a, a100).empty());        // any m
  CHECK_FALSE(validate_gemm(GemmProblem{1024, 1024, 1040, DType::FP8}, h, h100).empty());   // fp8: k % 32
  CHECK_FALSE(validate_gemm(GemmProblem{0, 1024, 1024, DType::BF16}, a, a100).empty());
  CHECK_FALSE(validate_gemm(GemmProblem{64, 64, 64, DType::F32}, a, a100).empty());

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
