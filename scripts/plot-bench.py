#!/usr/bin/env python3
"""Draws the results of tessera-bench as one PNG.

Reads the JSON lines tessera-bench prints (from files, or stdin when none are given; other lines
are skipped, so a log with stderr mixed in works) and draws one row of two charts per benchmark
found:

  decide   decision latency p50/p99 and decisions/s versus cluster size (nodes); with a single
           size, bars per configuration instead
  submit   jobs/s and p99 latency per configuration (clients, window, durable)
  recover  time from Open to the first decision and peak memory per store size
  openb    GPU allocation % against arrived load (ours per policy, dashed: the FGD paper's
           published curve) for the default trace or the first one, and unallocated GPU % at
           100 % arrived load per trace: published BestFit and FGD beside ours per policy
  timeline job completion time and queueing delay (average and p95) per placement policy and
           trace configuration, with GPU utilisation and Jain's fairness in the labels
  churn    sustained decisions/s against the offered rate, and the delay the scheduler adds
           (p50/p99) per cluster size and rate

The spread of the headline figure across repeats (its "<field>_runs" array) is drawn as an
error bar, so noise is visible next to the median.

  build/bench/tessera-bench decide --nodes 1000 --jobs 10000 >> results.jsonl
  build/bench/tessera-bench decide --nodes 5000 --jobs 50000 >> results.jsonl
  scripts/plot-bench.py results.jsonl --out decide.png
"""

import argparse
import json
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot-bench: matplotlib is missing: install python3-matplotlib "
             "(scripts/install-deps.sh) and run this with /usr/bin/python3")

matplotlib.use("Agg")  # files only; no display needed.
import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)


def read_results(paths):
    """Returns every JSON object with a "benchmark" field, in input order."""
    streams = [open(p, encoding="utf-8") for p in paths] if paths else [sys.stdin]
    results = []
    for stream in streams:
        for line in stream:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and "benchmark" in obj:
                results.append(obj)
        if stream is not sys.stdin:
            stream.close()
    return results


def spread(row, field):
    """(below, above) distances from the median to the smallest and largest run."""
    runs = row.get(field + "_runs") or [row[field]]
    return row[field] - min(runs), max(runs) - row[field]


def bars(ax, labels, values, errors=None, ylabel="", title=""):
    positions = range(len(labels))
    yerr = None
    if errors:
        yerr = [[e[0] for e in errors], [e[1] for e in errors]]
    ax.bar(positions, values, yerr=yerr, capsize=4, color="tab:blue")
    ax.set_xticks(list(positions))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    for x, v in zip(positions, values):
        ax.annotate(f"{v:,.0f}" if v >= 100 else f"{v:.2f}", (x, v), ha="center", va="bottom",
                    fontsize=8, xytext=(0, 2), textcoords="offset points")


def plot_decide(ax_latency, ax_rate, rows):
    rows = sorted(rows, key=lambda r: (r["nodes"], r["jobs"], r["queues"]))
    if len({r["nodes"] for r in rows}) > 1:
        nodes = [r["nodes"] for r in rows]
        ax_latency.plot(nodes, [r["p50_us"] for r in rows], "o-", label="p50")
        ax_latency.plot(nodes, [r["p99_us"] for r in rows], "s-", label="p99")
        ax_latency.set_xscale("log")
        ax_latency.set_xlabel("nodes (8 GPUs each)")
        ax_latency.set_ylabel("µs per decision")
        ax_latency.set_ylim(bottom=0)
        ax_latency.legend()
        ax_latency.set_title("decide: latency of one decision (flat is good)")
        errors = [spread(r, "decisions_per_s") for r in rows]
        ax_rate.errorbar(nodes, [r["decisions_per_s"] for r in rows],
                         yerr=[[e[0] for e in errors], [e[1] for e in errors]], fmt="o-",
                         capsize=4)
        for r in rows:
            ax_rate.annotate(f'{r["jobs"]:,} jobs\n{r["queues"]:,} queues',
                             (r["nodes"], r["decisions_per_s"]), fontsize=7,
                             xytext=(4, 4), textcoords="offset points")
        ax_rate.set_xscale("log")
        ax_rate.set_xlabel("nodes (8 GPUs each)")
        ax_rate.set_ylabel("decisions / s (wall)")
        ax_rate.set_ylim(bottom=0)
        ax_rate.set_title("decide: throughput")
        return
    labels = [f'{r["nodes"]:,}n {r["jobs"]:,}j {r["queues"]}q' for r in rows]
    ax_latency.bar([i - 0.2 for i in range(len(rows))], [r["p50_us"] for r in rows], width=0.4,
                   label="p50")
    ax_latency.bar([i + 0.2 for i in range(len(rows))], [r["p99_us"] for r in rows], width=0.4,
                   label="p99")
    ax_latency.set_xticks(list(range(len(rows))))
    ax_latency.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax_latency.set_ylabel("µs per decision")
    ax_latency.legend()
    ax_latency.set_title("decide: latency of one decision")
    bars(ax_rate, labels, [r["decisions_per_s"] for r in rows],
         [spread(r, "decisions_per_s") for r in rows], "decisions / s (wall)",
         "decide: throughput")


