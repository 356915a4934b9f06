// Instruction-emitting toolkit for kernel synthesizers (GEMM, attention, norms...): one function per instruction
// family over WarpInst, register-id allocation, and the address patterns tiled kernels use (coalesced 2-D tiles of
// row-major matrices, XOR-swizzled shared-memory tiles, ldmatrix row addresses). See README.md here, "Writing a
// new synthesizer".
//
// The emitters are inline and write straight into the InstChunk: they run once per generated instruction on the
// simulator's hot path, so they allocate nothing and make no virtual calls.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include "sim/core/error.h"
#include "sim/trace/inst.h"
#include "traces/synth/generated.h"

namespace warpsim::synth {

// ---- hardware constants ---------------------------------------------------------------------------------------
inline constexpr std::uint32_t kVecBytes = 16;      // widest per-lane access: LDG/STG/LDS.128, cp.async.cg 16, LDSM row
inline constexpr std::uint32_t kSwizzleChunks = 8;  // XOR swizzle over 8 x 16 B = 128 B (all 32 banks)
inline constexpr std::uint32_t kSwizzleLineBytes = kSwizzleChunks * kVecBytes;
inline constexpr std::uint32_t kLdsmRows = 8;       // ldmatrix: each 8x8 matrix is 8 rows of 16 B
inline constexpr std::uint32_t kLdsmMatrices = 4;   // .x4: lanes 8q..8q+7 address the rows of matrix q
inline constexpr std::uint32_t kWarpgroupWarps = 4;
inline constexpr std::uint32_t kWarpgroupThreads = kWarpgroupWarps * kWarpSize;
inline constexpr std::uint32_t kFullMask = ~0u;
// Largest gridDim.y and gridDim.z of a launch: 65535 on every compute capability (CUDA C++ Programming Guide,
// "Features and Technical Specifications", table "Technical Specifications per Compute Capability": maximum y- or
// z-dimension of a grid of thread blocks). Synthesizers check their grids against it.
inline constexpr std::uint64_t kMaxGridDimYZ = 65535;
// Active mask of lanes 0..n-1 (all 32 when n >= 32): the lanes of a ragged last piece of work.
inline constexpr std::uint32_t first_lanes_mask(std::uint64_t n) {
  return n >= kWarpSize ? kFullMask : (1u << n) - 1;
}
static_assert(kLdsmMatrices * kLdsmRows == kWarpSize, "ldmatrix.x4 takes one row address per lane");

// ---- registers ------------------------------------------------------------------------------------------------

// Hands out consecutive register ids (accumulators first, then fragments, scalars...). Ids must stay below the
// predicate ids the synthesizer uses (and RZ = 255); used() says how many were taken.
class RegisterAllocator {
 public:
  std::uint16_t take(std::uint32_t count = 1) {
    const std::uint16_t first = next_;
    next_ = static_cast<std::uint16_t>(next_ + count);
    return first;
  }
  std::uint16_t used() const { return next_; }

 private:
  std::uint16_t next_ = 0;
};

inline std::uint16_t reg(std::uint32_t id) { return static_cast<std::uint16_t>(id); }

inline void set_src(WarpInst& inst, std::initializer_list<std::uint16_t> regs) {
  std::size_t i = 0;
  for (std::uint16_t r : regs) inst.src[i++] = r;
  inst.num_src = static_cast<std::uint8_t>(i);
}
// `count` consecutive destination registers from `first` (e.g. the 4 of an LDS.128 or of an ldmatrix.x4).
inline void set_dst(WarpInst& inst, std::uint16_t first, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i) inst.dst[i] = static_cast<std::uint16_t>(first + i);
  inst.num_dst = static_cast<std::uint8_t>(count);
}

// ---- ALU and control ------------------------------------------------------------------------------------------

