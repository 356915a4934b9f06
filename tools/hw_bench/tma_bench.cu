// Global->shared copy microbenchmarks for H100 (sm_90a):
//  (a) TMA bulk copies (cp.async.bulk ... mbarrier::complete_tx::bytes), one
//      elected thread per CTA, one CTA per SM, a multi-stage shared ring;
//  (b) latency of one bulk copy, issue -> mbarrier phase completion;
//  (c) for comparison cp.async.cg (LDGSTS, 16 B per thread) and ld.global.v4;
//  (a2) the same streaming with 2-D tensor copies (cuTensorMap, tile mode);
//  (d) bulk copy multicast to a 2-CTA cluster.
// Footprints: 1 GiB (larger than the 50 MB L2: HBM) and 16 MiB read repeatedly
// (L2-resident). Buffers are zero-filled with cudaMemset.
//
// Build: nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -o tma_bench tma_bench.cu \
//          -L<cuda>/lib64/stubs -lcuda
#include <cuda.h>  // CUtensorMap, cuTensorMapEncodeTiled (link with -lcuda)

#include <string>

#include "bench_common.h"

// ------------------------------------------------------------ mbarrier helpers
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// One arrival that also announces `bytes` of transactions the copies will complete.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile(
      "{\n.reg .b64 state;\n"
      "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(smem_addr(bar)),
      "r"(bytes)
      : "memory");
}

// Waits for the phase with the given parity to complete. Bounded: after kMaxPolls
// polls, or 2 s of globaltimer (try_wait may suspend the thread for a while per
// poll), it raises *err and returns false instead of hanging.
__device__ __forceinline__ bool mbar_wait(uint64_t* bar, uint32_t parity, unsigned* err) {
  const uint32_t addr = smem_addr(bar);
  const unsigned long long start = global_ns();
  for (unsigned long long polls = 0; polls < kMaxPolls; ++polls) {
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
    if (done) return true;
    if ((polls & 1023) == 1023 && global_ns() - start > 2000000000ull) break;
  }
  atomicExch(err, 1u);
  return false;
}

// Bulk copy of `bytes` (multiple of 16, 16-B aligned) from global to this CTA's shared memory,
// completing its bytes on `bar`.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

constexpr int kRingBytes = 128 * 1024;  // shared ring per CTA (bytes in flight per SM)
constexpr int kMaxStages = 32;

// (a) One CTA per SM; thread 0 streams chunk after chunk into a ring of
// kRingBytes/chunk stages, each with its own mbarrier. Before reusing a stage it
// waits for the copy that last used it. The data are not consumed: this measures
// the copy engine and memory system only. Chunk c of each pass goes to CTA
// (c % gridDim.x). `issue(dst, c, bar)` starts the copy of chunk c (bulk or tensor).
// Returns false (error flag raised) if a wait gave up.
template <class Issue>
__device__ bool stream_ring(uint8_t* ring, uint64_t* bars, uint32_t chunk, size_t chunks, int passes,
                            unsigned* err, Issue issue, uint32_t ring_bytes = kRingBytes) {
  const int stages = ring_bytes / chunk;
  for (int s = 0; s < stages; ++s) mbar_init(&bars[s], 1);
  // Make the initialised barriers visible to the async proxy (the copy engine).
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  // Stage s is reused every `stages` copies; bit s of wait_parity is the parity of
  // the phase the next reuse must wait for (flips after every wait).
  uint32_t wait_parity = 0;
  long long issued = 0;  // copies issued by this CTA, over all passes
  int s = 0;
  for (int p = 0; p < passes; ++p) {
    for (size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
      if (issued >= stages) {
        if (!mbar_wait(&bars[s], (wait_parity >> s) & 1u, err)) return false;
        wait_parity ^= 1u << s;
      }
      mbar_arrive_expect_tx(&bars[s], chunk);
      issue(ring + size_t(s) * chunk, c, &bars[s]);
      ++issued;
      s = (s + 1 == stages) ? 0 : s + 1;
    }
  }
  // Drain: wait for the last copy of every stage that was used.
  const int used = issued < stages ? int(issued) : stages;
  for (int t = 0; t < used; ++t)
    if (!mbar_wait(&bars[t], (wait_parity >> t) & 1u, err)) return false;
  return true;
}

