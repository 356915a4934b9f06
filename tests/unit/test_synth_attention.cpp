// Tests of the attention synthesizer (traces/synth/attention*.cpp): instruction and byte counts of the generated
// streams worked out here from the attention definition (every HMMA m16n8k16 is 16*8*16 multiply-adds, each tensor
// element read or written the stated number of times), the causal block structure, GQA addressing, the decode
// variant's paged reads and split heuristic, and the input checks.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "shipped_config.h"
#include "sim/core/types.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"
#include "traces/synth/attention.h"
#include "traces/synth/registry.h"

using namespace warpsim;
using Catch::Matchers::Contains;

namespace {

using warpsim::test::gpu;

constexpr std::uint64_t kArrayBase = 0x7f0000000000;  // the synthesizers' first array
constexpr double kMmaFlops = 2.0 * 16 * 8 * 16;       // one mma.sync m16n8k16

struct KernelTotals {
  KernelInfo info;
  std::map<Opcode, std::uint64_t> insts;
  std::uint64_t ldgsts_bytes = 0, ldg_bytes = 0, stg_bytes = 0, red_lanes = 0;
  std::map<std::uint64_t, std::set<std::uint64_t>> ldgsts_addresses;  // per CTA, lane addresses >= address_floor
  std::set<std::uint64_t> ldg_addresses;
  std::map<std::uint64_t, std::uint32_t> red_adds;  // lane address -> atomic adds to it
  std::uint32_t red_max_lines = 0;                  // most 128-byte lines one RED touches
  std::uint64_t ldgsts_bytes_above_floor = 0;
  double hgmma_flops = 0;                     // each warp's HGMMA is a quarter of its warpgroup's m x n x k
  std::uint64_t tma_bytes = 0, tma_landed_bytes = 0, expect_tx_bytes = 0;
  std::map<std::pair<DType, std::uint16_t>, std::uint64_t> hgmma_types;  // (dtype, k) -> HGMMAs
  std::map<std::uint64_t, std::uint64_t> tma_bytes_per_cta;
  bool every_warp_ends_with_exit = true;
  std::uint64_t n(Opcode op) const {
    const auto it = insts.find(op);
    return it == insts.end() ? 0 : it->second;
  }
};

KernelTotals scan(TraceSource& trace, std::size_t kernel_index, std::uint64_t address_floor = ~std::uint64_t{0}) {
  std::unique_ptr<KernelSource> kernel = trace.open_kernel(kernel_index);
  KernelTotals t;
  t.info = kernel->info();
  REQUIRE(check_kernel_info(t.info) == "");
  std::array<WarpInst, 128> buf{};
  for (std::uint64_t cta = 0; cta < t.info.grid.count(); ++cta) {
    std::unique_ptr<CtaSource> c = kernel->open_cta(cta);
    for (std::uint32_t w = 0; w < c->num_warps(); ++w) {
      std::unique_ptr<WarpStream> s = c->open_warp(w);
      Opcode last = Opcode::NOP;
      for (std::size_t got; (got = s->read(buf.data(), buf.size())) > 0;)
        for (std::size_t i = 0; i < got; ++i) {
          const WarpInst& in = buf[i];
          INFO("opcode " << opcode_info(in.op).name << " pc " << in.pc);
          REQUIRE(check_inst(in) == "");
          ++t.insts[in.op];
          last = in.op;
          const std::uint64_t bytes = std::uint64_t(in.active_lanes()) * in.access_bytes;
          if (in.op == Opcode::LDG) {
            t.ldg_bytes += bytes;
            for (int l = 0; l < kWarpSize; ++l)
              if (in.active_mask >> l & 1u) t.ldg_addresses.insert(in.lane_address(l));
          }
          if (in.op == Opcode::STG) t.stg_bytes += bytes;
          if (in.op == Opcode::RED) {
            t.red_lanes += in.active_lanes();
            std::set<std::uint64_t> lines;
            for (int l = 0; l < kWarpSize; ++l)
              if (in.active_mask >> l & 1u) {
                ++t.red_adds[in.lane_address(l)];
                lines.insert(in.lane_address(l) / 128);
              }
            t.red_max_lines = std::max(t.red_max_lines, static_cast<std::uint32_t>(lines.size()));
          }
          if (in.op == Opcode::HGMMA) {
            t.hgmma_flops += 2.0 * in.mma.m * in.mma.n * in.mma.k / 4;
            ++t.hgmma_types[{in.dtype, in.mma.k}];
          }
          if (in.op == Opcode::UTMALDG) {  // aux rows of group_stride bytes, landing in every CTA of its mask
            const std::uint64_t bytes = std::uint64_t{in.aux} * static_cast<std::uint64_t>(in.group_stride);
            const int ctas = in.mma.m ? __builtin_popcount(in.mma.m) : 1;
            t.tma_bytes += bytes;
            t.tma_landed_bytes += bytes * static_cast<std::uint64_t>(ctas);
            t.tma_bytes_per_cta[cta] += bytes;
          }
          if (in.op == Opcode::SYNCS_ARRIVE_TRANS64) t.expect_tx_bytes += in.aux;
          if (in.op == Opcode::LDGSTS) {
            t.ldgsts_bytes += bytes;
            for (int l = 0; l < kWarpSize; ++l)
              if ((in.active_mask >> l & 1u) && in.lane_address(l) >= address_floor) {
                t.ldgsts_addresses[cta].insert(in.lane_address(l));
                t.ldgsts_bytes_above_floor += in.access_bytes;
              }
          }
        }
      if (last != Opcode::EXIT) t.every_warp_ends_with_exit = false;
    }
  }
  return t;
}

std::unique_ptr<TraceSource> make(const std::map<std::string, std::string>& keys, const std::string& config = "a100_sxm") {
  return SynthRegistry::instance().make("attention", keys, gpu(config));
}

// HMMAs of one warp (CTA 0, warp 0) that sit between the first and the last MUFU of the stretch between two
// barriers, summed over the stretches, and all of its HMMAs: how far the MMAs are interleaved with exponentials.
struct Interleave {
  std::uint64_t among = 0, hmma = 0;
};
Interleave hmma_among_mufu(TraceSource& trace, std::size_t kernel_index) {
  std::unique_ptr<CtaSource> c = trace.open_kernel(kernel_index)->open_cta(0);
  std::unique_ptr<WarpStream> s = c->open_warp(0);
  std::vector<Opcode> ops;
  std::array<WarpInst, 128> buf{};
  for (std::size_t got; (got = s->read(buf.data(), buf.size())) > 0;)
    for (std::size_t i = 0; i < got; ++i) ops.push_back(buf[i].op);
  ops.push_back(Opcode::BAR);
  Interleave r;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] == Opcode::HMMA) ++r.hmma;
    if (ops[i] != Opcode::BAR) continue;
    std::size_t first = i, last = begin;
    for (std::size_t j = begin; j < i; ++j)
      if (ops[j] == Opcode::MUFU) first = std::min(first, j), last = j;
    for (std::size_t j = first; j < last; ++j) r.among += ops[j] == Opcode::HMMA;
    begin = i + 1;
  }
  return r;
}

}  // namespace