// Integer, FP32 or SFU instruction with one destination (a predicate id for ISETP/FSETP).
inline WarpInst& emit_alu(InstChunk& c, Opcode op, std::uint16_t dst, std::initializer_list<std::uint16_t> src) {
  WarpInst& inst = c.emit(op);
  set_dst(inst, dst, 1);
  set_src(inst, src);
  return inst;
}
// BRA, predicated on `pred` (the branch's taken/not-taken is implicit in the stream that follows).
inline void emit_branch(InstChunk& c, std::uint16_t pred) { set_src(c.emit(Opcode::BRA), {pred}); }
// CTA-wide barrier `id` (bar.sync id).
inline void emit_barrier(InstChunk& c, std::uint32_t id = 0) { c.emit(Opcode::BAR).aux = id; }
// Warps a named barrier of `threads` threads expects (a synthesizer passing another count is a bug of its own).
inline std::uint8_t barrier_warps(std::uint32_t threads) {
  WARPSIM_ASSERT(threads % kWarpSize == 0 && threads >= kWarpSize && threads <= kMaxCtaWarps * kWarpSize,
                 "named barrier thread count " + std::to_string(threads) + " (expected a multiple of 32 in 32..1024)");
  return static_cast<std::uint8_t>(threads / kWarpSize);
}
// bar.sync id, threads: waits until `threads` threads (a multiple of 32) have arrived at barrier `id`, counting bar.arrive.
inline void emit_named_barrier(InstChunk& c, std::uint32_t id, std::uint32_t threads) {
  WarpInst& inst = c.emit(Opcode::BAR);
  inst.aux = id;
  inst.group = barrier_warps(threads);
}
// bar.arrive id, threads: arrives at barrier `id` (expecting `threads`) without waiting.
inline void emit_barrier_arrive(InstChunk& c, std::uint32_t id, std::uint32_t threads) {
  WarpInst& inst = c.emit(Opcode::BAR_ARV);
  inst.aux = id;
  inst.group = barrier_warps(threads);
}
// cp.async.commit_group: the warp's outstanding LDGSTS become one group.
inline void emit_async_commit(InstChunk& c) { c.emit(Opcode::LDGDEPBAR).aux = 0; }
// cp.async.wait_group: wait until at most `max_outstanding` committed groups are still in flight.
inline void emit_async_wait(InstChunk& c, std::uint32_t max_outstanding) {
  c.emit(Opcode::DEPBAR).aux = max_outstanding;
}
// Loop back-edge: counter += 1; pred = counter < end; BRA pred.
inline void emit_loop_tail(InstChunk& c, std::uint16_t counter, std::uint16_t pred) {
  emit_alu(c, Opcode::IADD3, counter, {counter});
  emit_alu(c, Opcode::ISETP, pred, {counter});
  emit_branch(c, pred);
}

// ---- memory ---------------------------------------------------------------------------------------------------

// Lanes laid over rows of a row-major region: lane i accesses `lane_bytes` at
//   base + (i % lanes_per_row) * lane_bytes + (i / lanes_per_row) * row_pitch
// (Strided when the whole warp covers one row, Strided2D otherwise). Consecutive lanes on consecutive bytes is
// what coalesces: a row of lanes_per_row * lane_bytes = 128 B is one cache line.
struct LaneRows {
  std::uint64_t base = 0;
  std::uint32_t lane_bytes = 0;
  std::uint32_t lanes_per_row = kWarpSize;
  std::uint64_t row_pitch = 0;
};

// A memory instruction of `space` over `lanes`, restricted to `active_mask`; the caller sets its registers.
inline WarpInst& emit_memory(InstChunk& c, Opcode op, MemSpace space, const LaneRows& lanes,
                             std::uint32_t active_mask = kFullMask) {
  WarpInst& inst = c.emit(op);
  inst.active_mask = active_mask;
  inst.space = space;
  inst.access_bytes = static_cast<std::uint8_t>(lanes.lane_bytes);
  inst.base = lanes.base;
  inst.stride = static_cast<std::int32_t>(lanes.lane_bytes);
  if (lanes.lanes_per_row < kWarpSize) {
    inst.addr_mode = AddrMode::Strided2D;
    inst.group = static_cast<std::uint8_t>(lanes.lanes_per_row);
    inst.group_stride = static_cast<std::int32_t>(lanes.row_pitch);
  } else {
    inst.addr_mode = AddrMode::Strided;
  }
  return inst;
}