// (a1) 1-D bulk copies (cp.async.bulk) of `chunk` contiguous bytes.
__global__ void __launch_bounds__(32, 1)
    tma_stream_kernel(const uint8_t* src, size_t bytes, int passes, uint32_t chunk, unsigned* err,
                      ClockProbe* probes, uint32_t ring_bytes = kRingBytes) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ uint64_t bars[kMaxStages];
  if (threadIdx.x != 0) return;  // the elected issuing thread
  unsigned long long c0 = clock64(), t0 = global_ns();
  auto issue = [&](uint8_t* dst, size_t c, uint64_t* bar) { bulk_g2s(dst, src + c * chunk, chunk, bar); };
  if (!stream_ring(ring, bars, chunk, bytes / chunk, passes, err, issue, ring_bytes)) return;
  unsigned long long c1 = clock64(), t1 = global_ns();
  probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
}

// (a2) 2-D tensor copies (cp.async.bulk.tensor.2d, tile mode) through a CUtensorMap of
// 4-byte elements, box box_w x box_h; tile c is (c % tiles_x, c / tiles_x). The map is
// a __grid_constant__ parameter so its address can be given to the instruction.
__global__ void __launch_bounds__(32, 1)
    tma_tensor_stream_kernel(const __grid_constant__ CUtensorMap tmap, int tiles_x, int tiles_y,
                             int box_w, int box_h, int passes, unsigned* err, ClockProbe* probes) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ uint64_t bars[kMaxStages];
  if (threadIdx.x != 0) return;
  const uint32_t chunk = uint32_t(box_w) * box_h * 4;
  unsigned long long c0 = clock64(), t0 = global_ns();
  auto issue = [&](uint8_t* dst, size_t c, uint64_t* bar) {
    const int x = int(c % tiles_x) * box_w, y = int(c / tiles_x) * box_h;
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(&tmap)), "r"(x), "r"(y), "r"(smem_addr(bar))
        : "memory");
  };
  if (!stream_ring(ring, bars, chunk, size_t(tiles_x) * tiles_y, passes, err, issue)) return;
  unsigned long long c1 = clock64(), t1 = global_ns();
  probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
}

// (b) Latency: one thread, one copy at a time; cycles from issue to the wait
// returning. The first copy warms L2 and is not counted.
__global__ void tma_latency_kernel(const uint8_t* src, uint32_t bytes, int reps, unsigned* err,
                                   unsigned long long* cycles_out) {
  extern __shared__ __align__(128) uint8_t buf[];
  __shared__ uint64_t bar;
  if (threadIdx.x != 0) return;
  mbar_init(&bar, 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  unsigned long long total = 0;
  for (int r = 0; r <= reps; ++r) {
    unsigned long long c0 = clock64();
    mbar_arrive_expect_tx(&bar, bytes);
    bulk_g2s(buf, src, bytes, &bar);
    if (!mbar_wait(&bar, uint32_t(r & 1), err)) return;
    unsigned long long c1 = clock64();
    if (r > 0) total += c1 - c0;
  }
  *cycles_out = total / reps;
}

// (c1) cp.async.cg (LDGSTS, L2 only, 16 B per thread): each thread copies 16 B per
// step into a kStages ring of blockDim*16 B stages, commit per step, keeping
// kStages-1 groups in flight. Footprint covered grid-stride; data not consumed.
constexpr int kCpAsyncStages = 8;
__global__ void __launch_bounds__(256)
    cp_async_kernel(const uint8_t* src, size_t bytes, int passes, ClockProbe* probes) {
  extern __shared__ __align__(128) uint8_t ring[];
  const size_t vecs = bytes / 16;
  const size_t step = size_t(gridDim.x) * blockDim.x;
  unsigned long long c0 = clock64(), t0 = global_ns();
  int k = 0;
  for (int p = 0; p < passes; ++p) {
    for (size_t v = size_t(blockIdx.x) * blockDim.x + threadIdx.x; v < vecs; v += step, ++k) {
      uint32_t dst = smem_addr(ring + (size_t(k % kCpAsyncStages) * blockDim.x + threadIdx.x) * 16);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src + v * 16)
                   : "memory");
      asm volatile("cp.async.commit_group;" ::: "memory");
      asm volatile("cp.async.wait_group %0;" ::"n"(kCpAsyncStages - 1) : "memory");
    }
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
}

