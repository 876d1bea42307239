#!/usr/bin/env bash
# Read-only checks on a machine with an NVIDIA GPU and its driver, to compare what the real
# driver says with the fake libnvidia-ml.so.1 the tests use (plugins/common/nvml/testing):
#   1. nvidia-smi: the GPUs, MIG mode, and the MIG profiles and placements (when MIG is on);
#   2. tessera-nvml-probe on the driver: the inventory as the local backend reads it (model,
#      memory, UUID, PCI, NVLink domain, MIG mode and instances) and NVML's profile table;
#   3. the same probe on the fake, set up as the same GPU models, and the differences between the
#      two profile tables (where the fake's model of this GPU is wrong);
#   4. the CUDA runtime's view (the local backend's fallback discovery) through a fake-free
#      tesserad with the local backend, `tessctl gpus`, and one real task launched with
#      CUDA_VISIBLE_DEVICES printing what it sees.
# It never changes MIG mode, creates or destroys instances, or resets a GPU: the local backend
# runs with mig_managed = none and mig_enable = none, and only nvidia-smi's listing commands are
# used. Steps whose binaries are missing are skipped with a note; with --build it first builds
# them (needs the project's dependencies installed: scripts/install-deps.sh).
#
#   scripts/device-check.sh [--build] [--out DIR]      # DIR default var/device-check
set -uo pipefail
cd "$(dirname "$0")/.."

build=0
out=var/device-check
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=1 ;;
    --out) out="$2"; shift ;;
    *) echo "usage: scripts/device-check.sh [--build] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
step() { echo; echo "== $*"; }

if [ "$build" = 1 ]; then
  step "building the probe, the fake driver, tesserad, tessctl and the local backend"
  cmake --preset default >/dev/null &&
    cmake --build --preset default --target tessera-nvml-probe tessera_fake_nvml tesserad \
      tessctl tessera_plugin_local
fi

step "nvidia-smi (read-only)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total,mig.mode.current,mig.mode.pending,temperature.gpu,power.draw,ecc.errors.uncorrected.volatile.total \
    --format=csv
  nvidia-smi topo -m 2>&1 | head -20
  nvidia-smi mig -lgip 2>&1 | head -40
  nvidia-smi mig -lgipp 2>&1 | head -40
  nvidia-smi mig -lgi 2>&1 | head -20
else
  echo "no nvidia-smi on PATH"
fi

probe=build/plugins/tools/tessera-nvml-probe
fake=build/plugins/testing/nvml/libnvidia-ml.so.1
step "tessera-nvml-probe on the driver"
# TESSERA_DEVICE_CHECK_NVML names another library as "the driver" (to try this script itself on
# the fake, where it must find no difference).
if [ -x "$probe" ]; then
  "$probe" --library "${TESSERA_DEVICE_CHECK_NVML:-libnvidia-ml.so.1}" | tee "$out/real.json"
else
  echo "skipped: no $probe (run with --build)"
fi

step "the same on the fake driver, as the same GPU models, and where the two differ"
if [ -x "$probe" ] && [ -f "$fake" ] && [ -s "$out/real.json" ]; then
  python3 - "$out/real.json" "$out/fake-state.json" <<'PY'
import json, sys
real = json.load(open(sys.argv[1]))
# The fake knows a GPU by the scheduler's model name and MIG mode; the rest keeps its defaults.
json.dump({"gpus": [{"model": g["model"], "mig_current": g["mig_current"],
                     "mig_pending": g["mig_pending"]} for g in real["gpus"]]},
          open(sys.argv[2], "w"))
PY
  TESSERA_FAKE_NVML_STATE="$out/fake-state.json" "$probe" --library "$fake" >"$out/fake.json"
  python3 - "$out/real.json" "$out/fake.json" <<'PY'
import json, sys
real, fake = (json.load(open(p)) for p in sys.argv[1:3])
fields = ["id", "slices", "instances", "memory_mb", "multiprocessors", "placements"]
differences = 0
for r, f in zip(real["gpus"], fake["gpus"]):
    print(f"GPU {r['index']}: {r['device_name']} -> {r['model']}, {r['memory_mib']} MiB "
          f"(fake: {f['memory_mib']} MiB)")
    if r["memory_mib"] != f["memory_mib"]:
        differences += 1
    for rp, fp in zip(r["profiles"], f["profiles"]):
        for key in fields:
            if key in rp and rp.get(key) != fp.get(key):
                differences += 1
                print(f"  profile enum {rp['enum']}: {key} real {rp.get(key)} fake {fp.get(key)}")
        if "error" in rp:
            print(f"  profile enum {rp['enum']}: real driver says {rp['error']}")
print(f"{differences} difference(s) between the driver and the fake's model")
PY
else
  echo "skipped: needs the probe, the fake ($fake) and the real reading"
fi

step "tesserad with the local backend on the real GPUs (mig_managed = none), one real task"
daemon=build/examples/daemon/tesserad
tessctl=build/examples/cli/tessctl
if [ -x "$daemon" ] && [ -x "$tessctl" ] && [ -f build/plugins/libtessera_plugin_local.so ]; then
  port="${TESSERA_DEVICE_CHECK_PORT:-8089}"
  rm -rf "$out/daemon"
  mkdir -p "$out/daemon"
  cat >"$out/daemon/tesserad.yaml" <<YAML
server:
  listen: "127.0.0.1:${port}"
store:
  path: "$out/daemon/tesserad.db"
plugin_dirs: [$PWD/build/plugins]
executor_plugin:
  plugin: local
  config: |
    node_name = device
    state_dir = $out/daemon/local
    mig_managed = none
    mig_enable = none
YAML
  "$daemon" --config "$out/daemon/tesserad.yaml" >"$out/daemon/tesserad.log" 2>&1 &
  pid=$!
  trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null' EXIT
  for _ in $(seq 1 100); do
    grep -q "listening on" "$out/daemon/tesserad.log" 2>/dev/null && break
    sleep 0.1
  done
  grep "local: " "$out/daemon/tesserad.log" | sed 's/.*local: /local: /'
  export TESSERA_SERVER="http://127.0.0.1:${port}"
  "$tessctl" gpus
  job=$("$tessctl" submit --cpu-milli 1000 --memory-mib 1024 --gpus 1 -- /bin/sh -c \
    'echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; nvidia-smi -L' 2>&1)
  echo "job $job"
  for _ in $(seq 1 100); do
    "$tessctl" get "$job" 2>/dev/null |
      grep -qE "state +(SUCCEEDED|FAILED|CANCELLED)|no node could ever" && break
    sleep 0.2
  done
  "$tessctl" get "$job"
  cat "$out"/daemon/local/logs/*.log 2>/dev/null
else
  echo "skipped: needs tesserad, tessctl and the local backend (run with --build)"
fi
echo
echo "device-check: outputs in $out"