// LDG / LDS into `dst_count` consecutive registers from `dst` (lane_bytes / 4 of them), address in `addr`.
inline WarpInst& emit_load(InstChunk& c, Opcode op, MemSpace space, const LaneRows& lanes, std::uint32_t mask,
                           std::uint16_t dst, std::uint32_t dst_count, std::initializer_list<std::uint16_t> src) {
  WarpInst& inst = emit_memory(c, op, space, lanes, mask);
  set_dst(inst, dst, dst_count);
  set_src(inst, src);
  return inst;
}
// STG / STS / RED (global reduction, fire-and-forget: no destination) of registers `src` (data, then address).
inline WarpInst& emit_store(InstChunk& c, Opcode op, MemSpace space, const LaneRows& lanes, std::uint32_t mask,
                            std::initializer_list<std::uint16_t> src) {
  WarpInst& inst = emit_memory(c, op, space, lanes, mask);
  set_src(inst, src);
  return inst;
}
// LDGSTS (cp.async global -> shared): `global` gives the source addresses; the shared destination is implied by
// the registers (`global_ptr`, `shared_ptr`). No destination register: completion is tracked by commit/wait.
inline WarpInst& emit_async_copy(InstChunk& c, const LaneRows& global, std::uint32_t mask, std::uint16_t global_ptr,
                                 std::uint16_t shared_ptr) {
  return emit_store(c, Opcode::LDGSTS, MemSpace::Global, global, mask, {global_ptr, shared_ptr});
}
// LDSM.x4 (ldmatrix.x4): lane i reads 16 B at stage_base + lane_offsets[i] (kept by the caller for the batch's
// lifetime, e.g. in a table of the kernel's shared state), into 4 registers from `dst`.
inline WarpInst& emit_ldmatrix_x4(InstChunk& c, std::uint64_t stage_base, const std::int32_t* lane_offsets,
                                  std::uint16_t dst, std::uint16_t addr) {
  WarpInst& inst = c.emit(Opcode::LDSM);
  inst.space = MemSpace::Shared;
  inst.access_bytes = kVecBytes;
  inst.addr_mode = AddrMode::Deltas;
  inst.base = stage_base;
  inst.deltas = lane_offsets;
  set_dst(inst, dst, kLdsmMatrices);
  set_src(inst, {addr});
  return inst;
}

// ---- Hopper asynchronous copies and transaction barriers (TMA, mbarrier) ----------------------------------------
//
// A producer thread (lane 0 of one warp) loads a k-tile with TMA and the consumers wait for it on an mbarrier:
//   prologue (every barrier once, by one warp):  emit_mbarrier_init(c, full[s], 1);  emit_mbarrier_init(c, empty[s], consumers);
//   producer, k-tile kt into stage s:            emit_mbarrier_wait(c, empty[s], phase ^ 1);   // stage free
//                                                emit_mbarrier_arrive_expect_tx(c, full[s], tile bytes);
//                                                emit_tma_load(c, box of A, full[s]);  emit_tma_load(c, box of B, full[s]);
//   consumer:                                    emit_mbarrier_wait(c, full[s], phase);         // tile landed
//                                                ... wgmma (fence, HGMMAs, commit, wait_group 1) ...
//                                                emit_mbarrier_arrive_expect_tx(c, empty[s_prev], 0);  // release
// where `phase` flips each time the stages wrap around. Mbarrier ids are 0..kMbarriers-1 per CTA. A phase
// completes when its arrivals have arrived and the bytes announced with expect_tx have landed; try_wait on
// parity P returns once the phase of parity P has completed (a fresh barrier counts the phase of parity 1 as done,
// so a producer's first wait on an "empty" barrier with parity 1 passes at once, as in CUTLASS).

// A TMA box in global memory: `rows` rows of `row_bytes` contiguous bytes from `base`, `pitch` bytes apart (a tile
// of a row-major matrix: matrix_box below). The shared-memory destination is implied (swizzled as the MMA reads it).
struct TmaBox {
  std::uint64_t base = 0;
  std::uint64_t pitch = 0;
  std::uint32_t rows = 0;
  std::uint32_t row_bytes = 0;
  std::uint64_t bytes() const { return std::uint64_t{rows} * row_bytes; }
};
// matrix_box() (under "addresses" below): the box of a tile of a row-major matrix.

