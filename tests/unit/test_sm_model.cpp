// SM model: address coalescing, occupancy, warp-scheduler policies, and end-to-end timing of small hand-built
// kernels on a one-SM H100 (configs/h100_sxm.yaml with overrides) under the plain C++ driver.
// Expected values are derived by hand from the inputs and the config; the arithmetic is in the comments.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <cstdint>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/slots/async_copy.h"
#include "models/sm/core/warp.h"
#include "models/sm/memory/coalescer.h"
#include "sim/slots/l1_cache.h"
#include "models/sm/scheduler/warp_scheduler.h"
#include "sim/slots/sm.h"
#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/registry/registry.h"
#include "sim/core/probe.h"
#include "sim/core/simulation.h"
#include "sim/slots/build_context.h"
#include "sim/slots/memory.h"
#include "sim/stats/stats.h"
#include "sim/trace/inst.h"
#include "sim/trace/source.h"
#include "traces/synth/registry.h"

using namespace warpsim;
using Catch::Matchers::Contains;

#ifndef WARPSIM_SOURCE_DIR
#error "tests/CMakeLists.txt must define WARPSIM_SOURCE_DIR for unit_tests"
#endif

namespace {

// ---- instruction builders -------------------------------------------------------------------------------------

WarpInst mem_inst(Opcode op, std::uint64_t base, std::int32_t stride, std::uint8_t bytes) {
  WarpInst in;
  in.op = op;
  in.space = MemSpace::Global;
  in.addr_mode = AddrMode::Strided;
  in.base = base;
  in.stride = stride;
  in.access_bytes = bytes;
  return in;
}

WarpInst ffma(std::uint16_t dst, std::uint16_t a, std::uint16_t b, std::uint16_t c) {
  WarpInst in;
  in.op = Opcode::FFMA;
  in.num_dst = 1;
  in.dst[0] = dst;
  in.num_src = 3;
  in.src[0] = a;
  in.src[1] = b;
  in.src[2] = c;
  return in;
}

WarpInst hmma(DType t, MmaShape shape, std::uint16_t d, std::uint16_t a, std::uint16_t b, std::uint16_t c) {
  WarpInst in;
  in.op = Opcode::HMMA;
  in.dtype = t;
  in.mma = shape;
  in.num_dst = 1;
  in.dst[0] = d;
  in.num_src = 3;
  in.src[0] = a;
  in.src[1] = b;
  in.src[2] = c;
  return in;
}

// Warpgroup MMA m64nNk16 accumulating into R8..R11 (as destinations and sources, as emit_hgmma writes it).
WarpInst hgmma(DType t, std::uint16_t n) {
  WarpInst in;
  in.op = Opcode::HGMMA;
  in.dtype = t;
  in.mma = MmaShape{64, n, 16};
  in.num_dst = in.num_src = 4;
  for (std::uint16_t i = 0; i < 4; ++i) in.dst[i] = in.src[i] = static_cast<std::uint16_t>(8 + i);
  return in;
}

WarpInst sync_op(Opcode op, std::uint32_t aux = 0) {
  WarpInst in;
  in.op = op;
  in.aux = aux;
  return in;
}

WarpInst ldg(std::uint16_t dst, std::uint64_t addr) {  // every lane reads the same 4 bytes
  WarpInst in = mem_inst(Opcode::LDG, addr, 0, 4);
  in.num_dst = 1;
  in.dst[0] = dst;
  return in;
}

WarpInst stg(std::uint64_t addr, std::uint16_t src) {  // every lane writes the same 4 bytes
  WarpInst in = mem_inst(Opcode::STG, addr, 0, 4);
  in.num_src = 1;
  in.src[0] = src;
  return in;
}

WarpInst bar() {
  WarpInst in;
  in.op = Opcode::BAR;
  return in;
}

std::vector<WarpInst> dependent_ffma_chain(int n) {  // R1 = R1 * R2 + R3, n times
  return std::vector<WarpInst>(static_cast<std::size_t>(n), ffma(1, 1, 2, 3));
}

std::vector<WarpInst> independent_ffmas(int n) {  // R(10 + i % 64) = R2 * R3 + R4: no RAW, WAW 64 apart
  std::vector<WarpInst> v;
  for (int i = 0; i < n; ++i) v.push_back(ffma(static_cast<std::uint16_t>(10 + i % 64), 2, 3, 4));
  return v;
}

// ---- kernels, configs and runs ---------------------------------------------------------------------------------

// One kernel of one CTA; warps[w] is warp w's instruction list. Block = 32 threads per warp.
InMemoryTrace one_cta_trace(const std::vector<std::vector<WarpInst>>& warps, std::uint32_t regs = 32,
                            std::uint32_t smem = 0, const std::string& name = "k") {
  InMemoryKernel k;
  k.info.name = name;
  k.info.grid = Dim3{1, 1, 1};
  k.info.block = Dim3{static_cast<std::uint32_t>(32 * warps.size()), 1, 1};
  k.info.registers_per_thread = regs;
  k.info.shared_mem_bytes = smem;
  k.info.target_arch = "sm_90";
  std::vector<InMemoryKernel::Warp> cta;
  for (const auto& insts : warps) cta.push_back(InMemoryKernel::Warp{insts, {}});
  k.ctas.push_back(std::move(cta));
  return InMemoryTrace({std::move(k)}, name);
}

std::string h100_path() { return std::string(WARPSIM_SOURCE_DIR) + "/configs/h100_sxm.yaml"; }

// A small, known H100: one SM, two L2 slices, two HBM channels, FP32 pipe latency 6 and issue interval 2, and
// no instruction-fetch model (the hand-built kernels here have no code layout: every pc is 0); the
// "instruction fetch" tests turn it back on.
Config small_h100(std::vector<std::string> extra = {}) {
  std::vector<std::string> ov = {"sm.count=1", "l2.slices=2", "hbm.channels=2", "sm.pipes.fp32.latency=6",
                                 "sm.pipes.fp32.issue_interval=2", "sm.icache.l0_size=0B"};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return Config::load(h100_path(), ov, Registry::instance());
}

KernelResult run_one(const Config& cfg, InMemoryTrace& trace) {
  Gpu g(cfg);
  RunOptions opt;
  RunResult r = g.run(trace, run_without_systemc, opt);
  REQUIRE(r.kernels.size() == 1);
  return r.kernels[0];
}

KernelResult run_warps(const Config& cfg, const std::vector<std::vector<WarpInst>>& warps) {
  InMemoryTrace t = one_cta_trace(warps);
  return run_one(cfg, t);
}

std::uint64_t stall(const KernelResult& k, const std::string& name) {
  for (const auto& s : k.stalls)
    if (s.first == name) return s.second;
  FAIL("no stall counter named " << name);
  return 0;
}

std::uint64_t stall_sum(const KernelResult& k) {
  std::uint64_t s = 0;
  for (const auto& x : k.stalls) s += x.second;
  return s;
}

std::string stalls_str(const KernelResult& k) {
  std::string s = "cycles=" + std::to_string(k.cycles);
  for (const auto& x : k.stalls) s += " " + x.first + "=" + std::to_string(x.second);
  return s;
}

// The InputError message of a run, or "" when it did not throw one.
std::string input_error_of(const Config& cfg, InMemoryTrace& trace) {
  Gpu g(cfg);
  RunOptions opt;
  try {
    g.run(trace, run_without_systemc, opt);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ==== coalesce() =================================================================================================

TEST_CASE("coalesce: fully coalesced 32 x 4 B is one line of four sectors", "[sm][coalesce]") {
  std::vector<LineAccess> out;
  coalesce(mem_inst(Opcode::LDG, 0x10000, 4, 4), 128, 32, out);  // bytes 0x10000 .. 0x1007f
  REQUIRE(out.size() == 1);
  CHECK(out[0].line_addr == 0x10000);
  CHECK(out[0].sector_mask == 0xfu);
  CHECK(out[0].bytes == 128);
}

TEST_CASE("coalesce: 32 x 16 B is four full lines in lane order", "[sm][coalesce]") {
  std::vector<LineAccess> out;
  coalesce(mem_inst(Opcode::LDG, 0x2000, 16, 16), 128, 32, out);  // 512 bytes = 4 lines of 8 lanes each
  REQUIRE(out.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(out[i].line_addr == 0x2000 + 128 * i);
    CHECK(out[i].sector_mask == 0xfu);
    CHECK(out[i].bytes == 128);
  }
}

TEST_CASE("coalesce: stride 128 B touches 32 lines, one sector each", "[sm][coalesce]") {
  std::vector<LineAccess> out;
  coalesce(mem_inst(Opcode::LDG, 0x100040, 128, 4), 128, 32, out);  // offset 0x40 in each line = sector 2
  REQUIRE(out.size() == 32);
  for (std::size_t i = 0; i < 32; ++i) {
    CAPTURE(i);
    CHECK(out[i].line_addr == 0x100000 + 128 * i);
    CHECK(out[i].sector_mask == 0x4u);
    CHECK(out[i].bytes == 4);
  }
  // Negative stride: lane 0 first, lines in decreasing order.
  coalesce(mem_inst(Opcode::LDG, 0x100000 + 31 * 128, -128, 4), 128, 32, out);
  REQUIRE(out.size() == 32);
  CHECK(out[0].line_addr == 0x100000 + 31 * 128);
  CHECK(out[31].line_addr == 0x100000);
}

TEST_CASE("coalesce: remembered patterns give what the lanes give, at every base and for every mode", "[sm][coalesce]") {
  // coalesce() remembers each address pattern keyed by the base modulo the line: recurring patterns at bases a
  // line apart must meet the remembered lines, shifted; bases at other offsets, other masks, strides, deltas,
  // widths and line or sector sizes must not. Negative strides and deltas put lines below the base's line.
  std::mt19937_64 rng(20261125);
  std::array<std::array<std::int32_t, kWarpSize>, 3> delta_sets{};
  for (auto& set : delta_sets)
    for (auto& d : set) d = static_cast<std::int32_t>(rng() % 2048) - 512;
  std::vector<LineAccess> remembered, fresh;
  for (int round = 0; round < 4000; ++round) {
    const int p = static_cast<int>(rng() % 12);
    WarpInst in = mem_inst(Opcode::LDG, 0, 4, static_cast<std::uint8_t>(std::array<int, 4>{4, 8, 16, 2}[p % 4]));
    switch (p % 3) {
      case 0:
        in.stride = std::array<std::int32_t, 4>{4, -16, 128, 0}[p % 4];
        break;
      case 1:
        in.addr_mode = AddrMode::Strided2D;
        in.group = static_cast<std::uint8_t>(4u << (p % 2));
        in.stride = 16;
        in.group_stride = p % 4 ? 256 : -4096;
        break;
      default:
        in.addr_mode = AddrMode::Deltas;
        in.deltas = delta_sets[static_cast<std::size_t>(p) % delta_sets.size()].data();
    }
    const std::uint32_t line = rng() % 5 == 0 ? 64 : 128, sector = rng() % 7 == 0 ? 16 : 32;
    in.base = (1u << 20) + line * (rng() % 256) + (rng() % 3 == 0 ? rng() % line : 0);
    in.active_mask = rng() % 4 == 0 ? static_cast<std::uint32_t>(rng()) : ~0u;
    coalesce(in, line, sector, remembered);
    coalesce_lanes(in, line, sector, fresh);
    INFO("round " << round << ", pattern " << p << ", base " << in.base << ", line " << line << ", sector " << sector);
    REQUIRE(remembered.size() == fresh.size());
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      CHECK(remembered[i].line_addr == fresh[i].line_addr);
      CHECK(remembered[i].sector_mask == fresh[i].sector_mask);
      CHECK(remembered[i].bytes == fresh[i].bytes);
    }
  }
}

TEST_CASE("coalesce: the last line of the 64-bit address space is one line, not a wrap to 0", "[sm][coalesce]") {
  // Issue 6: the address of the next line wrapped to 0 here (UBSan: shift exponent 4294967292).
  std::vector<LineAccess> out;
  WarpInst in = mem_inst(Opcode::LDG, ~std::uint64_t{0} - 127, 4, 4);  // 32 x 4 B: the whole last line
  coalesce(in, 128, 32, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].line_addr == ~std::uint64_t{0} - 127);
  CHECK(out[0].sector_mask == 0xfu);
  CHECK(out[0].bytes == 128);

  in = mem_inst(Opcode::LDG, ~std::uint64_t{0} - 15, 0, 16);  // the last 16 bytes: sector 3 only
  in.active_mask = 1;
  coalesce(in, 128, 32, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].sector_mask == 0x8u);
  CHECK(out[0].bytes == 16);
}

TEST_CASE("coalesce: misaligned accesses straddling a sector and a line boundary touch both", "[sm][coalesce]") {
  std::vector<LineAccess> out;
  WarpInst in = mem_inst(Opcode::LDG, 0x1000 + 124, 0, 8);  // bytes 0x107c..0x1083: line 0x1000 s3 + line 0x1080 s0
  in.active_mask = 1;
  coalesce(in, 128, 32, out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].line_addr == 0x1000);
  CHECK(out[0].sector_mask == 0x8u);
  CHECK(out[0].bytes == 4);  // 0x107c..0x107f
  CHECK(out[1].line_addr == 0x1080);
  CHECK(out[1].sector_mask == 0x1u);
  CHECK(out[1].bytes == 4);  // 0x1080..0x1083

  in.base = 0x1000 + 28;  // bytes 28..35 of the line: sectors 0 and 1, one line
  coalesce(in, 128, 32, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].line_addr == 0x1000);
  CHECK(out[0].sector_mask == 0x3u);
  CHECK(out[0].bytes == 8);

  // All 32 lanes, 8 B each at stride 8 from offset 124: 256 bytes over 0x107c..0x117b, i.e. line 0x1000
  // (4 B, sector 3), line 0x1080 (128 B, all sectors), line 0x1100 (124 B: 0x1100..0x117b, all sectors).
  WarpInst all = mem_inst(Opcode::LDG, 0x1000 + 124, 8, 8);
  coalesce(all, 128, 32, out);
  REQUIRE(out.size() == 3);
  CHECK(out[0].line_addr == 0x1000);
  CHECK(out[0].sector_mask == 0x8u);
  CHECK(out[0].bytes == 4);
  CHECK(out[1].line_addr == 0x1080);
  CHECK(out[1].sector_mask == 0xfu);
  CHECK(out[1].bytes == 128);
  CHECK(out[2].line_addr == 0x1100);
  CHECK(out[2].sector_mask == 0xfu);
  CHECK(out[2].bytes == 124);
}

TEST_CASE("coalesce: inactive lanes are ignored", "[sm][coalesce]") {
  std::vector<LineAccess> out;
  WarpInst in = mem_inst(Opcode::LDG, 0x4000, 4, 4);
  in.active_mask = 0x0000ffffu;  // lanes 0..15: bytes 0..63 = sectors 0, 1
  coalesce(in, 128, 32, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].sector_mask == 0x3u);
  CHECK(out[0].bytes == 64);

  in.active_mask = 0x80000001u;  // lanes 0 and 31: bytes 0..3 and 124..127
  coalesce(in, 128, 32, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].sector_mask == 0x9u);
  CHECK(out[0].bytes == 8);

  in.active_mask = 0;
  coalesce(in, 128, 32, out);
  CHECK(out.empty());

  // Stride 128, only odd lanes: 16 lines 0x4080, 0x4180, ...
  WarpInst s = mem_inst(Opcode::LDG, 0x4000, 128, 4);
  s.active_mask = 0xaaaaaaaau;
  coalesce(s, 128, 32, out);
  REQUIRE(out.size() == 16);
  CHECK(out[0].line_addr == 0x4080);
  CHECK(out[15].line_addr == 0x4000 + 31 * 128);
}

