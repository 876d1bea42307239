#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for `tessera-bench submit --tessctl --vs-sbatch`
# (docs/benchmarks.md): the rate of a script's loop of sbatch, measured beside tessctl's.
#
#   bench/slurm/one-node.sh start [DIR]   installs Debian's slurmctld, slurmd and munge when
#                                         missing, starts munged, slurmctld and slurmd with a
#                                         config in DIR (default: a new temporary directory),
#                                         and prints the SLURM_CONF line to export
#   bench/slurm/one-node.sh stop DIR      stops the daemons started with DIR
#
# Needs root (the daemons run as root, as in a one-machine test setup; munged as munge). No
# accounting database: slurmctld keeps its state in DIR/state, which it writes periodically, so
# an sbatch is acknowledged before it is on disk.
set -euo pipefail

usage() {
  echo "usage: $0 start [DIR] | stop DIR" >&2
  exit 2
}

start() {
  local dir="${1:-$(mktemp -d /tmp/tessera-slurm.XXXXXX)}"
  if ! command -v slurmctld >/dev/null || ! command -v sbatch >/dev/null ||
    ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge >&2
  fi
  mkdir -p "$dir/state" "$dir/spool" /run/munge
  chown munge:munge /run/munge
  [ -s /etc/munge/munge.key ] || runuser -u munge -- /usr/sbin/mungekey --create
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  local host
  host="$(hostname -s)"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=tessera-bench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MaxJobCount=1000000
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=bench Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  /usr/sbin/slurmctld -f "$dir/slurm.conf"
  /usr/sbin/slurmd -f "$dir/slurm.conf"
  for _ in $(seq 50); do
    if SLURM_CONF="$dir/slurm.conf" scontrol ping 2>/dev/null | grep -q UP; then
      echo "export SLURM_CONF=$dir/slurm.conf"
      return 0
    fi
    sleep 0.2
  done
  echo "slurmctld did not answer; see $dir/slurmctld.log" >&2
  return 1
}

stop() {
  local dir="$1"
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    [ -s "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null || true
  done
}

case "${1:-}" in
start) start "${2:-}" ;;
stop)
  [ -n "${2:-}" ] || usage
  stop "$2"
  ;;
*) usage ;;
esac