TEST_CASE("attention fa2 forward: every MMA is useful work, Q/K/V read and O/LSE written as the tiling implies",
          "[synth][attention]") {
  // 1 x 2 heads x 256 x 256, head_dim 128: 4*b*h*s*s*d = 67108864 FLOPs, each HMMA 4096 of them.
  const double b = 1, h = 2, s = 256, d = 128;
  auto trace = make({{"batch", "1"}, {"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}});
  REQUIRE(trace->num_kernels() == 1);
  const KernelTotals t = scan(*trace, 0);
  CHECK(t.every_warp_ends_with_exit);
  CHECK(static_cast<double>(t.n(Opcode::HMMA)) * kMmaFlops == 4 * b * h * s * s * d);
  CHECK(static_cast<double>(t.info.flops) == 4 * b * h * s * s * d);
  // flash-attention's sm80 tile for head_dim 128: 128 query rows per CTA, 4 warps: grid (2 row blocks, 1, 2 heads)
  CHECK(t.info.grid.x == 2);
  CHECK(t.info.grid.z == 2);
  CHECK(t.info.block.x == 128);
  // Each CTA reads its 128 Q rows once and all of its head's K and V (256 x 128 x 2 B each).
  const double q_bytes = b * h * s * d * 2, kv_head_bytes = s * d * 2;
  CHECK(static_cast<double>(t.ldgsts_bytes) == q_bytes + t.info.grid.count() * 2 * kv_head_bytes);
  // O once (16-bit) and the logsumexp of every row (fp32).
  CHECK(static_cast<double>(t.stg_bytes) == q_bytes + b * h * s * 4);
  // Online softmax: one MUFU.EX2 per score element at least (b*h*s*s / 32 lanes warp instructions).
  CHECK(static_cast<double>(t.n(Opcode::MUFU)) >= b * h * s * s / 32);
  CHECK(t.n(Opcode::SHFL) > 0);
  CHECK(t.n(Opcode::FSETP) == 0);  // nothing to mask: 256 is a multiple of the 64-key block
}

TEST_CASE("attention fa2 forward causal: only the blocks at or below the diagonal, the diagonal ones masked",
          "[synth][attention]") {
  auto full = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}});
  auto causal = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}, {"causal", "true"}});
  const KernelTotals f = scan(*full, 0), c = scan(*causal, 0);
  // 128-row query blocks over 64-key blocks: row block m sees key blocks 0 .. 2m+1, i.e. 2 + 4 = 6 of 2 x 4 = 8.
  CHECK(c.n(Opcode::HMMA) * 8 == f.n(Opcode::HMMA) * 6);
  // Masked blocks: the two per row block that cross its diagonal (keys past row m*128's limit), 2 row blocks x
  // 2 heads = 8 blocks of 128 x 64 scores, one select per score: 8 * 128 * 64 / 32 lanes.
  CHECK(c.n(Opcode::FSETP) == 8 * 128 * 64 / 32);
  CHECK(c.info.flops * 2 == f.info.flops);
}