// mbarrier.init: barrier `id` expects `arrivals` arrivals per phase (SASS: a shared-memory store).
inline void emit_mbarrier_init(InstChunk& c, std::uint32_t id, std::uint32_t arrivals) {
  WarpInst& inst = c.emit(Opcode::MBARRIER_INIT);
  inst.group = static_cast<std::uint8_t>(id);
  inst.aux = arrivals;
}
// mbarrier.arrive.expect_tx (SYNCS.ARRIVE.TRANS64): one arrival on barrier `id`, announcing `tx_bytes` that
// asynchronous copies will deliver to it in this phase (0: a plain mbarrier.arrive).
inline WarpInst& emit_mbarrier_arrive_expect_tx(InstChunk& c, std::uint32_t id, std::uint32_t tx_bytes) {
  WarpInst& inst = c.emit(Opcode::SYNCS_ARRIVE_TRANS64);
  inst.group = static_cast<std::uint8_t>(id);
  inst.aux = tx_bytes;
  return inst;
}
// mbarrier.try_wait.parity loop (SYNCS.PHASECHK.TRANS64.TRYWAIT): the warp waits until the phase of parity
// `parity` (0 or 1) of barrier `id` has completed (stall_long_scoreboard while it waits).
inline void emit_mbarrier_wait(InstChunk& c, std::uint32_t id, std::uint32_t parity) {
  WarpInst& inst = c.emit(Opcode::SYNCS_PHASECHK_TRANS64_TRYWAIT);
  inst.group = static_cast<std::uint8_t>(id);
  inst.aux = parity & 1u;
}
// cp.async.bulk.tensor (UTMALDG) global -> shared, issued by lane 0: the TMA unit copies `box` and adds its bytes
// to barrier `mbarrier`'s transaction count when they have landed in shared memory. `desc` is the register
// holding the tensor-map / address operand (or kNoReg).
inline WarpInst& emit_tma_load(InstChunk& c, const TmaBox& box, std::uint32_t mbarrier, std::uint16_t desc = kNoReg) {
  WarpInst& inst = c.emit(Opcode::UTMALDG);
  inst.active_mask = 1u;
  inst.space = MemSpace::Global;
  inst.addr_mode = AddrMode::Strided;
  inst.access_bytes = kVecBytes;
  inst.base = box.base;
  inst.stride = static_cast<std::int32_t>(box.pitch);
  inst.group_stride = static_cast<std::int32_t>(box.row_bytes);
  inst.aux = box.rows;
  inst.group = static_cast<std::uint8_t>(mbarrier);
  if (desc != kNoReg) set_src(inst, {desc});
  return inst;
}

// ---- tensor core ----------------------------------------------------------------------------------------------

// mma.sync.m16n8k16 (bf16/f16) and its per-lane fragment registers.
inline constexpr MmaShape kMmaSyncShape{16, 8, 16};
inline constexpr std::uint32_t kMmaAccRegs = 4;  // 16x8 fp32 accumulator block / 32 lanes
inline constexpr std::uint32_t kMmaARegs = 4;    // 16x16 A fragment (one ldmatrix.x4)
inline constexpr std::uint32_t kMmaBRegs = 2;    // 16x8 B fragment (half of an ldmatrix.x4)

// mma.sync (HMMA): acc[acc_regs] += A fragment * B fragment. Sources are the first register of each fragment and
// of the accumulator, so consecutive MMAs into one accumulator chain.
inline WarpInst& emit_hmma(InstChunk& c, DType dtype, MmaShape shape, std::uint16_t acc, std::uint32_t acc_regs,
                           std::uint16_t a_frag, std::uint16_t b_frag) {
  WarpInst& inst = c.emit(Opcode::HMMA);
  inst.dtype = dtype;
  inst.mma = shape;
  set_dst(inst, acc, acc_regs);
  set_src(inst, {a_frag, b_frag, acc});
  return inst;
}
// Warpgroup MMA (HGMMA, operands from shared memory: wgmma ... SS): each of the warpgroup's 4 warps issues it;
// `acc_ids` stand for the warp's accumulator block, as destinations and (chained) sources. Asynchronous: see
// emit_wgmma_fence/commit/wait below for the protocol around it.
template <std::size_t N>
inline WarpInst& emit_hgmma(InstChunk& c, DType dtype, MmaShape shape, const std::array<std::uint16_t, N>& acc_ids) {
  static_assert(N <= kMaxDst && N <= kMaxSrc, "too many accumulator ids for one record");
  WarpInst& inst = c.emit(Opcode::HGMMA);
  inst.dtype = dtype;
  inst.mma = shape;
  for (std::size_t i = 0; i < N; ++i) inst.dst[i] = inst.src[i] = acc_ids[i];
  inst.num_dst = inst.num_src = static_cast<std::uint8_t>(N);
  return inst;
}

