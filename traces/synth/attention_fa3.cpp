// FlashAttention-3 forward for sm_90 (Dao-AILab/flash-attention hopper/: flash_fwd_kernel_sm90.h,
// mainloop_fwd_sm90_tma_gmma_ws.hpp, tile_size.h; Shah et al., "FlashAttention-3", arXiv 2407.08608): a producer
// warp loads Q, K and V with TMA into mbarrier pipelines; consumer warpgroups (64 query rows each) compute
// S = Q K^T and O += P V with asynchronous warpgroup MMA, overlapping one KV block's softmax with the next block's
// GEMMs inside the warpgroup, and (head dims <= 128) taking turns at the tensor cores across warpgroups (ping-pong
// on named barriers). With an fp8 K/V (kv_dtype fp8) it is FA3's fp8 forward: Q, K and V in e4m3, fp8 warpgroup
// MMAs (k32), P converted to fp8 in registers, and V transposed in shared memory by the producer warpgroup (fp8
// wgmma reads its B operand K-major only). See README.md here, "Attention".
#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/core/error.h"
#include "sim/core/types.h"
#include "traces/synth/attention.h"
#include "traces/synth/attention_fwd.h"
#include "traces/synth/row_reduction.h"
#include "traces/synth/tile_pipeline.h"

namespace warpsim::synth::attn {
namespace {

// hopper/tile_size.h (tile_size_fwd_sm90, no local window, no paged KV, no softcap, V row-major), at
// Dao-AILab/flash-attention@07602adc: {kBlockM, kBlockN, MmaPV_is_RS, IntraWGOverlap}; 16-bit elements, or fp8
// (element size 1, the same for causal and not).
struct Fa3Tile {
  std::uint32_t block_m = 128, block_n = 128;
  bool pv_from_registers = true;  // MmaPV_is_RS: P stays in registers (else written to shared memory)
  bool intra_wg_overlap = true;
};
Fa3Tile fa3_tile(std::uint64_t head_dim, bool causal, bool fp8) {
  if (fp8) {
    if (head_dim <= 64) return {192, 160, true, true};
    if (head_dim <= 128) return {128, 224, true, true};
    return {128, 128, true, true};
  }
  if (head_dim <= 64) return {192, causal ? 128u : 192u, causal, true};
  if (head_dim <= 128) return {128, causal ? 128u : 176u, true, true};
  return {128, 80, true, true};
}

constexpr std::uint32_t kFa3Stages = 2;            // K and V pipelines (flash_fwd_launch_template.h: kStages 2)
constexpr std::uint32_t kTmaSwizzleRowBytes = 128;  // a 128-byte-swizzled TMA box is at most 128 B wide
constexpr std::uint32_t kConsumerPc = 0x8000;       // where the consumers' code starts (the producer's is shorter)
// Named barrier ids (0 is the CTA-wide barrier): FA3's FwdNamedBarriers::WarpSchedulerWG1.. per consumer
// warpgroup, and one per warpgroup for its P tile in shared memory (the SS P*V GEMM).
constexpr std::uint32_t kSchedulerBarrier = 1;
constexpr std::uint32_t kPWrittenBarrier = 4;

struct Fa3Plan {
  AttnProblem p;
  Fa3Tile tile;
  std::uint32_t consumers = 2;  // consumer warpgroups
  std::uint32_t warps = 12;     // the producer warpgroup and the consumers
  bool scheduler_barrier = false;  // UseSchedulerBarrier: ping-pong between consumer warpgroups
  bool rescale_before_pv = false;  // RescaleOBeforeGemm (head_dim > 128)
  // CTAs per cluster along the query blocks (ClusterM): each rank TMA-loads 1/cluster_m of every K and V tile and
  // multicasts it to the cluster, which shares its KV head.
  std::uint32_t cluster_m = 1;
  std::uint32_t m_blocks = 1;
  // fp8 (p.fp8_qkv()): e4m3 operands and MMAs; the producer warpgroup transposes each V stage into a Vt stage (at
  // vt_off) that P*V reads, on its own full/empty barriers.
  bool fp8 = false;
  DType mma_dtype = DType::BF16;
  std::uint32_t vt_off = 0;
  std::vector<std::array<std::int32_t, kWarpSize>> vt_load, vt_store;  // per 16x32-byte block of V: LDSM.T, STS
  MmaShape qk{}, pv{};
  std::uint32_t qk_steps = 0, pv_steps = 0;  // HGMMAs (k16; fp8 k32) per GEMM
  std::uint32_t row_bytes = 0, boxes_per_tile = 0;
  std::uint32_t q_off = 0, k_off = 0, v_off = 0, p_off = 0, smem_bytes = 0;
  StagedEpilogue epi;
  std::uint16_t r_s = 0, r_p = 0, r_o = 0, r_max = 0, r_sum = 0, r_scratch = 0, r_tid = 0, r_cnt = 0, r_desc = 0,
                r_optr = 0, r_sptr = 0;
  std::uint32_t registers = 0;  // per thread at launch
  // setmaxnreg right after the role dispatch, as FA3's flash_fwd_kernel_sm90: the producer warpgroup lowers its
  // registers to LoadRegisterRequirement (24 with 2 consumer warpgroups, else 32), the consumers raise theirs to
  // what that frees (MmaRegisterRequirement: 240 with 2, 160 with 3; at most 240).
  std::uint32_t producer_registers = 0, consumer_registers = 0;
  std::function<FwdCtaWork(std::uint64_t cta)> work;

