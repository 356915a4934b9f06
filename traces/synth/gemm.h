// Tiled tensor-core GEMM synthesizer: instruction and address streams shaped like CUTLASS/cuBLAS kernels for
// the target architecture, generated lazily per warp (one main-loop k-tile at a time). See README.md here for
// the generated code per architecture and its instruction mix per k-tile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/slots/gpc_layout.h"
#include "sim/trace/source.h"

namespace warpsim {

// C[m,n] = A[m,k] * B[k,n], `batch` times (strided batched: matrix i of A, B, C at i times its size). A is
// row-major (K contiguous); B is stored N x K (K contiguous: "TN", as the weight of a PyTorch Linear); C is
// row-major. Inputs bf16, f16, fp8 (e4m3/e5m2: one byte, the same MMA rate), tf32 (4-byte fp32 storage), i8,
// f64 (DMMA m8n8k4 through mma.sync, on every architecture: Hopper has no fp64 warpgroup MMA; C and the
// accumulators fp64; no split-K) or fp4 (NVFP4: e2m1, two per byte, with an e4m3 scale per 16 elements of K of
// each row of A and B, loaded beside the tiles; the warpgroup-MMA structure with TMA, k a multiple of 32).
// Accumulation is fp32 (int32 for i8); C is bf16 for bf16, fp8 and fp4 inputs, f16 for f16, fp32 for tf32 and
// int32 for i8 (cuBLASLt's common int8 GEMM, CUBLAS_COMPUTE_32I with CUDA_R_32I output). Dimensions and
// GemmTiling::tile_k count elements for every type.
// Any m, n, k: rows whose pitch is not a multiple of 16 bytes are copied and stored with the widest access
// their alignment allows (gemm_access_bytes), and tiles past an edge are masked.
// Fused epilogue, as cuBLASLt's CUBLASLT_EPILOGUE_{DEFAULT, BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS}: D =
// act(alpha*acc + bias) with a bias vector of n elements of C's type (placed after C), for the float types with a
// 16-bit or fp32 C (not int8). A fused epilogue runs without split-K (its reduction kernels do not apply one).
enum class GemmEpilogue { None, Bias, Relu, ReluBias, Gelu, GeluBias };
bool gemm_epilogue_has_bias(GemmEpilogue e);
const char* gemm_epilogue_name(GemmEpilogue e);  // as the synthesizer's key spells it: none, bias, relu_bias, ...

struct GemmProblem {
  std::uint64_t m = 0, n = 0, k = 0;
  DType dtype = DType::BF16;
  std::uint64_t batch = 1;
  GemmEpilogue epilogue = GemmEpilogue::None;
};

// Bits of one element of the GEMM's inputs (4 for fp4), and bytes of one of its output C (without split-K); 0 for
// an unsupported dtype.
std::uint32_t gemm_input_bits(DType dtype);
std::uint32_t gemm_output_bytes(DType dtype);
// Widest global access (16, 8, 4, 2 or 1 bytes) that every row of a matrix with this row pitch can use: the
// largest power of two up to 16 dividing the pitch (rows start at multiples of the pitch from an aligned base).
std::uint32_t gemm_access_bytes(std::uint64_t row_pitch_bytes);

struct GemmTiling {
  std::uint32_t tile_m = 0, tile_n = 0, tile_k = 0;  // CTA tile
  std::uint32_t stages = 0;                          // shared-memory pipeline depth
  std::uint32_t warps = 0;                           // warps per CTA
  bool warpgroup_mma = false;       // false: sm_80 multistage (mma.sync); true: sm_90 warp-specialised (HGMMA)
  std::uint32_t swizzle_group = 1;  // CTA rasterisation: this many consecutive M-tiles share each N-tile column
  // Split-K: grid.z = split_k CTAs share each output tile, CTA z reducing k-tiles
  // [z*k_tiles/split_k, (z+1)*k_tiles/split_k). How the fp32 partial tiles are summed (README.md, "Split-K"):
  //  * Parallel: CTA z stores its partial tile into slice z of an fp32 workspace (split_k slices of C's size);
  //    a reduction kernel after the GEMM sums the slices into C (cuBLAS's splitKreduce_kernel).
  //  * Atomic: every CTA adds its partial tile into one fp32 workspace with global reductions (RED.ADD.F32); a
  //    kernel zeroes it before the GEMM and, for a 16-bit C, one converts it afterwards.
  // Bytes of one accumulator element: 4 (fp32, int32), 8 for fp64 (DMMA accumulates in fp64; twice the registers).
  std::uint32_t accumulator_bytes = 4;
  enum class SplitKReduction { Atomic, Parallel };
  std::uint32_t split_k = 1;
  SplitKReduction split_k_reduction = SplitKReduction::Atomic;
  // sm_90 main loop: Tma (TMA boxes on mbarriers, asynchronous wgmma; where the GPU has a TMA unit and the rows
  // of A and B are 16-byte aligned, else it falls back to Ldgsts) or Ldgsts (LDGSTS + one CTA barrier per k-tile).
  enum class Mainloop { Tma, Ldgsts };
  Mainloop mainloop = Mainloop::Tma;
  // TMA main loop: CTAs per thread-block cluster along M (cuBLAS's "2x1"); the cluster's CTAs share their B tile,
  // each loading 1/cluster_m of it with one TMA multicast into every CTA's shared memory. Taken where the M tile
  // count, the swizzle group and tile_n are multiples of it (the N tile count is free), else 1 (no cluster).
  std::uint32_t cluster_m = 1;
  // Stream-K (README.md, "Stream-K"): the MAC iterations (output tile x k-tile) of the tiles that do not fill
  // whole waves are shared evenly among the CTA slots, as CUTLASS's stream-K + data-parallel hybrid; the other tiles
  // run one CTA each. CTAs sharing a tile sum their fp32 partial tiles through a workspace. `stream_k_ctas`: the
  // slots (the wave size, so also which tiles are shared); 0 = sm_count x CTAs per SM (sm_90: the persistent grid).
  // With whole waves the kernel is the data-parallel one. sm_80: the multistage structure; sm_90: the persistent
  // cooperative TMA kernel (`persistent` set too), CUTLASS 3's PersistentTileSchedulerSm90StreamK.
  bool stream_k = false;
  std::uint32_t stream_k_ctas = 0;
  // sm_90 TMA main loop (README.md, "Persistent kernels"): a persistent grid, as CUTLASS 3's
  // PersistentTileSchedulerSm90 and cuBLAS's nvjet kernels run: as many CTAs as fit at once (whole clusters per
  // GPC), CTA c computing the output tiles c, c + grid, ... with its pipeline running on from tile to tile, so the
  // producer loads the next tile while the consumers store this one (the cooperative schedule: both consumer
  // warpgroups on one tile; the epilogue staging gets its own shared memory beside the stages). Taken where the TMA
  // main loop runs without split-K or stream-K and stages and staging fit; elsewhere one CTA per tile. The
  // synthesizer's default where it applies (make_gemm_for_gpu); off in the bare tiling.
  bool persistent = false;
  // sm_100 (README.md, "sm_100"): the MMAs are Blackwell's tcgen05 (UTCMMA) into tensor memory, CUTLASS's
  // KernelTmaWarpSpecializedSm100 structure: warp 0 loads by TMA, warp 1 issues the CTA's MMAs, one warpgroup of
  // epilogue warps reads the accumulators out of tensor memory (two accumulator buffers, so a tile's epilogue
  // overlaps the next tile's MMAs); 8 warps. Set by gemm_with_tcgen05 where it applies; false: warpgroup MMA.
  bool tcgen05 = false;
  // sm_90 persistent TMA kernel (README.md, "Ping-pong"): CUTLASS 3's KernelTmaWarpSpecializedPingpong. Two consumer
  // warpgroups each compute whole tile_m x tile_n output tiles, the CTA's tiles alternating between them; an ordered
  // sequence of mbarriers lets one warpgroup issue its MMAs while the other runs its epilogue, so the tensor cores
  // do not wait for the stores. tile_m is one warpgroup's (a multiple of 64: an m64 HGMMA per 64 rows and k-step, its
  // accumulators within the registers a consumer gets), the CTA has 12 warps, and one warpgroup's epilogue staging.
  // Persistent only. Set by gemm_with_pingpong; false: the cooperative schedule.
  bool pingpong = false;
};

struct GemmLimits;
struct GemmProblem;
// Why GemmTiling::persistent cannot apply to `p` with tiling `t` on a GPU with `limits`; "" where it can (the
// tiling's `persistent` itself is not looked at).
std::string gemm_persistent_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);
// The pipeline stages of the persistent kernel, as CUTLASS 3's StageCountAutoCarveout sizes them: as many as fit in
// the CTA's shared memory beside the epilogue's staging, at most t.stages and at least 3; t.stages where even 3 do
// not fit (the persistent grid is then refused for its shared memory).
std::uint32_t gemm_persistent_stages(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);

