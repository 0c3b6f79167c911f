#!/bin/sh
# load-smoke.sh: the load and soak benchmarks of issue 13 (item 5), small and short so
# that they run on a loaded 2-core machine: bench/load_bench with 100 simultaneous
# clients for 3 s against one gridrpcd and through gridmetad with two (0 failed, lost
# or wrong calls; the report and the CSV complete); the bench failing when its calls
# fail (no server); bench/soak.sh for 20 s (runs, samples every second, no client
# error, flat memory); and its analysis alone on made-up curves, to show that it flags
# a growing one and passes a flat noisy one. Times are never checked.
. "$top_srcdir/tests/lib.sh"
LOAD_BENCH=$top_builddir/bench/load_bench
SOAK=$top_srcdir/bench/soak.sh
export GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
export GRIDMETAD=$top_builddir/gridmetad
export GRIDRPC_TEST_MODULES=${GRIDRPC_TEST_MODULES:-$top_builddir/stubs/.libs}
unset GRIDRPC_SERVER GRIDRPC_METASERVER GRIDRPC_CONFIG
cd "$T_TMP" || exit 1

# 1. 100 clients, both runs, bounded (the bench bounds every wait itself too).
timeout 300 "$LOAD_BENCH" --clients 100 --seconds 3 --grace 60 --csv load.csv >load.out 2>load.err
rc=$?
if [ $rc -eq 0 ]; then ok "load_bench 100 clients x 3 s: exit 0"; else fail "load_bench exit $rc"; diag <load.out; diag <load.err; fi
for mode in direct meta; do
  if grep -q "^$mode *clients 100, .*calls [1-9][0-9]* (ok [1-9][0-9]*), failed 0, lost 0, wrong 0, connects failed 0, unfinished 0," load.out; then
    ok "$mode: 100 clients, calls made, 0 failed, 0 lost, 0 wrong"
  else
    fail "$mode: counts"; diag <load.out
  fi
  if grep -q "^$mode *connect ms: p50 [0-9.]*  p99 [0-9.]*  max [0-9.]*;  response ms: p50 [0-9.]*  p99 [0-9.]*  max [0-9.]*;  server log warnings/errors: 0$" load.out; then
    ok "$mode: p50/p99/max of connect and response, no server warning"
  else
    fail "$mode: latency line"; diag <load.out
  fi
done
# The CSV: a header and one row per run, whose counts agree with the text.
if [ "$(wc -l <load.csv)" -eq 3 ] && head -n 1 load.csv | grep -q '^mode,clients,seconds,calls,ok,failed,lost,wrong,' &&
  awk -F, 'NR > 1 && ($2 != 100 || $4 < 100 || $4 != $5 || $6 != 0 || $7 != 0 || $8 != 0 || $9 != 0) { bad = 1 } END { exit bad }' load.csv; then
  ok "CSV: header and two rows (direct, meta), calls = ok"
else
  fail "CSV"; diag <load.csv
fi

# 2. A bench that cannot reach its server fails, and says so (no hang: bounded waits).
GRIDRPC_SERVER=127.0.0.1:1 timeout 120 "$LOAD_BENCH" --mode external --clients 3 --seconds 1 >nosrv.out 2>nosrv.err
rc=$?
if [ $rc -eq 1 ] && grep -q 'connects failed 3' nosrv.out && grep -q 'connect: ' nosrv.err; then
  ok "no server: exit 1, 3 connects failed, the library's error shown"
else
  fail "no server (exit $rc)"; diag <nosrv.out; diag <nosrv.err
fi
# A server that stops answering mid-run (SIGSTOP): the calls out are LOST, found when
# the grace after the end runs out (call timeout longer than the grace), exit 1.
"$GRIDRPCD" --host 127.0.0.1 --port 0 --module-dir "$GRIDRPC_TEST_MODULES" --log-level warn >stop.listen 2>stop.log &
stpid=$!
stport=$(listening_port stop.listen $stpid)
if [ -n "$stport" ]; then
  (sleep 2; kill -STOP $stpid) &
  GRIDRPC_SERVER=127.0.0.1:$stport timeout 120 "$LOAD_BENCH" --mode external --clients 3 --seconds 4 --grace 2 \
    --call-timeout 100 >stop.out 2>stop.err
  rc=$?
  if [ $rc -eq 1 ] && grep -q 'failed 0, lost 3, wrong 0,' stop.out; then
    ok "server stopped mid-run: 3 calls lost, exit 1"
  else
    fail "server stopped mid-run (exit $rc)"; diag <stop.out; diag <stop.err
  fi
