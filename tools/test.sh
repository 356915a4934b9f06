#!/usr/bin/env bash
# Second command of the README (and what CI runs): installs what is missing, builds everything including the
# tests, and runs the whole test suite with CTest. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DWARPSIM_TESTS=ON -DWARPSIM_UNITY_BUILD=ON
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
