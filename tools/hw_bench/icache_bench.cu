// Instruction fetch on one SM: how many cycles a warp spends per 128-byte line of straight-line code as the code
// grows past the instruction caches, on its first pass (cold) and on later passes (a loop over the same code),
// with one warp, one warp per sub-partition, two warps per sub-partition running the same code, and two warps
// of one sub-partition running different code. warpsim's sm.icache.* (models/sm/fetch/instruction_fetch.h)
// would be fitted from these figures.
//
// Code: LINES blocks of 8 independent FMAs (inline PTX, one FFMA each = 16 B of SASS, so a block is one
// 128-byte line), fully unrolled; 8 accumulators, so one warp can issue an FFMA every cycle (latency 4 over 8
// chains) whenever its instructions are there. `cuobjdump -sass icache_bench | grep -c FFMA` checks the layout.
//
// RESULT icache.<variant>.kb<K>.first_pass  cycles per line of the first pass (code cold in the SM's caches,
//                                            possibly warm in L2 from the previous launch of the same kernel)
// RESULT icache.<variant>.kb<K>.steady      cycles per line of later passes: (cycles(8 passes) - cycles(1)) / 7
// variants: w1 (one warp), w4 (4 warps: one per sub-partition), w8 (8 warps: two per sub-partition, same code),
// split (warps 0 and 4, on one sub-partition, each running its own copy of the code: 2 x K KB in all).
#include <cstdio>

#include "bench_common.h"

#define FMA1(r) "fma.rn.f32 " #r ", " #r ", %8, %9;\n"
#define FMA8()                                                                                         \
  asm volatile("{\n" FMA1(%0) FMA1(%1) FMA1(%2) FMA1(%3) FMA1(%4) FMA1(%5) FMA1(%6) FMA1(%7) "}\n" \
               : "+f"(a[0]), "+f"(a[1]), "+f"(a[2]), "+f"(a[3]), "+f"(a[4]), "+f"(a[5]), "+f"(a[6]), "+f"(a[7]) \
               : "f"(mul), "f"(add))

// `copy` only makes two instantiations with identical bodies distinct functions (distinct code addresses).
template <int LINES, int copy>
__device__ __noinline__ void code_block(float* a, float mul, float add) {
#pragma unroll
  for (int i = 0; i < LINES; ++i) FMA8();
}

// Every warp in `warps` runs `passes` passes over the code; warp 4 runs the second copy when `split`.
template <int LINES>
__global__ void fetch_kernel(int passes, int split, unsigned long long* cycles, float* sink) {
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = 1e-3f * float(threadIdx.x + i);
  const float mul = 1.0000001f, add = 1e-7f;
  const int warp = threadIdx.x / 32;
  __syncthreads();
  const unsigned long long t0 = clock64();
  for (int p = 0; p < passes; ++p) {
    if (split && warp == 4) code_block<LINES, 1>(a, mul, add);
    else code_block<LINES, 0>(a, mul, add);
  }
  const unsigned long long t1 = clock64();
  if (threadIdx.x % 32 == 0) cycles[warp] = t1 - t0;
  float s = 0;
  for (int i = 0; i < 8; ++i) s += a[i];
  sink[threadIdx.x] = s;
}

// Cycles per line of warp 0 (and of warp 4 under split: the larger) over `passes` passes.
template <int LINES>
static double cycles_of(int warps, int passes, int split, unsigned long long* dev_cycles, float* sink) {
  CHECK(cudaMemset(dev_cycles, 0, 8 * sizeof(unsigned long long)));
  fetch_kernel<LINES><<<1, 32 * warps>>>(passes, split, dev_cycles, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  unsigned long long host[8] = {};
  CHECK(cudaMemcpy(host, dev_cycles, sizeof host, cudaMemcpyDeviceToHost));
  unsigned long long c = host[0];
  if (split && host[4] > c) c = host[4];
  return double(c);
}

template <int LINES>
static void measure(unsigned long long* dev_cycles, float* sink) {
  struct Variant {
    const char* name;
    int warps, split;
  } variants[] = {{"w1", 1, 0}, {"w4", 4, 0}, {"w8", 8, 0}, {"split", 8, 1}};
  const int kb = LINES * 128 / 1024;
  for (const Variant& v : variants) {
    const double one = cycles_of<LINES>(v.warps, 1, v.split, dev_cycles, sink);
    const double eight = cycles_of<LINES>(v.warps, 8, v.split, dev_cycles, sink);
    char id[96], cond[160];
    std::snprintf(cond, sizeof cond, "lines=%d,warps=%d,split=%d,ctas=1", LINES, v.warps, v.split);
    std::snprintf(id, sizeof id, "icache.%s.kb%d.first_pass", v.name, kb);
    result(id, one / LINES, "cycles/line", cond);
    std::snprintf(id, sizeof id, "icache.%s.kb%d.steady", v.name, kb);
    result(id, (eight - one) / (7.0 * LINES), "cycles/line", cond);
  }
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  unsigned long long* dev_cycles = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&dev_cycles, 8 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, 256 * sizeof(float)));
  measure<16>(dev_cycles, sink);   // 2 KB
  measure<64>(dev_cycles, sink);   // 8 KB
  measure<128>(dev_cycles, sink);  // 16 KB
  measure<192>(dev_cycles, sink);  // 24 KB
  measure<256>(dev_cycles, sink);  // 32 KB
  measure<320>(dev_cycles, sink);  // 40 KB
  measure<384>(dev_cycles, sink);  // 48 KB
  measure<512>(dev_cycles, sink);  // 64 KB
  measure<768>(dev_cycles, sink);  // 96 KB
  measure<1024>(dev_cycles, sink); // 128 KB
  measure<1536>(dev_cycles, sink); // 192 KB
  CHECK(cudaFree(dev_cycles));
  CHECK(cudaFree(sink));
  return 0;
}
