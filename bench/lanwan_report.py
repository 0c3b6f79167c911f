#!/usr/bin/env python3
"""lanwan_report.py: the measures of the LAN/WAN multi-client study (bench/lanwan.sh) from
its raw files, as the Ninf 1998 study defines them, and its tables in the study's layout.

Usage: lanwan_report.py OUT [--skew-correct]

OUT is the folder bench/lanwan.sh wrote: runs.csv (one row per run), calls/RUN.SITE.csv
(one line per call, from bench/lanwan_client) and logs/SERVER.log (gridrpcd's log, one
line per call: `call LOCAL FN id=ID ... at=NS queue=Qms run=Rms ok`). It writes
OUT/calls.csv (every call with its four timestamps and measures), OUT/summary.csv (max,
min, mean per run and site) and OUT/tables.md (one table per network, server
configuration and workload: a row per (n, c), as the study's Tables 3-8).

Each call is joined to its server log line by the connection's local address and the
request id (what the client library reports in grid_last_call_times_np), and the log's
at= (the enqueue, on the server's CLOCK_MONOTONIC) puts T_enqueue and T_dequeue on the
client's time line:
  T_submit   the client starts the call                       (client clock)
  T_enqueue  the server has the whole request and queues it   (server: at)
  T_dequeue  the function starts                              (server: at + queue)
  T_complete the result is in the client's buffers            (client clock)
  response   = T_enqueue - T_submit (sending the arguments)
  wait       = T_dequeue - T_enqueue (the server's queue)
  performance= flops / (T_complete - T_submit), Mflops (EP: Mops)
  throughput = (bytes out + bytes in) / transfer time, MB/s (10^6 bytes), where the
               transfer time is the call's time less the server's queue and run
               ((T_enqueue - T_submit) + (T_complete - T_run_end)): no clock of the
               server in it, so it needs no skew correction.
On one machine (the lab's namespaces share CLOCK_MONOTONIC) the offset between the
clocks is 0. For hosts with clocks of their own, --skew-correct estimates one offset per
client host as NTP does (the median over its calls of ((at - t_sent) + (end - t_reply))
/ 2, end = at + queue + run: the request's and the reply's one-way times taken equal);
the raw fields stay in calls.csv so that any other correction can be applied.

Per run: the server's CPU utilisation (its CPU time over the window and its cores), the
machine's load average (1 min, from /proc/loadavg: on a shared machine it counts other
work too), the server's own load (the mean number of calls queued or running over the
window: sum of (queue + run) / window, Little's law) and the number of calls.

Exits 1 when a call has no log line, its timestamps are out of order, or its answer was
wrong (the checks the smoke test relies on)."""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

LOG_RE = re.compile(
    r"gridrpcd \w+: call (\S+) (\S+) id=(\d+) in=(\d+) out=(\d+) at=(\d+) queue=([0-9.]+)ms run=([0-9.]+)ms (\S+)"
)

# What the tables call things.
NETWORK_TITLES = {
    "lan": "LAN (unshaped veth)",
    "wan": "single-site WAN (every client behind one shaped link)",
    "wan4": "multi-site WAN (4 client sites, each behind its own link)",
    "wan1998": "1998 WAN (link speed / server speed at the Ninf study's ratio)",
}
CONFIG_TITLES = {
    "task": "task parallel (1 BLAS thread per call, calls side by side: the study's 1-PE)",
    "data": "data parallel (every core for one call, calls in sequence: the study's 4-PE)",
}
MEASURES = [  # column, unit in the tables
    ("perf", "Mflops"),
    ("response_s", "s"),
    ("wait_s", "s"),
    ("throughput_mb_s", "MB/s"),
]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_log(path):
    """(local, id) -> list of (at_ns, queue_ns, run_ns, function)."""
    entries = defaultdict(list)
    if not os.path.exists(path):
        return entries
    with open(path, errors="replace") as f:
        for line in f:
            m = LOG_RE.search(line)
            if m and m.group(9) == "ok":
                entries[(m.group(1), int(m.group(3)))].append(
                    (int(m.group(6)), float(m.group(7)) * 1e6, float(m.group(8)) * 1e6, m.group(2))
                )
    return entries


CALL_FIELDS = [
    "client", "seq", "local", "request_id", "t_submit_ns", "t_sent_ns", "t_reply_ns", "t_complete_ns",
    "queue_ns", "run_ns", "bytes_out", "bytes_in", "flops", "ok",
]


