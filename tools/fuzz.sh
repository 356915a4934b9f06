#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang, ASan and UBSan into build-fuzz/, and runs each on its
# seed corpus (tests/fuzz/corpus/<kind>) for a time or a number of executions. New inputs go to a scratch
# corpus, not into the repository; a crash leaves its reproducer in build-fuzz/findings/.
#
#   tools/fuzz.sh                     every harness, 20 s each (what CI runs)
#   tools/fuzz.sh 600                 every harness, 10 minutes each
#   tools/fuzz.sh -runs=1000000 fuzz_trace_reader    one harness, a million executions
#
# Prints libFuzzer's last status line per harness (executions, coverage); exits non-zero on a finding.
# The mutation sequence is seeded (FUZZ_SEED, default 1), so a run of a given -runs count is repeatable;
# long exploratory runs should vary it.
set -euo pipefail
cd "$(dirname "$0")/.."
limit="-max_total_time=20"
if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then limit="-max_total_time=$1"; shift; fi
if [[ $# -gt 0 && "$1" == -runs=* ]]; then limit="$1"; shift; fi
harnesses=("$@")
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=(fuzz_trace_reader fuzz_accelsim_trace fuzz_config fuzz_simulate fuzz_reference fuzz_ncu_csv fuzz_kineto fuzz_llm_model)

command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ is needed (apt-get install clang)"; exit 2; }
build=${FUZZ_BUILD:-build-fuzz}  # tools/sanitize.sh passes its own sanitized build
if [[ "$build" == build-fuzz ]]; then
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
        -DWARPSIM_FUZZ=ON -DWARPSIM_SANITIZE=ON -DWARPSIM_TESTS=OFF > /dev/null
fi
cmake --build "$build" -j"$(nproc)" --target "${harnesses[@]}" > /dev/null

declare -A corpus=([fuzz_trace_reader]=trace [fuzz_accelsim_trace]=accelsim [fuzz_simulate]=trace [fuzz_config]=config [fuzz_reference]=reference
                   [fuzz_ncu_csv]=ncu [fuzz_kineto]=kineto [fuzz_llm_model]=llm_model)
mkdir -p "$build/findings"
status=0
for h in "${harnesses[@]}"; do
  scratch=$(mktemp -d)
  log=$build/$h.log
  # ASan's periodic return of freed memory to the OS (madvise) stalled single units past the timeout on a loaded
  # machine (two "timeouts" whose inputs re-ran in 0.2-0.4 s, stuck in ReleaseFreeMemoryToOS): switched off, and
  # the timeout is a minute, far above any unit's real time, so that a finding is a hang, not a busy machine.
  if ! ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_release_to_os_interval_ms=-1" \
       "./$build/tests/fuzz/$h" "$limit" -seed="${FUZZ_SEED:-1}" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$build/findings/$h-" "$scratch" "tests/fuzz/corpus/${corpus[$h]}" > "$log" 2>&1; then
    echo "$h: FINDING (see $log and $build/findings/)"; tail -30 "$log"; status=1
  fi
  runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  echo "$h: $runs executions; $(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+' || true)"
  rm -rf "$scratch"
done
exit $status