TEST_CASE("coalesce: Strided2D rows and Deltas offsets", "[sm][coalesce]") {
  std::vector<LineAccess> out;
  SECTION("Strided2D: 8 lanes x 16 B per row, rows 1 KiB apart -> 4 full lines") {
    WarpInst in = mem_inst(Opcode::LDG, 0x8000, 16, 16);
    in.addr_mode = AddrMode::Strided2D;
    in.group = 8;
    in.group_stride = 1024;
    coalesce(in, 128, 32, out);
    REQUIRE(out.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(out[i].line_addr == 0x8000 + 1024 * i);
      CHECK(out[i].sector_mask == 0xfu);
      CHECK(out[i].bytes == 128);
    }
  }
  SECTION("Strided2D: 4 lanes x 4 B per row, rows 32 B apart -> each row one sector, 8 rows = 2 lines") {
    WarpInst in = mem_inst(Opcode::LDG, 0x8000, 4, 4);
    in.addr_mode = AddrMode::Strided2D;
    in.group = 4;
    in.group_stride = 32;  // row r at 0x8000 + 32 r: rows 0..3 in line 0x8000, rows 4..7 in 0x8080
    coalesce(in, 128, 32, out);
    REQUIRE(out.size() == 2);
    CHECK(out[0].line_addr == 0x8000);
    CHECK(out[0].sector_mask == 0xfu);
    CHECK(out[0].bytes == 64);  // 16 lanes x 4 B
    CHECK(out[1].line_addr == 0x8080);
    CHECK(out[1].sector_mask == 0xfu);
    CHECK(out[1].bytes == 64);
  }
  SECTION("Deltas: even lanes at +0, odd lanes at +200, and a negative offset") {
    std::array<std::int32_t, 32> d{};
    for (int i = 0; i < 32; ++i) d[static_cast<std::size_t>(i)] = (i % 2) ? 200 : 0;
    d[31] = -4;  // 0x400 - 4 = 0x3fc: line 0x380, sector 3
    WarpInst in = mem_inst(Opcode::LDG, 0x400, 0, 4);
    in.addr_mode = AddrMode::Deltas;
    in.deltas = d.data();
    coalesce(in, 128, 32, out);
    // Lane 0: 0x400 (line 0x400 s0); lane 1: 0x400 + 200 = 0x4c8 = line 0x480 + 72 -> s2; lane 31: 0x3fc.
    REQUIRE(out.size() == 3);
    CHECK(out[0].line_addr == 0x400);
    CHECK(out[0].sector_mask == 0x1u);
    CHECK(out[0].bytes == 64);  // 16 even lanes x 4 B (bytes asked for, duplicates included)
    CHECK(out[1].line_addr == 0x480);
    CHECK(out[1].sector_mask == 0x4u);
    CHECK(out[1].bytes == 60);  // 15 odd lanes (1..29) x 4 B
    CHECK(out[2].line_addr == 0x380);
    CHECK(out[2].sector_mask == 0x8u);
    CHECK(out[2].bytes == 4);
  }
}

// ==== compute_occupancy() ===========================================================================================

TEST_CASE("occupancy: H100 limits, hand-computed", "[sm][occupancy]") {
  // configs/h100_sxm.yaml: 64 warps, 2048 threads, 32 CTAs, 65536 regs (unit 256, at most 255 per thread),
  // 228 KiB smem, 227 KiB/CTA, 1 KiB reserve
  SmLimits h100;
  h100.max_warps = 64;
  h100.max_threads = 2048;
  h100.max_ctas = 32;
  h100.registers = 65536;
  h100.register_alloc_unit = 256;
  h100.max_registers_per_thread = 255;
  h100.shared_memory = 228 * 1024;
  h100.shared_memory_per_cta = 227 * 1024;
  h100.cta_reserved_shared_memory = 1024;
  KernelInfo k;
  k.block = Dim3{256, 1, 1};
  k.registers_per_thread = 32;
  SECTION("(a) 256 threads, 32 regs, no smem: 8 CTAs (warps 64/8 = threads 2048/256 = regs 65536/8192 = 8)") {
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 8);
    CHECK((o.limiter == "warps" || o.limiter == "threads" || o.limiter == "registers"));
    CHECK(o.registers_per_cta == 8192);        // 32 * 32 = 1024 per warp (a multiple of 256) * 8 warps
    CHECK(o.shared_memory_per_cta == 1024);    // 0 + 1 KiB reserve
  }
  SECTION("warps alone: 80 threads (3 warps), 16 regs -> 64/3 = 21; threads 2048/80 = 25; regs 65536/1536 = 42") {
    k.block = Dim3{80, 1, 1};
    k.registers_per_thread = 16;
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 21);
    CHECK(o.limiter == "warps");
    CHECK(o.registers_per_cta == 1536);  // 16 * 32 = 512 per warp * 3
  }
  SECTION("ctas: 32 threads, 32 regs -> min(32 CTAs, 64 warps, 64 by threads, 64 by regs)") {
    k.block = Dim3{32, 1, 1};
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 32);
    CHECK(o.limiter == "ctas");
  }
  SECTION("(b) 128 regs x 256 threads: 128*32 = 4096 per warp * 8 = 32768 -> 65536 / 32768 = 2") {
    k.registers_per_thread = 128;
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 2);
    CHECK(o.limiter == "registers");
    CHECK(o.registers_per_cta == 32768);
  }
  SECTION("register rounding: 33 regs -> 1056 per warp rounds up to 1280; * 8 = 10240 -> 65536/10240 = 6") {
    k.registers_per_thread = 33;
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.registers_per_cta == 10240);
    CHECK(o.ctas_per_sm == 6);
    CHECK(o.limiter == "registers");
  }
  SECTION("(c) 100 KiB smem: 102400 + 1024 = 103424 per CTA -> 233472 / 103424 = 2.26 -> 2") {
    k.shared_mem_bytes = 100 * 1024;
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 2);
    CHECK(o.limiter == "shared_memory");
    CHECK(o.shared_memory_per_cta == 103424);
  }
  SECTION("smem boundary: 75 KiB + 1 KiB = 76 KiB = 233472 / 3 exactly -> 3; one byte more -> 2") {
    k.shared_mem_bytes = 75 * 1024;
    CHECK(compute_occupancy(k, h100).ctas_per_sm == 3);
    k.shared_mem_bytes = 75 * 1024 + 1;
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 2);
    CHECK(o.limiter == "shared_memory");
  }
  SECTION("(d) more than shared_memory_per_cta (227 KiB) -> 0, limiter shared_memory; exactly 227 KiB -> 1") {
    k.shared_mem_bytes = 227 * 1024;  // + 1 KiB reserve = 228 KiB = the whole SM
    CHECK(compute_occupancy(k, h100).ctas_per_sm == 1);
    k.shared_mem_bytes = 227 * 1024 + 1;
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 0);
    CHECK(o.limiter == "shared_memory");
  }
  SECTION("a CTA needing more registers than the SM has -> 0, limiter registers") {
    k.block = Dim3{1024, 1, 1};
    k.registers_per_thread = 255;  // 255*32 = 8160 -> 8192 per warp * 32 warps = 262144 > 65536
    const Occupancy o = compute_occupancy(k, h100);
    CHECK(o.ctas_per_sm == 0);
    CHECK(o.limiter == "registers");
  }
}

// ==== scheduler policies ============================================================================================

namespace {

// One scheduling decision of `policy` over `warps` (age order) at cycle 10: warp slot w is eligible when ok[w]
// (operands ready at cycle 10), else its operands are ready only at cycle 11.
std::uint32_t pick(WarpSchedulerPolicy& policy, const std::vector<std::uint32_t>& warps, const std::vector<bool>& ok) {
  std::vector<Warp> table(ok.size());
  for (std::size_t w = 0; w < ok.size(); ++w) table[w].ready_cycle = ok[w] ? 10 : 11;
  const PipeFreeTimes pipes_free{};
  IssueCandidates candidates(warps, table.data(), pipes_free);
  return policy.pick(candidates.at(10, /*lsu_has_room=*/true));
}

}  // namespace

TEST_CASE("scheduler: GTO keeps the greedy warp while eligible, else the oldest eligible", "[sm][scheduler]") {
  const auto gto = make_scheduler_policy("gto");
  REQUIRE(gto);
  const std::vector<std::uint32_t> warps = {7, 3, 5, 1};  // age order: 7 oldest
  std::vector<bool> ok(8, true);
  CHECK(pick(*gto, warps, ok) == 7);  // no greedy yet: oldest
  CHECK(pick(*gto, warps, ok) == 7);  // greedy
  ok[7] = false;
  CHECK(pick(*gto, warps, ok) == 3);  // oldest eligible
  ok[7] = true;
  CHECK(pick(*gto, warps, ok) == 3);  // stays greedy although 7 is older
  ok[3] = false;
  ok[7] = false;
  CHECK(pick(*gto, warps, ok) == 5);
  std::fill(ok.begin(), ok.end(), false);
  CHECK(pick(*gto, warps, ok) == kNoWarp);
  ok[1] = true;
  ok[5] = true;
  CHECK(pick(*gto, warps, ok) == 5);  // still greedy on 5: a cycle without a pick does not reset it
  // A greedy warp that left the list (exited) is not picked even if the predicate would accept it.
  const std::vector<std::uint32_t> fewer = {1};
  CHECK(pick(*gto, fewer, ok) == 1);
}

TEST_CASE("scheduler: LRR rotates through eligible warps in list order", "[sm][scheduler]") {
  const auto lrr = make_scheduler_policy("lrr");
  REQUIRE(lrr);
  const std::vector<std::uint32_t> warps = {0, 4, 8, 12};
  std::vector<bool> ok(16, true);
  std::vector<std::uint32_t> seq;
  for (int i = 0; i < 6; ++i) seq.push_back(pick(*lrr, warps, ok));
  CHECK(seq == std::vector<std::uint32_t>{0, 4, 8, 12, 0, 4});
  ok[8] = false;  // next would be 8: skipped
  CHECK(pick(*lrr, warps, ok) == 12);
  CHECK(pick(*lrr, warps, ok) == 0);
  std::fill(ok.begin(), ok.end(), false);
  CHECK(pick(*lrr, warps, ok) == kNoWarp);
  std::fill(ok.begin(), ok.end(), true);
  CHECK(pick(*lrr, warps, ok) == 4);  // a cycle without a pick does not move the position
  std::fill(ok.begin(), ok.end(), false);
  ok[0] = true;  // only warp 0: picked every time
  CHECK(pick(*lrr, warps, ok) == 0);
  CHECK(pick(*lrr, warps, ok) == 0);
  // Warps removed: a position past the end of the shorter list starts over at the front.
  const std::vector<std::uint32_t> three = {0, 4, 8};
  std::fill(ok.begin(), ok.end(), true);
  CHECK(pick(*lrr, three, ok) == 4);
  CHECK(pick(*lrr, three, ok) == 8);  // position now 3
  const std::vector<std::uint32_t> two = {0, 4};
  lrr->warps_removed(two.size());
  CHECK(pick(*lrr, two, ok) == 0);
}

TEST_CASE("scheduler: the shipped policies are registered and listed in the sm schema", "[sm][scheduler][config]") {
  const auto names = scheduler_policy_names();
  CHECK(std::find(names.begin(), names.end(), "gto") != names.end());
  CHECK(std::find(names.begin(), names.end(), "lrr") != names.end());
  CHECK(make_scheduler_policy("no-such-policy") == nullptr);
  const ComponentType* sm = Registry::instance().find("sm");
  REQUIRE(sm);
  const Schema schema = sm->schema();
  const ParamSpec* policy = schema.find("scheduler.policy");
  REQUIRE(policy);
  CHECK(policy->choices == names);
}

// ==== end to end: scoreboard, pipes, memory, barriers, tensor cores =================================================

TEST_CASE("e2e: the small config is what the tests assume", "[sm][e2e]") {
  const Config cfg = small_h100();
  const Params& sm = cfg.section("sm");
  CHECK(sm.u32("count") == 1);
  CHECK(sm.u32("subpartitions") == 4);
  CHECK(sm.u64("pipes.fp32.latency") == 6);
  CHECK(sm.u64("pipes.fp32.issue_interval") == 2);
  CHECK(sm.u64("tensor.latency") == 24);
  CHECK(sm.u64("tensor.flops_per_cycle.bf16") == 4096);
  CHECK(cfg.section("l2").u32("slices") == 2);
  CHECK(cfg.section("hbm").u32("channels") == 2);
}

TEST_CASE("e2e (1): a dependent FFMA chain takes N x latency", "[sm][e2e]") {
  const Config cfg = small_h100();
  const std::uint64_t lat = cfg.section("sm").u64("pipes.fp32.latency");  // 6
  const KernelResult r200 = run_warps(cfg, {dependent_ffma_chain(200)});
  const KernelResult r400 = run_warps(cfg, {dependent_ffma_chain(400)});
  INFO(stalls_str(r200));
  // Instruction i can issue only `lat` cycles after instruction i-1: the last issues (N-1)*lat after the first.
  // Launch, retire and kernel-end bookkeeping add a few cycles at most (the last result may or may not be
  // awaited: allow up to one more latency plus 10).
  CHECK(r200.cycles >= 199 * lat);
  CHECK(r200.cycles <= 200 * lat + 10);
  // Each extra dependent instruction costs exactly one latency: 200 more -> 200 * 6 = 1200 cycles more.
  CHECK(r400.cycles - r200.cycles == 200 * lat);
  CHECK(r200.warp_instructions == 200);
  CHECK(r200.thread_instructions == 200 * 32);
  CHECK(r200.dram_bytes_read == 0);
}

TEST_CASE("e2e (2): independent FFMAs issue every issue_interval cycles", "[sm][e2e]") {
  const Config cfg = small_h100();
  const std::uint64_t ii = cfg.section("sm").u64("pipes.fp32.issue_interval");  // 2
  const KernelResult r200 = run_warps(cfg, {independent_ffmas(200)});
  const KernelResult r400 = run_warps(cfg, {independent_ffmas(400)});
  INFO(stalls_str(r200));
  CHECK(r200.cycles >= 199 * ii);
  CHECK(r200.cycles <= 200 * ii + 10);
  CHECK(r400.cycles - r200.cycles == 200 * ii);
  // One issue slot per instruction.
  CHECK(stall(r200, "selected") >= 200);
  CHECK(stall(r200, "selected") <= 201);  // + the retiring end of the stream
  // The dependent version of the same count is latency-bound, 3x slower: 6 vs 2 cycles per instruction.
  const KernelResult dep = run_warps(cfg, {dependent_ffma_chain(200)});
  CHECK(dep.cycles > 2 * r200.cycles);
}

TEST_CASE("e2e: IMAD runs on the pipe sm.opcodes.IMAD.pipe names (the FMA pipe since Volta), beside the integer ALU",
          "[sm][e2e][pipes]") {
  // Alternating independent IMADs and IADD3s, one warp. On one pipe of issue interval 2 they issue every 2 cycles;
  // on two pipes (IMAD on the FP32/FMA pipe, IADD3 on the integer ALU, both interval 2) one issues every cycle.
  const int n = 200;
  std::vector<WarpInst> mix;
  for (int i = 0; i < n; ++i) {
    WarpInst in = ffma(static_cast<std::uint16_t>(10 + i % 64), 2, 3, 4);
    in.op = i % 2 == 0 ? Opcode::IMAD : Opcode::IADD3;
    mix.push_back(in);
  }
  const std::vector<std::string> int_ii = {"sm.pipes.int.issue_interval=2", "sm.opcodes.IMAD.issue_interval=0"};
  std::vector<std::string> one_pipe = int_ii, two_pipes = int_ii;
  one_pipe.push_back("sm.opcodes.IMAD.pipe=class");
  two_pipes.push_back("sm.opcodes.IMAD.pipe=fp32");
  const KernelResult shared = run_warps(small_h100(one_pipe), {mix});
  const KernelResult split = run_warps(small_h100(two_pipes), {mix});
  INFO("one pipe: " << stalls_str(shared) << "; two pipes: " << stalls_str(split));
  CHECK(shared.cycles >= static_cast<std::uint64_t>(2 * (n - 1)));
  CHECK(split.cycles <= static_cast<std::uint64_t>(n + 12));
  const auto busy = [](const KernelResult& k, const std::string& unit) {
    for (const auto& [name, fraction] : k.utilization)
      if (name == unit) return fraction;
    FAIL("no utilization unit " << unit);
    return 0.0;
  };
  // Busy fractions per SM (4 sub-partitions, one busy): every IMAD on the integer pipe, or the 100 IMADs' 2 cycles
  // each on the FP32 pipe (about 200 / 206 / 4).
  CHECK(busy(shared, "fp32") == 0.0);
  CHECK(busy(split, "fp32") > 0.2);
  // Integer-pipe busy cycles (fraction x cycles) halve: only the IADD3s are left there.
  CHECK(busy(split, "int") * split.cycles < 0.6 * busy(shared, "int") * shared.cycles);
  // The shipped H100 config puts IMAD on the FMA pipe.
  CHECK(Config::load(h100_path(), {}, Registry::instance()).section("sm").str("opcodes.IMAD.pipe") == "fp32");
}