TEST_CASE("attention fa2: the forward's P V MMAs sit among P's exponentials, the backward's dP after them, as in SASS",
          "[synth][attention]") {
  // The sm_90 SASS of PyTorch's FA2 kernels (validation/data/h100_sxm_2026-11-24/README.md): per iteration a warp
  // issues S = Q K^T (half its HMMAs), then P V's k-steps each right after the exponentials of its 16 columns of P,
  // so all but the last k-step's HMMAs lie among the MUFU.EX2 (hdim 128, 64-key blocks, 4 k-steps: 96 of 128); the
  // backward issues no MMA between its first and last exponential but the tail of S (4 of 320 at hdim 128).
  auto fwd = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}});
  const Interleave f = hmma_among_mufu(*fwd, 0);
  CHECK(f.hmma > 0);
  // 256 keys = 4 iterations of 2 x 4 k-steps (S, then P V): 32 HMMAs per k-step. Among: 3 P V k-steps per
  // iteration, and the last iteration's last one too, which the epilogue's MUFUs (1/l, log2 l) follow.
  REQUIRE(f.hmma == 4 * 8 * 32);
  CHECK(f.among == (4 * 3 + 1) * 32);
  auto bwd = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}, {"direction", "bwd"}});
  const Interleave b = hmma_among_mufu(*bwd, 1);
  CHECK(b.hmma > 0);
  CHECK(b.among == 0);
}

TEST_CASE("attention fa2 forward GQA: query heads of one group read the same K/V", "[synth][attention]") {
  // heads 4, kv_heads 2, 128 tokens, head_dim 64: Q (64 KiB) at the first array, K at +1 MiB, V at +2 MiB, O at +3 MiB.
  auto trace = make({{"heads", "4"}, {"kv_heads", "2"}, {"seqlen_q", "128"}, {"head_dim", "64"}});
  const KernelTotals t = scan(*trace, 0, kArrayBase + kMiB);
  REQUIRE(t.info.grid.count() == 4);  // one 128-row block per head: CTA id = head
  const auto& a = t.ldgsts_addresses;
  CHECK(a.at(0) == a.at(1));
  CHECK(a.at(2) == a.at(3));
  for (std::uint64_t addr : a.at(0)) CHECK(a.at(2).count(addr) == 0);
  for (std::uint64_t addr : a.at(0)) CHECK(addr < kArrayBase + 3 * kMiB);
  // Each CTA reads K and V of its KV head entirely: 2 x 128 x 64 x 2 B = 32 KiB in 16-byte pieces.
  CHECK(a.at(0).size() == 2 * 128 * 64 * 2 / 16);
}

