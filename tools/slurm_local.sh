#!/usr/bin/env bash
# A one-node Slurm cluster on localhost, for the tests of warpsim's Slurm backend (CI) and for trying
# `warpsim sweep submit --backend slurm` without a real cluster. No systemd: a private munged and slurmctld +
# slurmd run from DIR (default /tmp/warpsim-slurm), and `stop` ends exactly those daemons, by the process ids
# that `start` recorded. Recipe and pitfalls: ../shared/docs/LOCAL-SLURM.md.
#
#   tools/slurm_local.sh start [--no-install] [DIR]   install Debian's slurmctld, slurmd, slurm-client and munge if
#                                                      missing (root, apt), start, wait until the node is idle
#   tools/slurm_local.sh stop [DIR]                    cancel its jobs, stop its daemons
#   tools/slurm_local.sh status [DIR]                  exit 0 when its daemons run and the node answers
#   source DIR/env                                     then sbatch, squeue, sinfo, scancel talk to this cluster
#
# Both start and stop are idempotent: starting a running cluster says "already running" and changes nothing.
# Exit status: 0 done; 3 Slurm is not installed and cannot be (not root, no apt, or --no-install): callers such as
# the tests treat that as "no cluster here" and skip; 1 any other failure (the daemons' log tails are printed).
# Environment: SLURM_LOCAL_PORT_BASE (default 6817: slurmctld on it, slurmd on the next port), SLURM_LOCAL_TIMEOUT
# (seconds to wait for the node, default 30).
set -euo pipefail

