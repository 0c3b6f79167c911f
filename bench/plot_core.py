"""plot_core.py: draws the core-path benchmark results (rpc_bench --csv) as one PNG."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src: str, dst: str) -> None:
    rows = list(csv.reader(open(src)))
    kv = {(r[0], r[1]): float(r[2]) for r in rows if r[0] in ("null", "bulk")}
    dm = [(int(r[1]), float(r[2]), float(r[3])) for r in rows if r[0] == "dmmul"]
    lp = [(int(r[1]), float(r[2]), float(r[3])) for r in rows if r[0] == "linpack"]
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    if ("null", "raw_us") in kv:
        ax[0][0].bar(["raw TCP", "grid_call"], [kv[("null", "raw_us")], kv[("null", "rpc_us")]],
                     color=["grey", "tab:blue"])
        ax[0][0].set_title("null call round trip (median, us)")
    if ("bulk", "raw_s") in kv:
        gb = 2 * 64 * 2**20 / 1e9
        ax[0][1].bar(["raw TCP", "grid_call"], [gb / kv[("bulk", "raw_s")], gb / kv[("bulk", "rpc_s")]],
                     color=["grey", "tab:blue"])
        ax[0][1].set_title("64 MiB there and back (GB/s)")
    if dm:
        n = [d[0] for d in dm]
        ax[1][0].plot(n, [d[1] for d in dm], "o-", color="grey", label="local dgemm")
        ax[1][0].plot(n, [d[2] for d in dm], "o-", color="tab:blue", label="remote dmmul")
        ax[1][0].set_xlabel("n")
        ax[1][0].set_ylabel("seconds")
        ax[1][0].set_title("dmmul: remote vs local")
        ax[1][0].legend()
    if lp:
        n = [d[0] for d in lp]
        ax[1][1].plot(n, [d[1] for d in lp], "o-", color="grey", label="local LU")
        ax[1][1].plot(n, [d[2] for d in lp], "o-", color="tab:blue", label="remote linpack")
        ax[1][1].set_xlabel("n")
        ax[1][1].set_ylabel("Mflops")
        ax[1][1].set_title("Linpack: remote vs local")
        ax[1][1].legend()
    fig.suptitle("GridRPC core path on loopback (server on this host)")
    fig.tight_layout()
    fig.savefig(dst, dpi=90)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
