#!/bin/sh
# lanwan-smoke.sh: the smoke run of bench/lanwan.sh (the LAN/WAN multi-client study) as a
# test: a short run on the LAN and the multi-site WAN of the network lab (root only),
# then checks on what it wrote: calls.csv has the study's fields; for every call
# T_submit <= T_enqueue <= T_dequeue <= T_complete, wait >= 0, performance > 0 and a
# right answer; the server's enqueue (its log's at=) falls between the client's send and
# the reply (one clock: the join of client and server is right); every run has calls and
# a summary row with a sane CPU utilisation; tables.md has a table per network and
# workload with a row per (n, c). About 20 s.
. "$top_srcdir/tests/lib.sh"
if [ "$(id -u)" != 0 ]; then
  echo "lanwan-smoke: skipped: the network lab needs root (namespaces, tc)"
  rm -rf "$T_TMP"
  exit 77
fi
out=$T_TMP/out
BUILD_DIR=$top_builddir timeout 120 bash "$top_srcdir/bench/lanwan.sh" --smoke --out "$out" >"$T_TMP/run.log" 2>&1
rc=$?
if [ $rc = 77 ]; then
  echo "lanwan-smoke: skipped: $(tail -1 "$T_TMP/run.log")"
  rm -rf "$T_TMP"
  exit 77
fi
if [ $rc = 0 ]; then ok "bench/lanwan.sh --smoke ran"; else
  fail "bench/lanwan.sh --smoke exited $rc"
  tail -20 "$T_TMP/run.log" | diag
fi
cat >"$T_TMP/check.py" <<'PY'
import csv, os, sys
out = sys.argv[1]
what = sys.argv[2]
def rows(name):
    with open(os.path.join(out, name), newline="") as f:
        return list(csv.DictReader(f))
if what == "fields":
    need = {"t_submit_ns", "t_enqueue_ns", "t_dequeue_ns", "t_complete_ns", "response_s", "wait_s", "perf",
            "throughput_mb_s", "queue_ns", "run_ns", "local", "request_id", "server_at_ns", "t_sent_ns",
            "t_reply_ns", "clock_offset_ns", "bytes_out", "bytes_in", "flops", "ok"}
    have = set(rows("calls.csv")[0].keys())
    sys.exit(f"missing fields: {sorted(need - have)}" if need - have else 0)
if what == "calls":
    bad = []
    calls = rows("calls.csv")
    for r in calls:
        t = [int(r[k]) for k in ("t_submit_ns", "t_enqueue_ns", "t_dequeue_ns", "t_complete_ns")]
        if t != sorted(t): bad.append(f"{r['run']} {r['client']}.{r['seq']}: timestamps out of order {t}")
        if float(r["wait_s"]) < 0 or float(r["response_s"]) < 0: bad.append(f"{r['run']}: negative time")
        if not float(r["perf"]) > 0: bad.append(f"{r['run']}: performance {r['perf']}")
        if r["ok"] != "1": bad.append(f"{r['run']}: wrong answer")
        if not int(r["t_sent_ns"]) <= int(r["server_at_ns"]) <= int(r["t_reply_ns"]):
            bad.append(f"{r['run']} {r['client']}.{r['seq']}: the server's at= is not between send and reply")
        if abs(int(r["t_dequeue_ns"]) - int(r["t_enqueue_ns"]) - int(r["queue_ns"])) > 1000:
            bad.append(f"{r['run']}: the log's queue time and RESULT's differ")
    print("\n".join(bad[:10]))
    sys.exit(1 if bad or len(calls) < 8 else 0)
if what == "runs":
    runs, summ = rows("runs.csv"), rows("summary.csv")
    bad = []
    for run in runs:
        s = [x for x in summ if x["run"] == run["run"]]
        if not s or any(int(x["calls"]) < 1 for x in s): bad.append(f"{run['run']}: no calls")
        for x in s:
            if not 0 < float(x["cpu_util_pct"]) <= 100 * 1.05: bad.append(f"{run['run']}: CPU {x['cpu_util_pct']}")
            if float(x["perf_min"]) > float(x["perf_mean"]) or float(x["perf_mean"]) > float(x["perf_max"]):
                bad.append(f"{run['run']}: min <= mean <= max does not hold")
    if {r["network"] for r in runs} != {"lan", "wan4"}: bad.append("networks: " + str({r["network"] for r in runs}))
    if not any(len(r["sites"].split()) == 2 for r in runs if r["network"] == "wan4"):
        bad.append("the multi-site WAN's c = 2 did not use two sites")
    print("\n".join(bad))
    sys.exit(1 if bad else 0)
if what == "tables":
    text = open(os.path.join(out, "tables.md")).read()
    tables = text.count("### Table")
    rows_ = [l for l in text.splitlines() if l.startswith("| 200 | ") or l.startswith("| 22 | ")]
    print(f"{tables} tables, {len(rows_)} rows")
    # 2 networks x 2 workloads; c = 1, 2 (the multi-site WAN's c = 2 has a row per site: 3)
    sys.exit(0 if tables == 4 and len(rows_) == 2 * (2 + 3) else 1)
PY
for what in fields calls runs tables; do
  if [ -f "$out/calls.csv" ] && python3 "$T_TMP/check.py" "$out" $what >"$T_TMP/check.out" 2>&1; then
    ok "$what"
  else
    fail "$what"
    diag <"$T_TMP/check.out"
  fi
done
finish
