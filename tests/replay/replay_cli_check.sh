#!/bin/sh
# tessera-replay, the built binary, on a tiny JSONL trace: it must exit 0 and print one JSON
# summary that parses and carries the documented headline fields; a bad --set must exit 2 with
# a message naming the key. Usage: replay_cli_check.sh <tessera-replay>
set -eu
replay="$1"
dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-replay-cli-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/trace.jsonl" <<'JSONL'
{"submit": 0, "duration_s": 60, "job": {"queue": "q", "task": {"cpuMilli": 1000, "memoryMib": 1024, "gpuCount": 1}}}
{"submit": 5, "duration_s": 30, "job": {"queue": "q", "task": {"cpuMilli": 1000, "memoryMib": 1024, "gpuCount": 2}}}
{"submit": "bad"}
JSONL
"$replay" "$dir/trace.jsonl" --no-progress --jobs-csv "$dir/jobs.csv" >"$dir/out.json" 2>"$dir/err.txt"
grep -q "trace.jsonl:3: " "$dir/err.txt" || { echo "bad row not reported:"; cat "$dir/err.txt"; exit 1; }
python3 - "$dir/out.json" "$dir/jobs.csv" <<'PY'
import csv, json, sys
s = json.load(open(sys.argv[1]))
for key in ["avg_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s", "avg_wait_s", "p95_wait_s",
            "makespan_s", "gpu_util_pct", "jain_fairness", "max_finish_time_fairness",
            "avg_finish_time_fairness", "preemptions", "lost_gpu_hours", "queues"]:
    assert key in s, key
assert s["jobs"] == 2 and s["finished"] == 2, s
assert s["trace"]["bad_rows"] == 1 and s["trace"]["first_bad_rows"][0]["line"] == 3, s["trace"]
assert "q" in s["queues"], s["queues"]
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 2 and rows[0]["state"] == "SUCCEEDED", rows
PY
if "$replay" "$dir/trace.jsonl" --no-progress --set fair_share.half_life=1 >/dev/null 2>"$dir/err2.txt"; then
  echo "a bad --set was accepted"; exit 1
else
  rc=$?
  [ "$rc" -eq 2 ] || { echo "a bad --set exited $rc, not 2"; exit 1; }
fi
grep -q "fair_share.half_life" "$dir/err2.txt" || { cat "$dir/err2.txt"; exit 1; }
# --compare: one replay per config, side by side, and the HTML report.
printf 'preemption:\n  enabled: false\n' >"$dir/a.yaml"
printf 'placement:\n  strategy: BINPACK\n' >"$dir/b.yaml"
"$replay" "$dir/trace.jsonl" --no-progress --compare "$dir/a.yaml" "$dir/b.yaml" \
  --html "$dir/report.html" >"$dir/cmp.json" 2>/dev/null
python3 - "$dir/cmp.json" "$dir/report.html" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert [r["config"].split("/")[-1] for r in s["runs"]] == ["a.yaml", "b.yaml"], s
page = open(sys.argv[2]).read()
assert page.count("<svg") == 6 and "a.yaml" in page and "b.yaml" in page
PY
if "$replay" "$dir/trace.jsonl" --no-progress --config "$dir/a.yaml" --compare "$dir/a.yaml" "$dir/b.yaml" >/dev/null 2>&1; then
  echo "--config with --compare was accepted"; exit 1
fi
# Documented exit statuses: 1 for bad rows under --strict; 2 for a missing trace, a bad column
# map, a lone --compare file, a trace with no job.
expect_rc() {
  want=$1; shift
  if "$replay" "$@" --no-progress >/dev/null 2>"$dir/rc.txt"; then got=0; else got=$?; fi
  [ "$got" -eq "$want" ] || { echo "exit $got, not $want: $*"; cat "$dir/rc.txt"; exit 1; }
}
expect_rc 1 "$dir/trace.jsonl" --strict
expect_rc 2 "$dir/missing.jsonl"
printf 'submit,duration_s\n0,1\n' >"$dir/t.csv"
expect_rc 2 "$dir/t.csv" --columns gpu=num_gpus
grep -q "unknown field 'gpu'" "$dir/rc.txt"
expect_rc 2 "$dir/trace.jsonl" --compare "$dir/a.yaml"
printf '# nothing\n' >"$dir/empty.jsonl"
expect_rc 2 "$dir/empty.jsonl"
echo "tessera-replay CLI check passed"
