#!/usr/bin/env python3
"""lanwan_readme.py: the body of docs/results/README.md for the LAN/WAN study: our
tables (bench/lanwan.sh's OUT/summary.csv) set beside the Ninf 1998 study's.

Usage: lanwan_readme.py OUT STUDY_CSV [COMMAND] > docs/results/README.md

STUDY_CSV holds the study's figures, typed in from the paper's Tables 3-8 (nothing here
invents them): columns study_table, network (lan, wan, wan4), config (task = 1-PE,
data = 4-PE), workload (linpack, ep), size (n, or m for EP), clients, site (empty
unless multi-site), perf_mean, perf_max, perf_min (Mflops / Mops), response_mean,
wait_mean (s), throughput_mean (MB/s), cpu_util (%). A row of ours with no row of
theirs gets "-" on their side; the ratios show where the shapes agree (performance
falling with c by the same factor) even though the absolute speeds are 25 years apart.
The prose (where we agree, where we differ, and why) is written by hand below the
generated part: the generator marks where it goes."""
import csv
import os
import platform
import sys


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def f(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    out, study_csv = sys.argv[1], sys.argv[2]
    command = sys.argv[3] if len(sys.argv) == 4 else "bench/lanwan.sh --full --out docs/results/lanwan"
    ours = rows(os.path.join(out, "summary.csv"))
    study = rows(study_csv) if os.path.exists(study_csv) else []
    key = lambda r: (r["network"], r["config"], r["workload"], str(int(float(r["size"]))),
                     str(int(float(r["clients"]))), r.get("site", "") if r["network"] == "wan4" else "")
    theirs = {key(r): r for r in study}
    runs = rows(os.path.join(out, "runs.csv"))
    print("# LAN/WAN multi-client study: results beside the Ninf 1998 study\n")
    print(f"Made by `{command}` on {platform.node() or 'this machine'} ({platform.machine()}, "
          f"{os.cpu_count()} cores; {runs[0]['server_desc'] if runs else ''}); "
          f"tables: `tables.md`, every call: `calls.csv`, plots: `fig7-perf.png`, `fig8-time.png`, "
          f"`fig10-sites.png`, `ep.png`. The study's figures: `{os.path.basename(study_csv)}` "
          f"({len(study)} rows typed in from the paper).\n")
    groups = {}
    for r in ours:
        groups.setdefault((r["network"], r["config"], r["workload"]), []).append(r)
    for (net, cfg, wl), rs in sorted(groups.items()):
        unit = "Mops" if wl == "ep" else "Mflops"
        print(f"## {wl}, {net}, {cfg}\n")
        print(f"| size | c | site | ours: perf mean ({unit}) | study | ours / c=1 | study / c=1 | ours: response (s) "
              f"| study | ours: wait (s) | study | ours: MB/s | study |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        base, sbase = {}, {}
        for r in sorted(rs, key=lambda r: (float(r["size"]), float(r["clients"]), r["site"])):
            t = theirs.get(key(r), {})
            p, sp = num(r["perf_mean"]), num(t.get("perf_mean"))
            b = (r["size"], r["site"])
            if float(r["clients"]) == 1:
                base[b], sbase[b] = p, sp
            rel = p / base[b] if base.get(b) and p is not None else None
            srel = sp / sbase[b] if sbase.get(b) and sp is not None else None
            print(f"| {int(float(r['size']))} | {int(float(r['clients']))} | {r['site'] if net == 'wan4' else ''} "
                  f"| {f(p)} | {f(sp)} | {f(rel, 2)} | {f(srel, 2)} | {f(num(r['response_s_mean']), 3)} "
                  f"| {f(num(t.get('response_mean')), 3)} | {f(num(r['wait_s_mean']), 3)} "
                  f"| {f(num(t.get('wait_mean')), 3)} | {f(num(r['throughput_mb_s_mean']), 2)} "
                  f"| {f(num(t.get('throughput_mean')), 2)} |")
        print()
    print("<!-- discussion: where we agree, where we differ, and why (written by hand) -->")


if __name__ == "__main__":
    main()