// The stream-K decomposition of `tiles` output tiles of `k_tiles` k-tiles each over `slots` resident CTAs
// (CUTLASS's hybrid): with at least two waves, the last full wave and the partial one are shared (stream-K
// tiles, the last ones in rasterisation order) and the earlier ones run data-parallel; with fewer, every tile is
// shared. No partial wave: data-parallel only. The shared iterations, tile-major, are split into `sk_ctas`
// contiguous ranges whose sizes differ by at most one; each CTA keeps at least `min_iterations` (the pipeline
// fills), so sk_ctas = min(slots, iterations / min_iterations). CTAs 0..sk_ctas-1 are the stream-K CTAs, then one
// CTA per data-parallel tile.
struct GemmStreamK {
  std::uint64_t tiles = 0, sk_tiles = 0, dp_tiles = 0, sk_ctas = 0;
  std::uint32_t k_tiles = 0;
  std::uint64_t iterations() const { return sk_tiles * k_tiles; }
  std::uint64_t ctas() const { return sk_ctas + dp_tiles; }
  // First shared iteration of stream-K CTA `cta` (cta = sk_ctas gives the end).
  std::uint64_t iteration_begin(std::uint64_t cta) const;
  // The stream-K CTA whose range holds shared iteration `iteration`.
  std::uint64_t cta_of_iteration(std::uint64_t iteration) const;
  // One tile's part of a CTA's range: tile (linear, rasterised) and its k-tiles [kt_begin, kt_end); `position`:
  // the CTAs that work on the tile's earlier k-tiles, i.e. the arrivals on its counter this part waits for.
  struct Segment {
    std::uint64_t tile = 0;
    std::uint32_t kt_begin = 0, kt_end = 0;
    std::uint64_t position = 0;
  };
  // What CTA `cta` computes, in the order it does: a stream-K CTA walks its range backwards (its last tile
  // first), so that a tile's first CTA stores its partial sums before the CTA finishing that tile needs them; a
  // data-parallel CTA computes its whole tile.
  std::vector<Segment> segments(std::uint64_t cta) const;
};
GemmStreamK gemm_stream_k(std::uint64_t tiles, std::uint32_t k_tiles, std::uint64_t slots,
                          std::uint32_t min_iterations);