def read_calls(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) != len(CALL_FIELDS):
                continue
            r = dict(zip(CALL_FIELDS, parts))
            for k in CALL_FIELDS:
                if k != "local":
                    r[k] = float(r[k]) if k == "flops" else int(r[k])
            rows.append(r)
    return rows


def join(call, entries):
    """The server's log entry of CALL: same connection end and id; of several (a port
    used again by a later connection), the one queued between its sending and its reply,
    else the one nearest to its sending."""
    cands = entries.get((call["local"], call["request_id"]), [])
    if not cands:
        return None
    inside = [e for e in cands if call["t_sent_ns"] <= e[0] <= call["t_reply_ns"]]
    pool = inside or cands
    return min(pool, key=lambda e: abs(e[0] - call["t_sent_ns"]))


def stats(v):
    return (max(v), min(v), statistics.fmean(v)) if v else (float("nan"),) * 3


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    skew = "--skew-correct" in sys.argv[1:]
    if len(args) != 1 or any(a not in ("--skew-correct",) for a in sys.argv[1:] if a.startswith("--")):
        sys.exit(__doc__.split("\n\n")[1])
    out = args[0]
    runs = read_csv(os.path.join(out, "runs.csv"))
    logs = {}
    problems = []
    all_calls, summary = [], []
    for run in runs:
        log = run["server_log"]
        if log not in logs:
            logs[log] = read_log(os.path.join(out, log))
        entries = logs[log]
        sites = run["sites"].split()
        window = (int(run["t1_ns"]) - int(run["t0_ns"])) / 1e9
        run_calls = []
        for site in sites:
            calls = read_calls(os.path.join(out, "calls", f"{run['run']}.{site}.csv"))
            offset = 0.0
            joined = []
            for c in calls:
                e = join(c, entries)
                if e is None:
                    problems.append(f"run {run['run']} site {site}: call {c['client']}.{c['seq']} "
                                    f"({c['local']} id {c['request_id']}) has no line in {log}")
                    continue
                joined.append((c, e))
            if skew and joined:
                offset = statistics.median(
                    ((e[0] - c["t_sent_ns"]) + (e[0] + e[1] + e[2] - c["t_reply_ns"])) / 2 for c, e in joined
                )
            for c, e in joined:
                at, q, r, _fn = e
                t_enq = at - offset
                t_deq = t_enq + q
                t_end = t_deq + r
                total = c["t_complete_ns"] - c["t_submit_ns"]
                transfer = total - c["queue_ns"] - c["run_ns"]
                row = {
                    "run": run["run"], "network": run["network"], "config": run["config"],
                    "workload": run["workload"], "size": run["size"], "clients": run["clients"], "site": site,
                    "client": c["client"], "seq": c["seq"], "local": c["local"], "request_id": c["request_id"],
                    "t_submit_ns": c["t_submit_ns"], "t_enqueue_ns": round(t_enq), "t_dequeue_ns": round(t_deq),
                    "t_run_end_ns": round(t_end), "t_complete_ns": c["t_complete_ns"],
                    "t_sent_ns": c["t_sent_ns"], "t_reply_ns": c["t_reply_ns"], "server_at_ns": at,
                    "clock_offset_ns": round(offset), "queue_ns": c["queue_ns"], "run_ns": c["run_ns"],
                    "bytes_out": c["bytes_out"], "bytes_in": c["bytes_in"], "flops": c["flops"], "ok": c["ok"],
                    "response_s": (t_enq - c["t_submit_ns"]) / 1e9, "wait_s": (t_deq - t_enq) / 1e9,
                    "run_s": c["run_ns"] / 1e9, "total_s": total / 1e9,
                    "perf": c["flops"] / total * 1e3 if total > 0 else 0.0,
                    "throughput_mb_s": (c["bytes_out"] + c["bytes_in"]) / transfer * 1e3 if transfer > 0 else 0.0,
                }
                order = [row["t_submit_ns"], row["t_enqueue_ns"], row["t_dequeue_ns"], row["t_complete_ns"]]
                if order != sorted(order):
                    problems.append(f"run {run['run']} call {c['client']}.{c['seq']}: T_submit <= T_enqueue <= "
                                    f"T_dequeue <= T_complete does not hold: {order}")
                if not c["ok"]:
                    problems.append(f"run {run['run']} call {c['client']}.{c['seq']}: wrong answer")
                run_calls.append(row)
            srow = {
                "run": run["run"], "network": run["network"], "config": run["config"],
                "workload": run["workload"], "size": int(run["size"]), "clients": int(run["clients"]),
                "site": site, "calls": sum(1 for x in run_calls if x["site"] == site),
            }
            site_rows = [x for x in run_calls if x["site"] == site]
            for key, _unit in MEASURES:
                srow[key + "_max"], srow[key + "_min"], srow[key + "_mean"] = stats([x[key] for x in site_rows])
            summary.append(srow)
        # Per run: the server's figures (the same on every site's row).
        busy = sum(x["queue_ns"] + x["run_ns"] for x in run_calls) / 1e9
        cores = float(run["server_cores"])
        for srow in summary:
            if srow["run"] == run["run"]:
                srow["run_calls"] = len(run_calls)
                srow["window_s"] = window
                srow["cpu_util_pct"] = 100 * float(run["server_cpu_s"]) / (window * cores) if window > 0 else 0
                srow["server_load"] = busy / window if window > 0 else 0
                srow["loadavg"] = float(run["loadavg_end"])
        if not run_calls:
            problems.append(f"run {run['run']}: no call completed")
        all_calls.extend(run_calls)

    if all_calls:
        with open(os.path.join(out, "calls.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(all_calls[0].keys()))
            w.writeheader()
            w.writerows(all_calls)
    if summary:
        with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(summary[0].keys()))
            w.writeheader()
            for s in summary:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in s.items()})
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write(tables(summary, runs))
    for p in problems[:20]:
        print("lanwan_report: " + p, file=sys.stderr)
    if len(problems) > 20:
        print(f"lanwan_report: ... and {len(problems) - 20} more", file=sys.stderr)
    print(f"lanwan_report: {len(all_calls)} calls in {len(runs)} runs; {out}/tables.md, summary.csv, calls.csv",
          file=sys.stderr)
    return 1 if problems else 0


