#!/usr/bin/env bash
# A real single-node Slurm cluster for the Slurm tests (tests/test_slurm.py, `make slurm`): Debian's slurm-wlm
# and munge, one node with 2 CPUs, a `cpu` partition (the default) and a `gpu` partition. As root, like
# ci/postgres.sh: used by .ci/run; safe to run twice.
#
#   ci/slurm.sh start   installs slurm-wlm + munge if missing, writes slurm.conf and cgroup.conf under
#                       $LABS_SLURM_DIR (default /var/lib/labs-slurm), starts munged (unless one runs),
#                       slurmctld and slurmd, waits until `sinfo` shows the node idle, and prints
#                       `export SLURM_CONF=...` (what every Slurm command needs to reach this cluster) on stdout;
#                       how the tasks are tracked and confined goes to stderr.
#   ci/slurm.sh stop    stops the daemons it started (munged only if it started it); leaves none behind.
#
# Tracking: proctrack/cgroup + task/cgroup (v1 or v2, autodetected; on the CI VM v1: every job step in
# /sys/fs/cgroup/*/slurm_NODE/...) where slurmd can use them here, checked by running one job; else
# proctrack/linuxproc + task/none (v2 without systemd, a container hiding the cgroups), said on stderr.
# LABS_SLURM_CGROUP=0 skips the cgroup attempt.
#
# The `gpu` partition: on a machine with NVIDIA devices (/dev/nvidia0 ...) the node gets Gres=gpu:N (gres.conf
# lists the device files) and the partition is UP, so `sbatch -p gpu --gres=gpu:1` runs; without a GPU it is
# defined DOWN (no node has a gpu gres), so jobs sent there wait instead of running on a CPU, and sinfo shows why.
set -euo pipefail

DIR=${LABS_SLURM_DIR:-/var/lib/labs-slurm}
CONF=$DIR/etc/slurm.conf
say() { echo "ci/slurm.sh: $*" >&2; }

stop_pidfile() {  # kill the daemon whose pid is in $1, wait until it is gone
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

stop() {
  if [ -f "$CONF" ] && [ -f "$DIR/run/slurmctld.pid" ]; then  # cancel what is left so no slurmstepd outlives slurmd
    SLURM_CONF=$CONF timeout 10 scancel --quiet --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(SLURM_CONF=$CONF timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2
    done
  fi
  stop_pidfile "$DIR/run/slurmd.pid"
  stop_pidfile "$DIR/run/slurmctld.pid"
  local step
  for step in $(pgrep -x slurmstepd || true); do  # ours only: a step of this cluster's spool folder
    grep -qs -- "$DIR" "/proc/$step/cmdline" /proc/"$step"/environ && kill -9 "$step" 2>/dev/null || true
  done
  if [ -f "$DIR/run/munged.started" ]; then
    stop_pidfile /run/munge/munged.pid
    rm -f "$DIR/run/munged.started"
  fi
  say "stopped"
}

write_conf() {  # $1: cgroup | linuxproc
  local host cpus memory gpus gres="" gpu_state=DOWN
  host=$(hostname -s)
  cpus=${LABS_SLURM_CPUS:-2}
  memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))  # MiB, leaving the system some
  gpus=$(find /dev -maxdepth 1 -name 'nvidia[0-9]*' 2>/dev/null | sort -V)
  mkdir -p "$DIR/etc" "$DIR/run" "$DIR/log" "$DIR/ctld" "$DIR/slurmd"
  if [ -n "$gpus" ]; then
    gres="Gres=gpu:$(echo "$gpus" | wc -l)"
    gpu_state=UP
    echo "$gpus" | sed 's/^/Name=gpu File=/' >"$DIR/etc/gres.conf"
  else
    : >"$DIR/etc/gres.conf"
  fi
  if [ "$1" = cgroup ]; then
    track="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup"
  else
    track="ProctrackType=proctrack/linuxproc
TaskPlugin=task/none"
  fi
  cat >"$CONF" <<EOF
# Written by ci/slurm.sh: a single-node cluster for tests/test_slurm.py.
ClusterName=labs
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
$track
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldPort=${LABS_SLURMCTLD_PORT:-6817}
SlurmdPort=${LABS_SLURMD_PORT:-6818}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
# Fast turnaround for tests: a cancelled task is killed 2 s after SIGTERM; a finished job stays visible to
# scontrol/squeue for 5 minutes (there is no accounting database, so no sacct).
KillWait=2
MinJobAge=300
InactiveLimit=0
SchedulerParameters=sched_interval=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory $gres State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
# GPU jobs: sbatch -p gpu --gres=gpu:1 (the notebooks get --device cuda: ci/slurm/course.sbatch). On a cluster,
# its GPU nodes carry Gres=gpu:N in their NodeName line and list their devices in gres.conf. Here: $gpu_state
# ($( [ -n "$gres" ] && echo "$gres on this node" || echo "no NVIDIA device on this node, so the partition is DOWN"))
PartitionName=gpu Nodes=$host Default=NO MaxTime=INFINITE State=$gpu_state
EOF
  cat >"$DIR/etc/cgroup.conf" <<EOF
# Written by ci/slurm.sh (used with proctrack/cgroup and task/cgroup).
CgroupPlugin=autodetect
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainDevices=no
EOF
}

