#!/usr/bin/env python3
"""plot_lanwan.py: the LAN/WAN study's figures (bench/lanwan.sh) from OUT/summary.csv,
in the manner of the Ninf 1998 study's Figures 7, 8 and 10.

Usage: plot_lanwan.py OUT

  fig7-perf.png   Linpack performance (mean Mflops per call) against the number of
                  clients c, a line per n, a panel per network; task parallel solid,
                  data parallel dashed (the study's Figure 7: performance falls as
                  clients share the server, and on the WAN as they share the link)
  fig8-time.png   where a Linpack call's time goes at the largest n: mean response
                  (sending the arguments), wait (the server's queue) and the whole call,
                  against c, a panel per network (the study's Figure 8)
  fig10-sites.png the multi-site WAN: mean throughput (MB/s) and performance per site
                  against c (the study's Figure 10: each site is bound by its own link)
  ep.png          NAS EP (mean Mops per call) against c, a panel per network
A figure whose runs are not in the summary is left out."""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NETS = ["lan", "wan", "wan4", "wan1998"]
TITLES = {"lan": "LAN", "wan": "single-site WAN", "wan4": "multi-site WAN", "wan1998": "1998 WAN"}


def load(out):
    with open(os.path.join(out, "summary.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k, v in r.items():
            if k not in ("run", "network", "config", "workload", "site"):
                r[k] = float(v)
    return rows


def by_run(rows):
    """One point per run: site rows averaged, weighted by their calls."""
    runs = defaultdict(list)
    for r in rows:
        runs[r["run"]].append(r)
    merged = []
    for rs in runs.values():
        m = dict(rs[0])
        n = sum(r["calls"] for r in rs) or 1
        for k in ("perf_mean", "response_s_mean", "wait_s_mean", "throughput_mb_s_mean"):
            m[k] = sum(r[k] * r["calls"] for r in rs if r[k] == r[k]) / n
        merged.append(m)
    return merged


def panels(rows, workload, ylabel, key, fname, out, per="size"):
    nets = [n for n in NETS if any(r["network"] == n and r["workload"] == workload for r in rows)]
    if not nets:
        return
    fig, axes = plt.subplots(1, len(nets), figsize=(4.2 * len(nets), 3.6), squeeze=False)
    for ax, net in zip(axes[0], nets):
        sel = [r for r in rows if r["network"] == net and r["workload"] == workload]
        for cfg, style in (("task", "-o"), ("data", "--s")):
            for size in sorted({r["size"] for r in sel}):
                pts = sorted((r["clients"], r[key]) for r in sel if r["config"] == cfg and r["size"] == size)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                            label=f"{'n' if workload == 'linpack' else 'm'}={int(size)} {cfg}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("clients c")
        ax.set_title(TITLES.get(net, net))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    # Each panel its own legend: the LAN may have sizes the shaped networks do not.
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(out, fname), dpi=110)
    plt.close(fig)


def fig8(rows, out):
    lin = [r for r in rows if r["workload"] == "linpack"]
    if not lin:
        return
    nets = [x for x in NETS if any(r["network"] == x for r in lin)]
    fig, axes = plt.subplots(1, len(nets), figsize=(4.2 * len(nets), 3.6), squeeze=False)
    for ax, net in zip(axes[0], nets):
        # The largest n this network ran (the shaped networks may stop below the LAN's).
        n = max(r["size"] for r in lin if r["network"] == net)
        for cfg, style in (("task", "-"), ("data", "--")):
            sel = sorted((r for r in lin if r["network"] == net and r["config"] == cfg and r["size"] == n),
                         key=lambda r: r["clients"])
            if not sel:
                continue
            c = [r["clients"] for r in sel]
            ax.plot(c, [r["response_s_mean"] for r in sel], style + "o", label=f"response ({cfg})")
            ax.plot(c, [r["wait_s_mean"] for r in sel], style + "s", label=f"wait ({cfg})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("clients c")
        ax.set_title(f"{TITLES.get(net, net)}, Linpack n={int(n)}")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mean seconds per call")
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig8-time.png"), dpi=110)
    plt.close(fig)


def fig10(rows, out):
    sel = [r for r in rows if r["network"] == "wan4" and r["workload"] == "linpack"]
    if not sel:
        return
    n = max(r["size"] for r in sel)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for cfg, style in (("task", "-o"), ("data", "--s")):
        for site in sorted({r["site"] for r in sel}):
            pts = sorted((r["clients"], r["throughput_mb_s_mean"], r["perf_mean"]) for r in sel
                         if r["site"] == site and r["config"] == cfg and r["size"] == n)
            if pts:
                axes[0].plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{site} {cfg}")
                axes[1].plot([p[0] for p in pts], [p[2] for p in pts], style, label=f"{site} {cfg}")
    for ax, yl in zip(axes, ("mean throughput (MB/s)", "mean Mflops per call")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("clients c (dealt round-robin to the sites)")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"multi-site WAN, Linpack n={int(n)}")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig10-sites.png"), dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_lanwan.py OUT   (the folder bench/lanwan.sh wrote)")
    out = sys.argv[1]
    rows = load(out)
    merged = by_run(rows)
    panels(merged, "linpack", "mean Mflops per call", "perf_mean", "fig7-perf.png", out)
    fig8(merged, out)
    fig10(rows, out)
    panels(merged, "ep", "mean Mops per call", "perf_mean", "ep.png", out)
    made = [f for f in ("fig7-perf.png", "fig8-time.png", "fig10-sites.png", "ep.png")
            if os.path.exists(os.path.join(out, f))]
    print("plot_lanwan: " + ", ".join(made), file=sys.stderr)


if __name__ == "__main__":
    main()
