#!/bin/bash
# Stands in for `warpsim sweep run-jobs RUN_DIR NAME...` in the Slurm cluster tests (test_slurm_cluster.cpp): for
# each job it appends one line (the array task that ran it) to RUN_DIR/jobs/NAME/done. When RUN_DIR/stub-sleep
# holds N, it first sleeps N seconds per job (RUN_DIR/jobs/NAME/started tells it began), and on SIGTERM marks the current job unfinished and exits 143, as
# run-jobs does.
set -u
if [[ "${1:-}" != sweep || "${2:-}" != run-jobs || $# -lt 4 ]]; then
  echo "stub_run_jobs: expected: sweep run-jobs RUN_DIR NAME..., got: $*" >&2; exit 2
fi
run_dir=$3
shift 3
current=""
trap '[[ -n $current ]] && echo "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" >> "$run_dir/jobs/$current/unfinished"; exit 143' TERM INT
for name in "$@"; do
  [[ -d "$run_dir/jobs/$name" ]] || { echo "stub_run_jobs: no job directory $run_dir/jobs/$name" >&2; exit 2; }
  current=$name
  touch "$run_dir/jobs/$name/started"  # from here on a SIGTERM marks it unfinished
  if [[ -f "$run_dir/stub-sleep" ]]; then
    sleep "$(< "$run_dir/stub-sleep")" &
    wait $!
  fi
  echo "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" >> "$run_dir/jobs/$name/done"
done