// Marks an HMMA or HGMMA as 2:4 structured-sparse (mma.sp / wgmma .sp): its shape's K is the dense-equivalent K,
// and it runs sm.tensor.(mma_sync_)sparse_speedup times faster than the dense instruction.
inline WarpInst& make_sparse(WarpInst& mma) {
  mma.aux |= kMmaSparse;
  return mma;
}

// Warpgroup MMA with A from registers (wgmma ... RS): as emit_hgmma, plus the first register of the warp's A
// fragment as a source, which the HGMMA waits for like any operand (the accumulator it does not: see below).
template <std::size_t N>
inline WarpInst& emit_hgmma_rs(InstChunk& c, DType dtype, MmaShape shape, const std::array<std::uint16_t, N>& acc_ids,
                               std::uint16_t a_frag) {
  static_assert(N < kMaxSrc, "an RS HGMMA needs a source slot for its A fragment");
  WarpInst& inst = emit_hgmma(c, dtype, shape, acc_ids);
  inst.src[N] = a_frag;
  inst.num_src = static_cast<std::uint8_t>(N + 1);
  return inst;
}

// Asynchronous warpgroup MMA protocol (PTX wgmma.fence / commit_group / wait_group; SASS WARPGROUP.ARRIVE,
// the gsb0 mark of a group's last HGMMA, WARPGROUP.DEPBAR.LE gsb0, N). Every warp of the warpgroup emits the same
// sequence:
//   emit_wgmma_fence(c);                                  // once the operands are written (e.g. after the
//                                                         //   mbarrier wait that says the k-tile has landed)
//   for each k-step: emit_hgmma(c, dtype, shape, acc);    // occupies the tensor pipe; not waited for
//   emit_wgmma_commit(c);                                 // the HGMMAs since the last commit form one group
//   emit_wgmma_wait(c, 1);                                // the previous group done: release its smem stage
//   ... epilogue: emit_wgmma_wait(c, 0) before reading the accumulators.
// An HGMMA does not wait for its accumulator (chained HGMMAs run back to back in the tensor pipe); its
// completion, latency_fixed + latency_per_n8 * N/8 after issue (sm.tensor.wgmma.*), is what the wait waits
// for (stall_gmma). An instruction other than HGMMA that reads an accumulator still executing waits for it too.
// wgmma.fence: waits for the warp's register writes by other instructions (not for HGMMAs still executing).
inline void emit_wgmma_fence(InstChunk& c) { c.emit(Opcode::WARPGROUP_ARRIVE); }
// wgmma.commit_group: the warp's HGMMAs issued since the last commit become one group (possibly empty).
inline void emit_wgmma_commit(InstChunk& c) { c.emit(Opcode::WARPGROUP_COMMIT); }
// wgmma.wait_group: the warp waits until at most `max_outstanding` of its committed groups are executing.
inline void emit_wgmma_wait(InstChunk& c, std::uint32_t max_outstanding) {
  c.emit(Opcode::WARPGROUP_DEPBAR).aux = max_outstanding;
}

// setmaxnreg.{inc,dec}.sync.aligned.u32 (USETMAXREG): the warp's registers per thread become `registers`; a
// warp-specialised kernel's producers give registers up (dec) and its consumers take them (inc waits until they
// are released).
inline void emit_setmaxnreg(InstChunk& c, std::uint32_t registers, bool increase) {
  WarpInst& inst = c.emit(Opcode::USETMAXREG);
  inst.aux = registers;
  inst.group = increase ? 1 : 0;
}

// ---- Blackwell tcgen05: MMAs into tensor memory --------------------------------------------------------------
//
// One thread of the CTA's MMA warp issues the CTA's MMAs; they run on the SM's tensor core, in order, and
// accumulate in tensor memory (TMEM), so no register waits for them. A commit makes their completion an
// mbarrier arrival, which both releases the shared-memory stage they read and tells the epilogue warps the
// accumulator is final:
//   MMA warp, per k-tile:  emit_mbarrier_wait(c, full[s], phase);
//                          for each k-step: emit_utcmma(c, dtype, shape);
//                          emit_utcbar(c, empty[s]);                      // stage free once those MMAs are done
//                          after a tile's last k-tile: emit_utcbar(c, acc_full[b]);
//   epilogue warps:        emit_mbarrier_wait(c, acc_full[b], parity);  emit_ldtm(c, regs, columns);  ...
//                          emit_mbarrier_arrive_expect_tx(c, acc_empty[b], 0) once TMEM is read.

