// Tiled tensor-core GEMM synthesizer (see gemm.h and README.md in this directory).
//
// Two kernel structures:
//  * Multistage (sm_80): every warp loads (LDGSTS) and computes (LDSM + HMMA m16n8k16), CUTLASS's MmaMultistage.
//  * Warp-specialised (sm_90, sm_100 for now): warpgroup 0 loads, the other warpgroups issue HGMMA from shared
//    memory, CUTLASS 3's KernelTmaWarpSpecialized: one producer warp loads each k-tile with two TMA boxes
//    completed on a "full" mbarrier, consumers release stages on an "empty" one, wgmma runs asynchronously. Where
//    TMA cannot take the shape (rows of A/B not 16-byte aligned) or the GPU has none, the producer warpgroup
//    copies with LDGSTS + LDGDEPBAR/DEPBAR and one CTA-wide BAR per k-tile synchronises everyone.
// Both share the setup code, the global-to-shared copy pattern, the CTA rasterisation and the epilogue, and both
// support split-K (grid.z splits of the k-tiles, fp32 partial tiles reduced into C with RED). The instruction
// emitters, address patterns, epilogue and phase machine are the reusable pieces of emit.h, epilogue.h and
// tile_pipeline.h; this file says what is GEMM-specific.
#include "traces/synth/gemm.h"
#include "sim/core/types.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <vector>

#include "sim/core/error.h"
#include "traces/synth/emit.h"
#include "traces/synth/epilogue.h"
#include "traces/synth/generated.h"
#include "traces/synth/registry.h"
#include "traces/synth/tile_pipeline.h"

namespace warpsim {
namespace {

using namespace synth;

// ---- layout and hardware constants --------------------------------------------------------------------------
constexpr std::uint64_t kABase = 0x7f0000000000ull;  // A's address; B and C follow, each 1 MiB aligned
constexpr std::uint64_t kMatrixAlign = 1ull << 20;
constexpr MmaShape kHmmaShape = kMmaSyncShape;  // mma.sync.m16n8k16 (bf16/f16): m, n and the 32 bytes of K
constexpr std::uint32_t kFragBuffers = 2;       // fragments are double-buffered: k-step s+1 loads during s
constexpr MmaShape kDmmaShape{8, 8, 4};          // mma.sync.m8n8k4.f64 (SASS DMMA.884), sm_80 and sm_90
constexpr std::uint32_t kHgmmaM = 64;           // wgmma M per warpgroup
constexpr std::uint32_t kHgmmaMaxN = 256;
constexpr std::uint32_t kHgmmaAccIds = 4;           // register ids standing for a warp's HGMMA accumulator block
constexpr std::uint32_t kRegOverhead = 40;          // addresses, counters, epilogue temporaries (beyond acc + frags)
constexpr std::uint32_t kProducerRegs = 40;         // CUTLASS's setmaxnreg for the load warpgroup
constexpr std::uint32_t kConsumerRegOverhead = 104;
constexpr std::uint32_t kConsumerRegsMax = 240;
constexpr std::uint32_t kRegGranule = 8;
constexpr std::uint16_t kPredLoop = 248;  // predicate registers P0, P1 get ids above every GPR id used (< 255 = RZ)
constexpr std::uint16_t kPredGuard = 249;
constexpr std::uint16_t kPredRole = 250;
constexpr std::uint16_t kFirstPredId = kPredLoop;
constexpr std::uint32_t kMinChunkInsts = 64;  // consumers batch k-tiles until a chunk has this many records

// Instructions of the fixed code sections (kept in step with the emitters below; used to lay out the code).
constexpr std::uint32_t kSetupInsts = 12;
constexpr std::uint32_t kRoleDispatchInsts = 2;  // warp-specialised: ISETP + BRA to the consumer branch
constexpr std::uint32_t kPrologueIntInsts = 3;   // per prologue stage: advance A, B pointers, smem write slot
constexpr std::uint32_t kLoopTailInsts = 3;      // IADD3 counter, ISETP, BRA
constexpr std::uint32_t kNextTileInsts = 6;      // stream-K, a segment after the first: BAR, 4 IMAD, MOV
// Persistent sm_90 kernel, per output tile (PersistentTileSchedulerSm90's fetch of the next work tile): IADD3 of the
// linear tile index by the grid, ISETP (any left?), IMAD tile m and n (the rasterisation's divmods), IMAD of the
// tile's A and B coordinates. Counted from the scheduler's structure, not from a SASS listing.
constexpr std::uint32_t kPersistentTileInsts = 6;
// TMA producer warp per k-tile: mbarrier wait (empty), arrive.expect_tx (full), UTMALDG A, UTMALDG B.
constexpr std::uint32_t kTmaProducerInsts = 4;
constexpr std::uint32_t kTmaScaleInsts = 2;  // block-scaled types: UTMALDG of A's scales, of B's
constexpr std::uint32_t kEpilogueBarrierInsts = 2;  // the producer branch's end: BAR, EXIT
// sm_100 tcgen05 MMA warp per k-tile: the accumulator wait (or its slot), the full wait, the k-steps' UTCMMAs, the
// stage's commit, the accumulator's commit (or its slot).
constexpr std::uint32_t kTcgen05MmaFixedInsts = 4;
constexpr std::uint32_t kTcgen05AccBuffers = 2;   // accumulators in tensor memory: tile t in buffer t % 2
constexpr std::uint32_t kTmemColumns = 512;       // b200.spec.tmem: 128 lanes x 512 32-bit columns
constexpr std::uint32_t kTcgen05MaxRows = 128;    // tcgen05.mma cta_group::1: M 64 or 128
// Ping-pong (CUTLASS 3 KernelTmaWarpSpecializedPingpong): two consumer warpgroups, and its OrderedSequenceBarrier
// of two stages (the MMAs' turn, the epilogue's) per warpgroup, each an mbarrier the other warpgroup's warps arrive on.
constexpr std::uint32_t kPingpongWarpgroups = 2;
constexpr std::uint32_t kPingpongOrderBarriers = 2 * kPingpongWarpgroups;
// sm_90 stream-K fixup: 16-byte vectors of partial sums each consumer thread has in flight while adding them (its
// fixup registers; CUTLASS's BlockStripedReduce loads a warpgroup's stripe at a time).
constexpr std::uint32_t kFixupVectors = 8;
// Named barriers 1 and 2: a consumer warpgroup's own synchronisation around its fixup (CUTLASS's StreamkBarrier0/1).
constexpr std::uint32_t kFixupBarrierBase = 1;

std::uint64_t round_up(std::uint64_t a, std::uint64_t b) { return ceil_div(a, b) * b; }
std::uint32_t round_up32(std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>(round_up(a, b)); }

bool is_ampere_arch(const std::string& arch) { return arch == "sm_80"; }

// fp4 (e2m1) holds two elements per byte along K. The generator works on the packed problem (storage_problem,
// storage_tiling, taken at the public entry points): K and tile_k count storage units, one byte of fp4 or one
// element of the other types; only the MMA instructions' shapes and the FLOPs count elements.
std::uint32_t k_elems_per_unit(DType t) { return t == DType::FP4 ? 2 : 1; }
GemmProblem storage_problem(GemmProblem p) {
  p.k /= k_elems_per_unit(p.dtype);
  return p;
}
GemmTiling storage_tiling(GemmTiling t, DType d) {
  t.tile_k /= k_elems_per_unit(d);
  return t;
}
std::uint32_t elem_bytes(DType t) { return (gemm_input_bits(t) * k_elems_per_unit(t) + 7) / 8; }  // per storage unit
// K of one MMA (mma.sync m16n8kK, wgmma m64nNkK): 32 bytes of K for every input type (PTX ISA: k16 for
// bf16/f16, k8 for tf32, k32 for e4m3/e5m2 and s8; tcgen05.mma kind::mxf4nvf4 k64 for e2m1). In storage units:
constexpr std::uint32_t kMmaKBytes = 32;
std::uint32_t mma_k_for(DType t) { return kMmaKBytes / elem_bytes(t); }

// NVFP4 block scales (block_scaled): one e4m3 byte per 16 elements of K in each row of A and B, stored as CUTLASS's
// Sm1xx scale-factor atoms of 128 rows x 4 scales (512 contiguous bytes) with the atoms of a row block K-major, so
// a row block's scales for one k-tile are contiguous. Rows are padded to whole atoms. A TMA box brings them into
// shared memory beside the stage's tiles (whence tcgen05.cp copies them into tensor memory: not generated, as
// tensor memory is not modelled).
constexpr std::uint32_t kScaleBlockElems = 16;
constexpr std::uint32_t kScaleAtomRows = 128;
constexpr std::uint32_t kScaleAtomBytes = 512;
bool block_scaled(DType t) { return t == DType::FP4; }
// Bytes of one row block's scales for `k_units` storage units of K.
std::uint64_t scale_block_bytes(DType t, std::uint64_t k_units) {
  return block_scaled(t) ? ceil_div(k_units * k_elems_per_unit(t), kScaleBlockElems * kScaleAtomBytes / kScaleAtomRows) *
                               kScaleAtomBytes
                         : 0;
}
// Row blocks of scales covering `rows` rows.
std::uint32_t scale_row_blocks(std::uint64_t rows) { return static_cast<std::uint32_t>(ceil_div(rows, kScaleAtomRows)); }
constexpr std::uint32_t kWorkspaceBytes = 4;  // fp32 (int32 for i8) C of a split-K kernel
std::uint32_t c_elem_bytes(DType t, std::uint32_t split_k) {
  return split_k > 1 ? kWorkspaceBytes : gemm_output_bytes(t);
}

std::string dtype_tag(DType t) {
  switch (t) {
    case DType::BF16:
      return "bf16";
    case DType::F16:
      return "f16";
    case DType::FP8:
      return "fp8";
    case DType::TF32:
      return "tf32";
    case DType::I8:
      return "i8";
    case DType::F64:
      return "f64";
    case DType::FP4:
      return "fp4";
    default:
      return "?";
  }
}

// The epilogue of a warp whose accumulator tile is `acc_cols` wide: 16-bit or 32-bit stores as wide as C's row
// pitch allows, or fp32 reductions into the split-K workspace.
StagedEpilogue gemm_epilogue(const GemmProblem& p, std::uint32_t acc_cols, const GemmTiling& t) {
  if (t.split_k > 1 && t.split_k_reduction == GemmTiling::SplitKReduction::Atomic)
    return StagedEpilogue::reduce_fp32(acc_cols);
  if (t.split_k > 1)  // the partial tile into its workspace slice
    return StagedEpilogue::store_32bit(acc_cols, gemm_access_bytes(p.n * kWorkspaceBytes));
  const std::uint32_t out_bytes = gemm_output_bytes(p.dtype);
  const std::uint32_t store_bytes = gemm_access_bytes(p.n * out_bytes);
  if (out_bytes == 8) return StagedEpilogue::store_64bit(acc_cols, store_bytes);
  return out_bytes == 2 ? StagedEpilogue::store_16bit(acc_cols, store_bytes)
                        : StagedEpilogue::store_32bit(acc_cols, store_bytes);
}

}  // namespace

const char* gemm_epilogue_name(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::None: return "none";
    case GemmEpilogue::Bias: return "bias";
    case GemmEpilogue::Relu: return "relu";
    case GemmEpilogue::ReluBias: return "relu_bias";
    case GemmEpilogue::Gelu: return "gelu";
    case GemmEpilogue::GeluBias: return "gelu_bias";
  }
  return "?";
}

bool gemm_epilogue_has_bias(GemmEpilogue e) {
  return e == GemmEpilogue::Bias || e == GemmEpilogue::ReluBias || e == GemmEpilogue::GeluBias;
}

namespace {

// The fused epilogue of `p` (epilogue.h), its bias vector after C's whole batch (1 MiB aligned), shared by every
// matrix of the batch.
EpilogueFusion gemm_fusion(const GemmProblem& p, const RowMajorMatrix& c) {
  EpilogueFusion f;
  f.bias = gemm_epilogue_has_bias(p.epilogue);
  f.activation = p.epilogue == GemmEpilogue::Relu || p.epilogue == GemmEpilogue::ReluBias   ? EpilogueActivation::Relu
                 : p.epilogue == GemmEpilogue::Gelu || p.epilogue == GemmEpilogue::GeluBias ? EpilogueActivation::Gelu
                                                                                            : EpilogueActivation::None;
  const std::uint32_t out_bytes = gemm_output_bytes(p.dtype);
  f.bias_vector = RowMajorMatrix{round_up(c.base + p.batch * p.m * p.n * c.elem_bytes, kMatrixAlign), 1, p.n, out_bytes};
  return f;
}

// Warp grid of the multistage structure: the factorisation of `warps` with the squarest warp tile that still
// divides the CTA tile into m16 rows and pairs of n8 columns (one ldmatrix.x4 of B). False when none exists.
bool multistage_warp_layout(const GemmTiling& t, std::uint32_t& warps_m, std::uint32_t& warps_n) {
  bool found = false;
  std::uint64_t best = 0;
  for (std::uint32_t wm = 1; wm <= t.warps; ++wm) {
    if (t.warps % wm != 0) continue;
    const std::uint32_t wn = t.warps / wm;
    if (t.tile_m % (wm * kHmmaShape.m) != 0 || t.tile_n % (wn * 2 * kHmmaShape.n) != 0) continue;
    const std::uint64_t tm = t.tile_m / wm, tn = t.tile_n / wn;
    const std::uint64_t skew = tm > tn ? tm - tn : tn - tm;
    if (!found || skew < best) {
      found = true;
      best = skew;
      warps_m = wm;
      warps_n = wn;
    }
  }
  return found;
}

// ---- the plan: everything derived from problem + tiling, shared by all warp generators ----------------------

enum class Operand { A = 0, B = 1 };

struct GemmPlan {
  GemmProblem p;
  GemmTiling t;
  KernelInfo info;
  bool warp_specialized = false;
  bool tma = false;  // warp-specialised main loop on TMA + mbarriers + asynchronous wgmma (else LDGSTS + BAR)
  bool tcgen05 = false;  // TMA main loop, MMAs by one warp on tcgen05 into tensor memory (GemmTiling::tcgen05)
  // Warpgroup MMA: the producer warpgroup lowers its registers to kProducerRegs and the consumers raise theirs to
  // consumer_registers() right after the role dispatch (setmaxnreg, as CUTLASS 3's warpgroup_reg_dealloc/alloc).
  bool setmaxnreg = false;
  std::uint32_t cluster_m = 1;  // TMA: CTAs per cluster (consecutive CTA ids, adjacent M tiles, one B tile)
  // Rank of a CTA in its cluster (grid.x is a multiple of cluster_m) and every rank's bit.
  std::uint32_t cluster_rank(std::uint64_t cta_id) const { return static_cast<std::uint32_t>(cta_id % cluster_m); }
  std::uint32_t cluster_mask() const { return cluster_m > 1 ? (1u << cluster_m) - 1 : 0u; }

  std::uint32_t eb = 2;    // input bytes per storage unit (an element, or a byte of two fp4)
  RowMajorMatrix a, b, c;  // batch 0's; c: the output type, or the fp32 workspace with split-K
  RowMajorMatrix scales_a, scales_b;  // batch 0's block scales (fp4); rows are 128-row blocks
  std::uint64_t tiles = 0;  // output tiles of one batch, tiles_m * tiles_n
  std::uint32_t tiles_m = 0, tiles_n = 0, k_tiles = 0;
  std::uint32_t split_k = 1;  // grid.z: CTA z reduces k-tiles [z*k_tiles/split_k, (z+1)*k_tiles/split_k)
  bool parallel_split_k = false;  // split_k > 1, partial tiles stored into workspace slices
  MmaShape mma{};
  std::uint32_t k_steps = 0;         // MMAs along K per k-tile
  std::uint32_t chunk_elems = 0;     // elements per 16-byte chunk of the shared-memory tiles
  std::uint32_t chunks_per_row = 0;  // 16-byte chunks per tile row (tile_k elements)
  std::uint32_t copy_elems = 0;      // elements per copy (one lane's LDGSTS: 16 bytes, or A/B rows' alignment)
  CoalescedTileCopy a_copy, b_copy;  // per k-tile, by the copying threads (all, or the producer warpgroup)
  std::uint32_t a_tile_bytes = 0, stage_bytes = 0;  // stage_bytes: with the block scales
  std::uint32_t copies() const { return a_copy.copies_per_thread + b_copy.copies_per_thread; }

  // Multistage warp grid (warp tile = accumulator tile of one warp).
  std::uint32_t warps_m = 0, warps_n = 0, warp_tile_m = 0, warp_tile_n = 0, n_mi = 0, n_ni = 0;
  std::uint32_t frag_loads = 0;  // LDSM per k-step: n_mi (A) + n_ni/2 (B)

  // Warp-specialised.
  std::uint32_t consumer_warpgroups = 0;
  std::uint32_t first_consumer_warp = 0;  // 0 for multistage (every warp computes)
  std::uint32_t consumer_pc = 0;          // code address of the consumer branch
  // TMA: mbarrier ids of stage s, full (the k-tile landed: 1 arrival + its bytes) and empty (every consumer warp
  // released it).
  std::uint32_t full_mbarrier(std::uint32_t s) const { return s; }
  std::uint32_t empty_mbarrier(std::uint32_t s) const { return t.stages + s; }
  std::uint32_t consumer_warps() const { return consumer_warpgroups * kWarpgroupWarps; }
  // tcgen05: accumulator buffer b's full (its tile's MMAs done: the MMA warp's commit) and empty (every epilogue
  // warp has read it) mbarriers, after the stages'; the MMA warp's branch.
  std::uint32_t acc_full_mbarrier(std::uint32_t b) const { return 2 * t.stages + b; }
  std::uint32_t acc_empty_mbarrier(std::uint32_t b) const { return 2 * t.stages + kTcgen05AccBuffers + b; }
  // Ping-pong: the order barrier of turn `turn` (kMmaTurn, kEpilogueTurn) that consumer warpgroup `wg` waits on.
  static constexpr std::uint32_t kMmaTurn = 0, kEpilogueTurn = 1;
  std::uint32_t order_mbarrier(std::uint32_t turn, std::uint32_t wg) const {
    return 2 * t.stages + turn * kPingpongWarpgroups + wg;
  }
  std::uint32_t mbarrier_inits() const {
    return 2 * t.stages + (tcgen05 ? 2 * kTcgen05AccBuffers : 0) + (t.pingpong ? kPingpongOrderBarriers : 0);
  }
  // Warps that release a stage once they have read it (in every CTA of the cluster): the consumers of the k-tile's
  // output tile (ping-pong: one warpgroup), or the tcgen05 MMA warp's commit.
  std::uint32_t stage_release_warps() const {
    return (tcgen05 ? 1 : t.pingpong ? kWarpgroupWarps : consumer_warps()) * cluster_m;
  }
  std::uint32_t mma_pc = 0;
  // With a cluster the producer ends waiting for the last stages' releases (its cluster peers' consumers arrive
  // on its empty barriers until then), as CUTLASS's producer tail: stages - 1 waits, for the k-tiles before the
  // last (never released: the epilogue follows); persistent: stages, the last k-tile's release included (the tile
  // loop releases every tile's last stage).
  // tcgen05 commits every k-tile's stage, the last one's too.
  bool releases_last_stage() const { return persistent() || tcgen05; }
  std::uint32_t producer_tail_waits() const {
    return cluster_m > 1 ? (releases_last_stage() ? t.stages : t.stages - 1) : 0;
  }