// Resource limits of the target GPU that a kernel must respect, taken from its config (`sm` section:
// shared_memory_per_cta, registers, max_registers_per_thread, count).
// H100: {227 KiB, 65536, 255, 132}; A100: {163 KiB, 65536, 255, 108}.
struct GemmLimits {
  std::uint64_t shared_mem_per_cta = 0;        // largest shared-memory allocation of one CTA, in bytes
  std::uint32_t registers_per_sm = 0;          // 32-bit registers per SM: one CTA's registers must fit
  std::uint32_t max_registers_per_thread = 0;  // most registers one thread may use
  std::uint32_t sm_count = 0;                  // SMs of the GPU (0 = unknown: the tiling heuristic never splits K)
  // The GPU has a TMA unit (async_copy.issue_bytes_per_cycle > 0): the sm_90 main loop then loads its tiles with
  // TMA boxes completed on mbarriers, where the rows of A and B are 16-byte aligned (TMA's global strides must be).
  bool tma = false;
  // The rates that decide between splits when the split-K workspace traffic matters (decode shapes are bound by
  // DRAM, where each split adds m x n fp32 partial sums written and read back). 0 = unknown: the split is chosen by
  // the tensor-work estimate alone.
  double tensor_flops_per_cycle = 0;  // per SM, for the GEMM's dtype (sm.tensor.flops_per_cycle.<dtype>)
  double sm_clock_hz = 0;             // clocks.sm
  double dram_bytes_per_second = 0;   // hbm.bandwidth
  double l2_bytes = 0;                // l2.size: a problem whose operands, partial sums and C fit keeps them there
  GpcLayout gpcs{};  // which SMs share a GPC (clusters must): sizes a persistent grid; no SMs = one GPC of sm_count
  bool tcgen05 = false;  // the SMs have tcgen05 tensor cores and tensor memory (sm.tensor.tcgen05.latency > 0)
};