TEST_CASE("e2e (3): stalls of a dependent chain are stall_wait, and the states add up to warp-cycles", "[sm][e2e]") {
  const Config cfg = small_h100();
  const KernelResult r200 = run_warps(cfg, {dependent_ffma_chain(200)});
  const KernelResult r400 = run_warps(cfg, {dependent_ffma_chain(400)});
  INFO(stalls_str(r200));
  // One warp resident for the whole kernel: the states sum to the kernel's cycles (one warp-cycle each),
  // give or take the cycle of launch and of the end-of-kernel check.
  CHECK(stall_sum(r200) + 2 >= r200.cycles);
  CHECK(stall_sum(r200) <= r200.cycles);
  // Per instruction: 1 cycle selected, lat - 1 = 5 cycles waiting for the previous result.
  CHECK(stall(r400, "stall_wait") - stall(r200, "stall_wait") == 200 * 5);
  CHECK(stall(r400, "selected") - stall(r200, "selected") == 200);
  CHECK(stall(r200, "stall_wait") >= 199 * 5);
  CHECK(stall(r200, "stall_wait") * 10 >= stall_sum(r200) * 8);  // dominates: >= 80 % (it is 5/6)
  CHECK(stall(r200, "stall_long_scoreboard") == 0);
  CHECK(stall(r200, "stall_barrier") == 0);
  CHECK(stall(r200, "stall_math_pipe_throttle") == 0);  // issue interval 2 < latency 6: the pipe is never in the way
}

TEST_CASE("e2e: a fixed-latency write after write does not wait for the earlier result, a load's does", "[sm][e2e]") {
  const Config cfg = small_h100();
  const std::uint64_t lat = cfg.section("sm").u64("pipes.fp32.latency");       // 6
  const std::uint64_t ii = cfg.section("sm").u64("pipes.fp32.issue_interval");  // 2
  // 200 FFMAs into R1 from R2..R4: no instruction reads R1, so each only has to land after the one before, which
  // the in-order pipe guarantees: they issue at the pipe's rate, as independent ones do, not at its latency.
  const KernelResult waw = run_warps(cfg, {std::vector<WarpInst>(200, ffma(1, 2, 3, 4))});
  const KernelResult indep = run_warps(cfg, {independent_ffmas(200)});
  INFO(stalls_str(waw));
  CHECK(waw.cycles == indep.cycles);
  CHECK(waw.cycles < 200 * ii + 10);
  CHECK(waw.cycles * 2 < 200 * lat);
  // A write after a load into the same register waits for the load's data (its arrival time is not known when
  // the FFMA could issue, so it cannot be ordered after it without waiting).
  const KernelResult after_load = run_warps(cfg, {{ldg(5, 0x10000), ffma(5, 2, 3, 4)}});
  const KernelResult no_load = run_warps(cfg, {{ldg(5, 0x10000), ffma(6, 2, 3, 4)}});
  CHECK(stall(after_load, "stall_long_scoreboard") > stall(no_load, "stall_long_scoreboard") + 100);
}

TEST_CASE("e2e (4): a DRAM load feeding an FFMA takes the configured L1 + NoC + L2 + HBM latency", "[sm][e2e][mem]") {
  const Config cfg = small_h100();
  const double f_sm = cfg.section("clocks").real("sm"), f_l2 = cfg.section("clocks").real("l2"),
               f_hbm = cfg.section("clocks").real("hbm");
  const double l1 = static_cast<double>(cfg.section("l1").u64("hit_latency"));       // 32 SM cycles
  const Params& noc_cfg = cfg.section("noc");
  const double noc = static_cast<double>(noc_cfg.u64("sm_to_gpc_latency") + noc_cfg.u64("gpc_to_partition_latency"));  // 7 + 47 L2 cycles
  const double link = static_cast<double>(noc_cfg.u64("partition_link_latency"));  // 39 L2 cycles
  const double l2 = static_cast<double>(cfg.section("l2").u64("hit_latency"));       // 109 L2 cycles
  const double hbm = static_cast<double>(cfg.section("hbm").u64("latency"));         // 487 HBM cycles
  // In SM cycles (sm 1.83 GHz, L2 1.70 GHz, HBM 2.619 GHz): 32 + (2*54 + 109)*(1.83/1.70) + 487*(1.83/2.619) =
  // 32 + 233.59 + 340.29 = 605.88 for a line homed in the SM's near L2 partition; one homed in the far one also
  // crosses the partition link both ways.
  const double l2_hit = l1 + 2 * noc * f_sm / f_l2 + l2 * f_sm / f_l2;
  const double dram = l2_hit + hbm * f_sm / f_hbm;
  const double far_extra = 2 * link * f_sm / f_l2;
  REQUIRE(l2_hit == Approx(265.59).epsilon(1e-4));
  REQUIRE(dram == Approx(605.88).epsilon(1e-3));

  SECTION("DRAM: LDG R5 <- [A]; FFMA R6 = R5 * ...") {
    const KernelResult r = run_warps(cfg, {{ldg(5, 0x10000), ffma(6, 5, 2, 3)}});
    INFO(stalls_str(r));
    // The FFMA issues at least `dram` cycles after the LDG. Above that: the LDG's own issue and LSU step,
    // rounding up at each of ~6 clock-domain crossings and port serialisations, launch and retire: <= 25 (and the
    // partition link's round trip if the line is homed in the far partition).
    CHECK(static_cast<double>(r.cycles) >= dram);
    CHECK(static_cast<double>(r.cycles) <= dram + far_extra + 25);
    CHECK(static_cast<double>(stall(r, "stall_long_scoreboard")) >= dram - 2);
    CHECK(r.dram_bytes_read == 32);  // one 4-byte word: one 32 B sector
    CHECK(r.dram_bytes_written == 0);
    CHECK(r.l1_hit_rate == 0.0);
    CHECK(r.l2_hit_rate == 0.0);
  }
  SECTION("two loads of one sector share one miss: still one DRAM sector, about the same time") {
    const KernelResult one = run_warps(cfg, {{ldg(5, 0x10000), ffma(6, 5, 2, 3)}});
    const KernelResult two = run_warps(cfg, {{ldg(5, 0x10000), ldg(7, 0x10004), ffma(6, 5, 7, 3)}});
    INFO(stalls_str(two));
    CHECK(two.dram_bytes_read == 32);
    CHECK(two.cycles >= one.cycles);
    CHECK(two.cycles <= one.cycles + 5);  // the second LDG issues 4 cycles (ldst issue interval) later
  }
  SECTION("an L1 hit costs l1.hit_latency") {
    const KernelResult one = run_warps(cfg, {{ldg(5, 0x10000), ffma(6, 5, 2, 3)}});
    // Second load of the same sector after the first one's data is back: L1 hit, 32 cycles + issue.
    const KernelResult hit =
        run_warps(cfg, {{ldg(5, 0x10000), ffma(6, 5, 2, 3), ldg(7, 0x10000), ffma(8, 7, 2, 3)}});
    INFO(stalls_str(hit));
    CHECK(hit.cycles - one.cycles >= static_cast<std::uint64_t>(l1));
    CHECK(hit.cycles - one.cycles <= static_cast<std::uint64_t>(l1) + 6);
    CHECK(hit.dram_bytes_read == 32);
    CHECK(hit.l1_hit_rate == Approx(0.5));  // 2 sectors looked up, 1 hit
  }
  SECTION("an L2 hit (line written by a store first) costs about 291 cycles and reads no DRAM") {
    const KernelResult r = run_warps(cfg, {{stg(0x20000, 2), ldg(5, 0x20000), ffma(6, 5, 2, 3)}});
    INFO(stalls_str(r));
    // The store allocates the sector dirty in L2 (write-allocate, no fetch); the load misses L1 (the store
    // invalidated it) and hits L2. It issues 4 cycles after the store (ldst issue interval).
    CHECK(static_cast<double>(r.cycles) >= l2_hit);
    CHECK(static_cast<double>(r.cycles) <= l2_hit + 4 + 25);
    CHECK(r.dram_bytes_read == 0);
    CHECK(r.l2_hit_rate == 1.0);
  }
}

TEST_CASE("e2e (5): two warps meet at a barrier", "[sm][e2e][barrier]") {
  const Config cfg = small_h100();
  // Warp 0: 10 dependent FFMAs, BAR, FFMA. Warp 1 (other sub-partition): BAR, FFMA.
  std::vector<WarpInst> w0 = dependent_ffma_chain(10);
  w0.push_back(bar());
  w0.push_back(ffma(7, 2, 3, 4));
  const std::vector<WarpInst> w1 = {bar(), ffma(7, 2, 3, 4)};
  const KernelResult r = run_warps(cfg, {w0, w1});
  INFO(stalls_str(r));
  CHECK(r.warp_instructions == 14);  // 10 + 1 + 1 and 1 + 1
  // Both start issuing in the same cycle t. Warp 1 issues BAR at t and waits from t + 1. Warp 0 issues FFMAs at
  // t, t+6, ..., t+54 and BAR (no dependency on R1) at t+55: the barrier releases then, so warp 1 waited
  // 55 - 1 = 54 cycles, + 1 if the release takes effect one cycle after the last arrival.
  CHECK(stall(r, "stall_barrier") >= 54);
  CHECK(stall(r, "stall_barrier") <= 56);
  // The kernel: 9 * 6 = 54 cycles of chain, BAR, then the last FFMA; well under 100 cycles.
  CHECK(r.cycles >= 56);
  CHECK(r.cycles <= 56 + 15);

  SECTION("a warp that exits without reaching the barrier does not hold it") {
    std::vector<WarpInst> a = dependent_ffma_chain(3);
    a.push_back(bar());
    a.push_back(ffma(7, 2, 3, 4));
    const KernelResult e = run_warps(cfg, {a, {ffma(7, 2, 3, 4)}});
    CHECK(e.warp_instructions == 6);
    CHECK(e.cycles <= 2 * 6 + 15);
  }
}

TEST_CASE("e2e (6): two warps on one sub-partition: GTO runs one to the end first, LRR alternates", "[sm][e2e][scheduler]") {
  // 5 warps: warps 0 and 4 share sub-partition 0 (warp index % 4) and each issue N independent FFMAs; warps
  // 1..3 are empty (they retire at once on their own sub-partitions).
  const int n = 100;
  const std::vector<std::vector<WarpInst>> warps = {independent_ffmas(n), {}, {}, {}, independent_ffmas(n)};
  const KernelResult g = run_warps(small_h100(), warps);
  const KernelResult l = run_warps(small_h100({"sm.scheduler.policy=lrr"}), warps);
  INFO("gto: " << stalls_str(g));
  INFO("lrr: " << stalls_str(l));
  // Either way the FP32 pipe of sub-partition 0 is the bottleneck: 2N instructions x 2 cycles = 400.
  CHECK(g.cycles >= 4 * n);
  CHECK(g.cycles <= 4 * n + 10);
  CHECK(l.cycles >= 4 * n);
  CHECK(l.cycles <= 4 * n + 10);
  CHECK(g.warp_instructions == 2 * n);
  CHECK(l.warp_instructions == 2 * n);
  // Resident warp-cycles (= the sum of all warp states) tell who finished when. GTO: warp 0 issues at 1, 3, ...
  // and is gone after ~2N cycles, warp 4 stays ~4N: ~6N in all. LRR: both warps issue every 4 cycles and
  // live ~4N each: ~8N. (+ a few cycles for the three empty warps and retirement.)
  CHECK(stall_sum(g) >= 6 * n);
  CHECK(stall_sum(g) <= 6 * n + 20);
  CHECK(stall_sum(l) >= 8 * n - 5);
  CHECK(stall_sum(l) <= 8 * n + 20);
  CHECK(stall(g, "selected") == stall(l, "selected"));  // same instructions and retirements
}

// ==== a third scheduler policy, registered here: extending the scheduler is one file =========================

namespace {

// Oldest first, never greedy: always the oldest eligible warp, even if a younger one issued last.
class OldestFirst final : public WarpSchedulerPolicy {
 public:
  static inline std::uint64_t picks = 0;  // warps picked by any instance, so that a test can see it ran
  std::uint32_t pick(const IssueCandidates& c) override {
    for (std::uint32_t w : c.warps())
      if (c.eligible(w)) {
        ++picks;
        return w;
      }
    return kNoWarp;
  }
};

WARPSIM_REGISTER_SCHEDULER_POLICY(OldestFirst, "oldest", "oldest first, never greedy (registered by a unit test)");

}  // namespace

TEST_CASE("scheduler: a policy registered in another file is selectable and runs", "[sm][e2e][scheduler]") {
  const auto names = scheduler_policy_names();
  CHECK(std::find(names.begin(), names.end(), "oldest") != names.end());
  // Warps 0 and 4 share sub-partition 0. Warp 0 loads from DRAM, then runs an FFMA on the result and n0
  // independent FFMAs; warp 4 runs n4 independent FFMAs. Both use the one FP32 pipe (issue interval 2).
  // GTO sticks with warp 4 once warp 0 blocks on its load, so warp 0 resumes only after warp 4 is done
  // (~2 n4 cycles); oldest-first switches back to warp 0 as soon as its data arrives (one DRAM latency,
  // ~1000 cycles, well under 2 n4), so warp 0 retires ~2 n4 - latency cycles earlier. Resident warp-cycles
  // (the sum of all warp states) show it; the pipe-bound total time is the same.
  const int n0 = 50, n4 = 2000;
  std::vector<WarpInst> w0 = {ldg(5, 0x10000), ffma(6, 5, 2, 3)};
  for (const WarpInst& in : independent_ffmas(n0)) w0.push_back(in);
  const std::vector<std::vector<WarpInst>> warps = {w0, {}, {}, {}, independent_ffmas(n4)};
  const KernelResult g = run_warps(small_h100(), warps);
  const std::uint64_t picks_before = OldestFirst::picks;
  const KernelResult o = run_warps(small_h100({"sm.scheduler.policy=oldest"}), warps);
  INFO("gto: " << stalls_str(g));
  INFO("oldest: " << stalls_str(o));
  CHECK(OldestFirst::picks - picks_before >= o.warp_instructions);  // every issue was its decision
  CHECK(o.warp_instructions == g.warp_instructions);
  CHECK(o.cycles >= 2u * (n0 + n4 + 1));
  CHECK(o.cycles <= g.cycles + 10);
  CHECK(stall_sum(o) + n4 / 2 < stall_sum(g));
}

TEST_CASE("scheduler: one warp runs the same under every registered policy", "[sm][e2e][scheduler]") {
  const std::vector<std::vector<WarpInst>> one_warp = {
      {ldg(5, 0x10000), ffma(1, 1, 2, 3), ffma(1, 1, 2, 3), ffma(6, 5, 1, 3), ffma(9, 2, 3, 4), ffma(10, 2, 3, 4)}};
  const KernelResult gto = run_warps(small_h100(), one_warp);
  for (const std::string& policy : scheduler_policy_names()) {
    INFO("policy " << policy);
    const KernelResult r = run_warps(small_h100({"sm.scheduler.policy=" + policy}), one_warp);
    CHECK(r.cycles == gto.cycles);
    CHECK(r.stalls == gto.stalls);
    CHECK(r.warp_instructions == gto.warp_instructions);
    CHECK(r.dram_bytes_read == gto.dram_bytes_read);
  }
}

TEST_CASE("config: an unknown scheduler policy is an error naming the key and the known policies", "[sm][config][scheduler]") {
  try {
    (void)small_h100({"sm.scheduler.policy=fifo"});
    FAIL("an unknown policy was accepted");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK_THAT(what, Contains("sm.scheduler.policy"));
    CHECK_THAT(what, Contains("fifo"));
    for (const std::string& policy : scheduler_policy_names()) CHECK_THAT(what, Contains("'" + policy + "'"));
  }
}

