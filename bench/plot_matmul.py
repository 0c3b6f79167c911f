#!/usr/bin/env python3
"""plot_matmul.py: the tables and the plot of bench/matmul-study.sh.

Reads DIR/matmul.csv (examples/dmmul_dist --csv lines, every run of every n and S),
takes the median over the repetitions of each (variant, n, S), and writes, in the layout
of the sockets-vs-CORBA study's appendix:

  matmul-tables.md   for each variant (stateless, stateful): time (s), speedup against
                     one server of the same variant, efficiency (speedup / S), one row
                     per n, one column per S; then stateless against stateful side by
                     side; then the bytes the client moved (counted from the calls, and
                     on the client's link when the lab measured it);
  matmul-summary.csv the medians, one line per (variant, n, S);
  matmul.png         time against n for each S (both variants), speedup against S, and
                     the bytes the client sent against n.

Prints the Markdown too. --no-plot skips the figure (no matplotlib needed).
"""
import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

VARIANTS = ("stateless", "stateful")


def load(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("mode") in VARIANTS]
    bad = [r for r in rows if r["ok"] != "1"]
    return rows, bad


def medians(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["mode"], int(r["n"]), int(r["servers"]))].append(r)
    out = {}
    for key, rs in groups.items():
        med = lambda col: statistics.median(float(r[col]) for r in rs)  # noqa: E731
        out[key] = {
            "reps": len(rs),
            "seconds": med("seconds"),
            "min": min(float(r["seconds"]) for r in rs),
            "max": max(float(r["seconds"]) for r in rs),
            "put_seconds": med("put_seconds"),
            "local_seconds": med("local_seconds"),
            "sent": med("sent_bytes"),
            "received": med("received_bytes"),
            "wire_tx": med("wire_tx_bytes"),
            "wire_rx": med("wire_rx_bytes"),
            "link_tx": med("link_tx_bytes"),
            "link_rx": med("link_rx_bytes"),
            "blocks": int(rs[0]["blocks"]),
        }
    return out


def table(title, ns, ss, cell):
    lines = ["", "**%s**" % title, "", "| n | " + " | ".join("S = %d" % s for s in ss) + " |",
             "|---:|" + "---:|" * len(ss)]
    for n in ns:
        lines.append("| %d | " % n + " | ".join(cell(n, s) for s in ss) + " |")
    return lines