usage() { echo "usage: $0 start [--no-install] [DIR] | stop [DIR] | status [DIR]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
action=$1; shift
install=1
if [[ "$action" == start && "${1:-}" == --no-install ]]; then install=0; shift; fi
[[ $# -le 1 ]] || usage
D=${1:-/tmp/warpsim-slurm}
[[ "$D" == /* ]] || D="$PWD/$D"
M=$D/munge
CONF=$D/etc/slurm.conf
PORT_BASE=${SLURM_LOCAL_PORT_BASE:-6817}
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-30}
DAEMONS=(slurmd slurmctld munged)  # stop order does not matter (all get SIGTERM together), start order is reversed

say() { echo "slurm_local: $*" >&2; }

# The pid recorded for daemon $1, if that process is alive and still is that daemon (a recycled pid is not ours).
live_pid() {
  local f=$D/run/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ "$(cat /proc/"$pid"/comm 2>/dev/null)" == "$1" ]] || return 1
  echo "$pid"
}

node_state() { SLURM_CONF=$CONF timeout 5 sinfo -h -N -o %t 2>/dev/null | head -n1; }

show_logs() {
  local f
  for f in "$D"/log/slurmctld.log "$D"/log/slurmd.log "$D"/log/slurmctld.out "$D"/log/slurmd.out "$M"/log/munged.log; do
    [[ -s $f ]] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }
  done
  SLURM_CONF=$CONF timeout 5 sinfo -R >&2 2>/dev/null || true
}

stop_cluster() {
  local pids=() d pid
  # Cancel the jobs first, so that no slurmstepd outlives its slurmd.
  if pid=$(live_pid slurmctld); then
    local jobs
    jobs=$(SLURM_CONF=$CONF timeout 5 squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ' || true)
    if [[ -n "${jobs// /}" ]]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$CONF timeout 5 scancel $jobs 2>/dev/null || true
      for _ in $(seq 50); do
        [[ -z "$(SLURM_CONF=$CONF timeout 5 squeue -h 2>/dev/null || true)" ]] && break
        sleep 0.1
      done
    fi
  fi
  for d in "${DAEMONS[@]}"; do
    if pid=$(live_pid "$d"); then pids+=("$pid"); fi
  done
  if [[ ${#pids[@]} -gt 0 ]]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 100); do  # each daemon takes about 2 s after SIGTERM
      local alive=0
      for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null; done
    say "stopped ${#pids[@]} daemon(s) (pids ${pids[*]}) of $D"
  else
    say "nothing running in $D"
  fi
  for d in "${DAEMONS[@]}"; do rm -f "$D/run/$d.pid"; done
}

running() {
  local d
  for d in "${DAEMONS[@]}"; do live_pid "$d" > /dev/null || return 1; done
  [[ "$(node_state)" =~ ^(idle|alloc|mix|comp) ]]
}

install_packages() {
  local missing=0 c
  for c in slurmctld slurmd sbatch munged mungekey; do command -v "$c" > /dev/null || missing=1; done
  [[ $missing == 0 ]] && return 0
  if [[ $install == 0 ]]; then say "Slurm or munge is not installed (and --no-install)"; exit 3; fi
  if [[ $(id -u) != 0 ]] || ! command -v apt-get > /dev/null; then
    say "Slurm or munge is not installed, and installing it needs root and apt-get"; exit 3
  fi
  say "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get -q update > /dev/null &&
         apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=120 \
           slurmctld slurmd slurm-client munge > /dev/null; }; then
    say "apt-get could not install slurmctld slurmd slurm-client munge"; exit 3
  fi
}

write_conf() {
  local host cpus mem
  # The controller must be named as this host's short name, but that name need not resolve (CI runners):
  # every daemon is given 127.0.0.1 as its address.
  host=$(hostname -s 2>/dev/null || hostname)
  # CPUs and memory as slurmd sees them: declaring more makes the node INVAL and jobs pend forever.
  local probe
  probe=$(slurmd -C 2>/dev/null | head -n1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<< "$probe")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<< "$probe")
  [[ -n "$cpus" && -n "$mem" ]] || { say "slurmd -C did not report CPUs and RealMemory: '$probe'"; exit 1; }
  mem=$((mem * 9 / 10))
  cat > "$CONF" << EOF
# Written by tools/slurm_local.sh: a private one-node cluster; see ../shared/docs/LOCAL-SLURM.md
ClusterName=warpsimlocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT_BASE
SlurmdPort=$((PORT_BASE + 1))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$M/run/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.daemon.pid
SlurmdPidFile=$D/run/slurmd.daemon.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MaxArraySize=10001
MaxJobCount=100000
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  echo "$host"
}

start_cluster() {
  if running; then say "already running in $D (source $D/env)"; return 0; fi
  stop_cluster 2> /dev/null  # whatever is left of an earlier start
  install_packages
  local t0=$SECONDS host
  # A stale state directory remembers drained nodes and old jobs: every start is a fresh cluster.
  rm -rf "$D/state" "$D/spool" "$D/log" "$M"
  mkdir -p "$D"/{etc,state,spool,log,run} "$M"/{etc,run,log,lib}
  # munged's rules: the socket's directory world-searchable, the key, log and seed directories 0700 and its own.
  chown -R munge:munge "$M"; chmod 755 "$M" "$M/run"; chmod 700 "$M/etc" "$M/log" "$M/lib"
  runuser -u munge -- mungekey -c -k "$M/etc/munge.key"
  # `cmd &` then $!: the daemon's own pid even when it dies before writing a pid file (-F/-D: no daemonizing).
  setsid setpriv --reuid=munge --regid=munge --init-groups munged -F -S "$M/run/munge.socket" \
    --key-file="$M/etc/munge.key" --log-file="$M/log/munged.log" --pid-file="$M/run/munged.pid" \
    --seed-file="$M/lib/munged.seed" < /dev/null >> "$D/log/munged.out" 2>&1 &
  echo $! > "$D/run/munged.pid"
  local ok=0
  for _ in $(seq 50); do
    if munge -S "$M/run/munge.socket" -n 2>/dev/null | unmunge -S "$M/run/munge.socket" > /dev/null 2>&1; then ok=1; break; fi
    sleep 0.1
  done
  if [[ $ok == 0 ]]; then say "munged did not answer"; show_logs; stop_cluster; exit 1; fi
  host=$(write_conf) || { show_logs; stop_cluster; exit 1; }
  echo "export SLURM_CONF=$CONF" > "$D/env"
  setsid slurmctld -D -f "$CONF" < /dev/null >> "$D/log/slurmctld.out" 2>&1 &
  echo $! > "$D/run/slurmctld.pid"
  setsid slurmd -D -f "$CONF" -N "$host" < /dev/null >> "$D/log/slurmd.out" 2>&1 &
  echo $! > "$D/run/slurmd.pid"
  local state=""
  for _ in $(seq $((TIMEOUT * 5))); do
    state=$(node_state || true)
    [[ "$state" == idle ]] && break
    sleep 0.2
  done
  if [[ "$state" != idle ]]; then
    say "the node is not idle after ${TIMEOUT} s (state: '${state:-no answer}'); daemons' logs:"
    show_logs; stop_cluster; exit 1
  fi
  say "cluster up in $((SECONDS - t0)) s (node $host idle); source $D/env"
}

case "$action" in
  start) start_cluster ;;
  stop) stop_cluster ;;
  status)
    if running; then
      say "running in $D: node $(node_state)"; SLURM_CONF=$CONF sinfo; exit 0
    fi
    say "not running in $D"; exit 1 ;;
  *) usage ;;
esac
