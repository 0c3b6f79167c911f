"""plot_multiclient.py: summarizes the multi-client benchmark (multiclient_bench.sh).

Reads one row per client (config, clients, rep, client, start_ms, tcp_ms, connect_ms,
response_ms, ok), computes per run (config, clients, rep) the mean, standard deviation
and p99 of the two connection times (tcp: a plain TCP connect; connect: the client
library's connection ready to call) and the mean and standard deviation of the
response time, then per (config, clients) the median over reps with min and max. Prints a
markdown table, writes the summary CSV and a PNG plot (one line per configuration).

Usage: plot_multiclient.py CLIENTS.csv SUMMARY.csv PLOT.png [M N]
"""
import csv
import math
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

P99_TARGET_MS = 5.0  # shared/BENCH.md: 1000 simultaneous clients, p99 connect < 5 ms


def p99(values):
    """99th percentile by nearest rank (the same rule as examples/multiclient)."""
    v = sorted(values)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)] if v else math.nan


def run_stats(rows):
    tcp = [float(r["tcp_ms"]) for r in rows if r["tcp_ms"] and float(r["tcp_ms"]) >= 0]
    conn = [float(r["connect_ms"]) for r in rows if r["ok"] == "1"]
    resp = [float(r["response_ms"]) for r in rows if r["ok"] == "1"]

    def sd(v):
        return statistics.stdev(v) if len(v) > 1 else 0.0

    return {
        "tcp_mean": statistics.fmean(tcp) if tcp else math.nan,
        "tcp_sd": sd(tcp),
        "tcp_p99": p99(tcp),
        "connect_mean": statistics.fmean(conn) if conn else math.nan,
        "connect_sd": sd(conn),
        "connect_p99": p99(conn),
        "response_mean": statistics.fmean(resp) if resp else math.nan,
        "response_sd": sd(resp),
        "failed": sum(1 for r in rows if r["ok"] != "1"),
        "calls": len(rows),
    }


def bars(rows, stat):
    """Error bars of +- sd, the lower one clipped so that it stays positive on a log axis."""
    return [[min(r[stat + "_sd"], 0.9 * r[stat + "_mean"]) for r in rows], [r[stat + "_sd"] for r in rows]]


def config_key(name):
    """pool-5 < pool-20 < ... < thread."""
    kind, _, n = name.partition("-")
    return (kind != "pool", int(n) if n else 0)


def label(name):
    kind, _, n = name.partition("-")
    return f"pool of {n}" if kind == "pool" else "thread per request"


def main(src, dst_csv, dst_png, m=None, n=None):
    runs = defaultdict(list)
    for r in csv.DictReader(open(src)):
        runs[(r["config"], int(r["clients"]), int(r["rep"]))].append(r)
    per_point = defaultdict(list)
    for (cfg, q, _), rows in runs.items():
        per_point[(cfg, q)].append(run_stats(rows))

    stats = ["tcp_mean", "tcp_sd", "tcp_p99", "connect_mean", "connect_sd", "connect_p99", "response_mean", "response_sd"]
    summary = []
    for (cfg, q) in sorted(per_point, key=lambda k: (config_key(k[0]), k[1])):
        reps = per_point[(cfg, q)]
        row = {"config": cfg, "clients": q, "reps": len(reps)}
        for s in stats:
            v = [x[s] for x in reps if not math.isnan(x[s])]
            row[s] = statistics.median(v) if v else math.nan
            row[s + "_min"] = min(v) if v else math.nan
            row[s + "_max"] = max(v) if v else math.nan
        row["failed"] = sum(x["failed"] for x in reps)
        row["calls"] = sum(x["calls"] for x in reps)
        summary.append(row)

    with open(dst_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(summary[0].keys()))
        w.writeheader()
        for row in summary:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()})

    def cell(row, s):
        return f"{row[s]:.3f} ({row[s + '_min']:.3f}-{row[s + '_max']:.3f})"

    reps = max(r["reps"] for r in summary)
    print(f"Times in ms; each cell the median over {reps} run(s) (min-max); sd = standard deviation "
          "over the clients of a run; failed = over all runs.")
    print()
    print("| server | clients | tcp mean | tcp sd | tcp p99 | connect mean | connect sd | connect p99 "
          "| response mean | response sd | failed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in summary:
        print(f"| {label(row['config'])} | {row['clients']} | {row['tcp_mean']:.3f} | {row['tcp_sd']:.3f} | "
              f"{cell(row, 'tcp_p99')} | {cell(row, 'connect_mean')} | {row['connect_sd']:.3f} | "
              f"{cell(row, 'connect_p99')} | {cell(row, 'response_mean')} | {row['response_sd']:.3f} | "
              f"{row['failed']}/{row['calls']} |")

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    ax = axes.flatten()
    configs = sorted({r["config"] for r in summary}, key=config_key)
    for i, cfg in enumerate(configs):
        rows = [r for r in summary if r["config"] == cfg]
        q = [r["clients"] for r in rows]
        style, color = ("s--" if cfg == "thread" else "o-"), f"C{i}"
        ax[0].errorbar(q, [r["tcp_mean"] for r in rows], yerr=bars(rows, "tcp"), fmt=style,
                       color=color, capsize=3, label=label(cfg))
        ax[1].plot(q, [r["tcp_p99"] for r in rows], style, color=color, label=f"{label(cfg)}: tcp")
        ax[1].plot(q, [r["connect_p99"] for r in rows], style, color=color, alpha=0.45,
                   label=f"{label(cfg)}: library connect")
        ax[2].errorbar(q, [r["connect_mean"] for r in rows], yerr=bars(rows, "connect"), fmt=style,
                       color=color, capsize=3, label=label(cfg))
        ax[3].errorbar(q, [r["response_mean"] for r in rows], yerr=bars(rows, "response"),
                       fmt=style, color=color, capsize=3, label=label(cfg))
    ax[1].axhline(P99_TARGET_MS, color="red", lw=1, ls=":", label="target p99 < 5 ms")
    titles = ["TCP connection time, mean +- sd (ms)", "connection time, p99 (ms)",
              "library connection ready (TCP + HELLO + descriptor), mean +- sd (ms)",
              "response time (lsq_experiment call), mean +- sd (ms)"]
    for a, t in zip(ax, titles):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("simultaneous clients")
        a.set_title(t, fontsize=10)
        a.legend(fontsize=7)
    size = f", A {m} x {n}" if m else ""
    fig.suptitle(f"gridrpcd: worker pool vs thread per request, lsq_experiment{size}, loopback "
                 f"(median of {reps} run(s); lower error bars clipped on the log axes)")
    fig.tight_layout()
    fig.savefig(dst_png, dpi=90)


if __name__ == "__main__":
    main(*sys.argv[1:])
