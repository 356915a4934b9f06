// Stream-K GEMM decomposition (traces/synth/gemm.h GemmStreamK, README.md "Stream-K"): the schedule worked out
// by hand on small cases, its invariants over many shapes, and the generated kernel walked access by access.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/core/types.h"
#include "sim/trace/inst.h"
#include "tests/unit/cta_instructions.h"
#include "tests/unit/gemm_test_layout.h"
#include "traces/synth/gemm.h"
#include "traces/synth/generated.h"

using namespace warpsim;

namespace stream_k_test {

using Segment = GemmStreamK::Segment;

bool same(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].tile != b[i].tile || a[i].kt_begin != b[i].kt_begin || a[i].kt_end != b[i].kt_end) return false;
  return true;
}

}  // namespace stream_k_test

using namespace stream_k_test;

TEST_CASE("stream-K schedule: a small case by hand", "[synth][gemm][streamk]") {
  // 10 tiles of 8 k-tiles on 4 slots: 2 full waves and 2 tiles more. The last full wave and the partial one (6
  // tiles: 4..9) are shared, tiles 0..3 run data-parallel. 6 x 8 = 48 iterations over 4 CTAs: 12 each.
  const GemmStreamK d = gemm_stream_k(10, 8, 4, 2);
  CHECK(d.dp_tiles == 4);
  CHECK(d.sk_tiles == 6);
  CHECK(d.sk_ctas == 4);
  CHECK(d.ctas() == 8);
  // CTA 0: iterations 0..11 = tile 4 whole, tile 5's k-tiles 0..3; walked backwards.
  CHECK(same(d.segments(0), {{5, 0, 4}, {4, 0, 8}}));
  // CTA 1: 12..23 = tile 5's k-tiles 4..7 (it finishes tile 5, last), tile 6 whole (first).
  CHECK(same(d.segments(1), {{6, 0, 8}, {5, 4, 8}}));
  CHECK(same(d.segments(2), {{8, 0, 4}, {7, 0, 8}}));
  CHECK(same(d.segments(3), {{9, 0, 8}, {8, 4, 8}}));
  for (std::uint64_t c = 4; c < 8; ++c) CHECK(same(d.segments(c), {{c - 4, 0, 8}}));
  CHECK(d.cta_of_iteration(0) == 0);
  CHECK(d.cta_of_iteration(12) == 1);
  CHECK(d.cta_of_iteration(47) == 3);

  // Uneven shares: 3 tiles of 5 k-tiles on 4 slots, fewer tiles than slots: all shared, 15 iterations -> 4, 4, 4, 3.
  const GemmStreamK u = gemm_stream_k(3, 5, 4, 1);
  CHECK(u.dp_tiles == 0);
  CHECK(u.sk_ctas == 4);
  CHECK(same(u.segments(0), {{0, 0, 4}}));
  CHECK(same(u.segments(1), {{1, 0, 3}, {0, 4, 5}}));
  CHECK(same(u.segments(2), {{2, 0, 2}, {1, 3, 5}}));
  CHECK(same(u.segments(3), {{2, 2, 5}}));

  // Whole waves: nothing to share.
  const GemmStreamK w = gemm_stream_k(8, 8, 4, 2);
  CHECK(w.sk_tiles == 0);
  CHECK(w.ctas() == 8);
  // Short K: each CTA keeps at least min_iterations (3 tiles x 4 k-tiles = 12 iterations, >= 4 each: 3 CTAs).
  const GemmStreamK s = gemm_stream_k(3, 4, 8, 4);
  CHECK(s.sk_ctas == 3);
}