TEST_CASE("e2e stall accounting: cycles held back by a busy pipe are math_pipe_throttle, not not_selected",
          "[sm][e2e][stalls]") {
  const int n = 100;
  SECTION("one warp, independent FFMAs (issue interval 2): nobody else could have been selected") {
    const KernelResult r = run_warps(small_h100(), {independent_ffmas(n)});
    INFO(stalls_str(r));
    // Issue at t, t+2, ...: in each t+1 the warp's operands are ready but the FP32 pipe is busy (Nsight:
    // math_pipe_throttle). With a single warp there is no other warp to be selected instead, so
    // stall_not_selected can only be the launch cycle or so.
    CHECK(stall(r, "stall_math_pipe_throttle") >= static_cast<std::uint64_t>(n - 1));
    CHECK(stall(r, "stall_not_selected") <= 2);
  }
  SECTION("two warps on one sub-partition, GTO vs LRR") {
    const std::vector<std::vector<WarpInst>> warps = {independent_ffmas(n), {}, {}, {}, independent_ffmas(n)};
    const KernelResult g = run_warps(small_h100(), warps);
    const KernelResult l = run_warps(small_h100({"sm.scheduler.policy=lrr"}), warps);
    INFO("gto: " << stalls_str(g));
    INFO("lrr: " << stalls_str(l));
    // GTO, first 2N cycles: odd cycles warp 0 selected and warp 4 not_selected (the pipe was free), even cycles
    // both throttled by the busy pipe; then warp 4 alone, throttled every other cycle.
    //   not_selected ~ N, math_pipe_throttle ~ N (warp 0) + N (warp 4, phase 1) + N (warp 4, phase 2) = 3N.
    // LRR, every 4 cycles: one warp selected and the other not_selected, then both throttled, then swapped:
    //   not_selected ~ 2N, math_pipe_throttle ~ 4N.
    CHECK(stall(g, "stall_not_selected") >= static_cast<std::uint64_t>(n - 2));
    // (+ up to 8: the empty warps and the draining EXITs spend a few eligible cycles)
    CHECK(stall(g, "stall_not_selected") <= static_cast<std::uint64_t>(n + 8));
    CHECK(stall(g, "stall_math_pipe_throttle") >= static_cast<std::uint64_t>(3 * n - 5));
    CHECK(stall(g, "stall_math_pipe_throttle") <= static_cast<std::uint64_t>(3 * n + 5));
    CHECK(stall(l, "stall_not_selected") >= static_cast<std::uint64_t>(2 * n - 5));
    CHECK(stall(l, "stall_not_selected") <= static_cast<std::uint64_t>(2 * n + 5));
    CHECK(stall(l, "stall_math_pipe_throttle") >= static_cast<std::uint64_t>(4 * n - 5));
    CHECK(stall(l, "stall_math_pipe_throttle") <= static_cast<std::uint64_t>(4 * n + 5));
  }
}

TEST_CASE("e2e (7): HMMA bf16 m16n8k16: dependent chain at tensor latency, independent at the pipe rate", "[sm][e2e][tensor]") {
  const Config cfg = small_h100();
  const Params& sm = cfg.section("sm");
  const std::uint64_t lat = sm.u64("tensor.latency");  // 24
  // mma.sync on Hopper runs at its own (lower) rate, tensor.mma_sync_flops_per_cycle.bf16 (2714 FLOP/cycle/SM, measured):
  // 2*16*8*16 = 4096 FLOP per warp-instruction over 2714 / 4 sub-partitions = 678.5 per cycle -> 6.0368 cycles of
  // pipe, given out in whole cycles (6 or 7) whose sum follows the exact figure.
  const double hmma_rate = static_cast<double>(sm.u64("tensor.mma_sync_flops_per_cycle.bf16")) / sm.u64("subpartitions");
  REQUIRE(sm.u64("tensor.mma_sync_flops_per_cycle.bf16") < sm.u64("tensor.flops_per_cycle.bf16"));
  const double interval = 2 * 16 * 8 * 16 / hmma_rate;
  REQUIRE(interval == Approx(6.0368).epsilon(1e-4));
  auto dep = [](int n) {  // D = A*B + D, accumulator R8 carried
    return std::vector<WarpInst>(static_cast<std::size_t>(n), hmma(DType::BF16, MmaShape{16, 8, 16}, 8, 0, 4, 8));
  };
  auto indep = [](int n) {
    std::vector<WarpInst> v;
    for (int i = 0; i < n; ++i)
      v.push_back(hmma(DType::BF16, MmaShape{16, 8, 16}, static_cast<std::uint16_t>(16 + i % 64), 0, 4, 100));
    return v;
  };
  const KernelResult d100 = run_warps(cfg, {dep(100)}), d200 = run_warps(cfg, {dep(200)});
  const KernelResult i100 = run_warps(cfg, {indep(100)}), i200 = run_warps(cfg, {indep(200)});
  INFO("dependent: " << stalls_str(d100));
  INFO("independent: " << stalls_str(i100));
  CHECK(d100.cycles >= 99 * lat);
  CHECK(d100.cycles <= 100 * lat + 10);
  CHECK(d200.cycles - d100.cycles == 100 * lat);
  CHECK(i100.cycles >= 99 * interval);
  // The warp drains at EXIT until its last result is written: + one tensor latency.
  CHECK(i100.cycles <= 100 * interval + lat + 10);
  CHECK(static_cast<double>(i200.cycles - i100.cycles) >= std::floor(100 * interval));
  CHECK(static_cast<double>(i200.cycles - i100.cycles) <= std::ceil(100 * interval));
  CHECK(d100.flops == 100 * 4096);
  REQUIRE(d100.achieved_tflops.has_value());
  // Independent at 678.5 FLOP/cycle on one sub-partition * 1.83 GHz = 1.242 TFLOPS, less a few cycles of launch
  // and retirement in ~1200. (That it must not be above a quarter of the SM's peak is checked in "e2e: a kernel
  // ends when its in-flight work is done".)
  REQUIRE(i200.achieved_tflops.has_value());
  CHECK(*i200.achieved_tflops >= hmma_rate * 1.83e9 / 1e12 * 0.97);
  CHECK(*i200.achieved_tflops <= hmma_rate * 1.83e9 / 1e12);

  SECTION("sparse (mma.sp): the dense-equivalent work at tensor.mma_sync_sparse_speedup times the rate, same latency") {
    std::vector<WarpInst> sp = indep(200), sd = dep(100);
    for (WarpInst& in : sp) in.aux = kMmaSparse;
    for (WarpInst& in : sd) in.aux = kMmaSparse;
    const double speedup = cfg.section("sm").real("tensor.mma_sync_sparse_speedup");  // 1.462
    const KernelResult s200 = run_warps(cfg, {sp}), s100 = run_warps(cfg, {std::vector<WarpInst>(sp.begin(), sp.begin() + 100)});
    CHECK(static_cast<double>(s200.cycles - s100.cycles) == Approx(100 * interval / speedup).margin(1.0));
    CHECK(s200.flops == i200.flops);  // counted dense-equivalent
    const KernelResult dsp = run_warps(cfg, {sd});
    CHECK(dsp.cycles == d100.cycles);  // a dependent chain: the latency, tensor.latency, as dense (measured 24.0 vs 24.1)
    // A GPU without sparse tensor cores refuses it.
    InMemoryTrace t = one_cta_trace({sd});
    CHECK_THAT(input_error_of(small_h100({"sm.tensor.mma_sync_sparse_speedup=0"}), t), Contains("no sparse tensor cores"));
  }

  SECTION("fp8 m16n8k32: twice the work at twice the rate; latency + (interval - reference) = 24 + (4 - 2)") {
    // 2*16*8*32 = 8192 FLOP; 8192/4 = 2048 per cycle -> interval 4; the m16n8k16 reference is 4096/2048 = 2
    // cycles, so the result latency grows by 4 - 2 = 2 to 26.
    auto dep8 = [](int n) {
      return std::vector<WarpInst>(static_cast<std::size_t>(n), hmma(DType::FP8, MmaShape{16, 8, 32}, 8, 0, 4, 8));
    };
    const KernelResult a = run_warps(cfg, {dep8(50)}), b = run_warps(cfg, {dep8(100)});
    CHECK(b.cycles - a.cycles == 50 * 26);
  }
}

TEST_CASE("e2e: warpgroup MMA is asynchronous: pipe-bound issue, completion waited for by wait_group", "[sm][e2e][tensor][wgmma]") {
  // A latency well above the pipe occupancy tells issue from completion: m64n64k16 bf16 is 2*64*64*16/4 = 32768
  // FLOP per warp over 4096/4 = 1024 FLOP/cycle per sub-partition = 32 cycles of pipe; latency 100 + 4*64/8 = 132.
  const Config cfg = small_h100({"sm.tensor.wgmma.latency_fixed=100", "sm.tensor.wgmma.latency_per_n8=4"});
  const Params& sm = cfg.section("sm");
  const double rate = static_cast<double>(sm.u64("tensor.flops_per_cycle.bf16")) / sm.u64("subpartitions");
  const auto interval = static_cast<std::uint64_t>(std::ceil(2.0 * 64 * 64 * 16 / 4 / rate));
  const std::uint64_t lat = sm.u64("tensor.wgmma.latency_fixed") + sm.u64("tensor.wgmma.latency_per_n8") * 64 / 8;
  REQUIRE(interval == 32);
  REQUIRE(lat == 132);
  // Each of the warpgroup's 4 warps (one per sub-partition) runs the same stream.
  auto warpgroup = [&](const std::vector<WarpInst>& v) { return run_warps(cfg, {v, v, v, v}); };
  auto loop = [](int iterations, std::uint32_t pending) {  // fence, HGMMA, commit, wait_group pending
    std::vector<WarpInst> v;
    for (int i = 0; i < iterations; ++i) {
      v.push_back(sync_op(Opcode::WARPGROUP_ARRIVE));
      v.push_back(hgmma(DType::BF16, 64));
      v.push_back(sync_op(Opcode::WARPGROUP_COMMIT));
      v.push_back(sync_op(Opcode::WARPGROUP_DEPBAR, pending));
    }
    return v;
  };
  SECTION("wait_group 0 after each: one latency per MMA, plus the issue of the fence and of the HGMMA after the wait") {
    // HGMMA at t, DEPBAR issues at t + lat, fence at t + lat + 1, next HGMMA at t + lat + 2.
    const KernelResult a = warpgroup(loop(50, 0)), b = warpgroup(loop(100, 0));
    INFO(stalls_str(b));
    CHECK(b.cycles - a.cycles == 50 * (lat + 2));
    // Waiting at the wait_group is stall_gmma: lat - 2 cycles per iteration per warp (commit and wait issue first).
    CHECK(stall(b, "stall_gmma") - stall(a, "stall_gmma") == 4 * 50 * (lat - 2));
    CHECK(stall(b, "stall_wait") == 0);
  }
  SECTION("wait_group 1: the next group issues while one executes, two MMAs per latency") {
    // The wait after group k waits for group k-1: HGMMA k+1 issues lat + 2 after HGMMA k-1.
    const KernelResult a = warpgroup(loop(50, 1)), b = warpgroup(loop(100, 1));
    CHECK(b.cycles - a.cycles == 50 * (lat + 2) / 2);
  }
  SECTION("HGMMAs into one accumulator without waits issue at the pipe interval, not the latency") {
    auto chain = [](int n) {
      std::vector<WarpInst> v = {sync_op(Opcode::WARPGROUP_ARRIVE)};
      for (int i = 0; i < n; ++i) v.push_back(hgmma(DType::BF16, 64));
      v.push_back(sync_op(Opcode::WARPGROUP_COMMIT));
      v.push_back(sync_op(Opcode::WARPGROUP_DEPBAR, 0));
      return v;
    };
    const KernelResult a = warpgroup(chain(100)), b = warpgroup(chain(200));
    CHECK(b.cycles - a.cycles == 100 * interval);
    CHECK(a.cycles >= 99 * interval + lat);
    CHECK(a.cycles <= 99 * interval + lat + 10);
    CHECK(a.flops == 4 * 100 * 32768);
  }
  SECTION("an instruction other than HGMMA reading the accumulator waits for it (stall_gmma), and so does EXIT") {
    std::vector<WarpInst> v = {hgmma(DType::BF16, 64), ffma(1, 8, 2, 3)};  // reads R8 without wait_group
    const KernelResult r = warpgroup(v);
    INFO(stalls_str(r));
    CHECK(r.cycles >= lat + 6);  // the FFMA issues when R8 is written, its own latency (6) after
    CHECK(stall(r, "stall_gmma") >= 4 * (lat - 2));
    const KernelResult e = warpgroup({hgmma(DType::BF16, 64)});  // EXIT drains the executing MMA
    CHECK(e.cycles >= lat);
  }
  SECTION("a legacy trace without commit and wait: the MMA chain is not serialised by its latency either") {
    const KernelResult a = warpgroup(std::vector<WarpInst>(100, hgmma(DType::BF16, 64)));
    CHECK(a.cycles <= 99 * interval + lat + 10);
  }
}

TEST_CASE("e2e (8): fp8 tensor instructions on a GPU without fp8 tensor cores are an input error", "[sm][e2e][errors]") {
  const Config cfg = small_h100({"sm.tensor.flops_per_cycle.fp8=0"});
  InMemoryTrace t = one_cta_trace({{ffma(1, 2, 3, 4), hmma(DType::FP8, MmaShape{16, 8, 32}, 8, 0, 4, 8)}}, 32, 0, "fp8k");
  const std::string msg = input_error_of(cfg, t);
  CHECK_THAT(msg, Contains("fp8"));
  CHECK_THAT(msg, Contains("fp8k"));
  // The same trace runs where fp8 is supported.
  InMemoryTrace t2 = one_cta_trace({{ffma(1, 2, 3, 4), hmma(DType::FP8, MmaShape{16, 8, 32}, 8, 0, 4, 8)}}, 32, 0, "fp8k");
  CHECK(input_error_of(small_h100(), t2).empty());
}

TEST_CASE("e2e (9): a CTA that does not fit on an SM is an input error naming the limiter", "[sm][e2e][errors]") {
  const Config cfg = small_h100();
  SECTION("shared memory: 228 KiB > 227 KiB per CTA") {
    InMemoryTrace t = one_cta_trace({{ffma(1, 2, 3, 4)}}, 32, 228 * 1024, "bigsmem");
    const std::string msg = input_error_of(cfg, t);
    CHECK_THAT(msg, Contains("shared_memory"));
    CHECK_THAT(msg, Contains("bigsmem"));
  }
  SECTION("registers: 32 warps x 255 registers") {
    std::vector<std::vector<WarpInst>> warps(32, std::vector<WarpInst>{ffma(1, 2, 3, 4)});
    InMemoryTrace t = one_cta_trace(warps, 255, 0, "bigregs");
    CHECK_THAT(input_error_of(cfg, t), Contains("registers"));
  }
}

TEST_CASE("e2e (10): the same kernel in two fresh GPUs gives identical results", "[sm][e2e][determinism]") {
  const Config cfg = small_h100();
  // A mix: strided loads over several lines, stores, FFMAs, a barrier, four warps on four sub-partitions and
  // a fifth sharing sub-partition 0.
  std::vector<std::vector<WarpInst>> warps;
  for (int w = 0; w < 5; ++w) {
    std::vector<WarpInst> v;
    const std::uint64_t base = 0x100000 + 0x10000 * static_cast<std::uint64_t>(w);
    WarpInst l = mem_inst(Opcode::LDG, base, 128, 4);  // 32 lines
    l.num_dst = 1;
    l.dst[0] = 5;
    v.push_back(l);
    v.push_back(ldg(6, base + 8));
    for (int i = 0; i < 5 + w; ++i) v.push_back(ffma(1, 1, 5, 6));
    v.push_back(bar());
    WarpInst s = mem_inst(Opcode::STG, base + 0x8000, 4, 4);
    s.num_src = 1;
    s.src[0] = 1;
    v.push_back(s);
    v.push_back(ffma(7, 1, 2, 3));
    warps.push_back(v);
  }
  const KernelResult a = run_warps(cfg, warps);
  const KernelResult b = run_warps(cfg, warps);
  CHECK(a.cycles == b.cycles);
  CHECK(a.stalls == b.stalls);
  CHECK(a.dram_bytes_read == b.dram_bytes_read);
  CHECK(a.dram_bytes_written == b.dram_bytes_written);
  CHECK(a.warp_instructions == b.warp_instructions);
  CHECK(a.l1_hit_rate == b.l1_hit_rate);
  CHECK(a.l2_hit_rate == b.l2_hit_rate);
  CHECK(a.occupancy == b.occupancy);
  CHECK(a.utilization == b.utilization);
  // And the loads did go to DRAM: 5 warps x (32 lines x 1 sector) = 160 sectors = 5120 B; the second load of
  // each warp (base + 8) is in the first line's sector 0, already requested: no extra DRAM traffic.
  CHECK(a.dram_bytes_read == 5 * 32 * 32);
  CHECK(a.warp_instructions == 60);  // warp w: 2 LDG + (5 + w) FFMA + BAR + STG + FFMA = 10 + w; sum over 0..4 = 60
}