TEST_CASE("attention fa3 forward: warp-specialised, every HGMMA useful, Q once and K/V once per 2-CTA cluster by TMA",
          "[synth][attention]") {
  // 1 x 2 heads, 256 queries x 352 keys, head_dim 128: FA3's hdim-128 tile is 128 x 176 (tile_size.h), so 2 query
  // blocks x 2 KV blocks, nothing padded: the HGMMAs' FLOPs are the problem's 4*b*h*sq*skv*d exactly.
  const double b = 1, h = 2, sq = 256, skv = 352, d = 128;
  auto trace = make({{"heads", "2"}, {"seqlen_q", "256"}, {"seqlen_kv", "352"}, {"head_dim", "128"}, {"variant", "fa3"}},
                    "h100_sxm");
  REQUIRE(trace->num_kernels() == 1);
  const KernelTotals t = scan(*trace, 0);
  CHECK(t.every_warp_ends_with_exit);
  CHECK(t.n(Opcode::HMMA) == 0);
  CHECK(t.hgmma_flops == 4 * b * h * sq * skv * d);
  CHECK(static_cast<double>(t.info.flops) == 4 * b * h * sq * skv * d);
  // A producer warpgroup and two 64-row consumer warpgroups; grid (query blocks, heads, batch).
  CHECK(t.info.block.x == 3 * 128);
  CHECK(t.info.grid.x == 2);
  CHECK(t.info.grid.y == 2);
  // Loads are TMA boxes only (no per-thread copies). Two query blocks (even): clusters of 2 CTAs along them
  // (hdim >= 128, not causal), each rank loading half of every K and V tile and multicasting it: each CTA reads
  // its 128 Q rows and half of its head's K and V, and receives all of them.
  CHECK(t.info.cluster.x == 2);
  CHECK(t.n(Opcode::LDGSTS) == 0);
  CHECK(t.n(Opcode::LDG) == 0);
  const double q_cta = 128 * d * 2, kv_head = skv * d * 2;
  for (const auto& [cta, bytes] : t.tma_bytes_per_cta) CHECK(static_cast<double>(bytes) == q_cta + kv_head);
  CHECK(t.tma_bytes_per_cta.size() == 4);
  CHECK(static_cast<double>(t.tma_landed_bytes) == 4 * (q_cta + 2 * kv_head));
  // Every byte TMA lands in a CTA is announced on its full barrier (else a consumer would wait forever or early).
  CHECK(t.expect_tx_bytes == t.tma_landed_bytes);
  // O once (16-bit) and the logsumexp of every row (fp32).
  CHECK(static_cast<double>(t.stg_bytes) == b * h * sq * d * 2 + b * h * sq * 4);
  // Online softmax: one MUFU.EX2 per score at least; asynchronous MMA: each consumer warp commits one group per
  // GEMM (2 per KV block) and waits on them.
  CHECK(static_cast<double>(t.n(Opcode::MUFU)) >= b * h * sq * skv / 32);
  CHECK(t.n(Opcode::WARPGROUP_COMMIT) == 4 /*CTAs*/ * 8 /*consumer warps*/ * 2 /*blocks*/ * 2);
  CHECK(t.n(Opcode::FSETP) == 0);  // 352 keys are two whole 176-key blocks
}

TEST_CASE("attention fa3 forward causal: the 128-key tile, only blocks at or below the diagonal", "[synth][attention]") {
  auto full = make({{"heads", "2"}, {"seqlen_q", "512"}, {"head_dim", "128"}, {"variant", "fa3"}}, "h100_sxm");
  auto causal =
      make({{"heads", "2"}, {"seqlen_q", "512"}, {"head_dim", "128"}, {"variant", "fa3"}, {"causal", "true"}}, "h100_sxm");
  const KernelTotals f = scan(*full, 0), c = scan(*causal, 0);
  // Causal: 128 x 128 tiles (tile_size.h), query block m sees key blocks 0..m: 1+2+3+4 = 10 of 16 per head; one
  // diagonal block per query block masked: 4 x 2 heads blocks of 128 x 128 scores, one select each.
  CHECK(c.hgmma_flops == 2.0 * 128 * 128 * 128 * 2 * 10 * 2);
  CHECK(c.n(Opcode::FSETP) == 8 * 128 * 128 / 32);
  // Non-causal: 128 x 176 tiles, 512 keys = 2 whole blocks and one of 160 (masked): 4 query blocks x 2 heads.
  CHECK(f.n(Opcode::FSETP) == 8 * 128 * 176 / 32);
  CHECK(c.info.flops * 2 == f.info.flops);
  // No cluster when causal; not when the query blocks are odd (FA3's Use_cluster); K/V then once per CTA.
  CHECK(c.info.cluster.x == 1);
  auto odd = make({{"heads", "2"}, {"seqlen_q", "384"}, {"head_dim", "128"}, {"variant", "fa3"}}, "h100_sxm");
  const KernelTotals o = scan(*odd, 0);
  CHECK(o.info.cluster.x == 1);
  CHECK(o.expect_tx_bytes == o.tma_bytes);
  CHECK(o.tma_bytes == o.tma_landed_bytes);
}

