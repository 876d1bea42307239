#!/usr/bin/env python3
"""Whether an openb pod list has a daily peak: pods created and GPUs in use, by hour of day.

    python3 bench/openb_day_profile.py ../shared/data/openb/openb_pod_list_default.csv

GPUs in use counts each scheduled pod's num_gpu x gpu_milli / 1000 from scheduled_time to
deletion_time (the trace's own schedule), sampled at the middle of every hour of the trace and
averaged per hour of day (hours of the trace's clock, which starts at 0 s; its time zone is not
given). The burst benchmark needs a peak in GPUs in use, not in arrivals.
"""
import csv
import sys


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    created = [0] * 24
    changes = []
    with open(argv[1]) as f:
        for row in csv.DictReader(f):
            created[int(float(row["creation_time"]) % 86400 // 3600)] += 1
            if not row["scheduled_time"] or not row["deletion_time"]:
                continue
            gpus = int(row["num_gpu"]) * int(row["gpu_milli"]) / 1000
            if gpus > 0:
                changes.append((float(row["scheduled_time"]), gpus))
                changes.append((float(row["deletion_time"]), -gpus))
    changes.sort()
    end = changes[-1][0] if changes else 0
    in_use_sum = [0.0] * 24
    samples = [0] * 24
    peak = 0.0
    in_use = 0.0
    i = 0
    t = 1800.0
    while t < end:
        while i < len(changes) and changes[i][0] <= t:
            in_use += changes[i][1]
            i += 1
        hour = int(t % 86400 // 3600)
        in_use_sum[hour] += in_use
        samples[hour] += 1
        peak = max(peak, in_use)
        t += 3600
    mean_by_hour = [s / n if n else 0.0 for s, n in zip(in_use_sum, samples)]
    print("hour pods_created mean_gpus_in_use")
    for h in range(24):
        print(f"{h:4d} {created[h]:12d} {mean_by_hour[h]:16.1f}")
    print(f"GPUs in use: peak {peak:.1f} (hourly samples), hour-of-day means "
          f"{min(mean_by_hour):.1f}..{max(mean_by_hour):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