TEST_CASE("e2e: a kernel ends when its in-flight work is done", "[sm][e2e][mem]") {
  const Config cfg = small_h100();
  const double f_sm = cfg.section("clocks").real("sm"), f_l2 = cfg.section("clocks").real("l2"),
               f_hbm = cfg.section("clocks").real("hbm");
  // 40 + 2*(9+54) + 125 + 561 * 1.83/2.619 = 683.0 SM cycles for a near-homed line (see e2e (4)).
  const Params& noc = cfg.section("noc");
  const double dram = static_cast<double>(cfg.section("l1").u64("hit_latency")) +
                      static_cast<double>(2 * (noc.u64("sm_to_gpc_latency") + noc.u64("gpc_to_partition_latency")) +
                                          cfg.section("l2").u64("hit_latency")) * f_sm / f_l2 +
                      static_cast<double>(cfg.section("hbm").u64("latency")) * f_sm / f_hbm;
  SECTION("a load whose result is never used: its DRAM traffic belongs to this kernel") {
    // Kernel 0: one LDG, then the warp ends. Kernel 1: one FFMA. A warp cannot retire (and free its registers)
    // while a load is still to write one of them, so kernel 0 lasts at least the DRAM latency and its 32 B
    // sector read is counted in kernel 0, not in kernel 1.
    InMemoryKernel k0, k1;
    k0.info.name = "load_only";
    k0.info.block = Dim3{32, 1, 1};
    k0.ctas = {{InMemoryKernel::Warp{{ldg(5, 0x10000)}, {}}}};
    k1.info.name = "ffma";
    k1.info.block = Dim3{32, 1, 1};
    k1.ctas = {{InMemoryKernel::Warp{{ffma(1, 2, 3, 4)}, {}}}};
    InMemoryTrace t({k0, k1}, "two");
    Gpu g(cfg);
    RunOptions opt;
    const RunResult r = g.run(t, run_without_systemc, opt);
    REQUIRE(r.kernels.size() == 2);
    INFO("kernel 0: " << stalls_str(r.kernels[0]) << " dram_read=" << r.kernels[0].dram_bytes_read);
    INFO("kernel 1: " << stalls_str(r.kernels[1]) << " dram_read=" << r.kernels[1].dram_bytes_read);
    CHECK(r.kernels[0].dram_bytes_read == 32);
    CHECK(r.kernels[1].dram_bytes_read == 0);
    CHECK(static_cast<double>(r.kernels[0].cycles) >= dram);
  }
  SECTION("tensor work: achieved TFLOPS never exceed the peak") {
    // 4 warps on 4 sub-partitions, one bf16 m16n8k16 HMMA each: 4 * 4096 FLOP. The SM does at most 4096 FLOP
    // per cycle, so the kernel takes at least 4 cycles of tensor-pipe time (plus the 24-cycle result latency),
    // and achieved <= 4096 * 1.83e9 = 7.50 TFLOPS.
    const WarpInst h = hmma(DType::BF16, MmaShape{16, 8, 16}, 16, 0, 4, 100);
    const KernelResult r = run_warps(cfg, {{h}, {h}, {h}, {h}});
    INFO(stalls_str(r));
    REQUIRE(r.achieved_tflops.has_value());
    const double peak = 4096.0 * f_sm / 1e12;
    CHECK(*r.achieved_tflops <= peak);
    CHECK(r.cycles >= 4);
    // 200 independent HMMAs on one sub-partition: 200 * 4 = 800 cycles of pipe time; achieved <= a quarter of
    // the SM's peak, 1024 * 1.83e9 = 1.874 TFLOPS.
    std::vector<WarpInst> v;
    for (int i = 0; i < 200; ++i)
      v.push_back(hmma(DType::BF16, MmaShape{16, 8, 16}, static_cast<std::uint16_t>(16 + i % 64), 0, 4, 100));
    const KernelResult q = run_warps(cfg, {v});
    INFO(stalls_str(q));
    REQUIRE(q.achieved_tflops.has_value());
    CHECK(q.cycles >= 800);
    CHECK(*q.achieved_tflops <= peak / 4);
  }
}

// ---- TMA and mbarriers -------------------------------------------------------------------------------------------

namespace {

WarpInst mbar_op(Opcode op, std::uint32_t id, std::uint32_t aux) {
  WarpInst in;
  in.op = op;
  in.group = static_cast<std::uint8_t>(id);
  in.aux = aux;
  return in;
}

WarpInst tma_load(std::uint64_t base, std::uint32_t rows, std::uint32_t row_bytes, std::uint32_t mbar) {
  WarpInst in = mem_inst(Opcode::UTMALDG, base, static_cast<std::int32_t>(row_bytes), 16);
  in.active_mask = 1;
  in.aux = rows;
  in.group_stride = static_cast<std::int32_t>(row_bytes);
  in.group = static_cast<std::uint8_t>(mbar);
  return in;
}

double total(const KernelResult& k, const std::string& name) {
  const StatValue* v = k.stats.find(name);
  if (!v) FAIL("no statistic " << name);
  return v ? v->value : 0.0;
}

}  // namespace

TEST_CASE("TMA: a box load lands in shared memory, completes its mbarrier phase, and try_wait waits for it", "[sm][e2e][tma]") {
  const Config cfg = small_h100();
  const double f_sm = cfg.section("clocks").real("sm"), f_l2 = cfg.section("clocks").real("l2"),
               f_hbm = cfg.section("clocks").real("hbm");
  const double l1 = static_cast<double>(cfg.section("l1").u64("hit_latency"));
  const Params& noc_cfg = cfg.section("noc");
  const double noc = static_cast<double>(noc_cfg.u64("sm_to_gpc_latency") + noc_cfg.u64("gpc_to_partition_latency"));
  const double far_extra = 2.0 * noc_cfg.u64("partition_link_latency") * f_sm / f_l2;  // a line homed in the far partition
  const double l2 = static_cast<double>(cfg.section("l2").u64("hit_latency"));
  const double hbm = static_cast<double>(cfg.section("hbm").u64("latency"));
  const double tma = static_cast<double>(cfg.section("async_copy").u64("latency"));
  // The TMA path: its setup, the NoC both ways, L2 (and HBM on a miss), then the L1TEX data path into shared memory.
  const double l2_hit = tma + 2 * noc * f_sm / f_l2 + l2 * f_sm / f_l2 + l1;
  const double dram = l2_hit + hbm * f_sm / f_hbm;
  // 4 rows x 128 B = 512 B = 4 lines; one arrival with expect_tx 512.
  const std::vector<WarpInst> prog = {mbar_op(Opcode::MBARRIER_INIT, 3, 1), mbar_op(Opcode::SYNCS_ARRIVE_TRANS64, 3, 512),
                                      tma_load(0x40000, 4, 128, 3), mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 3, 0),
                                      ffma(6, 2, 3, 4)};
  const KernelResult r = run_warps(cfg, {prog});
  INFO(stalls_str(r));
  CHECK(static_cast<double>(r.cycles) >= dram);
  CHECK(static_cast<double>(r.cycles) <= dram + far_extra + 25);
  CHECK(r.dram_bytes_read == 512);
  CHECK(static_cast<double>(stall(r, "stall_long_scoreboard")) >= dram - 10);  // at the try_wait
  CHECK(stall(r, "stall_barrier") == 0);
  CHECK(total(r, "tma.bytes") == 512);
  CHECK(total(r, "tma.requests") == 4);
  CHECK(total(r, "tma.copies") == 1);
  CHECK(total(r, "sm.mbarrier_tx_bytes") == 512);
  CHECK(total(r, "sm.mbarrier_phases") == 1);
  CHECK(total(r, "sm.l2_requests") == 0);  // the LSU sent nothing: TMA bypasses it and L1

  SECTION("a second warp waiting on the same phase is released by the copy; parity 1 of a fresh barrier passes at once") {
    const std::vector<WarpInst> waiter = {mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 3, 1), ffma(6, 2, 3, 4),
                                          mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 3, 0), ffma(7, 2, 3, 4)};
    const KernelResult two = run_warps(cfg, {prog, waiter});
    CHECK(two.cycles >= r.cycles);
    CHECK(two.cycles <= r.cycles + 5);
  }
  SECTION("the same box again is an L2 hit: a TMA load's latency is its setup more than a load's") {
    std::vector<WarpInst> twice = prog;
    twice.pop_back();
    for (const WarpInst& in : {mbar_op(Opcode::SYNCS_ARRIVE_TRANS64, 3, 512), tma_load(0x40000, 4, 128, 3),
                               mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 3, 1)})
      twice.push_back(in);
    const KernelResult t = run_warps(cfg, {twice});
    const double second = static_cast<double>(t.cycles - r.cycles);
    CHECK(second >= l2_hit);
    CHECK(second <= l2_hit + 12);
    CHECK(t.dram_bytes_read == 512);
  }
  SECTION("without the expect_tx arrival the phase never completes: a deadlock diagnosed at the mbarrier") {
    const std::vector<WarpInst> stuck = {mbar_op(Opcode::MBARRIER_INIT, 3, 2), mbar_op(Opcode::SYNCS_ARRIVE_TRANS64, 3, 512),
                                         tma_load(0x40000, 4, 128, 3), mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 3, 0)};
    InMemoryTrace t = one_cta_trace({stuck});
    Gpu g(small_h100({"sim.watchdog_cycles=2000", "sim.progress_check_cycles=500"}));
    RunOptions opt;
    CHECK_THROWS_WITH(g.run(t, run_without_systemc, opt), Contains("mbarrier 3 parity 0"));
  }
}

TEST_CASE("TMA: a load issued right after a box copy is not queued behind the box's future line requests", "[sm][e2e][tma]") {
  // The unit sends its first line async_copy.latency (100) cycles after issue and the box's 64 lines of 128 B over
  // the next 64 cycles (128 B/cycle). The SM's NoC port is idle until then, so an LDG issued on the next LDST slot
  // waits for its data as long as a lone LDG does (a few cycles of issue order at most), not ~164 cycles more.
  const Config cfg = small_h100();
  const double box_start = static_cast<double>(cfg.section("async_copy").u64("latency"));
  REQUIRE(box_start >= 50);  // the test's margin below assumes the box's lines start well after the LDG's
  const WarpInst init = mbar_op(Opcode::MBARRIER_INIT, 0, 1), expect = mbar_op(Opcode::SYNCS_ARRIVE_TRANS64, 0, 64 * 128);
  const std::vector<WarpInst> lone = {init, expect, ldg(5, 0x10000), ffma(6, 5, 2, 3)};
  const std::vector<WarpInst> after_box = {init, expect, tma_load(0x80000, 64, 128, 0), ldg(5, 0x10000), ffma(6, 5, 2, 3)};
  const KernelResult a = run_warps(cfg, {lone});
  const KernelResult b = run_warps(cfg, {after_box});
  INFO("lone: " << stalls_str(a));
  INFO("after box: " << stalls_str(b));
  REQUIRE(total(b, "tma.requests") == 64);
  const double lone_wait = static_cast<double>(stall(a, "stall_long_scoreboard"));
  const double wait = static_cast<double>(stall(b, "stall_long_scoreboard"));
  CHECK(wait <= lone_wait + 8);
  CHECK(wait >= lone_wait - 8);
}

TEST_CASE("mbarriers: a copy delivering to, or a try_wait on, an uninitialised mbarrier is an input error", "[sm][e2e][tma][errors]") {
  const Config cfg = small_h100();
  SECTION("UTMALDG completing on a barrier no MBARRIER_INIT set up") {
    InMemoryTrace t = one_cta_trace({{mbar_op(Opcode::MBARRIER_INIT, 0, 1), tma_load(0x40000, 1, 128, 5)}}, 32, 0, "tma_k");
    const std::string e = input_error_of(cfg, t);
    CHECK_THAT(e, Contains("kernel 'tma_k', CTA 0") && Contains("UTMALDG") && Contains("128 bytes") &&
                      Contains("mbarrier 5, which no MBARRIER_INIT initialised"));
  }
  SECTION("try_wait (parity 1 would pass at once on a fresh barrier)") {
    InMemoryTrace t = one_cta_trace({{mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 4, 1), ffma(6, 2, 3, 4)}}, 32, 0, "wait_k");
    CHECK_THAT(input_error_of(cfg, t), Contains("kernel 'wait_k', CTA 0") && Contains("try_wait") &&
                                           Contains("mbarrier 4, which no MBARRIER_INIT initialised"));
  }
  SECTION("initialised first: no error") {
    InMemoryTrace t = one_cta_trace({{mbar_op(Opcode::MBARRIER_INIT, 4, 1), mbar_op(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT, 4, 1)}});
    CHECK(input_error_of(cfg, t).empty());
  }
}

TEST_CASE("wgmma groups: commit drops the groups already complete, so commits without waits keep few", "[sm][wgmma]") {
  Warp w;
  // Empty groups committed one cycle apart: each is complete one cycle after its commit.
  for (Cycle now = 0; now < 10000; ++now) w.commit_wgmma_group(now);
  CHECK(w.wgmma_groups.size() == 1);
  // A group still executing is kept, and a later (empty) group completes no earlier than it: in order.
  w.wgmma_open_done = 20000;
  w.commit_wgmma_group(10000);
  w.commit_wgmma_group(10001);
  REQUIRE(w.wgmma_groups.size() == 2);
  CHECK(w.wgmma_groups.front() == 20000);
  CHECK(w.wgmma_groups.back() == 20000);
  w.commit_wgmma_group(20000);  // both complete by now: dropped
  REQUIRE(w.wgmma_groups.size() == 1);
  CHECK(w.wgmma_groups.front() == 20001);
}

TEST_CASE("TMA: a GPU without a TMA unit refuses UTMALDG with one clear error", "[sm][e2e][tma][errors]") {
  const Config cfg = small_h100({"async_copy.issue_bytes_per_cycle=0"});
  InMemoryTrace t = one_cta_trace({{mbar_op(Opcode::MBARRIER_INIT, 0, 1), tma_load(0x40000, 1, 128, 0)}});
  CHECK_THAT(input_error_of(cfg, t), Contains("no TMA unit"));
}

// ==== regressions found in review ===================================================================================

TEST_CASE("e2e: memory instructions without active lanes complete and the warp exits", "[sm][e2e][mem]") {
  // An STG and an LDGSTS with no active lane (predicated off) must not leave the warp draining forever.
  WarpInst st = stg(0x1000, 5);
  st.active_mask = 0;
  WarpInst cp = mem_inst(Opcode::LDGSTS, 0x2000, 16, 16);
  cp.active_mask = 0;
  WarpInst commit;
  commit.op = Opcode::LDGDEPBAR;
  WarpInst wait;
  wait.op = Opcode::DEPBAR;
  wait.aux = 0;
  const KernelResult r = run_warps(small_h100(), {{st, cp, commit, wait}});
  INFO(stalls_str(r));
  CHECK(r.cycles < 100);
  CHECK(r.dram_bytes_read == 0);
}

TEST_CASE("e2e: an atomic's result is waited for like a load's", "[sm][e2e][mem]") {
  // ATOMG R5 <- [a]; FFMA reads R5: the FFMA waits for the round trip to L2 (and DRAM, on a cold line).
  WarpInst atom = mem_inst(Opcode::ATOMG, 0x10000, 0, 4);
  atom.num_dst = 1;
  atom.dst[0] = 5;
  const Config cfg = small_h100();
  const KernelResult r = run_warps(cfg, {{atom, ffma(6, 5, 2, 3)}});
  INFO(stalls_str(r));
  // At least the L2 hit path: the NoC both ways + l2.hit_latency (L2 clock = SM clock in this config).
  const Params& noc = cfg.section("noc");
  const double l2_path = 2.0 * (noc.u64("sm_to_gpc_latency") + noc.u64("gpc_to_partition_latency")) +
                         cfg.section("l2").u64("hit_latency");
  CHECK(stall(r, "stall_long_scoreboard") >= l2_path);
  CHECK(r.cycles >= l2_path);
}