  // Epilogue (shared): passes of 16 rows through a warp-private padded staging buffer (epilogue.h), at
  // epi_base + warp x its size: the pipeline's stages (free once every HGMMA is done), or beside them (persistent).
  StagedEpilogue epi;
  std::uint32_t epi_base = 0;

  // Persistent (GemmTiling::persistent): `persistent_ctas` CTAs, CTA c computing the linear output tiles c,
  // c + persistent_ctas, ... (its units); 0 = one CTA per tile (and split). Round sampling
  // (KernelSource::skip_rounds) leaves out every CTA's units of rounds [skip_first, skip_first + skip_count).
  std::uint64_t persistent_ctas = 0;
  std::uint64_t skip_first = 0, skip_count = 0;
  bool persistent() const { return persistent_ctas > 0; }
  std::uint64_t units_of(std::uint64_t cta) const {
    return persistent() ? (p.batch * tiles - cta + persistent_ctas - 1) / persistent_ctas - skip_count : 1;
  }
  // The unit CTA `cta` computes j-th.
  std::uint64_t unit(std::uint64_t cta, std::uint64_t j) const {
    return cta + (j < skip_first ? j : j + skip_count) * persistent_ctas;
  }

  // Stream-K: the decomposition, where the CTAs sharing a tile meet (a partial tile per stream-K tile: the
  // accumulators of every thread, striped in 16-byte vectors, and arrival counters).
  // sm_80: one CTA per stream-K unit or data-parallel tile, one counter per tile. sm_90 (persistent, CUTLASS 3's
  // PersistentTileSchedulerSm90StreamK): the decomposition is over work tiles of sk_group tiles (a cluster's, whose
  // CTAs take the same k-ranges of adjacent tiles, so that B stays multicast), each CTA runs its stream-K unit's
  // segments and then data-parallel work tiles through one pipeline (stream_k_works), and each consumer warpgroup has
  // its own counter per tile and striped part of the partial tile (sk_flag_slots).
  GemmStreamK sk;  // all zero without stream-K
  bool stream_k() const { return sk.sk_tiles > 0; }  // some tile is shared (whole waves: the data-parallel kernel)
  std::uint64_t sk_partials = 0, sk_flags = 0;
  std::uint32_t sk_partial_bytes = 0;  // one tile's partial sums: tile_m x tile_n fp32
  std::uint32_t sk_group = 1;          // tiles per work tile of the decomposition
  std::uint32_t sk_flag_slots = 1;     // arrival counters per shared tile
  std::uint64_t shared_tile_index(std::uint64_t tile) const { return tile - sk.dp_tiles * sk_group; }
  std::uint64_t partial_tile(std::uint64_t tile) const { return sk_partials + shared_tile_index(tile) * sk_partial_bytes; }
  std::uint64_t tile_flag(std::uint64_t tile, std::uint32_t slot = 0) const {
    return sk_flags + (shared_tile_index(tile) * sk_flag_slots + slot) * 4;
  }
  std::uint64_t sk_flag_words() const { return sk.sk_tiles * sk_group * sk_flag_slots; }
  // sm_90: what persistent CTA `cta` computes, in order: its stream-K unit's segments (the last tile first), then its
  // data-parallel tiles, every `persistent_ctas` work tiles; tiles are this CTA's of each work tile (its cluster rank).
  std::vector<GemmStreamK::Segment> stream_k_works(std::uint64_t cta) const {
    const std::uint64_t cluster = cta / sk_group, rank = cta % sk_group, clusters = persistent_ctas / sk_group;
    WARPSIM_ASSERT(clusters > 0, "stream-K works of a kernel that is not persistent");
    std::vector<GemmStreamK::Segment> works;
    for (std::uint64_t unit = cluster; unit < sk.ctas(); unit += clusters)
      for (GemmStreamK::Segment s : sk.segments(unit)) {
        s.tile = s.tile * sk_group + rank;
        works.push_back(s);
      }
    return works;
  }
  std::uint16_t r_fixup = 0;  // sm_90 stream-K: registers the partial sums load into

  // Register ids.
  std::uint16_t r_acc = 0, r_afrag = 0, r_bfrag = 0;
  std::uint16_t r_tid = 0, r_cta_x = 0, r_cta_y = 0, r_lin = 0, r_tile_m = 0, r_tile_n = 0;
  std::uint16_t r_gptr_a = 0, r_gptr_b = 0, r_smem_w = 0, r_smem_r = 0, r_count = 0, r_cptr = 0;
  std::uint16_t r_epi = 0;  // destinations of the epilogue's shared-memory read-back
  std::uint16_t reg_ids_used = 0;

  // ldmatrix lane offsets (multistage): [warp][operand][fragment][k-step] -> 32 offsets from the stage base.
  std::vector<std::array<std::int32_t, kWarpSize>> ldsm;
  std::uint32_t ldsm_frags = 0;  // max(n_mi, n_ni/2): fragment slots per operand

  std::size_t ldsm_index(std::uint32_t warp, Operand op, std::uint32_t frag, std::uint32_t ks) const {
    return ((std::size_t{warp} * 2 + static_cast<std::size_t>(op)) * ldsm_frags + frag) * k_steps + ks;
  }
  const std::int32_t* ldsm_offsets(std::uint32_t warp, Operand op, std::uint32_t frag, std::uint32_t ks) const {
    return ldsm[ldsm_index(warp, op, frag, ks)].data();
  }

  // What linear CTA `cta_id` computes: its batch's matrices, its output tile (first rows of its A and B tiles)
  // and its k-tiles [kt_begin, kt_end). CTAs z*tiles .. (z+1)*tiles-1 (grid.z = z) are batch z / split_k, split
  // z % split_k, rasterised as without split-K.
  struct CtaWork {
    RowMajorMatrix a, b, c, scales_a, scales_b;
    std::uint64_t a_row0 = 0, b_row0 = 0;
    std::uint32_t kt_begin = 0, kt_end = 0;
  };
  CtaWork cta_work(std::uint64_t cta_id) const {
    const std::uint64_t z = cta_id / tiles;
    const std::uint64_t batch = z / split_k, split = z % split_k;
    const GemmTileIndex tile = gemm_cta_tile(cta_id % tiles, tiles_m, tiles_n, t.swizzle_group);
    CtaWork w;
    w.a = batch_matrix(a, batch);
    w.b = batch_matrix(b, batch);
    w.scales_a = batch_matrix(scales_a, batch);
    w.scales_b = batch_matrix(scales_b, batch);
    // Parallel split-K: slice `split` of the workspace holds every batch's partial C.
    w.c = batch_matrix(c, parallel_split_k ? split * p.batch + batch : batch);
    w.a_row0 = std::uint64_t{tile.m} * t.tile_m;
    w.b_row0 = std::uint64_t{tile.n} * t.tile_n;
    w.kt_begin = static_cast<std::uint32_t>(split * k_tiles / split_k);
    w.kt_end = static_cast<std::uint32_t>((split + 1) * k_tiles / split_k);
    return w;
  }
  // Stream-K: tile `tile` (linear over the batch, rasterised as the CTAs of a data-parallel grid) over k-tiles
  // [kt_begin, kt_end).
  CtaWork tile_work(std::uint64_t tile, std::uint32_t kt_begin, std::uint32_t kt_end) const {
    CtaWork w = cta_work(tile);  // without split-K, CTA i computes linear tile i
    w.kt_begin = kt_begin;
    w.kt_end = kt_end;
    return w;
  }
  // Matrix `batch` of a strided batch: the next one starts where the previous one ends.
  static RowMajorMatrix batch_matrix(RowMajorMatrix m, std::uint64_t batch) {
    m.base += batch * m.rows * m.pitch();
    return m;
  }
};

std::uint32_t multistage_acc_regs(std::uint32_t wtm, std::uint32_t wtn, std::uint32_t acc_bytes) {
  return wtm * wtn / kWarpSize * (acc_bytes / 4);
}
std::uint32_t multistage_frag_regs(std::uint32_t wtm, std::uint32_t wtn) {
  return kFragBuffers * ((wtm / kHmmaShape.m) * kMmaARegs + (wtn / kHmmaShape.n) * kMmaBRegs);
}
std::uint32_t consumer_acc_regs(std::uint32_t tile_n) { return kHgmmaM * tile_n / kWarpgroupThreads; }

// m64 row blocks of one consumer warpgroup's accumulators: ping-pong's warpgroup computes the whole tile_m, a
// cooperative warpgroup 64 rows of it.
std::uint32_t warpgroup_m_blocks(const GemmTiling& t) { return t.pingpong ? t.tile_m / kHgmmaM : 1; }
std::uint32_t warpgroup_acc_regs(const GemmTiling& t) { return warpgroup_m_blocks(t) * consumer_acc_regs(t.tile_n); }

// Consumer warps of the warp-specialised structure: one warpgroup per 64 rows (warpgroup MMA, cooperative), the two
// of ping-pong, or the one epilogue warpgroup of the tcgen05 structure.
std::uint32_t consumer_warps_of(const GemmTiling& t) {
  return t.tcgen05 ? kWarpgroupWarps : t.pingpong ? kPingpongWarpgroups * kWarpgroupWarps : t.tile_m / kHgmmaM * kWarpgroupWarps;
}

// Registers per thread of a consumer warp of the warp-specialised structure, once setmaxnreg has given them (what the
// accumulators and kConsumerRegOverhead need, at most kConsumerRegsMax: gemm_pingpong_refusal refuses a ping-pong
// tile that needs more).
std::uint32_t consumer_registers_needed(const GemmTiling& t) {
  return round_up32(warpgroup_acc_regs(t) + kConsumerRegOverhead, kRegGranule);
}
std::uint32_t consumer_registers(const GemmTiling& t) { return std::min(kConsumerRegsMax, consumer_registers_needed(t)); }

// Registers per thread at launch (what occupancy is computed from).
std::uint32_t kernel_registers(const GemmTiling& t) {
  if (!t.warpgroup_mma) {
    std::uint32_t wm = 1, wn = 1;
    if (!multistage_warp_layout(t, wm, wn)) return 0;
    const std::uint32_t wtm = t.tile_m / wm, wtn = t.tile_n / wn;
    return round_up32(multistage_acc_regs(wtm, wtn, t.accumulator_bytes) + multistage_frag_regs(wtm, wtn) + kRegOverhead,
                      kRegGranule);
  }
  // Warp-specialised kernels launch with an even share of the register file and rebalance with setmaxnreg
  // (producers give registers up, consumers take them): report the launch value.
  const std::uint32_t consumers = consumer_warps_of(t) / kWarpgroupWarps;
  const std::uint32_t consumer_regs = consumer_registers(t);
  const std::uint64_t total = std::uint64_t{kWarpgroupThreads} * (kProducerRegs + consumers * consumer_regs);
  const std::uint64_t threads = std::uint64_t{t.warps} * kWarpSize;
  return static_cast<std::uint32_t>(round_up(ceil_div(total, threads), kRegGranule));
}

// Shared memory of one stage: the A and B tiles, and their block scales (fp4).
std::uint64_t stage_bytes(const GemmProblem& p, const GemmTiling& t) {
  return std::uint64_t{t.tile_m + t.tile_n} * t.tile_k * elem_bytes(p.dtype) +
         std::uint64_t{scale_row_blocks(t.tile_m) + scale_row_blocks(t.tile_n)} * scale_block_bytes(p.dtype, t.tile_k);
}

std::uint32_t shared_mem_bytes(const GemmProblem& p, const GemmTiling& t) {  // the pipeline's stages
  return static_cast<std::uint32_t>(t.stages * stage_bytes(p, t));
}

// The persistent kernel's epilogue staging, beside the stages (the producer keeps filling those with the next tile
// while the consumers store this one): one warp-private buffer per consumer warp storing at once (ping-pong's
// warpgroups store one after the other, through the same buffers).
std::uint32_t persistent_staging_bytes(const GemmProblem& p, const GemmTiling& t) {
  return (t.pingpong ? kWarpgroupWarps : consumer_warps_of(t)) * gemm_epilogue(p, t.tile_n, t).staging_bytes();
}

bool gemm_uses_tma(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);
std::string persistent_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);
std::string tcgen05_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);

// GemmTiling::persistent where it applies: the TMA main loop without split-K or stream-K, stages and staging
// within the CTA's shared memory, and an SM count to size the grid by.
bool gemm_runs_persistent(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  return t.persistent && persistent_refusal(p, t, limits).empty();
}

// Shared memory of the kernel: the stages, and the persistent kernel's staging.
std::uint32_t kernel_shared_mem_bytes(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  return shared_mem_bytes(p, t) + (gemm_runs_persistent(p, t, limits) ? persistent_staging_bytes(p, t) : 0);
}

// CTAs per SM, as far as the limits tell (the per-SM shared memory is taken as the per-CTA limit: H100 and A100
// have 1 KiB more per SM, which their CTAs reserve).
std::uint64_t estimated_ctas_per_sm(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  const std::uint64_t smem = kernel_shared_mem_bytes(p, t, limits);
  const std::uint64_t regs = std::uint64_t{kernel_registers(t)} * t.warps * kWarpSize;
  if (smem == 0 || regs == 0 || limits.shared_mem_per_cta == 0 || limits.registers_per_sm == 0) return 1;
  return std::max<std::uint64_t>(1, std::min(limits.shared_mem_per_cta / smem, limits.registers_per_sm / regs));
}

std::string arch_tag(const std::string& arch) {
  std::string s;
  for (char c : arch)
    if (c != '_') s += c;
  return s;
}

// A, B and C of batch 0 (the others follow each matrix, batch_matrix): A at kABase, B and C each after the
// previous matrix's whole batch, 1 MiB aligned. C is the fp32 workspace with split-K. Block-scaled types put the
// scales of A and B between B and C: one row per 128-row block, its atoms along K (block_scaled).
struct GemmMatrices {
  RowMajorMatrix a, b, c;
  RowMajorMatrix scales_a, scales_b;  // block_scaled only
};
GemmMatrices gemm_matrices(const GemmProblem& p, std::uint32_t split_k) {
  const std::uint32_t eb = elem_bytes(p.dtype);
  GemmMatrices m;
  m.a = RowMajorMatrix{kABase, p.m, p.k, eb};
  m.b = RowMajorMatrix{round_up(kABase + p.batch * p.m * p.k * eb, kMatrixAlign), p.n, p.k, eb};  // stored N x K
  std::uint64_t next = round_up(m.b.base + p.batch * p.n * p.k * eb, kMatrixAlign);
  if (block_scaled(p.dtype)) {
    const std::uint64_t row_bytes = scale_block_bytes(p.dtype, p.k);
    m.scales_a = RowMajorMatrix{next, scale_row_blocks(p.m), row_bytes, 1};
    m.scales_b = RowMajorMatrix{round_up(next + p.batch * m.scales_a.rows * row_bytes, kMatrixAlign),
                                scale_row_blocks(p.n), row_bytes, 1};
    next = round_up(m.scales_b.base + p.batch * m.scales_b.rows * row_bytes, kMatrixAlign);
  }
  m.c = RowMajorMatrix{next, p.m, p.n, c_elem_bytes(p.dtype, split_k)};
  return m;
}

// TMA takes the sm_90 tiles when the GPU has the unit, the global row strides of A and B (k elements) are
// multiples of 16 bytes (cuTensorMapEncodeTiled requires it) and the stages' full/empty mbarriers fit.
bool gemm_uses_tma(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  return t.warpgroup_mma && t.mainloop == GemmTiling::Mainloop::Tma && limits.tma && gemm_access_bytes(p.k * elem_bytes(p.dtype)) == kVecBytes &&
         2 * t.stages <= kMbarriers;
}