  // mbarriers: Q full; K full/empty and V full/empty per stage; fp8: Vt full/empty per stage.
  static constexpr std::uint32_t q_full() { return 0; }
  static constexpr std::uint32_t k_full(std::uint32_t s) { return 1 + s; }
  static constexpr std::uint32_t k_empty(std::uint32_t s) { return 1 + kFa3Stages + s; }
  static constexpr std::uint32_t v_full(std::uint32_t s) { return 1 + 2 * kFa3Stages + s; }
  static constexpr std::uint32_t v_empty(std::uint32_t s) { return 1 + 3 * kFa3Stages + s; }
  static constexpr std::uint32_t vt_full(std::uint32_t s) { return 1 + 4 * kFa3Stages + s; }
  static constexpr std::uint32_t vt_empty(std::uint32_t s) { return 1 + 5 * kFa3Stages + s; }
  // The V tile P*V reads: the TMA's, or (fp8) its transpose.
  std::uint32_t pv_full(std::uint32_t s) const { return fp8 ? vt_full(s) : v_full(s); }
  std::uint32_t pv_empty(std::uint32_t s) const { return fp8 ? vt_empty(s) : v_empty(s); }
  std::uint32_t producer_warps() const { return fp8 ? kWarpgroupWarps : 1; }  // warps with work in the producer
  std::uint32_t consumer_warps() const { return consumers * kWarpgroupWarps; }
  std::uint16_t cluster_mask() const { return static_cast<std::uint16_t>(cluster_m > 1 ? (1u << cluster_m) - 1 : 0u); }
  std::uint32_t cluster_rank(std::uint64_t cta) const { return static_cast<std::uint32_t>(cta % m_blocks % cluster_m); }
  std::uint32_t s_regs() const { return tile.block_n / 2; }  // 64 x block_n fp32 over 128 threads
  std::uint32_t p_regs() const { return fp8 ? s_regs() / 4 : s_regs() / 2; }  // P in fp8 or 16 bits
  std::uint32_t o_regs() const { return static_cast<std::uint32_t>(p.head_dim) / 2; }
  SoftmaxRows softmax_rows() const { return SoftmaxRows{r_s, r_max, r_sum, r_scratch, 1, tile.block_n / 8}; }
};

// N accumulator ids spread over a warp's accumulator registers (as the GEMM's consumers): the HGMMAs chain on
// them and an instruction reading the tile waits for the last one. An RS HGMMA has a source slot less (its A).
template <std::size_t N>
std::array<std::uint16_t, N> spread_ids(std::uint16_t first, std::uint32_t regs) {
  std::array<std::uint16_t, N> ids{};
  for (std::uint32_t r = 0; r < N; ++r) ids[r] = static_cast<std::uint16_t>(first + r * (regs / N));
  return ids;
}


// Setup of every warp (same code at the same pc): thread index, loop counter, descriptors, barrier initialisation
// by warp 0, the CTA barrier that publishes it, and the role dispatch.
void emit_fa3_setup(InstChunk& c, const Fa3Plan& P, std::uint32_t warp) {
  emit_alu(c, Opcode::S2R, P.r_tid, {});
  emit_alu(c, Opcode::S2R, P.r_cnt, {});
  emit_alu(c, Opcode::IMAD, P.r_desc, {P.r_tid, P.r_cnt});
  const std::uint32_t inits = 1 + (P.fp8 ? 6 : 4) * kFa3Stages;
  if (warp == 0) {
    emit_mbarrier_init(c, Fa3Plan::q_full(), 1);
    for (std::uint32_t s = 0; s < kFa3Stages; ++s) {
      emit_mbarrier_init(c, Fa3Plan::k_full(s), 1);
      // Every consumer warp of every CTA of the cluster releases a stage (the multicast slices land in all); fp8:
      // the V stage is the producer warps' (transposed into Vt), Vt's the consumers'.
      emit_mbarrier_init(c, Fa3Plan::k_empty(s), P.consumer_warps() * P.cluster_m);
      emit_mbarrier_init(c, Fa3Plan::v_full(s), 1);
      emit_mbarrier_init(c, Fa3Plan::v_empty(s), P.fp8 ? P.producer_warps() : P.consumer_warps() * P.cluster_m);
      if (P.fp8) {
        emit_mbarrier_init(c, Fa3Plan::vt_full(s), P.producer_warps());
        emit_mbarrier_init(c, Fa3Plan::vt_empty(s), P.consumer_warps());
      }
    }
  } else {
    c.skip(inits);
  }
  emit_barrier(c, 0);
  emit_alu(c, Opcode::ISETP, kPredLoop, {P.r_tid});  // producer or consumer warpgroup
  emit_branch(c, kPredLoop);
}

// ---- producer ---------------------------------------------------------------------------------------------------
//
// every warp: setup; warp 0: MBARRIER_INIT of every barrier; BAR 0; role dispatch (ISETP, BRA); setmaxnreg (the
// producer warpgroup's dec, the consumers' inc: Fa3Plan::producer_registers, consumer_registers)
// producer warpgroup: warp-role dispatch: warps 1-3 exit. Warp 0: Q (arrive.expect_tx + TMA boxes), K of the first
//   KV block; per KV block j: K of block j+1 (wait its stage's empty barrier, expect_tx, TMA), V of block j (V runs
//   one block behind K, the order the consumers use them in); BAR 0 (the epilogue may reuse shared memory); EXIT.
// fp8: every producer warp also transposes V one block behind its load (FA3's Transpose_V): wait V(j-1) landed and
//   its Vt stage free, LDSM.T + byte permutes + STS of its share of 16x32-byte blocks, arrive on Vt full and V empty;
//   the last block's after the loop; then BAR 0 and EXIT.
class Fa3ProducerWarp final : public TilePipelineWarp<Fa3ProducerWarp> {
 public:
  Fa3ProducerWarp(std::shared_ptr<const Fa3Plan> plan, FwdCtaWork work, std::uint32_t warp, std::uint32_t rank)
      : TilePipelineWarp(PipelineTiles{0, warp < plan->producer_warps() ? work.n_end - work.n_begin : 0, kFa3Stages}),
        plan_(std::move(plan)),
        w_(std::move(work)),
        warp_(warp),
        rank_(rank) {}

