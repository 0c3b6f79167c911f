#!/usr/bin/env bash
# poison-grid.sh: issue 24's "no poison calls" on a grid on defaults: gridmetad and three
# gridrpcd, none with a crash-related option. One client makes POISON_CALLS (default
# 1,000; 200 under sanitizers) calls of a crashing function (test/crash) while another
# client's dmmul and Linpack calls run on the same servers: every crashing call fails
# with GRID_ERR_CRASHED, only a handful ever reach a server (the metaserver holds the
# function back after crashes on two), the other client's results are all exact, and
# all three servers are up and serving afterwards. Loopback; about 20 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
PC=$B/poison-client
[ -x "$PC" ] || { echo "# SKIP: poison-client not built (make check builds it)"; rm -rf "$T_TMP"; exit 77; }
case "${STUB_CFLAGS:-}${CFLAGS:-}" in *-fsanitize*) N=${POISON_CALLS:-200} ;; *) N=${POISON_CALLS:-1000} ;; esac
LINALG=$B/stubs/.libs/linalg.so

# On defaults: no --heartbeat, no --crash-hold (the lib's f_meta sets a fast heartbeat).
f_start meta "$B/gridmetad" --host 127.0.0.1 --port 0 --db "$T_TMP/registry.db" --http 0 ||
  { fail "gridmetad starts"; finish; exit 1; }
wait_line "$T_TMP/meta.out" '^listening on ' || { fail "gridmetad listens"; diag <"$T_TMP/meta.err"; finish; exit 1; }
META=$(sed -n 's/^listening on //p' "$T_TMP/meta.out" | head -n 1)
declare -A port_of
for s in s1 s2 s3; do
  f_start "$s" "$B/gridrpcd" --host 127.0.0.1 --port 0 --module "$TESTMOD" --module "$LINALG" \
    --metaserver "$META" --name "$s" || { fail "gridrpcd $s starts"; finish; exit 1; }
  pid_of[$s]=$f_pid
  port_of[$s]=$(listening_port "$T_TMP/$s.out" "$f_pid") || { fail "gridrpcd $s listens"; diag <"$T_TMP/$s.err"; finish; exit 1; }
done
f_wait_up 3 && ok "gridmetad and three servers on defaults" || { fail "three servers register"; f_status | diag; finish; exit 1; }
export GRIDRPC_METASERVER=$META GRIDRPC_TIMEOUT=120 GRIDRPC_CONNECT_TIMEOUT=10

t0=$(date +%s.%N)
f_start math "$PC" math "$T_TMP/stop"
# The crashes begin once the other client's calls run (its descriptors are learned).
wait_line "$T_TMP/math.out" '^math running$' 600 || { fail "the math client runs"; diag <"$T_TMP/math.out"; }
"$PC" crash "$N" >"$T_TMP/crash.out" 2>&1
touch "$T_TMP/stop"
for _ in $(seq 1 1200); do grep -q '^math dmmul=' "$T_TMP/math.out" && break; sleep 0.1; done
t1=$(date +%s.%N)

summary=$(grep '^crash calls=' "$T_TMP/crash.out")
executor=$(sed -n 's/^crash .* executor=\([0-9]*\) .*/\1/p' "$T_TMP/crash.out")
held=$(sed -n 's/^crash .* held=\([0-9]*\) .*/\1/p' "$T_TMP/crash.out")
if grep -q "^crash calls=$N executor=[0-9]* held=[0-9]* other=0 " "$T_TMP/crash.out"; then
  ok "all $N calls of the crashing function fail with GRID_ERR_CRASHED ($executor crashed an executor, $held held back)"
else fail "the crashing calls: ${summary:-no summary}"; diag <"$T_TMP/crash.out"; fi
# Without the hold each call would crash an executor; with it, the first few do (two
# servers, and calls placed while the second crash was being reported).
if [ -n "$executor" ] && [ "$executor" -ge 2 ] && [ "$executor" -le 10 ] && [ "$held" -gt 0 ]; then
  ok "the metaserver held the function back after $executor crashes"
else fail "crashes before the hold: ${executor:-?} (held ${held:-?})"; grep -v '^call ' "$T_TMP/crash.out" | diag; fi
if grep -q '^math dmmul=[0-9]* linpack=[0-9]* wrong=0 errors=0$' "$T_TMP/math.out" &&
   ! grep -q '^math dmmul=[0-3] ' "$T_TMP/math.out"; then
  ok "meanwhile the other client's dmmul and Linpack calls finish with exact results ($(sed -n 's/^math \(dmmul=[0-9]* linpack=[0-9]*\).*/\1/p' "$T_TMP/math.out"))"
else fail "dmmul and Linpack beside the crashes"; diag <"$T_TMP/math.out"; diag <"$T_TMP/math.err"; fi

# All three still up and serving: each answers a dmmul and a Linpack named to it.
up=0
for s in s1 s2 s3; do
  kill -0 "${pid_of[$s]}" 2>/dev/null || continue
  GRIDRPC_METASERVER= GRIDRPC_SERVER=127.0.0.1:${port_of[$s]} "$PC" math "$T_TMP/stop" >"$T_TMP/after-$s.out" 2>&1 &&
    grep -q '^math dmmul=4 linpack=4 wrong=0 errors=0$' "$T_TMP/after-$s.out" && up=$((up + 1))
done
[ "$up" = 3 ] && [ "$(f_up)" = 3 ] && ok "all three servers are up and serving exact results afterwards" ||
  { fail "$up of 3 servers serve afterwards"; f_status | diag; cat "$T_TMP"/after-*.out | diag; }
took=$(python3 -c "print('%.1f' % ($t1 - $t0))")
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 60 else 1)" && ok "in $took s" || fail "the run took $took s"
finish
