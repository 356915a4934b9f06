#!/usr/bin/env bash
# One pass of the real-GPU measurements that feed warpsim's reference files, bounded in time so that it fits one
# device call: PyTorch kernel timings, an Nsight Compute export of a few kernels, a profiler trace of a
# random-weight Llama, and (with `micro`) the CUDA microbenchmarks. Writes at most 8 files into OUT.
#
#   tools/hw_bench/device_run.sh OUT [torch] [ncu] [llama] [micro]     (default: torch ncu llama)
# Clocks are measured as found (ncu --clock-control none): nothing here changes the GPU's settings.
set -uo pipefail
out=$1; shift
parts=("$@"); [[ ${#parts[@]} -gt 0 ]] || parts=(torch ncu llama)
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
for p in "${parts[@]}"; do
  start=$(date +%s)
  case $p in
    torch) timeout 260 python3 "$here/torch_bench.py" "$out" ;;
    ncu)
      metrics=gpu__time_duration.sum,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,sm__inst_executed.avg.per_cycle_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
      timeout 200 ncu --csv --page raw --print-units base --clock-control none --profile-from-start off \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section LaunchStats --section Occupancy --metrics "$metrics" \
        --log-file "$out/ncu_h100.csv" python3 "$here/ncu_workload.py" ;;
    llama) timeout 200 python3 "$here/llama_profile.py" "$out" ;;
    micro) timeout 200 bash "$here/run_all.sh" 2>&1 | tee "$out/microbench.txt" ;;
  esac
  echo "PART $p exit $? in $(( $(date +%s) - start )) s"
done
cd "$out" && ls clocks_*.csv > /dev/null 2>&1 && tar czf clocks.tar.gz clocks_*.csv && rm -f clocks_*.csv
ls -la "$out"