TEST_CASE("attention fa2 backward: three kernels, 2.5x the forward MMAs, dQ reduced once per KV block",
          "[synth][attention]") {
  const double b = 1, h = 2, s = 256, d = 128;
  auto trace = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}, {"direction", "bwd"}});
  REQUIRE(trace->num_kernels() == 3);
  const KernelTotals pre = scan(*trace, 0), main = scan(*trace, 1), convert = scan(*trace, 2);
  // Preprocessing: reads dO and O once, writes D (fp32 per row) and clears dQaccum (fp32).
  CHECK(static_cast<double>(pre.ldg_bytes) == 2 * b * h * s * d * 2);
  CHECK(static_cast<double>(pre.stg_bytes) == b * h * s * 4 + b * h * s * d * 4);
  // Main: S, dP, dV, dQ, dK: five matmuls of 2*s*s*d per head = 2.5 x the forward's two.
  CHECK(static_cast<double>(main.n(Opcode::HMMA)) * kMmaFlops == 2.5 * 4 * b * h * s * s * d);
  CHECK(static_cast<double>(main.info.flops) == 2.5 * 4 * b * h * s * s * d);
  // head_dim 128: KV blocks of 128 keys: grid (2 KV blocks, 1, 2 heads); every dQ element gets one atomic add per
  // KV block.
  CHECK(main.info.grid.count() == 4);
  CHECK(static_cast<double>(main.red_lanes) == 2 * b * h * s * d);
  // Each RED is one coalesced 128-byte line (flash-attention's atomic-add partition: a warp's 32 threads on 32
  // consecutive floats), and every dQaccum element is added to once per KV block.
  CHECK(main.red_max_lines == 1);
  CHECK(static_cast<double>(main.red_adds.size()) == b * h * s * d);
  CHECK(std::all_of(main.red_adds.begin(), main.red_adds.end(), [](const auto& a) { return a.second == 2; }));
  CHECK(main.every_warp_ends_with_exit);
  // Conversion: dQaccum (fp32) in, dQ (16-bit) out.
  CHECK(static_cast<double>(convert.ldg_bytes) == b * h * s * d * 4);
  CHECK(static_cast<double>(convert.stg_bytes) == b * h * s * d * 2);

  auto both = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}, {"direction", "fwd_bwd"}});
  CHECK(both->num_kernels() == 4);
  // Causal backward: KV block n (128 keys) is seen by the 64-row query blocks from 2n on: 4 + 2 of 2 x 4.
  auto causal = make({{"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "128"}, {"direction", "bwd"}, {"causal", "true"}});
  CHECK(scan(*causal, 1).n(Opcode::HMMA) * 8 == main.n(Opcode::HMMA) * 6);
}

TEST_CASE("attention fa2 backward: head_dim 256 drops Q double buffering where shared memory is short",
          "[synth][attention]") {
  // 64x64 tiles: Q double-buffered is 2*32 + 32 (dO) + 32 (K) + 32 (V) + 8 (P) + 8 (dS) = 176 KiB; A100 allows
  // 163 KiB per CTA, H100 227 KiB.
  auto a100 = make({{"heads", "1"}, {"seqlen_q", "128"}, {"head_dim", "256"}, {"direction", "bwd"}}, "a100_sxm");
  auto h100 = make({{"heads", "1"}, {"seqlen_q", "128"}, {"head_dim", "256"}, {"direction", "bwd"}}, "h100_sxm");
  CHECK(a100->open_kernel(1)->info().shared_mem_bytes == 144 * 1024);
  CHECK(h100->open_kernel(1)->info().shared_mem_bytes == 176 * 1024);
}

TEST_CASE("attention decode: paged K/V read once per KV head, every page's table entry read, splits combined",
          "[synth][attention]") {
  // batch 2, 8 query heads over 2 KV heads, one query token, 1024 cached tokens, head_dim 128, 16-token pages.
  const double b = 2, kvh = 2, skv = 1024, d = 128;
  auto trace = make({{"variant", "decode"}, {"batch", "2"}, {"heads", "8"}, {"kv_heads", "2"}, {"seqlen_q", "1"},
                     {"seqlen_kv", "1024"}, {"head_dim", "128"}, {"page_size", "16"}});
  // Arrays: Q (4 KiB) at the base, the K cache at +1 MiB, the V cache at +2 MiB, the page table at +3 MiB.
  const KernelTotals t = scan(*trace, 0, kArrayBase + kMiB);
  // flash-attention's heuristic: 2 x 2 CTAs (the group's 4 heads are one 64-row block) for 108 x 2 slots and 8
  // KV blocks of 128: eligible splits 1, 2, 3, 4, 8 (5 to 7 leave 2 blocks per split, as 4 does); 8 fills the most
  // (32 CTAs, 32/216 = 0.148) and 4 (0.074) is below 85% of that.
  REQUIRE(trace->num_kernels() == 2);
  CHECK(t.info.grid.y == 8);
  CHECK(t.info.grid.count() == 2 * 2 * 8);
  // Every K and V element once: 2 * b * kv_heads * skv * d * 2 B, no 16-byte piece twice.
  std::set<std::uint64_t> kv;
  for (const auto& [cta, addrs] : t.ldgsts_addresses)
    for (std::uint64_t a : addrs)
      if (a < kArrayBase + 3 * kMiB) CHECK(kv.insert(a).second);
  CHECK(static_cast<double>(kv.size()) * 16 == 2 * b * kvh * skv * d * 2);
  // The page table: b * 1024/16 entries of 4 bytes, each read.
  std::set<std::uint64_t> table;
  for (std::uint64_t a : t.ldg_addresses)
    if (a >= kArrayBase + 3 * kMiB && a < kArrayBase + 4 * kMiB) table.insert(a);
  CHECK(table.size() == 2 * 1024 / 16);
  // Combine: one fp32 partial row per split read back for each of the b * heads output rows.
  const KernelTotals combine = scan(*trace, 1);
  CHECK(static_cast<double>(combine.stg_bytes) == b * 8 * d * 2);
}

TEST_CASE("attention decode over an fp8 KV cache: K/V read once at one byte, converted once in shared memory, the "
          "same MMAs", "[synth][attention]") {
  const std::map<std::string, std::string> keys{{"variant", "decode"}, {"batch", "2"}, {"heads", "8"}, {"kv_heads", "2"},
                                                {"seqlen_q", "1"}, {"seqlen_kv", "1024"}, {"head_dim", "128"},
                                                {"page_size", "16"}, {"dtype", "bf16"}};
  std::map<std::string, std::string> fp8_keys = keys;
  fp8_keys["kv_dtype"] = "fp8";
  auto bf16 = make(keys), fp8 = make(fp8_keys);
  const KernelTotals a = scan(*bf16, 0), t = scan(*fp8, 0, kArrayBase + kMiB);
  CHECK(t.info.name.find("kvfp8") != std::string::npos);
  CHECK(t.info.grid.count() == a.info.grid.count());  // the same splits
  // Every K and V element once, at one byte: 2 x batch x kv_heads x 1024 x 128 bytes, no 16-byte piece twice.
  std::set<std::uint64_t> kv;
  for (const auto& [cta, addrs] : t.ldgsts_addresses)
    for (std::uint64_t addr : addrs)
      if (addr < kArrayBase + 3 * kMiB) CHECK(kv.insert(addr).second);
  CHECK(kv.size() * 16 == 2 * 2 * 2 * 1024 * 128);
  CHECK(a.ldgsts_bytes - t.ldgsts_bytes == 2 * 2 * 2 * 1024 * 128);  // K/V bytes halve, Q's stay
  CHECK(t.n(Opcode::HMMA) == a.n(Opcode::HMMA));
  CHECK(t.n(Opcode::LDSM) == a.n(Opcode::LDSM));  // the MMAs read 16-bit tiles as before
  // Each fp8 byte a CTA copies in is read from shared memory once (LDS.128 per lane) and written back at two bytes
  // (two STS.128): the conversion work is the K/V bytes', not the warps' (every warp reads the whole tile).
  const std::uint64_t kv_fp8_bytes = 2 * 2 * 2 * 1024 * 128;
  CHECK((t.n(Opcode::LDS) - a.n(Opcode::LDS)) * kWarpSize * 16 == kv_fp8_bytes);
  CHECK((t.n(Opcode::STS) - a.n(Opcode::STS)) * kWarpSize * 16 == 2 * kv_fp8_bytes);
  // Shared memory: the 16-bit K and V tiles plus their fp8 landing tiles (64 x 128 Q, 128 x 128 K and V).
  CHECK(a.info.shared_mem_bytes == (64 + 2 * 128) * 128 * 2);
  CHECK(t.info.shared_mem_bytes == a.info.shared_mem_bytes + 2 * 128 * 128);
  // What an fp8 cache is built for: decode and the forwards, not the backward.
  std::map<std::string, std::string> bwd = fp8_keys;
  bwd["variant"] = "fa2";
  bwd["direction"] = "bwd";
  bwd["seqlen_q"] = "128";
  bwd["seqlen_kv"] = "128";
  CHECK_THROWS_WITH(make(bwd), Contains("key 'kv_dtype'") && Contains("fa2 bwd"));
}

TEST_CASE("attention fa3 forward in fp8: e4m3 Q, K and V by TMA, fp8 warpgroup MMAs of k32, V transposed once per "
          "CTA by the producer warpgroup", "[synth][attention]") {
  // 1 x 2 heads, 256 queries x 448 keys, head_dim 128: FA3's fp8 hdim-128 tile is 128 x 224 (tile_size.h, element
  // size 1), so 2 query blocks x 2 KV blocks, nothing padded.
  const double b = 1, h = 2, sq = 256, skv = 448, d = 128;
  const std::map<std::string, std::string> keys{{"heads", "2"},      {"seqlen_q", "256"}, {"seqlen_kv", "448"},
                                                {"head_dim", "128"}, {"variant", "fa3"},  {"dtype", "bf16"}};
  std::map<std::string, std::string> fp8_keys = keys;
  fp8_keys["kv_dtype"] = "fp8";
  auto bf16_trace = make(keys, "h100_sxm"), fp8_trace = make(fp8_keys, "h100_sxm");
  const KernelTotals a = scan(*bf16_trace, 0), t = scan(*fp8_trace, 0);
  CHECK(t.every_warp_ends_with_exit);
  CHECK(t.info.name.find("_e4m3_obf16_hdim128_128x224_") != std::string::npos);
  // Every HGMMA fp8 with k = 32, and all of them useful: the problem's 4*b*h*sq*skv*d FLOPs.
  REQUIRE(t.hgmma_types.size() == 1);
  CHECK(t.hgmma_types.begin()->first == std::make_pair(DType::FP8, std::uint16_t{32}));
  CHECK(t.hgmma_flops == 4 * b * h * sq * skv * d);
  CHECK(a.hgmma_types.begin()->first == std::make_pair(DType::BF16, std::uint16_t{16}));
  // No cluster for fp8 at hdim 128 (FA3 clusters fp8 only at hdim 192): each of the 4 CTAs TMA-loads its 128 Q rows
  // and its head's K and V at one byte, and every byte is announced on a full barrier.
  CHECK(t.info.cluster.x == 1);
  CHECK(t.tma_bytes_per_cta.size() == 4);
  for (const auto& [cta, bytes] : t.tma_bytes_per_cta) CHECK(static_cast<double>(bytes) == 128 * d + 2 * skv * d);
  CHECK(t.expect_tx_bytes == t.tma_landed_bytes);
  // V transposed once per CTA: LDSM.x4.T (512 bytes a warp) of every V byte, and as many 512-byte stores; the 16-bit
  // kernel has no LDSM (its MMAs read shared memory themselves).
  CHECK(a.n(Opcode::LDSM) == 0);
  CHECK(static_cast<double>(t.n(Opcode::LDSM)) * 512 == 4 * skv * d);
  CHECK(t.n(Opcode::STS) - a.n(Opcode::STS) == t.n(Opcode::LDSM));  // the output's staging stores are alike
  // Shared memory: Q 128 x 128, two stages each of K, V and the transposed V, 224 x 128 bytes.
  CHECK(t.info.shared_mem_bytes == 128 * 128 + 3 * 2 * 224 * 128);
  // O in bf16 and the fp32 logsumexp, as the 16-bit kernel.
  CHECK(static_cast<double>(t.stg_bytes) == b * h * sq * d * 2 + b * h * sq * 4);
  CHECK(t.info.flops == a.info.flops);
}

TEST_CASE("attention fa2 forward over fp8 K/V: each query block's CTA copies and converts its head's K/V at one byte",
          "[synth][attention]") {
  // 2 heads x 256 tokens, head_dim 64: 128-row query blocks (2 per head), 128-key blocks; K/V of a head 2 x 256 x 64.
  const std::map<std::string, std::string> keys{{"batch", "1"}, {"heads", "2"}, {"seqlen_q", "256"}, {"head_dim", "64"},
                                                {"dtype", "bf16"}};
  std::map<std::string, std::string> fp8_keys = keys;
  fp8_keys["kv_dtype"] = "fp8";
  auto bf16 = make(keys), fp8 = make(fp8_keys);
  const KernelTotals a = scan(*bf16, 0), t = scan(*fp8, 0);
  const std::uint64_t kv_fp8_bytes = 2 * 2 * 256 * 64, reads = 2;  // each head's K/V read by its 2 query blocks
  CHECK(a.ldgsts_bytes - t.ldgsts_bytes == kv_fp8_bytes * reads);
  CHECK((t.n(Opcode::LDS) - a.n(Opcode::LDS)) * kWarpSize * 16 == kv_fp8_bytes * reads);
  CHECK(t.n(Opcode::HMMA) == a.n(Opcode::HMMA));
  // sm_80 has no e4m3 conversion: its sequence is longer than sm_90's for the same tiles.
  const KernelTotals h = scan(*make(fp8_keys, "h100_sxm"), 0);
  CHECK(t.n(Opcode::SHF) > h.n(Opcode::SHF));
}

TEST_CASE("attention decode: without KV splits batch x heads may pass 65535 (grid.y and grid.z hold them apart)",
          "[synth][attention]") {
  // 256 x 512 = 131072 CTAs of one 64-row block fill 108 x 2 slots: no split, grid (1, 256 batch, 512 heads),
  // within CUDA's grid.y and grid.z limits though batch x heads is above 65535.
  auto trace = make({{"variant", "decode"}, {"batch", "256"}, {"heads", "512"}, {"seqlen_q", "1"}, {"seqlen_kv", "16"},
                     {"head_dim", "64"}, {"page_size", "16"}});
  REQUIRE(trace->num_kernels() == 1);  // no combine kernel: one split
  const KernelInfo info = trace->open_kernel(0)->info();
  CHECK(info.grid.x == 1);
  CHECK(info.grid.y == 256);
  CHECK(info.grid.z == 512);
}

TEST_CASE("attention decode: num_splits_heuristic as flash-attention picks", "[synth][attention]") {
  using warpsim::synth::attn::num_splits_heuristic;
  // 200 CTAs >= 0.8 x 216 slots: no split.
  CHECK(num_splits_heuristic(200, 216, 32, 128) == 1);
  // 64 CTAs, 32 KV blocks: efficiencies 64s/216 / ceil(.): s=3 gives 192/216 = 0.889; the best eligible is s=16
  // or 32 (0.948); 0.889 >= 0.85 x 0.948 and s=3 is the smallest such.
  CHECK(num_splits_heuristic(64, 216, 32, 128) == 3);
  // 8 CTAs, 8 KV blocks: at most 8 splits, 64/216 = 0.296 is the best and the smallest above 85% of it.
  CHECK(num_splits_heuristic(8, 216, 8, 128) == 8);
}

TEST_CASE("attention: bad keys give one clear error", "[synth][attention][bad input]") {
  auto error_of = [](const std::map<std::string, std::string>& keys) -> std::string {
    try {
      make(keys);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error_of({{"heads", "8"}, {"seqlen_q", "64"}, {"head_dim", "96"}}),
             Contains("head_dim") && Contains("64, 128 or 256"));
  CHECK_THAT(error_of({{"heads", "8"}, {"kv_heads", "3"}, {"seqlen_q", "64"}, {"head_dim", "64"}}),
             Contains("kv_heads") && Contains("divide heads"));
  // FlashAttention-3 needs TMA and warpgroup MMA (make() defaults to the A100 config), and is forward only.
  CHECK_THAT(error_of({{"heads", "8"}, {"seqlen_q", "64"}, {"head_dim", "64"}, {"variant", "fa3"}}),
             Contains("fa3") && Contains("sm_90") && Contains("sm_80"));
  try {
    make({{"heads", "8"}, {"seqlen_q", "64"}, {"head_dim", "64"}, {"variant", "fa3"}, {"direction", "bwd"}}, "h100_sxm");
    FAIL("fa3 backward accepted");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains("direction") && Contains("forward only"));
  }
  CHECK_THAT(error_of({{"heads", "8"}, {"seqlen_q", "1"}, {"head_dim", "64"}, {"variant", "decode"}, {"direction", "bwd"}}),
             Contains("direction"));
  CHECK_THAT(error_of({{"heads", "8"}, {"seqlen_q", "64"}, {"head_dim", "64"}, {"causal", "maybe"}}),
             Contains("causal") && Contains("true or false"));
  CHECK_THAT(error_of({{"heads", "8"}, {"seqlen_q", "1"}, {"head_dim", "64"}, {"variant", "decode"}, {"page_size", "24"}}),
             Contains("page_size") && Contains("multiple of 16"));
  CHECK_THAT(error_of({{"heads", "8"}, {"seq_q", "64"}, {"head_dim", "64"}}), Contains("seq_q"));
  // Sizes: Q of 65535 x 2^24 x 65535 x 256 x 2 B wraps 2^64; 512 x 2^24 x 1 x 64 x 2 B is 2^40 exactly; a decode
  // cache of 65535 sequences of one 2^20-token page x 64 x 2 B is 65535 x 2^27 B. Each names the keys of its array.
  CHECK_THAT(error_of({{"batch", "65535"}, {"heads", "65535"}, {"seqlen_q", "16777216"}, {"head_dim", "256"}}),
             Contains("batch x seqlen_q x heads x head_dim") && Contains("more than 2^64") && Contains("below 2^40 bytes"));
  CHECK_THAT(error_of({{"batch", "512"}, {"heads", "1"}, {"seqlen_q", "16777216"}, {"head_dim", "64"}}),
             Contains("batch x seqlen_q x heads x head_dim") && Contains("1099511627776 bytes"));
  CHECK_THAT(error_of({{"batch", "65535"}, {"heads", "1"}, {"seqlen_q", "1"}, {"seqlen_kv", "16"}, {"head_dim", "64"},
                       {"variant", "decode"}, {"page_size", "1048576"}}),
             Contains("page_size") && Contains("kv_heads") && Contains("8795958804480 bytes"));
  CHECK_THAT(error_of({{"seqlen_q", "64"}, {"head_dim", "64"}}), Contains("heads") && Contains("required"));
}