def markdown(med, note):
    ns = sorted({k[1] for k in med})
    ss = sorted({k[2] for k in med})
    blocks = sorted({v["blocks"] for v in med.values()})
    out = ["# Distributed matrix multiply: stateless against stateful servers", ""]
    if note:
        out += [note, ""]
    out.append("C = A B, n x n doubles; the rows of A in %s blocks dealt round-robin to the S servers, "
               "one `linalg/dmmul_rows` call each, all in flight; stateless: B goes with every block; stateful: B is put once "
               "per server (`grid_data_put_np`, the puts included in the time) and every block passes "
               "the handle. Median of each cell's runs; speedup = T(S = 1) / T(S) of the same variant; "
               "efficiency = speedup / S." % "/".join(map(str, blocks)))

    def get(v, n, s):
        return med.get((v, n, s))

    for v in VARIANTS:
        if not any(k[0] == v for k in med):
            continue

        def t(n, s, v=v):
            m = get(v, n, s)
            return "%.3f" % m["seconds"] if m else "-"

        def sp(n, s, v=v):
            m, b = get(v, n, s), get(v, n, 1)
            return "%.2f" % (b["seconds"] / m["seconds"]) if m and b else "-"

        def ef(n, s, v=v):
            m, b = get(v, n, s), get(v, n, 1)
            return "%.2f" % (b["seconds"] / m["seconds"] / s) if m and b else "-"

        out += table("%s: time (s)" % v, ns, ss, t)
        out += table("%s: speedup" % v, ns, ss, sp)
        out += table("%s: efficiency" % v, ns, ss, ef)

    def ratio(n, s):
        a, b = get("stateless", n, s), get("stateful", n, s)
        return "%.2f" % (a["seconds"] / b["seconds"]) if a and b else "-"

    out += table("stateless time / stateful time (> 1: stateful is faster)", ns, ss, ratio)

    out += ["", "**bytes the client moved (MB, 10^6)**: arrays counted from the calls; wire: what the "
            "library wrote on its connections (`grid_get_stats_np`); link: the client's interface in the lab "
            "(packet headers and ACKs included)", "",
            "| n | S | arrays sent, stateless | arrays sent, stateful | ratio | received (both) | "
            "wire tx stateless | wire tx stateful | link tx stateless | link tx stateful |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in ns:
        for s in ss:
            a, b = get("stateless", n, s), get("stateful", n, s)
            if not a or not b:
                continue
            link = lambda m: "%.1f" % (m["link_tx"] / 1e6) if m["link_tx"] > 0 else "-"  # noqa: E731
            out.append("| %d | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f | %s | %s |" % (
                n, s, a["sent"] / 1e6, b["sent"] / 1e6, a["sent"] / b["sent"], a["received"] / 1e6,
                a["wire_tx"] / 1e6, b["wire_tx"] / 1e6, link(a), link(b)))
    local = {n: statistics.median(m["local_seconds"] for k, m in med.items() if k[1] == n) for n in ns}
    out += ["", "Local dgemm on the client's host (unlimited CPU, for scale): " +
            ", ".join("n = %d: %.3f s" % (n, local[n]) for n in ns) + "."]
    return out


def plot(med, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted({k[1] for k in med})
    ss = sorted({k[2] for k in med})
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4.2))
    for i, s in enumerate(ss):
        color = "C%d" % i
        for v, style in (("stateless", "-"), ("stateful", "--")):
            xs = [n for n in ns if (v, n, s) in med]
            if xs:
                ax1.plot(xs, [med[(v, n, s)]["seconds"] for n in xs], style, marker="o", color=color,
                         label="%s, S = %d" % (v, s))
    ax1.set_xlabel("n")
    ax1.set_ylabel("time (s)")
    ax1.set_yscale("log")
    ax1.set_title("time (solid: stateless, dashed: stateful)")
    ax1.legend(fontsize=7)
    for i, n in enumerate(ns):
        color = "C%d" % i
        for v, style in (("stateless", "-"), ("stateful", "--")):
            xs = [s for s in ss if (v, n, s) in med and (v, n, 1) in med]
            if xs:
                ax2.plot(xs, [med[(v, n, 1)]["seconds"] / med[(v, n, s)]["seconds"] for s in xs], style,
                         marker="o", color=color, label="%s, n = %d" % (v, n))
    ax2.plot(ss, ss, ":", color="gray", label="linear")
    ax2.set_xlabel("servers S")
    ax2.set_ylabel("speedup against S = 1")
    ax2.set_xticks(ss)
    ax2.set_title("speedup")
    ax2.legend(fontsize=6, ncol=2)
    for i, s in enumerate(ss):
        for v, style in (("stateless", "-"), ("stateful", "--")):
            xs = [n for n in ns if (v, n, s) in med]
            if xs:
                ax3.plot(xs, [med[(v, n, s)]["wire_tx"] / 1e6 for n in xs], style, marker="o", color="C%d" % i,
                         label="%s, S = %d" % (v, s))
    ax3.set_xlabel("n")
    ax3.set_ylabel("MB the client sent (library's count)")
    ax3.set_yscale("log")
    ax3.set_title("bytes sent (solid: stateless, dashed: stateful)")
    ax3.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="folder with matmul.csv; the outputs go there")
    ap.add_argument("--note", default="", help="a line for the top of the tables (the machine's load)")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args()
    path = os.path.join(a.dir, "matmul.csv")
    if not os.path.exists(path):
        sys.exit("plot_matmul: no %s: run bench/matmul-study.sh first" % path)
    rows, bad = load(path)
    if not rows:
        sys.exit("plot_matmul: %s has no runs" % path)
    if bad:
        print("plot_matmul: %d run(s) failed or gave a wrong C; left out of the tables" % len(bad), file=sys.stderr)
    med = medians([r for r in rows if r["ok"] == "1"])
    md = markdown(med, a.note)
    with open(os.path.join(a.dir, "matmul-tables.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.dir, "matmul-summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "n", "servers", "blocks", "reps", "median_s", "min_s", "max_s", "put_s", "sent_bytes",
                    "received_bytes", "wire_tx_bytes", "wire_rx_bytes", "link_tx_bytes", "link_rx_bytes", "speedup", "efficiency"])
        for (v, n, s), m in sorted(med.items()):
            b = med.get((v, n, 1))
            sp = b["seconds"] / m["seconds"] if b else float("nan")
            w.writerow([v, n, s, m["blocks"], m["reps"], "%.6f" % m["seconds"], "%.6f" % m["min"],
                        "%.6f" % m["max"], "%.6f" % m["put_seconds"], int(m["sent"]), int(m["received"]),
                        int(m["wire_tx"]), int(m["wire_rx"]),
                        int(m["link_tx"]), int(m["link_rx"]), "%.3f" % sp, "%.3f" % (sp / s)])
    print("\n".join(md))
    if not a.no_plot:
        plot(med, os.path.join(a.dir, "matmul.png"))
        print("\nplot: %s" % os.path.join(a.dir, "matmul.png"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
