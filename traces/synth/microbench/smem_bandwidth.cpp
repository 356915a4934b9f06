// Microbenchmark `smem_bandwidth`: every warp loads (LDS), stores (STS) or ldmatrix-loads (LDSM.x4) shared memory
// `iterations` times, in a bank pattern chosen by one of:
//  - conflict_ways n: lanes come in groups of 32/n consecutive `width`-byte words covering smem.banks/n banks, one
//    group per bank row (smem.banks x 4 B = 128 B), so the groups fall on the same banks at different addresses.
//    n = 1 is the conflict-free contiguous access (each bank holds width/4 of the warp's words, the minimum);
//    n puts n times that on each bank used. At most 128/width ways (a lane's own words span width/4 banks).
//  - stride s: lane i accesses the `width`-byte element i*s (the classic strided microbenchmark: with 4-byte
//    words a stride of s words is a gcd(s, 32)-way conflict, so 128/s B/clk for s = 1, 2, 4, ... 32).
//  - op ldmatrix: LDSM.x4 of a 16x16 block of 16-bit elements from a tile of 128-byte rows, `layout` swizzled
//    (the XOR swizzle CUTLASS and FlashAttention use: the 8 rows of each 8x8 matrix on 8 bank groups, one
//    wavefront per matrix) or linear (row-major: the 8 rows on the same 4 banks, 8-way).
// The accesses of a warp are independent (4 destination register sets rotate), so the warp keeps the LSU busy;
// `chain` makes each access's address the previous access's result (a pointer chase: cycles per access = latency).
// `cluster` n > 1: clusters of n CTAs, each CTA accessing the shared memory of the next rank's (distributed shared
// memory, ld/st.shared::cluster: the ring of Luo et al.'s SM-to-SM benchmark).
// Grid: sm.count * ctas_per_sm CTAs of `threads` threads.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/microbench/microbench.h"

