#!/usr/bin/env bash
# The issue's check of the Slurm backend, end to end with the real warpsim: one tiny sweep planned twice, run by the
# local pool and by Slurm job arrays on the one-node cluster of tools/slurm_local.sh, collects identical tables
# (apart from the wall-clock column); a second submit of the finished Slurm sweep runs nothing.
# Usage: sweep_local_vs_slurm.sh WARPSIM SOURCE_DIR. Exit 77 (skip) when no cluster can be started.
set -euo pipefail
warpsim=$1
source_dir=$2
cluster=${WARPSIM_SLURM_DIR:-/tmp/warpsim-slurm}
started=0
if ! bash "$source_dir/tools/slurm_local.sh" status "$cluster" > /dev/null 2>&1; then
  rc=0
  bash "$source_dir/tools/slurm_local.sh" start --no-install "$cluster" || rc=$?
  if [ "$rc" = 3 ]; then echo "warpsim-skip: no local Slurm (tools/slurm_local.sh start installs it)"; exit 77; fi
  [ "$rc" = 0 ] || exit "$rc"
  started=1
fi
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [ "$started" = 1 ]; then bash "$source_dir/tools/slurm_local.sh" stop "$cluster"; fi
}
trap cleanup EXIT
export SLURM_CONF=$cluster/etc/slurm.conf

cat > "$work/spec.yaml" <<SPEC
name: e2e
base: $source_dir/configs/h100_sxm.yaml
candidates:
  h100: {}
  more_sms: {set: {sm.count: 144}}
workloads:
  - synth: gemm
    m: [128, 256]
    n: 128
    k: 128
SPEC
"$warpsim" sweep plan "$work/spec.yaml" -o "$work/local" > /dev/null
"$warpsim" sweep plan "$work/spec.yaml" -o "$work/slurm" > /dev/null
"$warpsim" sweep submit "$work/local" --backend local -j 2 > /dev/null 2>&1
"$warpsim" sweep submit "$work/slurm" --backend slurm --jobs-per-task 2 --time 00:05:00 --mem 1G
# Submitting again while the arrays hold the jobs adds nothing: no job is queued twice.
"$warpsim" sweep submit "$work/slurm" --backend slurm --jobs-per-task 2 > /dev/null
arrays=$(ls "$work/slurm/slurm" | grep -c '^array-')
[ "$arrays" = 1 ] || { echo "a second submit of held jobs added arrays ($arrays)"; exit 1; }
for _ in $(seq 1 240); do
  if "$warpsim" sweep status "$work/slurm" | grep -q "no task of this sweep's arrays is queued or running"; then break; fi
  sleep 0.5
done
"$warpsim" sweep status "$work/slurm"
"$warpsim" sweep collect "$work/local" -o "$work/local.csv" > /dev/null
"$warpsim" sweep collect "$work/slurm" -o "$work/slurm.csv" > /dev/null
# Everything but wall_s (the column whose header is wall_s) must agree, row for row.
strip_wall() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "wall_s") w = i } { $w = ""; print }' OFS=, "$1"
}
rows=$(($(wc -l < "$work/local.csv") - 1))
[ "$rows" -ge 4 ] || { echo "expected at least 4 result rows, got $rows"; exit 1; }
if ! diff <(strip_wall "$work/local.csv") <(strip_wall "$work/slurm.csv"); then
  echo "local and Slurm results differ"; exit 1
fi
# Resubmitting the finished sweep submits nothing (no array is added).
before=$(ls "$work/slurm/slurm" | grep -c '^array-')
"$warpsim" sweep submit "$work/slurm" --backend slurm > /dev/null
after=$(ls "$work/slurm/slurm" | grep -c '^array-')
[ "$before" = "$after" ] || { echo "a finished sweep submitted again ($before -> $after arrays)"; exit 1; }
echo "local and Slurm: $rows identical rows; resubmit ran nothing"
