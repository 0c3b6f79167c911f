#!/bin/sh
# soak.sh: the soak of issue 13, item 5. Starts a gridmetad and two gridrpcd registered
# with it on loopback, runs a mix of clients through the metaserver for --minutes M
# (default 10), samples the resident memory (VmRSS of /proc/PID/status) of the
# metaserver and of each server every second into a CSV, and at the end fits a line
# to the second half of each curve (the first half is warm-up: pools, caches and
# malloc arenas fill) and compares its growth with the noise around the line. Fails
# (exit 1) when a client failed or when memory grew beyond noise.
#
# The clients, all through the metaserver, all checking their results:
#   persistent  load_bench --mode external: --clients C (default 4) processes, each on
#               its connections for the whole soak, sync calls (test/echo_double,
#               linalg/dmmul) in a loop: per-call state that leaks shows here;
#   rounds      one program after the other, each a new process (connect, HELLO,
#               descriptors, close: per-connection state that leaks shows here):
#               examples/dmmul (sync), examples/ep (async calls, grid_wait_all),
#               examples/dmmul_handle (remote data handles: put, use, free),
#               gridrpc submit / fetch --wait / forget (two-phase calls, jobs on disk),
#               gridrpc call test/file_upper (file arguments both ways).
#
# Growth rule: over the second half, slope b of the least-squares line (KiB/s), the
# standard deviation s of the samples around it, the growth g = b x (length of the
# half). A curve grows beyond noise when g > 3 s AND g > --floor KiB (default 1024:
# one malloc arena's step is not a leak).
#
# Usage: soak.sh [--minutes M] [--seconds S] [--clients C] [--out DIR] [--build DIR]
#                [--floor KIB] [--plot]
#        soak.sh --analyse CSV [--floor KIB]    only the analysis of a CSV (columns:
#                seconds, then one column of KiB per process, with a header line)
# Files in --out (default bench/results/soak-YYYYmmdd-HHMMSS): rss.csv, summary.txt,
# the servers' logs, soak.png with --plot (bench/plot_soak.py, matplotlib).
set -u

here=$(cd "$(dirname "$0")" && pwd)
minutes=10 seconds= clients=4 out= build= floor=1024 analyse= plot=0
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=${2:?--minutes needs a number}; shift ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift ;;
    --clients) clients=${2:?--clients needs a number}; shift ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --build) build=${2:?--build needs the build folder}; shift ;;
    --floor) floor=${2:?--floor needs KiB}; shift ;;
    --analyse|--analyze) analyse=${2:?--analyse needs a CSV file}; shift ;;
    --plot) plot=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $floor in ''|*[!0-9.]*) echo "soak.sh: --floor must be a number of KiB, not '$floor'" >&2; exit 2 ;; esac

# analyse CSV: one line per column, exit status 1 when one grows beyond noise (or the
# CSV is too short to judge: fewer than 4 samples in its second half).
analyse_csv() {
  [ -f "$1" ] && [ -r "$1" ] || { echo "soak.sh: cannot read '$1' (a CSV file: seconds, then KiB per process)" >&2; return 2; }
  awk -F, -v floor="$floor" '
    NR == 1 { ncol = NF; for (c = 1; c <= NF; c++) name[c] = $c; next }
    NF >= 2 && $1 != "" { n++; t[n] = $1 + 0; for (c = 2; c <= ncol; c++) v[n, c] = $c }
    END {
      if (n < 2) { print "soak: too few samples to judge (" n ")"; exit 1 }
      mid = (t[1] + t[n]) / 2; bad = 0
      printf "%-14s %8s %10s %10s %10s %10s  %s\n", "process", "samples", "KiB/min", "growth", "noise", "last KiB", "verdict"
      for (c = 2; c <= ncol; c++) {
        k = 0; st = 0; sv = 0
        for (i = 1; i <= n; i++) if (t[i] >= mid && v[i, c] != "") { k++; x[k] = t[i]; y[k] = v[i, c] + 0; st += x[k]; sv += y[k] }
        if (k < 4) { printf "%-14s %8d  too few samples in the second half to judge\n", name[c], k; bad = 1; continue }
        mt = st / k; mv = sv / k; sxx = 0; sxy = 0
        for (i = 1; i <= k; i++) { sxx += (x[i] - mt) ^ 2; sxy += (x[i] - mt) * (y[i] - mv) }
        b = sxx > 0 ? sxy / sxx : 0; a = mv - b * mt; ss = 0
        for (i = 1; i <= k; i++) ss += (y[i] - a - b * x[i]) ^ 2
        sd = k > 2 ? sqrt(ss / (k - 2)) : 0
        g = b * (x[k] - x[1])
        grows = g > 3 * sd && g > floor
        if (grows) bad = 1
        printf "%-14s %8d %10.1f %10.0f %10.0f %10.0f  %s\n", name[c], k, b * 60, g, sd, y[k],
          grows ? "GROWS beyond noise" : "flat"
      }
      printf "(second half of %.0f s; growth = fitted KiB over it; noise = sd around the line; floor %g KiB)\n", t[n] - t[1], floor
      exit bad
    }' "$1"
}