  void emit_prologue(InstChunk& c) {
    const Fa3Plan& P = *plan_;
    emit_fa3_setup(c, P, warp_);
    emit_setmaxnreg(c, P.producer_registers, false);
    emit_alu(c, Opcode::ISETP, kPredMask, {P.r_tid});  // warp role within the producer warpgroup
    emit_branch(c, kPredMask);
    if (warp_ != 0) return;  // (fp8: warps 1-3 go on to the transposes)
    const std::uint64_t q_rows = std::min<std::uint64_t>(P.tile.block_m, w_.q.rows - std::min(w_.q.rows, w_.q_row0));
    emit_mbarrier_arrive_expect_tx(c, Fa3Plan::q_full(), static_cast<std::uint32_t>(q_rows * P.row_bytes));
    emit_boxes(c, w_.q, w_.q_row0, w_.q_col0, static_cast<std::uint32_t>(q_rows), Fa3Plan::q_full());
    if (tiles().iterations() > 0) emit_kv_load(c, /*value=*/false, 0);
  }
  void emit_iteration(InstChunk& c, std::uint32_t j) {
    if (warp_ == 0) {
      if (j + 1 < tiles().iterations()) emit_kv_load(c, /*value=*/false, j + 1);
      else c.skip(kv_load_slots());
      emit_kv_load(c, /*value=*/true, j);
    }
    if (plan_->fp8) {
      if (j > 0) emit_transpose_v(c, j - 1);
      else c.skip(transpose_slots());
    }
    emit_loop_tail(c, plan_->r_cnt, kPredLoop);
  }
  void emit_epilogue(InstChunk& c) {
    if (warp_ < plan_->producer_warps()) {
      if (plan_->fp8 && tiles().iterations() > 0) emit_transpose_v(c, tiles().iterations() - 1);
      if (plan_->cluster_m > 1) emit_producer_tail(c);
      emit_barrier(c, 0);
    }
    c.emit(Opcode::EXIT);
  }

 private:
  std::uint32_t kv_load_slots() const { return 2 + plan_->boxes_per_tile; }
  std::uint32_t transpose_blocks() const {  // this warp's 16x32-byte blocks of a V tile
    const auto n = static_cast<std::uint32_t>(plan_->vt_load.size());
    return n / kWarpgroupWarps + (warp_ < n % kWarpgroupWarps ? 1 : 0);
  }
  std::uint32_t transpose_slots() const { return 4 + 6 * transpose_blocks(); }

  // fp8: V of the j-th KV block transposed into its Vt stage (FA3's Transpose_V: LDSM.T of 16-bit pairs, byte
  // permutes to fp8 order, STSM; STS.128 here). The warps of the producer warpgroup share the tile's 16x32-byte
  // blocks; each arrives on Vt full (the consumers' P*V may read it) and V empty (the next TMA may land there).
  void emit_transpose_v(InstChunk& c, std::uint32_t j) {
    const Fa3Plan& P = *plan_;
    const std::uint32_t s = tiles().stage_of(j);
    emit_mbarrier_wait(c, Fa3Plan::v_full(s), tiles().phase_of(j));
    emit_mbarrier_wait(c, Fa3Plan::vt_empty(s), tiles().phase_of(j) ^ 1u);
    const std::uint64_t stage_bytes = std::uint64_t{P.tile.block_n} * P.row_bytes;
    const std::uint64_t v_base = P.v_off + s * stage_bytes, vt_base = P.vt_off + s * stage_bytes;
    for (std::size_t b = warp_; b < P.vt_load.size(); b += kWarpgroupWarps) {
      emit_ldmatrix_x4(c, v_base, P.vt_load[b].data(), P.r_s, P.r_sptr);
      for (std::uint32_t r = 0; r < kLdsmMatrices; ++r) emit_alu(c, Opcode::LOP3, reg(P.r_s + r), {reg(P.r_s + r)});
      WarpInst& st = emit_store(c, Opcode::STS, MemSpace::Shared, LaneRows{vt_base, kVecBytes}, kFullMask,
                                {P.r_s, P.r_sptr});
      st.addr_mode = AddrMode::Deltas;  // the lanes' swizzled rows, not LaneRows' stride
      st.stride = 0;
      st.deltas = P.vt_store[b].data();
    }
    emit_mbarrier_arrive_expect_tx(c, Fa3Plan::vt_full(s), 0);
    emit_mbarrier_arrive_expect_tx(c, Fa3Plan::v_empty(s), 0);
  }

