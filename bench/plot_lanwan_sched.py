#!/usr/bin/env python3
"""plot_lanwan_sched.py: tables and plots of the LAN/WAN study's scheduling and EP
metaserver experiments (bench/lanwan/sched.sh, bench/lanwan/ep_meta.sh).

  plot_lanwan_sched.py sched --dir DIR   reads sched-calls.csv, sched-total.csv; writes
      sched.csv (one row per network, scheduler and class of call: calls, mean and worst
      seconds, where they ran), sched.md and sched.png (bars: mean, ticks: worst)
  plot_lanwan_sched.py ep --dir DIR      reads ep-meta-runs.csv; writes ep-meta.csv
      (median wall, speedup, efficiency per M and S), ep-meta.md and ep-meta.png (the
      study's Figure 11: speedup against servers, one line per problem size)

Prints the Markdown tables. Exit status 1 when an input is missing or empty, or a call
failed (ok = 0): a run with a failure has no table.
"""
import argparse
import csv
import os
import statistics
import sys
from collections import Counter, defaultdict

SCHEDS = ["round-robin", "least-load", "mct"]
CLASSES = ["dmmul", "linpack", "ep"]


def read_csv(path):
    if not os.path.exists(path):
        sys.exit("plot_lanwan_sched: %s is missing: run the study first" % path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("plot_lanwan_sched: %s has no rows" % path)
    return rows


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        print("plot_lanwan_sched: matplotlib is not installed: tables only (pip install matplotlib)")
        return None


def sched(d):
    calls = read_csv(os.path.join(d, "sched-calls.csv"))
    bad = [r for r in calls if r["ok"] != "1"]
    if bad:
        sys.exit("plot_lanwan_sched: %d calls failed or were wrong (ok = 0), e.g. %s" % (len(bad), bad[0]))
    totals = defaultdict(list)
    tpath = os.path.join(d, "sched-total.csv")
    if os.path.exists(tpath):
        for r in read_csv(tpath):
            totals[(r["net"], r["scheduler"])].append(float(r["total_s"]))
    groups = defaultdict(list)
    for r in calls:
        groups[(r["net"], r["scheduler"], r["func"])].append(r)
    nets = [n for n in ("lan", "wan") if any(k[0] == n for k in groups)]
    rows, md = [], []
    for net in nets:
        md.append("### %s: completion time per class of call (seconds; all repeats)\n" % net.upper())
        md.append("| scheduler | class | calls | mean | worst | ran on (calls per server) | all clients, total |")
        md.append("| --- | --- | ---: | ---: | ---: | --- | ---: |")
        for s in SCHEDS:
            for c in CLASSES:
                g = groups.get((net, s, c))
                if not g:
                    continue
                t = [float(r["seconds"]) for r in g]
                where = Counter(r["server"] for r in g)
                spread = " ".join("%s:%d" % (k, where[k]) for k in sorted(where))
                tot = statistics.median(totals[(net, s)]) if totals.get((net, s)) else float("nan")
                rows.append([net, s, c, len(t), "%.3f" % statistics.mean(t), "%.3f" % max(t), spread, "%.3f" % tot])
                md.append("| %s | %s | %d | %.3f | %.3f | %s | %.2f |" % (s, c, len(t), statistics.mean(t), max(t),
                                                                        spread, tot))
            g = [r for c in CLASSES for r in groups.get((net, s, c), [])]
            if g:
                t = [float(r["seconds"]) for r in g]
                md.append("| **%s** | **all** | %d | **%.3f** | **%.3f** | | |" % (s, len(t), statistics.mean(t), max(t)))
        md.append("")
        # Per site: where the communication-heavy calls went and what they cost. The
        # study's conclusion shows here: on the WAN they belong behind the fast link
        # (s1) whatever its load, except from a site whose own link is the bottleneck.
        sites = sorted({r["site"] for r in calls if r["net"] == net})
        md.append("%s, Linpack and dmmul (communication-heavy) per client site: mean seconds, calls per server\n"
                  % net.upper())
        md.append("| scheduler | " + " | ".join(sites) + " |")
        md.append("| --- |" + " --- |" * len(sites))
        for s in SCHEDS:
            cells = []
            for site in sites:
                g = [r for r in calls if r["net"] == net and r["scheduler"] == s and r["site"] == site and
                     r["func"] in ("dmmul", "linpack")]
                if not g:
                    cells.append("")
                    continue
                where = Counter(r["server"] for r in g)
                cells.append("%.2f (%s)" % (statistics.mean(float(r["seconds"]) for r in g),
                                            " ".join("%s:%d" % (k, where[k]) for k in sorted(where))))
            if any(cells):
                md.append("| %s | %s |" % (s, " | ".join(cells)))
        md.append("")
    write_csv(os.path.join(d, "sched.csv"),
              ["net", "scheduler", "class", "calls", "mean_s", "worst_s", "servers", "total_s"], rows)
    text = "\n".join(md)
    with open(os.path.join(d, "sched.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    plt = pyplot()
    if not plt:
        return
    fig, axes = plt.subplots(1, len(nets), figsize=(6 * len(nets), 4.2), squeeze=False)
    colors = {"round-robin": "#999999", "least-load": "#e08a2e", "mct": "#2e6fe0"}
    for ax, net in zip(axes[0], nets):
        width = 0.26
        for i, s in enumerate(SCHEDS):
            xs, means, worst = [], [], []
            for j, c in enumerate(CLASSES):
                g = groups.get((net, s, c))
                if not g:
                    continue
                t = [float(r["seconds"]) for r in g]
                xs.append(j + (i - 1) * width)
                means.append(statistics.mean(t))
                worst.append(max(t))
            ax.bar(xs, means, width, color=colors[s], label=s + " (mean)")
            ax.plot(xs, worst, "_", color="black", markersize=14, mew=2, label="worst" if i == 0 else None)
        ax.set_xticks(range(len(CLASSES)))
        ax.set_xticklabels(CLASSES)
        ax.set_ylabel("completion time per call (s)")
        ax.set_title("%s: mixed workload from 4 sites" % ("multi-site WAN" if net == "wan" else "LAN"))
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "sched.png"), dpi=110)
    print("plot: %s" % os.path.join(d, "sched.png"))


def ep(d):
    runs = read_csv(os.path.join(d, "ep-meta-runs.csv"))
    by = defaultdict(list)
    for r in runs:
        by[(int(r["m"]), int(r["servers"]))].append(r)
    ms = sorted({k[0] for k in by})
    rows = []
    md = ["### EP through the metaserver (mct): speedup against one server (median of repeats; each server "
          "%s%% of a CPU; load average %s-%s)\n" % (runs[0]["quota_pct"], min(r["load1"] for r in runs),
                                                     max(r["load1"] for r in runs)),
          "| M (2^M trials) | S | runs | median wall s | min-max | speedup | efficiency | >= 0.8 S | servers used "
          "| slowest part s | last start s | held | decision us |",
          "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    curves = {}
    for m in ms:
        base_runs = by.get((m, 1))
        base = statistics.median(float(r["wall_s"]) for r in base_runs) if base_runs else None
        for s in sorted(k[1] for k in by if k[0] == m):
            g = by[(m, s)]
            w = [float(r["wall_s"]) for r in g]
            med = statistics.median(w)
            sp = base / med if base else float("nan")
            eff = sp / s
            used = statistics.median(int(r["distinct_servers"]) for r in g)
            slow = statistics.median(float(r["max_part_s"]) for r in g)
            last = statistics.median(float(r["last_start_s"]) for r in g)
            held = sum(int(r["held_calls"]) for r in g)
            dus = [float(r["decide_us"]) for r in g if r["decide_us"]]
            ok = "yes" if sp >= 0.8 * s else "NO"
            rows.append([m, s, len(w), "%.4f" % med, "%.4f" % min(w), "%.4f" % max(w), "%.3f" % sp, "%.3f" % eff, ok,
                         used, "%.4f" % slow, "%.4f" % last, held, "%.1f" % (statistics.mean(dus) if dus else 0)])
            md.append("| %d | %d | %d | %.3f | %.3f-%.3f | %.2f | %.2f | %s | %g | %.3f | %.4f | %d | %.1f |" % (
                m, s, len(w), med, min(w), max(w), sp, eff, ok, used, slow, last, held,
                statistics.mean(dus) if dus else 0))
            curves.setdefault(m, []).append((s, sp))
    write_csv(os.path.join(d, "ep-meta.csv"),
              ["m", "servers", "runs", "median_s", "min_s", "max_s", "speedup", "efficiency", "at_least_0.8S",
               "servers_used", "slowest_part_s", "last_start_s", "held_calls", "decide_us"], rows)
    text = "\n".join(md)
    with open(os.path.join(d, "ep-meta.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    plt = pyplot()
    if not plt:
        return
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    smax = max(k[1] for k in by)
    ax.plot([1, smax], [1, smax], ":", color="gray", label="linear")
    ax.plot([1, smax], [0.8, 0.8 * smax], "--", color="#cccccc", label="0.8 S")
    for m in ms:
        pts = sorted(curves[m])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="2^%d trials" % m)
    ax.set_xlabel("servers S (each %s%% of a CPU)" % runs[0]["quota_pct"])
    ax.set_ylabel("speedup against one server")
    ax.set_title("EP through the metaserver (Ninf Fig. 11)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "ep-meta.png"), dpi=110)
    print("plot: %s" % os.path.join(d, "ep-meta.png"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["sched", "ep"])
    ap.add_argument("--dir", required=True, help="the folder with the study's CSV files")
    a = ap.parse_args()
    (sched if a.what == "sched" else ep)(a.dir)


if __name__ == "__main__":
    main()