std::shared_ptr<GemmPlan> make_plan(const GemmProblem& p, const GemmTiling& t, const std::string& arch, bool tma,
                                    const GemmLimits& limits) {
  auto plan = std::make_shared<GemmPlan>();
  GemmPlan& P = *plan;
  P.p = p;
  P.t = t;
  P.warp_specialized = t.warpgroup_mma;
  P.tma = tma;
  P.tcgen05 = tma && t.tcgen05;
  P.setmaxnreg = t.warpgroup_mma && !P.tcgen05;
  P.eb = elem_bytes(p.dtype);
  P.split_k = t.split_k;
  P.parallel_split_k = t.split_k > 1 && t.split_k_reduction == GemmTiling::SplitKReduction::Parallel;
  const GemmMatrices m = gemm_matrices(p, t.split_k);
  P.a = m.a;
  P.b = m.b;
  P.c = m.c;
  P.scales_a = m.scales_a;
  P.scales_b = m.scales_b;
  P.tiles_m = static_cast<std::uint32_t>(ceil_div(p.m, t.tile_m));
  P.tiles_n = static_cast<std::uint32_t>(ceil_div(p.n, t.tile_n));
  P.tiles = std::uint64_t{P.tiles_m} * P.tiles_n;
  // A cluster is cluster_m adjacent M tiles of one N tile (consecutive CTA ids in a swizzle group), so the M tiles
  // and the swizzle group must divide into clusters; the N tile count is free (cuBLAS clusters fp8's 57 N tiles
  // of 144 columns along M; the grid is then laid out M first), and the B tile into equal slices, one multicast
  // by each rank.
  if (tma && t.cluster_m > 1 && t.swizzle_group % t.cluster_m == 0 && P.tiles_m % t.cluster_m == 0 &&
      t.tile_n % t.cluster_m == 0 && (P.tiles_n % t.cluster_m == 0 || P.tiles_n <= kMaxGridDimYZ))
    P.cluster_m = t.cluster_m;
  P.k_tiles = static_cast<std::uint32_t>(ceil_div(p.k, t.tile_k));
  P.chunk_elems = kVecBytes / P.eb;
  P.chunks_per_row = t.tile_k / P.chunk_elems;
  const std::uint32_t copy_bytes = gemm_access_bytes(p.k * P.eb);  // A's and B's rows are both k elements
  P.copy_elems = copy_bytes / P.eb;
  P.a_tile_bytes = t.tile_m * t.tile_k * P.eb;
  P.stage_bytes = static_cast<std::uint32_t>(stage_bytes(p, t));

  std::uint32_t acc_regs = 0, frag_regs = 0;
  std::uint32_t acc_cols = 0;  // accumulator tile width of one computing warp
  std::uint32_t copy_threads = 0;
  if (!P.warp_specialized) {
    P.mma = MmaShape{kHmmaShape.m, kHmmaShape.n, static_cast<std::uint16_t>(mma_k_for(p.dtype) * k_elems_per_unit(p.dtype))};
    multistage_warp_layout(t, P.warps_m, P.warps_n);
    P.warp_tile_m = t.tile_m / P.warps_m;
    P.warp_tile_n = t.tile_n / P.warps_n;
    P.n_mi = P.warp_tile_m / kHmmaShape.m;
    P.n_ni = P.warp_tile_n / kHmmaShape.n;
    P.frag_loads = P.n_mi + P.n_ni / 2;
    copy_threads = t.warps * kWarpSize;
    acc_regs = multistage_acc_regs(P.warp_tile_m, P.warp_tile_n, 4);  // register ids: one per accumulator pair of fp64
    frag_regs = multistage_frag_regs(P.warp_tile_m, P.warp_tile_n);
    acc_cols = P.warp_tile_n;
  } else {
    P.mma = MmaShape{static_cast<std::uint16_t>(P.tcgen05 ? t.tile_m : kHgmmaM), static_cast<std::uint16_t>(t.tile_n),
                     static_cast<std::uint16_t>(mma_k_for(p.dtype) * k_elems_per_unit(p.dtype))};
    P.consumer_warpgroups = consumer_warps_of(t) / kWarpgroupWarps;
    P.first_consumer_warp = kWarpgroupWarps;
    copy_threads = kWarpgroupThreads;
    acc_regs = warpgroup_acc_regs(t);
    // In the wgmma accumulator layout each warp holds 16 rows x tile_n: the same per-(m16, n8) fragments as mma.sync.
    P.n_mi = 1;
    P.n_ni = t.tile_n / kHmmaShape.n;
    acc_cols = t.tile_n;
  }
  P.k_steps = t.tile_k / mma_k_for(p.dtype);
  P.a_copy = CoalescedTileCopy(t.tile_m, t.tile_k * P.eb, copy_threads, copy_bytes);
  P.b_copy = CoalescedTileCopy(t.tile_n, t.tile_k * P.eb, copy_threads, copy_bytes);
  P.epi = gemm_epilogue(p, acc_cols, t);

  // Register ids: accumulators, fragments, then scalars and epilogue temporaries.
  RegisterAllocator regs;
  P.r_acc = regs.take(acc_regs);
  P.r_afrag = regs.take(frag_regs ? kFragBuffers * P.n_mi * kMmaARegs : 0);
  P.r_bfrag = regs.take(frag_regs ? kFragBuffers * P.n_ni * kMmaBRegs : 0);
  P.r_tid = regs.take();
  P.r_cta_x = regs.take();
  P.r_cta_y = regs.take();
  P.r_lin = regs.take();
  P.r_tile_m = regs.take();
  P.r_tile_n = regs.take();
  P.r_gptr_a = regs.take();
  P.r_gptr_b = regs.take();
  P.r_smem_w = regs.take();
  P.r_smem_r = regs.take();
  P.r_count = regs.take();
  P.r_cptr = regs.take();
  P.r_epi = regs.take(P.epi.readback_regs());
  if (t.stream_k && P.warp_specialized) P.r_fixup = regs.take(kFixupVectors * kMmaAccRegs);
  P.epi.fusion = gemm_fusion(p, P.c);
  P.epi.fusion.bias_reg = regs.take(P.epi.bias_regs());
  P.reg_ids_used = regs.used();

  // The persistent grid: as many CTAs as the GPU holds at once (clusters whole within a GPC), as
  // cudaOccupancyMaxActiveClusters tells CUTLASS's persistent tile schedulers.
  const bool persistent = tma && gemm_runs_persistent(p, t, limits);
  const std::uint64_t resident = !persistent ? 0
                                 : (limits.gpcs.sms() > 0 ? limits.gpcs : GpcLayout(limits.sm_count, 1, 1))
                                       .resident_ctas(estimated_ctas_per_sm(p, t, limits), P.cluster_m);
  std::uint64_t sk_slots = 0;  // stream-K: work-tile slots (clusters on sm_90)
  if (t.stream_k) {
    // The CTAs kept resident: the wave stream-K balances over (sm_90: work tiles of a cluster's tiles).
    P.sk_group = persistent ? P.cluster_m : 1;
    P.sk_flag_slots = persistent ? P.consumer_warpgroups : 1;
    const std::uint64_t slots = t.stream_k_ctas ? t.stream_k_ctas
                                : persistent    ? resident
                                                : limits.sm_count * estimated_ctas_per_sm(p, t, limits);
    sk_slots = std::max<std::uint64_t>(1, slots / P.sk_group);
    P.sk = gemm_stream_k(p.batch * P.tiles / P.sk_group, P.k_tiles, sk_slots, std::max<std::uint32_t>(2, t.stages));
    P.sk_partial_bytes = t.tile_m * t.tile_n * kWorkspaceBytes;
    // The partial tiles after C (and the bias vector of a fused epilogue), the arrival counters after them.
    const std::uint64_t c_end = P.epi.fusion.bias ? P.epi.fusion.bias_vector.base + p.n * P.epi.fusion.bias_vector.elem_bytes
                                                  : P.c.base + p.batch * p.m * p.n * P.c.elem_bytes;
    P.sk_partials = round_up(c_end, kMatrixAlign);
    P.sk_flags = round_up(P.sk_partials + P.sk.sk_tiles * P.sk_group * P.sk_partial_bytes, kMatrixAlign);
  }

  if (persistent) {
    // Fewer CTAs when there are fewer tiles (stream-K: work units and data-parallel work tiles).
    P.persistent_ctas = P.stream_k() ? std::min(sk_slots, P.sk.ctas()) * P.sk_group : std::min(p.batch * P.tiles, resident);
    if (P.persistent()) P.epi_base = shared_mem_bytes(p, t);
  }

  if (!P.warp_specialized) {
    P.ldsm_frags = std::max(P.n_mi, P.n_ni / 2);
    P.ldsm.resize(std::size_t{t.warps} * 2 * P.ldsm_frags * P.k_steps);
    const std::uint32_t chunks_per_kstep = kMmaKBytes / kVecBytes;  // 2: the k halves of a 16x16 (bf16) block
    for (std::uint32_t w = 0; w < t.warps; ++w) {
      const std::uint32_t row0 = (w % P.warps_m) * P.warp_tile_m;  // CUTLASS: warp m index fastest
      const std::uint32_t col0 = (w / P.warps_m) * P.warp_tile_n;
      for (std::uint32_t ks = 0; ks < P.k_steps; ++ks) {
        const std::uint32_t chunk0 = ks * chunks_per_kstep;
        // A x4: a0..a3 of the m16 x k16 block (A tile first in the stage).
        for (std::uint32_t mi = 0; mi < P.n_mi; ++mi)
          P.ldsm[P.ldsm_index(w, Operand::A, mi, ks)] = ldmatrix_x4_offsets(
              0, row0 + mi * kHmmaShape.m, chunk0, P.chunks_per_row, LdsmOrder::RowHalvesFirst);
        // B x4 (B stored N x K, no transpose): b0,b1 of the even n8 block, then of the odd one.
        for (std::uint32_t pair = 0; pair < P.n_ni / 2; ++pair)
          P.ldsm[P.ldsm_index(w, Operand::B, pair, ks)] =
              ldmatrix_x4_offsets(P.a_tile_bytes, col0 + pair * 2 * kHmmaShape.n, chunk0, P.chunks_per_row,
                                  LdsmOrder::ChunksFirst);
      }
    }
  } else {
    // The producer branch comes first in the code; its length fixes where the consumer branch starts.
    const std::uint32_t copies = P.copies();
    if (P.tma) {
      // setup, mbarrier inits (2 per stage) and BAR, role dispatch; producer: warp-role dispatch, the loop.
      // Persistent: the tile loop's head and branch around the k-tile loop.
      const std::uint32_t tile_loop_insts = P.persistent() ? kPersistentTileInsts + kLoopTailInsts : 0;
      const std::uint32_t producer_insts = kSetupInsts + P.mbarrier_inits() + 1 + kRoleDispatchInsts + P.setmaxnreg +
                                           kRoleDispatchInsts +
                                           tile_loop_insts + kTmaProducerInsts + kLoopTailInsts +
                                           (block_scaled(p.dtype) ? kTmaScaleInsts : 0) +
                                           P.producer_tail_waits() + kEpilogueBarrierInsts;
      // tcgen05: the MMA warp's branch follows the producer's, the consumers' follows it.
      const std::uint32_t mma_insts = P.tcgen05 ? tile_loop_insts + kTcgen05MmaFixedInsts + P.k_steps + kLoopTailInsts +
                                                      kEpilogueBarrierInsts
                                                : 0;
      P.mma_pc = producer_insts * kInstBytes;
      P.consumer_pc = P.mma_pc + mma_insts * kInstBytes;
    } else {
      const std::uint32_t producer_insts = kSetupInsts + kRoleDispatchInsts + P.setmaxnreg +
                                           (t.stages - 1) * (copies + kPrologueIntInsts + 1) +
                                           (2 + copies + kPrologueIntInsts + 1 + kLoopTailInsts) + kEpilogueBarrierInsts;
      P.consumer_pc = producer_insts * kInstBytes;
    }
  }

  KernelInfo& info = P.info;
  std::ostringstream name;
  const std::uint32_t k_elems = k_elems_per_unit(p.dtype);  // the names and FLOPs count elements
  name << "warpsim_gemm_" << dtype_tag(p.dtype) << "_tn_" << t.tile_m << 'x' << t.tile_n << 'x' << t.tile_k * k_elems << "_s"
       << t.stages << '_' << arch_tag(arch);
  if (P.tcgen05) name << "_tcgen05";
  if (P.split_k > 1) name << "_splitk" << P.split_k;
  if (P.stream_k()) name << "_streamk" << P.sk.sk_ctas * P.sk_group;  // the CTAs that share tiles
  if (P.persistent()) name << (t.pingpong ? "_pingpong" : "_persistent");
  if (p.epilogue != GemmEpilogue::None) name << '_' << gemm_epilogue_name(p.epilogue);
  name << " (";
  if (p.batch > 1) name << p.batch << 'x';
  name << p.m << 'x' << p.n << 'x' << p.k * k_elems << ')';
  info.name = name.str();
  // A data-parallel grid is tiles_n x tiles_m, or tiles_m x tiles_n where only the M tiles divide into the
  // clusters along grid.x (CTA ids, and so the tiles they compute, are the same either way).
  const bool m_first = P.cluster_m > 1 && P.tiles_n % P.cluster_m != 0;
  info.grid = P.persistent()   ? Dim3{static_cast<std::uint32_t>(P.persistent_ctas), 1, 1}
              : P.stream_k()   ? Dim3{static_cast<std::uint32_t>(P.sk.ctas()), 1, 1}
              : m_first        ? Dim3{P.tiles_m, P.tiles_n, static_cast<std::uint32_t>(p.batch * P.split_k)}
                               : Dim3{P.tiles_n, P.tiles_m, static_cast<std::uint32_t>(p.batch * P.split_k)};
  info.cluster = Dim3{P.cluster_m, 1, 1};
  info.block = Dim3{t.warps * kWarpSize, 1, 1};
  info.registers_per_thread = kernel_registers(t);
  info.shared_mem_bytes = shared_mem_bytes(p, t) + (P.persistent() ? persistent_staging_bytes(p, t) : 0);
  info.target_arch = arch;
  info.flops = 2 * p.batch * p.m * p.n * p.k * k_elems;
  if (P.persistent()) {
    // Stream-K CTAs have works of different sizes, not rounds of tiles: no round sampling.
    info.persistent_units = P.stream_k() ? 0 : p.batch * P.tiles;
    // The consumers' tile head (emit_next_tile), where their branch starts. Not the producer's: it runs ahead of
    // the tiles computed by up to the stages' k-tiles (a whole tile when k is short).
    // Ping-pong: after the wait for the MMAs' turn (the other warpgroup's tile head comes early, then waits).
    info.unit_head_pc = P.consumer_pc + (P.setmaxnreg ? kInstBytes : 0) + (t.pingpong ? kInstBytes : 0);
    info.unit_head_warps = t.pingpong ? kWarpgroupWarps : P.consumer_warps();  // ping-pong: one warpgroup per tile
  }
  return plan;
}

// ---- GEMM code sections shared by both structures -------------------------------------------------------------

void emit_loop_tail(InstChunk& c, const GemmPlan& P) { synth::emit_loop_tail(c, P.r_count, kPredLoop); }

// Thread/CTA ids, CTA tile from the rasterisation, per-thread copy pointers and shared-memory addresses.
void emit_setup(InstChunk& c, const GemmPlan& P) {
  emit_alu(c, Opcode::S2R, P.r_tid, {});
  emit_alu(c, Opcode::S2R, P.r_cta_x, {});
  emit_alu(c, Opcode::S2R, P.r_cta_y, {});
  emit_alu(c, Opcode::IMAD, P.r_lin, {P.r_cta_y, P.r_cta_x});
  emit_alu(c, Opcode::IMAD, P.r_tile_m, {P.r_lin});  // swizzle-group div/mod
  emit_alu(c, Opcode::IMAD, P.r_tile_n, {P.r_lin, P.r_tile_m});
  emit_alu(c, Opcode::IMAD, P.r_gptr_a, {P.r_tile_m, P.r_tid});
  emit_alu(c, Opcode::IMAD, P.r_gptr_b, {P.r_tile_n, P.r_tid});
  emit_alu(c, Opcode::LOP3, P.r_smem_w, {P.r_tid});  // swizzled shared-memory slot of this thread's copies
  emit_alu(c, Opcode::LOP3, P.r_smem_r, {P.r_tid});  // ldmatrix row address / wgmma descriptor
  emit_alu(c, Opcode::ISETP, kPredGuard, {P.r_gptr_a});
  emit_alu(c, Opcode::MOV, P.r_count, {});
}

// LDGSTS number `it` (of the operand's copies per thread) of the copying warp `copy_warp` for (global) k-tile `kt`.
// Lanes outside the matrix (ragged M/N/K) are masked; a copy with no lane left (or of a k-tile at or past the end
// `kt_end` of the CTA's k-range, which CUTLASS zero-fills) is not emitted, only its code slot kept.
void emit_operand_copy(InstChunk& c, const GemmPlan& P, Operand op, const RowMajorMatrix& matrix,
                       std::uint64_t tile_row0, std::uint32_t copy_warp, std::uint32_t it, std::uint32_t kt,
                       std::uint32_t kt_end) {
  if (kt >= kt_end) {
    c.skip();
    return;
  }
  const CoalescedTileCopy& copy = op == Operand::A ? P.a_copy : P.b_copy;
  const CoalescedTileCopy::Chunk at = copy.first_chunk(it, copy_warp);
  const std::uint64_t row = tile_row0 + at.row;
  const std::uint64_t col = std::uint64_t{kt} * P.t.tile_k + std::uint64_t{at.chunk} * P.copy_elems;
  const std::uint32_t mask = matrix_lane_mask(matrix, row, col, copy.lanes_per_row, P.copy_elems);
  if (mask == 0) {
    c.skip();
    return;
  }
  emit_async_copy(c, matrix_lanes(matrix, row, col, copy.lanes_per_row, P.copy_elems), mask,
                  op == Operand::A ? P.r_gptr_a : P.r_gptr_b, P.r_smem_w);
}

// What every generated GEMM warp knows: the plan, its warp index, its CTA's output tile and k-tiles.
struct GemmWarpContext {
  GemmWarpContext(std::shared_ptr<const GemmPlan> plan_in, std::uint64_t cta_id, std::uint32_t warp_in)
      : GemmWarpContext(plan_in, plan_in->cta_work(cta_id), warp_in, plan_in->cluster_rank(cta_id)) {}
  GemmWarpContext(std::shared_ptr<const GemmPlan> plan_in, const GemmPlan::CtaWork& work, std::uint32_t warp_in,
                  std::uint32_t cluster_rank_in = 0)
      : plan(std::move(plan_in)), warp(warp_in), cluster_rank(cluster_rank_in) {
    a = work.a;
    b = work.b;
    c = work.c;
    scales_a = work.scales_a;
    scales_b = work.scales_b;
    a_row0 = work.a_row0;
    b_row0 = work.b_row0;
    k_tiles = PipelineTiles{work.kt_begin, work.kt_end, plan->t.stages};
  }

  // Copy j of a k-tile's per-thread list (the A copies first, then the B copies) of global k-tile `kt`.
  void emit_copy(InstChunk& ch, std::uint32_t j, std::uint32_t kt) const {
    const GemmPlan& P = *plan;
    if (j < P.a_copy.copies_per_thread)
      emit_operand_copy(ch, P, Operand::A, a, a_row0, warp, j, kt, k_tiles.end);
    else
      emit_operand_copy(ch, P, Operand::B, b, b_row0, warp, j - P.a_copy.copies_per_thread, kt, k_tiles.end);
  }
  // A whole stage of the copying warp (prologue, and the producer's refill): every copy of global k-tile `kt`,
  // the pointer advances, the commit.
  void emit_stage_fill(InstChunk& c, std::uint32_t kt) const {
    const GemmPlan& P = *plan;
    for (std::uint32_t j = 0; j < P.copies(); ++j) emit_copy(c, j, kt);
    emit_alu(c, Opcode::IADD3, P.r_gptr_a, {P.r_gptr_a});
    emit_alu(c, Opcode::IADD3, P.r_gptr_b, {P.r_gptr_b});
    emit_alu(c, Opcode::IADD3, P.r_smem_w, {P.r_smem_w});
    emit_async_commit(c);
  }
  void emit_prologue_fills(InstChunk& c) const {
    for (std::uint32_t s = 0; s + 1 < k_tiles.stages; ++s) emit_stage_fill(c, k_tiles.prologue_tile(s));
  }

  std::shared_ptr<const GemmPlan> plan;
  std::uint32_t warp;
  std::uint32_t cluster_rank = 0;        // the CTA's rank in its cluster (TMA main loop; 0 without one)
  RowMajorMatrix a, b, c;                // the CTA's batch of A, B and C
  RowMajorMatrix scales_a, scales_b;     // and of the block scales (fp4)
  std::uint64_t a_row0 = 0, b_row0 = 0;  // first global row of the CTA's A and B tiles
  PipelineTiles k_tiles;                 // the CTA's global k-tiles (all of them without split-K)
};

// ---- sm_80: CUTLASS MmaMultistage ---------------------------------------------------------------------------
//
//   setup; prologue: stages-1 x {LDGSTS of tile s, LDGDEPBAR}; DEPBAR stages-2; BAR; LDSM k-step 0
//   per k-tile, per k-step s (fragments double-buffered, so the next k-step's LDSM overlap this one's HMMA):
//     LDSM fragments of k-step s+1 (of the next k-tile after the last step)
//     HMMA n_mi x n_ni (serpentine), the LDGSTS refilling stage (kt+stages-1) % stages spread among them
//     at s == k_steps-2: LDGDEPBAR; DEPBAR stages-2; BAR  (so the last step's LDSM may read the next stage)
//   loop tail; epilogue; EXIT
//
// Stream-K runs this pipeline once per tile segment of a CTA (StreamKWarp): the first segment runs the setup, a
// later one waits at a CTA barrier (the last segment's epilogue staging overlaps the stages it will fill) and
// computes its tile's coordinates; the epilogue stores C or meets the tile's other CTAs (GemmSegment::Fixup).
struct GemmSegment {
  enum class Fixup {
    None,        // the tile's whole k-range: the epilogue stores C
    Store,       // the tile's first k-tiles: store the partial sums into the tile's workspace, arrive
    Accumulate,  // a middle part: wait for the CTAs before, add the partial sums into the workspace, arrive
    Finish,      // the tile's last k-tiles: wait, add the workspace into the accumulators, store C
  };
  bool first = true, last = true;  // first: runs the setup; last: ends with EXIT
  Fixup fixup = Fixup::None;
  std::uint64_t partials = 0, flag = 0;  // the tile's partial sums and arrival counter (Fixup != None)
  std::uint64_t arrivals = 0;            // Accumulate, Finish: the arrivals on the counter the wait is for
};

