// Memory-hierarchy microbenchmarks for H100 (sm_90a), for warpsim's memory model (issue 9):
//   latency : pointer-chase latency (one thread, random 128 B lines) over footprints 16 KiB .. 1 GiB,
//             ld.global.ca (L1 plateau) and ld.global.cg (L2 / DRAM curve);
//   nearfar : per-line L2-hit and DRAM-miss latency of 4096 lines seen from one SM (several SMs), histogram
//             and the two modes (near / far L2 partition);
//   hbm     : HBM stream bandwidth (read, write, copy, scale, triad on 1 GiB arrays; sector-sparse read;
//             random 128 B line gather within 4 GiB);
//   l2bw    : L2-resident read bandwidth (8-40 MiB, all SMs), read bandwidth from k SMs (per-SM port),
//             L2 write bandwidth;
//   smem    : shared-memory bandwidth and bank conflicts (32-bit strides 1..32, 64/128-bit, ldmatrix.x4
//             row-major 128 B pitch vs 128B-swizzled);
//   l1bw    : L1 hit bandwidth (16 KiB array, ld.global.ca.v4).
//
// Usage: mem_bench [--quick] [--once] [test ...]   (tests: latency nearfar hbm l2bw smem l1bw; default all)
//   --quick  fewer footprints / SMs / repetitions;
//   --once   every configuration launched exactly once, no warm-up launch (for Nsight Compute runs).
// Output: "RESULT <id> <value> <unit> <conditions>" lines (see README.md), comments start with '#'.
//
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o mem_bench mem_bench.cu
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

bool g_quick = false;  // --quick
bool g_once = false;   // --once

constexpr size_t KiB = size_t(1) << 10, MiB = size_t(1) << 20, GiB = size_t(1) << 30;
constexpr int kLine = 128;  // bytes per L2 line

// ------------------------------------------------------------------ device helpers
__device__ __forceinline__ uint64_t ld_ca_u64(uint64_t p) {
  uint64_t v;
  asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ld_cg_u64(uint64_t p) {
  uint64_t v;
  asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// A shared-memory store of a loaded value waits for the load (scoreboard), so a clock read after it
// counts the load's full latency.
__device__ __forceinline__ void wait_for(volatile uint64_t* slot, uint64_t v) { *slot = v; }

// Pointer-chase chain: line perm[i] holds the address of line perm[i+1] (one cycle through all n lines).
__global__ void build_chain_kernel(uint64_t* base, const uint32_t* perm, size_t n) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const size_t next = perm[i + 1 == n ? 0 : i + 1];
    base[size_t(perm[i]) * (kLine / 8)] = reinterpret_cast<uint64_t>(base + next * (kLine / 8));
  }
}

// Each of n lines holds its own address (so a chain of loads of one line is a dependent chain).
__global__ void self_pointer_kernel(uint64_t* base, size_t n) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    base[i * (kLine / 8)] = reinterpret_cast<uint64_t>(base + i * (kLine / 8));
}

constexpr int kChaseSegments = 128, kChaseSegLen = 32;  // 4096 timed loads

// One thread follows the chain: `warm` untimed loads, then kChaseSegments segments of kChaseSegLen
// dependent loads, each segment timed with clock64.
template <bool kCg>
__global__ void chase_kernel(uint64_t start, long long warm, unsigned* seg_cycles, uint64_t* end,
                             ClockProbe* probe) {
  __shared__ uint64_t slot;
  __shared__ unsigned segs[kChaseSegments];
  if (threadIdx.x != 0) return;
  uint64_t p = start;
  for (long long i = 0; i < warm; ++i) p = kCg ? ld_cg_u64(p) : ld_ca_u64(p);
  wait_for(&slot, p);
  const unsigned long long c0 = clock64(), t0 = global_ns();
  for (int s = 0; s < kChaseSegments; ++s) {
    const unsigned long long a = clock64();
#pragma unroll 8
    for (int j = 0; j < kChaseSegLen; ++j) p = kCg ? ld_cg_u64(p) : ld_ca_u64(p);
    wait_for(&slot, p);
    const unsigned long long b = clock64();
    segs[s] = unsigned(b - a);
  }
  const unsigned long long c1 = clock64(), t1 = global_ns();
  for (int s = 0; s < kChaseSegments; ++s) seg_cycles[s] = segs[s];
  *end = p;  // consumes the chain
  *probe = ClockProbe{c1 - c0, t1 - t0, sm_id()};
}

// Near/far: only the first CTA that finds itself on SM `target` works (claim flag), the others exit.
__device__ __forceinline__ bool claim_sm(unsigned target, unsigned* claim) {
  if (sm_id() != target) return false;
  return atomicCAS(claim, 0u, 1u) == 0u;
}

constexpr int kNearFarChain = 8;  // dependent loads of the same line per timed sample

