#!/usr/bin/env bash
# Builds and runs the H100 microbenchmarks; prints "RESULT <id> <value> <unit> <conditions>" lines.
# Usage: tools/hw_bench/run_all.sh [build-dir]   (default: a fresh temporary directory)
# Each binary runs under `timeout 80`; a failure of either makes the script exit non-zero.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$(mktemp -d)}"
mkdir -p "$build"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
# -gencode compute_90a/sm_90a (not just -arch=sm_90a): with CUDA 13, -arch=sm_90a also
# embeds compute_90 PTX, which rejects the sm_90a-only wgmma instructions.
flags=(-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I"$here")
# tma_bench calls the driver API (cuTensorMapEncodeTiled): link libcuda through the toolkit's stub.
cuda_root="$(cd "$(dirname "$NVCC")/.." && pwd)"
driver_libs=(-L"$cuda_root/lib64/stubs" -L"$cuda_root/targets/x86_64-linux/lib/stubs" -lcuda)
status=0
for b in tensor_bench tma_bench; do
  extra=()
  [ "$b" = tma_bench ] && extra=("${driver_libs[@]}")
  if ! "$NVCC" "${flags[@]}" -o "$build/$b" "$here/$b.cu" "${extra[@]}"; then
    echo "ERROR: compiling $b failed" >&2
    exit 1
  fi
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null | sed 's/^/# nvidia-smi: /'
for b in tensor_bench tma_bench; do
  echo "# running $b"
  timeout 80 "$build/$b"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "ERROR: $b exited with status $rc (124 = killed by timeout 80)" >&2
    status=1
  fi
done
exit $status