// (c2) ld.global.v4.u32 (default caching), 4 independent loads in flight per thread.
// Pass p starts at a different quarter-rotation of the footprint so an SM does not
// re-read what it read in the previous pass (which could hit in its L1).
__global__ void __launch_bounds__(256)
    ld_global_kernel(const uint8_t* src, size_t bytes, int passes, uint32_t* sink, ClockProbe* probes) {
  const size_t vecs = bytes / 16;
  const size_t step = size_t(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  unsigned long long c0 = clock64(), t0 = global_ns();
  for (int p = 0; p < passes; ++p) {
    const size_t rot = (vecs / 4) * size_t(p % 4);
    // Index v + rot wrapped into [0, vecs) by one conditional subtraction (a 64-bit
    // modulo per load would cost more issue slots than the load itself).
    size_t v = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; v + 3 * step < vecs; v += 4 * step) {
      uint32_t r[4][4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        size_t idx = v + u * step + rot;
        if (idx >= vecs) idx -= vecs;
        const uint8_t* a = src + idx * 16;
        asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[u][0]), "=r"(r[u][1]), "=r"(r[u][2]), "=r"(r[u][3])
                     : "l"(a));
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) acc ^= r[u][0] ^ r[u][1] ^ r[u][2] ^ r[u][3];
    }
    for (; v < vecs; v += step) {
      uint32_t r0, r1, r2, r3;
      size_t idx = v + rot;
      if (idx >= vecs) idx -= vecs;
      asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                   : "l"(src + idx * 16));
      acc ^= r0 ^ r1 ^ r2 ^ r3;
    }
  }
  __syncthreads();
  unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // keeps the loads alive
}

// (d) Multicast: a cluster of 2 CTAs; CTA rank 0's thread 0 issues each chunk once with
// .multicast::cluster (mask 0b11), which writes it into both CTAs' shared memory at the
// same offset and completes tx bytes on each CTA's own mbarrier at that offset. Each
// CTA's thread 0 does its own expect_tx/wait for its barrier. Before rank 0 reuses a
// stage both CTAs must have seen it complete: rank 1 reports its completion by a remote
// arrive on rank 0's per-stage "free" barrier (count 1 from the peer).
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(32, 1)
    tma_multicast_kernel(const uint8_t* src, size_t bytes, int passes, uint32_t chunk, unsigned* err,
                         ClockProbe* probes) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ uint64_t full[kMaxStages];  // data landed in this CTA
  __shared__ uint64_t peer_done[kMaxStages];  // (rank 0 only) rank 1 saw the stage complete
  const int stages = kRingBytes / chunk;
  const uint32_t rank = cluster_rank();
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&peer_done[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster_sync();  // both CTAs' barriers exist before any copy or remote arrive targets them
  const int clusters = gridDim.x / 2, cluster_id = blockIdx.x / 2;
  const size_t chunks = bytes / chunk;
  unsigned long long c0 = clock64(), t0 = global_ns();
  if (threadIdx.x == 0) {
    long long n = 0;
    bool ok = true;
    for (int p = 0; p < passes && ok; ++p) {
      for (size_t c = cluster_id; c < chunks && ok; c += clusters, ++n) {
        const int s = int(n % stages);
        const long long use = n / stages;
        const uint32_t par = uint32_t((use - 1) & 1);
        if (use > 0) {
          // Own copy of the previous use completed (both ranks), and (rank 0) the peer's.
          ok = mbar_wait(&full[s], par, err);
          if (ok && rank == 0) ok = mbar_wait(&peer_done[s], par, err);
          if (ok && rank == 1) {
            // Tell rank 0 this stage is free here: arrive on its peer_done[s].
            uint32_t remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(smem_addr(&peer_done[s])));
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote)
                         : "memory");
          }
          if (!ok) break;
        }
        mbar_arrive_expect_tx(&full[s], chunk);
        if (rank == 0) {
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
              "[%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(ring + size_t(s) * chunk)),
              "l"(src + c * chunk), "r"(chunk), "r"(smem_addr(&full[s])), "h"(uint16_t(0x3))
              : "memory");
        }
      }
    }
    // Drain the last use of every stage.
    for (long long i = (n > stages ? n - stages : 0); i < n && ok; ++i)
      ok = mbar_wait(&full[int(i % stages)], uint32_t((i / stages) & 1), err);
  }
  __syncwarp();  // reconverge before the .aligned cluster barrier
  unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
  // Neither CTA may exit while the peer may still write into it or arrive on it.
  cluster_sync();
}