// L2-hit latency of each of n self-pointing lines: per line and repetition, one warming .cg load, then
// kNearFarChain dependent .cg loads of that line timed; minimum over reps, cycles per load x 8 stored.
__global__ void nearfar_l2_kernel(const uint64_t* lines, int n, int reps, unsigned target, unsigned* claim,
                                  unsigned* lat_x8, uint64_t* sink) {
  __shared__ uint64_t slot;
  if (threadIdx.x != 0 || !claim_sm(target, claim)) return;
  uint64_t acc = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t p0 = reinterpret_cast<uint64_t>(lines + size_t(i) * (kLine / 8));
    unsigned best = ~0u;
    for (int r = 0; r < reps; ++r) {
      uint64_t p = ld_cg_u64(p0);  // warm: line in L2
      wait_for(&slot, p);
      const unsigned long long a = clock64();
#pragma unroll
      for (int j = 0; j < kNearFarChain; ++j) p = ld_cg_u64(p);
      wait_for(&slot, p);
      const unsigned long long b = clock64();
      best = min(best, unsigned(b - a));
      acc ^= p;
    }
    lat_x8[i] = best;
  }
  *sink = acc;
}

// First-touch latency: one .cg load per line (lines visited in a pseudo-random order: odd multiplier modulo the
// power-of-two n), each timed on its own. After the host evicted L2: DRAM misses; after the lines were just
// written by another kernel: this SM's first L2 hit on each line (no copy made by an earlier read of its own).
__global__ void nearfar_first_kernel(const uint64_t* lines, int n, unsigned target, unsigned* claim,
                                    unsigned* lat, uint64_t* sink) {
  __shared__ uint64_t slot;
  if (threadIdx.x != 0 || !claim_sm(target, claim)) return;
  uint64_t acc = 0;
  for (int k = 0; k < n; ++k) {
    const unsigned i = (unsigned(k) * 2654435761u) & unsigned(n - 1);
    const uint64_t p0 = reinterpret_cast<uint64_t>(lines + size_t(i) * (kLine / 8));
    wait_for(&slot, p0);
    const unsigned long long a = clock64();
    const uint64_t p = ld_cg_u64(p0);
    wait_for(&slot, p);
    const unsigned long long b = clock64();
    lat[i] = unsigned(b - a);
    acc ^= p;
  }
  *sink = acc;
}

// ------------------------------------------------------------------ streams (HBM)
__device__ __forceinline__ float hsum(float4 v) { return v.x + v.y + v.z + v.w; }

__global__ void __launch_bounds__(256, 8) stream_read_kernel(const float4* __restrict__ a, size_t n, float* sink) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float s = 0.f;
  for (; i + 3 * step < n; i += 4 * step) {
    const float4 v0 = a[i], v1 = a[i + step], v2 = a[i + 2 * step], v3 = a[i + 3 * step];
    s += hsum(v0) + hsum(v1) + hsum(v2) + hsum(v3);
  }
  for (; i < n; i += step) s += hsum(a[i]);
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

// kOp: 0 write a = s, 1 copy a = b, 2 scale a = s*b, 3 triad a = b + s*c. Four loads issued before the stores.
template <int kOp>
__device__ __forceinline__ float4 stream_value(const float4* __restrict__ b, const float4* __restrict__ c,
                                               float s, size_t i) {
  if (kOp == 0) return make_float4(s, s, s, s);
  const float4 x = b[i];
  if (kOp == 1) return x;
  if (kOp == 2) return make_float4(s * x.x, s * x.y, s * x.z, s * x.w);
  const float4 y = c[i];
  return make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
}
template <int kOp>
__device__ __forceinline__ void stream_body(float4* __restrict__ a, const float4* __restrict__ b,
                                            const float4* __restrict__ c, float s, size_t n) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * step < n; i += 4 * step) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = stream_value<kOp>(b, c, s, i + u * step);
#pragma unroll
    for (int u = 0; u < 4; ++u) a[i + u * step] = v[u];
  }
  for (; i < n; i += step) a[i] = stream_value<kOp>(b, c, s, i);
}
// Separate names (not one template) so Nsight Compute's --kernel-name can pick them.
__global__ void __launch_bounds__(256, 8) stream_write_kernel(float4* a, float s, size_t n) {
  stream_body<0>(a, nullptr, nullptr, s, n);
}
__global__ void __launch_bounds__(256, 8) stream_copy_kernel(float4* a, const float4* b, size_t n) {
  stream_body<1>(a, b, nullptr, 1.f, n);
}
__global__ void __launch_bounds__(256, 8) stream_scale_kernel(float4* a, const float4* b, float s, size_t n) {
  stream_body<2>(a, b, nullptr, s, n);
}
__global__ void __launch_bounds__(256)
    stream_triad_kernel(float4* a, const float4* b, const float4* c, float s, size_t n) {
  stream_body<3>(a, b, c, s, n);
}

