#!/usr/bin/env bash
# Which L2 sub-unit bounds an all-SM L2 stream: Nsight Compute's breakdown of lts__throughput (every sub-metric it is
# the maximum of, in % of its peak) on mem_bench's L2 read/write and HBM read kernels, with the L2 and SM clocks.
#   tools/hw_bench/l2_breakdown.sh OUT        -> OUT/l2_breakdown.csv (ncu --csv --page raw)
set -uo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
build=${HW_BENCH_BUILD:-/tmp/hw_bench_build}
[ -x "$build/mem_bench" ] || BUILD_ONLY=1 bash "$here/run_all.sh" "$build" mem_bench || exit 1
common=(--csv --page raw --print-units base --clock-control none --kernel-name 'regex:(l2_read|l2_write|stream_read)_kernel'
        --launch-count 16 --log-file "$out/l2_breakdown.csv")
plain=gpu__time_duration.sum,lts__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg.per_second,lts__t_sectors.sum,lts__t_requests.sum,lts__d_sectors.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum
timeout 240 ncu "${common[@]}" --metrics "breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,$plain" \
  "$build/mem_bench" --once hbm l2bw ||
  timeout 120 ncu "${common[@]}" --metrics "lts__throughput.avg.pct_of_peak_sustained_elapsed,$plain" \
    "$build/mem_bench" --once hbm l2bw
