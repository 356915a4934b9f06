#!/usr/bin/env bash
# Builds and runs the H100 microbenchmarks; prints "RESULT <id> <value> <unit> <conditions>" lines.
# Usage: tools/hw_bench/run_all.sh [build-dir] [bench ...]   (default: a fresh temporary directory;
#        benches: tensor_bench tma_bench mem_bench icache_bench, default tensor_bench tma_bench)
# Compiles and runs the chosen ones: tensor_bench and tma_bench under `timeout 80`, mem_bench
# under `timeout 240` (its arguments from MEM_BENCH_ARGS, e.g. "--quick"); BUILD_ONLY=1 compiles only.
# A failure of any makes the script exit non-zero.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$(mktemp -d)}"
mkdir -p "$build"
shift $(( $# > 0 ? 1 : 0 ))
benches=("$@"); [ ${#benches[@]} -gt 0 ] || benches=(tensor_bench tma_bench)
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
# -gencode compute_90a/sm_90a (not just -arch=sm_90a): with CUDA 13, -arch=sm_90a also
# embeds compute_90 PTX, which rejects the sm_90a-only wgmma instructions.
flags=(-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I"$here")
# tma_bench calls the driver API (cuTensorMapEncodeTiled): link libcuda through the toolkit's stub.
cuda_root="$(cd "$(dirname "$NVCC")/.." && pwd)"
driver_libs=(-L"$cuda_root/lib64/stubs" -L"$cuda_root/targets/x86_64-linux/lib/stubs" -lcuda)
status=0
for b in "${benches[@]}"; do
  case $b in tensor_bench | tma_bench | mem_bench | icache_bench) ;; *) echo "ERROR: unknown bench '$b'" >&2; exit 2 ;; esac
  extra=()
  [ "$b" = tma_bench ] && extra=("${driver_libs[@]}")
  if ! "$NVCC" "${flags[@]}" -o "$build/$b" "$here/$b.cu" "${extra[@]}"; then
    echo "ERROR: compiling $b failed" >&2
    exit 1
  fi
done
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null | sed 's/^/# nvidia-smi: /'
for b in "${benches[@]}"; do
  echo "# running $b"
  limit=80 args=()
  # shellcheck disable=SC2206  # MEM_BENCH_ARGS is a word list on purpose
  [ "$b" = mem_bench ] && limit=240 && args=(${MEM_BENCH_ARGS:-})
  timeout "$limit" "$build/$b" "${args[@]}"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "ERROR: $b exited with status $rc (124 = killed by timeout $limit)" >&2
    status=1
  fi
done
exit $status