TEST_CASE("e2e: barriers with different ids do not release each other", "[sm][e2e][barrier]") {
  // Two warps: both BAR 1, then both BAR 0. If ids were ignored this would still pass, so warp 1 also
  // waits on BAR 2 alone at the end: it must be released only by... nobody else -> it is the only live warp
  // left after warp 0 exits, and a barrier completes when all *live* warps arrived.
  WarpInst b1 = bar();
  b1.aux = 1;
  WarpInst b0 = bar();
  const KernelResult r = run_warps(small_h100(), {{b1, b0}, {b1, b0}});
  INFO(stalls_str(r));
  CHECK(r.cycles < 100);

  // Mismatched ids: warp 0 waits at BAR 1 while warp 1 waits at BAR 2; neither barrier has all live warps,
  // so the run must stop with a no-progress diagnosis rather than release them.
  WarpInst b2 = bar();
  b2.aux = 2;
  InMemoryTrace t = one_cta_trace({{b1}, {b2}});
  Gpu g(small_h100({"sim.watchdog_cycles=2000", "sim.progress_check_cycles=500"}));
  RunOptions opt;
  CHECK_THROWS_AS(g.run(t, run_without_systemc, opt), SimulationError);
}

TEST_CASE("e2e: L1 read sectors are counted once even when the LSU waits for an MSHR", "[sm][e2e][mem]") {
  // One LDG touching 32 lines (stride 128 B): 32 sectors looked up, whatever the MSHR count.
  WarpInst ld = mem_inst(Opcode::LDG, 0x40000, 128, 4);
  ld.num_dst = 1;
  ld.dst[0] = 7;
  for (const char* mshrs : {"l1.mshrs=512", "l1.mshrs=1"}) {
    const KernelResult r = run_warps(small_h100({mshrs}), {{ld}});
    INFO(mshrs << ": l1_hit_rate " << r.l1_hit_rate);
    CHECK(r.l1_hit_rate == 0.0);  // cold: no sector may be counted as a hit
    CHECK(r.dram_bytes_read == 32u * 32u);
  }
}

// ==== the SM's slots: an L1 implementation and an asynchronous copy engine, each registered here ==============

namespace {

// An L1 that never holds anything, with the shipped L1's parameters: selected with `l1.impl: uncached`.
class UncachedL1 final : public L1Cache {
 public:
  static Schema schema() { return Registry::instance().find("l1", "sectored")->schema(); }
  UncachedL1(BuildContext&, const Params& l1, unsigned) {
    geometry_ = Geometry{l1.u32("line_size"), l1.u32("sector_size"), l1.u64("hit_latency"), l1.u32("bandwidth"), l1.u32("mshrs")};
  }
  void begin_kernel(std::uint64_t) override {}
  std::uint32_t lookup(std::uint64_t, std::uint32_t, EvictPriority) override { return 0; }
  void fill(std::uint64_t, std::uint32_t, EvictPriority) override {}
  void invalidate(std::uint64_t, std::uint32_t) override {}
};

// A copy engine that, when `async_copy.take_ldgsts` is set, takes LDGSTS instructions from the LSU and
// completes each `async_copy.latency` cycles after issue without any memory traffic. Off by default, so that
// it leaves every other test alone.
class FixedLatencyCopyEngine final : public AsyncCopyEngine {
 public:
  static Schema schema() {
    Schema s("async_copy", "fixed_latency", "test engine: LDGSTS done after a fixed latency, no traffic");
    s.boolean("take_ldgsts", false, "take LDGSTS instructions instead of the LSU");
    s.uint("latency", "cycles", 100, "cycles from issue to completion", 1, 100000);
    return s;
  }
  FixedLatencyCopyEngine(BuildContext&, const Params& p, unsigned)
      : take_ldgsts_(p.boolean("take_ldgsts")), latency_(p.u64("latency")) {}
  bool handles(const WarpInst& in) const override { return take_ldgsts_ && in.op == Opcode::LDGSTS; }
  void start(const WarpInst&, std::uint32_t record, std::uint32_t, Cycle now, AsyncCopyCompletions& done) override {
    done.copy_done(record, now + latency_);
  }
  bool receive_response(const MemRequest&, Cycle) override { return false; }

 private:
  bool take_ldgsts_;
  Cycle latency_;
};
WARPSIM_REGISTER_COMPONENT(AsyncCopyEngine, FixedLatencyCopyEngine, "async_copy", "fixed_latency", "test copy engine");

WarpInst op_only(Opcode op, std::uint32_t aux = 0) {
  WarpInst in;
  in.op = op;
  in.aux = aux;
  return in;
}

}  // namespace

TEST_CASE("slots: the L1 is created through the registry - l1.impl picks the implementation", "[sm][e2e][mem][slots]") {
  // The same line loaded twice, the second time after the first has arrived: the shipped L1 hits, the
  // uncached one misses again (and goes to L2, where it hits).
  // Registered when the test runs rather than at static initialisation: the first implementation registered
  // for a slot is its default, and static initialisation order across files is the link order.
  {
    WARPSIM_REGISTER_COMPONENT(L1Cache, UncachedL1, "l1", "uncached", "L1 that never hits (registered by a unit test)");
  }
  const std::vector<std::vector<WarpInst>> warps = {{ldg(5, 0x20000), ffma(6, 5, 2, 3), ldg(7, 0x20000), ffma(8, 7, 2, 3)}};
  const KernelResult sectored = run_warps(small_h100(), warps);
  // Switching `impl` drops the file's values for the section: give the uncached L1 the same ones.
  std::vector<std::string> uncached_l1 = {"l1.impl=uncached"};
  const Config shipped = small_h100();
  const Schema l1_schema = Registry::instance().find("l1", "sectored")->schema();
  for (const ParamSpec& spec : l1_schema.params())
    uncached_l1.push_back("l1." + spec.name + "=" + std::to_string(shipped.section("l1").u64(spec.name)) +
                          (spec.type == ParamType::Size ? "B" : ""));
  const KernelResult uncached = run_warps(small_h100(uncached_l1), warps);
  CHECK(sectored.l1_hit_rate == 0.5);  // 1 of the 2 sectors looked up
  CHECK(uncached.l1_hit_rate == 0.0);
  CHECK(uncached.cycles > sectored.cycles);
  CHECK(uncached.dram_bytes_read == sectored.dram_bytes_read);  // the second miss hits in L2
}

TEST_CASE("slots: an asynchronous copy engine takes instructions from the LSU and completes them", "[sm][e2e][mem][slots]") {
  // (The shipped engine, `tma`, takes only UTMALDG: the test engine is selected by name.)
  // LDGSTS, commit it as a group, wait for the group: DEPBAR holds the warp until the copy is complete.
  const std::vector<std::vector<WarpInst>> warps = {
      {mem_inst(Opcode::LDGSTS, 0x30000, 4, 4), op_only(Opcode::LDGDEPBAR), op_only(Opcode::DEPBAR, 0), ffma(6, 2, 3, 4)}};
  const KernelResult lsu = run_warps(small_h100(), warps);
  const KernelResult engine = run_warps(small_h100({"async_copy.impl=fixed_latency", "async_copy.take_ldgsts=true", "async_copy.latency=300"}), warps);
  INFO("lsu: " << stalls_str(lsu));
  INFO("engine: " << stalls_str(engine));
  CHECK(lsu.dram_bytes_read > 0);      // the LSU fetched the line from DRAM
  CHECK(engine.dram_bytes_read == 0);  // the engine moved nothing through L2
  CHECK(engine.cycles >= 300);         // DEPBAR waited for copy_done
  CHECK(engine.cycles <= 300 + 20);
  CHECK(stall(engine, "stall_long_scoreboard") >= 300 - 5);
}

TEST_CASE("TMA: a bulk copy is in no cp.async group: DEPBAR waits only for the LDGSTS, EXIT for both", "[sm][e2e][tma]") {
  // In PTX, mbarrier-completed bulk copies (cp.async.bulk) are not in cp.async groups. A 256-line box takes
  // async_copy.latency + 256 lines of issue + a DRAM round trip; the 16 B LDGSTS only the round trip, so a DEPBAR 0
  // after it waits as long as it does without the box, while the warp's EXIT still drains the box.
  const Config cfg = small_h100();
  const WarpInst init = mbar_op(Opcode::MBARRIER_INIT, 0, 1), expect = mbar_op(Opcode::SYNCS_ARRIVE_TRANS64, 0, 256 * 128);
  const WarpInst box = tma_load(0x80000, 256, 128, 0), cp = mem_inst(Opcode::LDGSTS, 0x30000, 0, 16);
  const std::vector<WarpInst> copy_only = {init, expect, cp, op_only(Opcode::LDGDEPBAR), op_only(Opcode::DEPBAR, 0)};
  const std::vector<WarpInst> with_box = {init, expect, box, cp, op_only(Opcode::LDGDEPBAR), op_only(Opcode::DEPBAR, 0)};
  const std::vector<WarpInst> box_only = {init, expect, box};
  const KernelResult a = run_warps(cfg, {copy_only});
  const KernelResult b = run_warps(cfg, {with_box});
  const KernelResult c = run_warps(cfg, {box_only});
  INFO("LDGSTS alone: " << stalls_str(a));
  INFO("LDGSTS and box: " << stalls_str(b));
  INFO("box alone: " << stalls_str(c));
  REQUIRE(c.cycles > a.cycles + 200);  // the box takes longer by far: a wait for it would show
  const double alone = static_cast<double>(stall(a, "stall_long_scoreboard"));
  const double mixed = static_cast<double>(stall(b, "stall_long_scoreboard"));
  CHECK(mixed <= alone + 8);
  CHECK(mixed >= alone - 8);
  CHECK(b.cycles + 8 >= c.cycles);  // EXIT waited for the box
  CHECK(stall(b, "stall_drain") >= c.cycles - a.cycles - 16);
}

TEST_CASE("config: L1 and L2 must agree on line and sector sizes", "[sm][config]") {
  CHECK_THROWS_WITH(Gpu(small_h100({"l2.sector_size=64B"})), Catch::Contains("same line and sector sizes"));
}

TEST_CASE("e2e: a very slow memory is slow progress, not a deadlock", "[sm][e2e][watchdog]") {
  // 1 MB/s of HBM: one 32-byte access takes far longer than the watchdog's window; the run must finish.
  const KernelResult r =
      run_warps(small_h100({"hbm.bandwidth=1MB/s", "sim.watchdog_cycles=10000", "sim.progress_check_cycles=1000"}),
                {{ldg(5, 0x80000), ffma(6, 5, 2, 3)}});
  CHECK(r.time_us > 1.0);
}

// ==== the no-progress watchdog observes and never perturbs ====================================================

namespace {

// Every kernel's timing and every counter, as one comparable text.
std::string run_fingerprint(const RunResult& r) {
  std::string s = "total_cycles=" + std::to_string(r.total_cycles);
  for (const KernelResult& k : r.kernels) {
    s += "\n" + k.name + " start=" + std::to_string(k.start_cycle) + " cycles=" + std::to_string(k.cycles);
    for (const StatValue& v : k.stats.totals) s += " " + v.name + "=" + std::to_string(v.value);
  }
  return s;
}

RunResult run_trace(const Config& cfg, TraceSource& trace) {
  Gpu g(cfg);
  RunOptions opt;
  return g.run(trace, run_without_systemc, opt);
}

// `count` kernels of three one-warp CTAs, each a short FFMA chain: kernel ends and starts come every few dozen
// cycles, so a check tick that moved any of them would show.
InMemoryTrace many_short_kernels(int count) {
  std::vector<InMemoryKernel> kernels;
  for (int i = 0; i < count; ++i) {
    InMemoryKernel k;
    k.info.name = "short" + std::to_string(i);
    k.info.grid = Dim3{3, 1, 1};
    k.info.block = Dim3{32, 1, 1};
    k.info.registers_per_thread = 32;
    k.info.target_arch = "sm_90";
    for (int c = 0; c < 3; ++c)
      k.ctas.push_back({InMemoryKernel::Warp{dependent_ffma_chain(3 + (i + c) % 5), {}}});
    kernels.push_back(std::move(k));
  }
  return InMemoryTrace(std::move(kernels), "many short kernels");
}

}  // namespace

TEST_CASE("watchdog: sim.progress_check_cycles never changes results", "[sm][e2e][watchdog]") {
  // Found by fuzzing (issue 6, finding 9): 200 short kernels took 10,200 or 10,400 cycles depending on it.
  const std::vector<std::string> periods = {"1", "7", "500", ""};  // "" = the shipped default
  auto with_period = [](const std::string& p, std::vector<std::string> ov) {
    if (!p.empty()) ov.push_back("sim.progress_check_cycles=" + p);
    return ov;
  };
  SECTION("many short kernels") {
    std::string reference;
    for (const std::string& p : periods) {
      InMemoryTrace t = many_short_kernels(40);
      const std::string f = run_fingerprint(run_trace(small_h100(with_period(p, {"sm.count=2"})), t));
      if (reference.empty()) reference = f;
      INFO("progress_check_cycles=" << (p.empty() ? "default" : p));
      CHECK(f == reference);
    }
  }
  SECTION("a GEMM") {
    std::string reference;
    for (const std::string& p : periods) {
      const Config cfg = small_h100(with_period(p, {"sm.count=4"}));
      auto t = SynthRegistry::instance().make("gemm", {{"m", "256"}, {"n", "256"}, {"k", "256"}}, cfg);
      const std::string f = run_fingerprint(run_trace(cfg, *t));
      if (reference.empty()) reference = f;
      INFO("progress_check_cycles=" << (p.empty() ? "default" : p));
      CHECK(f == reference);
    }
  }
}

TEST_CASE("watchdog: a CTA stuck at a barrier is diagnosed at the barrier, with its arrivals", "[sm][e2e][watchdog]") {
  // Issue 6, finding 11: warps 0-2 wait at BAR 0 while warp 3 waits at BAR 1; the diagnosis named the
  // instruction after the BAR ("EXIT pc=16") instead of the barrier.
  WarpInst b1 = bar();
  b1.aux = 1;
  const std::vector<WarpInst> at_bar0 = {bar(), op_only(Opcode::EXIT)};
  InMemoryTrace t = one_cta_trace({at_bar0, at_bar0, at_bar0, {b1, op_only(Opcode::EXIT)}});
  Gpu g(small_h100({"sim.watchdog_cycles=2000", "sim.progress_check_cycles=500"}));
  RunOptions opt;
  CHECK_THROWS_WITH(g.run(t, run_without_systemc, opt), Contains("BAR id 0: 3 of 4 warps arrived"));
}