else
  fail "gridrpcd for the stopped-server case did not start"; diag <stop.log
fi
kill -CONT $stpid 2>/dev/null; kill -KILL $stpid 2>/dev/null; wait $stpid 2>/dev/null
"$LOAD_BENCH" --clients 0 >usage.out 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- '--clients must be a number from 1' usage.out; then ok "--clients 0: exit 2, says why"; else fail "--clients 0 (exit $rc)"; fi

# 3. The soak, 20 s: runs, samples, no error, flat. 20 s is mostly warm-up (a new
# malloc arena is a step of up to a few MiB), so the floor is 4 MiB here; the analysis
# itself is tested on made-up curves below.
# Under a sanitizer build RSS measures its allocator (ASan's quarantine keeps freed
# memory, TSan's shadow grows): the run is checked, the memory verdict is not.
floor=4096 san=
case " ${STUB_CFLAGS:-} " in *-fsanitize=*) floor=100000000 san=" (memory not judged: a sanitizer build)" ;; esac
timeout 240 sh "$SOAK" --seconds 20 --floor $floor --out "$T_TMP/soak" >soak.out 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^soak: ok$' soak.out; then ok "soak 20 s: exit 0"; else fail "soak exit $rc"; diag <soak.out; cat "$T_TMP/soak/errors.log" 2>/dev/null | head -20 | diag; fi
samples=$(awk -F, 'NR > 1 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/' "$T_TMP/soak/rss.csv" 2>/dev/null | wc -l)
if [ "$samples" -ge 10 ]; then ok "soak: $samples samples of the 3 processes' RSS"; else fail "soak: $samples samples"; diag <"$T_TMP/soak/rss.csv"; fi
if grep -q ' rounds of 7 client runs ([1-9][0-9]* runs, 0 errors)' soak.out &&
  grep -q 'persistent clients: [1-9][0-9]* calls; failed, lost, wrong, connects failed: 0 0 0 0 (exit 0)' soak.out; then
  ok "soak: every client kind ran, 0 errors"
else
  fail "soak: client counts"; diag <soak.out
fi
if [ "$(grep -c ' flat$' soak.out)" -eq 3 ]; then ok "soak: gridmetad and both gridrpcd flat$san"; else fail "soak: verdicts"; diag <soak.out; fi

# 4. The analysis alone. 120 s, one sample a second, noise of +-50 KiB around 10 MiB;
# "leak" grows 200 KiB/min (200 KiB over the second half: under the floor), "big" 2 MiB/min.
awk 'BEGIN { srand(7); print "seconds,flat,leak,big";
  for (t = 0; t <= 120; t++) { n = int(rand() * 100) - 50;
    printf "%d,%d,%d,%d\n", t, 10240 + n, 10240 + n + int(t * 200 / 60), 10240 + n + int(t * 2048 / 60) } }' >curves.csv
sh "$SOAK" --analyse curves.csv >an.out 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q '^big .*GROWS beyond noise$' an.out && grep -q '^flat .* flat$' an.out; then
  ok "analysis: 2 MiB/min flagged (exit 1), flat noisy curve passes"
else
  fail "analysis of made-up curves (exit $rc)"; diag <an.out
fi
# The floor decides the small leak: under 1024 KiB it passes, with --floor 100 it is flagged.
sh "$SOAK" --analyse curves.csv --floor 100 >an2.out 2>&1
rc=$?
if grep -q '^leak .* flat$' an.out && [ $rc -eq 1 ] && grep -q '^leak .*GROWS beyond noise$' an2.out &&
  grep -q '^flat .* flat$' an2.out; then
  ok "analysis: 200 KiB/min passes under the 1024 KiB floor, flagged with --floor 100"
else
  fail "analysis with --floor 100 (exit $rc)"; diag <an.out; diag <an2.out
fi
awk 'NR <= 4' curves.csv | cut -d, -f1,2 >short.csv
sh "$SOAK" --analyse short.csv >an3.out 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'too few samples' an3.out; then ok "analysis: too few samples is a failure"; else fail "short CSV (exit $rc)"; diag <an3.out; fi

# 5. The plot, where matplotlib is installed.
if "${PYTHON:-python3}" -c 'import matplotlib' 2>/dev/null; then
  "${PYTHON:-python3}" "$top_srcdir/bench/plot_soak.py" "$T_TMP/soak/rss.csv" soak.png >plot.out 2>&1
  if [ "$(head -c 4 soak.png 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ]; then ok "plot_soak.py writes a PNG"; else fail "plot_soak.py"; diag <plot.out; fi
else
  ok "# SKIP plot_soak.py: no matplotlib"
fi
finish
