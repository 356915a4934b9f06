#!/usr/bin/env bash
# First command of the README: installs the Debian packages warpsim needs, builds it (Release, both cores),
# and runs a simulation on built-in defaults (H100 SXM, Llama-3-8B MLP GEMM). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
echo
./build/warpsim run --out build/warpsim-out
