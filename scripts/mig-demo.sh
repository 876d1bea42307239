#!/usr/bin/env bash
# MIG re-partitioning from demand, end to end, through tesserad and tessctl, on a fake NVIDIA
# driver: the fake libnvidia-ml.so.1 the tests use (plugins/common/nvml/testing) stands in for
# an H100 in MIG mode laid out as 7 x 1g.10gb. The daemon runs the local backend with
# mig_managed = all; a job asking for a 3g.40gb instance makes the scheduler re-partition the GPU,
# the backend carries the layout out through NVML (destroying three idle 1g instances and
# creating the 3g one), and the task runs with CUDA_VISIBLE_DEVICES naming the new instance's
# MIG UUID. On a machine with a real driver, leave out nvml_library and TESSERA_FAKE_NVML_STATE.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tesserad tessctl tessera_plugin_local tessera_fake_nvml

port="${TESSERA_DEMO_PORT:-8081}"
dir="$PWD/var/mig-demo"
rm -rf "$dir"
mkdir -p "$dir"

# The fake driver's state: one H100 in MIG mode with seven 1g.10gb instances (profile ID 19),
# each with its compute instance. The fake reads and writes this file at every NVML call.
python3 - "$dir/fake-nvml.json" <<'PY'
import json, sys
instances = [{"id": i + 1, "profile_id": 19, "start": i,
              "compute_instances": [{"id": 0, "profile_id": 0}]} for i in range(7)]
json.dump({"gpus": [{"model": "H100-80GB", "mig_current": 1, "mig_pending": 1,
                     "temperature_c": 45, "gpu_instances": instances}]}, open(sys.argv[1], "w"))
PY
export TESSERA_FAKE_NVML_STATE="$dir/fake-nvml.json"

cat >"$dir/tesserad.yaml" <<YAML
server:
  listen: "127.0.0.1:${port}"
store:
  path: "$dir/tesserad.db"
plugin_dirs: [$PWD/build/plugins]
executor_plugin:
  plugin: local
  config: |
    node_name = h100-box
    state_dir = $dir/local
    nvml_library = $PWD/build/plugins/testing/nvml/libnvidia-ml.so.1
    mig_managed = all
YAML

build/examples/daemon/tesserad --config "$dir/tesserad.yaml" >"$dir/tesserad.log" 2>&1 &
daemon=$!
trap 'kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q "listening on" "$dir/tesserad.log" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q "listening on" "$dir/tesserad.log"; then
  echo "mig-demo: tesserad did not start:" >&2
  cat "$dir/tesserad.log" >&2
  exit 1
fi
grep "local: node" "$dir/tesserad.log" | sed 's/.*local: //'

export TESSERA_SERVER="http://127.0.0.1:${port}"
tessctl() { build/examples/cli/tessctl "$@"; }

echo
echo "== before: the H100 as the driver has it"
tessctl gpus
echo
echo "== a job asks for a 3g.40gb instance (examples/demo/mig-3g.yaml)"
job=$(tessctl submit -f examples/demo/mig-3g.yaml)
echo "job $job"
for _ in $(seq 1 100); do
  state=$(tessctl get "$job" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["state"])')
  case "$state" in SUCCEEDED | FAILED | CANCELLED) break ;; esac
  sleep 0.2
done
tessctl get "$job"
echo
echo "== after: re-partitioned from demand"
tessctl gpus
echo
echo "== what the task saw"
cat "$dir"/local/logs/*.log
echo
echo "== the GPU's telemetry, read through NVML, in the daemon's /metrics"
python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
  "$TESSERA_SERVER/metrics" | grep -E '^tessera_gpu_(temperature|utilization|power)' || true
echo
echo "Demo done; the daemon's log is $dir/tesserad.log, the fake driver's state $dir/fake-nvml.json."