// tcgen05.mma (UTCMMA), issued by lane 0: the CTA's m x n x k MMA, A and B from shared memory, D in TMEM.
inline WarpInst& emit_utcmma(InstChunk& c, DType dtype, MmaShape shape) {
  WarpInst& inst = c.emit(Opcode::UTCMMA);
  inst.active_mask = 1u;
  inst.dtype = dtype;
  inst.mma = shape;
  return inst;
}
// tcgen05.commit.mbarrier::arrive::one (UTCBAR): one arrival on barrier `id` once the warp's earlier UTCMMAs have
// completed; with `cluster_mask`, on the barrier of that id of each CTA of the cluster in the mask (.multicast).
inline WarpInst& emit_utcbar(InstChunk& c, std::uint32_t id, std::uint32_t cluster_mask = 0) {
  WarpInst& inst = c.emit(Opcode::UTCBAR);
  inst.active_mask = 1u;
  inst.group = static_cast<std::uint8_t>(id);
  inst.mma.m = static_cast<std::uint16_t>(cluster_mask);  // WarpInst::cluster_cta_mask()
  return inst;
}
// tcgen05.ld + tcgen05.wait::ld (LDTM): the warp reads its 32 TMEM lanes x `columns` 32-bit columns; `ids` stand
// for the registers they land in.
template <std::size_t N>
inline WarpInst& emit_ldtm(InstChunk& c, const std::array<std::uint16_t, N>& ids, std::uint32_t columns) {
  static_assert(N <= kMaxDst, "too many destination ids for one record");
  WarpInst& inst = c.emit(Opcode::LDTM);
  for (std::size_t i = 0; i < N; ++i) inst.dst[i] = ids[i];
  inst.num_dst = static_cast<std::uint8_t>(N);
  inst.aux = columns;
  return inst;
}

// ---- addresses ------------------------------------------------------------------------------------------------

// A row-major matrix in global memory: `rows` x `cols` elements of `elem_bytes`, rows contiguous.
struct RowMajorMatrix {
  std::uint64_t base = 0, rows = 0, cols = 0;
  std::uint32_t elem_bytes = 0;
  std::uint64_t pitch() const { return cols * elem_bytes; }
  std::uint64_t address(std::uint64_t row, std::uint64_t col) const { return base + (row * cols + col) * elem_bytes; }
};

// The TMA box of `rows` x `cols` elements of `m` from element (row, col).
inline TmaBox matrix_box(const RowMajorMatrix& m, std::uint64_t row, std::uint64_t col, std::uint32_t rows,
                         std::uint32_t cols) {
  return TmaBox{m.address(row, col), m.pitch(), rows, cols * m.elem_bytes};
}

// Lanes on consecutive `lane_elems`-element pieces of `m`'s rows from element (row, col), `lanes_per_row` lanes
// per row (then the next row).
inline LaneRows matrix_lanes(const RowMajorMatrix& m, std::uint64_t row, std::uint64_t col,
                             std::uint32_t lanes_per_row, std::uint32_t lane_elems) {
  return LaneRows{m.address(row, col), lane_elems * m.elem_bytes, lanes_per_row, m.pitch()};
}
// Lane-by-lane mask of matrix_lane_mask (out of line: only edge tiles need it).
std::uint32_t matrix_edge_lane_mask(const RowMajorMatrix& m, std::uint64_t row, std::uint64_t col,
                                    std::uint32_t lanes_per_row, std::uint32_t lane_elems);
