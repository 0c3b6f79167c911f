#!/usr/bin/env bash
# txn-grid.sh: transactions (grid_transaction_begin/_end) on a whole grid on loopback:
# gridmetad and three gridrpcd. Independent calls of one transaction run at the same
# time on different servers (their run intervals, read from the servers' call log
# lines, overlap); chains with dependencies (Linpack factor then several solves, daxpy
# over overlapping ranges, sub-ranges) end bit for bit as the same calls run one by one;
# a server killed (SIGKILL) in the middle of a transaction costs nothing but a rerun;
# abort runs nothing; nesting, asynchronous calls inside and a failing call give clear
# errors. Also with no metaserver (one configured server runs everything). TAP output.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
CLIENT=$B/txn-client
export GRIDRPC_QUIET=1
unset GRIDRPC_SERVER GRIDRPC_CONFIG GRIDRPC_METASERVER
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

"$B/gridmetad" --host 127.0.0.1 --port 0 --db "$T_TMP/registry.db" --heartbeat 100ms --http 0 \
  >"$T_TMP/meta.out" 2>"$T_TMP/meta.err" &
pids+=("$!")
wait_line "$T_TMP/meta.out" '^listening on ' || { fail "gridmetad starts"; diag <"$T_TMP/meta.err"; finish; exit 1; }
META=$(sed -n 's/^listening on //p' "$T_TMP/meta.out")
declare -A srv_pid
for name in s1 s2 s3; do
  "$B/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$B/stubs/.libs" --threads 2 --max-array 4M \
    --metaserver "$META" --name "$name" >"$T_TMP/$name.out" 2>"$T_TMP/$name.log" &
  srv_pid[$name]=$!
  pids+=("$!")
done
count_up() {
  "$B/gridrpc" --metaserver "$META" --json status 2>/dev/null |
    python3 -c 'import json,sys; print(sum(s["state"]=="up" for s in json.load(sys.stdin)["servers"]))' 2>/dev/null
}
for _ in $(seq 1 100); do [ "$(count_up)" = 3 ] && break; sleep 0.1; done
if [ "$(count_up)" = 3 ]; then ok "three servers register"; else fail "three servers register"; fi
export GRIDRPC_METASERVER=$META

# run NAME ARGS...: runs the client (60 s at most); ok when it exits 0, its output kept in $T_TMP/NAME.txt.
run() {
  _name=$1; shift
  if timeout 60 "$CLIENT" "$@" >"$T_TMP/$_name.txt" 2>&1; then ok "$_name"; else fail "$_name"; diag <"$T_TMP/$_name.txt"; fi
}
# stat FILE KEY: a counter of the client's "stats" line.
stat() { sed -n "s/^stats .*\b$2=\([0-9.]*\).*/\1/p" "$1" | tail -n 1; }

# Four independent 1.5 s calls: the servers' logs show them running at the same time on
# at least two servers (each call's log line is written at its end: [end - run, end]).
run "independent calls in one transaction" indep 4 1.5
overlap=$(python3 - "$T_TMP" <<'PY'
import re, sys, datetime, glob
iv = []
for f in sorted(glob.glob(sys.argv[1] + "/s?.log")):
    for line in open(f):
        m = re.match(r"(\S+) gridrpcd info: call \S+ test/sleep .* run=([0-9.]+)ms ok", line)
        if not m: continue
        end = datetime.datetime.fromisoformat(m.group(1)).timestamp()
        run = float(m.group(2)) / 1000
        if run > 1.0: iv.append((f, end - run, end))
best = 0
for i in range(len(iv)):
    for j in range(len(iv)):
        if iv[i][0] != iv[j][0]:
            best = max(best, min(iv[i][2], iv[j][2]) - max(iv[i][1], iv[j][1]))
print("%d %.2f" % (len(iv), best))
PY
)
n_sleeps=${overlap%% *}
ov=${overlap##* }
if [ "$n_sleeps" = 4 ] && python3 -c "import sys; sys.exit(0 if $ov > 1.0 else 1)"; then
  ok "independent calls ran at the same time on different servers (overlap ${ov}s in the servers' logs)"
else
  fail "concurrency in the logs: $overlap (calls found, longest overlap across servers)"; cat "$T_TMP"/s?.log | grep 'test/sleep' | diag
fi
servers=$(stat "$T_TMP/independent calls in one transaction.txt" servers)
[ "${servers:-0}" -ge 2 ] && ok "the transaction used $servers servers" || fail "the transaction used ${servers:-?} servers"

run "linpack chain: dgefa then 4 dgesl" linpack 200 4
raw=$(stat "$T_TMP/linpack chain: dgefa then 4 dgesl.txt" raw)
[ "$raw" = 4 ] && ok "the linpack chain has 4 read-after-write edges (each solve on the factors)" || fail "linpack RAW edges: $raw, not 4"
run "daxpy over overlapping ranges" daxpy 1000
f="$T_TMP/daxpy over overlapping ranges.txt"
raw=$(stat "$f" raw); war=$(stat "$f" war); waw=$(stat "$f" waw)
# The five calls of daxpy_seq (txn_client.c), y being 3000 doubles: 1 reads and writes
# y[0,1000); 2 reads y[0,3000), writes y[1000,3000); 3 reads y[2000,3000) and y[500,1500),
# writes y[500,1500); 4 reads and writes y[2000,3000); 5 reads y[250,750) and y[2500,3000),
# writes y[2500,3000). RAW: 1-2 1-3 1-5 2-3 2-4 2-5 3-5 4-5; WAR: 1-3 2-3 2-4 2-5 3-4 3-5
# 4-5; WAW: 1-3 2-3 2-4 2-5 4-5.
if [ "$raw" = 8 ] && [ "$war" = 7 ] && [ "$waw" = 5 ]; then ok "daxpy graph: 8 RAW, 7 WAR, 5 WAW pairs"; else fail "daxpy graph: raw=$raw war=$war waw=$waw, not 8 7 5"; fi
run "sub-ranges and strides, disjoint and overlapping" subrange 999
run "abort drops everything" abort 100
run "errors: nesting, async inside, the failed call named" errors 100

# A server killed in the middle: six 2 s producers over three servers and a chain over
# their results; one server is killed while it runs them.
timeout 90 "$CLIENT" kill 5000 6 2 >"$T_TMP/kill.txt" 2>&1 &
cpid=$!
wait_line "$T_TMP/kill.txt" '^running' || true
sleep 0.8
kill -KILL "${srv_pid[s2]}"
if wait "$cpid"; then ok "a server killed mid-transaction: the transaction still succeeds with correct results"; else fail "killed server"; diag <"$T_TMP/kill.txt"; fi
reruns=$(stat "$T_TMP/kill.txt" reruns)
[ "${reruns:-0}" -ge 1 ] && ok "the killed server's calls were rerun elsewhere ($reruns)" || { fail "no rerun seen (${reruns:-?})"; diag <"$T_TMP/kill.txt"; }

# No metaserver: the configured server runs everything, still correct.
S1=$(sed -n 's/^listening on //p' "$T_TMP/s1.out" | head -n 1)
[ -n "$S1" ] || S1=$(grep -o 'listening on [^ ]*' "$T_TMP/s1.log" | head -n 1 | sed 's/listening on //')
unset GRIDRPC_METASERVER
export GRIDRPC_SERVER=$S1
run "no metaserver: the configured server runs the linpack chain" linpack 100 3
servers=$(stat "$T_TMP/no metaserver: the configured server runs the linpack chain.txt" servers)
[ "$servers" = 1 ] && ok "without a metaserver one server ran it" || fail "servers without a metaserver: $servers"
finish