TEST_CASE("stream-K schedule: every shared iteration once, balanced, fixup order", "[synth][gemm][streamk]") {
  std::uint64_t cases = 0;
  for (std::uint64_t tiles : {1u, 2u, 5u, 7u, 16u, 17u, 33u, 100u, 217u, 433u})
    for (std::uint32_t k_tiles : {1u, 2u, 3u, 8u, 13u, 64u})
      for (std::uint64_t slots : {1u, 4u, 16u, 108u, 216u})
        for (std::uint32_t min_it : {1u, 4u}) {
          ++cases;
          const GemmStreamK d = gemm_stream_k(tiles, k_tiles, slots, min_it);
          INFO("tiles " << tiles << " k_tiles " << k_tiles << " slots " << slots << " min " << min_it);
          REQUIRE(d.sk_tiles + d.dp_tiles == tiles);
          if (tiles % slots == 0) CHECK(d.sk_tiles == 0);
          // Iterations covered: (tile, kt) -> times.
          std::map<std::pair<std::uint64_t, std::uint32_t>, int> covered;
          std::uint64_t min_share = ~0ull, max_share = 0;
          // Per shared tile: its CTAs, and which of them stores first / finishes.
          std::map<std::uint64_t, int> peers;
          for (std::uint64_t c = 0; c < d.ctas(); ++c) {
            const auto segs = d.segments(c);
            REQUIRE(!segs.empty());
            std::uint64_t share = 0;
            for (std::size_t i = 0; i < segs.size(); ++i) {
              const Segment& s = segs[i];
              REQUIRE(s.kt_begin < s.kt_end);
              REQUIRE(s.kt_end <= k_tiles);
              REQUIRE(s.tile < tiles);
              for (std::uint32_t kt = s.kt_begin; kt < s.kt_end; ++kt) ++covered[{s.tile, kt}];
              share += s.kt_end - s.kt_begin;
              const bool started = s.kt_begin == 0, finished = s.kt_end == k_tiles;
              if (c >= d.sk_ctas) CHECK((started && finished));
              // A tile's first part is stored before anything else the CTA does; the part that finishes a tile
              // (and needs the others' sums) is the CTA's last.
              if (started && !finished) CHECK(i == 0);
              if (finished && !started) CHECK(i + 1 == segs.size());
              // Its place in the tile's turnstile: the CTAs before it that worked on the tile.
              if (!(started && finished)) CHECK(s.position == static_cast<std::uint64_t>(peers[s.tile]++));
            }
            if (c < d.sk_ctas) {
              min_share = std::min(min_share, share);
              max_share = std::max(max_share, share);
              CHECK(share >= std::min<std::uint64_t>(min_it, d.iterations()));
            }
          }
          CHECK(covered.size() == tiles * k_tiles);
          for (const auto& [at, n] : covered) CHECK(n == 1);
          if (d.sk_ctas > 0) CHECK(max_share - min_share <= 1);
          CHECK(d.sk_ctas <= slots);
          for (const auto& [tile, n] : peers) CHECK(n >= 2);
        }
  CHECK(cases == 600);
}

namespace stream_k_test {

// Everything the stream-K kernel's warps do to global memory, per byte region, and the MMA work.
struct Walk {
  std::uint64_t mma_flops = 0;
  std::map<std::uint64_t, std::uint32_t> a_chunks, b_chunks;  // 16-byte chunk -> LDGSTS lanes
  std::vector<std::uint32_t> c_bytes;                          // bytes of C stored, per byte
  std::map<std::uint64_t, std::uint64_t> partial_stored, partial_loaded;  // tile -> bytes
  std::map<std::uint64_t, std::uint64_t> flag_red, flag_ldg;             // tile -> instructions
  std::map<std::uint64_t, std::set<std::uint32_t>> flag_waits;            // tile -> arrivals each wait awaits
  bool bars_equal = true;
};

// The 4-byte words the stores of `kernel` (the counters' memset) write.
std::set<std::uint64_t> zeroed_words(KernelSource& kernel) {
  std::set<std::uint64_t> zeroed;
  for (std::uint64_t cta = 0; cta < kernel.info().grid.count(); ++cta)
    test::for_each_cta_instruction(kernel, cta, [&](const WarpInst& in) {
      if (in.op != Opcode::STG) return;
      for (int l = 0; l < 32; ++l)
        if (in.active_mask >> l & 1)
          for (std::uint64_t b = 0; b < in.access_bytes; b += 4) zeroed.insert(in.lane_address(l) + b);
    });
  return zeroed;
}

}  // namespace stream_k_test

