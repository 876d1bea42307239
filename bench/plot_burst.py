#!/usr/bin/env python3
"""Plots the result lines of `tessera-bench burst` (one JSON object per configuration).

    build/bench/tessera-bench burst > burst.jsonl
    python3 bench/plot_burst.py burst.jsonl burst.png

Three panels: the workload's GPUs in use by hour of day (at zero wait) against the two private
pool sizes; each configuration's total cost (private pool, burst charged to queues, idle burst
nodes) with its cost per delivered GPU-hour; and its queueing delay p50 and p95.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        rows = [json.loads(line) for line in f if line.strip().startswith("{")]
    rows = [r for r in rows if r.get("benchmark") == "burst"]
    if not rows:
        sys.stderr.write(f"{argv[1]}: no burst result lines\n")
        return 1
    scenario = rows[0]["scenario"]
    prices = scenario["prices_per_gpu_hour"]
    ids = [r["config"] for r in rows]

    fig, (demand, cost, wait) = plt.subplots(1, 3, figsize=(15, 4.6))
    hours = list(range(24))
    demand.plot(hours, scenario["gpus_by_hour_utc"], marker=".", label="GPUs in use at zero wait")
    pools = {r["config"]: r["private_gpus"] for r in rows}
    for config, style in (("A", "--"), ("B", ":")):
        if config in pools:
            demand.axhline(pools[config], linestyle=style, color="grey",
                           label=f"pool {config}: {pools[config]} GPUs")
    demand.set_xlabel("hour of day (UTC)")
    demand.set_ylabel("GPUs")
    demand.set_title(f"workload: {scenario['jobs']} jobs, {scenario['days']:g} days")
    demand.legend(fontsize=8)

    private = [r["private_cost"] for r in rows]
    queues = [r["burst_cost_charged_to_queues"] for r in rows]
    idle = [r["burst_cost_idle"] for r in rows]
    cost.bar(ids, private, label=f"private pool ({prices['private']:.2f}/GPU-h)")
    cost.bar(ids, queues, bottom=private, label="burst, charged to queues")
    cost.bar(ids, idle, bottom=[p + q for p, q in zip(private, queues)], label="burst, idle nodes")
    for i, r in enumerate(rows):
        cost.annotate(f"{r['cost_per_delivered_gpu_hour']:.2f}/GPU-h", (i, r["total_cost"]),
                      ha="center", va="bottom", fontsize=8)
    cost.set_ylabel("total cost")
    cost.set_title(f"cost (on-demand {prices['on_demand']:.2f}, spot {prices['spot']:.2f}/GPU-h)")
    cost.legend(fontsize=8, loc="lower right")

    width = 0.38
    xs = range(len(rows))
    wait.bar([x - width / 2 for x in xs], [r["p50_wait_s"] / 60 for r in rows], width, label="p50")
    wait.bar([x + width / 2 for x in xs], [r["p95_wait_s"] / 60 for r in rows], width, label="p95")
    wait.set_xticks(list(xs), ids)
    wait.set_yscale("symlog", linthresh=1)
    wait.set_ylabel("queueing delay (minutes)")
    wait.set_title("queueing delay")
    wait.legend(fontsize=8)

    fig.tight_layout()
    fig.savefig(argv[2], dpi=80)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