def fmt(v, unit):
    if v != v:  # nan
        return "-"
    if unit == "s":
        return f"{v:.3f}"
    if v < 1:
        return f"{v:.3g}"
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def tables(summary, runs):
    """Markdown: one table per (network, config, workload), rows (n, c[, site])."""
    groups = defaultdict(list)
    for s in summary:
        groups[(s["network"], s["config"], s["workload"])].append(s)
    net_order = list(NETWORK_TITLES)
    lines = []
    meta = runs[0] if runs else {}
    if meta:
        lines.append(f"Server: {meta.get('server_desc', '')}; {meta.get('seconds', '?')} s of calls per run.\n")
    tno = 0
    def order(k):
        return (net_order.index(k[0]) if k[0] in net_order else 99, k[1] != "task", k[2] != "linpack")

    for key in sorted(groups, key=order):
        net, cfg, wl = key
        tno += 1
        rows = sorted(groups[key], key=lambda s: (s["size"], s["clients"], s["site"]))
        multi = len({s["site"] for s in rows}) > 1
        perf_unit = "Mops" if wl == "ep" else "Mflops"
        size_name = "m (2^m pairs)" if wl == "ep" else "n"
        lines.append(f"### Table {tno}: {'Linpack' if wl == 'linpack' else 'NAS EP'}, "
                     f"{NETWORK_TITLES.get(net, net)}, {CONFIG_TITLES.get(cfg, cfg)}\n")
        head = [size_name, "c"] + (["site"] if multi else []) + ["calls"]
        for key2, unit in MEASURES:
            name = {"perf": f"perf. ({perf_unit})", "response_s": "response (s)", "wait_s": "wait (s)",
                    "throughput_mb_s": "throughput (MB/s)"}[key2]
            head += [f"{name} max", "min", "mean"]
        head += ["CPU util (%)", "server load", "load avg"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---:|" * len(head))
        for s in rows:
            cells = [str(s["size"]), str(s["clients"])] + ([s["site"]] if multi else []) + [str(s["calls"])]
            for key2, unit in MEASURES:
                u = "Mflops" if key2 == "perf" else unit
                cells += [fmt(s[key2 + "_max"], u), fmt(s[key2 + "_min"], u), fmt(s[key2 + "_mean"], u)]
            cells += [f"{s.get('cpu_util_pct', 0):.0f}", f"{s.get('server_load', 0):.2f}",
                      f"{s.get('loadavg', 0):.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