namespace warpsim::synth::microbench {
namespace {

constexpr std::uint32_t kBankBytes = 4;
constexpr std::uint16_t kData = 0, kLoopCounter = 16, kAddr = 17;
constexpr std::uint32_t kUnroll = 4;  // accesses per loop iteration, into rotating destinations

constexpr std::uint32_t kLdsmTileRows = 2 * kLdsmRows;  // the 16x16 block an ldmatrix.x4 reads

enum class SmemOp { Load, Store, Ldmatrix };

struct SmemPlan {
  SmemOp op = SmemOp::Load;
  std::uint32_t width = 4, ways = 1, stride = 1, banks = 32;
  std::uint64_t iterations = 0;
  std::uint32_t cluster = 1;  // CTAs per cluster; > 1: each CTA accesses rank (own + 1) % cluster's shared memory
  bool chain = false;         // each access's address is the previous one's result
  std::array<std::int32_t, kWarpSize> ldsm{};  // Ldmatrix: lane offsets of the LDSM.x4
  // Bytes each lane accesses per instruction: its width, or one 16-byte matrix row of an ldmatrix.
  std::uint32_t lane_bytes() const { return op == SmemOp::Ldmatrix ? kVecBytes : width; }
  // Lanes per group of the conflict_ways pattern: a group covers banks/ways banks of one bank row.
  std::uint32_t group_lanes() const {
    return std::min<std::uint32_t>(kWarpSize, banks * kBankBytes / ways / width);
  }
  LaneRows lanes(std::uint64_t base) const {
    if (stride > 1) return LaneRows{base, width, kWarpSize, 0};  // the stride is set on the instruction
    return LaneRows{base, width, group_lanes(), std::uint64_t{banks} * kBankBytes};
  }
  std::uint64_t footprint() const {
    if (op == SmemOp::Ldmatrix) return kLdsmTileRows * kSwizzleLineBytes;
    if (stride > 1) return std::uint64_t{kWarpSize} * stride * width;
    return lanes(0).row_pitch * (kWarpSize / group_lanes());
  }
};

// LDSM.x4 lane offsets over rows 0-15, 16-byte chunks 0-1 of a tile of 128-byte rows (an mma A fragment's order).
std::array<std::int32_t, kWarpSize> ldsm_offsets(bool swizzled) {
  constexpr std::uint32_t chunks_per_row = kSwizzleLineBytes / kVecBytes;
  if (swizzled) return ldmatrix_x4_offsets(0, 0, 0, chunks_per_row, LdsmOrder::RowHalvesFirst);
  std::array<std::int32_t, kWarpSize> lanes{};
  for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
    const std::uint32_t q = lane / kLdsmRows, row = (q % 2) * kLdsmRows + lane % kLdsmRows, chunk = q / 2;
    lanes[lane] = static_cast<std::int32_t>(row * kSwizzleLineBytes + chunk * kVecBytes);
  }
  return lanes;
}

StepProgram smem_program(std::shared_ptr<const SmemPlan> p, std::uint64_t cta, std::uint32_t warp) {
  StepProgram prog;
  prog.prologue = [](InstChunk& c) {
    emit_alu(c, Opcode::S2R, kAddr, {});
    emit_alu(c, Opcode::MOV, kLoopCounter, {});
  };
  prog.steps = (p->iterations + kUnroll - 1) / kUnroll;
  // Clusters are consecutive CTA ids (grid.x = the cluster's x): rank = cta % cluster.
  const std::uint16_t peer = p->cluster > 1 ? static_cast<std::uint16_t>(1u << ((cta % p->cluster + 1) % p->cluster)) : 0;
  prog.step = [p, warp, peer](InstChunk& c, std::uint64_t i) {
    c.set_pc(2 * kInstBytes);
    const std::uint64_t base = std::uint64_t{warp} * p->footprint();
    const LaneRows lanes = p->lanes(base);
    const std::uint32_t regs = std::max<std::uint32_t>(p->lane_bytes() / kBankBytes, 1);
    for (std::uint32_t u = 0; u < kUnroll; ++u) {
      if (i * kUnroll + u >= p->iterations) { c.skip(); continue; }
      const std::uint16_t dst = reg(kData + u * regs);
      if (p->op == SmemOp::Ldmatrix) {
        emit_ldmatrix_x4(c, base, p->ldsm.data(), dst, kAddr);
        continue;
      }
      // A chain's address is the previous access's result (the first's: the address register).
      const std::uint16_t addr = p->chain && (i * kUnroll + u) > 0 ? reg(kData + ((u + kUnroll - 1) % kUnroll) * regs) : kAddr;
      WarpInst& inst = p->op == SmemOp::Store
                           ? emit_store(c, Opcode::STS, MemSpace::Shared, lanes, kFullMask, {dst, addr})
                           : emit_load(c, Opcode::LDS, MemSpace::Shared, lanes, kFullMask, dst, regs, {addr});
      if (p->stride > 1) inst.stride = static_cast<std::int32_t>(p->stride * p->width);
      inst.mma.m = peer;  // WarpInst::cluster_cta_mask(): the CTA whose shared memory it is
    }
    emit_loop_tail(c, kLoopCounter, kLoopPred);
  };
  return prog;
}

std::unique_ptr<TraceSource> make_smem(const SynthArgs& args, const Config& config) {
  auto plan = std::make_shared<SmemPlan>();
  const std::string& op = args.text("op");
  plan->op = op == "store" ? SmemOp::Store : op == "ldmatrix" ? SmemOp::Ldmatrix : SmemOp::Load;
  plan->width = static_cast<std::uint32_t>(std::stoul(args.text("width")));
  plan->ways = static_cast<std::uint32_t>(args.u64("conflict_ways"));
  plan->stride = static_cast<std::uint32_t>(args.u64("stride"));
  plan->banks = config.section("smem").u32("banks");
  plan->iterations = args.u64("iterations");
  plan->cluster = static_cast<std::uint32_t>(args.u64("cluster"));
  plan->chain = args.text("chain") == "true";
  if (plan->chain && plan->op != SmemOp::Load)
    throw InputError("smem_bandwidth key 'chain': a pointer chase is of loads (op load)");
  if (plan->cluster > 1 && plan->op == SmemOp::Ldmatrix)
    throw InputError("smem_bandwidth key 'cluster': ldmatrix reads the CTA's own shared memory only");
  if (plan->cluster > 1 &&
      (config.section("smem").u64("remote_latency") == 0 || config.section("smem").real("remote_bytes_per_cycle") <= 0))
    throw InputError(fmt::format("smem_bandwidth key 'cluster': this GPU ({}) has no distributed shared memory "
                                 "(smem.remote_latency or smem.remote_bytes_per_cycle is 0)",
                                 config.section("gpu").str("arch")));
  if (plan->op == SmemOp::Ldmatrix) plan->ldsm = ldsm_offsets(args.text("layout") == "swizzled");
  if (plan->ways > 1 && plan->stride > 1)
    throw InputError(fmt::format("smem_bandwidth keys 'conflict_ways' ({}) and 'stride' ({}): give one pattern, not "
                                 "both", plan->ways, plan->stride));
  if (plan->op == SmemOp::Ldmatrix && (plan->ways > 1 || plan->stride > 1))
    throw InputError("smem_bandwidth op 'ldmatrix': its pattern is the 'layout' key (swizzled or linear); "
                     "'conflict_ways' and 'stride' must be left at 1");
  const std::uint32_t row_bytes = plan->banks * kBankBytes;
  if (plan->op != SmemOp::Ldmatrix && (kWarpSize % plan->ways || row_bytes % (plan->ways * plan->width)))
    throw InputError(fmt::format("smem_bandwidth key 'conflict_ways': {} does not divide the 32 lanes of a warp, or "
                                 "the {} banks into groups of whole {}-byte lanes (width {}: at most {} ways)",
                                 plan->ways, plan->banks, plan->width, plan->width, row_bytes / plan->width));
  const std::uint64_t threads = args.u64("threads");
  if (threads % kWarpSize)
    throw InputError(fmt::format("smem_bandwidth key 'threads': {} is not a multiple of the warp size", threads));
  KernelInfo info;
  info.block = block_of_warps("smem_bandwidth", "threads", threads / kWarpSize, config);
  info.grid.x = static_cast<std::uint32_t>(config.section("sm").u64("count") * args.u64("ctas_per_sm"));
  if (plan->cluster > 1) {
    if (info.grid.x % plan->cluster)
      throw InputError(fmt::format("smem_bandwidth key 'cluster': {} CTAs (sm.count x ctas_per_sm) do not split into "
                                   "clusters of {}", info.grid.x, plan->cluster));
    info.cluster = Dim3{plan->cluster, 1, 1};
  }
  const std::uint64_t smem = plan->footprint() * info.warps_per_cta();
  const std::uint64_t limit = config.section("sm").u64("shared_memory_per_cta");
  if (smem > limit)
    throw InputError(fmt::format("smem_bandwidth: {} warps x {} B exceed this GPU's sm.shared_memory_per_cta ({} B)",
                                 info.warps_per_cta(), plan->footprint(), limit));
  info.shared_mem_bytes = static_cast<std::uint32_t>(smem);
  if (plan->cluster > 1) {
    // The scheduler may put several of a cluster's CTAs on one SM; asking for an SM's share of shared memory keeps
    // ctas_per_sm CTAs on each, so every SM's traffic crosses the SM-to-SM network as the benchmark means.
    const Params& sm = config.section("sm");
    const std::uint64_t share = sm.u64("shared_memory") / args.u64("ctas_per_sm") - sm.u64("cta_reserved_shared_memory");
    info.shared_mem_bytes = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(share, smem, limit));
  }
  info.name = plan->op == SmemOp::Ldmatrix
                  ? fmt::format("warpsim_smem_ldmatrix_x4_{}", args.text("layout"))
                  : plan->stride > 1 ? fmt::format("warpsim_smem_{}_{}B_stride{}", op, plan->width, plan->stride)
                                     : fmt::format("warpsim_smem_{}_{}B_{}way", op, plan->width, plan->ways);
  if (plan->chain) info.name += "_chain";
  if (plan->cluster > 1) info.name += fmt::format("_cluster{}_remote", plan->cluster);
  info.registers_per_thread = 32;
  info.target_arch = config.section("gpu").str("arch");
  return one_kernel_trace(info, [plan](std::uint64_t cta, std::uint32_t warp) { return smem_program(plan, cta, warp); },
                          "synthesized " + info.name);
}