// Active mask of the lanes of matrix_lanes(m, row, col, ...) whose first element lies inside the matrix (ragged
// edges; a piece never straddles the edge when cols is a multiple of lane_elems). kFullMask when all are inside.
inline std::uint32_t matrix_lane_mask(const RowMajorMatrix& m, std::uint64_t row, std::uint64_t col,
                                      std::uint32_t lanes_per_row, std::uint32_t lane_elems) {
  const std::uint64_t rows_covered = (kWarpSize + lanes_per_row - 1) / lanes_per_row;
  if (row + rows_covered <= m.rows && col + std::uint64_t{lanes_per_row} * lane_elems <= m.cols) return kFullMask;
  return matrix_edge_lane_mask(m, row, col, lanes_per_row, lane_elems);
}

// A tile of `rows` rows x `row_bytes` bytes copied by `threads` threads (a whole CTA, or a producer warpgroup) in
// chunks of `chunk_bytes` (16, or less where the source rows are not 16-byte aligned): thread t's copy i is chunk
// i*threads + t of the tile (row-major chunk order). Each warp's 32 chunks are consecutive, `lanes_per_row` lanes
// per tile row, so a copy of 16-byte chunks covers whole 128-byte lines.
struct CoalescedTileCopy {
  std::uint32_t chunks_per_row = 0;     // chunks per tile row
  std::uint32_t lanes_per_row = 0;      // min(chunks_per_row, 32)
  std::uint32_t threads = 0;
  std::uint32_t copies_per_thread = 0;  // rows * chunks_per_row / threads (the tile must split evenly)

  CoalescedTileCopy() = default;
  CoalescedTileCopy(std::uint32_t rows, std::uint32_t row_bytes, std::uint32_t copying_threads,
                    std::uint32_t chunk_bytes = kVecBytes);
  // Tile row and chunk of lane 0 of copy `copy` of the warp numbered `warp` among the copying ones.
  struct Chunk {
    std::uint32_t row = 0, chunk = 0;
  };
  Chunk first_chunk(std::uint32_t copy, std::uint32_t warp) const {
    const std::uint32_t first = copy * threads + warp * kWarpSize;
    return Chunk{first / chunks_per_row, first % chunks_per_row};
  }
};

// Byte offset, within a shared-memory tile of `chunks_per_row` 16-byte chunks per row, of chunk `chunk` of row
// `row`. The tile is a sequence of 128-byte lines; a chunk's slot in its line is XORed with the line's row group,
// so 8 rows read at the same logical chunk (an ldmatrix phase) land in 8 different bank groups.
std::uint32_t swizzled_chunk_offset(std::uint32_t row, std::uint32_t chunk, std::uint32_t chunks_per_row);

// Lane offsets of an access of `lanes_per_row` lanes x `lane_bytes` per row over consecutive rows from `row0` of a
// swizzled tile (swizzled_chunk_offset) that starts `tile_offset` bytes into shared memory, a row's first lane at
// byte `first_byte` of the (unswizzled) row; each lane's bytes must lie in one 16-byte chunk. E.g. an mma
// accumulator pair per lane (4 lanes x 4 B per row, 8 rows) stored into a swizzled tile lands on 8 different bank
// groups, as the hardware's XOR-swizzled layouts do. For InstChunk::own_deltas() of an instruction whose base is 0.
std::array<std::int32_t, kWarpSize> swizzled_rows_offsets(std::uint32_t tile_offset, std::uint32_t row0,
                                                          std::uint32_t first_byte, std::uint32_t chunks_per_row,
                                                          std::uint32_t lanes_per_row, std::uint32_t lane_bytes);

// Which 8x8 matrices of a 16x16 block (two 8-row halves x two 16-byte chunks of K) an ldmatrix.x4 reads in order.
enum class LdsmOrder {
  RowHalvesFirst,  // (r0-7,c0), (r8-15,c0), (r0-7,c1), (r8-15,c1): an mma A fragment a0..a3
  ChunksFirst,     // (r0-7,c0), (r0-7,c1), (r8-15,c0), (r8-15,c1): B fragments (b0,b1) of two n8 blocks
};
// Lane offsets of an ldmatrix.x4 over the 16x16 block at tile row `row0`, chunk `chunk0` of a swizzled tile
// (swizzled_chunk_offset) that starts `tile_offset` bytes into the stage.
std::array<std::int32_t, kWarpSize> ldmatrix_x4_offsets(std::uint32_t tile_offset, std::uint32_t row0,
                                                        std::uint32_t chunk0, std::uint32_t chunks_per_row,
                                                        LdsmOrder order);

}  // namespace warpsim::synth