TEST_CASE("stream-K kernel (sm_80): each MAC once, C stored once, partial tiles through the workspace",
          "[synth][gemm][streamk]") {
  // 512 x 384 x 512 bf16 in 128x128x32 tiles: 4 x 3 = 12 tiles of 16 k-tiles; 5 stream-K slots: 2 full waves and
  // 2 tiles more, so tiles 5..11 are shared by 5 CTAs (112 iterations: 23, 23, 22, 22, 22) and tiles 0..4 run one
  // CTA each.
  GemmProblem p{512, 384, 512, DType::BF16};
  GemmTiling t = default_gemm_tiling("sm_80", DType::BF16);
  t.stream_k = true;
  t.stream_k_ctas = 5;
  REQUIRE(t.tile_m == 128);
  REQUIRE(t.tile_n == 128);
  REQUIRE(t.tile_k == 32);
  const GemmLimits limits = test::kA100Limits;
  auto trace = make_gemm_trace(p, t, "sm_80", limits);
  REQUIRE(trace->num_kernels() == 2);  // the arrival counters' memset, the GEMM
  auto kernel = trace->open_kernel(1);
  const KernelInfo& info = kernel->info();
  CHECK(info.grid == Dim3{10, 1, 1});
  CHECK(info.name.find("_streamk5 (") != std::string::npos);
  CHECK(info.flops == 2 * p.m * p.n * p.k);

  // Layout by hand: A at kA, B and C each 1 MiB aligned after the previous; the partial tiles (128 x 128 fp32 =
  // 64 KiB per shared tile) after C, the arrival counters after them.
  const std::uint64_t a_end = test::kA + p.m * p.k * 2;
  const std::uint64_t b_base = test::align_mib(a_end), b_end = b_base + p.n * p.k * 2;
  const std::uint64_t c_base = test::align_mib(b_end), c_end = c_base + p.m * p.n * 2;
  const std::uint64_t partials = test::align_mib(c_end), partial_bytes = 128 * 128 * 4;
  const std::uint64_t flags = test::align_mib(partials + 7 * partial_bytes);
  // Peers per shared tile (tile 5 + j), from the shares 23, 23, 22, 22, 22 over 7 x 16 iterations:
  // CTA ranges [0,23) [23,46) [46,68) [68,90) [90,112); tile j covers [16j, 16j+16).
  std::map<std::uint64_t, std::uint64_t> peers;
  const std::uint64_t bounds[] = {0, 23, 46, 68, 90, 112};
  for (std::uint64_t j = 0; j < 7; ++j)
    for (int c = 0; c < 5; ++c)
      peers[5 + j] += bounds[c] < 16 * j + 16 && bounds[c + 1] > 16 * j;

  Walk r;
  r.c_bytes.assign(c_end - c_base, 0);
  std::vector<WarpInst> buf(64);
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    auto cs = kernel->open_cta(cta);
    REQUIRE(cs->num_warps() == 4);
    std::vector<std::uint64_t> bars;
    for (std::uint32_t w = 0; w < 4; ++w) {
      auto ws = cs->open_warp(w);
      std::uint64_t bar = 0;
      WarpInst last{};
      for (std::size_t n; (n = ws->read(buf.data(), buf.size())) > 0;) {
        for (std::size_t i = 0; i < n; ++i) {
          const WarpInst& in = buf[i];
          REQUIRE(check_inst(in) == "");
          last = in;
          if (in.op == Opcode::BAR) ++bar;
          if (in.op == Opcode::HMMA) r.mma_flops += 2ull * in.mma.m * in.mma.n * in.mma.k;
          if (!in.is_memory() || in.space != MemSpace::Global) continue;
          for (int l = 0; l < 32; ++l) {
            if (!(in.active_mask >> l & 1)) continue;
            const std::uint64_t addr = in.lane_address(l), bytes = in.access_bytes;
            if (in.op == Opcode::LDGSTS && addr >= test::kA && addr < a_end) {
              ++r.a_chunks[addr];
            } else if (in.op == Opcode::LDGSTS && addr >= b_base && addr < b_end) {
              ++r.b_chunks[addr];
            } else if (in.op == Opcode::STG && addr >= c_base && addr + bytes <= c_end) {
              for (std::uint64_t b = 0; b < bytes; ++b) ++r.c_bytes[addr - c_base + b];
            } else if (addr >= partials && addr + bytes <= partials + 7 * partial_bytes) {
              const std::uint64_t tile = 5 + (addr - partials) / partial_bytes;
              if (in.op == Opcode::STG) r.partial_stored[tile] += bytes;
              else if (in.op == Opcode::LDG) r.partial_loaded[tile] += bytes;
              else FAIL("unexpected access to the partial tiles, opcode " << static_cast<int>(in.op));
            } else if (addr >= flags && addr < flags + 7 * 4 && bytes == 4) {
              const std::uint64_t tile = 5 + (addr - flags) / 4;
              if (in.op == Opcode::RED) ++r.flag_red[tile];
              else if (in.op == Opcode::LDG) {
                ++r.flag_ldg[tile];
                r.flag_waits[tile].insert(in.aux);
                CHECK(in.active_mask == 1u);  // one thread spins
              }
              else FAIL("unexpected access to the arrival counters, opcode " << static_cast<int>(in.op));
            } else {
              FAIL("global access outside A, B, C and the workspace: cta " << cta << " warp " << w << " opcode "
                                                                           << static_cast<int>(in.op) << " addr " << addr);
            }
          }
        }
      }
      CHECK(last.op == Opcode::EXIT);
      bars.push_back(bar);
    }
    for (std::uint64_t b : bars) r.bars_equal = r.bars_equal && b == bars.front();
  }
  CHECK(r.bars_equal);
  // The memset before the GEMM zeroes exactly the 7 counters.
  {
    auto zero = trace->open_kernel(0);
    CHECK(zero->info().name.find("warpsim_gemm_streamk_zero") == 0);
    const std::set<std::uint64_t> zeroed = zeroed_words(*zero);
    CHECK(zeroed.size() == 7);
    CHECK(*zeroed.begin() == flags);
    CHECK(*zeroed.rbegin() == flags + 6 * 4);
  }
  CHECK(r.mma_flops == 2 * p.m * p.n * p.k);  // every (tile, k-tile) computed once, whoever computes it
  // Every chunk of A is read once per N tile and of B once per M tile, as in the data-parallel grid.
  CHECK(r.a_chunks.size() == p.m * p.k * 2 / 16);
  for (const auto& [a, n] : r.a_chunks) CHECK(n == 3);
  CHECK(r.b_chunks.size() == p.n * p.k * 2 / 16);
  for (const auto& [b, n] : r.b_chunks) CHECK(n == 4);
  std::uint64_t c_bad = 0;
  for (auto v : r.c_bytes) c_bad += v != 1;
  CHECK(c_bad == 0);  // each output element stored once, by the CTA finishing its tile
  // A tile shared by n CTAs: n - 1 partial tiles stored (the first, and each middle one's running sum), n - 1
  // loaded (each middle CTA and the finishing one read the sum so far), n - 1 arrivals and n - 1 waits. A shared
  // tile that one CTA's range holds whole (tile 5: iterations 0..15 of CTA 0's 0..22) needs none.
  CHECK(peers[5] == 1);
  CHECK(peers[6] == 2);
  for (const auto& [tile, n] : peers) {
    INFO("tile " << tile << " computed by " << n << " CTAs");
    CHECK(r.partial_stored[tile] == (n - 1) * partial_bytes);
    CHECK(r.partial_loaded[tile] == (n - 1) * partial_bytes);
    CHECK(r.flag_red[tile] == n - 1);
    CHECK(r.flag_ldg[tile] == n - 1);
    // The turnstile: the i-th CTA after the tile's first spins until i arrivals (1 .. n - 1, one wait each).
    std::set<std::uint32_t> turns;
    for (std::uint32_t i = 1; i < n; ++i) turns.insert(i);
    CHECK(r.flag_waits[tile] == turns);
  }
}