def plot_submit(ax_rate, ax_latency, rows):
    rows = sorted(rows, key=lambda r: (r["durable"], r["clients"], r["window"]))
    labels = [f'{r["clients"]} clients, window {r["window"]}'
              + ("" if r["durable"] else ", not durable") for r in rows]
    bars(ax_rate, labels, [r["jobs_per_s"] for r in rows],
         [spread(r, "jobs_per_s") for r in rows], "acknowledged jobs / s", "submit: throughput")
    bars(ax_latency, labels, [r["p99_ms"] for r in rows], None, "ms",
         "submit: p99 latency of one submit")


def plot_recover(ax_time, ax_memory, rows):
    rows = sorted(rows, key=lambda r: (r["finished"], r["live"]))
    labels = [f'{r["live"]:,} live\n{r["finished"]:,} finished' for r in rows]
    bars(ax_time, labels, [r["open_to_first_decision_ms"] for r in rows],
         [spread(r, "open_to_first_decision_ms") for r in rows], "ms",
         "recover: Open() to first decision")
    bars(ax_memory, labels, [r["peak_rss_mb"] for r in rows], None, "MiB",
         "recover: peak RSS of the reopening process")


PLOTTERS = {"decide": plot_decide, "submit": plot_submit, "recover": plot_recover}