start_munge() {
  if [ -S /run/munge/munge.socket.2 ] && munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    return 0  # someone else's munged answers: use it, and leave it running on stop
  fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge /etc/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged
  touch "$DIR/run/munged.started"
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0; sleep 0.1; done
  say "munged did not start"; return 1
}

wait_idle() {  # the node is idle (or mixed/allocated) within $1 seconds
  local state
  for _ in $(seq $(( $1 * 5 ))); do
    state=$(SLURM_CONF=$CONF sinfo -h -N -p cpu -o %T 2>/dev/null | head -n1 || true)
    case "$state" in idle|mixed|allocated) return 0 ;; esac
    sleep 0.2
  done
  say "node state: ${state:-none} (logs: $DIR/log)"; return 1
}

start_slurm() {  # $1: cgroup | linuxproc; 0 when the node is idle and one job ran
  write_conf "$1"
  stop_pidfile "$DIR/run/slurmd.pid"
  stop_pidfile "$DIR/run/slurmctld.pid"
  slurmctld -f "$CONF" -i  # -i: ignore saved state (a fresh cluster each start)
  slurmd -f "$CONF" || return 1
  wait_idle 30 || return 1
  SLURM_CONF=$CONF timeout 60 srun -p cpu -t 1 -Q true 2>>"$DIR/log/srun-check.log"
}

start() {
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null; }
  fi
  mkdir -p "$DIR/run"
  if [ -f "$CONF" ] && [ -f "$DIR/run/slurmctld.pid" ] && kill -0 "$(cat "$DIR/run/slurmctld.pid")" 2>/dev/null \
      && wait_idle 5 2>/dev/null; then
    say "already running ($(grep -o 'proctrack/[a-z]*' "$CONF"))"
    echo "export SLURM_CONF=$CONF"
    return 0
  fi
  start_munge
  local how=linuxproc
  if [ "${LABS_SLURM_CGROUP:-1}" != 0 ] && start_slurm cgroup; then
    how=cgroup
  else
    [ "${LABS_SLURM_CGROUP:-1}" != 0 ] && say "proctrack/cgroup did not work here (logs: $DIR/log): linuxproc instead"
    start_slurm linuxproc || { say "slurm did not start (logs: $DIR/log)"; stop; exit 1; }
  fi
  say "cluster 'labs' up: node $(hostname -s), partitions: $(SLURM_CONF=$CONF sinfo -h -o '%P %a' | tr '\n' ' ')"
  if [ "$how" = cgroup ]; then
    say "tasks tracked and confined by cgroups (proctrack/cgroup, task/cgroup; $( [ -f /sys/fs/cgroup/cgroup.controllers ] && echo v2 || echo v1))"
  else
    say "tasks tracked by proctrack/linuxproc (no cgroup confinement: task/none)"
  fi
  say "reach it with: export SLURM_CONF=$CONF; sinfo; sbatch ...; stop it with: ci/slurm.sh stop"
  echo "export SLURM_CONF=$CONF"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: ci/slurm.sh start|stop" >&2; exit 2 ;;
esac
