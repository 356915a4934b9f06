// Shared helpers for the H100 microbenchmarks: error checking, the in-kernel
// clock probe (SM cycles vs. globaltimer nanoseconds) and RESULT printing.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// Every CUDA call is checked: a failure prints where and why and exits non-zero.
#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),    \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                     \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// Wait loops poll at most this many times, then give up and raise the error flag,
// so a wrong barrier phase or byte count cannot hang the GPU.
constexpr unsigned long long kMaxPolls = 1ull << 26;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Per-CTA clock probe: thread 0 records SM cycles and globaltimer ns at the start
// and end of the timed region; cycles/ns over the kernel is the effective SM clock.
// smid records where the CTA ran, so the host can check that every SM took part.
struct ClockProbe {
  unsigned long long cycles;
  unsigned long long ns;
  unsigned smid;
};

__device__ __forceinline__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Mean effective SM clock in MHz over the CTAs that recorded a probe.
inline double effective_mhz(const ClockProbe* probes, int n) {
  double cyc = 0, ns = 0;
  for (int i = 0; i < n; ++i) {
    cyc += double(probes[i].cycles);
    ns += double(probes[i].ns);
  }
  return ns > 0 ? 1000.0 * cyc / ns : 0.0;
}

inline void result(const char* id, double value, const char* unit, const char* conditions) {
  std::printf("RESULT %s %.6g %s %s\n", id, value, unit, conditions);
  std::fflush(stdout);
}

// Times `launch` (one kernel launch) with cudaEvents: one warm-up, then `reps` launches; ms per launch.
template <class F>
inline double time_launches(F launch, int reps) {
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventRecord(e0));
  for (int r = 0; r < reps; ++r) launch();
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return double(ms) / reps;
}

// Device buffer of ClockProbe (one per CTA) with host copy.
struct Probes {
  ClockProbe* dev = nullptr;
  int n = 0;
  explicit Probes(int count) : n(count) {
    CHECK(cudaMalloc(&dev, sizeof(ClockProbe) * count));
    CHECK(cudaMemset(dev, 0, sizeof(ClockProbe) * count));
  }
  ~Probes() { cudaFree(dev); }
  double mhz() const {
    ClockProbe* host = static_cast<ClockProbe*>(std::malloc(sizeof(ClockProbe) * n));
    CHECK(cudaMemcpy(host, dev, sizeof(ClockProbe) * n, cudaMemcpyDeviceToHost));
    double m = effective_mhz(host, n);
    std::free(host);
    return m;
  }
  // Number of distinct SMs the CTAs ran on (throughput per SM assumes all of them).
  int distinct_sms() const {
    ClockProbe* host = static_cast<ClockProbe*>(std::malloc(sizeof(ClockProbe) * n));
    CHECK(cudaMemcpy(host, dev, sizeof(ClockProbe) * n, cudaMemcpyDeviceToHost));
    bool seen[1024] = {};
    int count = 0;
    for (int i = 0; i < n; ++i) {
      unsigned id = host[i].smid;
      if (id < 1024 && !seen[id]) {
        seen[id] = true;
        ++count;
      }
    }
    std::free(host);
    return count;
  }
};

// Error flag set by a device wait loop that ran out of polls.
inline void check_timeout_flag(const unsigned* dev_flag, const char* what) {
  unsigned flag = 0;
  CHECK(cudaMemcpy(&flag, dev_flag, sizeof flag, cudaMemcpyDeviceToHost));
  if (flag) {
    std::fprintf(stderr, "ERROR: %s: a wait loop gave up after %llu polls (barrier never completed)\n",
                 what, kMaxPolls);
    std::exit(1);
  }
}