// A stream-K turnstile: one thread's spin-wait poll of the tile's counter until the CTAs (warpgroups) before it on
// the tile have arrived (trace format 1.6: an LDG awaiting `role.arrivals` arrivals), read past L1 as CUTLASS's
// ld.global.acquire.gpu (LDG.E.STRONG.GPU), which other SMs' arrivals do not update; and its test.
void emit_turnstile_poll(InstChunk& c, const GemmPlan& P, const GemmSegment& role) {
  WarpInst& poll = emit_load(c, Opcode::LDG, MemSpace::Global, LaneRows{role.flag, 4}, 1u, P.r_count, 1, {P.r_cptr});
  poll.cache = CacheOp::Bypass;
  poll.aux = static_cast<std::uint32_t>(role.arrivals);
  emit_alu(c, Opcode::ISETP, kPredGuard, {P.r_count});
}
constexpr std::uint32_t kTurnstilePollInsts = 2;
// One thread's arrival on the tile's counter.
void emit_turnstile_arrive(InstChunk& c, const GemmPlan& P, const GemmSegment& role) {
  emit_store(c, Opcode::RED, MemSpace::Global, LaneRows{role.flag, 4}, 1u, {P.r_count, P.r_cptr});
}

// The fixup of stream-K segment `s` (GemmStreamK::segments): which part of its tile it computes, and where it meets
// the tile's other CTAs: counter `slot` of the tile, and the partial sums from byte `part` of the tile's on.
GemmSegment stream_k_role(const GemmPlan& P, const GemmStreamK::Segment& s, std::uint32_t slot = 0, std::uint64_t part = 0) {
  GemmSegment g;
  const bool started = s.kt_begin == 0, finished = s.kt_end == P.k_tiles;
  using Fixup = GemmSegment::Fixup;
  g.fixup = started && finished ? Fixup::None : started ? Fixup::Store : finished ? Fixup::Finish : Fixup::Accumulate;
  if (g.fixup != Fixup::None) {
    g.partials = P.partial_tile(s.tile) + part;
    g.flag = P.tile_flag(s.tile, slot);
    g.arrivals = s.position;
  }
  return g;
}

class MultistageWarp final : public TilePipelineWarp<MultistageWarp> {
 public:
  MultistageWarp(std::shared_ptr<const GemmPlan> plan, std::uint64_t cta_id, std::uint32_t warp)
      : MultistageWarp(GemmWarpContext(std::move(plan), cta_id, warp), GemmSegment{}) {}
  MultistageWarp(std::shared_ptr<const GemmPlan> plan, const GemmPlan::CtaWork& work, std::uint32_t warp,
                 GemmSegment segment)
      : MultistageWarp(GemmWarpContext(std::move(plan), work, warp), segment) {}

  void emit_prologue(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    if (segment_.first) {
      emit_setup(c, P);
      if (P.stream_k()) c.skip(kNextTileInsts);  // the tile loop's code starts at the same place in every segment
    } else {
      emit_barrier(c, 0);
      for (std::uint16_t r : {P.r_tile_m, P.r_tile_n, P.r_gptr_a, P.r_gptr_b}) emit_alu(c, Opcode::IMAD, r, {P.r_lin});
      emit_alu(c, Opcode::MOV, P.r_count, {});
    }
    g_.emit_prologue_fills(c);
    emit_async_wait(c, P.t.stages - 2);
    emit_barrier(c, 0);
    emit_fragment_loads(c, 0, 0, 0);
  }
  void emit_iteration(InstChunk& c, std::uint32_t kt);
  void emit_epilogue(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    switch (segment_.fixup) {
      case GemmSegment::Fixup::Store:
        for (std::uint32_t v = 0; v < partial_vectors(); ++v) emit_store_partial(c, v);
        emit_arrive(c);
        break;
      case GemmSegment::Fixup::Accumulate:
        emit_wait_for_peers(c);
        emit_add_partials(c, true);
        emit_arrive(c);
        break;
      case GemmSegment::Fixup::Finish:
        emit_wait_for_peers(c);
        emit_add_partials(c, false);
        [[fallthrough]];
      case GemmSegment::Fixup::None:
        emit_staged_epilogue(c, P.epi, MmaAccumulatorTile{P.r_acc, P.n_mi, P.n_ni}, g_.c, g_.a_row0 + warp_row0_,
                             g_.b_row0 + warp_col0_, g_.warp * P.epi.staging_bytes(), P.r_epi, P.r_cptr);
        break;
    }
    if (segment_.last) c.emit(Opcode::EXIT);
  }

 private:
  MultistageWarp(GemmWarpContext g, GemmSegment segment)
      : TilePipelineWarp(g.k_tiles), g_(std::move(g)), segment_(segment) {
    const GemmPlan& P = *g_.plan;
    warp_row0_ = (g_.warp % P.warps_m) * P.warp_tile_m;
    warp_col0_ = (g_.warp / P.warps_m) * P.warp_tile_n;
  }

  std::uint16_t afrag(std::uint32_t buf, std::uint32_t mi) const {
    return static_cast<std::uint16_t>(g_.plan->r_afrag + (buf * g_.plan->n_mi + mi) * kMmaARegs);
  }
  std::uint16_t bfrag(std::uint32_t buf, std::uint32_t ni) const {
    return static_cast<std::uint16_t>(g_.plan->r_bfrag + (buf * g_.plan->n_ni + ni) * kMmaBRegs);
  }

  // LDSM.x4 of k-step `ks` of the CTA's k-tile number `kt` (counted from its first) into fragment buffer `buf`:
  // n_mi for A, n_ni/2 for B.
  void emit_fragment_loads(InstChunk& c, std::uint32_t kt, std::uint32_t ks, std::uint32_t buf) {
    const GemmPlan& P = *g_.plan;
    if (kt >= tiles().iterations()) {  // no next k-tile: CUTLASS's loads here read a stale stage, never used
      c.skip(P.frag_loads);
      return;
    }
    const std::uint64_t stage_base = std::uint64_t{tiles().stage_of(kt)} * P.stage_bytes;
    // The offsets are owned by the plan, which outlives the stream.
    for (std::uint32_t mi = 0; mi < P.n_mi; ++mi)
      emit_ldmatrix_x4(c, stage_base, P.ldsm_offsets(g_.warp, Operand::A, mi, ks), afrag(buf, mi), P.r_smem_r);
    for (std::uint32_t pair = 0; pair < P.n_ni / 2; ++pair)
      emit_ldmatrix_x4(c, stage_base, P.ldsm_offsets(g_.warp, Operand::B, pair, ks), bfrag(buf, 2 * pair),
                       P.r_smem_r);
  }

  // ---- stream-K fixup (CUTLASS's stream-K "share" and "acquire" of accumulators through the workspace) ----
  // The partial tile holds every thread's accumulators striped over the CTA in 16-byte vectors: thread t's vector
  // v (its MMA block v, 4 fp32) at (v x threads + t) x 16, so each warp-wide access covers 512 contiguous bytes.
  std::uint32_t partial_vectors() const { return g_.plan->n_mi * g_.plan->n_ni; }
  std::uint16_t acc_vector(std::uint32_t v) const { return static_cast<std::uint16_t>(g_.plan->r_acc + v * kMmaAccRegs); }
  LaneRows partial_lanes(std::uint32_t v) const {
    const std::uint64_t threads = std::uint64_t{g_.plan->t.warps} * kWarpSize;
    return LaneRows{segment_.partials + (v * threads + std::uint64_t{g_.warp} * kWarpSize) * kVecBytes, kVecBytes};
  }
  void emit_store_partial(InstChunk& c, std::uint32_t v) {
    emit_store(c, Opcode::STG, MemSpace::Global, partial_lanes(v), kFullMask, {acc_vector(v), g_.plan->r_cptr});
  }
  // Thread 0 spins on the tile's arrival counter until the CTAs before it on the tile have arrived, then the CTA
  // synchronises.
  void emit_wait_for_peers(InstChunk& c) {
    if (g_.warp == 0)
      emit_turnstile_poll(c, *g_.plan, segment_);
    else
      c.skip(kTurnstilePollInsts);
    emit_barrier(c, 0);
  }
  // Every thread has stored its part: thread 0 increments the tile's arrival counter.
  void emit_arrive(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    emit_barrier(c, 0);
    if (g_.warp == 0)
      emit_turnstile_arrive(c, P, segment_);
    else
      c.skip();
  }
  std::uint16_t loaded(std::uint32_t slot) const { return static_cast<std::uint16_t>(afrag(0, 0) + slot * kMmaARegs); }
  // Adds the tile's partial sums into the accumulators (and, `store_back`, stores the sums for the CTAs after),
  // loading as many vectors ahead as the fragment registers (free after the main loop) hold.
  void emit_add_partials(InstChunk& c, bool store_back) {
    const GemmPlan& P = *g_.plan;
    const Opcode add = P.p.dtype == DType::I8 ? Opcode::IADD3 : Opcode::FADD;
    const std::uint32_t in_flight = kFragBuffers * P.n_mi;  // 4-register groups among the A fragments
    const std::uint32_t vectors = partial_vectors();
    for (std::uint32_t first = 0; first < vectors; first += in_flight) {
      const std::uint32_t end = std::min(vectors, first + in_flight);
      for (std::uint32_t v = first; v < end; ++v)
        emit_load(c, Opcode::LDG, MemSpace::Global, partial_lanes(v), kFullMask, loaded(v - first), kMmaARegs, {P.r_cptr});
      for (std::uint32_t v = first; v < end; ++v) {
        for (std::uint32_t e = 0; e < kMmaAccRegs; ++e)
          emit_alu(c, add, reg(acc_vector(v) + e), {reg(acc_vector(v) + e), reg(loaded(v - first) + e)});
        if (store_back) emit_store_partial(c, v);
      }
    }
  }

  GemmWarpContext g_;
  GemmSegment segment_;
  std::uint32_t warp_row0_ = 0, warp_col0_ = 0;  // warp tile origin in the CTA tile
};

// A stream-K CTA's warp: the multistage pipeline once per segment of its share (GemmStreamK::segments), each
// segment's code from the tile loop's start (after the setup).
class StreamKWarp final : public WarpGenerator {
 public:
  StreamKWarp(std::shared_ptr<const GemmPlan> plan, std::uint64_t cta, std::uint32_t warp)
      : plan_(std::move(plan)), warp_(warp), segments_(plan_->sk.segments(cta)) {
    WARPSIM_ASSERT(!segments_.empty(), "a stream-K CTA without work");
  }

  bool generate(InstChunk& c) override {
    for (;;) {
      if (current_ && current_->generate(c)) return true;
      if (next_ == segments_.size()) return false;
      if (next_ > 0) c.set_pc(kSetupInsts * kInstBytes);  // the next-tile code, then the tile loop
      current_ = std::make_unique<MultistageWarp>(plan_, work(next_), warp_, role(next_));
      ++next_;
    }
  }

 private:
  GemmPlan::CtaWork work(std::size_t i) const {
    const GemmStreamK::Segment& s = segments_[i];
    return plan_->tile_work(s.tile, s.kt_begin, s.kt_end);
  }
  GemmSegment role(std::size_t i) const {
    GemmSegment g = stream_k_role(*plan_, segments_[i]);
    g.first = i == 0;
    g.last = i + 1 == segments_.size();
    return g;
  }

  std::shared_ptr<const GemmPlan> plan_;
  std::uint32_t warp_;
  std::vector<GemmStreamK::Segment> segments_;
  std::size_t next_ = 0;
  std::unique_ptr<MultistageWarp> current_;
};

void MultistageWarp::emit_iteration(InstChunk& c, std::uint32_t kt) {
  const GemmPlan& P = *g_.plan;
  const std::uint32_t copies = P.copies();
  const std::uint32_t copy_steps = P.k_steps - 1;  // copies go to k-steps 0..k_steps-2, before the commit
  const std::uint32_t copies_per_step = static_cast<std::uint32_t>(ceil_div(copies, copy_steps));
  const std::uint32_t refill_kt = tiles().refill_tile(kt);  // global k-tile
  const std::uint32_t mmas = P.n_mi * P.n_ni;
  for (std::uint32_t s = 0; s < P.k_steps; ++s) {
    const std::uint64_t g = std::uint64_t{kt} * P.k_steps + s;  // global k-step: picks the fragment buffer
    const std::uint32_t buf = static_cast<std::uint32_t>(g % kFragBuffers);
    const bool last_step = s + 1 == P.k_steps;
    emit_fragment_loads(c, last_step ? kt + 1 : kt, last_step ? 0 : s + 1, 1 - buf);

    const std::uint32_t first_copy = std::min(copies, s * copies_per_step);
    const std::uint32_t end_copy = last_step ? first_copy : std::min(copies, first_copy + copies_per_step);
    const std::uint32_t step_copies = end_copy - first_copy;
    std::uint32_t next_copy = 0;
    for (std::uint32_t h = 0; h < mmas; ++h) {
      // Serpentine over n within each m row, as CUTLASS's warp-level MMA (keeps A and B fragments in use).
      const std::uint32_t mi = h / P.n_ni;
      const std::uint32_t ni = (mi % 2) ? P.n_ni - 1 - h % P.n_ni : h % P.n_ni;
      const std::uint16_t acc = static_cast<std::uint16_t>(P.r_acc + (mi * P.n_ni + ni) * kMmaAccRegs);
      if (P.p.dtype == DType::F64) {
        // DMMA.884: the m16n8k4 block as its top and bottom m8 halves (accumulator ids e = 0,1 and 2,3; A
        // fragment ids 0,1 and 2,3), one 8x8x4 fp64 MMA each.
        const std::uint16_t a = afrag(buf, mi);
        for (std::uint16_t half = 0; half < 2; ++half)
          emit_hmma(c, DType::F64, kDmmaShape, static_cast<std::uint16_t>(acc + 2 * half), kMmaAccRegs / 2,
                    static_cast<std::uint16_t>(a + 2 * half), bfrag(buf, ni));
      } else {
        emit_hmma(c, P.p.dtype, P.mma, acc, kMmaAccRegs, afrag(buf, mi), bfrag(buf, ni));
      }
      // Copy j goes after HMMA number ((j+1) * mmas) / (step_copies+1): evenly spread, none after the last.
      while (next_copy < step_copies && (std::uint64_t{next_copy} + 1) * mmas / (step_copies + 1) <= h + 1) {
        g_.emit_copy(c, first_copy + next_copy, refill_kt);
        ++next_copy;
      }
    }
    if (s + 2 == P.k_steps) {
      emit_alu(c, Opcode::IADD3, P.r_gptr_a, {P.r_gptr_a});
      emit_alu(c, Opcode::IADD3, P.r_gptr_b, {P.r_gptr_b});
      emit_async_commit(c);
      emit_async_wait(c, P.t.stages - 2);  // the next k-tile's stage has landed (own copies)
      emit_barrier(c, 0);                  // ... and everyone's; the stage read last is free
      emit_alu(c, Opcode::IADD3, P.r_smem_w, {P.r_smem_w});
      emit_alu(c, Opcode::IADD3, P.r_smem_r, {P.r_smem_r});
    }
  }
  emit_loop_tail(c, P);
}

// ---- sm_90: warp-specialised, warpgroup MMA -----------------------------------------------------------------
//
// TMA (CUTLASS 3 KernelTmaWarpSpecialized, PipelineTmaAsync): stage s has mbarriers full[s] and empty[s].
//   every warp:              setup; warp 0: MBARRIER_INIT full[s] (1 arrival), empty[s] (one per consumer warp)
//                            for every stage; BAR (the inits are visible); role dispatch (ISETP, BRA); setmaxnreg:
//                            the producer warpgroup's dec to kProducerRegs, the consumers' inc to consumer_registers()
//   producer (warpgroup 0):  warp-role dispatch (ISETP, BRA): warps 1-3 go straight to the final EXIT. Warp 0 per
//                            k-tile i (stage s = i % stages, phase = i / stages % 2): wait empty[s] (parity
//                            phase ^ 1: a fresh barrier passes the first round); arrive.expect_tx full[s] (the
//                            k-tile's bytes); UTMALDG A box (tile_m x tile_k), UTMALDG B box (tile_n x tile_k),
//                            lane 0 only; loop tail. Then BAR; EXIT.
//   consumers (the others):  per k-tile i: wait full[s] (parity phase); WARPGROUP.ARRIVE; 2 IADD3 (descriptors);
//                            k_steps x HGMMA; commit; WARPGROUP.DEPBAR 1 (k-tile i-1's group done); arrive on
//                            empty of k-tile i-1's stage; loop tail. Then WARPGROUP.DEPBAR 0; BAR; epilogue; EXIT.
// No CTA-wide barrier in the main loop: the producer runs up to `stages` k-tiles ahead of the slowest consumer.
//
// Persistent (CUTLASS 3 KernelTmaWarpSpecializedCooperative with PersistentTileSchedulerSm90): the k-tile loop
// above runs once per output tile of the CTA, inside a tile loop whose head fetches the next tile
// (kPersistentTileInsts); the stages and their phases run on across tiles. After a tile's last k-tile the
// consumers wait for every HGMMA (WARPGROUP.DEPBAR 0), release that k-tile's stage and store the tile through
// staging beside the stages, with no CTA barrier, while the producer already loads the next tile.
//
// LDGSTS (fallback: rows not 16-byte aligned, or no TMA unit):
//   producer (warpgroup 0):  setup; prologue as sm_80; per k-tile: DEPBAR stages-2; BAR; LDGSTS of tile
//                            kt+stages-1 into the stage consumed at kt-1; LDGDEPBAR; loop tail. Then BAR; EXIT.
//   consumers (the others):  setup; per k-tile: BAR; 2 IADD3 (descriptors); k_steps x HGMMA; loop tail.
//                            Then BAR; epilogue (16 rows x tile_n per warp); EXIT.
// BAR k of every warp is the same CTA-wide barrier: the k-tile has landed and the stage consumed before it is free.
class WarpSpecializedWarp final : public TilePipelineWarp<WarpSpecializedWarp> {
 public:
  WarpSpecializedWarp(std::shared_ptr<const GemmPlan> plan, std::uint64_t cta_id, std::uint32_t warp)
      : WarpSpecializedWarp(GemmWarpContext(std::move(plan), cta_id, warp), cta_id) {}