  // TMA boxes of `rows` rows x head_dim from (row0, col0) of `m`, 128 bytes of each row per box, completing on
  // mbarrier `bar`.
  void emit_boxes(InstChunk& c, const RowMajorMatrix& m, std::uint64_t row0, std::uint64_t col0, std::uint32_t rows,
                  std::uint32_t bar, std::uint16_t multicast = 0) {
    const Fa3Plan& P = *plan_;
    const std::uint32_t box_cols = kTmaSwizzleRowBytes / P.p.q_elem_bytes();  // q, k, v of one type
    for (std::uint32_t b = 0; b < P.boxes_per_tile; ++b) {
      if (rows == 0) {
        c.skip();
        continue;
      }
      const std::uint32_t cols = static_cast<std::uint32_t>(std::min<std::uint64_t>(box_cols, P.p.head_dim - b * box_cols));
      WarpInst& load = emit_tma_load(c, matrix_box(m, row0, col0 + std::uint64_t{b} * box_cols, rows, cols), bar, P.r_desc);
      load.mma.m = multicast;  // WarpInst::cluster_cta_mask()
    }
  }

  // K (value false) or V of the j-th KV block the CTA visits: wait until its stage is free, announce the tile's
  // bytes, TMA it (in a cluster: this rank's slice of the rows, multicast to every CTA of the cluster).
  void emit_kv_load(InstChunk& c, bool value, std::uint32_t j) {
    const Fa3Plan& P = *plan_;
    const std::uint32_t s = tiles().stage_of(j);
    const std::uint64_t n = w_.n_end - 1 - j;
    const std::uint64_t row0 = n * P.tile.block_n;
    const auto rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(P.tile.block_n, w_.kv_len - row0));
    const std::uint32_t full = value ? Fa3Plan::v_full(s) : Fa3Plan::k_full(s);
    emit_mbarrier_wait(c, value ? Fa3Plan::v_empty(s) : Fa3Plan::k_empty(s), tiles().phase_of(j) ^ 1u);
    emit_mbarrier_arrive_expect_tx(c, full, rows * P.row_bytes);
    const std::uint32_t slice = P.tile.block_n / P.cluster_m;
    const std::uint32_t first = std::min(rows, rank_ * slice), last = std::min(rows, first + slice);
    emit_boxes(c, value ? w_.v : w_.k, row0 + first, w_.kv_col0, last - first, full, P.cluster_mask());
  }

  // Cluster: wait until the last stages' releases (by every CTA of the cluster) have completed, so that no peer
  // arrives on this CTA's empty barriers after it has exited (CUTLASS's producer tail).
  void emit_producer_tail(InstChunk& c) {
    const std::uint32_t n = tiles().iterations();
    for (std::uint32_t value = 0; value < 2; ++value)
      for (std::uint32_t back = kFa3Stages; back > 0; --back) {
        if (back > n) {
          c.skip();
          continue;
        }
        const std::uint32_t j = n - back;
        const std::uint32_t s = tiles().stage_of(j);
        emit_mbarrier_wait(c, value ? Fa3Plan::v_empty(s) : Fa3Plan::k_empty(s), tiles().phase_of(j));
      }
  }

  std::shared_ptr<const Fa3Plan> plan_;
  FwdCtaWork w_;
  std::uint32_t warp_, rank_;
};

// ---- consumers ----------------------------------------------------------------------------------------------------
//
// prologue: setup; [ping-pong: the first consumer warpgroup arrives on its own scheduler barrier, so it goes first];
//   wait Q; first KV block: wait K, S = Q K^T (HGMMA x head_dim/16, commit, wait 0), release K, mask, softmax
//   (first: no rescale), P to 16 bits
// per further KV block j (FA3's fwd_step with IntraWGOverlap):
//   wait K(j); [ping-pong: BAR.SYNC own scheduler barrier]; S = Q K(j)^T issued (commit);
//   [head_dim > 128: O *= the previous block's factor]; wait V(j-1); O += P V(j-1) issued (commit);
//   [ping-pong: BAR.ARV the next warpgroup's barrier]; wait_group 1 (S is done): release K(j); mask; softmax;
//   wait_group 0 (P V done): release V(j-1); P to 16 bits [SS: P to shared memory, warpgroup barrier];
//   [head_dim <= 128: O *= factor]
// epilogue: wait V(last); O += P V(last); row sums over the quad, 1/l, logsumexp; wait_group 0; release V;
//   BAR 0; O through shared memory (over the V stages) to global; LSE; EXIT
class Fa3ConsumerWarp final : public TilePipelineWarp<Fa3ConsumerWarp> {
 public:
  Fa3ConsumerWarp(std::shared_ptr<const Fa3Plan> plan, FwdCtaWork work, std::uint32_t warp)
      : TilePipelineWarp(PipelineTiles{0, std::max(work.n_end - work.n_begin, 1u) - 1, kFa3Stages}),
        plan_(std::move(plan)),
        w_(std::move(work)),
        warp_(warp),
        consumer_(warp - kWarpgroupWarps),
        group_(consumer_ / kWarpgroupWarps),
        blocks_(w_.n_end - w_.n_begin) {}