if [ -n "$analyse" ]; then
  analyse_csv "$analyse"
  exit $?
fi

# ---- the soak itself
[ -n "$seconds" ] || seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
case $seconds in ''|*[!0-9]*|0) echo "soak.sh: the duration must be a positive whole number of seconds" >&2; exit 2 ;; esac
if [ -z "$build" ]; then
  if [ -n "${top_builddir:-}" ]; then build=$top_builddir; else build=$here/../build; fi
fi
build=$(cd "$build" 2>/dev/null && pwd) || { echo "soak.sh: no build folder (give --build DIR)" >&2; exit 2; }
for p in gridrpcd gridmetad gridrpc bench/load_bench examples/dmmul examples/ep examples/dmmul_handle; do
  [ -x "$build/$p" ] || { echo "soak.sh: $build/$p is not built (make; make bench/load_bench)" >&2; exit 2; }
done
modules=${GRIDRPC_TEST_MODULES:-$build/stubs/.libs}
[ -n "$out" ] || out=$here/results/soak-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$out/work
rm -rf "$work"; mkdir -p "$work/jobs1" "$work/jobs2" || exit 2
unset GRIDRPC_SERVER GRIDRPC_CONFIG

pids=
cleanup() {
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_listen FILE PID: the port of "listening on HOST:PORT", at most 30 s.
wait_listen() {
  _i=0
  while [ $_i -lt 300 ]; do
    _p=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null | head -n 1)
    [ -n "$_p" ] && { echo "$_p"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1; _i=$((_i + 1))
  done
  return 1
}

"$build/gridmetad" --host 127.0.0.1 --port 0 --db "$work/registry.db" --log-level info \
  >"$work/gridmetad.out" 2>"$out/gridmetad.log" &
mpid=$!; pids=$mpid
mport=$(wait_listen "$work/gridmetad.out" $mpid) || { echo "soak.sh: gridmetad did not start:" >&2; tail -5 "$out/gridmetad.log" >&2; exit 1; }
meta=127.0.0.1:$mport
spids=
for i in 1 2; do
  "$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$modules" --metaserver "$meta" --speed 1e9 \
    --job-dir "$work/jobs$i" --log-level warn >"$work/gridrpcd$i.out" 2>"$out/gridrpcd$i.log" &
  sp=$!; pids="$pids $sp"; spids="$spids $sp"
  wait_listen "$work/gridrpcd$i.out" $sp >/dev/null || { echo "soak.sh: gridrpcd $i did not start:" >&2; tail -5 "$out/gridrpcd$i.log" >&2; exit 1; }
done
set -- $spids
s1=$1 s2=$2
_i=0
while [ "$(grep -c ' registered' "$out/gridmetad.log")" -lt 2 ]; do
  _i=$((_i + 1))
  [ $_i -lt 300 ] || { echo "soak.sh: the servers did not register with gridmetad in 30 s" >&2; exit 1; }
  sleep 0.1
done
GRIDRPC_METASERVER=$meta
export GRIDRPC_METASERVER

# The sampler: every second, VmRSS (KiB) of each process; empty once a process is gone.
# It stops at the end of the soak: the last round and the clients' leaving are not load.
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
t0=$(date +%s.%N)
echo "seconds,gridmetad,gridrpcd1,gridrpcd2" >"$out/rss.csv"
(
  while :; do
    t=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
    awk -v t="$t" -v s="$seconds" 'BEGIN { exit !(t > s) }' && break
    echo "$t,$(rss $mpid),$(rss $s1),$(rss $s2)"
    sleep 1
  done
) >>"$out/rss.csv" &
sampler=$!; pids="$pids $sampler"

echo "soak: $seconds s, gridmetad $meta, gridrpcd pids $s1 $s2, $clients persistent clients; results in $out"
"$build/bench/load_bench" --mode external --clients "$clients" --seconds "$seconds" --grace 60 \
  >"$out/persistent.txt" 2>&1 &
lbpid=$!; pids="$pids $lbpid"

# The rounds until the end; each program bounded to 60 s.
end=$(awk -v a="$t0" -v s="$seconds" 'BEGIN { printf "%d", a + s }')
runs=0 errors=0
printf 'hello soak, round %s\n' 0 >"$work/in.txt"
# run KIND CMD...: one client run; its output kept in errors.log when it fails.
run() {
  _kind=$1; shift
  runs=$((runs + 1))
  if ! timeout 60 "$@" >"$work/run.out" 2>&1; then
    errors=$((errors + 1))
    { echo "--- $_kind failed (exit $?): $*"; tail -5 "$work/run.out"; } >>"$out/errors.log"
    return 1
  fi
}
rounds=0
while [ "$(date +%s)" -lt "$end" ]; do
  rounds=$((rounds + 1))
  run sync "$build/examples/dmmul" 40
  # EP of 2^14 pairs has no published reference: every round must give the first's sums.
  if run async "$build/examples/ep" 14 4; then
    sums=$(sed -n 's/.*\(sx [^ ]* sy [^ ]*\),.*/\1/p' "$work/run.out")
    [ -n "${ep_sums:-}" ] || ep_sums=$sums
    if [ -z "$sums" ] || [ "$sums" != "$ep_sums" ]; then
      errors=$((errors + 1)); echo "--- ep: '$sums', first round '$ep_sums'" >>"$out/errors.log"
    fi
  fi
  run handles "$build/examples/dmmul_handle" 30 3
  # Two-phase: submit, fetch the result (checked), forget the job.
  v=$((1000 + rounds))
  if run submit "$build/gridrpc" submit test/echo_double 4 "[1,2,3,$v]"; then
    id=$(tail -n 1 "$work/run.out")
    if run fetch "$build/gridrpc" fetch "$id" --wait 30s; then
      if ! grep -q "^out = \[1, 2, 3, $v\]\$" "$work/run.out"; then
        errors=$((errors + 1)); echo "--- fetch $id: wrong result" >>"$out/errors.log"; cat "$work/run.out" >>"$out/errors.log"
      fi
    fi
    run forget "$build/gridrpc" forget "$id"
  fi
  # File arguments: the server reads one file and writes another (same host, same paths).
  printf 'hello soak, round %s\n' "$rounds" >"$work/in.txt"
  rm -f "$work/upper.txt"
  if run file "$build/gridrpc" call test/file_upper "$work/in.txt" "$work/upper.txt"; then
    if [ "$(cat "$work/upper.txt" 2>/dev/null)" != "HELLO SOAK, ROUND $rounds" ]; then
      errors=$((errors + 1)); echo "--- file_upper: wrong output '$(cat "$work/upper.txt" 2>/dev/null)'" >>"$out/errors.log"
    fi
  fi
done

# The persistent clients end on their own at the same time (bounded by their grace).
wait $lbpid; lbrc=$?
kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
stopped=0
for p in $s1 $s2 $mpid; do
  kill -TERM "$p" 2>/dev/null
  _i=0
  while [ $_i -lt 100 ] && kill -0 "$p" 2>/dev/null; do sleep 0.1; _i=$((_i + 1)); done
  if kill -0 "$p" 2>/dev/null; then kill -KILL "$p"; else stopped=$((stopped + 1)); fi
  wait "$p" 2>/dev/null
done
pids=

calls=$(sed -n 's/.*calls \([0-9]*\) (ok.*/\1/p' "$out/persistent.txt" | head -n 1)
pfailed=$(sed -n 's/.*failed \([0-9]*\), lost \([0-9]*\), wrong \([0-9]*\), connects failed \([0-9]*\).*/\1 \2 \3 \4/p' "$out/persistent.txt" | head -n 1)
warnings=$(cat "$out/gridmetad.log" "$out/gridrpcd1.log" "$out/gridrpcd2.log" | grep -c -e ' warn: ' -e ' error: ')
samples=$(($(wc -l <"$out/rss.csv") - 1))
{
  echo "soak: $seconds s, $rounds rounds of 7 client runs ($runs runs, $errors errors);"
  echo "persistent clients: ${calls:-?} calls; failed, lost, wrong, connects failed: ${pfailed:-?} (exit $lbrc)"
  echo "servers stopped cleanly on SIGTERM: $stopped of 3; warnings/errors in their logs: $warnings"
  echo "RSS samples: $samples (rss.csv)"
  analyse_csv "$out/rss.csv"
} >"$out/summary.txt"
flat=$?
cat "$out/summary.txt"
if [ $plot = 1 ]; then
  python3 "$here/plot_soak.py" "$out/rss.csv" "$out/soak.png" && echo "plot: $out/soak.png"
fi
rc=0
[ $errors -eq 0 ] || { echo "soak: $errors client runs failed (see $out/errors.log)"; rc=1; }
[ $lbrc -eq 0 ] || { echo "soak: the persistent clients failed (see $out/persistent.txt)"; rc=1; }
[ $flat -eq 0 ] || { echo "soak: memory grew beyond noise (or too few samples)"; rc=1; }
[ $rc -eq 0 ] && echo "soak: ok"
exit $rc