  void emit_prologue(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    emit_setup(c, P);
    if (P.tma) {
      // CUTLASS: thread 0 initialises the pipeline's barriers, then the CTA synchronises once.
      if (g_.warp == 0) {
        for (std::uint32_t s = 0; s < P.t.stages; ++s) {
          emit_mbarrier_init(c, P.full_mbarrier(s), 1);
          // Every consumer warp (tcgen05: the MMA warp's commit) of every CTA of the cluster releases the stage
          // (the B slices it multicasts land in all of them).
          emit_mbarrier_init(c, P.empty_mbarrier(s), P.stage_release_warps());
        }
        for (std::uint32_t b = 0; P.t.pingpong && b < kPingpongOrderBarriers; ++b)
          emit_mbarrier_init(c, P.order_mbarrier(b / kPingpongWarpgroups, b % kPingpongWarpgroups), kWarpgroupWarps);
        for (std::uint32_t b = 0; P.tcgen05 && b < kTcgen05AccBuffers; ++b) {
          emit_mbarrier_init(c, P.acc_full_mbarrier(b), 1);
          emit_mbarrier_init(c, P.acc_empty_mbarrier(b), P.consumer_warps());
        }
      } else {
        c.skip(P.mbarrier_inits());
      }
      emit_barrier(c, 0);
    }
    emit_alu(c, Opcode::ISETP, kPredRole, {P.r_tid});
    emit_branch(c, kPredRole);
    if (!producer_) c.set_pc(P.consumer_pc);
    if (P.setmaxnreg) emit_setmaxnreg(c, producer_ ? kProducerRegs : consumer_registers(P.t), !producer_);
    if (producer_ && P.tma) {
      emit_alu(c, Opcode::ISETP, kPredRole, {P.r_tid});  // warp role within the producer warpgroup
      emit_branch(c, kPredRole);
      if (idle_) c.set_pc(P.mma_pc - kInstBytes);  // CUTLASS: they have no role and exit (the producer's EXIT)
      if (mma_warp_) c.set_pc(P.mma_pc);
    } else if (producer_) {
      g_.emit_prologue_fills(c);
    }
    tile_loop_pc_ = c.pc();
    WARPSIM_ASSERT(!P.persistent() || producer_ || tile_loop_pc_ + (P.t.pingpong ? kInstBytes : 0) == P.info.unit_head_pc,
                   "the consumers' tile head out of step with KernelInfo::unit_head_pc");
  }
  void emit_iteration(InstChunk& c, std::uint32_t i) {
    const GemmPlan& P = *g_.plan;
    if (P.tcgen05 && !producer_) {  // the epilogue warps: iteration i is the CTA's output tile i
      if (P.persistent()) {
        c.set_pc(tile_loop_pc_);
        emit_next_tile(c, i);
      }
      emit_tcgen05_tile_store(c, i);
      if (P.persistent()) emit_loop_tail(c, P);
      return;
    }
    // Ping-pong: the warp's own iteration i is the CTA's iteration `ci` (its warpgroup's tiles are every other one).
    const std::uint32_t use = i / k_tiles_per_unit_;  // of the warpgroup's tiles
    const std::uint32_t ci = pingpong_ ? (kPingpongWarpgroups * use + wg_) * k_tiles_per_unit_ + i % k_tiles_per_unit_ : i;
    const WorkPosition at = position(ci);
    const std::uint32_t k_iteration = at.k;  // of the current output tile (or stream-K segment)
    if (P.persistent()) {
      // The k-tile loop starts after the tile head. Ping-pong waits for the MMAs' turn first, so that the tile head
      // marks when the warpgroup starts the tile (round sampling's KernelInfo::unit_head_pc).
      c.set_pc(tile_loop_pc_ + (k_iteration == 0 ? 0 : (kPersistentTileInsts + pingpong_) * kInstBytes));
      if (k_iteration == 0 && pingpong_) emit_order_wait(c, GemmPlan::kMmaTurn, use);
      if (k_iteration == 0) emit_next_tile(c, at.work);
    }
    if (mma_warp_)
      emit_mma_k_tile(c, ci);
    else if (producer_ && P.tma)
      emit_tma_producer_k_tile(c, ci);
    else if (producer_)
      emit_producer_k_tile(c, ci);
    else
      emit_consumer_k_tile(c, ci);
    if (P.persistent() && k_iteration + 1 == at.k_tiles) {
      // Ping-pong, CUTLASS's order: the other warpgroup may issue its MMAs once this one's are issued; this one
      // waits for them to finish, then stores in its epilogue turn.
      if (pingpong_) emit_order_arrive(c, GemmPlan::kMmaTurn);
      if (!producer_) emit_tile_epilogue(c, ci, use, at.work);
      emit_loop_tail(c, P);  // the tile loop's branch
    }
  }
  void emit_epilogue(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    if (P.tma && producer_ && !idle_ && !mma_warp_) emit_producer_tail(c);
    if (P.persistent()) {  // every tile's epilogue ran in the tile loop, through staging of its own
      if (producer_ && !idle_) c.skip();  // the BAR slot
    } else if (P.tcgen05) {  // the epilogue warps stored the tile in their loop
      if (!idle_) emit_barrier(c, 0);
    } else {
      if (P.tma && !producer_) emit_wgmma_wait(c, 0);  // every HGMMA done: the accumulators are final
      if (!idle_) emit_barrier(c, 0);  // all HGMMA of the CTA done: pipeline smem may be reused for staging
      if (!producer_) emit_store_tile(c);
    }
    c.emit(Opcode::EXIT);
    WARPSIM_ASSERT(!producer_ || c.pc() == (mma_warp_ || !P.tcgen05 ? P.consumer_pc : P.mma_pc),
                   "producer or MMA warp code length out of step with the layout");
  }

 private:
  // Consumers batch k-tiles (10 records each) into chunks of at least kMinChunkInsts. With TMA only warp 0 of
  // the producer warpgroup runs the loop; its other warps have none.
  WarpSpecializedWarp(GemmWarpContext g, std::uint64_t cta_id)
      : TilePipelineWarp(loop_tiles(g, cta_id), g.warp < g.plan->first_consumer_warp ? 0 : kMinChunkInsts),
        g_(std::move(g)),
        producer_(g_.warp < g_.plan->first_consumer_warp),
        mma_warp_(g_.plan->tcgen05 && g_.warp == kTcgen05MmaWarp),
        idle_(is_idle(g_)),
        pingpong_(g_.plan->t.pingpong && !producer_),
        wg_(producer_ ? 0 : (g_.warp - g_.plan->first_consumer_warp) / kWarpgroupWarps),
        cta_id_(cta_id),
        k_tiles_per_unit_(std::max(1u, g_.k_tiles.iterations())) {
    if (g_.plan->stream_k()) {  // sm_90 stream-K: works of different lengths
      works_ = g_.plan->stream_k_works(cta_id);
      work_begin_.push_back(0);
      for (const GemmStreamK::Segment& w : works_) work_begin_.push_back(work_begin_.back() + w.kt_end - w.kt_begin);
    }
  }
  // With TMA only warp 0 of the producer warpgroup loads; warps 1-3 exit after the role dispatch.
  // tcgen05: warp 1 of the producer warpgroup issues the MMAs.
  static constexpr std::uint32_t kTcgen05MmaWarp = 1;
  static bool is_idle(const GemmWarpContext& g) {
    return g.plan->tma && g.warp != 0 && g.warp < g.plan->first_consumer_warp &&
           !(g.plan->tcgen05 && g.warp == kTcgen05MmaWarp);
  }
  // The k-tiles of the CTA's output tile, or (persistent) of all its tiles one after another through the same ring
  // of stages: iteration i is k-tile i % k_tiles of the CTA's tile i / k_tiles.
  static PipelineTiles loop_tiles(const GemmWarpContext& g, std::uint64_t cta_id) {
    PipelineTiles tiles = g.k_tiles;
    const std::uint64_t units = g.plan->units_of(cta_id);
    if (g.plan->tcgen05 && g.warp >= g.plan->first_consumer_warp)  // the epilogue warps loop over output tiles
      tiles = PipelineTiles{0, static_cast<std::uint32_t>(units), g.k_tiles.stages};
    else if (g.plan->t.pingpong && g.warp >= g.plan->first_consumer_warp)  // every other tile: wg, wg + 2, ...
      tiles = PipelineTiles{0, static_cast<std::uint32_t>(pingpong_tiles(units, consumer_warpgroup(g)) * g.k_tiles.iterations()),
                            g.k_tiles.stages};
    else if (g.plan->stream_k())
      tiles = PipelineTiles{0, stream_k_iterations(*g.plan, cta_id), g.k_tiles.stages};
    else if (g.plan->persistent())
      tiles = PipelineTiles{0, static_cast<std::uint32_t>(units * g.k_tiles.iterations()), g.k_tiles.stages};
    if (is_idle(g)) tiles.end = tiles.first;
    return tiles;
  }
  static std::uint32_t consumer_warpgroup(const GemmWarpContext& g) {
    return (g.warp - g.plan->first_consumer_warp) / kWarpgroupWarps;
  }
  // Ping-pong: of a CTA's `units` output tiles, those of consumer warpgroup wg (wg, wg + 2, ...).
  static std::uint64_t pingpong_tiles(std::uint64_t units, std::uint32_t wg) {
    return units > wg ? (units - wg + kPingpongWarpgroups - 1) / kPingpongWarpgroups : 0;
  }
  static std::uint32_t stream_k_iterations(const GemmPlan& P, std::uint64_t cta) {
    std::uint32_t n = 0;
    for (const GemmStreamK::Segment& w : P.stream_k_works(cta)) n += w.kt_end - w.kt_begin;
    return n;
  }
  // The work (output tile, or stream-K segment) of the CTA's iteration i, i's k-tile within it, and its k-tiles.
  struct WorkPosition {
    std::uint32_t work = 0, k = 0, k_tiles = 0;
  };
  WorkPosition position(std::uint32_t i) const {
    if (works_.empty()) return {i / k_tiles_per_unit_, i % k_tiles_per_unit_, k_tiles_per_unit_};
    const auto next = std::upper_bound(work_begin_.begin(), work_begin_.end(), i);
    const auto j = static_cast<std::uint32_t>(next - work_begin_.begin() - 1);
    return {j, i - work_begin_[j], *next - work_begin_[j]};
  }
  // Global k-tile of the CTA's iteration i.
  std::uint32_t k_tile_of(std::uint32_t i) const { return g_.k_tiles.first + position(i).k; }

  // Ping-pong (CUTLASS's OrderedSequenceBarrier of two warpgroups and two turns): wait for this warpgroup's `turn`
  // of its `use`-th tile. The turns alternate between the warpgroups, warpgroup 0 first: its first wait passes on
  // the fresh barrier (parity 1), each later one needs the other warpgroup's arrival for its previous tile.
  void emit_order_wait(InstChunk& c, std::uint32_t turn, std::uint32_t use) {
    emit_mbarrier_wait(c, g_.plan->order_mbarrier(turn, wg_), (use & 1u) ^ (wg_ == 0 ? 1u : 0u));
  }
  // Hand the turn to the other warpgroup.
  void emit_order_arrive(InstChunk& c, std::uint32_t turn) {
    emit_mbarrier_arrive_expect_tx(c, g_.plan->order_mbarrier(turn, (wg_ + 1) % kPingpongWarpgroups), 0);
  }

  // Persistent: the scheduler's fetch of the CTA's output tile number j, which the following iterations load,
  // compute and store.
  void emit_next_tile(InstChunk& c, std::uint32_t j) {
    const GemmPlan& P = *g_.plan;
    emit_alu(c, Opcode::IADD3, P.r_lin, {P.r_lin});  // linear tile index += grid
    emit_alu(c, Opcode::ISETP, kPredGuard, {P.r_lin});
    emit_alu(c, Opcode::IMAD, P.r_tile_m, {P.r_lin});
    emit_alu(c, Opcode::IMAD, P.r_tile_n, {P.r_lin, P.r_tile_m});
    emit_alu(c, Opcode::IMAD, P.r_gptr_a, {P.r_tile_m});
    emit_alu(c, Opcode::IMAD, P.r_gptr_b, {P.r_tile_n});
    if (!works_.empty()) {
      const GemmStreamK::Segment& w = works_[j];
      g_ = GemmWarpContext(g_.plan, g_.plan->tile_work(w.tile, w.kt_begin, w.kt_end), g_.warp, g_.cluster_rank);
      return;
    }
    // The context built for the CTA holds tile cta_id_ (its unit 0 unless round sampling skipped that round).
    if (const std::uint64_t u = g_.plan->unit(cta_id_, j); u != cta_id_)
      g_ = GemmWarpContext(g_.plan, g_.plan->cta_work(u), g_.warp, g_.cluster_rank);
  }
  // Persistent consumers after a tile's last k-tile (iteration i of the CTA's work `work`; ping-pong: the
  // warpgroup's `use`-th tile): every HGMMA done, that k-tile's stage released (the producer waits for it to load the
  // next tile's), the tile stored (ping-pong: in this warpgroup's epilogue turn; stream-K: after its fixup, by the
  // segment that finishes the tile).
  void emit_tile_epilogue(InstChunk& c, std::uint32_t i, std::uint32_t use, std::uint32_t work) {
    emit_wgmma_wait(c, 0);
    emit_release(c, i);
    if (pingpong_) emit_order_wait(c, GemmPlan::kEpilogueTurn, use);
    const GemmSegment role = works_.empty() ? GemmSegment{} : stream_k_role(*g_.plan, works_[work], wg_, fixup_part());
    switch (role.fixup) {
      case GemmSegment::Fixup::Store:
        for (std::uint32_t v = 0; v < fixup_vectors(); ++v) emit_store_partial(c, role, v);
        emit_fixup_arrive(c, role);
        return;
      case GemmSegment::Fixup::Accumulate:
        emit_fixup_wait(c, role);
        emit_add_partials(c, role, true);
        emit_fixup_arrive(c, role);
        return;
      case GemmSegment::Fixup::Finish:
        emit_fixup_wait(c, role);
        emit_add_partials(c, role, false);
        break;
      case GemmSegment::Fixup::None:
        break;
    }
    emit_store_tile(c);
    if (pingpong_) emit_order_arrive(c, GemmPlan::kEpilogueTurn);
  }

  // ---- stream-K fixup (sm_90, CUTLASS 3's PersistentTileSchedulerSm90StreamK::fixup, deterministic): each consumer
  // warpgroup meets the same warpgroup of the tile's other CTAs on a counter of its own, and its 64 rows' partial
  // sums are striped over its 128 threads in 16-byte vectors (vector v of thread t at (v x 128 + t) x 16 of the
  // warpgroup's part), synchronised by a named barrier of its own.
  std::uint32_t fixup_vectors() const { return consumer_acc_regs(g_.plan->t.tile_n) / kMmaAccRegs; }
  std::uint64_t fixup_part() const { return std::uint64_t{wg_} * kHgmmaM * g_.plan->t.tile_n * kWorkspaceBytes; }
  std::uint32_t warp_in_warpgroup() const { return (g_.warp - g_.plan->first_consumer_warp) % kWarpgroupWarps; }
  LaneRows partial_lanes(const GemmSegment& role, std::uint32_t v) const {
    return LaneRows{role.partials + (std::uint64_t{v} * kWarpgroupThreads + warp_in_warpgroup() * kWarpSize) * kVecBytes,
                    kVecBytes};
  }
  std::uint16_t acc_vector(std::uint32_t v) const { return static_cast<std::uint16_t>(g_.plan->r_acc + v * kMmaAccRegs); }
  void emit_store_partial(InstChunk& c, const GemmSegment& role, std::uint32_t v) {
    emit_store(c, Opcode::STG, MemSpace::Global, partial_lanes(role, v), kFullMask, {acc_vector(v), g_.plan->r_cptr});
  }
  // Warp 0 of the warpgroup polls the counter until the warpgroups before it on the tile have arrived, then the
  // warpgroup synchronises.
  void emit_fixup_wait(InstChunk& c, const GemmSegment& role) {
    if (warp_in_warpgroup() == 0)
      emit_turnstile_poll(c, *g_.plan, role);
    else
      c.skip(kTurnstilePollInsts);
    emit_named_barrier(c, kFixupBarrierBase + wg_, kWarpgroupThreads);
  }
  // Every thread of the warpgroup has stored its part: warp 0 increments the counter.
  void emit_fixup_arrive(InstChunk& c, const GemmSegment& role) {
    emit_named_barrier(c, kFixupBarrierBase + wg_, kWarpgroupThreads);
    if (warp_in_warpgroup() == 0)
      emit_turnstile_arrive(c, *g_.plan, role);
    else
      c.skip();
  }
  // Adds the partial sums into the accumulators (and, `store_back`, stores the sums for the warpgroups after),
  // kFixupVectors loads in flight.
  void emit_add_partials(InstChunk& c, const GemmSegment& role, bool store_back) {
    const GemmPlan& P = *g_.plan;
    const Opcode add = P.p.dtype == DType::I8 ? Opcode::IADD3 : Opcode::FADD;
    const std::uint32_t vectors = fixup_vectors();
    for (std::uint32_t first = 0; first < vectors; first += kFixupVectors) {
      const std::uint32_t end = std::min(vectors, first + kFixupVectors);
      for (std::uint32_t v = first; v < end; ++v)
        emit_load(c, Opcode::LDG, MemSpace::Global, partial_lanes(role, v), kFullMask,
                  reg(P.r_fixup + (v - first) * kMmaAccRegs), kMmaAccRegs, {P.r_cptr});
      for (std::uint32_t v = first; v < end; ++v) {
        for (std::uint32_t e = 0; e < kMmaAccRegs; ++e)
          emit_alu(c, add, reg(acc_vector(v) + e), {reg(acc_vector(v) + e), reg(P.r_fixup + (v - first) * kMmaAccRegs + e)});
        if (store_back) emit_store_partial(c, role, v);
      }
    }
  }
  // The consumer warp's rows of the CTA tile to C, through its staging buffer: warp q of cooperative warpgroup g
  // holds rows 64g + 16q; warp q of a ping-pong warpgroup rows 16q of each of its m64 blocks (and uses staging
  // buffer q: the warpgroups store in turn).
  void emit_store_tile(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t consumer = g_.warp - P.first_consumer_warp;
    const std::uint32_t slot = pingpong_ ? consumer % kWarpgroupWarps : consumer;
    for (std::uint32_t block = 0; block < warpgroup_m_blocks(P.t); ++block) {
      const std::uint64_t row0 = g_.a_row0 + block * kHgmmaM + slot * kEpilogueRows;
      emit_staged_epilogue(c, P.epi, MmaAccumulatorTile{accumulator_base(block), P.n_mi, P.n_ni}, g_.c, row0, g_.b_row0,
                           P.epi_base + slot * P.epi.staging_bytes(), P.r_epi, P.r_cptr);
    }
  }
  // The consumer warp's arrival on the empty barrier of iteration i's stage, on every cluster CTA's (the B slices
  // of that stage came from all of them).
  void emit_release(InstChunk& c, std::uint32_t i) {
    const GemmPlan& P = *g_.plan;
    WarpInst& release = emit_mbarrier_arrive_expect_tx(c, P.empty_mbarrier(tiles().stage_of(i)), 0);
    release.mma.m = static_cast<std::uint16_t>(P.cluster_mask());
  }

  void emit_producer_k_tile(InstChunk& c, std::uint32_t kt) {
    const GemmPlan& P = *g_.plan;
    emit_async_wait(c, P.t.stages - 2);
    emit_barrier(c, 0);
    g_.emit_stage_fill(c, tiles().refill_tile(kt));
    emit_loop_tail(c, P);
  }