  void emit_prologue(InstChunk& c) {
    const Fa3Plan& P = *plan_;
    emit_fa3_setup(c, P, warp_);
    c.set_pc(kConsumerPc);
    emit_setmaxnreg(c, P.consumer_registers, true);
    if (P.scheduler_barrier && group_ == 0) emit_barrier_arrive(c, scheduler_barrier(0), 2 * kWarpgroupThreads);
    else c.skip();
    emit_mbarrier_wait(c, Fa3Plan::q_full(), 0);
    if (blocks_ == 0) return;
    emit_mbarrier_wait(c, Fa3Plan::k_full(0), 0);
    emit_qk_gemm(c);
    emit_wgmma_wait(c, 0);
    emit_release(c, Fa3Plan::k_empty(0));
    emit_mask(c, 0);
    emit_online_softmax(c, P.softmax_rows(), /*first=*/true);
    emit_p_tile(c);
  }

  // Iteration i handles KV block j = i + 1 (the first block is the prologue's).
  void emit_iteration(InstChunk& c, std::uint32_t i) {
    const Fa3Plan& P = *plan_;
    const std::uint32_t j = i + 1;
    emit_mbarrier_wait(c, Fa3Plan::k_full(tiles().stage_of(j)), tiles().phase_of(j));
    if (P.scheduler_barrier) emit_named_barrier(c, scheduler_barrier(group_), 2 * kWarpgroupThreads);
    else c.skip();
    emit_qk_gemm(c);
    if (P.rescale_before_pv) emit_rescale_rows(c, P.softmax_rows(), P.r_o, P.o_regs() / kMmaAccRegs, false);
    emit_mbarrier_wait(c, P.pv_full(tiles().stage_of(j - 1)), tiles().phase_of(j - 1));
    emit_pv_gemm(c);
    if (P.scheduler_barrier)
      emit_barrier_arrive(c, scheduler_barrier((group_ + 1) % P.consumers), 2 * kWarpgroupThreads);
    else
      c.skip();
    emit_wgmma_wait(c, 1);
    emit_release(c, Fa3Plan::k_empty(tiles().stage_of(j)));
    emit_mask(c, j);
    emit_online_softmax(c, P.softmax_rows(), /*first=*/false);
    emit_wgmma_wait(c, 0);
    emit_release(c, P.pv_empty(tiles().stage_of(j - 1)));
    emit_p_tile(c);
    if (!P.rescale_before_pv) emit_rescale_rows(c, P.softmax_rows(), P.r_o, P.o_regs() / kMmaAccRegs, false);
    emit_loop_tail(c, P.r_cnt, kPredLoop);
  }

  void emit_epilogue(InstChunk& c) {
    const Fa3Plan& P = *plan_;
    const std::uint32_t rows = 2;
    if (blocks_ > 0) {
      const std::uint32_t last = blocks_ - 1;
      if (P.rescale_before_pv && blocks_ > 1)
        emit_rescale_rows(c, P.softmax_rows(), P.r_o, P.o_regs() / kMmaAccRegs, false);
      emit_mbarrier_wait(c, P.pv_full(tiles().stage_of(last)), tiles().phase_of(last));
      emit_pv_gemm(c);
    } else {
      emit_clear(c, P.r_o, P.o_regs());  // no key to attend: O = 0
    }
    emit_warp_allreduce(c, WarpReduction{P.r_sum, P.r_scratch, rows, Opcode::FADD, rows}, 4);
    for (std::uint32_t r = 0; r < rows; ++r) {
      emit_alu(c, Opcode::MUFU, reg(P.r_sum + r), {reg(P.r_sum + r)});      // 1 / l
      emit_alu(c, Opcode::MUFU, reg(P.r_scratch + r), {reg(P.r_sum + r)});  // log2(l)
      emit_alu(c, Opcode::FFMA, reg(P.r_max + r), {reg(P.r_max + r), reg(P.r_scratch + r)});  // lse
    }
    if (blocks_ > 0) {
      emit_wgmma_wait(c, 0);
      emit_release(c, P.pv_empty(tiles().stage_of(blocks_ - 1)));
    }
    emit_barrier(c, 0);  // every warpgroup is done with V: the output is staged over the V (and Vt) stages
    const std::uint64_t row = std::uint64_t{consumer_} * 16;
    emit_staged_epilogue(c, P.epi, MmaAccumulatorTile{P.r_o, 1, P.o_regs() / kMmaAccRegs}, w_.o, w_.o_row0 + row,
                         w_.o_col0, P.v_off + consumer_ * P.epi.staging_bytes(), P.r_s, P.r_optr);
    emit_lse_store(c, w_.lse, row, w_.lse_rows, P.r_max, P.r_optr);
    c.emit(Opcode::EXIT);
  }

