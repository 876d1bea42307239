#!/usr/bin/env python3
"""Prints the headline figures of a `tessera-replay --compare` summary as a Markdown table.

  tessera-replay TRACE --compare a.yaml b.yaml ... > runs.json
  scripts/replay-table.py runs.json [--baseline fifo]

One row per config (named by its file, without .yaml): average and p95 job completion time,
the worst and the average finish-time fairness (rho), makespan, GPU utilisation, preemptions,
and the average JCT of the --baseline row over this row's ("x fifo").
"""
import argparse
import json
import os


def main():
    p = argparse.ArgumentParser()
    p.add_argument("summary", help="tessera-replay --compare output")
    p.add_argument("--baseline", default="fifo", help="config name the speed-up is against")
    a = p.parse_args()
    runs = json.load(open(a.summary))["runs"]
    names = [os.path.splitext(os.path.basename(r["config"]))[0] for r in runs]
    base = dict(zip(names, runs)).get(a.baseline)
    print("| config | avg JCT (s) | p95 JCT (s) | max rho | avg rho | makespan (s) "
          "| GPU util (%%) | preemptions | avg JCT vs %s |" % a.baseline)
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in zip(names, runs):
        ratio = base["avg_jct_s"] / r["avg_jct_s"] if base and r["avg_jct_s"] > 0 else 0
        unfinished = " (%d unfinished)" % r["unfinished"] if r["unfinished"] else ""
        print("| %s%s | %.0f | %.0f | %.1f | %.2f | %.0f | %.1f | %d | %.2fx |" % (
            name, unfinished, r["avg_jct_s"], r["p95_jct_s"], r["max_finish_time_fairness"],
            r["avg_finish_time_fairness"], r["makespan_s"], r["gpu_util_pct"],
            r["preemptions"], ratio))


if __name__ == "__main__":
    main()