// Sector-sparse read: 2 threads read the first 32 B sector (two float4) of each 128 B line, so one warp
// instruction touches 16 lines, 32 B each.
__global__ void __launch_bounds__(256, 8) stream_sparse_read_kernel(const float4* __restrict__ a, size_t lines,
                                                                 float* sink) {
  const size_t step = size_t(gridDim.x) * blockDim.x, items = lines * 2;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float s = 0.f;
  auto at = [&](size_t it) { return a[(it >> 1) * (kLine / 16) + (it & 1)]; };
  for (; i + 3 * step < items; i += 4 * step) {
    const float4 v0 = at(i), v1 = at(i + step), v2 = at(i + 2 * step), v3 = at(i + 3 * step);
    s += hsum(v0) + hsum(v1) + hsum(v2) + hsum(v3);
  }
  for (; i < items; i += step) s += hsum(at(i));
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

__device__ __forceinline__ uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Random line gather: `reads` lines chosen by a hash within `total_lines` (a power of two); 8 consecutive
// threads read one whole 128 B line (16 B each).
__global__ void __launch_bounds__(256, 8) stream_gather_kernel(const float4* __restrict__ a, size_t total_lines,
                                                            size_t reads, float* sink) {
  const size_t step = size_t(gridDim.x) * blockDim.x, items = reads * 8;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float s = 0.f;
  auto at = [&](size_t it) { return a[(mix64(it >> 3) & (total_lines - 1)) * (kLine / 16) + (it & 7)]; };
  for (; i + 3 * step < items; i += 4 * step) {
    const float4 v0 = at(i), v1 = at(i + step), v2 = at(i + 2 * step), v3 = at(i + 3 * step);
    s += hsum(v0) + hsum(v1) + hsum(v2) + hsum(v3);
  }
  for (; i < items; i += step) s += hsum(at(i));
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

// ------------------------------------------------------------------ L2 bandwidth
// ld.global.cg (L2 only, no L1 allocation) over n float4, `passes` times, grid-stride; 4 loads in flight.
__global__ void __launch_bounds__(1024, 2) l2_read_kernel(const float4* __restrict__ a, size_t n, int passes,
                                                       float* sink, ClockProbe* probes) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  float s = 0.f;
  const unsigned long long c0 = clock64(), t0 = global_ns();
  for (int p = 0; p < passes; ++p) {
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + 3 * step < n; i += 4 * step) {
      const float4 v0 = __ldcg(a + i), v1 = __ldcg(a + i + step), v2 = __ldcg(a + i + 2 * step),
                   v3 = __ldcg(a + i + 3 * step);
      s += hsum(v0) + hsum(v1) + hsum(v2) + hsum(v3);
    }
    for (; i < n; i += step) s += hsum(__ldcg(a + i));
  }
  __syncthreads();
  const unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

__global__ void __launch_bounds__(1024, 2) l2_write_kernel(float4* a, size_t n, int passes, ClockProbe* probes) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  const unsigned long long c0 = clock64(), t0 = global_ns();
  for (int p = 0; p < passes; ++p) {
    const float v = float(p);
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
      __stcg(a + i, make_float4(v, v, v, v));
  }
  __syncthreads();
  const unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
}

// ------------------------------------------------------------------ shared memory and L1
constexpr int kSmemWords = 8192;  // 32 KiB of shared memory per CTA
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// kWidth = 1, 2, 4 words per lane (ld.volatile.shared.u32 / v2 / v4); lane l reads word l * stride * kWidth
// (plus a per-load, bank-preserving offset; 8 independent loads per iteration).
template <int kWidth>
__global__ void __launch_bounds__(256) smem_load_kernel(int stride, int iters, unsigned* sink, ClockProbe* probes) {
  __shared__ __align__(16) uint32_t buf[kSmemWords];
  for (int i = threadIdx.x; i < kSmemWords; i += blockDim.x) buf[i] = uint32_t(i);
  __syncthreads();
  const int lane = threadIdx.x & 31;
  // Eight addresses 128 B apart (same banks, so the same conflict degree), and every other iteration the other
  // 16 KiB half of the buffer: no two loads of an iteration, nor of consecutive iterations, share an address, so
  // ptxas can neither merge nor hoist them (a first version lost all but one load per warp that way).
  const uint32_t base = smem_addr(buf), off = uint32_t(lane * stride * kWidth) % (kSmemWords / 2);
  uint32_t addr[8];
#pragma unroll
  for (int u = 0; u < 8; ++u) addr[u] = base + 4 * ((off + 32 * u * kWidth) % (kSmemWords / 2));
  uint32_t acc = 0;
  const unsigned long long c0 = clock64(), t0 = global_ns();
  for (int it = 0; it < iters; ++it) {
    const uint32_t half = uint32_t(it & 1) * (kSmemWords / 2) * 4;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if (kWidth == 1) {
        uint32_t x;
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(x) : "r"(addr[u] + half));
        acc += x;
      } else if (kWidth == 2) {
        uint32_t x, y;
        asm volatile("ld.volatile.shared.v2.u32 {%0,%1}, [%2];" : "=r"(x), "=r"(y) : "r"(addr[u] + half));
        acc += x ^ y;
      } else {
        uint32_t x, y, z, w;
        asm volatile("ld.volatile.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(addr[u] + half));
        acc += x ^ y ^ z ^ w;
      }
    }
  }
  __syncthreads();
  const unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = acc;
}

// ldmatrix.x4 from an 8-row x 128 B tile: lane l gives row r = l % 8 of matrix m = l / 8, the 16 B chunk m
// (row-major, unswizzled: all 8 rows of a matrix in the same 4 banks) or chunk m ^ r (128B swizzle).
__global__ void __launch_bounds__(256) smem_ldmatrix_kernel(int swizzled, int iters, unsigned* sink,
                                                            ClockProbe* probes) {
  // 16 copies of the 1 KiB tile: load u of an iteration reads copy u, odd iterations copies 8-15, so no two
  // ldmatrix of an iteration or of consecutive iterations share an address (ptxas merged them otherwise).
  constexpr int kTileWords = 8 * kLine / 4;
  __shared__ __align__(128) uint32_t tile[16 * kTileWords];
  for (int i = threadIdx.x; i < 16 * kTileWords; i += blockDim.x) tile[i] = uint32_t(i);
  __syncthreads();
  const int lane = threadIdx.x & 31, r = lane & 7, m = lane >> 3;
  const int chunk = swizzled ? (m ^ r) : m;
  const uint32_t addr = smem_addr(tile) + uint32_t(r * kLine + chunk * 16);
  uint32_t acc = 0;
  const unsigned long long c0 = clock64(), t0 = global_ns();
  for (int it = 0; it < iters; ++it) {
    const uint32_t half = uint32_t(it & 1) * 8 * kTileWords * 4;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      uint32_t x, y, z, w;
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                   : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                   : "r"(addr + half + uint32_t(u * kTileWords * 4)));
      acc += x ^ y ^ z ^ w;
    }
  }
  __syncthreads();
  const unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = acc;
}