 private:
  static std::uint32_t scheduler_barrier(std::uint32_t group) { return kSchedulerBarrier + group; }

  // Releases a K or V stage: one arrival on its empty barrier in every CTA of the cluster (their slices of the
  // tile came from all of them).
  void emit_release(InstChunk& c, std::uint32_t empty_barrier) {
    emit_mbarrier_arrive_expect_tx(c, empty_barrier, 0).mma.m = plan_->cluster_mask();
  }

  // S = Q K^T: head_dim/16 HGMMA m64 n(block_n) k16 (fp8: head_dim/32, k32) from shared memory, one commit group.
  void emit_qk_gemm(InstChunk& c) {
    const Fa3Plan& P = *plan_;
    emit_wgmma_fence(c);
    emit_alu(c, Opcode::IADD3, P.r_desc, {P.r_desc});  // K descriptor of this stage
    const auto acc = spread_ids<kMaxSrc>(P.r_s, P.s_regs());
    for (std::uint32_t k = 0; k < P.qk_steps; ++k) emit_hgmma(c, P.mma_dtype, P.qk, acc);
    emit_wgmma_commit(c);
  }
  // O += P V: block_n/16 HGMMA m64 n(head_dim) k16 (fp8: block_n/32, k32), P from registers (RS: 4 registers per
  // k-step) or from shared memory (SS), V (fp8: its transpose) from shared memory.
  void emit_pv_gemm(InstChunk& c) {
    const Fa3Plan& P = *plan_;
    emit_wgmma_fence(c);
    emit_alu(c, Opcode::IADD3, P.r_desc, {P.r_desc});  // V descriptor of this stage
    for (std::uint32_t k = 0; k < P.pv_steps; ++k) {
      if (P.tile.pv_from_registers)
        emit_hgmma_rs(c, P.mma_dtype, P.pv, spread_ids<kMaxSrc - 1>(P.r_o, P.o_regs()), reg(P.r_p + 4 * k));
      else
        emit_hgmma(c, P.mma_dtype, P.pv, spread_ids<kMaxSrc>(P.r_o, P.o_regs()));
    }
    emit_wgmma_commit(c);
  }

  // P to 16 bits (F2FP per pair); SS: STS of the warp's 16 rows of P into the warpgroup's P tile, then a
  // warpgroup barrier so that the next block's P V (a wgmma of the whole warpgroup) reads all four warps' rows.
  // fp8 (always RS): per register of four e4m3, two F2FP of pairs, a PRMT joining them and one putting the bytes in
  // the order the fp8 A operand takes them (FA3's permute of P; F2FP as FMUL, PRMT as LOP3).
  void emit_p_tile(InstChunk& c) {
    const Fa3Plan& P = *plan_;
    if (P.fp8) {
      for (std::uint32_t e = 0; e < P.s_regs(); e += 4) {
        const std::uint16_t out = reg(P.r_p + e / 4), hi = reg(P.r_s + e + 2);
        emit_alu(c, Opcode::FMUL, out, {reg(P.r_s + e), reg(P.r_s + e + 1)});
        emit_alu(c, Opcode::FMUL, hi, {hi, reg(P.r_s + e + 3)});
        emit_alu(c, Opcode::LOP3, out, {out, hi});
        emit_alu(c, Opcode::LOP3, out, {out});
      }
      return;
    }
    emit_pack_16bit(c, P.r_s, P.s_regs(), P.r_p, 1);
    if (P.tile.pv_from_registers) return;
    const std::uint32_t p_row_bytes = P.tile.block_n * P.p.elem_bytes;
    const std::uint32_t lanes_per_row = kSwizzleLineBytes / kVecBytes;  // 8 lanes x 16 B: 128 B of a row
    const std::uint32_t rows_per_inst = kWarpSize / lanes_per_row;
    const std::uint64_t base = P.p_off + std::uint64_t{consumer_} * 16 * p_row_bytes;
    for (std::uint32_t col = 0; col < p_row_bytes; col += kSwizzleLineBytes)
      for (std::uint32_t r = 0; r < 16; r += rows_per_inst)
        emit_store(c, Opcode::STS, MemSpace::Shared,
                   LaneRows{base + std::uint64_t{r} * p_row_bytes + col, kVecBytes, lanes_per_row, p_row_bytes},
                   kFullMask, {reg(P.r_p), P.r_sptr});
    emit_named_barrier(c, kPWrittenBarrier + group_, kWarpgroupThreads);
  }