TEST_CASE("stream-K validation", "[synth][gemm][streamk]") {
  GemmProblem p{512, 512, 512, DType::BF16};
  GemmTiling t = default_gemm_tiling("sm_80", DType::BF16);
  t.stream_k = true;
  t.split_k = 2;
  CHECK_THAT(validate_gemm(p, t, test::kA100Limits), Catch::Contains("exclude each other"));
  t.split_k = 1;
  CHECK_THAT(validate_gemm(p, t, test::kA100Limits), Catch::Contains("SM count"));  // no sm_count, no stream_k_ctas
  t.stream_k_ctas = 8;
  CHECK(validate_gemm(p, t, test::kA100Limits).empty());
  // Whole waves (16 tiles on 8 slots): nothing to share, the data-parallel kernel as it is.
  auto whole = make_gemm_trace(p, t, "sm_80", test::kA100Limits);
  REQUIRE(whole->num_kernels() == 1);
  CHECK(whole->open_kernel(0)->info().grid == Dim3{4, 4, 1});
  CHECK(whole->open_kernel(0)->info().name.find("streamk") == std::string::npos);
  // sm_90: the persistent cooperative TMA kernel's scheduler, nothing else.
  GemmTiling h = default_gemm_tiling("sm_90", DType::BF16);
  h.stream_k = true;
  h.stream_k_ctas = 8;
  GemmLimits tma = test::kH100Limits;
  tma.tma = true;
  CHECK_THAT(validate_gemm(p, h, tma), Catch::Contains("the persistent cooperative TMA kernel's"));  // not persistent
  h.persistent = true;
  h.stages = 3;
  CHECK_THAT(validate_gemm(p, h, tma), Catch::Contains("runs the persistent kernel, and the persistent grid needs the GPU's SM count"));
  tma.sm_count = 8;
  CHECK(validate_gemm(p, h, tma).empty());
  h.stages = 5;  // 5 x 48 KiB of stages and the epilogue staging exceed 227 KiB
  CHECK_THAT(validate_gemm(p, h, tma), Catch::Contains("exceed the CTA's shared memory"));
  h.stages = 3;
  h.mainloop = GemmTiling::Mainloop::Ldgsts;
  CHECK_THAT(validate_gemm(p, h, tma), Catch::Contains("the persistent cooperative TMA kernel's"));
  h.mainloop = GemmTiling::Mainloop::Tma;
  h.pingpong = true;
  h.tile_m = 64;
  h.warps = 12;
  CHECK_THAT(validate_gemm(p, h, tma), Catch::Contains("ping-pong"));
}