  // The TMA box of `op`'s tile of global k-tile `kt`, clipped to the matrix (rows past M/N and columns past K are
  // zero-filled by TMA without being read); an empty box where nothing is left.
  TmaBox tile_box(Operand op, std::uint32_t kt) const {
    const GemmPlan& P = *g_.plan;
    const RowMajorMatrix& m = op == Operand::A ? g_.a : g_.b;
    const std::uint64_t row0 = op == Operand::A ? g_.a_row0 : g_.b_row0;
    const std::uint32_t tile_rows = op == Operand::A ? P.t.tile_m : P.t.tile_n;
    const std::uint64_t col0 = std::uint64_t{kt} * P.t.tile_k;
    if (row0 >= m.rows || col0 >= m.cols) return TmaBox{};
    const auto rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(tile_rows, m.rows - row0));
    const auto cols = static_cast<std::uint32_t>(std::min<std::uint64_t>(P.t.tile_k, m.cols - col0));
    return matrix_box(m, row0, col0, rows, cols);
  }

  // Rank r of a cluster of cluster_m CTAs loads rows [r, r + 1) x tile_n / cluster_m of the shared B tile (clipped
  // to the matrix) and multicasts them to every CTA of the cluster.
  TmaBox b_slice_box(std::uint32_t kt) const {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t slice_rows = P.t.tile_n / P.cluster_m;
    const std::uint64_t row0 = g_.b_row0 + std::uint64_t{g_.cluster_rank} * slice_rows;
    const std::uint64_t col0 = std::uint64_t{kt} * P.t.tile_k;
    const std::uint64_t tile_end = std::min<std::uint64_t>(g_.b_row0 + P.t.tile_n, g_.b.rows);
    if (row0 >= tile_end || col0 >= g_.b.cols) return TmaBox{};
    const auto rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(slice_rows, tile_end - row0));
    const auto cols = static_cast<std::uint32_t>(std::min<std::uint64_t>(P.t.tile_k, g_.b.cols - col0));
    return matrix_box(g_.b, row0, col0, rows, cols);
  }

  // The row blocks (128-row atoms) holding the scales of tile rows [row0, row0 + rows): [first, end).
  static std::pair<std::uint64_t, std::uint64_t> scale_blocks(std::uint64_t row0, std::uint64_t rows) {
    return rows == 0 ? std::pair<std::uint64_t, std::uint64_t>{0, 0}
                     : std::pair<std::uint64_t, std::uint64_t>{row0 / kScaleAtomRows, ceil_div(row0 + rows, kScaleAtomRows)};
  }
  // The scales of `op`'s row blocks [first, end) for global k-tile `kt`, one box row per block, clipped to the scale
  // matrix; an empty box where nothing is left.
  TmaBox scale_box(Operand op, std::pair<std::uint64_t, std::uint64_t> blocks, std::uint32_t kt) const {
    const GemmPlan& P = *g_.plan;
    const RowMajorMatrix& m = op == Operand::A ? g_.scales_a : g_.scales_b;
    const std::uint64_t block_end = std::min<std::uint64_t>(blocks.second, m.rows);
    const std::uint64_t tile_bytes = scale_block_bytes(P.p.dtype, P.t.tile_k);
    const std::uint64_t col0 = std::uint64_t{kt} * tile_bytes;
    if (blocks.first >= block_end || col0 >= m.cols) return TmaBox{};
    return matrix_box(m, blocks.first, col0, static_cast<std::uint32_t>(block_end - blocks.first),
                      static_cast<std::uint32_t>(std::min<std::uint64_t>(tile_bytes, m.cols - col0)));
  }

  void emit_tma_producer_k_tile(InstChunk& c, std::uint32_t i) {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t s = tiles().stage_of(i);
    const std::uint32_t kt = k_tile_of(i);
    const TmaBox a = tile_box(Operand::A, kt);
    // The full barrier expects the whole B tile: the other ranks' multicast slices land here too.
    const TmaBox b = tile_box(Operand::B, kt);
    const std::uint64_t b_rows = g_.b_row0 < g_.b.rows ? std::min<std::uint64_t>(P.t.tile_n, g_.b.rows - g_.b_row0) : 0;
    // Block scales (fp4): A's with A; the row blocks of B's scales shared out among the cluster's ranks (rank r
    // the r-th of cluster_m near-equal parts; none where there are fewer blocks than ranks), multicast with B.
    TmaBox scales_a, scales_b, scales_b_own;
    if (block_scaled(P.p.dtype)) {
      scales_a = scale_box(Operand::A, scale_blocks(g_.a_row0, a.rows), kt);
      const auto b_blocks = scale_blocks(g_.b_row0, b_rows);
      scales_b = scale_box(Operand::B, b_blocks, kt);
      scales_b_own = scales_b;
      if (P.cluster_m > 1) {
        const std::uint64_t blocks = b_blocks.second - b_blocks.first, rank = g_.cluster_rank;
        scales_b_own = scale_box(Operand::B,
                                 {b_blocks.first + rank * blocks / P.cluster_m, b_blocks.first + (rank + 1) * blocks / P.cluster_m},
                                 kt);
      }
    }
    emit_mbarrier_wait(c, P.empty_mbarrier(s), tiles().phase_of(i) ^ 1u);
    emit_mbarrier_arrive_expect_tx(c, P.full_mbarrier(s),
                                   static_cast<std::uint32_t>(a.bytes() + b.bytes() + scales_a.bytes() + scales_b.bytes()));
    const TmaBox loads[4] = {a, P.cluster_m > 1 ? b_slice_box(kt) : b, scales_a, scales_b_own};
    for (std::uint32_t op = 0; op < (block_scaled(P.p.dtype) ? 4u : 2u); ++op) {
      if (loads[op].bytes() == 0) {
        c.skip();
      } else {
        WarpInst& load = emit_tma_load(c, loads[op], P.full_mbarrier(s), P.r_gptr_a);
        if (op % 2 == 1) load.mma.m = static_cast<std::uint16_t>(P.cluster_mask());  // WarpInst::cluster_cta_mask()
      }
    }
    emit_loop_tail(c, P);
  }

  // Producer tail (clusters): wait until the last stages' releases have completed, so that no cluster peer
  // arrives on this CTA's empty barriers after it has exited: the waits end with the last iteration released.
  void emit_producer_tail(InstChunk& c) {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t n = tiles().iterations();
    const std::uint32_t waits = P.producer_tail_waits();
    // The last iteration released: n - 1 (persistent: the tile loop releases every tile's last stage; tcgen05: the
    // MMA warp commits every stage) or n - 2.
    const std::int64_t last = static_cast<std::int64_t>(n) - (P.releases_last_stage() ? 1 : 2);
    for (std::uint32_t w = 0; w < waits; ++w) {
      // iteration j = last + 1 - waits + w (skipped below 0)
      const std::int64_t j = last + 1 - waits + w;
      if (j < 0) {
        c.skip();
        continue;
      }
      const auto jj = static_cast<std::uint32_t>(j);
      emit_mbarrier_wait(c, P.empty_mbarrier(tiles().stage_of(jj)), tiles().phase_of(jj));
    }
  }

  // First accumulator register of the warp's m64 block `block` (ping-pong's warpgroup may hold two).
  std::uint16_t accumulator_base(std::uint32_t block) const {
    return static_cast<std::uint16_t>(g_.plan->r_acc + block * consumer_acc_regs(g_.plan->t.tile_n));
  }
  // Four ids stand for a consumer warp's accumulator block (16 rows x tile_n of m64 block `block`), spread over it so
  // the epilogue's first FMUL waits for the MMAs (or the tensor-memory load) that write it.
  std::array<std::uint16_t, kHgmmaAccIds> accumulator_ids(std::uint32_t block = 0) const {
    const std::uint32_t acc_regs = consumer_acc_regs(g_.plan->t.tile_n);
    std::array<std::uint16_t, kHgmmaAccIds> acc{};
    for (std::uint32_t r = 0; r < kHgmmaAccIds; ++r)
      acc[r] = static_cast<std::uint16_t>(accumulator_base(block) + r * (acc_regs / kHgmmaAccIds));
    return acc;
  }

  // tcgen05 MMA warp, iteration i (k-tile i % k_tiles of the CTA's tile j = i / k_tiles, into accumulator buffer
  // j % 2): before a tile's first k-tile, wait until the epilogue warps have read that buffer (tile j - 2's); wait for
  // the k-tile; its MMAs from lane 0; a commit that releases its stage on every cluster CTA (their B slices landed
  // here); after the tile's last k-tile, a commit that hands the buffer to the epilogue warps.
  void emit_mma_k_tile(InstChunk& c, std::uint32_t i) {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t k_iteration = i % k_tiles_per_unit_, tile = i / k_tiles_per_unit_;
    const std::uint32_t buffer = tile % kTcgen05AccBuffers, use = tile / kTcgen05AccBuffers;
    if (k_iteration == 0)
      emit_mbarrier_wait(c, P.acc_empty_mbarrier(buffer), (use & 1u) ^ 1u);  // a fresh barrier passes the first use
    else
      c.skip();
    emit_mbarrier_wait(c, P.full_mbarrier(tiles().stage_of(i)), tiles().phase_of(i));
    for (std::uint32_t k = 0; k < P.k_steps; ++k) emit_utcmma(c, P.p.dtype, P.mma);
    emit_utcbar(c, P.empty_mbarrier(tiles().stage_of(i)), P.cluster_mask());
    if (k_iteration + 1 == k_tiles_per_unit_)
      emit_utcbar(c, P.acc_full_mbarrier(buffer));
    else
      c.skip();
    emit_loop_tail(c, P);
  }

  // tcgen05 epilogue warp, the CTA's output tile j: wait for its accumulator buffer, then per pass of 16 of the
  // warp's rows (its 32 TMEM lanes: rows 32w..32w+31 of a 128-row tile, 16w.. of a 64-row one) read them out of
  // tensor memory and store them through the warp's staging; the buffer is released once the last pass is read.
  void emit_tcgen05_tile_store(InstChunk& c, std::uint32_t j) {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t buffer = j % kTcgen05AccBuffers, use = j / kTcgen05AccBuffers;
    const std::uint32_t warp = g_.warp - P.first_consumer_warp;
    const std::uint32_t rows = P.t.tile_m / P.consumer_warps(), passes = rows / kEpilogueRows;
    const std::uint32_t acc_regs = consumer_acc_regs(P.t.tile_n);
    const auto acc = accumulator_ids();
    emit_mbarrier_wait(c, P.acc_full_mbarrier(buffer), use & 1u);
    for (std::uint32_t pass = 0; pass < passes; ++pass) {
      // The pass's 16 rows x tile_n fp32 in the accumulator layout: tile_n / 2 registers per thread.
      emit_ldtm(c, acc, std::min<std::uint32_t>(acc_regs, 128));
      if (pass + 1 == passes) {
        WarpInst& release = emit_mbarrier_arrive_expect_tx(c, P.acc_empty_mbarrier(buffer), 0);
        set_src(release, {acc[0]});  // once the load has landed
      }
      emit_staged_epilogue(c, P.epi, MmaAccumulatorTile{P.r_acc, P.n_mi, P.n_ni}, g_.c,
                           g_.a_row0 + warp * rows + pass * kEpilogueRows, g_.b_row0,
                           P.epi_base + warp * P.epi.staging_bytes(), P.r_epi, P.r_cptr);
    }
  }

  void emit_consumer_k_tile(InstChunk& c, std::uint32_t i) {
    const GemmPlan& P = *g_.plan;
    const std::uint32_t s = tiles().stage_of(i);
    if (P.tma) {
      emit_mbarrier_wait(c, P.full_mbarrier(s), tiles().phase_of(i));
      emit_wgmma_fence(c);
    } else {
      emit_barrier(c, 0);
    }
    emit_alu(c, Opcode::IADD3, P.r_smem_r, {P.r_smem_r});  // A descriptor of this stage
    emit_alu(c, Opcode::IADD3, P.r_smem_w, {P.r_smem_w});  // B descriptor (the producer's pointer reg is free)
    // Each k-step's MMA for every m64 block of the warpgroup's tile (CUTLASS's gemm over the tiled MMA: M inside K).
    const std::uint32_t blocks = warpgroup_m_blocks(P.t);
    for (std::uint32_t k = 0; k < P.k_steps; ++k)
      for (std::uint32_t block = 0; block < blocks; ++block) emit_hgmma(c, P.p.dtype, P.mma, accumulator_ids(block));
    if (P.tma) {
      emit_wgmma_commit(c);
      emit_wgmma_wait(c, 1);  // k-tile i-1's HGMMAs are done: its stage may be refilled
      if (position(i).k > 0)  // the tile's first k-tile: the previous tile's epilogue released its last
        emit_release(c, i - 1);
      else
        c.skip();
    }
    emit_loop_tail(c, P);
  }

  GemmWarpContext g_;  // the CTA's current output tile (persistent: the one iteration i / k_tiles_per_unit_ works on)
  bool producer_ = false;
  bool mma_warp_ = false;  // tcgen05: the warp whose lane 0 issues the CTA's MMAs
  bool idle_ = false;  // a producer warp without a loop (TMA)
  bool pingpong_ = false;  // a consumer warp of the ping-pong schedule: its warpgroup computes every other tile
  std::uint32_t wg_ = 0;   // consumer warpgroup
  std::uint64_t cta_id_ = 0;
  std::uint32_t k_tiles_per_unit_ = 1;  // k-tiles of one output tile (of the CTA's split)
  // Stream-K (sm_90): the CTA's works (GemmPlan::stream_k_works) and the first iteration of each, then the total.
  std::vector<GemmStreamK::Segment> works_;
  std::vector<std::uint32_t> work_begin_;
  std::uint32_t tile_loop_pc_ = 0;      // persistent: the tile loop's head, where the code after the prologue starts
};

}  // namespace

GemmTileIndex gemm_cta_tile(std::uint64_t cta_id, std::uint32_t tiles_m, std::uint32_t tiles_n, std::uint32_t group) {
  WARPSIM_ASSERT(group >= 1 && tiles_m >= 1 && tiles_n >= 1, "empty grid or swizzle group");
  WARPSIM_ASSERT(cta_id < std::uint64_t{tiles_m} * tiles_n, "CTA id beyond the grid");
  const std::uint64_t ctas_per_group = std::uint64_t{group} * tiles_n;
  const std::uint64_t first_m = cta_id / ctas_per_group * group;
  const std::uint64_t group_rows = std::min<std::uint64_t>(group, tiles_m - first_m);
  const std::uint64_t local = cta_id % ctas_per_group;
  return GemmTileIndex{static_cast<std::uint32_t>(first_m + local % group_rows),
                       static_cast<std::uint32_t>(local / group_rows)};
}

GemmStreamK gemm_stream_k(std::uint64_t tiles, std::uint32_t k_tiles, std::uint64_t slots,
                          std::uint32_t min_iterations) {
  WARPSIM_ASSERT(tiles >= 1 && k_tiles >= 1 && slots >= 1 && min_iterations >= 1, "empty stream-K problem");
  GemmStreamK d;
  d.tiles = tiles;
  d.k_tiles = k_tiles;
  const std::uint64_t full_waves = tiles / slots, partial = tiles % slots;
  if (partial == 0) {  // whole waves: nothing to balance
    d.dp_tiles = tiles;
    return d;
  }
  d.sk_tiles = full_waves >= 2 ? slots + partial : tiles;
  d.dp_tiles = tiles - d.sk_tiles;
  d.sk_ctas = std::max<std::uint64_t>(1, std::min(slots, d.iterations() / min_iterations));
  return d;
}

std::uint64_t GemmStreamK::iteration_begin(std::uint64_t cta) const {
  const std::uint64_t base = iterations() / sk_ctas, extra = iterations() % sk_ctas;
  return cta * base + std::min(cta, extra);
}

std::uint64_t GemmStreamK::cta_of_iteration(std::uint64_t iteration) const {
  const std::uint64_t base = iterations() / sk_ctas, extra = iterations() % sk_ctas;
  const std::uint64_t long_end = extra * (base + 1);  // the first `extra` CTAs take one more
  return iteration < long_end ? iteration / (base + 1) : extra + (iteration - long_end) / base;
}

std::vector<GemmStreamK::Segment> GemmStreamK::segments(std::uint64_t cta) const {
  WARPSIM_ASSERT(cta < ctas(), "CTA beyond the stream-K grid");
  if (cta >= sk_ctas) return {Segment{cta - sk_ctas, 0, k_tiles}};
  std::vector<Segment> out;
  const std::uint64_t first = iteration_begin(cta);
  for (std::uint64_t g = iteration_begin(cta + 1); g > first;) {
    const std::uint64_t tile = (g - 1) / k_tiles, tile_start = tile * k_tiles;
    const std::uint64_t begin = std::max(first, tile_start);
    out.push_back(Segment{dp_tiles + tile, static_cast<std::uint32_t>(begin - tile_start),
                          static_cast<std::uint32_t>(g - tile_start), cta - cta_of_iteration(tile_start)});
    g = begin;
  }
  return out;
}

bool gemm_supports_arch(const std::string& arch) { return is_ampere_arch(arch) || is_hopper_arch(arch); }

std::uint32_t gemm_input_bits(DType dtype) {
  switch (dtype) {
    case DType::FP4:
      return 4;
    case DType::FP8:
    case DType::I8:
      return 8;
    case DType::BF16:
    case DType::F16:
      return 16;
    case DType::TF32:
      return 32;  // tf32 operands are fp32 in memory (the MMA ignores the low 13 mantissa bits)
    case DType::F64:
      return 64;
    default:
      return 0;
  }
}

std::uint32_t gemm_output_bytes(DType dtype) {
  switch (dtype) {
    case DType::FP4:
    case DType::FP8:
    case DType::BF16:
    case DType::F16:
      return 2;
    case DType::TF32:
    case DType::I8:
      return 4;
    case DType::F64:
      return 8;
    default:
      return 0;
  }
}

std::uint32_t gemm_access_bytes(std::uint64_t row_pitch_bytes) {
  std::uint32_t bytes = kVecBytes;
  while (bytes > 1 && row_pitch_bytes % bytes != 0) bytes /= 2;
  return bytes;
}

namespace {

// gemm_persistent_refusal of the packed problem and tiling.
std::string persistent_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  if (!t.warpgroup_mma) return "the persistent grid is the sm_90 warp-specialised TMA kernel's";
  if (t.split_k > 1) return "the persistent grid excludes split_k > 1";
  if (!gemm_uses_tma(p, t, limits))
    return "the persistent grid needs the TMA main loop (mainloop=tma, a GPU with a TMA unit, rows of A and B "
           "16-byte aligned)";
  if (limits.sm_count == 0) return "the persistent grid needs the GPU's SM count";
  const std::uint64_t smem = std::uint64_t{shared_mem_bytes(p, t)} + persistent_staging_bytes(p, t);
  if (smem > limits.shared_mem_per_cta)
    return "the persistent kernel's stages and epilogue staging (" + std::to_string(smem) +
           " B) exceed the CTA's shared memory (" + std::to_string(limits.shared_mem_per_cta) + " B)";
  return "";
}

// gemm_pingpong_refusal of the packed problem and tiling (pingpong set, 12 warps).
std::string pingpong_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  if (!t.warpgroup_mma) return "ping-pong is the sm_90 warp-specialised kernel's schedule, not the sm_80 multistage one's";
  if (t.tcgen05) return "ping-pong is the warpgroup-MMA kernel's schedule (the tcgen05 kernel has one epilogue warpgroup)";
  if (t.stream_k) return "stream-K runs on the cooperative schedule (CUTLASS's stream-K scheduler is the cooperative kernel's)";
  if (!t.persistent) return "ping-pong is the persistent kernel's schedule (the tiling is not persistent)";
  if (t.tile_m % kHgmmaM != 0)
    return "tile_m=" + std::to_string(t.tile_m) + " must be a multiple of 64 (m64 warpgroup MMAs)";
  if (consumer_registers_needed(t) > kConsumerRegsMax)
    return "one warpgroup's " + std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) + " accumulators take " +
           std::to_string(warpgroup_acc_regs(t)) + " registers per thread, " + std::to_string(consumer_registers_needed(t)) +
           " with the rest, more than the " + std::to_string(kConsumerRegsMax) +
           " setmaxnreg gives a consumer (CUTLASS's ping-pong tiles are 64x256 and 128x128; 128x256 does not fit)";
  if (2 * t.stages + kPingpongOrderBarriers > kMbarriers)
    return "stages=" + std::to_string(t.stages) + " (its mbarriers, 2 per stage and 4 for the warpgroups' order, must be "
           "at most " + std::to_string(kMbarriers) + ")";
  if (std::string why = persistent_refusal(p, t, limits); !why.empty()) return "it runs persistent, and " + why;
  return "";
}

}  // namespace

