#!/usr/bin/env python3
"""plot_meta.py: the metaserver benchmarks of bench/run-meta.sh in one figure.

Usage: plot_meta.py [RESULTS_DIR] [OUT]   (defaults: bench/results, RESULTS_DIR/meta.svg)
Reads from RESULTS_DIR whichever of these exist (a missing one leaves its panel empty
with a note):
  meta_sched.csv  servers,median_us,mean_us,p99_us,decisions       (meta_sched_bench)
  meta_load.csv   servers,clients,decisions_per_s,p50_us,p99_us,probe_per_s,... (meta_load_bench)
  meta_route.csv  mode,median_us,min_us,max_us,x_direct[,x_paired], no header (meta_route_bench)
Panels: decision time vs servers registered (target 20 us at 100); decisions/s vs
concurrent clients, one line per server count, with the bare PROBE round trips of the
same gridmetad dashed (target 20,000/s); routed/direct latency of a null call (targets
1.1x reusing a decision, 2.5x asking each call). The format follows OUT's suffix
(.svg, .png, .pdf).
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path, header=True, names=None):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f) if header else csv.DictReader(f, fieldnames=names))
    return rows or None


def missing(ax, what):
    ax.text(0.5, 0.5, "no data:\n" + what, ha="center", va="center", transform=ax.transAxes, color="0.4")


def sched_panel(ax, rows):
    ax.set_title("Decision time inside the metaserver")
    ax.set_xlabel("servers registered")
    ax.set_ylabel("µs per decision")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if not rows:
        missing(ax, "meta_sched.csv")
        return
    n = [int(r["servers"]) for r in rows]
    ax.plot(n, [float(r["median_us"]) for r in rows], "o-", label="median")
    ax.plot(n, [float(r["p99_us"]) for r in rows], "s--", alpha=0.7, label="99th percentile")
    ax.plot([100], [20], "r*", markersize=12, label="target: < 20 µs at 100")
    for x, r in zip(n, rows):
        ax.annotate("%.2g" % float(r["median_us"]), (x, float(r["median_us"])), textcoords="offset points",
                    xytext=(4, -12), fontsize=8)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)


def load_panel(ax, rows):
    ax.set_title("Decisions/s, one gridmetad, concurrent clients")
    ax.set_xlabel("concurrent clients (one connection each)")
    ax.set_ylabel("per second")
    ax.set_xscale("log", base=2)
    if not rows:
        missing(ax, "meta_load.csv")
        return
    by = {}
    for r in rows:
        by.setdefault(int(r["servers"]), []).append(r)
    for i, (s, rs) in enumerate(sorted(by.items())):
        rs.sort(key=lambda r: int(r["clients"]))
        p = [int(r["clients"]) for r in rs]
        line, = ax.plot(p, [float(r["decisions_per_s"]) for r in rs], "o-", label="SCHEDULE + REPORT, %d servers" % s)
        ax.plot(p, [float(r["probe_per_s"]) for r in rs], ":", color=line.get_color(), alpha=0.7,
                label="bare round trip (PROBE), %d servers" % s)
    ax.axhline(20000, color="r", linestyle="--", linewidth=1, label="target: 20,000/s")
    ax.set_ylim(bottom=0)
    ax.set_xticks(sorted({int(r["clients"]) for r in rows}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)


def route_panel(ax, rows):
    ax.set_title("A null call routed by gridmetad, vs direct")
    ax.set_ylabel("time per call / direct (median of rounds)")
    if not rows:
        missing(ax, "meta_route.csv")
        return
    by = {r["mode"]: r for r in rows}
    direct = float(by["direct"]["median_us"]) if "direct" in by else None
    modes = [m for m in ("direct", "reuse", "ask") if m in by]
    labels = {"direct": "direct\n(gridrpc://)", "reuse": "routed,\ndecision reused", "ask": "routed,\nasks each call"}
    targets = {"reuse": 1.1, "ask": 2.5}
    x = range(len(modes))
    # The paired ratio (median of each round's ratio) where the bench wrote it.
    med = [float(by[m].get("x_paired") or by[m]["x_direct"]) for m in modes]
    lo = [med[i] - float(by[m]["min_us"]) / direct for i, m in enumerate(modes)] if direct else None
    hi = [float(by[m]["max_us"]) / direct - med[i] for i, m in enumerate(modes)] if direct else None
    ax.bar(x, med, yerr=[lo, hi] if direct else None, capsize=4, color=["0.6", "tab:blue", "tab:orange"][: len(modes)])
    for i, m in enumerate(modes):
        ax.annotate("%.2fx\n%.0f µs" % (med[i], float(by[m]["median_us"])), (i, 0), textcoords="offset points",
                    xytext=(0, 6), ha="center", va="bottom", fontsize=8, color="white", fontweight="bold")
        if m in targets:
            ax.plot([i - 0.4, i + 0.4], [targets[m]] * 2, "r--", linewidth=1)
            ax.annotate("target %.1fx" % targets[m], (i + 0.4, targets[m]), fontsize=7, color="r", ha="right",
                        va="bottom")
    ax.set_xticks(list(x))
    ax.set_xticklabels([labels[m] for m in modes], fontsize=8)
    ax.set_ylim(0, max(max(med) * 1.35, 2.8))
    ax.grid(True, axis="y", alpha=0.3)


def main(argv):
    d = argv[1] if len(argv) > 1 else "bench/results"
    out = argv[2] if len(argv) > 2 else os.path.join(d, "meta.svg")
    sched = read_rows(os.path.join(d, "meta_sched.csv"))
    load = read_rows(os.path.join(d, "meta_load.csv"))
    route = read_rows(os.path.join(d, "meta_route.csv"), header=False,
                      names=["mode", "median_us", "min_us", "max_us", "x_direct", "x_paired"])
    if not (sched or load or route):
        sys.stderr.write("plot_meta.py: no meta_*.csv in %s: run bench/run-meta.sh first\n" % d)
        return 1
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    sched_panel(axes[0], sched)
    load_panel(axes[1], load)
    route_panel(axes[2], route)
    fig.suptitle("gridmetad (bench/run-meta.sh)", fontsize=11)
    fig.tight_layout()
    fig.savefig(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
