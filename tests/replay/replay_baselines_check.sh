#!/bin/sh
# The research baselines shipped in replay/baselines/ (docs/replay.md, "Baselines"), each run by
# the built tessera-replay on a three-job trace that tells them apart, on one node of 8 GPUs:
#   A: t=0, 6 GPUs, 1000 s (tenant t1)   B: t=1, 4 GPUs, 100 s (t1)   C: t=2, 2 GPUs, 10 s (t2)
# B does not fit beside A; C does.
#   fifo           C waits behind B (head-of-line blocking) until A ends; nobody is preempted.
#   fifo-backfill  C starts at once beside A (it leaves B's reservation its room); B after A.
#   tiresias-las   C starts at once (fit-first); A passes 3,600 GPU-seconds at t=600 and is
#                  preempted for B, which is still in the first band.
#   tessera-best   loads and replays; every job finishes.
# Every one reports per tenant (t1, t2), not per the queue the baseline put the jobs in.
# Usage: replay_baselines_check.sh <tessera-replay> <replay/baselines>
set -eu
replay="$1"
baselines="$2"
dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-replay-baselines-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/cluster.yaml" <<'YAML'
groups:
  - {name_prefix: gpu, count: 1, cpu_milli: 64000, memory_mib: 262144, gpus: 8,
     gpu_model: A100-80GB, gpu_memory_mib: 81920}
YAML
cat >"$dir/trace.jsonl" <<'JSONL'
{"submit": 0, "duration_s": 1000, "job": {"name": "A", "queue": "t1", "task": {"cpuMilli": 1000, "memoryMib": 1024, "gpuCount": 6}}}
{"submit": 1, "duration_s": 100, "job": {"name": "B", "queue": "t1", "task": {"cpuMilli": 1000, "memoryMib": 1024, "gpuCount": 4}}}
{"submit": 2, "duration_s": 10, "job": {"name": "C", "queue": "t2", "task": {"cpuMilli": 1000, "memoryMib": 1024, "gpuCount": 2}}}
JSONL
for name in fifo fifo-backfill tiresias-las tessera-best; do
  [ -f "$baselines/$name.yaml" ] || { echo "missing baseline $baselines/$name.yaml"; exit 1; }
  "$replay" "$dir/trace.jsonl" --no-progress --config "$baselines/$name.yaml" \
    --cluster "$dir/cluster.yaml" --jobs-csv "$dir/$name.csv" >"$dir/$name.json" \
    2>"$dir/$name.err" || { echo "$name: exit $?"; cat "$dir/$name.err"; exit 1; }
done
python3 - "$dir" <<'PY'
import csv, json, os, sys
d = sys.argv[1]
def load(name):
    summary = json.load(open(os.path.join(d, name + ".json")))
    jobs = {r["name"]: r for r in csv.DictReader(open(os.path.join(d, name + ".csv")))}
    assert summary["finished"] == 3, (name, summary["finished"], jobs)
    assert sorted(summary["queues"]) == ["t1", "t2"], (name, sorted(summary["queues"]))
    return summary, {k: {f: float(v[f] or -1) for f in ("start_s", "end_s", "preemptions")}
                     for k, v in jobs.items()}
s, j = load("fifo")
assert s["one_queue"] == "fifo" and s["preemptions"] == 0, s
assert j["C"]["start_s"] >= 1000 and j["B"]["start_s"] >= 1000, j
s, j = load("fifo-backfill")
assert s["one_queue"] == "fifo" and s["preemptions"] == 0, s
assert j["C"]["start_s"] == 2 and j["B"]["start_s"] >= 1000, j
s, j = load("tiresias-las")
assert s["one_queue"] == "las", s
assert j["C"]["start_s"] == 2, j
assert j["A"]["preemptions"] >= 1 and j["B"]["start_s"] < 1000, j
s, j = load("tessera-best")
assert s["one_queue"] == "", s
PY