std::string gemm_persistent_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  return persistent_refusal(storage_problem(p), storage_tiling(t, p.dtype), limits);
}

std::string gemm_tcgen05_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  GemmTiling as_tcgen05 = t;
  as_tcgen05.tcgen05 = true;
  return tcgen05_refusal(storage_problem(p), storage_tiling(as_tcgen05, p.dtype), limits);
}

std::string gemm_pingpong_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  GemmTiling as_pingpong = t;
  as_pingpong.pingpong = true;
  as_pingpong.persistent = true;
  as_pingpong.warps = (kPingpongWarpgroups + 1) * kWarpgroupWarps;
  return pingpong_refusal(storage_problem(p), storage_tiling(as_pingpong, p.dtype), limits);
}

GemmTiling gemm_with_pingpong(const GemmProblem& p, GemmTiling t, const GemmLimits& limits) {
  if (!gemm_pingpong_refusal(p, t, limits).empty()) return t;
  t.pingpong = true;
  t.persistent = true;
  t.warps = (kPingpongWarpgroups + 1) * kWarpgroupWarps;
  return t;
}

GemmTiling gemm_with_tcgen05(const GemmProblem& p, GemmTiling t, const GemmLimits& limits) {
  if (!gemm_tcgen05_refusal(p, t, limits).empty()) return t;
  t.tcgen05 = true;
  t.warps = 2 * kWarpgroupWarps;
  return t;
}

std::uint32_t gemm_persistent_stages(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  constexpr std::uint32_t kMinStages = 3;
  const GemmProblem sp = storage_problem(p);
  GemmTiling st = storage_tiling(t, p.dtype);
  while (st.stages > kMinStages &&
         std::uint64_t{shared_mem_bytes(sp, st)} + persistent_staging_bytes(sp, st) > limits.shared_mem_per_cta)
    --st.stages;
  return std::uint64_t{shared_mem_bytes(sp, st)} + persistent_staging_bytes(sp, st) <= limits.shared_mem_per_cta
             ? st.stages
             : t.stages;
}

namespace {

// gemm_tcgen05_refusal of the packed problem and tiling.
std::string tcgen05_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  if (!limits.tcgen05) return "this GPU has no tcgen05 tensor cores (sm.tensor.tcgen05.latency is 0)";
  if (!t.warpgroup_mma) return "tcgen05 is the warp-specialised structure's, not the sm_80 multistage one";
  if (t.stream_k) return "stream-K is generated for the sm_80 and sm_90 kernels, not tcgen05's";
  if (!gemm_uses_tma(p, t, limits))
    return "tcgen05 needs the TMA main loop (mainloop=tma, a GPU with a TMA unit, rows of A and B 16-byte aligned)";
  if (!(t.tile_m == kHgmmaM || t.tile_m == kTcgen05MaxRows))
    return "tile_m=" + std::to_string(t.tile_m) + " (tcgen05.mma takes 64 or 128 rows per CTA)";
  const std::uint32_t n_step = t.tile_m == kHgmmaM ? 8 : 16;
  if (t.tile_n % n_step != 0 || kTcgen05AccBuffers * t.tile_n > kTmemColumns)
    return "tile_n=" + std::to_string(t.tile_n) + " (tcgen05.mma of " + std::to_string(t.tile_m) +
           " rows takes N a multiple of " + std::to_string(n_step) + ", and two accumulators of tile_n columns must fit "
           "the 512 of tensor memory)";
  if (2 * t.stages + 2 * kTcgen05AccBuffers > kMbarriers)
    return "stages=" + std::to_string(t.stages) + " (its mbarriers, 2 per stage and 4 for the accumulators, must be at "
           "most " + std::to_string(kMbarriers) + ")";
  // Every resident CTA holds its accumulators in the SM's tensor memory (tcgen05.alloc takes a power of two of
  // columns, at least 32).
  GemmTiling as_tcgen05 = t;
  as_tcgen05.warps = 2 * kWarpgroupWarps;
  std::uint32_t columns = 32;
  while (columns < kTcgen05AccBuffers * t.tile_n) columns *= 2;
  const std::uint64_t ctas = estimated_ctas_per_sm(p, as_tcgen05, limits);
  if (ctas * columns > kTmemColumns)
    return std::to_string(ctas) + " CTAs per SM, each with " + std::to_string(columns) +
           " columns of tensor memory, exceed its " + std::to_string(kTmemColumns) + " (tile_n=" +
           std::to_string(t.tile_n) + ", stages=" + std::to_string(t.stages) + ")";
  return "";
}

}  // namespace

GemmTiling default_gemm_tiling(const std::string& arch, DType dtype) {
  GemmTiling t;
  t.swizzle_group = 8;
  if (dtype == DType::F64 && (is_ampere_arch(arch) || is_hopper_arch(arch))) {
    // fp64 has only mma.sync (DMMA) on every architecture: the multistage structure, with cuBLAS's A100 DGEMM
    // tile (ampere_dgemm_64x64_* in profiles; tile_k and stages assumed: 16 elements = 128 B of K per row, as the
    // sm_90 tiles, 4 stages of 16 KiB). 2x2 warps of 32x32 fp64 accumulators (64 registers).
    t.tile_m = 64;
    t.tile_n = 64;
    t.tile_k = 16;
    t.stages = 4;
    t.warps = 4;
    t.warpgroup_mma = false;
    t.accumulator_bytes = 8;
    return t;
  }
  if (is_ampere_arch(arch)) {
    // CUTLASS/cuBLAS's workhorse for large bf16/f16 GEMMs on A100: 2x2 warps of 64x64, 4 stages of 64 KiB total,
    // so two CTAs (8 warps) fit per SM. Split-K (when the heuristic splits) is cuBLAS's on A100: partial tiles
    // in workspace slices, summed by a separate reduction kernel (splitKreduce_kernel in its profiles).
    t.split_k_reduction = GemmTiling::SplitKReduction::Parallel;
    // Other input types keep the 64 bytes of K per tile row (tf32 16, i8 32 elements): the same stage size.
    t.tile_m = 128;
    t.tile_n = 128;
    t.tile_k = 64 / std::max(1u, elem_bytes(dtype)) * k_elems_per_unit(dtype);
    t.stages = 4;
    t.warps = 4;
    t.warpgroup_mma = false;
    return t;
  }
  if (is_hopper_arch(arch)) {
    // CUTLASS 3 warp-specialised 128x256 tile: one producer and two consumer warpgroups, 4 stages of 48 KiB.
    // Every input type keeps 128 bytes of K per tile row (fp8, i8: 128; tf32: 32; fp4: 256 elements, as CUTLASS's
    // sm_100 block-scaled kernels).
    t.tile_m = 128;
    t.tile_n = 256;
    t.tile_k = 128 / std::max(1u, elem_bytes(dtype)) * k_elems_per_unit(dtype);
    t.stages = 4;
    t.warps = 12;
    t.warpgroup_mma = true;
    // Clusters of two CTAs sharing the tile's 256-wide operand by TMA multicast, as cuBLAS's H100 kernels for
    // these shapes (nvjet_sm90_tst_256x128_64x4_1x2 in validation/data/h100_sxm_2026-11-23/ncu_h100.csv: cluster
    // 1x2 in its M/N order). Used by the TMA main loop only.
    t.cluster_m = 2;
    return t;
  }
  throw InputError("GEMM synthesizer: unknown architecture '" + arch + "' (expected sm_80, sm_90 or sm_100)");
}

namespace {

// Split-K choice (README.md, "Tiling heuristic"). Estimated time of a split s, in k-tile times of one CTA:
// waves(s) * (ceil(k_tiles / s) + stages), where a wave is sm_count * ctas_per_sm CTAs and `stages` k-tiles stand
// for the pipeline fill and the epilogue every CTA pays. Candidates: no split, and every split that fills each
// SM at least once (grid >= sm_count) while leaving each split at least `stages` k-tiles; when K is too short
// for that, the largest split that keeps `stages` k-tiles per split. The cheapest wins, ties to the smaller split.
std::uint32_t choose_split_k(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits) {
  if (limits.sm_count == 0) return 1;
  if (p.m == 0 || p.n == 0 || p.k == 0) return 1;  // invalid: validate_gemm says so
  if (elem_bytes(p.dtype) == 0 || p.batch == 0) return 1;
  if (p.epilogue != GemmEpilogue::None) return 1;  // the split-K reduction kernels apply no fused epilogue
  if (p.dtype == DType::F64) return 1;              // the split-K workspace and reductions are fp32
  const std::uint64_t tiles = p.batch * ceil_div(p.m, t.tile_m) * ceil_div(p.n, t.tile_n);
  if (tiles >= limits.sm_count) return 1;  // every SM has an output tile already
  const std::uint64_t k_tiles = ceil_div(p.k, t.tile_k);
  const std::uint64_t min_k_tiles = std::max<std::uint32_t>(2, t.stages);
  const std::uint64_t s_max = std::min<std::uint64_t>(k_tiles / min_k_tiles, kMaxGridDimYZ / p.batch);
  if (s_max < 2) return 1;

  const std::uint64_t slots = std::uint64_t{limits.sm_count} * estimated_ctas_per_sm(p, t, limits);
  auto tensor_steps = [&](std::uint64_t s) { return ceil_div(tiles * s, slots) * (ceil_div(k_tiles, s) + t.stages); };
  // With the GPU's rates known, the estimate is a time: the tensor work above (k-tile steps of one CTA at the
  // tensor cores' rate) or the DRAM traffic, whichever is longer, plus the reduction kernel. A split adds
  // s x m x n fp32 partial sums, written by the main kernel and read back by the reduction, which a
  // DRAM-bound decode GEMM pays in full: more splits fill more SMs but may cost more than they save.
  const bool rates_known =
      limits.tensor_flops_per_cycle > 0 && limits.sm_clock_hz > 0 && limits.dram_bytes_per_second > 0;
  const double ktile_seconds =
      rates_known ? 2.0 * t.tile_m * t.tile_n * t.tile_k * k_elems_per_unit(p.dtype) / limits.tensor_flops_per_cycle /
                        limits.sm_clock_hz
                  : 0;
  const double operand_bytes = static_cast<double>(p.batch) * (p.m + p.n) * p.k * elem_bytes(p.dtype);
  const double output_bytes = static_cast<double>(p.batch) * p.m * p.n * gemm_output_bytes(p.dtype);
  auto tensor_seconds = [&](std::uint64_t s) { return static_cast<double>(tensor_steps(s)) * ktile_seconds; };
  auto workspace_bytes = [&](std::uint64_t s) {
    return s > 1 ? static_cast<double>(s) * p.batch * p.m * p.n * kWorkspaceBytes : 0.0;
  };
  // Partial sums that fit in L2 beside the operands and C are written and read back there, not in DRAM.
  auto workspace_in_dram = [&](std::uint64_t s) {
    return operand_bytes + workspace_bytes(s) + output_bytes > limits.l2_bytes;
  };
  // Each SM streams its CTAs' share at the same rate, so the SM with the most CTAs sets the time: the bytes are
  // scaled by its CTA count over the mean (a split of 64 tiles in 2 puts 2 CTAs on 20 of 108 SMs: x1.69).
  auto imbalance = [&](std::uint64_t s) {
    const double ctas = static_cast<double>(tiles * s);
    return static_cast<double>(ceil_div(tiles * s, limits.sm_count)) / (ctas / limits.sm_count);
  };
  auto main_dram_seconds = [&](std::uint64_t s) {
    const double c_bytes = s == 1 ? output_bytes : workspace_in_dram(s) ? workspace_bytes(s) : 0.0;
    return (operand_bytes + c_bytes) * imbalance(s) / limits.dram_bytes_per_second;
  };
  auto cost = [&](std::uint64_t s) -> double {
    if (!rates_known) return static_cast<double>(tensor_steps(s));
    const double reduce_bytes = s > 1 ? (workspace_in_dram(s) ? workspace_bytes(s) : 0.0) + output_bytes : 0.0;
    return std::max(tensor_seconds(s), main_dram_seconds(s)) + reduce_bytes / limits.dram_bytes_per_second;
  };

  const std::uint64_t s_fill = ceil_div(limits.sm_count, tiles);
  const std::uint64_t first = std::max<std::uint64_t>(2, std::min(s_fill, s_max));
  // The time estimate assumes every SM streams: DRAM-bound tiles on a part of the SMs are latency-bound flows (one
  // SM alone pulls a fraction of the DRAM bandwidth), which it cannot see, so a DRAM-bound no-split is no candidate.
  const bool no_split_candidate = !rates_known || tensor_seconds(1) >= main_dram_seconds(1);
  std::uint64_t best = no_split_candidate ? 1 : first;
  double best_cost = cost(best);
  for (std::uint64_t s = first; s <= s_max; ++s) {
    const double c = cost(s);
    if (c < best_cost) {
      best = s;
      best_cost = c;
    }
  }
  return static_cast<std::uint32_t>(best);
}

}  // namespace

GemmTiling default_gemm_tiling(const std::string& arch, DType dtype, const GemmProblem& problem,
                               const GemmLimits& limits, const GemmTileShape& asked) {
  GemmTiling t = default_gemm_tiling(arch, dtype);
  // Decode-like: a 64-row tile instead of 128 mostly padding. sm_90: one consumer warpgroup (64 x tile_n HGMMA)
  // and the producer, 8 warps; sm_80: 64 x 128 with the 4 warps side by side (warp tiles 64 x 32).
  const std::uint32_t tile_m = asked.tile_m ? asked.tile_m : problem.m <= 64 ? 64 : t.tile_m;
  if (tile_m != t.tile_m) {
    t.tile_m = tile_m;
    if (t.warpgroup_mma) t.warps = kWarpgroupWarps * (1 + tile_m / kHgmmaM);
  }
  if (asked.tile_n) t.tile_n = asked.tile_n;
  if (asked.stages) t.stages = asked.stages;
  // sm_80: CUTLASS's 64x64 warp tiles for tiles past 128x128 (256x128: 8 warps); smaller ones keep 4 warps.
  if (!t.warpgroup_mma && (asked.tile_m || asked.tile_n))
    t.warps = std::max(t.warps, t.tile_m * t.tile_n / (64 * 64));
  t.split_k = choose_split_k(storage_problem(problem), storage_tiling(t, dtype), limits);
  return t;
}