TEST_CASE("stream-K kernel (sm_90): persistent CTAs run their segments then data-parallel tiles through one pipeline",
          "[synth][gemm][streamk][persistent]") {
  // 1024 x 1024 x 1024 bf16 in 128x256x64 tiles: 8 x 4 = 32 tiles of 16 k-tiles. 12 SMs, one CTA each, in 6 clusters
  // of 2: the decomposition is over 16 work tiles (a cluster's two M-adjacent tiles) and 6 slots: 2 full waves and 4
  // more, so 10 work tiles (160 iterations) are shared by 6 stream-K units and 6 run data-parallel.
  const GemmProblem p{1024, 1024, 1024, DType::BF16};
  GemmLimits limits = test::kH100Limits;
  limits.sm_count = 12;
  limits.tma = true;
  GemmTiling t = default_gemm_tiling("sm_90", DType::BF16);
  t.stream_k = true;
  t.persistent = true;
  REQUIRE(gemm_persistent_stages(p, t, limits) == 4);  // 4 x 48 KiB and 8 x 2304 B of staging fit
  REQUIRE(validate_gemm(p, t, limits).empty());
  auto trace = make_gemm_trace(p, t, "sm_90", limits);
  REQUIRE(trace->num_kernels() == 2);  // the counters' memset, the GEMM
  auto kernel = trace->open_kernel(1);
  const KernelInfo& info = kernel->info();
  CHECK(info.grid == Dim3{12, 1, 1});
  CHECK(info.cluster == Dim3{2, 1, 1});
  CHECK(info.name.find("_streamk12_persistent (") != std::string::npos);
  CHECK(info.persistent_units == 0);  // units of different sizes: no round sampling

  // Peers per work tile, from the decomposition (its schedule is checked by hand above).
  const GemmStreamK sk = gemm_stream_k(16, 16, 6, 4);
  REQUIRE(sk.sk_ctas == 6);
  REQUIRE(sk.dp_tiles == 6);
  std::map<std::uint64_t, std::uint64_t> peers;  // tile (both of a work tile) -> stream-K units on it
  for (std::uint64_t u = 0; u < sk.sk_ctas; ++u)
    for (const GemmStreamK::Segment& s : sk.segments(u))
      for (std::uint64_t r = 0; r < 2; ++r) ++peers[s.tile * 2 + r];
  REQUIRE(peers.size() == 20);

  const std::uint64_t a_end = test::kA + p.m * p.k * 2;
  const std::uint64_t b_base = test::align_mib(a_end), b_end = b_base + p.n * p.k * 2;
  const std::uint64_t c_base = test::align_mib(b_end), c_end = c_base + p.m * p.n * 2;
  const std::uint64_t partials = test::align_mib(c_end), tile_bytes = 128 * 256 * 4, part_bytes = tile_bytes / 2;
  const std::uint64_t flags = test::align_mib(partials + 20 * tile_bytes);
  std::vector<std::uint32_t> c_bytes(c_end - c_base, 0);
  std::uint64_t mma_flops = 0, tma_bytes = 0;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint64_t> stored, loaded, reds;  // (tile, warpgroup) ->
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::set<std::uint32_t>> waits;
  for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
    auto cs = kernel->open_cta(cta);
    REQUIRE(cs->num_warps() == 12);
    for (std::uint32_t w = 0; w < 12; ++w) {
      INFO("CTA " << cta << " warp " << w);
      const std::uint32_t wg = w < 4 ? 0 : (w - 4) / 4;
      std::vector<WarpInst> buf(64);
      WarpInst last{};
      auto ws = cs->open_warp(w);
      for (std::size_t n; (n = ws->read(buf.data(), buf.size())) > 0;)
        for (std::size_t i = 0; i < n; ++i) {
          const WarpInst& in = buf[i];
          REQUIRE(check_inst(in) == "");
          last = in;
          if (in.op == Opcode::HGMMA) mma_flops += mma_flops_per_warp(in);
          if (in.op == Opcode::UTMALDG) tma_bytes += std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride);
          if (in.op == Opcode::BAR && in.aux != 0) {  // the warpgroups' own barriers around their fixups
            CHECK(w >= 4);
            CHECK(in.aux == 1 + wg);
            CHECK(in.group == 4);  // 128 threads
          }
          if (!in.is_memory() || in.space != MemSpace::Global || in.op == Opcode::UTMALDG) continue;
          for (int l = 0; l < 32; ++l) {
            if (!(in.active_mask >> l & 1)) continue;
            const std::uint64_t addr = in.lane_address(l), bytes = in.access_bytes;
            if (in.op == Opcode::STG && addr >= c_base && addr + bytes <= c_end) {
              for (std::uint64_t b = 0; b < bytes; ++b) ++c_bytes[addr - c_base + b];
            } else if (addr >= partials && addr + bytes <= partials + 20 * tile_bytes) {
              const std::uint64_t tile = 12 + (addr - partials) / tile_bytes;
              const auto part = static_cast<std::uint32_t>((addr - partials) % tile_bytes / part_bytes);
              CHECK(part == wg);  // each warpgroup its own 64 rows' stripe
              if (in.op == Opcode::STG) stored[{tile, wg}] += bytes;
              else if (in.op == Opcode::LDG) loaded[{tile, wg}] += bytes;
              else FAIL("unexpected access to the partial tiles");
            } else if (addr >= flags && addr < flags + 20 * 2 * 4 && bytes == 4) {
              const std::uint64_t slot = (addr - flags) / 4;
              CHECK(slot % 2 == wg);  // each warpgroup its own counter
              const std::pair<std::uint64_t, std::uint32_t> key{12 + slot / 2, wg};
              if (in.op == Opcode::RED) ++reds[key];
              else if (in.op == Opcode::LDG) waits[key].insert(in.aux);
              else FAIL("unexpected access to the counters");
            } else {
              FAIL("global access outside C and the workspace: opcode " << static_cast<int>(in.op) << " addr " << addr);
            }
          }
        }
      CHECK(last.op == Opcode::EXIT);
    }
  }
  CHECK(mma_flops == info.flops);  // every (tile, k-tile) computed once
  // A read once per N tile, B once per cluster (multicast to both CTAs), as in the data-parallel grid.
  CHECK(tma_bytes == 4 * (p.m * p.k * 2) + 4 * (p.n * p.k * 2));
  std::uint64_t c_bad = 0;
  for (auto v : c_bytes) c_bad += v != 1;
  CHECK(c_bad == 0);  // each output element stored once, by the segment finishing its tile or a data-parallel CTA
  for (const auto& [tile, n] : peers)
    for (std::uint32_t wg = 0; wg < 2; ++wg) {
      INFO("tile " << tile << " warpgroup " << wg << ", " << n << " CTAs");
      CHECK(stored[{tile, wg}] == (n - 1) * part_bytes);
      CHECK(loaded[{tile, wg}] == (n - 1) * part_bytes);
      CHECK(reds[{tile, wg}] == n - 1);  // warp 0 of the warpgroup arrives once per segment but the last
      std::set<std::uint32_t> turns;
      for (std::uint32_t i = 1; i < n; ++i) turns.insert(i);
      CHECK(waits[{tile, wg}] == turns);
    }
  // The memset zeroes the 20 shared tiles' 2 counters each.
  const std::set<std::uint64_t> zeroed = zeroed_words(*trace->open_kernel(0));
  CHECK(zeroed.size() == 40);
  CHECK(*zeroed.begin() == flags);
}