constexpr int kL1Vecs = 16 * 1024 / 16;  // 16 KiB array = 1024 float4
// Each thread reads float4 (tid + k*64) mod 1024 of a 16 KiB array with ld.global.ca.v4 (L1 hits after the
// first pass); 8 independent loads per iteration.
__global__ void __launch_bounds__(256) l1_read_kernel(const float4* a, int iters, unsigned* sink, ClockProbe* probes) {
  uint32_t acc = 0;
  const unsigned long long c0 = clock64(), t0 = global_ns();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      // 16 distinct 4 KiB windows cycle over two iterations: no load repeats an address within an iteration
      // or the next one, so none is merged or hoisted (256-float4 steps repeated every 4 loads before).
      const float4* p = a + ((threadIdx.x + unsigned(it * 8 + u) * 64u) & (kL1Vecs - 1));
      uint32_t x, y, z, w;
      asm volatile("ld.global.ca.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(p));
      acc ^= x ^ y ^ z ^ w;
    }
  }
  __syncthreads();
  const unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = acc;
}

// ------------------------------------------------------------------ host helpers
struct Gpu {
  int sms = 0;
  size_t max_smem_optin = 0;
};

// Median ms per launch: one warm-up launch, then `reps` launches timed one by one (--once: one launch, no
// warm-up).
template <class F>
double median_ms(F launch, int reps = 5) {
  if (g_once) reps = 1;
  if (!g_once) {
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(e0));
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

void res(const std::string& id, double v, const char* unit, const std::string& cond) {
  result(id.c_str(), v, unit, cond.c_str());
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string size_name(size_t bytes) {
  return bytes >= GiB ? std::to_string(bytes / GiB) + "GiB"
                      : bytes >= MiB ? std::to_string(bytes / MiB) + "MiB" : std::to_string(bytes / KiB) + "KiB";
}

// Buffers shared by the tests: one 4 GiB pool (HBM arrays, chase chains, near/far lines, random gather) and
// a sink for per-thread results.
struct Buffers {
  uint8_t* pool = nullptr;
  size_t pool_bytes = 4 * GiB;
  float* sink = nullptr;  // one float per thread of the largest grid
  size_t sink_elems = 0;
  uint64_t* misc = nullptr;  // small device scratch (chain end, claim flags, ...)
};

// ------------------------------------------------------------------ 1. latency
void test_latency(const Gpu&, Buffers& b) {
  std::vector<size_t> fps = {16 * KiB, 64 * KiB, 128 * KiB, 256 * KiB, MiB,      4 * MiB,   16 * MiB,
                             24 * MiB, 32 * MiB, 48 * MiB,  64 * MiB,  256 * MiB, GiB};
  if (g_quick) fps = {16 * KiB, 128 * KiB, 4 * MiB, 32 * MiB, 256 * MiB};
  const size_t max_lines = fps.back() / kLine;
  uint32_t* perm_dev = nullptr;
  unsigned* segs_dev = nullptr;
  CHECK(cudaMalloc(&perm_dev, max_lines * sizeof(uint32_t)));
  CHECK(cudaMalloc(&segs_dev, kChaseSegments * sizeof(unsigned)));
  Probes probe(1);
  // Smallest shared-memory carveout, so L1 gets the most of the SM's 256 KiB for the .ca plateau.
  CHECK(cudaFuncSetAttribute(chase_kernel<false>, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
  CHECK(cudaFuncSetAttribute(chase_kernel<true>, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
  uint64_t* chain = reinterpret_cast<uint64_t*>(b.pool);
  std::mt19937_64 rng(20261123);
  for (size_t fp : fps) {
    const size_t n = fp / kLine;
    std::vector<uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    CHECK(cudaMemcpy(perm_dev, perm.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    build_chain_kernel<<<1024, 256>>>(chain, perm_dev, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const uint64_t start = reinterpret_cast<uint64_t>(chain + size_t(perm[0]) * (kLine / 8));
    // Warm-up: two laps of the chain (at most 2^20 loads) for footprints that a cache could hold; larger
    // ones get 4096 loads (TLB warm-up only; the lines themselves are cold anyway).
    const long long warm = n <= (size_t(1) << 19) ? std::min<long long>(2 * n, 1 << 20) : 4096;
    for (int cg = 0; cg < 2; ++cg) {
      if (cg)
        chase_kernel<true><<<1, 32>>>(start, warm, segs_dev, b.misc, probe.dev);
      else
        chase_kernel<false><<<1, 32>>>(start, warm, segs_dev, b.misc, probe.dev);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      unsigned segs[kChaseSegments];
      CHECK(cudaMemcpy(segs, segs_dev, sizeof segs, cudaMemcpyDeviceToHost));
      std::vector<double> per_load;
      double total = 0;
      for (unsigned s : segs) {
        per_load.push_back(double(s) / kChaseSegLen);
        total += s;
      }
      const std::string id = std::string("latency.") + (cg ? "cg." : "ca.") + size_name(fp);
      const std::string cond = fmt("threads=1,random_128B_lines=%zu,warm_loads=%lld,timed_loads=%d,segment=%d",
                                   n, warm, kChaseSegments * kChaseSegLen, kChaseSegLen);
      res(id + ".median", median_of(per_load), "cycles", cond);
      res(id + ".min", *std::min_element(per_load.begin(), per_load.end()), "cycles", cond);
      res(id + ".mean", total / (kChaseSegments * kChaseSegLen), "cycles", cond);
      res(id + ".sm_clock", probe.mhz(), "MHz", cond);
    }
  }
  CHECK(cudaFree(perm_dev));
  CHECK(cudaFree(segs_dev));
}

// ------------------------------------------------------------------ 2. near/far
// Histogram (10-cycle buckets) as a comment line, and a two-means split of the samples into a low and a
// high mode (the near and far L2 partition, if there are two).
void report_modes(const std::string& id, const std::vector<double>& v, const std::string& cond) {
  const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  std::string h;
  const double base = 10 * std::floor(lo / 10);
  std::vector<int> aligned(size_t((hi - base) / 10) + 1, 0);
  for (double x : v) ++aligned[size_t((x - base) / 10)];
  for (size_t k = 0; k < aligned.size(); ++k)
    if (aligned[k]) h += " " + std::to_string(int(base) + 10 * int(k)) + ":" + std::to_string(aligned[k]);
  std::printf("# hist %s (bucket_start_cycles:count)%s\n", id.c_str(), h.c_str());
  double c_lo = lo, c_hi = hi;
  size_t n_lo = 0;
  for (int it = 0; it < 50; ++it) {
    double s_lo = 0, s_hi = 0;
    size_t k_lo = 0, k_hi = 0;
    for (double x : v) {
      if (std::fabs(x - c_lo) <= std::fabs(x - c_hi)) {
        s_lo += x;
        ++k_lo;
      } else {
        s_hi += x;
        ++k_hi;
      }
    }
    if (k_lo) c_lo = s_lo / k_lo;
    if (k_hi) c_hi = s_hi / k_hi;
    n_lo = k_lo;
  }
  res(id + ".median", median_of(v), "cycles", cond);
  res(id + ".min", lo, "cycles", cond);
  res(id + ".max", hi, "cycles", cond);
  res(id + ".low_mode", c_lo, "cycles", cond);
  res(id + ".high_mode", c_hi, "cycles", cond);
  res(id + ".frac_low", double(n_lo) / v.size(), "fraction", cond);
  res(id + ".high_minus_low", c_hi - c_lo, "cycles", cond);
}

void test_nearfar(const Gpu& g, Buffers& b) {
  constexpr int kLines = 4096;
  const int reps = g_quick ? 3 : 8;
  std::vector<int> targets = {0, 33, 66, 99, 131};
  if (g_quick) targets = {0, 66};
  // Lines for the L2-hit test at pool+0 (512 KiB), for the DRAM test at pool+1 GiB, eviction buffer
  // (200 MiB) at pool+2 GiB.
  uint64_t* l2_lines = reinterpret_cast<uint64_t*>(b.pool);
  uint64_t* dram_lines = reinterpret_cast<uint64_t*>(b.pool + GiB);
  const float4* evict = reinterpret_cast<const float4*>(b.pool + 2 * GiB);
  const size_t evict_vecs = 200 * MiB / 16;
  self_pointer_kernel<<<64, 256>>>(l2_lines, kLines);
  self_pointer_kernel<<<64, 256>>>(dram_lines, kLines);
  CHECK(cudaGetLastError());
  unsigned *lat_dev = nullptr, *claim = nullptr;
  CHECK(cudaMalloc(&lat_dev, kLines * sizeof(unsigned)));
  CHECK(cudaMalloc(&claim, sizeof(unsigned)));
  Probes evict_probes(g.sms * 2);
  const int launch_ctas = 2 * g.sms;  // one warp each; the first on the target SM claims the work
  // kind 0 "l2hit": repeated loads after this SM's own warming load; 1 "l2first": first load by this SM of
  // lines just written by another kernel (in L2, never read by this SM); 2 "dram": first load after eviction.
  const char* kinds[] = {"l2hit", "l2first", "dram"};
  for (int t : targets) {
    if (t >= g.sms) t = g.sms - 1;
    for (int kind = 0; kind < 3; ++kind) {
      const bool dram = kind == 2;
      CHECK(cudaMemset(claim, 0, sizeof(unsigned)));
      CHECK(cudaMemset(lat_dev, 0xff, kLines * sizeof(unsigned)));
      if (kind == 0) {
        nearfar_l2_kernel<<<launch_ctas, 32>>>(l2_lines, kLines, reps, unsigned(t), claim, lat_dev, b.misc);
      } else if (kind == 1) {
        self_pointer_kernel<<<64, 256>>>(dram_lines, kLines);  // fresh lines, written from 64 CTAs
        CHECK(cudaGetLastError());
        nearfar_first_kernel<<<launch_ctas, 32>>>(dram_lines, kLines, unsigned(t), claim, lat_dev, b.misc);
      } else {
        // Evict: stream 200 MiB through L2 (the written-back lines are then DRAM-only).
        l2_read_kernel<<<g.sms * 2, 1024>>>(evict, evict_vecs, 1, b.sink, evict_probes.dev);
        CHECK(cudaGetLastError());
        nearfar_first_kernel<<<launch_ctas, 32>>>(dram_lines, kLines, unsigned(t), claim, lat_dev, b.misc);
      }
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      unsigned claimed = 0;
      CHECK(cudaMemcpy(&claimed, claim, sizeof claimed, cudaMemcpyDeviceToHost));
      if (!claimed) {
        std::printf("# nearfar: no CTA ran on SM %d; skipped\n", t);
        continue;
      }
      std::vector<unsigned> lat(kLines);
      CHECK(cudaMemcpy(lat.data(), lat_dev, kLines * sizeof(unsigned), cudaMemcpyDeviceToHost));
      std::vector<double> v;
      for (unsigned x : lat)
        if (x != ~0u) v.push_back(kind == 0 ? double(x) / kNearFarChain : double(x));
      if (v.empty()) continue;
      const std::string id = fmt("nearfar.sm%d.%s", t, kinds[kind]);
      const std::string cond =
          dram        ? fmt("sm=%d,lines=%d,one_cold_cg_load_per_line_after_200MiB_evict,random_order", t, kLines)
          : kind == 1 ? fmt("sm=%d,lines=%d,one_cg_load_per_line_just_written_by_other_kernel,random_order", t,
                            kLines)
                      : fmt("sm=%d,lines=%d,min_over_reps=%d,chain=%d_cg_loads_same_line_after_warm_load", t, kLines,
                     reps, kNearFarChain);
      report_modes(id, v, cond);
    }
  }
  CHECK(cudaFree(lat_dev));
  CHECK(cudaFree(claim));
}

// ------------------------------------------------------------------ 3. HBM streams
void test_hbm(const Gpu& g, Buffers& b) {
  const size_t arr = GiB, n = arr / 16;
  float4* A = reinterpret_cast<float4*>(b.pool);
  float4* B = reinterpret_cast<float4*>(b.pool + GiB);
  float4* C = reinterpret_cast<float4*>(b.pool + 2 * GiB);
  const int threads = 256;
  // One full wave: as many CTAs as fit on all SMs at once (8 per SM at <= 32 registers; triad needs more).
  auto wave = [&](const void* kernel) {
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
    return std::max(1, per_sm) * g.sms;
  };
  auto bw = [&](const char* name, double bytes, int blocks, double ms, const std::string& extra = "") {
    res(std::string("hbm.") + name + ".bw", bytes / (ms * 1e-3) / 1e9, "GB/s",
        fmt("array=1GiB,float4,ctas=%d,threads=%d,loads_in_flight_per_thread=4,median_of=%d", blocks, threads,
            g_once ? 1 : 5) +
            extra);
  };
  int k = wave(reinterpret_cast<const void*>(stream_read_kernel));
  bw("read", double(arr), k, median_ms([&] { stream_read_kernel<<<k, threads>>>(B, n, b.sink); }));
  k = wave(reinterpret_cast<const void*>(stream_write_kernel));
  bw("write", double(arr), k, median_ms([&] { stream_write_kernel<<<k, threads>>>(A, 1.f, n); }));
  k = wave(reinterpret_cast<const void*>(stream_copy_kernel));
  bw("copy", 2.0 * arr, k, median_ms([&] { stream_copy_kernel<<<k, threads>>>(A, B, n); }));
  k = wave(reinterpret_cast<const void*>(stream_scale_kernel));
  bw("scale", 2.0 * arr, k, median_ms([&] { stream_scale_kernel<<<k, threads>>>(A, B, 3.f, n); }));
  k = wave(reinterpret_cast<const void*>(stream_triad_kernel));
  bw("triad", 3.0 * arr, k, median_ms([&] { stream_triad_kernel<<<k, threads>>>(A, B, C, 3.f, n); }));
  const size_t lines = arr / kLine;
  k = wave(reinterpret_cast<const void*>(stream_sparse_read_kernel));
  const double sparse_ms = median_ms([&] { stream_sparse_read_kernel<<<k, threads>>>(B, lines, b.sink); });
  bw("read_sector_sparse.useful", double(lines) * 32, k, sparse_ms, ",32B_of_each_128B_line");
  bw("read_sector_sparse.lines", double(lines) * kLine, k, sparse_ms, ",32B_of_each_128B_line,bytes=lines_x128");
  const size_t total_lines = b.pool_bytes / kLine, reads = GiB / kLine;
  k = wave(reinterpret_cast<const void*>(stream_gather_kernel));
  bw("random_line_gather", double(reads) * kLine, k,
     median_ms([&] {
       stream_gather_kernel<<<k, threads>>>(reinterpret_cast<const float4*>(b.pool), total_lines, reads, b.sink);
     }),
     fmt(",random_128B_lines_within=%s,lines_read=%zu", size_name(b.pool_bytes).c_str(), reads));
}

// ------------------------------------------------------------------ 4. L2 bandwidth
void test_l2bw(const Gpu& g, Buffers& b) {
  const float4* src = reinterpret_cast<const float4*>(b.pool);
  // (a) all SMs, L2-resident footprints; ~2 GiB read per launch.
  std::vector<size_t> fps = {8 * MiB, 16 * MiB, 24 * MiB, 40 * MiB};
  if (g_quick) fps = {8 * MiB, 24 * MiB};
  const int ctas = 2 * g.sms;
  for (size_t fp : fps) {
    const int passes = int(std::max<size_t>(1, 2 * GiB / fp));
    Probes probes(ctas);
    const double ms = median_ms([&] { l2_read_kernel<<<ctas, 1024>>>(src, fp / 16, passes, b.sink, probes.dev); });
    const double mhz = probes.mhz(), bytes = double(fp) * passes;
    const std::string cond =
        fmt("ld.global.cg.v4,ctas=%d,threads=1024,passes=%d,sms_used=%d", ctas, passes, probes.distinct_sms());
    const std::string id = "l2.read." + size_name(fp);
    res(id + ".bw", bytes / (ms * 1e-3) / 1e9, "GB/s", cond);
    res(id + ".bytes_per_sm_cycle", bytes / (ms * 1e-3 * mhz * 1e6 * g.sms), "B/cycle/SM", cond);
    res(id + ".sm_clock", mhz, "MHz", cond);
  }
  // (b) k SMs, one CTA of 1024 threads per SM (a dynamic shared allocation over half the SM's shared memory
  // keeps two CTAs off one SM), 8 MiB footprint.
  const int big_smem = int(std::min<size_t>(g.max_smem_optin, 200 * KiB));
  CHECK(cudaFuncSetAttribute(l2_read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big_smem));
  std::vector<int> ks = {1, 2, 4, 8, 16, 33, 66, 99, 132};
  if (g_quick) ks = {1, 8, 66, 132};
  for (int k : ks) {
    if (k > g.sms) k = g.sms;
    const size_t fp = 8 * MiB;
    const int passes = 4 * k + 4;
    Probes probes(k);
    const double ms =
        median_ms([&] { l2_read_kernel<<<k, 1024, big_smem>>>(src, fp / 16, passes, b.sink, probes.dev); });
    const double mhz = probes.mhz(), bytes = double(fp) * passes;
    const std::string cond = fmt("ld.global.cg.v4,footprint=8MiB,ctas=%d,one_cta_per_sm,threads=1024,passes=%d,sms_used=%d",
                                 k, passes, probes.distinct_sms());
    const std::string id = fmt("l2.read.sms%d", k);
    res(id + ".bw", bytes / (ms * 1e-3) / 1e9, "GB/s", cond);
    res(id + ".bytes_per_sm_cycle", bytes / (ms * 1e-3 * mhz * 1e6 * k), "B/cycle/SM", cond);
    res(id + ".sm_clock", mhz, "MHz", cond);
  }
  // (c) L2 write, 8 MiB, all SMs.
  {
    const size_t fp = 8 * MiB;
    const int passes = 128;
    Probes probes(ctas);
    float4* dst = reinterpret_cast<float4*>(b.pool);
    const double ms = median_ms([&] { l2_write_kernel<<<ctas, 1024>>>(dst, fp / 16, passes, probes.dev); });
    const double mhz = probes.mhz(), bytes = double(fp) * passes;
    const std::string cond = fmt("st.global.cg.v4,footprint=8MiB,ctas=%d,threads=1024,passes=%d,sms_used=%d", ctas,
                                 passes, probes.distinct_sms());
    res("l2.write.8MiB.bw", bytes / (ms * 1e-3) / 1e9, "GB/s", cond);
    res("l2.write.8MiB.bytes_per_sm_cycle", bytes / (ms * 1e-3 * mhz * 1e6 * g.sms), "B/cycle/SM", cond);
    res("l2.write.8MiB.sm_clock", mhz, "MHz", cond);
  }
}

// ------------------------------------------------------------------ 5./6. shared memory, L1
// Reports bytes per SM-cycle and SM-cycles per warp instruction (per SM) of one kernel configuration.
template <class F>
void report_sm_rate(const std::string& id, const Gpu& g, int ctas, int threads, double instr_per_warp,
                    double bytes_per_instr, const std::string& cond, F launch_with_probes) {
  Probes probes(ctas);
  const double ms = median_ms([&] { launch_with_probes(probes.dev); });
  const double mhz = probes.mhz();
  const double cycles = ms * 1e-3 * mhz * 1e6;  // SM cycles per launch
  const double instr_per_sm = instr_per_warp * (double(ctas) * threads / 32) / g.sms;
  const std::string c = cond + fmt(",ctas=%d,threads=%d,sms_used=%d", ctas, threads, probes.distinct_sms());
  res(id + ".bytes_per_sm_cycle", instr_per_sm * bytes_per_instr / cycles, "B/cycle/SM", c);
  res(id + ".cycles_per_warp_instr", cycles / instr_per_sm, "cycles/instr/SM", c);
  res(id + ".sm_clock", mhz, "MHz", c);
}

int gcd_int(int a, int b) { return b ? gcd_int(b, a % b) : a; }

void test_smem(const Gpu& g, Buffers& b) {
  const int ctas = 4 * g.sms, threads = 256;
  const int base_iters = g_quick ? 1024 : 4096;  // x 8 loads per iteration per thread
  unsigned* sink = reinterpret_cast<unsigned*>(b.sink);
  auto run32 = [&](int stride) {
    const int degree = gcd_int(stride, 32);
    const int iters = std::max(64, base_iters / degree);
    report_sm_rate(fmt("smem.ld32.stride%d", stride), g, ctas, threads, 8.0 * iters, 128.0,
                   fmt("ld.shared.u32,word_stride=%d,expected_conflict_degree=%d,iters=%d", stride, degree, iters),
                   [&](ClockProbe* p) { smem_load_kernel<1><<<ctas, threads>>>(stride, iters, sink, p); });
  };
  for (int s : {1, 2, 4, 8, 16, 32}) run32(s);
  {
    const int iters = base_iters / 2;
    report_sm_rate("smem.ld64.stride1", g, ctas, threads, 8.0 * iters, 256.0,
                   fmt("ld.shared.v2.u32,stride=1,iters=%d", iters),
                   [&](ClockProbe* p) { smem_load_kernel<2><<<ctas, threads>>>(1, iters, sink, p); });
  }
  {
    const int iters = base_iters / 4;
    report_sm_rate("smem.ld128.stride1", g, ctas, threads, 8.0 * iters, 512.0,
                   fmt("ld.shared.v4.u32,stride=1,iters=%d", iters),
                   [&](ClockProbe* p) { smem_load_kernel<4><<<ctas, threads>>>(1, iters, sink, p); });
  }
  for (int sw = 0; sw < 2; ++sw) {
    const int iters = sw ? base_iters / 4 : base_iters / 16;
    report_sm_rate(sw ? "smem.ldmatrix_x4.swizzle128B" : "smem.ldmatrix_x4.rowmajor128Bpitch", g, ctas, threads,
                   8.0 * iters, 512.0,
                   fmt("ldmatrix.m8n8.x4.b16,tile=8rows_x_128B,%s,iters=%d",
                       sw ? "chunk=m_xor_row" : "unswizzled", iters),
                   [&](ClockProbe* p) { smem_ldmatrix_kernel<<<ctas, threads>>>(sw, iters, sink, p); });
  }
}

void test_l1bw(const Gpu& g, Buffers& b) {
  const int ctas = 4 * g.sms, threads = 256;
  const int iters = g_quick ? 512 : 2048;  // x 8 loads of 16 B per thread
  CHECK(cudaMemset(b.pool, 0, 16 * KiB));
  const float4* a = reinterpret_cast<const float4*>(b.pool);
  report_sm_rate("l1.read16KiB", g, ctas, threads, 8.0 * iters, 512.0,
                 fmt("ld.global.ca.v4.u32,array=16KiB_shared_by_all_ctas,iters=%d", iters),
                 [&](ClockProbe* p) { l1_read_kernel<<<ctas, threads>>>(a, iters, reinterpret_cast<unsigned*>(b.sink), p); });
}

struct Test {
  const char* name;
  void (*run)(const Gpu&, Buffers&);
};
const Test kTests[] = {{"latency", test_latency}, {"nearfar", test_nearfar}, {"hbm", test_hbm},
                       {"l2bw", test_l2bw},       {"smem", test_smem},       {"l1bw", test_l1bw}};

int usage() {
  std::fprintf(stderr, "usage: mem_bench [--quick] [--once] [test ...]\n  tests:");
  for (const Test& t : kTests) std::fprintf(stderr, " %s", t.name);
  std::fprintf(stderr, " (default: all)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const Test*> chosen;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      g_quick = true;
    } else if (!std::strcmp(argv[i], "--once")) {
      g_once = true;
    } else {
      const Test* found = nullptr;
      for (const Test& t : kTests)
        if (!std::strcmp(argv[i], t.name)) found = &t;
      if (!found) {
        std::fprintf(stderr, "mem_bench: unknown argument '%s'\n", argv[i]);
        return usage();
      }
      chosen.push_back(found);
    }
  }
  if (chosen.empty())
    for (const Test& t : kTests) chosen.push_back(&t);

  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  Gpu g;
  g.sms = prop.multiProcessorCount;
  g.max_smem_optin = prop.sharedMemPerBlockOptin;
  std::printf("# device: %s, %d SMs, L2 %d B, cc %d.%d, smem/SM %zu B, %s%s\n", prop.name, g.sms,
              prop.l2CacheSize, prop.major, prop.minor, prop.sharedMemPerMultiprocessor, g_quick ? "quick" : "full",
              g_once ? ", once" : "");

  Buffers b;
  CHECK(cudaMalloc(&b.pool, b.pool_bytes));
  CHECK(cudaMemset(b.pool, 0, b.pool_bytes));
  b.sink_elems = size_t(g.sms) * 8 * 256;  // largest grid: sms*8 x 256 (= sms*2 x 1024, sms*4 x 256 smaller)
  CHECK(cudaMalloc(&b.sink, b.sink_elems * sizeof(float)));
  CHECK(cudaMalloc(&b.misc, 64));
  CHECK(cudaDeviceSynchronize());

  for (const Test* t : chosen) {
    const auto start = std::chrono::steady_clock::now();
    std::printf("# test %s\n", t->name);
    std::fflush(stdout);
    t->run(g, b);
    CHECK(cudaDeviceSynchronize());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("# test %s done in %.1f s\n", t->name, s);
  }
  CHECK(cudaFree(b.pool));
  CHECK(cudaFree(b.sink));
  CHECK(cudaFree(b.misc));
  std::printf("# mem_bench done\n");
  return 0;
}