  // Scores of KV block j masked where it crosses the sequence end or the causal diagonal (ISETP + FSEL per score,
  // FSEL emitted as FSETP).
  void emit_mask(InstChunk& c, std::uint32_t j) {
    const Fa3Plan& P = *plan_;
    const std::uint64_t n = w_.n_end - 1 - j;
    const std::uint64_t last_key = (n + 1) * P.tile.block_n - 1;
    if (last_key < w_.kv_len && last_key <= w_.causal_limit) {
      c.skip(2 * P.s_regs());
      return;
    }
    for (std::uint32_t e = 0; e < P.s_regs(); ++e) {
      emit_alu(c, Opcode::ISETP, kPredMask, {P.r_tid});
      emit_alu(c, Opcode::FSETP, reg(P.r_s + e), {reg(P.r_s + e)});
    }
  }

  std::shared_ptr<const Fa3Plan> plan_;
  FwdCtaWork w_;
  std::uint32_t warp_, consumer_, group_, blocks_;
};

}  // namespace

bool fa3_supported(const Config& config) {
  const std::string arch = config.section("gpu").str("arch");
  return is_hopper_arch(arch) && gpu_has_tma(config);
}

std::vector<GeneratedKernelSpec> fa3_forward_kernels(const AttnProblem& p, const Config& config, AttnArrays& arrays) {
  const std::string arch = config.section("gpu").str("arch");
  if (!fa3_supported(config))
    throw InputError("attention variant fa3: FlashAttention-3 needs an sm_90 GPU with TMA and warpgroup MMA; the GPU "
                     "config's gpu.arch is " + arch + (gpu_has_tma(config) ? "" : " (no TMA unit: async_copy)") +
                     "; use variant fa2");
  if (p.direction != "fwd")
    throw InputError("attention key direction: the fa3 variant is forward only (FlashAttention-3's backward is not "
                     "built), got " + p.direction);
  auto plan = std::make_shared<Fa3Plan>();
  Fa3Plan& P = *plan;
  P.p = p;
  P.fp8 = p.fp8_qkv();
  P.mma_dtype = P.fp8 ? DType::FP8 : p.dtype;
  P.tile = fa3_tile(p.head_dim, p.causal, P.fp8);
  P.consumers = P.tile.block_m / 64;
  P.warps = (P.consumers + 1) * kWarpgroupWarps;
  // UseSchedulerBarrier and RescaleOBeforeGemm of mainloop_fwd_sm90_tma_gmma_ws.hpp: ping-pong for 16-bit
  // elements up to hdim 128, for fp8 from hdim 128 on; O rescaled before P*V above hdim 128, not in fp8 (V row-major).
  P.scheduler_barrier = P.tile.intra_wg_overlap
                            ? P.consumers >= 2 && (P.fp8 ? p.head_dim >= 128 : p.head_dim <= 128)
                            : P.consumers == 2;
  P.rescale_before_pv = p.head_dim > 128 && !P.fp8 && P.tile.intra_wg_overlap;
  // Clusters of 2 along the query blocks (flash_fwd_launch_template.h, Enable_cluster and Use_cluster: for 16-bit
  // elements head_dim >= 128, for fp8 head_dim 192 only, which is not built), not causal, an even number of query
  // blocks.
  P.m_blocks = static_cast<std::uint32_t>(ceil_div(p.seqlen_q, P.tile.block_m));
  P.cluster_m = !P.fp8 && p.head_dim >= 128 && !p.causal && P.m_blocks % 2 == 0 ? 2 : 1;
  const auto d = static_cast<std::uint32_t>(p.head_dim);
  const std::uint16_t mma_k = P.fp8 ? 32 : 16;  // wgmma's K: 32 bytes of the operands
  P.qk = MmaShape{64, static_cast<std::uint16_t>(P.tile.block_n), mma_k};
  P.pv = MmaShape{64, static_cast<std::uint16_t>(d), mma_k};
  P.qk_steps = d / mma_k;
  P.pv_steps = P.tile.block_n / mma_k;
  P.row_bytes = d * p.q_elem_bytes();
  P.boxes_per_tile = static_cast<std::uint32_t>(ceil_div(P.row_bytes, kTmaSwizzleRowBytes));
  P.q_off = 0;
  P.k_off = P.tile.block_m * P.row_bytes;
  P.v_off = P.k_off + kFa3Stages * P.tile.block_n * P.row_bytes;
  P.vt_off = P.v_off + kFa3Stages * P.tile.block_n * P.row_bytes;
  P.p_off = P.vt_off + (P.fp8 ? kFa3Stages * P.tile.block_n * P.row_bytes : 0);
  P.smem_bytes = P.p_off + (P.tile.pv_from_registers ? 0 : P.tile.block_m * P.tile.block_n * p.elem_bytes);
  const std::uint64_t limit = shared_memory_per_cta(config);
  if (P.smem_bytes > limit)
    throw InputError("attention fa3 forward: the " + std::to_string(P.tile.block_m) + "x" + std::to_string(P.tile.block_n) +
                     " tile of head_dim " + std::to_string(d) + " needs " + std::to_string(P.smem_bytes) +
                     " bytes of shared memory per CTA; the GPU config's sm.shared_memory_per_cta is " + std::to_string(limit));
  P.epi = StagedEpilogue::store_16bit(d);
  WARPSIM_ASSERT(P.consumer_warps() * P.epi.staging_bytes() <= P.p_off - P.v_off,
                 "the output staging must fit in the V (and Vt) stages");
  if (P.fp8) {
    // The V tile (block_n keys x d bytes, 128-byte swizzled rows as TMA writes them) in 16x32-byte blocks: an
    // LDSM.x4.T of one block, its transpose (32 rows of d, 16 bytes of keys) stored into the Vt tile (d rows of
    // block_n bytes, swizzled as the P*V wgmma reads its K-major B).
    for (std::uint32_t kb = 0; kb < P.tile.block_n / 16; ++kb)
      for (std::uint32_t db = 0; db < d / 32; ++db) {
        P.vt_load.push_back(ldmatrix_x4_offsets(0, kb * 16, db * 2, d / kVecBytes, LdsmOrder::ChunksFirst));
        P.vt_store.push_back(swizzled_rows_offsets(0, db * 32, kb * kVecBytes, P.tile.block_n / kVecBytes, 1, kVecBytes));
      }
  }
  RegisterAllocator regs;
  P.r_s = regs.take(P.s_regs());
  P.r_p = regs.take(P.p_regs());
  P.r_o = regs.take(P.o_regs());
  P.r_max = regs.take(2);
  P.r_sum = regs.take(2);
  P.r_scratch = regs.take(2);
  P.r_tid = regs.take();
  P.r_cnt = regs.take();
  P.r_desc = regs.take();
  P.r_optr = regs.take();
  P.r_sptr = regs.take();
  WARPSIM_ASSERT(P.epi.readback_regs() <= P.s_regs(), "the epilogue's read-back registers reuse S");
  WARPSIM_ASSERT(regs.used() <= kMaxDataReg, "fa3 tile needs too many registers");
  // Warp-specialised kernels launch with an even share of the register file and rebalance with setmaxnreg
  // (the producer gives registers up, the consumers take them): report the launch value.
  const Params& sm = config.section("sm");
  const std::uint32_t threads = P.warps * kWarpSize;
  P.registers = std::min(sm.u32("max_registers_per_thread"), sm.u32("registers") / threads / 8 * 8);
  P.producer_registers = P.consumers == 2 ? 24 : 32;
  const std::uint64_t pool = std::uint64_t{P.registers} * threads - std::uint64_t{P.producer_registers} * kWarpgroupThreads;
  P.consumer_registers = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(240, pool / (std::uint64_t{P.consumers} * kWarpgroupThreads) / 8 * 8));
  P.consumer_registers = std::max(P.consumer_registers, P.registers);  // never an increase that lowers

  const DenseAttnTensors t = dense_attention_tensors(p, arrays);
  const std::uint32_t m_blocks = P.m_blocks;
  // Grid (m blocks, heads, batch), x fastest. Causal: the longest query blocks (the last) first, standing for the
  // longest-processing-time-first order of FA3's causal tile scheduler.
  P.work = [t, m_blocks, p, bm = P.tile.block_m, bn = P.tile.block_n](std::uint64_t cta) {
    const std::uint64_t x = cta % m_blocks;
    const std::uint64_t m = p.causal ? m_blocks - 1 - x : x;
    return dense_forward_work(t, p, bm, bn, m, cta / m_blocks / p.heads, cta / m_blocks % p.heads);
  };
  GeneratedKernelSpec spec;
  spec.info.name = "warpsim_flash_fwd_fa3_sm90_" + (P.fp8 ? "e4m3_o" + p.dtype_name : p.dtype_name) + "_hdim" +
                   std::to_string(d) + "_" +
                   std::to_string(P.tile.block_m) + "x" + std::to_string(P.tile.block_n) + "_" +
                   std::to_string(P.warps) + "w" + (P.tile.pv_from_registers ? "_rs" : "_ss") +
                   (P.scheduler_barrier ? "_pingpong" : "") + (P.cluster_m > 1 ? "_cluster2x1" : "") +
                   (p.causal ? "_causal" : "");
  spec.info.grid = Dim3{m_blocks, static_cast<std::uint32_t>(p.heads), static_cast<std::uint32_t>(p.batch)};
  spec.info.block = Dim3{P.warps * kWarpSize, 1, 1};
  spec.info.cluster = Dim3{P.cluster_m, 1, 1};
  spec.info.registers_per_thread = P.registers;
  spec.info.shared_mem_bytes = P.smem_bytes;
  spec.info.target_arch = arch;
  spec.info.flops = static_cast<std::uint64_t>(p.forward_flops());
  spec.make_warp = [plan](std::uint64_t cta, std::uint32_t warp) -> std::unique_ptr<WarpGenerator> {
    if (warp < kWarpgroupWarps)
      return std::make_unique<Fa3ProducerWarp>(plan, plan->work(cta), warp, plan->cluster_rank(cta));
    return std::make_unique<Fa3ConsumerWarp>(plan, plan->work(cta), warp);
  };
  std::vector<GeneratedKernelSpec> out;
  out.push_back(std::move(spec));
  return out;
}

}  // namespace warpsim::synth::attn