TEST_CASE("watchdog: a legal MMA with a huge latency is progress, not a deadlock", "[sm][e2e][watchdog]") {
  // Issue 6, finding 11: HMMA m=n=k=65535 (2 x 65535^3 flops in one instruction) was reported as a deadlock.
  // With power on, the kernel's power windows stay bounded: its 8.3 x 10^11 cycles are ~4.5 x 10^7 power.windows,
  // which once took 80 s to allocate; they are merged into at most 65536 longer ones that still add up to the
  // kernel's energy.
  const KernelResult r = run_warps(small_h100({"sim.watchdog_cycles=2000", "sim.progress_check_cycles=500", "power.enabled=true"}),
                                   {{hmma(DType::BF16, MmaShape{65535, 65535, 65535}, 8, 0, 4, 8), ffma(6, 8, 2, 3)}});
  CHECK(r.cycles > 1'000'000'000);
  REQUIRE(r.energy);
  CHECK(r.energy->windows.size() <= 65536);
  CHECK(r.energy->windows.size() > 32768);
  double joules = 0;
  std::uint64_t cycles = 0;
  for (const EnergySpan& w : r.energy->windows) joules += w.joules, cycles += w.cycles;
  CHECK(cycles == r.cycles);
  CHECK(joules == Approx(r.energy->joules).epsilon(1e-9));
  CHECK(r.energy->peak_w >= r.energy->average_w * (1 - 1e-9));
}

TEST_CASE("L2 partitions: a write from the home partition invalidates the other partition's copy", "[e2e][mem][l2]") {
  // Two SMs, one per L2 partition (SM i is in GPC i, GPC g in partition g * 2 / 2), two slices (one per partition).
  // One-CTA kernels go to SM 0, SM 1, SM 0 in turn. Kernel 0: SM 0 reads line X, homed in partition 1, from DRAM:
  // its partition's slice keeps a copy. Kernel 1: SM 1 (X's home partition) writes X. Kernel 2: SM 0 reads X again:
  // the copy must be gone, so the read crosses the partition link to the home slice (an L2 hit there), and does not
  // hit the stale copy near SM 0 (which costs a near L2 hit only).
  const Config cfg = small_h100({"sm.count=2", "noc.gpcs=2", "l2.slices=2", "l2.partitions=2"});
  Simulation sim;
  StatsRegistry stats;
  ProbeRegistry probes;
  BuildContext ctx(cfg, sim, stats, probes);
  const auto map = Registry::instance().create<AddressMap>("address_map", cfg.section("address_map"), ctx, 0);
  const std::uint64_t line = cfg.section("l2").u32("line_size");
  std::uint64_t x = 0x100000;
  while (map->slice_of(x) != 1) x += line;  // homed in slice 1, partition 1

  const double f_sm = cfg.section("clocks").real("sm"), f_l2 = cfg.section("clocks").real("l2");
  const Params& noc = cfg.section("noc");
  const double to_l2 = static_cast<double>(noc.u64("sm_to_gpc_latency") + noc.u64("gpc_to_partition_latency"));
  const double l2_hit = static_cast<double>(cfg.section("l1").u64("hit_latency")) +
                        (2 * to_l2 + static_cast<double>(cfg.section("l2").u64("hit_latency"))) * f_sm / f_l2;
  const double far_extra = 2 * static_cast<double>(noc.u64("partition_link_latency")) * f_sm / f_l2;

  auto one_cta = [](const std::string& name, std::vector<WarpInst> insts) {
    InMemoryKernel k;
    k.info.name = name;
    k.info.block = Dim3{32, 1, 1};
    k.info.target_arch = "sm_90";
    k.ctas = {{InMemoryKernel::Warp{std::move(insts), {}}}};
    return k;
  };
  InMemoryTrace t({one_cta("read_far", {ldg(5, x), ffma(6, 5, 2, 3)}), one_cta("write_home", {stg(x, 5)}),
                   one_cta("read_again", {ldg(5, x), ffma(6, 5, 2, 3)})},
                  "copy_invalidation");
  Gpu g(cfg);
  RunOptions opt;
  const RunResult r = g.run(t, run_without_systemc, opt);
  REQUIRE(r.kernels.size() == 3);
  // Kernel 0 ran far from X's home: DRAM plus the partition link's round trip (the placement this test relies on).
  REQUIRE(static_cast<double>(r.kernels[0].cycles) >= l2_hit + far_extra);
  REQUIRE(r.kernels[0].dram_bytes_read == 32);
  INFO("read again: " << r.kernels[2].cycles << " cycles; near L2 hit " << l2_hit << ", far L2 hit " << l2_hit + far_extra);
  CHECK(static_cast<double>(r.kernels[2].cycles) >= l2_hit + far_extra);
  CHECK(static_cast<double>(r.kernels[2].cycles) <= l2_hit + far_extra + 25);  // the home holds the written line
  CHECK(r.kernels[2].dram_bytes_read == 0);
}

// ==== named barriers with a thread count, and bar.arrive (trace format 1.4) ===================================

namespace {

WarpInst counted_bar(Opcode op, std::uint32_t id, std::uint8_t warps) {  // bar.sync / bar.arrive id, 32 * warps
  WarpInst in;
  in.op = op;
  in.aux = id;
  in.group = warps;
  return in;
}

std::vector<WarpInst> then(std::vector<WarpInst> a, const std::vector<WarpInst>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A dependent FFMA chain whose records carry pcs from `pc` on (to tell warps apart in the issue order).
std::vector<WarpInst> chain_at(int n, std::uint32_t pc) {
  std::vector<WarpInst> v = dependent_ffma_chain(n);
  for (auto& in : v) in.pc = pc, pc += 16;
  return v;
}

}  // namespace

TEST_CASE("named barrier: 2 of 4 warps sync on barrier 1 with count 64 and are not held by the others", "[sm][e2e][barrier]") {
  // Warps 0 and 1 (sub-partitions 0 and 1): BAR 1 then a chain of n dependent FFMAs. Warps 2 and 3: the same chain
  // without a barrier. FP32 latency 6 (small_h100): a chain of n takes about 6n cycles.
  const int n = 150;
  const std::vector<WarpInst> chain = dependent_ffma_chain(n);
  const KernelResult counted = run_warps(small_h100(), {then({counted_bar(Opcode::BAR, 1, 2)}, chain),
                                                        then({counted_bar(Opcode::BAR, 1, 2)}, chain), chain, chain});
  // Contrast: the same BAR 1 without a count waits for every live warp, i.e. until warps 2 and 3 have exited.
  const KernelResult cta_wide = run_warps(small_h100(), {then({counted_bar(Opcode::BAR, 1, 0)}, chain),
                                                         then({counted_bar(Opcode::BAR, 1, 0)}, chain), chain, chain});
  INFO("counted: " << stalls_str(counted));
  INFO("CTA-wide: " << stalls_str(cta_wide));
  // Counted: the pair meets at once and all four chains run side by side: about 6n = 900 cycles.
  CHECK(counted.cycles >= 6 * (n - 1));
  CHECK(counted.cycles <= 6 * n + 40);
  CHECK(stall(counted, "stall_barrier") <= 10);  // two warps, a cycle or two each
  // CTA-wide: the pair waits for the other chains (about 6n each), then runs its own: about 12n = 1800 cycles.
  CHECK(cta_wide.cycles >= 2 * 6 * (n - 1));
  CHECK(stall(cta_wide, "stall_barrier") >= 2 * 6 * (n - 2));
  CHECK(total(counted, "sm.barrier_arrivals") == 2);
  CHECK(total(counted, "sm.barrier_phases") == 1);
}

TEST_CASE("named barrier: a ping-pong of bar.sync and bar.arrive alternates two warps' work", "[sm][e2e][barrier]") {
  // Warp A: k x (BAR.SYNC 1,64; work; BAR.ARV 2,64). Warp B: BAR.ARV 1,64 (lets A start), then
  // k x (BAR.SYNC 2,64; work; BAR.ARV 1,64). Work = w dependent FFMAs; A's at pcs 0x1000.., B's at 0x2000...
  const int k = 4, w = 20;
  std::vector<WarpInst> a, b = {counted_bar(Opcode::BAR_ARV, 1, 2)};
  for (int r = 0; r < k; ++r) {
    a = then(then(then(a, {counted_bar(Opcode::BAR, 1, 2)}), chain_at(w, 0x1000)), {counted_bar(Opcode::BAR_ARV, 2, 2)});
    b = then(then(then(b, {counted_bar(Opcode::BAR, 2, 2)}), chain_at(w, 0x2000)), {counted_bar(Opcode::BAR_ARV, 1, 2)});
  }
  InMemoryTrace t = one_cta_trace({a, b});
  Gpu g(small_h100());
  std::string order;  // 'A' or 'B' per issued work instruction, in issue order
  g.probes().listen<InstIssue>("sm[*].issue", [&](const InstIssue& i) {
    if (i.inst.op == Opcode::FFMA) order += i.inst.pc >= 0x2000 ? 'B' : 'A';
  });
  RunOptions opt;
  const RunResult run = g.run(t, run_without_systemc, opt);
  REQUIRE(run.kernels.size() == 1);
  const KernelResult& r = run.kernels[0];
  INFO(stalls_str(r) << " order " << order);
  // The work alternates in whole blocks: A, B, A, B, ... never two warps' FFMAs interleaved.
  std::string expected;
  for (int r2 = 0; r2 < k; ++r2) expected += std::string(w, 'A') + std::string(w, 'B');
  CHECK(order == expected);
  // Serialised: 2k blocks of about 6w cycles each (side by side they would take k blocks' time).
  CHECK(r.cycles >= 2 * k * 6 * (w - 1));
  CHECK(r.cycles <= 2 * k * (6 * w + 10) + 40);
  // Each warp waits while the other works: about (2k - 1) blocks between them.
  CHECK(stall(r, "stall_barrier") >= (2 * k - 1) * 6 * (w - 1));
  CHECK(total(r, "sm.barrier_arrivals") == 4 * k + 1);
  CHECK(total(r, "sm.barrier_arrive_only") == 2 * k + 1);
  CHECK(total(r, "sm.barrier_phases") == 2 * k);  // B's last arrival on barrier 1 has no partner: no phase
}

TEST_CASE("named barrier: bar.arrive does not wait", "[sm][e2e][barrier]") {
  // Warp 0: BAR.ARV 1,64 then 50 dependent FFMAs. Warp 1: 100 dependent FFMAs, then BAR.SYNC 1,64. Were the
  // arrive to wait, warp 0 would start its chain only after warp 1's (about 600 + 300 cycles).
  const KernelResult r = run_warps(small_h100(), {then({counted_bar(Opcode::BAR_ARV, 1, 2)}, dependent_ffma_chain(50)),
                                                  then(dependent_ffma_chain(100), {counted_bar(Opcode::BAR, 1, 2)})});
  INFO(stalls_str(r));
  CHECK(r.cycles >= 6 * 99);
  CHECK(r.cycles <= 6 * 100 + 40);
  CHECK(stall(r, "stall_barrier") <= 4);  // warp 1 arrives last: its phase completes at once
  CHECK(total(r, "sm.barrier_arrive_only") == 1);

  // Predicated off (no active lane, as Accel-Sim traces keep such lines), a bar.arrive is no arrival.
  WarpInst off = counted_bar(Opcode::BAR_ARV, 1, 2);
  off.active_mask = 0;
  const KernelResult p = run_warps(small_h100(), {{off}, {ffma(7, 2, 3, 4)}});
  CHECK(total(p, "sm.barrier_arrivals") == 0);
}

TEST_CASE("named barrier: bad input is one clear error", "[sm][e2e][barrier]") {
  SECTION("records: bar.arrive without a count, barrier id 16") {
    InMemoryTrace no_count = one_cta_trace({{counted_bar(Opcode::BAR_ARV, 1, 0)}}, 32, 0, "no_count");
    CHECK_THAT(input_error_of(small_h100(), no_count),
               Contains("BAR_ARV (bar.arrive) expecting 0 warps (expected 1..32: bar.arrive requires a thread count)"));
    InMemoryTrace id16 = one_cta_trace({{counted_bar(Opcode::BAR, 16, 1)}}, 32, 0, "id16");
    CHECK_THAT(input_error_of(small_h100(), id16), Contains("BAR with barrier id 16 (expected 0..15)"));
    CHECK_THAT(check_inst(counted_bar(Opcode::BAR, 16, 0)), Contains("BAR with barrier id 16 (expected 0..15)"));
  }
  SECTION("arrivals that disagree on the count within one phase, naming the kernel") {
    InMemoryTrace t = one_cta_trace({{counted_bar(Opcode::BAR, 1, 2)}, {counted_bar(Opcode::BAR, 1, 3)},
                                     {counted_bar(Opcode::BAR, 1, 2)}},
                                    32, 0, "warp_specialised");
    const std::string e = input_error_of(small_h100(), t);
    CHECK_THAT(e, Contains("kernel 'warp_specialised'") &&
                      Contains("arrivals on barrier 1 disagree on its count within one phase") &&
                      Contains("1 arrived expecting 64 threads, then a BAR (bar.sync) expecting 96 threads"));
    // bar.sync without a count (the whole CTA) and with one are different counts too.
    InMemoryTrace mixed = one_cta_trace({{counted_bar(Opcode::BAR, 1, 0)}, {counted_bar(Opcode::BAR_ARV, 1, 2)}}, 32, 0, "m");
    CHECK_THAT(input_error_of(small_h100(), mixed), Contains("expecting the whole CTA (no count), then a BAR_ARV"));
  }
  SECTION("a count above the CTA's warps") {
    InMemoryTrace t = one_cta_trace({{counted_bar(Opcode::BAR, 1, 4)}, {counted_bar(Opcode::BAR, 1, 4)}}, 32, 0, "big");
    CHECK_THAT(input_error_of(small_h100(), t),
               Contains("kernel 'big'") && Contains("expects 4 warps (128 threads), but the CTA has 2"));
  }
  SECTION("a counted barrier that can no longer complete is a deadlock diagnosis, not a hang") {
    // Warp 0 waits at BAR 1 for 64 threads; warp 1 exits without arriving. Exited warps do not lower a count
    // (unlike bar.sync without one), so nothing can release warp 0: the watchdog stops the run and names it.
    InMemoryTrace t = one_cta_trace({{counted_bar(Opcode::BAR, 1, 2), op_only(Opcode::EXIT)}, {ffma(7, 2, 3, 4)}});
    Gpu g(small_h100({"sim.watchdog_cycles=2000", "sim.progress_check_cycles=500"}));
    RunOptions opt;
    CHECK_THROWS_WITH(g.run(t, run_without_systemc, opt),
                      Contains("BAR id 1: 1 of 2 warps (bar.sync count 64 threads) arrived"));
  }
  SECTION("warps that all exit with a counted barrier half-arrived finish the CTA") {
    // bar.arrive without a partner is legal (e.g. the last signal of a pipeline): the CTA just ends.
    const KernelResult r = run_warps(small_h100(), {{counted_bar(Opcode::BAR_ARV, 3, 2)}, {ffma(7, 2, 3, 4)}});
    CHECK(r.cycles < 100);
    CHECK(total(r, "sm.barrier_phases") == 0);
  }
}

// ==== instruction fetch ==========================================================================================

namespace {

// The small H100 with its instruction caches: 32 KiB L0 per sub-partition (256 lines of 128 B), 128 KiB L1,
// an L0 miss costing 10 cycles from the L1 and 10 + 30 from beyond.
Config fetch_h100(std::vector<std::string> extra = {}) {
  std::vector<std::string> ov = {"sm.icache.l0_size=32KiB", "sm.icache.l0_assoc=8", "sm.icache.l1_size=128KiB",
                                 "sm.icache.l1_assoc=16", "sm.icache.line_size=128B", "sm.icache.l0_miss_latency=10",
                                 "sm.icache.l1_miss_latency=30"};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return small_h100(ov);
}

// `passes` runs over a loop body of `lines` code lines (8 independent FFMAs each, pc 16 B apart), the loop's
// code restarting at pc 0 each pass.
std::vector<WarpInst> looped_ffmas(int lines, int passes) {
  std::vector<WarpInst> v;
  for (int p = 0; p < passes; ++p)
    for (int i = 0; i < lines * 8; ++i) {
      WarpInst in = ffma(static_cast<std::uint16_t>(10 + i % 64), 2, 3, 4);
      in.pc = static_cast<std::uint32_t>(i * 16);
      v.push_back(in);
    }
  return v;
}

}  // namespace

TEST_CASE("instruction fetch: cold code costs each new line the L0 + L1 miss latency", "[sm][e2e][icache]") {
  const Config on = fetch_h100();
  const Config off = small_h100();
  // 100 lines of straight-line code, 800 independent FFMAs issuing every 2 cycles without the fetch model.
  const KernelResult a = run_warps(on, {looped_ffmas(100, 1)});
  const KernelResult b = run_warps(off, {looped_ffmas(100, 1)});
  INFO(stalls_str(a) << " | off: " << stalls_str(b));
  // Every line misses both levels: the warp reaches its first instruction one cycle after issuing the line
  // before, and waits 10 + 30 cycles from then instead of 1 more (the pipe's issue interval is 2): 39 per line
  // (the first line's wait starts at launch: up to one cycle more).
  CHECK(a.cycles - b.cycles >= 100 * (40 - 1));
  CHECK(a.cycles - b.cycles <= 100 * (40 - 1) + 1);
  CHECK(stall(a, "stall_no_instruction") >= 100 * 39);
  CHECK(stall(a, "stall_no_instruction") <= 100 * 40);
  CHECK(stall(b, "stall_no_instruction") == 0);
  CHECK(a.warp_instructions == b.warp_instructions);
}

TEST_CASE("instruction fetch: a loop that fits the L0 misses only on its first pass", "[sm][e2e][icache]") {
  const Config on = fetch_h100();
  // 128 lines = 16 KiB <= the 32 KiB L0: passes after the first hit; each costs 128 x 8 x 2 issue cycles.
  const KernelResult two = run_warps(on, {looped_ffmas(128, 2)});
  const KernelResult three = run_warps(on, {looped_ffmas(128, 3)});
  INFO(stalls_str(two));
  CHECK(three.cycles - two.cycles == 128 * 8 * 2);
  CHECK(stall(three, "stall_no_instruction") == stall(two, "stall_no_instruction"));
}

TEST_CASE("instruction fetch: a loop larger than the L0 misses it every pass but hits the L1", "[sm][e2e][icache]") {
  const Config on = fetch_h100();
  // 512 lines = 64 KiB: twice the L0 (LRU: every line is evicted before its next use), half the L1. Each pass
  // after the first costs every line its 8 issues (8 x 2 cycles) and the L0 miss latency less the one cycle the
  // warp would have waited for its pipe anyway: 16 + 10 - 1 = 25 cycles.
  const KernelResult two = run_warps(on, {looped_ffmas(512, 2)});
  const KernelResult three = run_warps(on, {looped_ffmas(512, 3)});
  INFO(stalls_str(two));
  CHECK(three.cycles - two.cycles == 512 * (8 * 2 + 10 - 1));
  CHECK(stall(three, "stall_no_instruction") - stall(two, "stall_no_instruction") >= 512 * 9);
}

TEST_CASE("instruction fetch: warps of one sub-partition share its L0, other sub-partitions fetch their own",
          "[sm][e2e][icache]") {
  const Config on = fetch_h100();
  const std::vector<WarpInst> code = looped_ffmas(64, 1);
  // Warps 0 and 4 share sub-partition 0 (warp w on w mod 4): warp 4 finds warp 0's lines fetched or in flight.
  // Warp 1 is on sub-partition 1 and misses them all again (its L0 is its own; the L1 has them).
  const KernelResult alone = run_warps(on, {code});
  const KernelResult shared = run_warps(on, {code, {}, {}, {}, code});
  const KernelResult apart = run_warps(on, {code, code});
  INFO(stalls_str(alone) << " | shared: " << stalls_str(shared) << " | apart: " << stalls_str(apart));
  // Sharing: the two warps wait for the same 64 fills, so neither waits longer than the lone warp did (the
  // second warp's issue slots interleave with the first's).
  CHECK(stall(shared, "stall_no_instruction") <= 2 * stall(alone, "stall_no_instruction"));
  CHECK(shared.cycles < alone.cycles + 64 * 8 * 2);
  // Apart: warp 1 misses its own L0 but hits the L1 the first warp filled (or joins its fill).
  CHECK(stall(apart, "stall_no_instruction") > stall(alone, "stall_no_instruction"));
}

TEST_CASE("instruction fetch: a second kernel's code is fetched again", "[sm][e2e][icache]") {
  const Config on = fetch_h100();
  InMemoryKernel k;
  k.info.name = "k";
  k.info.grid = Dim3{1, 1, 1};
  k.info.block = Dim3{32, 1, 1};
  k.info.registers_per_thread = 32;
  k.info.target_arch = "sm_90";
  k.ctas.push_back({InMemoryKernel::Warp{looped_ffmas(16, 1), {}}});
  InMemoryTrace two_kernels({k, k}, "two");
  Gpu g(on);
  RunOptions opt;
  const RunResult r = g.run(two_kernels, run_without_systemc, opt);
  REQUIRE(r.kernels.size() == 2);
  // Same code addresses, different kernels: the second finds none of the first's lines.
  CHECK(stall(r.kernels[1], "stall_no_instruction") == stall(r.kernels[0], "stall_no_instruction"));
  CHECK(stall(r.kernels[0], "stall_no_instruction") >= 16 * 39);
}

TEST_CASE("instruction fetch: impossible cache geometries are one clear error naming the key", "[sm][icache][config]") {
  try {
    Gpu g(fetch_h100({"sm.icache.l0_size=24KiB"}));
    FAIL("a 24 KiB 8-way L0 of 128 B lines (24 sets) was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Contains("sm.icache.l0_size") && Contains("power-of-two number of sets"));
  }
  try {
    Gpu g(fetch_h100({"sm.icache.l1_size=16KiB"}));
    FAIL("an L1 smaller than the L0 was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Contains("sm.icache.l1_size"));
  }
  try {
    Gpu g(fetch_h100({"sm.icache.line_size=96B"}));
    FAIL("a 96-byte line was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Contains("sm.icache.line_size") && Contains("power of two"));
  }
}

// ==== cache operators (WarpInst::cache, trace format 1.5): what a global load leaves in L1 ==========================

namespace cache_ops {

WarpInst hinted_ldg(std::uint16_t dst, std::uint64_t addr, CacheOp op) {
  WarpInst in = ldg(dst, addr);
  in.cache = op;
  return in;
}

}  // namespace cache_ops

TEST_CASE("cache operators: bypassing and non-allocating loads leave L1 alone, default ones fill it", "[sm][e2e][mem][cache_op]") {
  using cache_ops::hinted_ldg;
  const Config cfg = small_h100();
  // A line loaded twice, the second time once the first load's data is back.
  auto twice = [&](CacheOp first, CacheOp second) {
    return run_warps(cfg, {{hinted_ldg(5, 0x20000, first), ffma(6, 5, 2, 3), hinted_ldg(7, 0x20000, second),
                            ffma(8, 7, 2, 3)}});
  };
  const KernelResult plain = twice(CacheOp::Default, CacheOp::Default);
  CHECK(plain.l1_hit_rate == 0.5);  // the second load hits the line the first allocated
  // .STRONG.GPU first: not looked up, not allocated; the second (plain) load misses L1 and hits L2.
  const KernelResult bypass_first = twice(CacheOp::Bypass, CacheOp::Default);
  CHECK(bypass_first.l1_hit_rate == 0.0);  // 1 sector looked up (the second load's), no hit
  CHECK(bypass_first.cycles > plain.cycles + 100);  // an L2 round trip instead of an L1 hit
  CHECK(bypass_first.dram_bytes_read == plain.dram_bytes_read);  // L2 kept the line
  CHECK(total(bypass_first, "sm.global_l1_bypass_instructions") == 1);
  // .STRONG.GPU second: the line is in L1, yet the load reads L2 (L1 is not coherent at gpu scope).
  const KernelResult bypass_second = twice(CacheOp::Default, CacheOp::Bypass);
  CHECK(bypass_second.l1_hit_rate == 0.0);
  CHECK(bypass_second.cycles > plain.cycles + 100);
  // .NA first: looked up (a miss) but not allocated, so the second misses too; .NA second hits what is there.
  const KernelResult na_first = twice(CacheOp::NoAllocate, CacheOp::Default);
  CHECK(na_first.l1_hit_rate == 0.0);  // 2 sectors looked up, none hit
  CHECK(na_first.cycles > plain.cycles + 100);
  CHECK(total(na_first, "sm.global_no_allocate_instructions") == 1);
  const KernelResult na_second = twice(CacheOp::Default, CacheOp::NoAllocate);
  CHECK(na_second.l1_hit_rate == 0.5);
  CHECK(na_second.cycles == plain.cycles);
  // Evict-first and evict-last loads allocate like plain ones.
  CHECK(twice(CacheOp::EvictFirst, CacheOp::Default).l1_hit_rate == 0.5);
  CHECK(twice(CacheOp::EvictLast, CacheOp::Default).l1_hit_rate == 0.5);
}

TEST_CASE("cache operators: an L1 set evicts evict-first lines before the LRU one, evict-last lines after it", "[sm][e2e][mem][cache_op]") {
  using cache_ops::hinted_ldg;
  // No shared memory in use (not even the CTA's reserve), so that L1 is the whole unified SRAM.
  const Config cfg = small_h100({"sm.cta_reserved_shared_memory=0B"});
  const Params& l1 = cfg.section("l1");
  const std::uint64_t line = l1.u64("line_size"), ways = l1.u64("assoc");
  const std::uint64_t set_stride = l1.u64("unified_size") / line / ways * line;  // lines this far apart share a set
  // Fill one set with `ways` lines (line 0 first: the least recently used), then one more line, then line 0 again.
  // Each load waits for the previous one's data, so the set sees them in this order.
  auto run = [&](CacheOp line0, CacheOp line1) {
    std::vector<WarpInst> w;
    for (std::uint64_t i = 0; i <= ways; ++i) {
      w.push_back(hinted_ldg(5, 0x100000 + i * set_stride, i == 0 ? line0 : i == 1 ? line1 : CacheOp::Default));
      w.push_back(ffma(6, 5, 2, 3));
    }
    w.push_back(hinted_ldg(5, 0x100000, CacheOp::Default));
    w.push_back(ffma(6, 5, 2, 3));
    return run_warps(cfg, {w});
  };
  const double lookups = static_cast<double>(ways + 2);
  // LRU: the extra line evicts line 0, whose reload misses.
  CHECK(run(CacheOp::Default, CacheOp::Default).l1_hit_rate == 0.0);
  // Line 1 loaded evict-first goes instead: line 0 is still there.
  CHECK(run(CacheOp::Default, CacheOp::EvictFirst).l1_hit_rate == Approx(1 / lookups));
  // Line 0 loaded evict-last outlives the normal lines: line 1 (now the LRU normal line) goes.
  CHECK(run(CacheOp::EvictLast, CacheOp::Default).l1_hit_rate == Approx(1 / lookups));
}

// ==== grid-wide semaphores: spin-waits on counters in global memory (sim/slots/grid_sync.h) =====================

namespace {

// One kernel of one-warp CTAs: ctas[c] is CTA c's warp.
InMemoryTrace one_warp_ctas_trace(const std::vector<std::vector<WarpInst>>& ctas) {
  InMemoryKernel k;
  k.info.name = "semaphores";
  k.info.grid = Dim3{static_cast<std::uint32_t>(ctas.size()), 1, 1};
  k.info.block = Dim3{32, 1, 1};
  k.info.registers_per_thread = 32;
  k.info.target_arch = "sm_90";
  for (const auto& insts : ctas) k.ctas.push_back({InMemoryKernel::Warp{insts, {}}});
  return InMemoryTrace({std::move(k)}, "semaphores");
}

constexpr std::uint64_t kFlag = 0x200000;

// Thread 0 adds 1 to the flag (red.release.gpu.add): an arrival.
WarpInst arrive_on_flag(std::uint32_t mask = 1u) {
  WarpInst red = mem_inst(Opcode::RED, kFlag, 4, 4);
  red.active_mask = mask;
  red.num_src = 1;
  red.src[0] = 2;
  return red;
}
// Thread 0's spin-wait poll: `while (ld.acquire.gpu(flag) < arrivals)`, the value into R5.
WarpInst poll_flag(std::uint32_t arrivals) {
  WarpInst ld = mem_inst(Opcode::LDG, kFlag, 0, 4);
  ld.active_mask = 1u;
  ld.cache = CacheOp::Bypass;
  ld.num_dst = 1;
  ld.dst[0] = 5;
  ld.aux = arrivals;
  return ld;
}

}  // namespace

TEST_CASE("grid-wide semaphores: a CTA spinning on a counter goes on only after another CTA's arrival", "[sm][e2e][semaphore]") {
  // CTA 0 computes a 400-FFMA dependent chain (6 cycles each: 2400 cycles), then thread 0 arrives on the flag. CTA
  // 1 spins until the flag has 1 arrival, then computes the same chain. Both are resident at once on the one SM.
  const int chain = 400;
  const double chain_cycles = chain * 6.0;
  auto producer = dependent_ffma_chain(chain);
  producer.push_back(arrive_on_flag());
  auto run = [&](std::uint32_t arrivals) {
    std::vector<WarpInst> consumer{poll_flag(arrivals), ffma(1, 5, 2, 3)};
    const auto rest = dependent_ffma_chain(chain);
    consumer.insert(consumer.end(), rest.begin(), rest.end());
    InMemoryTrace t = one_warp_ctas_trace({producer, consumer});
    return run_one(small_h100(), t);
  };
  const KernelResult waits = run(1), free = run(0);
  INFO("waiting " << stalls_str(waits) << "\nnot waiting " << stalls_str(free));
  // Waiting, the chains run one after the other; not waiting (a plain load, aux 0), side by side.
  CHECK(waits.cycles >= 2 * chain_cycles);
  CHECK(free.cycles < 1.5 * chain_cycles);
  CHECK(total(waits, "sm.semaphore_arrivals") == 1);
  // Each poll takes an L2 round trip (past L1), so a 2400-cycle wait is a few polls, not one per cycle.
  const double l2_path = 2.0 * (small_h100().section("noc").u64("sm_to_gpc_latency") +
                                small_h100().section("noc").u64("gpc_to_partition_latency"));
  CHECK(total(waits, "sm.spin_polls") >= 1);
  CHECK(total(waits, "sm.spin_polls") <= chain_cycles / l2_path + 1);
  CHECK(total(free, "sm.spin_polls") == 0);
  // The polls are executed instructions (as a spin loop's loads are), beside the trace's.
  CHECK(waits.warp_instructions == free.warp_instructions + static_cast<std::uint64_t>(total(waits, "sm.spin_polls")));
}

TEST_CASE("grid-wide semaphores: a wait for arrivals that never come is an input error naming the word", "[sm][e2e][semaphore][errors]") {
  const Config cfg = small_h100({"sim.watchdog_cycles=20000", "sim.progress_check_cycles=1000"});
  // One arrival, two awaited.
  InMemoryTrace short_one = one_warp_ctas_trace({{arrive_on_flag()}, {poll_flag(2), ffma(1, 5, 2, 3)}});
  const std::string e = input_error_of(cfg, short_one);
  CHECK_THAT(e, Contains("kernel 'semaphores', CTA 1") && Contains("spin-wait on global word 0x200000") &&
                    Contains("waits for 2 arrivals and has seen 1") && Contains("sim.watchdog_cycles 20000"));
  // An atomic of a whole warp is data, not one thread's arrival on a semaphore.
  InMemoryTrace warp_wide = one_warp_ctas_trace({{arrive_on_flag(0xffffffffu)}, {poll_flag(1), ffma(1, 5, 2, 3)}});
  CHECK_THAT(input_error_of(cfg, warp_wide), Contains("waits for 1 arrivals and has seen 0"));
}

TEST_CASE("setmaxnreg: an increase waits until another warp's decrease has released the registers", "[sm][e2e][setmaxnreg]") {
  const Config cfg = small_h100();
  auto setmaxnreg = [](std::uint32_t registers, bool increase) {
    WarpInst in;
    in.op = Opcode::USETMAXREG;
    in.aux = registers;
    in.group = increase ? 1 : 0;
    return in;
  };
  // Launched with 104 registers per thread: warp 0 (the producer) runs 10 dependent FFMAs, then gives 64 up (down
  // to 40); warp 1 (a consumer) asks for 168 at once, 64 more than it has, and can only have them then.
  std::vector<WarpInst> producer = dependent_ffma_chain(10);
  producer.push_back(setmaxnreg(40, false));
  const std::vector<WarpInst> consumer = {setmaxnreg(168, true), ffma(7, 2, 3, 4)};
  InMemoryTrace trace = one_cta_trace({producer, consumer}, 104);
  const KernelResult r = run_one(cfg, trace);
  INFO(stalls_str(r));
  CHECK(r.warp_instructions == 13);
  // The dec issues after the chain's 9 x 6 cycles; the consumer waited (stall_misc) until then.
  CHECK(stall(r, "stall_misc") >= 54);
  CHECK(stall(r, "stall_misc") <= 57);
  SECTION("more than the CTA's allocation is refused by name once no warp can release more") {
    // The other warp's exit releases its 104 registers per thread; 256 needs 152 more.
    InMemoryTrace greedy = one_cta_trace({dependent_ffma_chain(3), {setmaxnreg(256, true), ffma(7, 2, 3, 4)}}, 104);
    const std::string error = input_error_of(cfg, greedy);
    CHECK_THAT(error, Catch::Contains("setmaxnreg.inc to 256") && Catch::Contains("no warp left that could release"));
  }
  SECTION("a larger increase waits while a smaller one it could not cover goes first, and is then served") {
    // The first warp's exit releases 104 x 32; the 256-register increase needs 152 x 32 more and waits; the
    // 120-register one needs 16 x 32, takes them and then drops to 24, releasing enough for the first.
    InMemoryTrace order = one_cta_trace(
        {dependent_ffma_chain(3), {setmaxnreg(256, true), ffma(7, 2, 3, 4)},
         {setmaxnreg(120, true), setmaxnreg(24, false), ffma(7, 2, 3, 4)}}, 104);
    CHECK(input_error_of(cfg, order).empty());
    InMemoryTrace again = one_cta_trace(
        {dependent_ffma_chain(3), {setmaxnreg(256, true), ffma(7, 2, 3, 4)},
         {setmaxnreg(120, true), setmaxnreg(24, false), ffma(7, 2, 3, 4)}}, 104);
    CHECK(run_one(cfg, again).warp_instructions == 3 + 2 + 3);
  }
  SECTION("a decrease that raises the count is an error") {
    InMemoryTrace wrong = one_cta_trace({{setmaxnreg(128, false)}}, 104);
    CHECK_THAT(input_error_of(cfg, wrong), Catch::Contains("setmaxnreg.dec to 128 registers from 104"));
  }
}
