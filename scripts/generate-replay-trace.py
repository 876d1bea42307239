#!/usr/bin/env python3
"""Writes a synthetic deep-learning cluster trace as tessera-replay JSONL (docs/replay.md).

The shape follows what published GPU-cluster studies report (Philly, Helios, PAI): most jobs ask
for one GPU, a few for large gangs; durations are heavy-tailed (log-normal); arrivals are Poisson
per group with bursts. Deterministic for a seed.

  scripts/generate-replay-trace.py --jobs 100000 --groups 20 --gpus 8000 --load 0.8 > t.jsonl

Parameters (defaults in brackets):
  --jobs N       jobs to write [100000]
  --groups G     tenant queues g00..g<G-1> [20]
  --gpus C       GPUs of the cluster the load is aimed at [8000]
  --load L       offered GPU load, GPU-seconds asked per second over C [0.8]
  --seed S       random seed [1]
GPU counts per task and their weights: 1 (70%), 2 (10%), 4 (10%), 8 (7%), and 8-GPU gangs of
2, 4 or 8 tasks (3%). Durations: log-normal with median 10 min and sigma 1.8, clipped to
[30 s, 7 days]. Each group's arrival rate is multiplied by 5 during bursts that start at random
(one per group every 6 hours on average) and last 20 minutes.
"""
import argparse
import json
import math
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=100000)
    p.add_argument("--groups", type=int, default=20)
    p.add_argument("--gpus", type=int, default=8000)
    p.add_argument("--load", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)

    shapes = [((1, 1), 0.70), ((2, 1), 0.10), ((4, 1), 0.10), ((8, 1), 0.07),
              ((8, 2), 0.01), ((8, 4), 0.01), ((8, 8), 0.01)]
    median_s, sigma = 600.0, 1.8
    mean_duration = median_s * math.exp(sigma * sigma / 2)
    mean_gpus = sum(g * t * w for (g, t), w in shapes)
    rate = a.load * a.gpus / (mean_gpus * mean_duration)  # jobs per second, all groups
    burst_every_s, burst_len_s, burst_factor = 6 * 3600.0, 1200.0, 5.0

    # Arrivals per group: a Poisson process whose rate is raised during bursts (thinning).
    base = rate / a.groups / (1 + (burst_factor - 1) * burst_len_s / burst_every_s)
    peak = base * burst_factor
    events = []
    per_group = a.jobs // a.groups + 1
    for g in range(a.groups):
        t = 0.0
        bursts = []
        bt = rng.expovariate(1 / burst_every_s)
        made = 0
        while made < per_group:
            t += rng.expovariate(peak)
            while bt + burst_len_s < t:
                bursts.append(bt)
                bt += rng.expovariate(1 / burst_every_s)
            in_burst = bt <= t <= bt + burst_len_s
            if in_burst or rng.random() < base / peak:
                events.append((t, g))
                made += 1
    events.sort()
    events = events[: a.jobs]
    for i, (t, g) in enumerate(events):
        (gpus, tasks), = rng.choices([s for s, _ in shapes], weights=[w for _, w in shapes])
        duration = min(7 * 86400.0, max(30.0, rng.lognormvariate(math.log(median_s), sigma)))
        job = {"name": "j%d" % i, "queue": "g%02d" % g, "tasks": tasks,
               "task": {"cpuMilli": 4000 * gpus, "memoryMib": 16384 * gpus, "gpuCount": gpus}}
        print(json.dumps({"submit": round(t, 3), "duration_s": round(duration, 1), "job": job}))


if __name__ == "__main__":
    main()
