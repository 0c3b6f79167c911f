#!/usr/bin/env python3
"""plot_meta_lab.py: the tables and the plot of bench/meta-lab-study.sh.

Reads the study's raw CSV files in --dir (meta-lab-ep.csv, meta-lab-mix-calls.csv,
meta-lab-mix-total.csv; either study may be missing), prints the tables, writes the
per-scheduler summary meta-lab-mix.csv and the figure meta-lab.svg: EP speedup against
servers, and mean / worst completion time per call for each scheduler, LAN and WAN.
"""
import argparse
import csv
import os
import statistics
import sys
from collections import Counter, defaultdict


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ep_table(rows):
    """Median wall time and speedup per server count; the spread of the calls."""
    by_s = defaultdict(list)
    for r in rows:
        by_s[int(r["servers"])].append(r)
    if not by_s:
        return []
    base = statistics.median(float(r["wall_s"]) for r in by_s[min(by_s)])
    out = []
    flagged = False
    print("EP spread (%s calls of m = %s at once; median of %d runs)" % (rows[0]["calls"], rows[0]["m"], len(by_s[min(by_s)])))
    print("%8s %10s %12s %8s %10s   %s" % ("servers", "wall_s", "min-max", "speedup", "held",
                                          "calls per server (client's view, each run)"))
    for s in sorted(by_s):
        walls = [float(r["wall_s"]) for r in by_s[s]]
        med = statistics.median(walls)
        # Calls the metaserver held (every server full), and for how long, over the runs.
        nheld = sum(int(r.get("held_calls") or 0) for r in by_s[s] if (r.get("held_calls") or "?") != "?")
        sheld = sum(float(r.get("held_s") or 0) for r in by_s[s] if (r.get("held_s") or "?") != "?")
        held = "%d/%.0fs%s" % (nheld, sheld, "*" if nheld else "")
        flagged = flagged or nheld > 0
        out.append((s, med, base / med, nheld))
        print("%8d %10.2f %12s %8.2f %10s   %s" % (s, med, "%.2f-%.2f" % (min(walls), max(walls)), base / med, held,
                                                 " | ".join(r["spread_client"] for r in by_s[s])))
    if flagged:
        print("* calls held by the metaserver (every server full) for that long in all: the wall time includes "
              "the holds, and speedups against a held run are not the servers' doing")
    return out


def mix_table(calls, totals, path):
    """Mean and worst completion time per call and the total, per set-up and scheduler."""
    groups = defaultdict(list)
    for r in calls:
        groups[(r["setup"], r["scheduler"])].append(r)
    tot = defaultdict(list)
    for r in totals:
        tot[(r["setup"], r["scheduler"])].append(float(r["total_s"]))
    order = {"mct": 0, "least-load": 1, "round-robin": 2}
    keys = sorted(groups, key=lambda k: (k[0] != "LAN", order.get(k[1], 9)))
    summary = []
    if not keys:
        return summary
    print()
    print("Schedulers, mixed workload (dmmul and EP from several clients); seconds per call")
    print("%-5s %-12s %5s %6s %8s %8s %8s %10s %10s   %s" % ("setup", "scheduler", "calls", "failed", "mean", "worst",
                                                          "total", "dmmul_mean", "ep_mean", "where (func: server x calls)"))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["setup", "scheduler", "calls", "failed", "mean_s", "worst_s", "total_s", "dmmul_mean_s", "ep_mean_s",
                    "dmmul_on", "ep_on"])
        for k in keys:
            rs = groups[k]
            secs = [float(r["seconds"]) for r in rs]
            failed = sum(r["ok"] != "1" for r in rs)
            per = {fn: [float(r["seconds"]) for r in rs if r["func"] == fn] for fn in ("dmmul", "ep")}
            where = {fn: " ".join("%s x%d" % kv for kv in sorted(Counter(r["server"] for r in rs if r["func"] == fn).items()))
                     for fn in ("dmmul", "ep")}
            total = statistics.median(tot[k]) if tot[k] else float("nan")
            mean = statistics.mean(secs)
            worst = max(secs)
            dm = statistics.mean(per["dmmul"]) if per["dmmul"] else float("nan")
            em = statistics.mean(per["ep"]) if per["ep"] else float("nan")
            w.writerow([k[0], k[1], len(rs), failed, "%.3f" % mean, "%.3f" % worst, "%.3f" % total, "%.3f" % dm,
                        "%.3f" % em, where["dmmul"], where["ep"]])
            print("%-5s %-12s %5d %6d %8.2f %8.2f %8.2f %10.2f %10.2f   dmmul: %s; ep: %s" % (
                k[0], k[1], len(rs), failed, mean, worst, total, dm, em, where["dmmul"], where["ep"]))
            summary.append((k, mean, worst, total))
    return summary


def plot(ep, mix, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_meta_lab: matplotlib is not installed: no plot (the tables above have the figures)", file=sys.stderr)
        return
    panels = (1 if ep else 0) + (1 if mix else 0)
    if panels == 0:
        return
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    axes = axes[0]
    i = 0
    if ep:
        ax = axes[i]
        i += 1
        s = [e[0] for e in ep]
        ax.plot(s, [e[2] for e in ep], "o-", label="measured")
        ax.plot(s, s, "--", color="grey", label="ideal")
        for e in ep:
            if e[3]:
                ax.annotate("%d calls held\nby the metaserver" % e[3], (e[0], e[2]), textcoords="offset points",
                            xytext=(8, -4), fontsize=8, color="firebrick")
        ax.set_xlabel("servers (40% of a CPU each)")
        ax.set_ylabel("speedup against one server")
        ax.set_xticks(s)
        ax.set_title("EP spread by the metaserver (mct)")
        ax.legend()
    if mix:
        ax = axes[i]
        labels = ["%s\n%s" % k for k, _, _, _ in mix]
        x = range(len(mix))
        ax.bar([v - 0.27 for v in x], [m[1] for m in mix], 0.27, label="mean per call")
        ax.bar(list(x), [m[2] for m in mix], 0.27, label="worst call")
        ax.bar([v + 0.27 for v in x], [m[3] for m in mix], 0.27, label="total (all clients, median round)")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("seconds")
        ax.set_title("dmmul + EP mix, three schedulers")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print("\nplot: %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
                    help="the folder with the study's CSV files (default bench/results)")
    a = ap.parse_args()
    ep_rows = read_csv(os.path.join(a.dir, "meta-lab-ep.csv"))
    calls = read_csv(os.path.join(a.dir, "meta-lab-mix-calls.csv"))
    totals = read_csv(os.path.join(a.dir, "meta-lab-mix-total.csv"))
    if not ep_rows and not calls:
        print("plot_meta_lab: no results in %s: run bench/meta-lab-study.sh first" % a.dir, file=sys.stderr)
        return 1
    ep = ep_table(ep_rows)
    mix = mix_table(calls, totals, os.path.join(a.dir, "meta-lab-mix.csv"))
    plot(ep, mix, os.path.join(a.dir, "meta-lab.svg"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
