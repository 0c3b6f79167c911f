"""plot_soak.py: draws the soak's memory curves (bench/soak.sh's rss.csv) to a PNG.

One line per process (the metaserver and each server): resident memory in MiB against
minutes, with the least-squares line that soak.sh fits to the second half of each
curve drawn over that half, and its slope in KiB/min in the legend, so the picture
shows what the verdict was made from.

Usage: plot_soak.py RSS.csv OUT.png [TITLE]
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    """The times (s) and, per column, the (time, KiB) samples that have a value."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        sys.exit(f"plot_soak.py: {path}: no samples")
    names = rows[0][1:]
    series = {n: [] for n in names}
    for row in rows[1:]:
        if not row or not row[0]:
            continue
        t = float(row[0])
        for name, value in zip(names, row[1:]):
            if value.strip():
                series[name].append((t, float(value)))
    return names, series


def fit(points):
    """Slope and intercept of the least-squares line through POINTS (KiB/s, KiB)."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    sxx = sum((t - mt) ** 2 for t, _ in points)
    sxy = sum((t - mt) * (v - mv) for t, v in points)
    b = sxy / sxx if sxx > 0 else 0.0
    return b, mv - b * mt


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: plot_soak.py RSS.csv OUT.png [TITLE]")
    names, series = read(sys.argv[1])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name in names:
        pts = series[name]
        if not pts:
            continue
        ts = [t / 60 for t, _ in pts]
        line = ax.plot(ts, [v / 1024 for _, v in pts], label=name, linewidth=1)[0]
        mid = (pts[0][0] + pts[-1][0]) / 2
        half = [p for p in pts if p[0] >= mid]
        if len(half) >= 2:
            b, a = fit(half)
            xs = [half[0][0], half[-1][0]]
            ax.plot([x / 60 for x in xs], [(a + b * x) / 1024 for x in xs], "--", color=line.get_color(),
                    linewidth=1.5, label=f"{name} fit: {b * 60:+.1f} KiB/min")
    ax.set_xlabel("minutes")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(sys.argv[3] if len(sys.argv) == 4 else "soak: resident memory (VmRSS), fit over the second half")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