std::string validate_gemm(const GemmProblem& problem, const GemmTiling& tiling, const GemmLimits& limits) {
  if (elem_bytes(problem.dtype) == 0)
    return "GEMM dtype must be bf16, f16, fp8, tf32, i8, f64 or fp4, not " + std::string(dtype_name(problem.dtype));
  if (problem.dtype == DType::FP8 && !tiling.warpgroup_mma)
    return "fp8 GEMM needs the warpgroup-MMA (sm_90) structure: sm_80 tensor cores have no fp8 MMA";
  if (problem.dtype == DType::FP4) {
    if (!tiling.warpgroup_mma || tiling.mainloop != GemmTiling::Mainloop::Tma || !limits.tma)
      return "fp4 GEMM needs the warpgroup-MMA structure with the TMA main loop on a GPU with a TMA unit (its block "
             "scales are loaded by TMA beside the tiles)";
    if (problem.k % 32 != 0)
      return "fp4 GEMM needs k a multiple of 32, not " + std::to_string(problem.k) +
             " (16-byte rows of packed e2m1 for TMA, whole 16-element scale blocks)";
    if (tiling.tile_k % 2 != 0)
      return "fp4 GEMM tile_k=" + std::to_string(tiling.tile_k) + " must be even (two elements per byte)";
    // A tile's rows then cover whole 128-row scale atoms, or lie within one: the stage holds ceil(tile / 128) of them.
    for (const auto& [key, rows] : {std::pair{"tile_m", tiling.tile_m}, std::pair{"tile_n", tiling.tile_n}})
      if (rows != 0 && rows % kScaleAtomRows != 0 && kScaleAtomRows % rows != 0)
        return std::string("fp4 GEMM ") + key + "=" + std::to_string(rows) +
               " must divide or be a multiple of 128 (the rows of a block-scale atom)";
    if (2 * tiling.stages > kMbarriers)
      return "fp4 GEMM stages=" + std::to_string(tiling.stages) + ": the TMA main loop has mbarriers for at most " +
             std::to_string(kMbarriers / 2) + " stages (its scales come by TMA only)";
  }
  // From here on the packed problem (storage_problem); messages name the tile_k and k asked for.
  const GemmProblem p = storage_problem(problem);
  const GemmTiling t = storage_tiling(tiling, problem.dtype);
  if (p.m == 0 || p.n == 0 || p.k == 0) return "GEMM dimensions m, n, k must be positive";
  if (p.epilogue != GemmEpilogue::None && (p.dtype == DType::I8 || p.dtype == DType::F64))
    return "GEMM fused epilogue (bias, relu, gelu) needs a 16-bit or fp32 float output, not " +
           std::string(dtype_name(p.dtype)) + " (int8 GEMMs write int32 C here; fp64 epilogues are not generated)";
  if (p.dtype == DType::F64 && (t.warpgroup_mma || t.accumulator_bytes != 8))
    return "fp64 GEMM needs the mma.sync multistage structure with 8-byte accumulators (no fp64 warpgroup MMA)";
  if (p.dtype != DType::F64 && t.accumulator_bytes != 4)
    return "GEMM accumulator_bytes must be 4 for " + std::string(dtype_name(p.dtype)) + " (8 is fp64's)";
  if (p.dtype == DType::F64 && t.split_k > 1)
    return "fp64 GEMM runs without split-K (its workspace and reduction kernels are fp32)";
  if (p.epilogue != GemmEpilogue::None && t.split_k > 1)
    return "GEMM fused epilogue (bias, relu, gelu) runs without split-K: its reduction kernels apply none";
  if (p.batch == 0) return "GEMM batch must be at least 1";
  const std::uint32_t eb = elem_bytes(p.dtype);
  const std::uint32_t mma_k = mma_k_for(p.dtype);
  constexpr std::uint64_t kMaxDim = 1ull << 31;    // products of two dimensions cannot overflow
  constexpr std::uint64_t kMaxElems = 1ull << 40;  // keeps every address computation far from overflow
  if (p.m >= kMaxDim || p.n >= kMaxDim || p.k >= kMaxDim || p.batch >= kMaxDim || p.m * p.k >= kMaxElems ||
      p.n * p.k >= kMaxElems || p.m * p.n >= kMaxElems || p.batch * p.m * p.k >= kMaxElems ||
      p.batch * p.n * p.k >= kMaxElems || p.batch * p.m * p.n >= kMaxElems)
    return "GEMM matrices too large (each batch of A, B and C must hold fewer than 2^40 elements)";
  const std::uint32_t c_eb = c_elem_bytes(p.dtype, t.split_k);
  if (t.split_k > 1 && t.split_k_reduction == GemmTiling::SplitKReduction::Parallel &&
      t.split_k * p.batch * p.m * p.n >= kMaxElems)
    return "GEMM split-K workspace too large (split_k x batch x m x n must be below 2^40 fp32 elements)";
  if (p.k * eb > 0x7fffffffull || p.n * c_eb > 0x7fffffffull) return "GEMM row pitch exceeds 2 GiB";
  if (t.split_k >= 1 && p.batch * t.split_k > kMaxGridDimYZ)
    return "GEMM grid too large: grid.z = batch x split_k = " + std::to_string(p.batch) + " x " +
           std::to_string(t.split_k) + " must be <= 65535";

  if (t.tile_m == 0 || t.tile_n == 0 || t.tile_k == 0 || t.warps == 0)
    return "GEMM tile sizes and warp count must be positive";
  if (t.stages < 2) return "GEMM pipeline needs at least 2 stages";
  if (t.swizzle_group == 0) return "GEMM swizzle_group must be at least 1";
  if (t.split_k == 0) return "GEMM split_k must be at least 1";
  if (t.stream_k) {
    if (t.warpgroup_mma && (t.tcgen05 || t.pingpong || !t.persistent || !gemm_uses_tma(p, t, limits)))
      return "GEMM stream-K on the warp-specialised structure is the persistent cooperative TMA kernel's (CUTLASS 3's "
             "PersistentTileSchedulerSm90StreamK): not with tcgen05, ping-pong, the LDGSTS main loop or one CTA per tile";
    if (t.warpgroup_mma)
      if (const std::string why = persistent_refusal(p, t, limits); !why.empty())
        return "GEMM stream-K on the warp-specialised structure runs the persistent kernel, and " + why;
    if (t.split_k > 1) return "GEMM stream-K and split-K exclude each other (stream-K splits the k-tiles of the tiles it shares)";
    if (p.dtype == DType::F64) return "fp64 GEMM runs without stream-K (its partial sums are fp32)";
    if (limits.sm_count == 0 && t.stream_k_ctas == 0)
      return "GEMM stream-K needs the GPU's SM count (or stream_k_ctas) to size its grid";
    if (p.batch * ceil_div(p.m, t.tile_m) * ceil_div(p.n, t.tile_n) + t.stream_k_ctas > 0x7fffffffull)
      return "GEMM stream-K grid too large (batch x output tiles + stream_k_ctas must be below 2^31)";
  }
  if (t.tile_k % mma_k != 0)
    return "GEMM tile_k=" + std::to_string(tiling.tile_k) + " must be a multiple of " +
           std::to_string(mma_k * k_elems_per_unit(p.dtype));
  if (t.tile_k * eb % kVecBytes != 0)
    return "GEMM tile_k=" + std::to_string(tiling.tile_k) + ": a tile row must be whole 16-byte chunks";
  // Copies are 16 bytes per lane, or as wide as the rows of A and B (k elements) are aligned.
  const std::uint32_t chunks_per_row = t.tile_k * eb / gemm_access_bytes(p.k * eb);
  if (!(kWarpSize % chunks_per_row == 0 || chunks_per_row % kWarpSize == 0))
    return "GEMM tile_k=" + std::to_string(tiling.tile_k) +
           ": its copy chunks per row must divide, or be a multiple of, the 32 lanes of a copy";
  if (ceil_div(p.n, t.tile_n) > 0x7fffffffull || ceil_div(p.m, t.tile_m) > kMaxGridDimYZ)
    return "GEMM grid too large (grid.y = ceil(m/tile_m) must be <= 65535)";
  if (t.split_k > 1) {
    const std::uint64_t k_tiles = ceil_div(p.k, t.tile_k);
    if (t.split_k > k_tiles || t.split_k > kMaxGridDimYZ)
      return "GEMM split_k=" + std::to_string(t.split_k) + " exceeds the " + std::to_string(k_tiles) +
             " k-tiles of k=" + std::to_string(problem.k) + " (each split needs at least one; grid.z <= 65535)";
  }

  std::uint32_t copy_threads = 0, acc_cols = 0;
  if (!t.warpgroup_mma) {
    if (t.tile_k / mma_k < 2)
      return "GEMM tile_k must cover at least 2 MMA k-steps for the multistage pipeline (fragments of the "
             "next k-step load during the current one)";
    std::uint32_t wm = 0, wn = 0;
    if (!multistage_warp_layout(t, wm, wn))
      return "GEMM tile " + std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) +
             " cannot be split among " + std::to_string(t.warps) +
             " warps into warp tiles of 16-row x 16-column multiples";
    const std::uint32_t wtm = t.tile_m / wm, wtn = t.tile_n / wn;
    const std::uint32_t ids = multistage_acc_regs(wtm, wtn, 4) + multistage_frag_regs(wtm, wtn) + kRegOverhead;
    if (kernel_registers(t) > limits.max_registers_per_thread)
      return "GEMM warp tile " + std::to_string(wtm) + "x" + std::to_string(wtn) + " needs " +
             std::to_string(kernel_registers(t)) + " registers per thread, more than the GPU's " +
             std::to_string(limits.max_registers_per_thread);
    if (ids > kFirstPredId)
      return "GEMM warp tile " + std::to_string(wtm) + "x" + std::to_string(wtn) + " needs " + std::to_string(ids) +
             " register ids per thread, more than the " + std::to_string(kFirstPredId) +
             " the synthesizer has below its predicate ids (and RZ = 255)";
    copy_threads = t.warps * kWarpSize;
    acc_cols = wtn;
  } else {
    if (t.tile_m % kHgmmaM != 0)
      return "GEMM tile_m=" + std::to_string(t.tile_m) + " must be a multiple of 64 (one warpgroup MMA)";
    const std::uint32_t consumers = consumer_warps_of(t) / kWarpgroupWarps;
    if (t.tcgen05) {
      if (const std::string why = tcgen05_refusal(p, t, limits); !why.empty()) return "GEMM tcgen05 structure: " + why;
    }
    if (t.pingpong) {
      if (const std::string why = pingpong_refusal(p, t, limits); !why.empty()) return "GEMM ping-pong schedule: " + why;
    }
    if (t.warps != kWarpgroupWarps * (consumers + 1))
      return "GEMM warp-specialised tiling with tile_m=" + std::to_string(t.tile_m) + " needs " +
             std::to_string(kWarpgroupWarps * (consumers + 1)) + " warps (one producer warpgroup + " +
             (t.tcgen05    ? "the epilogue warpgroup"
              : t.pingpong ? "two ping-pong consumer warpgroups"
                           : "one consumer warpgroup per 64 rows") +
             "), not " + std::to_string(t.warps);
    if (t.tile_n % kHmmaShape.n != 0 || t.tile_n > kHgmmaMaxN)
      return "GEMM tile_n=" + std::to_string(t.tile_n) + " must be a multiple of 8 and at most 256 (HGMMA N)";
    if (kernel_registers(t) > limits.max_registers_per_thread)
      return "GEMM warp-specialised tiling needs " + std::to_string(kernel_registers(t)) +
             " registers per thread at launch, more than the GPU's " +
             std::to_string(limits.max_registers_per_thread);
    copy_threads = kWarpgroupThreads;
    acc_cols = t.tile_n;
  }
  if ((std::uint64_t{t.tile_m} * chunks_per_row) % copy_threads != 0 ||
      (std::uint64_t{t.tile_n} * chunks_per_row) % copy_threads != 0)
    return "GEMM tiles of A (" + std::to_string(t.tile_m) + " rows) and B (" + std::to_string(t.tile_n) + " rows) x " +
           std::to_string(tiling.tile_k) + " must split into whole copies per each of the " +
           std::to_string(copy_threads) + " copying threads";
  const std::uint64_t regs_per_cta = std::uint64_t{kernel_registers(t)} * t.warps * kWarpSize;
  if (regs_per_cta > limits.registers_per_sm)
    return "GEMM CTA needs " + std::to_string(regs_per_cta) + " registers, more than an SM's " +
           std::to_string(limits.registers_per_sm);

  const std::uint64_t smem = std::uint64_t{t.stages} * stage_bytes(p, t);
  if (smem > limits.shared_mem_per_cta)
    return "GEMM shared memory " + std::to_string(smem) + " B per CTA (" + std::to_string(t.stages) + " stages x (" +
           std::to_string(t.tile_m) + "+" + std::to_string(t.tile_n) + ") x " + std::to_string(tiling.tile_k) + " x " +
           (block_scaled(p.dtype) ? "1/2 B, and the block scales" : std::to_string(eb) + " B") +
           ") exceeds the limit of " + std::to_string(limits.shared_mem_per_cta) + " B";
  const std::uint64_t staging = std::uint64_t{t.warps} * gemm_epilogue(p, acc_cols, t).staging_bytes();
  if (staging > smem)
    return "GEMM epilogue staging (" + std::to_string(staging) + " B) does not fit in the pipeline's shared memory (" +
           std::to_string(smem) + " B): use more stages or a larger tile_k";
  return "";
}


namespace {

// ---- split-K helper kernels ------------------------------------------------------------------------------------
//
// Flat passes over the batch*m*n elements of C, `elems` (up to 4: one 16-byte fp32 vector) per thread, 256
// threads per CTA, launched in the GEMM's stream:
//  * reduction (Parallel split-K, cuBLAS's splitKreduce_kernel): sums the split_k fp32 slices into C;
//  * zeroing (Atomic split-K, a memset before the GEMM) and conversion (Atomic split-K with a 16-bit C: the
//    one-slice reduction after it).
//   S2R x2, IMAD (address), ISETP (bound); per source slice an LDG of elems*4 bytes and (after the first) an FADD
//   (IADD3 for int32) per element; for 16-bit output an FMUL per pair (the F2FP pack, as the epilogue counts it); zeroing: MOV;
//   STG of elems*out bytes; EXIT. The last warp masks the lanes past the end.
constexpr std::uint32_t kHelperThreads = 256;
constexpr std::uint32_t kHelperRegs = 16;  // ids, address, 2 x 4 values: far below any limit
constexpr std::uint32_t kHelperMaxElems = kVecBytes / kWorkspaceBytes;
constexpr std::uint16_t kHelperGuard = kPredGuard;

struct FlatPass {
  std::uint32_t sources = 0;      // fp32 slices summed (0: store zeros)
  std::uint64_t src = 0, src_stride = 0;  // first slice, bytes from one slice to the next
  std::uint64_t dst = 0;
  std::uint64_t elements = 0;  // batch * m * n
  std::uint32_t elems = 0;     // per thread
  std::uint32_t dst_elem_bytes = 0;
  Opcode add = Opcode::FADD;  // sum of two slices' elements: FADD (fp32), IADD3 (int32 partials of int8)
};

class FlatPassWarp final : public WarpGenerator {
 public:
  FlatPassWarp(std::shared_ptr<const FlatPass> pass, std::uint64_t cta, std::uint32_t warp)
      : pass_(std::move(pass)), first_((cta * kHelperThreads + std::uint64_t{warp} * kWarpSize) * pass_->elems) {}

  bool generate(InstChunk& c) override {
    if (done_) return false;
    done_ = true;
    const FlatPass& F = *pass_;
    enum : std::uint16_t { kTid, kCta, kAddr, kSum, kLoad = kSum + kHelperMaxElems };
    emit_alu(c, Opcode::S2R, kTid, {});
    emit_alu(c, Opcode::S2R, kCta, {});
    emit_alu(c, Opcode::IMAD, kAddr, {kCta, kTid});
    emit_alu(c, Opcode::ISETP, kHelperGuard, {kAddr});
    // Lanes whose vector starts before the end; a warp wholly past it only checks the bound and exits.
    const std::uint32_t mask = first_ < F.elements ? first_lanes_mask(ceil_div(F.elements - first_, F.elems)) : 0;
    if (mask != 0) {
      if (F.sources == 0) emit_alu(c, Opcode::MOV, kSum, {});
      const std::uint32_t load_bytes = F.elems * kWorkspaceBytes;
      for (std::uint32_t s = 0; s < F.sources; ++s) {
        const std::uint16_t into = s == 0 ? kSum : kLoad;
        emit_load(c, Opcode::LDG, MemSpace::Global,
                  LaneRows{F.src + s * F.src_stride + first_ * kWorkspaceBytes, load_bytes}, mask, into,
                  load_bytes / 4, {kAddr});
        if (s > 0)
          for (std::uint32_t e = 0; e < F.elems; ++e)
            emit_alu(c, F.add, reg(kSum + e), {reg(kSum + e), reg(kLoad + e)});
      }
      if (F.sources > 0 && F.dst_elem_bytes == 2)
        for (std::uint32_t e = 0; e < F.elems; e += 2)
          emit_alu(c, Opcode::FMUL, reg(kSum + e), {reg(kSum + e), reg(kSum + std::min(e + 1, F.elems - 1))});
      emit_store(c, Opcode::STG, MemSpace::Global,
                 LaneRows{F.dst + first_ * F.dst_elem_bytes, F.elems * F.dst_elem_bytes}, mask, {kSum, kAddr});
    }
    c.emit(Opcode::EXIT);
    return true;
  }

 private:
  std::shared_ptr<const FlatPass> pass_;
  std::uint64_t first_ = 0;  // first element of lane 0
  bool done_ = false;
};

GeneratedKernelSpec make_flat_pass_kernel(const FlatPass& pass, const std::string& name, const std::string& arch) {
  auto shared = std::make_shared<const FlatPass>(pass);
  GeneratedKernelSpec spec;
  spec.info.name = name;
  spec.info.grid = Dim3{static_cast<std::uint32_t>(ceil_div(ceil_div(pass.elements, pass.elems), kHelperThreads)), 1, 1};
  spec.info.block = Dim3{kHelperThreads, 1, 1};
  spec.info.registers_per_thread = kHelperRegs;
  spec.info.shared_mem_bytes = 0;
  spec.info.target_arch = arch;
  spec.info.flops = 0;
  spec.make_warp = [shared](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
    return std::make_unique<FlatPassWarp>(shared, cta, warp);
  };
  return spec;
}

}  // namespace

std::unique_ptr<TraceSource> make_gemm_trace(const GemmProblem& problem, const GemmTiling& tiling,
                                             const std::string& arch, const GemmLimits& limits) {
  if (!is_ampere_arch(arch) && !is_hopper_arch(arch))
    throw InputError("GEMM synthesizer: unknown architecture '" + arch + "' (expected sm_80, sm_90 or sm_100)");
  if (tiling.warpgroup_mma && !is_hopper_arch(arch))
    throw InputError("GEMM synthesizer: warpgroup MMA (HGMMA) tiling needs sm_90 or later, not " + arch);
  if (!tiling.warpgroup_mma && !is_ampere_arch(arch) && problem.dtype != DType::F64)
    throw InputError("GEMM synthesizer: the mma.sync multistage structure is generated for sm_80 only, not " + arch +
                     " (use default_gemm_tiling(\"" + arch + "\", dtype))");
  const std::string problem_error = validate_gemm(problem, tiling, limits);
  if (!problem_error.empty()) throw InputError("GEMM synthesizer: " + problem_error);

  const GemmProblem packed = storage_problem(problem);
  const GemmTiling packed_tiling = storage_tiling(tiling, problem.dtype);
  std::shared_ptr<const GemmPlan> plan =
      make_plan(packed, packed_tiling, arch, gemm_uses_tma(packed, packed_tiling, limits), limits);
  GeneratedKernelSpec spec;
  spec.info = plan->info;
  if (plan->stream_k() && !plan->warp_specialized) {
    spec.make_warp = [plan](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
      return std::make_unique<StreamKWarp>(plan, cta, warp);
    };
  } else if (plan->warp_specialized) {
    auto factory = [](std::shared_ptr<const GemmPlan> of) -> WarpGeneratorFactory {
      return [of](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
        return std::make_unique<WarpSpecializedWarp>(of, cta, warp);
      };
    };
    spec.make_warp = factory(plan);
    if (plan->persistent() && !plan->stream_k())
      spec.skipping_rounds = [plan, factory](std::uint64_t first, std::uint64_t count) {
        WARPSIM_ASSERT(first + count <= plan->p.batch * plan->tiles / plan->persistent_ctas,
                       "round sampling skips rounds some CTA does not have");
        auto skipped = std::make_shared<GemmPlan>(*plan);
        skipped->skip_first = first;
        skipped->skip_count = count;
        return factory(std::move(skipped));
      };
  } else {
    spec.make_warp = [plan](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
      return std::make_unique<MultistageWarp>(plan, cta, warp);
    };
  }
  std::ostringstream desc, shape;
  if (problem.batch > 1) shape << problem.batch << 'x';
  shape << problem.m << 'x' << problem.n << 'x' << problem.k;
  desc << "synthetic GEMM " << shape.str() << ' ' << dtype_tag(problem.dtype) << " on " << arch;
  std::vector<GeneratedKernelSpec> kernels;
  const std::uint64_t elements = problem.batch * problem.m * problem.n;
  const std::uint32_t out_bytes = gemm_output_bytes(problem.dtype);
  // Named by C's type: bf16 (also for fp8 inputs), f16, f32 (tf32 inputs), i32 (int8 inputs).
  const std::string out_tag = problem.dtype == DType::FP8    ? "bf16"
                              : problem.dtype == DType::TF32 ? "f32"
                              : problem.dtype == DType::I8   ? "i32"
                                                             : dtype_tag(problem.dtype);
  // The C a helper kernel writes: after the workspace (1 MiB aligned).
  const std::uint64_t workspace_bytes = (plan->parallel_split_k ? plan->split_k : 1) * elements * kWorkspaceBytes;
  const std::uint64_t c_after_workspace = round_up(plan->c.base + workspace_bytes, kMatrixAlign);
  auto zero_pass = [](std::uint64_t dst, std::uint64_t words) {  // a memset of `words` 4-byte words
    FlatPass zero;
    zero.dst = dst;
    zero.elements = words;
    zero.elems = gemm_access_bytes(words * kWorkspaceBytes) / kWorkspaceBytes;
    zero.dst_elem_bytes = kWorkspaceBytes;
    return zero;
  };
  auto output_pass = [&](std::uint32_t sources) {
    FlatPass pass;
    pass.sources = sources;
    pass.src = plan->c.base;
    pass.src_stride = elements * kWorkspaceBytes;
    pass.dst = c_after_workspace;
    pass.elements = elements;
    pass.elems = std::min(kHelperMaxElems, gemm_access_bytes(elements * out_bytes) / out_bytes);
    pass.dst_elem_bytes = out_bytes;
    pass.add = problem.dtype == DType::I8 ? Opcode::IADD3 : Opcode::FADD;
    return pass;
  };
  if (plan->stream_k()) {
    // The arrival counters start at zero on every launch (CUTLASS zeroes its stream-K barrier workspace before each
    // run): a memset of 4 bytes per shared tile.
    kernels.push_back(
        make_flat_pass_kernel(zero_pass(plan->sk_flags, plan->sk_flag_words()), "warpsim_gemm_streamk_zero (" + shape.str() + ")", arch));
    kernels.push_back(std::move(spec));
  } else if (plan->split_k == 1) {
    kernels.push_back(std::move(spec));
  } else if (plan->parallel_split_k) {
    kernels.push_back(std::move(spec));
    kernels.push_back(make_flat_pass_kernel(
        output_pass(plan->split_k), "warpsim_gemm_splitk_reduce_" + out_tag + " (" + shape.str() + ")", arch));
  } else {
    kernels.push_back(make_flat_pass_kernel(zero_pass(plan->c.base, elements), "warpsim_gemm_splitk_zero (" + shape.str() + ")", arch));
    kernels.push_back(std::move(spec));
    if (out_bytes != kWorkspaceBytes)  // 16-bit C: convert the fp32 workspace into it
      kernels.push_back(make_flat_pass_kernel(
          output_pass(1), "warpsim_gemm_splitk_convert_" + out_tag + " (" + shape.str() + ")", arch));
  }
  return std::make_unique<GeneratedTrace>(std::move(kernels), desc.str());
}

}  // namespace warpsim
