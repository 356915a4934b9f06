#!/usr/bin/env bash
# ASan + UBSan run of the fast tests, and a short run of every fuzz harness, in one clang build (build-asan/):
# the unit tests, the integration tests that take seconds, and tools/fuzz.sh's harnesses for FUZZ_RUNS
# executions each (default 3000, seeded: the same executions every time, so CI does not fail at random).
# Part of CI (.ci/run); takes ~10 minutes on 2 cores, most of it compiling.
#
#   tools/sanitize.sh          everything
#   FUZZ_RUNS=0 tools/sanitize.sh    the sanitized tests only
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ > /dev/null || { echo "sanitize.sh: clang++ is needed (tools/deps.sh installs it)"; exit 2; }
# Line tables only: the sanitizers' stack traces keep their files and lines, and the build (most of this script's
# time) takes ~20% less CPU than with full debug information. The test sources at -O0: a third of their compile
# time at -O2 under the sanitizers, for a slower run of the unit tests (the libraries stay at -O2, but the linker
# may keep the test objects' -O0 copies of inline functions): 12.3 instead of 13.8 minutes in all.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
      -DWARPSIM_TEST_COMPILE_OPTIONS=-O0 -DCMAKE_CXX_COMPILER=clang++ -DWARPSIM_SANITIZE=ON -DWARPSIM_FUZZ=ON -DWARPSIM_TESTS=ON -DWARPSIM_UNITY_BUILD=ON > /dev/null
cmake --build build-asan -j"$(nproc)"
# Every finding is fatal; UBSan's reports abort too.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Slow under the sanitizers and covered by the plain run: full-size GEMMs, calibration, the golden runs, and the
# full-size attention, softmax, stream and captured-trace runs, the llm command's prefill, boost and data-parallel
# runs, the speed-of-light streams, SM subsetting's full-GPU comparisons, the second DRAM model, stream-K and the
# persistent-against-one-CTA-per-tile H100 GEMMs (each 3-9x its plain time under ASan, 17-137 s; the readers, synthesizers and components they use keep small sanitized
# tests and fuzz harnesses), and the split-K and 30522-column GEMM structure tests (30-43 s each under ASan; the
# sm_90 persistent structure test, the same generator, stays).
# The memory-estimate check compares with peak RSS, which ASan inflates; the kill loop times plain runs. The Slurm
# cluster tests need the cluster .ci/run starts for the plain build. The report tests rasterize through librsvg,
# pango and fontconfig, whose process-lifetime caches LeakSanitizer may count as leaks.
slow='default Llama|twice|a100 GEMM time|roofline|truncated and bit-flipped|split-K decode 64x8192|GEMV-like|deterministic|golden|readme|install|plot|configs_cite|peak RSS|survive_kills|accelsim: the shared traces|attention decode is bounded|a large softmax|stream read is within|fa2 forward and backward|bert-small trace imports|bounded by the GPC crossbar ports|slurm cluster|slurm_cluster|GEMM in the same time|16-row decode GEMM keeps|sweep sensitivity|a per-copy cost bounds|far-partition hit|sweep report|report_renders|beats fa2 on the same problem|fa3 forward in fp8 on H100|Hopper-native attention kernel|reads it from DRAM once|bounded by the slices. flit input|over an fp8 KV cache is faster|an LLM step sweeps|prefill writes TTFT|llm boost|from DRAM TMA reaches|A second DRAM implementation|a grid whose rows differ|stream-K recovers|data-parallel ranks multiply|speed of light: a stream|a memory-bound stream on half|a GEMM on half the GPU|overlaps each tile|one pass of the whole GPU|gemm split-K, parallel|gemm split-K, atomic|vocabulary projection of 30522 columns'
(cd build-asan && ctest -j"$(nproc)" --output-on-failure -E "$slow")
if [[ "${FUZZ_RUNS:-3000}" != 0 ]]; then
  FUZZ_BUILD=build-asan tools/fuzz.sh -runs="${FUZZ_RUNS:-3000}"  # the harnesses of this same build
fi