// ------------------------------------------------------------------- host

static void report_bw(const std::string& id, double bytes, double ms, const Probes& probes, int sms,
                      std::string cond) {
  const double mhz = probes.mhz();
  cond += ",sms_used=" + std::to_string(probes.distinct_sms());
  result((id + ".bw").c_str(), bytes / (ms * 1e-3) / 1e9, "GB/s", cond.c_str());
  result((id + ".bytes_per_sm_cycle").c_str(), bytes / (ms * 1e-3 * mhz * 1e6 * sms), "B/cycle/SM",
         cond.c_str());
  result((id + ".sm_clock").c_str(), mhz, "MHz", cond.c_str());
}

// Each configuration: one warm-up launch, then this many timed launches (keeps the
// whole program well inside run_all.sh's 80 s even at 1 TB/s).
constexpr int kTimedLaunches = 2;

struct Footprint {
  const char* name;
  size_t bytes;
  int passes;
};

int main() {
  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  std::printf("# device: %s, %d SMs, L2 %d B, cc %d.%d\n", prop.name, sms, prop.l2CacheSize,
              prop.major, prop.minor);
  std::printf("# source buffers: zero-filled (cudaMemset 0)\n");

  const size_t big = size_t(1) << 30, small = size_t(16) << 20;
  uint8_t *hbm_buf = nullptr, *l2_buf = nullptr;
  CHECK(cudaMalloc(&hbm_buf, big));
  CHECK(cudaMemset(hbm_buf, 0, big));
  CHECK(cudaMalloc(&l2_buf, small));
  CHECK(cudaMemset(l2_buf, 0, small));
  unsigned* err = nullptr;
  CHECK(cudaMalloc(&err, sizeof(unsigned)));
  CHECK(cudaMemset(err, 0, sizeof(unsigned)));
  uint32_t* sink = nullptr;
  CHECK(cudaMalloc(&sink, size_t(sms) * 8 * 256 * sizeof(uint32_t)));

  const Footprint fps[] = {{"hbm_1GiB", big, 1}, {"l2_16MiB", small, 64}};
  char cond[256];

  // (a) TMA bulk-copy streaming.
  CHECK(cudaFuncSetAttribute(tma_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes));
  for (const Footprint& fp : fps) {
    for (uint32_t chunk : {4096u, 8192u, 16384u, 32768u}) {
      const uint8_t* src = fp.bytes == big ? hbm_buf : l2_buf;
      Probes probes(sms);
      auto launch = [&] {
        tma_stream_kernel<<<sms, 32, kRingBytes>>>(src, fp.bytes, fp.passes, chunk, err, probes.dev);
      };
      const double ms = time_launches(launch, kTimedLaunches);
      check_timeout_flag(err, "tma_stream_kernel");
      std::snprintf(cond, sizeof cond, "ctas=%d,issuing_threads_per_cta=1,stages=%d,ring=%dKiB,passes=%d",
                    sms, int(kRingBytes / chunk), kRingBytes / 1024, fp.passes);
      report_bw(std::string("tma_bulk.") + fp.name + ".chunk" + std::to_string(chunk / 1024) + "KiB",
                double(fp.bytes / chunk * chunk) * fp.passes, ms, probes, sms, cond);
    }
  }

  // (a3) Bytes in flight: one CTA (one SM's TMA) and all SMs streaming an L2-resident 2 MiB with rings of 8 to
  // 128 KiB of 4 KiB copies, all stages in flight: where the rate stops growing with the ring says how many
  // bytes one SM's TMA keeps in flight (Little's law: rate x latency).
  for (int ctas : {1, sms}) {
    for (uint32_t ring : {8192u, 16384u, 32768u, 65536u, 131072u}) {
      const uint32_t chunk = 4096;
      const size_t bytes = size_t(2) << 20;
      const int passes = ctas == 1 ? 8 : 64;
      Probes probes(ctas);
      auto launch = [&] {
        tma_stream_kernel<<<ctas, 32, kRingBytes>>>(l2_buf, bytes, passes, chunk, err, probes.dev, ring);
      };
      const double ms = time_launches(launch, kTimedLaunches);
      check_timeout_flag(err, "tma_stream_kernel (in flight)");
      std::snprintf(cond, sizeof cond, "ctas=%d,issuing_threads_per_cta=1,chunk=4KiB,stages=%d,ring=%uKiB,l2_2MiB,passes=%d",
                    ctas, int(ring / chunk), ring / 1024, passes);
      report_bw(std::string("tma_inflight.ctas") + std::to_string(ctas) + ".ring" + std::to_string(ring / 1024) + "KiB",
                double(bytes) * passes, ms, probes, ctas, cond);
    }
  }

  // (a2) 2-D tensor TMA: the footprint viewed as a row-major matrix of 4-byte elements,
  // 8192 wide (32 KiB rows); boxes of 64 columns (256 B) x 16 or 64 rows (4 or 16 KiB).
  CHECK(cudaFuncSetAttribute(tma_tensor_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kRingBytes));
  for (const Footprint& fp : fps) {
    for (int box_h : {16, 64}) {
      uint8_t* src = fp.bytes == big ? hbm_buf : l2_buf;
      const int width = 8192, box_w = 64;
      const int height = int(fp.bytes / (size_t(width) * 4));
      CUtensorMap tmap;
      const cuuint64_t dims[2] = {cuuint64_t(width), cuuint64_t(height)};
      const cuuint64_t strides[1] = {cuuint64_t(width) * 4};  // bytes between rows
      const cuuint32_t box[2] = {cuuint32_t(box_w), cuuint32_t(box_h)};
      const cuuint32_t elem_strides[2] = {1, 1};
      CUresult cr = cuTensorMapEncodeTiled(&tmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, src, dims, strides,
                                           box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                           CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (cr != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled failed: CUresult %d\n", int(cr));
        return 1;
      }
      const int tiles_x = width / box_w, tiles_y = height / box_h;
      const uint32_t chunk = uint32_t(box_w) * box_h * 4;
      Probes probes(sms);
      auto launch = [&] {
        tma_tensor_stream_kernel<<<sms, 32, kRingBytes>>>(tmap, tiles_x, tiles_y, box_w, box_h, fp.passes,
                                                          err, probes.dev);
      };
      const double ms = time_launches(launch, kTimedLaunches);
      check_timeout_flag(err, "tma_tensor_stream_kernel");
      std::snprintf(cond, sizeof cond,
                    "ctas=%d,issuing_threads_per_cta=1,box=%dx%dx4B,stages=%d,ring=%dKiB,no_swizzle,passes=%d",
                    sms, box_w, box_h, int(kRingBytes / chunk), kRingBytes / 1024, fp.passes);
      report_bw(std::string("tma_tensor2d.") + fp.name + ".box" + std::to_string(chunk / 1024) + "KiB",
                double(chunk) * tiles_x * tiles_y * fp.passes, ms, probes, sms, cond);
    }
  }

  // (b) TMA latency, L2-resident source.
  CHECK(cudaFuncSetAttribute(tma_latency_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 16384));
  for (uint32_t bytes : {1024u, 16384u}) {
    unsigned long long* cyc = nullptr;
    CHECK(cudaMalloc(&cyc, sizeof *cyc));
    const int reps = 64;
    tma_latency_kernel<<<1, 32, 16384>>>(l2_buf, bytes, reps, err, cyc);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    check_timeout_flag(err, "tma_latency_kernel");
    unsigned long long host = 0;
    CHECK(cudaMemcpy(&host, cyc, sizeof host, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(cyc));
    std::snprintf(cond, sizeof cond, "ctas=1,threads=1,l2_resident,reps=%d,issue_to_mbarrier_complete", reps);
    result((std::string("tma_bulk.latency.") + std::to_string(bytes / 1024) + "KiB").c_str(),
           double(host), "cycles", cond);
  }

  // (c1) cp.async.cg 16 B per thread.
  const int cp_blocks_per_sm = 4, cp_threads = 256;
  const int cp_smem = kCpAsyncStages * cp_threads * 16;
  for (const Footprint& fp : fps) {
    const uint8_t* src = fp.bytes == big ? hbm_buf : l2_buf;
    const int blocks = sms * cp_blocks_per_sm;
    Probes probes(blocks);
    auto launch = [&] { cp_async_kernel<<<blocks, cp_threads, cp_smem>>>(src, fp.bytes, fp.passes, probes.dev); };
    const double ms = time_launches(launch, kTimedLaunches);
    std::snprintf(cond, sizeof cond, "ctas=%d,threads=%d,stages=%d,bytes_per_thread_op=16,passes=%d",
                  blocks, cp_threads, kCpAsyncStages, fp.passes);
    report_bw(std::string("cp_async_cg.") + fp.name, double(fp.bytes) * fp.passes, ms, probes, sms, cond);
  }

  // (c2) ld.global.v4.
  for (const Footprint& fp : fps) {
    const uint8_t* src = fp.bytes == big ? hbm_buf : l2_buf;
    const int blocks = sms * 8, threads = 256;
    Probes probes(blocks);
    auto launch = [&] { ld_global_kernel<<<blocks, threads>>>(src, fp.bytes, fp.passes, sink, probes.dev); };
    const double ms = time_launches(launch, kTimedLaunches);
    std::snprintf(cond, sizeof cond, "ctas=%d,threads=%d,loads_in_flight_per_thread=4,passes=%d", blocks,
                  threads, fp.passes);
    report_bw(std::string("ld_global_v4.") + fp.name, double(fp.bytes) * fp.passes, ms, probes, sms, cond);
  }

  // (d) Multicast to a 2-CTA cluster: bytes delivered = 2 x bytes read.
  CHECK(cudaFuncSetAttribute(tma_multicast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes));
  for (const Footprint& fp : fps) {
    for (uint32_t chunk : {8192u, 32768u}) {
      const uint8_t* src = fp.bytes == big ? hbm_buf : l2_buf;
      const int blocks = (sms / 2) * 2;
      Probes probes(blocks);
      auto launch = [&] {
        tma_multicast_kernel<<<blocks, 32, kRingBytes>>>(src, fp.bytes, fp.passes, chunk, err, probes.dev);
      };
      const double ms = time_launches(launch, kTimedLaunches);
      check_timeout_flag(err, "tma_multicast_kernel");
      std::snprintf(cond, sizeof cond, "clusters=%d,cluster_size=2,stages=%d,passes=%d,bytes=delivered_to_smem",
                    blocks / 2, int(kRingBytes / chunk), fp.passes);
      report_bw(std::string("tma_multicast2.") + fp.name + ".chunk" + std::to_string(chunk / 1024) + "KiB",
                2.0 * double(fp.bytes / chunk * chunk) * fp.passes, ms, probes, sms, cond);
    }
  }

  CHECK(cudaFree(hbm_buf));
  CHECK(cudaFree(l2_buf));
  CHECK(cudaFree(err));
  CHECK(cudaFree(sink));
  std::printf("# tma_bench done\n");
  return 0;
}
