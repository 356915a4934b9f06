#!/usr/bin/env bash
# One pass of the real-GPU measurements that feed warpsim's reference files, bounded in time so that it fits one
# device call: PyTorch kernel timings, an Nsight Compute export of a few kernels, a profiler trace of a
# random-weight Llama, (with `micro`) the CUDA microbenchmarks, (with `mem`) the memory-hierarchy benchmark
# mem_bench.cu and (with `memncu`) an Nsight Compute export of its stream, L2 and shared-memory kernels.
# Writes at most 8 files into OUT.
#
# With `attnprof`, per-kernel FlashAttention-2 forward/backward times from the PyTorch profiler (attn_profile.py); with
# `attnsass`, Nsight Compute's per-instruction SASS page (source counters, stall samples) of the FA2 forward and
# backward kernels, packed into attn_sass.tar.gz; with `clockncu`, the SM, L2 and DRAM clocks and the L2 traffic of
# small-M GEMMs in three clock states (ncu_probe.py clocks -> clock_ncu.csv); with `icache`, icache_bench.cu's
# cycles per line of straight-line code by code size (the instruction caches' capacity and miss cost).
#
#   tools/hw_bench/device_run.sh OUT [torch] [ncu] [llama] [micro] [mem] [memncu] [attnprof] [attnsass] [clockncu] [icache]
#                                                                                    (default: torch ncu llama)
# Clocks are measured as found (ncu --clock-control none): nothing here changes the GPU's settings.
set -uo pipefail
out=$1; shift
parts=("$@"); [[ ${#parts[@]} -gt 0 ]] || parts=(torch ncu llama)
here=$(cd "$(dirname "$0")" && pwd)
build=${HW_BENCH_BUILD:-/tmp/hw_bench_build}  # compiled benches (mem and memncu share mem_bench)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
# Nsight Compute on mem_bench --once (each configuration launched once): the stream read and copy kernels and
# the L2 read kernel at 8/16/24/40 MiB (6 launches) -> mem_ncu.csv; the 10 shared-memory kernels (bank
# conflicts, wavefronts) -> mem_ncu_smem.csv. If ncu rejects the full metric list, it is retried without the
# metrics `ncu --query-metrics` does not list, then with a core list.
memncu() {
  local bin=$build/mem_bench deadline=$((SECONDS + 200))  # the whole part stays within 200 s
  [ -x "$bin" ] || BUILD_ONLY=1 bash "$here/run_all.sh" "$build" mem_bench || return 1
  local want=(gpu__time_duration.sum dram__bytes_read.sum dram__bytes_write.sum
    dram__throughput.avg.pct_of_peak_sustained_elapsed lts__t_sectors.sum lts__t_sectors_srcunit_ltcfabric.sum
    lts__t_sectors_srcunit_tex.sum lts__throughput.avg.pct_of_peak_sustained_elapsed lts__t_sectors_op_read.sum
    lts__t_sectors_op_write.sum lts__t_sector_hit_rate.pct l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum l1tex__t_sector_hit_rate.pct
    sm__cycles_elapsed.avg.per_second gpc__cycles_elapsed.max)
  local full core=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,sm__cycles_elapsed.avg.per_second
  full=$(IFS=,; echo "${want[*]}")
  local known listed="" m
  known=$(timeout 30 ncu --query-metrics 2>/dev/null)
  for m in "${want[@]}"; do
    if [[ -z $known ]] || grep -qw -- "${m%%.*}" <<< "$known"; then listed+="${listed:+,}$m"
    else echo "# memncu: ncu --query-metrics does not list ${m%%.*}"; fi
  done
  run_ncu() {  # regex launch_count log_file mem_bench-args...; tries the full, the listed, the core metrics
    local metrics
    for metrics in "$full" "$listed" "$core"; do
      [[ $metrics == "$full" || $metrics != "$prev" ]] || continue
      prev=$metrics
      local left=$((deadline - SECONDS))
      ((left > 10)) || { echo "# memncu: out of time (200 s)"; return 1; }
      echo "# memncu: $1 with metrics $metrics"
      timeout "$left" ncu --csv --page raw --print-units base --clock-control none --kernel-name "regex:$1" \
        --launch-count "$2" --metrics "$metrics" --log-file "$3" "$bin" --once "${@:4}" && return 0
    done
    return 1
  }
  local rc=0 prev=""
  run_ncu '.*(stream_read|stream_copy|l2_read)_kernel.*' 6 "$out/mem_ncu.csv" hbm l2bw || rc=1
  prev=""
  run_ncu '.*smem_.*' 10 "$out/mem_ncu_smem.csv" --quick smem || rc=1
  return $rc
}

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
    icache)  # instruction-fetch probe, and the SASS layout it assumes (FFMAs per kernel)
      timeout 200 bash "$here/run_all.sh" "$build" icache_bench 2>&1 | tee "$out/icache_bench.txt"
      cuobjdump -sass "$build/icache_bench" 2>/dev/null | grep -cE "FFMA" | sed 's/^/# FFMA instructions in icache_bench: /' \
        | tee -a "$out/icache_bench.txt" ;;
    mem) timeout 300 bash "$here/run_all.sh" "$build" mem_bench 2>&1 | tee "$out/mem_bench.txt" ;;
    memncu) memncu ;;
    attnprof) timeout 200 python3 "$here/attn_profile.py" "$out" ;;
    attnsass)
      # one report per case: the forward and the main backward kernel, then their SASS pages as CSV
      sdir=$out/attn_sass; mkdir -p "$sdir"
      for c in "64 0 1024" "128 0 2048" "64 1 1024"; do
        set -- $c; tag=h$1_c$2_s$3
        timeout 150 ncu --clock-control none --profile-from-start off --kernel-name 'regex:flash_(fwd|bwd_dq_dk_dv)' \
          --launch-count 2 --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no \
          -o "$sdir/$tag" python3 "$here/ncu_probe.py" attn $1 $2 $3 || echo "# attnsass: ncu failed for $tag"
        [ -f "$sdir/$tag.ncu-rep" ] || continue
        ncu -i "$sdir/$tag.ncu-rep" --page source --print-source sass --csv > "$sdir/${tag}_sass.csv" 2>&1
        ncu -i "$sdir/$tag.ncu-rep" --page details --csv > "$sdir/${tag}_details.csv" 2>&1
        ncu -i "$sdir/$tag.ncu-rep" --page raw --csv --print-kernel-base mangled \
          --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread > "$sdir/${tag}_names.csv" 2>&1
        rm -f "$sdir/$tag.ncu-rep"
      done
      (cd "$out" && tar czf attn_sass.tar.gz attn_sass && rm -rf attn_sass) ;;
    clockncu)
      timeout 200 ncu --csv --page raw --print-units base --clock-control none --profile-from-start off \
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y \
        --log-file "$out/clock_ncu.csv" python3 "$here/ncu_probe.py" clocks ||
      timeout 120 ncu --csv --page raw --print-units base --clock-control none --profile-from-start off \
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second,dram__bytes_read.sum \
        --log-file "$out/clock_ncu_core.csv" python3 "$here/ncu_probe.py" clocks ;;
  esac
  echo "PART $p exit $? in $(( $(date +%s) - start )) s"
done
cd "$out" && ls clocks_*.csv > /dev/null 2>&1 && tar czf clocks.tar.gz clocks_*.csv && rm -f clocks_*.csv
ls -la "$out"