std::map<std::string, double> smem_metrics(const SynthArgs& args, const Config& config, const WorkloadTiming& t) {
  const std::uint64_t threads = args.u64("threads");
  const double ctas = static_cast<double>(t.sm_count) * static_cast<double>(args.u64("ctas_per_sm"));
  const double lane_bytes = args.text("op") == "ldmatrix" ? kVecBytes : std::stod(args.text("width"));
  const double bytes = ctas * static_cast<double>(threads) * static_cast<double>(args.u64("iterations")) * lane_bytes;
  (void)config;
  const double per_clk_per_sm = t.cycles ? bytes / static_cast<double>(t.cycles) / t.sm_count : 0.0;
  return {{"bandwidth_bytes_per_clk_per_sm", per_clk_per_sm},
          {"bandwidth_gbps", per_second(bytes, t) / 1e9},
          {"latency_cycles", static_cast<double>(t.cycles) / static_cast<double>(args.u64("iterations"))}};
}

SynthesizerInfo smem_synthesizer() {
  SynthesizerInfo info;
  info.name = "smem_bandwidth";
  info.description = "shared-memory load, store or ldmatrix loop with a chosen bank-conflict pattern (n-way groups, "
                     "a lane stride, or a swizzled vs linear ldmatrix tile): shared-memory bandwidth per SM";
  info.keys = Schema("synth", "smem_bandwidth", info.description)
                  .uint("conflict_ways", "ways", 1, "1 = conflict-free, n = n-way bank conflicts (divides 32; at most 128/width)", 1, 32)
                  .uint("stride", "elements", 1,
                        "lane i accesses element i*stride (of width bytes): 4-byte words at a stride of s are "
                        "gcd(s,32)-way conflicted; not with conflict_ways", 1, 32)
                  .choice("width", {"4", "8", "16"}, std::string("4"), "bytes per lane (LDS.32/.64/.128; ldmatrix: not used, a lane reads a 16-byte row)")
                  .choice("op", {"load", "store", "ldmatrix"}, std::string("load"), "LDS, STS or LDSM.x4 (ldmatrix)")
                  .choice("layout", {"swizzled", "linear"}, std::string("swizzled"),
                          "ldmatrix: tile of 128-byte rows XOR-swizzled (conflict-free) or row-major (8-way)")
                  .uint("ctas_per_sm", "CTAs", 2, "CTAs per SM (grid = sm.count * ctas_per_sm)", 1, 64)
                  .uint("threads", "threads", 256, "threads per CTA (a multiple of 32)", 32, 1024)
                  .uint("iterations", "accesses", 1024, "shared-memory accesses per thread", 1, 1ull << 24)
                  .uint("cluster", "CTAs", 1,
                        "CTAs per cluster; above 1 each CTA accesses the next rank's shared memory (distributed shared "
                        "memory, sm_90)", 1, 16)
                  .choice("chain", {"false", "true"}, std::string("false"),
                          "each load's address is the previous load's result (a latency chase; op load)")
                  .params();
  info.factory = make_smem;
  info.metrics = {{"bandwidth_bytes_per_clk_per_sm", "B/cycle/SM", "bytes the lanes access / kernel cycles / SMs"},
                  {"bandwidth_gbps", "GB/s", "bytes the lanes access / kernel time, whole GPU"},
                  {"latency_cycles", "cycles",
                   "kernel cycles / iterations: one load's latency with chain true, 32 threads, 1 CTA per SM"}};
  info.derive = smem_metrics;
  return info;
}

}  // namespace
}  // namespace warpsim::synth::microbench

WARPSIM_REGISTER_SYNTHESIZER(smem_bandwidth, warpsim::synth::microbench::smem_synthesizer());
