#!/usr/bin/env bash
# The README's main command: installs what is missing, builds tesserad and tessctl, starts the
# daemon on its embedded defaults (a small simulated cluster of 24 GPUs, SQLite under ./var,
# HTTP on 127.0.0.1:8080 or TESSERA_DEMO_PORT) and runs a demo workload through tessctl:
# training jobs, GPU-sharing notebooks, a gang that gets a reservation, and a high-priority job
# that goes first, then shows the queue and the cluster until the work is done (at most about a
# minute). The daemon is stopped with SIGTERM at the end.
# (The embedding example of the same library is scripts/fair-share-demo.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tesserad tessctl

port="${TESSERA_DEMO_PORT:-8080}"
mkdir -p var
config="var/demo-tesserad.yaml"
# Embedded defaults, except where the demo keeps its state and the port it listens on.
cat >"$config" <<YAML
server:
  listen: "127.0.0.1:${port}"
store:
  path: "var/demo-tesserad.db"
YAML
rm -f var/demo-tesserad.db var/demo-tesserad.db-wal var/demo-tesserad.db-shm

build/examples/daemon/tesserad --config "$config" >var/demo-tesserad.log 2>&1 &
daemon=$!
trap 'kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q "listening on" var/demo-tesserad.log 2>/dev/null && break
  sleep 0.1
done
if ! grep -q "listening on" var/demo-tesserad.log; then
  echo "demo: tesserad did not start:" >&2
  cat var/demo-tesserad.log >&2
  exit 1
fi
grep "listening on" var/demo-tesserad.log

export TESSERA_SERVER="http://127.0.0.1:${port}"
tessctl() { build/examples/cli/tessctl "$@"; }

echo
echo "== submitting: 24 training jobs, 8 notebooks sharing GPUs, a 2x4-GPU gang"
for _ in $(seq 1 24); do tessctl submit -f examples/demo/training.yaml >/dev/null; done
for _ in $(seq 1 8); do tessctl submit -f examples/demo/notebook.yaml >/dev/null; done
tessctl submit -f examples/demo/gang.yaml >/dev/null
sleep 1
tessctl nodes
echo
echo "== the cluster is full; a high-priority job arrives and goes first when GPUs free up"
urgent=$(tessctl submit -f examples/demo/urgent.json)
sleep 1
tessctl get "$urgent"
for round in $(seq 1 12); do
  sleep 5
  echo
  echo "== t+$((round * 5))s"
  tessctl queues
  left=$(tessctl ls --state PENDING --state ADMITTED --state STARTING --state RUNNING | tail -n +2 | wc -l)
  [ "$left" -eq 0 ] && break
done
echo
echo "== the gang and the urgent job"
tessctl ls | awk 'NR == 1 || /allreduce|urgent/'
echo
echo "== jobs by final state"
tessctl ls | tail -n +2 | awk '{print $4}' | sort | uniq -c
echo
echo "== an online backup of the store"
tessctl backup --quiet var/demo-backup.db
echo
echo "Demo done; the daemon's log is var/demo-tesserad.log, its store var/demo-tesserad.db, a"
echo "backup var/demo-backup.db (tessctl restore var/demo-backup.db --store ... puts it back)."
