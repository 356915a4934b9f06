#!/usr/bin/env bash
# Installs the Debian 12 packages warpsim needs to build and test. Idempotent: does nothing when all are present.
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config          # toolchain
  libsystemc-dev                            # SystemC 2.3.4 (C++17 ABI), the clock-domain layer
  libboost-dev libboost-program-options-dev # Boost: CLI parsing, small containers
  libyaml-cpp-dev                           # GPU configs
  libspdlog-dev libfmt-dev                  # logging and formatting
  nlohmann-json3-dev                        # stats.json: writing, and reading back (compare)
  catch2                                    # tests (v2)
  clang                                     # fuzz harnesses (libFuzzer) and the sanitized test build
  libzstd-dev                               # trace compression
  liblzma-dev                               # reading Accel-Sim .traceg.xz traces (decompressed on the fly)
  zlib1g-dev                                # reading gzip-compressed Kineto (PyTorch profiler) traces
  xz-utils                                  # xz on the command line (compressing Accel-Sim traces)
  python3 python3-matplotlib                # tools/ scripts; plots (tools/stats/plot_stats.py)
  librsvg2-dev                              # warpsim report: its SVG plots rasterized to PNG (librsvg + cairo)
)
# --browser: also Chromium, which the report's render test (tools/render_report.py) drives headless; opt-in, as it
# is large and the test skips without it.
if [ "${1:-}" = "--browser" ]; then PACKAGES+=(chromium); fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "warpsim: installing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