def grouped_bars(ax, labels, series, ylabel="", title="", log=False, rotation=20):
    """Bars of several series side by side per label; series: (name, values, errors or None)."""
    width = 0.8 / len(series)
    for k, (name, values, errors) in enumerate(series):
        positions = [i - 0.4 + width * (k + 0.5) for i in range(len(labels))]
        yerr = None
        if errors:
            yerr = [[e[0] for e in errors], [e[1] for e in errors]]
        ax.bar(positions, values, width=width, yerr=yerr, capsize=3, label=name)
        for x, v in zip(positions, values):
            ax.annotate(f"{v:,.0f}" if v >= 100 else f"{v:.2f}", (x, v), ha="center",
                        va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels(labels, rotation=rotation, ha="right" if rotation else "center",
                       fontsize=8 if rotation else 6)
    if log:
        ax.set_yscale("symlog", linthresh=1)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def plot_timeline(ax_jct, ax_wait, rows):
    def config(r):
        lines = [r["trace"].replace("openb_pod_list_", "").replace(".csv", ""),
                 f'{r["jobs"]:,} jobs']
        if r.get("time_scale", 1) != 1 or r.get("cluster_scale", 1) != 1:
            lines.append(f't/{r.get("time_scale", 1):g} c×{r.get("cluster_scale", 1):g}')
        return "\n".join(lines)

    rows = sorted(rows, key=lambda r: (config(r), r["policy"]))
    labels = [f'{r["policy"].replace("fragmentation", "frag")}\n{config(r)}\n'
              f'util {r["gpu_util_pct"]:.2f}%\nJain {r["jain_fairness"]:.2f}' for r in rows]
    grouped_bars(ax_jct, labels,
                 [("avg", [r["avg_jct_s"] for r in rows], [spread(r, "avg_jct_s") for r in rows]),
                  ("p95", [r["p95_jct_s"] for r in rows], None)],
                 "seconds (virtual)", "timeline: job completion time", log=True, rotation=0)
    grouped_bars(ax_wait, labels,
                 [("avg", [r["avg_wait_s"] for r in rows], None),
                  ("p95", [r["p95_wait_s"] for r in rows], None)],
                 "seconds (virtual)", "timeline: queueing delay (start - submit)", log=True,
                 rotation=0)


def plot_churn(ax_rate, ax_delay, rows):
    rows = sorted(rows, key=lambda r: (r["nodes"], r["rate"]))
    labels = [f'{r["nodes"]:,} nodes\n{r["rate"]:,.0f} jobs/s offered' for r in rows]
    grouped_bars(ax_rate, labels,
                 [("decisions/s", [r["sustained_decisions_per_s"] for r in rows],
                   [spread(r, "sustained_decisions_per_s") for r in rows]),
                  ("placements/s", [r["placements_per_s"] for r in rows], None)],
                 "per second (wall)", "churn: sustained rate on a nearly full cluster")
    ax_rate.scatter(range(len(rows)), [r["rate"] for r in rows], marker="_", s=600,
                    color="black", zorder=3, label="offered")
    ax_rate.legend(fontsize=8)
    grouped_bars(ax_delay, labels,
                 [("p50", [r["added_delay_p50_ms"] for r in rows], None),
                  ("p99", [r["added_delay_p99_ms"] for r in rows],
                   [spread(r, "added_delay_p99_ms") for r in rows])],
                 "ms", "churn: delay added by the scheduler (ack to RUNNING)")


def plot_preempt(ax_latency, ax_cost, rows):
    rows = sorted(rows, key=lambda r: (r["running"], r["rate"]))
    labels = [f'{r["running"]:,} running\n{r["rate"]:,.0f} arrivals/s' for r in rows]
    grouped_bars(ax_latency, labels,
                 [("p50", [r["ms_per_preemption_p50"] for r in rows], None),
                  ("p99", [r["ms_per_preemption_p99"] for r in rows],
                   [spread(r, "ms_per_preemption_p99") for r in rows])],
                 "ms (wall)", "preempt: planning time per preemption", rotation=0)
    ax_latency.axhline(2.0, color="black", linestyle="--", linewidth=1)
    ax_latency.annotate("target p99 2 ms", (0, 2.0), fontsize=8, xytext=(0, 3),
                        textcoords="offset points")
    bars(ax_cost, labels, [r["lost_gpu_s_per_preemption"] for r in rows],
         ylabel="GPU-seconds", title="preempt: work lost per preemption (since last checkpoint)")


PLOTTERS["timeline"] = plot_timeline
PLOTTERS["churn"] = plot_churn
PLOTTERS["preempt"] = plot_preempt


OPENB_COLORS = {"bestfit": "tab:orange", "fgd": "tab:blue", "fragmentation-aware": "tab:green",
                "binpack": "tab:gray", "spread": "tab:olive"}


def plot_openb(ax_curve, ax_bars, rows):
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    shown = "default" if "default" in traces else traces[0]
    published_drawn = set()
    for r in (r for r in rows if r["trace"] == shown):
        color = OPENB_COLORS.get(r["policy"], None)
        ours = r["alloc_pct_by_arrived"]
        ax_curve.plot(range(len(ours)), ours, "-", color=color,
                      label=f'{r["policy"]} (ours): {r["unallocated_gpu_pct_at_100"]:.2f}% idle')
        published = r.get("published_alloc_pct_by_arrived") or []
        name = r.get("published_curve_policy")
        if published and name not in published_drawn:
            published_drawn.add(name)
            pub_color = OPENB_COLORS.get(name.lower(), "black")
            ax_curve.plot(range(len(published)), published, "--", color=pub_color, alpha=0.8,
                          label=f"{name} (published)")
    ax_curve.plot([0, 130], [0, 130], ":", color="black", alpha=0.3, label="everything placed")
    ax_curve.set_xlim(60, 130)
    ax_curve.set_ylim(60, 100)
    ax_curve.set_xlabel("arrived GPU request, % of capacity")
    ax_curve.set_ylabel("GPU allocated, % of capacity")
    ax_curve.legend(fontsize=7, loc="lower right")
    ax_curve.set_title(f"openb {shown}: allocation vs arrived load (mean of seeds)")

    policies = list(dict.fromkeys(r["policy"] for r in rows))
    by_key = {(r["trace"], r["policy"]): r for r in rows}
    series = [("BestFit (published)", "published_bestfit_unallocated_gpu_pct_at_100", None,
               "navajowhite"),
              ("FGD (published)", "published_fgd_unallocated_gpu_pct_at_100", None, "lightblue")]
    series += [(f"{p} (ours)", "unallocated_gpu_pct_at_100", p, OPENB_COLORS.get(p))
               for p in policies]
    width = 0.8 / len(series)
    for i, (label, field, policy, color) in enumerate(series):
        values = []
        for t in traces:
            row = by_key.get((t, policy)) if policy else next(
                (r for r in rows if r["trace"] == t), None)
            value = row.get(field) if row else None
            values.append(value if value is not None else float("nan"))
        ax_bars.bar([x + (i - (len(series) - 1) / 2) * width for x in range(len(traces))],
                    values, width=width, label=label, color=color)
    ax_bars.set_xticks(list(range(len(traces))))
    ax_bars.set_xticklabels(traces, rotation=45, ha="right", fontsize=8)
    ax_bars.set_ylabel("unallocated GPU % at 100% arrived")
    ax_bars.legend(fontsize=7)
    ax_bars.set_title("openb: unallocated GPUs at 100% arrived load (lower is better)")


PLOTTERS["openb"] = plot_openb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="JSON-lines files (default: stdin)")
    parser.add_argument("--out", default="bench.png", help="PNG to write (default: bench.png)")
    args = parser.parse_args()

    results = read_results(args.files)
    by_benchmark = {}
    for r in results:
        by_benchmark.setdefault(r["benchmark"], []).append(r)
    known = [b for b in PLOTTERS if b in by_benchmark]
    for b in by_benchmark:
        if b not in PLOTTERS:
            print(f"plot-bench: no plot for benchmark '{b}' yet; skipped", file=sys.stderr)
    if not known:
        print("plot-bench: no tessera-bench results found in the input", file=sys.stderr)
        return 1

    fig, axes = plt.subplots(len(known), 2, figsize=(12, 4.5 * len(known)), squeeze=False)
    for row, benchmark in enumerate(known):
        PLOTTERS[benchmark](axes[row][0], axes[row][1], by_benchmark[benchmark])
        for ax in axes[row]:
            ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot-bench: wrote {args.out} ({len(results)} result(s))", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
