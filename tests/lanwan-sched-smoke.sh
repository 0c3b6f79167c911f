#!/bin/sh
# lanwan-sched-smoke.sh: the smoke run of the LAN/WAN study's scheduling study and EP
# metaserver experiment (bench/lanwan/sched.sh --smoke, bench/lanwan/ep_meta.sh --smoke)
# in the network lab: every call must run and be right (the scripts fail otherwise), and
# the CSV files must have their fields and sane values: each scheduler's calls of each
# class, on the lab's servers, in positive and bounded times; EP parts on as many servers
# as S; a speedup for every S. No performance claim is judged (the machine is shared).
# Root only (exit 77 otherwise); about 60 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
if [ "$(id -u)" != 0 ]; then
  echo "lanwan-sched-smoke: skipped: needs root (network namespaces, tc, cgroups)"
  exit 77
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/lanwan-sched-smoke.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
bash "$top/bench/lanwan/sched.sh" --smoke --out "$out"
rc=$?
[ $rc = 0 ] || {
  echo "lanwan-sched-smoke: sched.sh --smoke failed (status $rc)"
  exit $rc
}
bash "$top/bench/lanwan/ep_meta.sh" --smoke --out "$out"
rc=$?
[ $rc = 0 ] || {
  echo "lanwan-sched-smoke: ep_meta.sh --smoke failed (status $rc)"
  exit $rc
}
python3 - "$out" <<'EOF'
import csv, os, sys
d = sys.argv[1]
bad = []
def rows(name, fields):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        bad.append("%s is missing" % name)
        return []
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        missing = [x for x in fields if x not in (r.fieldnames or [])]
        if missing:
            bad.append("%s lacks the fields %s" % (name, missing))
            return []
        return list(r)
calls = rows("sched-calls.csv", ["net", "scheduler", "rep", "site", "seq", "func", "size", "server", "start_s", "seconds", "ok"])
seen = set()
for c in calls:
    seen.add((c["scheduler"], c["func"]))
    if c["ok"] != "1" or c["server"] not in ("s1", "s2", "s3") or not 0 < float(c["seconds"]) < 300:
        bad.append("sched-calls.csv: insane call %s" % c)
for s in ("round-robin", "least-load", "mct"):
    for f in ("dmmul", "linpack", "ep"):
        if (s, f) not in seen:
            bad.append("sched-calls.csv: no %s call under %s" % (f, s))
summ = rows("sched.csv", ["net", "scheduler", "class", "calls", "mean_s", "worst_s", "servers", "total_s"])
for r in summ:
    if not 0 < float(r["mean_s"]) <= float(r["worst_s"]) or int(r["calls"]) < 1:
        bad.append("sched.csv: insane row %s" % r)
if len(summ) != 9:
    bad.append("sched.csv: %d rows, not 9 (3 schedulers x 3 classes)" % len(summ))
dec = rows("sched-decisions.csv", ["tag", "id", "policy", "site", "function", "chosen"])
if not any(r["policy"] == "mct" for r in dec):
    bad.append("sched-decisions.csv: no mct decision recorded")
runs = rows("ep-meta-runs.csv", ["m", "servers", "rep", "wall_s", "distinct_servers", "max_part_s", "held_calls"])
for r in runs:
    if not 0 < float(r["wall_s"]) < 300 or int(r["distinct_servers"]) > int(r["servers"]) or int(r["distinct_servers"]) < 1:
        bad.append("ep-meta-runs.csv: insane run %s" % r)
ep = rows("ep-meta.csv", ["m", "servers", "median_s", "speedup", "efficiency"])
if sorted(int(r["servers"]) for r in ep) != [1, 2] or not all(float(r["speedup"]) > 0 for r in ep):
    bad.append("ep-meta.csv: want S = 1, 2 with positive speedups, got %s" % ep)
for p in ("sched.md", "ep-meta.md"):
    if not os.path.getsize(os.path.join(d, p)) if os.path.exists(os.path.join(d, p)) else True:
        bad.append("%s is missing or empty" % p)
for b in bad:
    print("lanwan-sched-smoke: FAIL: " + b)
sys.exit(1 if bad else 0)
EOF
rc=$?
[ $rc = 0 ] && echo "lanwan-sched-smoke: ok"
exit $rc
