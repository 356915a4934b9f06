// Tensor-core microbenchmarks for H100 (sm_90a): mma.sync and wgmma.mma_async
// throughput and latency. Operands are all zero (as in Luo et al.), which may
// lower power and therefore allow a higher clock than real data would.
//
// Throughput: cudaEvent time over a launch of all SMs; the in-kernel clock probe
// (clock64 vs globaltimer) gives the effective SM clock so that the rate can also
// be given as FLOP (or OP) per cycle per SM.  Latency: one warp (mma.sync) or one
// warpgroup (wgmma) running one dependent chain, clock64 cycles per instruction.
//
// Build: nvcc -O3 -arch=sm_90a -std=c++17 -o tensor_bench tensor_bench.cu
#include <cstring>
#include <string>

#include "bench_common.h"
#include "wgmma_ops.h"

// ---------------------------------------------------------------- mma.sync ops
// Each op: A/B fragment register counts and types per thread, accumulator C
// registers per thread, FLOPs per warp-level instruction (2*M*N*K).
struct MmaF16F32 {
  static constexpr const char* kName = "mma_sync.m16n8k16.f32.f16";
  static constexpr int kA = 4, kB = 2, kC = 4;
  static constexpr double kFlops = 2.0 * 16 * 8 * 16;
  using AT = uint32_t;
  using CT = float;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MmaF16F16 {
  static constexpr const char* kName = "mma_sync.m16n8k16.f16.f16";
  static constexpr int kA = 4, kB = 2, kC = 2;  // C/D: two f16x2 registers
  static constexpr double kFlops = 2.0 * 16 * 8 * 16;
  using AT = uint32_t;
  using CT = uint32_t;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
        : "+r"(c[0]), "+r"(c[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MmaBf16F32 {
  static constexpr const char* kName = "mma_sync.m16n8k16.f32.bf16";
  static constexpr int kA = 4, kB = 2, kC = 4;
  static constexpr double kFlops = 2.0 * 16 * 8 * 16;
  using AT = uint32_t;
  using CT = float;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MmaTf32F32 {
  static constexpr const char* kName = "mma_sync.m16n8k8.f32.tf32";
  static constexpr int kA = 4, kB = 2, kC = 4;
  static constexpr double kFlops = 2.0 * 16 * 8 * 8;
  using AT = uint32_t;
  using CT = float;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MmaS8S32 {
  static constexpr const char* kName = "mma_sync.m16n8k32.s32.s8";
  static constexpr int kA = 4, kB = 2, kC = 4;
  static constexpr double kFlops = 2.0 * 16 * 8 * 32;  // integer OPs
  using AT = uint32_t;
  using CT = int;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MmaE4m3F32 {
  static constexpr const char* kName = "mma_sync.m16n8k32.f32.e4m3";
  static constexpr int kA = 4, kB = 2, kC = 4;
  static constexpr double kFlops = 2.0 * 16 * 8 * 32;
  using AT = uint32_t;
  using CT = float;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MmaF64 {
  static constexpr const char* kName = "mma_sync.m8n8k4.f64.f64";
  static constexpr int kA = 1, kB = 1, kC = 2;
  static constexpr double kFlops = 2.0 * 8 * 8 * 4;
  using AT = double;
  using CT = double;
  __device__ __forceinline__ static void run(CT (&c)[kC], const AT (&a)[kA], const AT (&b)[kB]) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(c[0]), "+d"(c[1])
                 : "d"(a[0]), "d"(b[0]));
  }
};

// Throughput: every warp runs kChains independent accumulator chains so the
// tensor pipe always has independent work; the operands are loaded from a zeroed
// global buffer (so the compiler cannot treat them as constants).
template <class Op, int kChains>
__global__ void mma_kernel(const typename Op::AT* zeros, typename Op::CT* out, int iters,
                           ClockProbe* probes) {
  typename Op::AT a[Op::kA], b[Op::kB];
#pragma unroll
  for (int i = 0; i < Op::kA; ++i) a[i] = zeros[i];
#pragma unroll
  for (int i = 0; i < Op::kB; ++i) b[i] = zeros[Op::kA + i];
  typename Op::CT c[kChains][Op::kC];
#pragma unroll
  for (int ch = 0; ch < kChains; ++ch)
#pragma unroll
    for (int i = 0; i < Op::kC; ++i) c[ch][i] = typename Op::CT(0);

  __syncthreads();
  unsigned long long c0 = clock64(), t0 = global_ns();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int ch = 0; ch < kChains; ++ch) Op::run(c[ch], a, b);
  }
  __syncthreads();  // the CTA's end time is that of its slowest warp
  unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};

  typename Op::CT sum = typename Op::CT(0);
#pragma unroll
  for (int ch = 0; ch < kChains; ++ch)
#pragma unroll
    for (int i = 0; i < Op::kC; ++i) sum += c[ch][i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // keeps the chains alive
}

struct Gpu {
  int sms = 0;
  std::string name;
};

static Gpu query_gpu() {
  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  Gpu g;
  g.sms = prop.multiProcessorCount;
  g.name = prop.name;
  std::printf("# device: %s, %d SMs, cc %d.%d\n", prop.name, g.sms, prop.major, prop.minor);
  return g;
}


// Prints throughput (whole GPU and per SM per cycle), the measured SM clock, and latency.
static void report_rate(const std::string& id, double flops, double ms, const Probes& probes, int sms,
                        const char* unit_tera, const char* unit_cycle, std::string cond) {
  const double mhz = probes.mhz();
  cond += ",sms_used=" + std::to_string(probes.distinct_sms());
  double per_s = flops / (ms * 1e-3);
  double cycles = ms * 1e-3 * mhz * 1e6;
  result((id + ".tput").c_str(), per_s / 1e12, unit_tera, cond.c_str());
  result((id + ".tput_per_sm_cycle").c_str(), flops / (cycles * sms), unit_cycle, cond.c_str());
  result((id + ".sm_clock").c_str(), mhz, "MHz", cond.c_str());
}

template <class Op>
static void bench_mma(const Gpu& g, const void* zeros, void* out) {
  constexpr int kChains = 8, kWarpsPerSm = 8, kIters = 16384;
  const int threads = 32 * kWarpsPerSm, blocks = g.sms;
  const char* unit_t = std::strstr(Op::kName, "s8") ? "TOP/s" : "TFLOP/s";
  const char* unit_c = std::strstr(Op::kName, "s8") ? "OP/cycle/SM" : "FLOP/cycle/SM";
  {
    Probes probes(blocks);
    auto launch = [&] {
      mma_kernel<Op, kChains><<<blocks, threads>>>(static_cast<const typename Op::AT*>(zeros),
                                                   static_cast<typename Op::CT*>(out), kIters,
                                                   probes.dev);
    };
    double ms = time_launches(launch, 5);
    double flops = Op::kFlops * double(kChains) * kIters * (threads / 32) * blocks;
    char cond[256];
    std::snprintf(cond, sizeof cond, "ctas=%d,warps_per_sm=%d,chains_per_warp=%d,iters=%d,operands=zero",
                  blocks, kWarpsPerSm, kChains, kIters);
    report_rate(Op::kName, flops, ms, probes, g.sms, unit_t, unit_c, cond);
  }
  {
    // Latency: one warp, one dependent chain; cycles over the loop / instructions.
    constexpr int kLatIters = 4096;
    Probes probes(1);
    mma_kernel<Op, 1><<<1, 32>>>(static_cast<const typename Op::AT*>(zeros),
                                 static_cast<typename Op::CT*>(out), kLatIters, probes.dev);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    ClockProbe p{};
    CHECK(cudaMemcpy(&p, probes.dev, sizeof p, cudaMemcpyDeviceToHost));
    char cond[128];
    std::snprintf(cond, sizeof cond, "warps=1,chains=1,iters=%d,operands=zero", kLatIters);
    result((std::string(Op::kName) + ".latency").c_str(), double(p.cycles) / kLatIters, "cycles",
           cond);
  }
}

// ------------------------------------------------------------------- wgmma
// Shared-memory matrix descriptor (PTX ISA "matrix descriptor" for wgmma):
// bits 0-13 start address >> 4, 16-29 leading byte offset >> 4, 32-45 stride
// byte offset >> 4, 62-63 swizzle mode (0: none).  With no swizzle the tile is
// made of 8-row x 16-byte core matrices; we place the two (or more) core matrices
// along K next to each other (leading offset 128 B) and 8-row groups after them
// (stride offset 256 B).  The data are zero so only the addresses must stay
// inside the buffer: A spans 64 rows x 32 B = 2 KiB, B up to 256 rows x 32 B = 8 KiB.
__device__ __forceinline__ uint64_t smem_desc(const void* smem_ptr, uint32_t lead_bytes,
                                              uint32_t stride_bytes) {
  uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  uint64_t d = 0;
  d |= uint64_t((addr >> 4) & 0x3FFF);
  d |= uint64_t((lead_bytes >> 4) & 0x3FFF) << 16;
  d |= uint64_t((stride_bytes >> 4) & 0x3FFF) << 32;
  // bits 62-63 swizzle = 0 (none), base offset bits 49-51 = 0
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

constexpr int kWgmmaSmemBytes = 2048 + 8192;  // A tile + largest B tile
constexpr int kWgmmaBOffset = 2048;

// Each warpgroup runs one accumulator chain: per outer iteration a batch of
// kBatch wgmmas, one commit, then wait until at most kPending groups are in
// flight (kPending = 0: latency mode, each wgmma waits for its predecessor;
// kPending = 1: the next batch is issued while the previous one finishes).
template <class Op, int kBatch, int kPending>
__global__ void __launch_bounds__(256, 1)
    wgmma_kernel(typename Op::Acc* out, int iters, ClockProbe* probes) {
  __shared__ __align__(1024) uint8_t smem[kWgmmaSmemBytes];
  for (int i = threadIdx.x; i < kWgmmaSmemBytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0;
  // The zeros were written by the generic proxy; wgmma reads through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();

  const uint64_t desc_a = smem_desc(smem, 128, 256);
  const uint64_t desc_b = smem_desc(smem + kWgmmaBOffset, 128, 256);
  uint32_t a_regs[4] = {0, 0, 0, 0};  // RS form: A fragment registers (zero)
  typename Op::Acc d[Op::kAcc];
#pragma unroll
  for (int i = 0; i < Op::kAcc; ++i) d[i] = typename Op::Acc(0);

  __syncthreads();
  unsigned long long c0 = clock64(), t0 = global_ns();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kBatch; ++j) Op::mma(d, a_regs, desc_a, desc_b);
    wgmma_commit();
    wgmma_wait<kPending>();
  }
  wgmma_wait<0>();
  __syncthreads();
  unsigned long long c1 = clock64(), t1 = global_ns();
  if (threadIdx.x == 0) probes[blockIdx.x] = ClockProbe{c1 - c0, t1 - t0, sm_id()};

  typename Op::Acc sum = typename Op::Acc(0);
#pragma unroll
  for (int i = 0; i < Op::kAcc; ++i) sum += d[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

template <class Op>
static void bench_wgmma(const Gpu& g, void* out) {
  const bool is_int = std::strstr(Op::kName, "s8") != nullptr;
  const char* unit_t = is_int ? "TOP/s" : "TFLOP/s";
  const char* unit_c = is_int ? "OP/cycle/SM" : "FLOP/cycle/SM";
  {
    // Throughput: 1 CTA per SM of 2 warpgroups (each with its own accumulator, so
    // one warpgroup's wait overlaps the other's issue); batches of 4, wait_group 1.
    constexpr int kWarpgroups = 2, kBatch = 4, kIters = 4096;
    const int threads = 128 * kWarpgroups, blocks = g.sms;
    Probes probes(blocks);
    auto launch = [&] {
      wgmma_kernel<Op, kBatch, 1><<<blocks, threads>>>(static_cast<typename Op::Acc*>(out), kIters,
                                                       probes.dev);
    };
    double ms = time_launches(launch, 5);
    double flops = Op::kFlops * double(kBatch) * kIters * kWarpgroups * blocks;
    char cond[256];
    std::snprintf(cond, sizeof cond,
                  "ctas=%d,warpgroups_per_sm=%d,batch=%d,wait_group=1,iters=%d,smem_desc_no_swizzle,"
                  "operands=zero",
                  blocks, kWarpgroups, kBatch, kIters);
    report_rate(Op::kName, flops, ms, probes, g.sms, unit_t, unit_c, cond);
  }
  {
    // Latency: 1 warpgroup, each wgmma followed by commit + wait_group 0.
    constexpr int kLatIters = 1024;
    Probes probes(1);
    wgmma_kernel<Op, 1, 0><<<1, 128>>>(static_cast<typename Op::Acc*>(out), kLatIters, probes.dev);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    ClockProbe p{};
    CHECK(cudaMemcpy(&p, probes.dev, sizeof p, cudaMemcpyDeviceToHost));
    char cond[128];
    std::snprintf(cond, sizeof cond, "warpgroups=1,commit_wait0_each,iters=%d,operands=zero",
                  kLatIters);
    result((std::string(Op::kName) + ".latency").c_str(), double(p.cycles) / kLatIters, "cycles",
           cond);
  }
}

int main() {
  Gpu g = query_gpu();
  std::printf("# operands: all zero (A, B and initial accumulators)\n");
  // Zeroed operand source for mma.sync fragments, and a sink big enough for every kernel's output.
  void* zeros = nullptr;
  void* out = nullptr;
  CHECK(cudaMalloc(&zeros, 64));
  CHECK(cudaMemset(zeros, 0, 64));
  CHECK(cudaMalloc(&out, size_t(g.sms) * 256 * sizeof(double)));

  bench_mma<MmaF16F32>(g, zeros, out);
  bench_mma<MmaF16F16>(g, zeros, out);
  bench_mma<MmaBf16F32>(g, zeros, out);
  bench_mma<MmaTf32F32>(g, zeros, out);
  bench_mma<MmaS8S32>(g, zeros, out);
  bench_mma<MmaE4m3F32>(g, zeros, out);
  bench_mma<MmaF64>(g, zeros, out);

  bench_wgmma<Wgmma_f16_n64_ss>(g, out);
  bench_wgmma<Wgmma_f16_n128_ss>(g, out);
  bench_wgmma<Wgmma_f16_n256_ss>(g, out);
  bench_wgmma<Wgmma_bf16_n64_ss>(g, out);
  bench_wgmma<Wgmma_bf16_n256_ss>(g, out);
  bench_wgmma<Wgmma_tf32_n64_ss>(g, out);
  bench_wgmma<Wgmma_tf32_n256_ss>(g, out);
  bench_wgmma<Wgmma_e4m3_n64_ss>(g, out);
  bench_wgmma<Wgmma_e4m3_n256_ss>(g, out);
  bench_wgmma<Wgmma_s8_n64_ss>(g, out);
  bench_wgmma<Wgmma_s8_n256_ss>(g, out);
  bench_wgmma<Wgmma_f16_n256_rs>(g, out);

  CHECK(cudaFree(zeros));
  CHECK(cudaFree(out));
  std::printf("# tensor_bench done\n");
  return 0;
}