// Why the tcgen05 structure (GemmTiling::tcgen05) cannot run `p` with tiling `t` on a GPU with `limits`; "" where it
// can: it needs tcgen05 tensor cores, the TMA main loop, tile_m 64 or 128, tile_n a multiple of 16 (8 for tile_m 64)
// up to 256 (two accumulator buffers of tile_n columns in the 512 of tensor memory), and mbarriers for its stages.
std::string gemm_tcgen05_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);
// `t` on the tcgen05 structure (tcgen05 set, 8 warps) where gemm_tcgen05_refusal allows it, else unchanged.
GemmTiling gemm_with_tcgen05(const GemmProblem& p, GemmTiling t, const GemmLimits& limits);

// Why the ping-pong schedule (GemmTiling::pingpong) cannot run `p` with tiling `t` on a GPU with `limits`; "" where it
// can: it needs the persistent warp-specialised TMA kernel (no split-K, stream-K or tcgen05), accumulators of one
// warpgroup's tile_m x tile_n within its registers, mbarriers for the stages and the four order barriers, and stages
// and one warpgroup's staging within the CTA's shared memory.
std::string gemm_pingpong_refusal(const GemmProblem& p, const GemmTiling& t, const GemmLimits& limits);
// `t` on the ping-pong schedule (pingpong and persistent set, 12 warps) where gemm_pingpong_refusal allows it, else
// unchanged.
GemmTiling gemm_with_pingpong(const GemmProblem& p, GemmTiling t, const GemmLimits& limits);

// True for the architectures the GEMM code paths exist for: "sm_80" (mma.sync multistage), "sm_90" and
// "sm_100" (warpgroup MMA).
bool gemm_supports_arch(const std::string& arch);

// The large-GEMM tiling per architecture ("sm_80", "sm_90", "sm_100"; sm_100 uses the sm_90 structure for now),
// split_k = 1, whatever the shape. Throws InputError for any other architecture. The tiling is not validated
// against the dtype (validate_gemm does).
GemmTiling default_gemm_tiling(const std::string& arch, DType dtype);

// Shape-aware default, as a library heuristic would pick it (README.md, "Tiling heuristic"): the tiling above,
// with a 64-row tile when problem.m <= 64 and split-K when the output tiles leave SMs of `limits.sm_count` idle
// and K is deep enough. Large shapes (e.g. 4096^3, 2048^3 on H100/A100) get exactly the 2-argument tiling.
// A non-zero field of `asked` replaces the tile the heuristic would take before it chooses the split (on the
// warp-specialised structure, a consumer warpgroup per 64 rows of tile_m); validate_gemm judges the result.
struct GemmTileShape {
  std::uint32_t tile_m = 0, tile_n = 0, stages = 0;
};
GemmTiling default_gemm_tiling(const std::string& arch, DType dtype, const GemmProblem& problem,
                               const GemmLimits& limits, const GemmTileShape& asked = {});

// "" when the problem and tiling can be generated and one CTA fits within `limits`; otherwise one message saying
// what is wrong.
std::string validate_gemm(const GemmProblem& problem, const GemmTiling& tiling, const GemmLimits& limits);

// The GEMM kernel alone (split_k = 1); with split-K, Parallel: the GEMM and the reduction kernel; Atomic: the
// zeroing kernel, the GEMM and, for a 16-bit C, the conversion kernel; stream-K sharing tiles: the zeroing of its
// arrival counters and the GEMM. Throws InputError when the arch is unknown, does not match the tiling's
// structure, or validate_gemm against `limits` fails.
std::unique_ptr<TraceSource> make_gemm_trace(const GemmProblem& problem, const GemmTiling& tiling,
                                             const std::string& arch, const GemmLimits& limits);

// CTA rasterisation: the output tile computed by linear CTA id `cta_id`. CTAs walk groups of `group` M-tiles
// (the last group may be smaller), M fastest within a group, so that consecutive CTAs share one N-tile (the same
// B columns) and a wave touches only `group` A row-blocks. group = 1 is plain row-major (N fastest).
struct GemmTileIndex {
  std::uint32_t m = 0, n = 0;
};
GemmTileIndex gemm_cta_tile(std::uint64_t cta_id, std::uint32_t tiles_m, std::uint32_t tiles_n, std::uint32_t group);

}  // namespace warpsim
