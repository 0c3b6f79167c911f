#!/bin/sh
# harness.sh: tests of tests/tap-wrap.sh itself. A program that hangs (and leaves a
# "server" behind) is cut at its time limit with a "not ok ... timed out" line naming it,
# within the limit plus the grace period, and its whole process group dies with it; a
# TAP-printing program counts as its cases (a failure is one failure); one that crashes
# half-way or prints fewer results than planned does not pass; a GoogleTest program's
# hung case is the one named. Prints TAP.
. "$top_srcdir/tests/lib.sh"
wrap="$top_srcdir/tests/tap-wrap.sh"

# A program that starts a long-lived child (a stand-in for a server) and then hangs.
cat >"$T_TMP/hang" <<EOF
#!/bin/sh
sleep 300 &
echo \$! >"$T_TMP/child.pid"
echo "hanging now"
sleep 300
EOF
chmod +x "$T_TMP/hang"
t0=$(date +%s)
GRIDRPC_TEST_TIMEOUT=2 sh "$wrap" "$T_TMP/hang" >"$T_TMP/hang.tap" 2>&1
took=$(($(date +%s) - t0))
if grep -q '^not ok 1 hang: timed out after 2 s' "$T_TMP/hang.tap" && grep -q '^1\.\.1$' "$T_TMP/hang.tap"; then
  ok "a hanging program is 'not ok ... timed out after 2 s', named"
else
  fail "a hanging program is 'not ok ... timed out after 2 s', named"; diag <"$T_TMP/hang.tap"
fi
if [ "$took" -le 9 ]; then ok "the hang is cut within the limit and the grace period ($took s)"
else fail "the hang is cut within the limit and the grace period ($took s)"; fi
child=$(cat "$T_TMP/child.pid" 2>/dev/null)
i=0 # a killed child may stay a zombie until init reaps it
while [ -n "$child" ] && kill -0 "$child" 2>/dev/null && [ "$i" -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
if [ -n "$child" ] && ! kill -0 "$child" 2>/dev/null; then ok "the program's child (its server) was killed too"
else
  fail "the program's child (its server) was killed too"
  [ -n "$child" ] && kill "$child" 2>/dev/null
fi

# A per-program limit overrides the default.
cat >"$T_TMP/slow-ok" <<'EOF'
#!/bin/sh
sleep 3
EOF
chmod +x "$T_TMP/slow-ok"
GRIDRPC_TEST_TIMEOUT=1 GRIDRPC_TEST_TIMEOUT_slow_ok=20 sh "$wrap" "$T_TMP/slow-ok" >"$T_TMP/slow.tap" 2>&1
if grep -q '^ok 1 slow-ok$' "$T_TMP/slow.tap"; then ok "GRIDRPC_TEST_TIMEOUT_<name> overrides GRIDRPC_TEST_TIMEOUT"
else fail "GRIDRPC_TEST_TIMEOUT_<name> overrides GRIDRPC_TEST_TIMEOUT"; diag <"$T_TMP/slow.tap"; fi

# A TAP program: its cases count one by one, a failure is one failure, the plan is last.
cat >"$T_TMP/tap3" <<'EOF'
#!/bin/sh
echo "ok 1 first"
echo "# a comment"
echo "not ok 2 second"
echo "ok 3 third # SKIP not here"
echo "1..3"
exit 1
EOF
chmod +x "$T_TMP/tap3"
sh "$wrap" "$T_TMP/tap3" >"$T_TMP/tap3.tap" 2>&1
if [ "$(grep -c '^ok ' "$T_TMP/tap3.tap")" -eq 2 ] && [ "$(grep -c '^not ok ' "$T_TMP/tap3.tap")" -eq 1 ] &&
  grep -q '^not ok 2 second$' "$T_TMP/tap3.tap" && [ "$(grep -v "^# took " "$T_TMP/tap3.tap" | tail -n 1)" = "1..3" ]; then
  ok "a TAP program counts as its 3 cases, 1 failing"
else
  fail "a TAP program counts as its 3 cases, 1 failing"; diag <"$T_TMP/tap3.tap"
fi

# A TAP program that dies half-way: the results so far, then one failure.
cat >"$T_TMP/crash" <<'EOF'
#!/bin/sh
echo "ok 1 before"
echo "ok 2 also before"
kill -SEGV $$
EOF
chmod +x "$T_TMP/crash"
sh "$wrap" "$T_TMP/crash" >"$T_TMP/crash.tap" 2>&1
if grep -q '^ok 2 also before$' "$T_TMP/crash.tap" && grep -q '^not ok 3 crash: exit status' "$T_TMP/crash.tap" &&
  [ "$(grep -v "^# took " "$T_TMP/crash.tap" | tail -n 1)" = "1..3" ]; then
  ok "a TAP program that crashes half-way fails"
else
  fail "a TAP program that crashes half-way fails"; diag <"$T_TMP/crash.tap"
fi

# A TAP program that stops early but exits 0: fewer results than planned fail.
printf '#!/bin/sh\necho "1..3"\necho "ok 1 only"\n' >"$T_TMP/short"
chmod +x "$T_TMP/short"
sh "$wrap" "$T_TMP/short" >"$T_TMP/short.tap" 2>&1
if grep -q '^not ok 2 short: planned 3 results, printed 1' "$T_TMP/short.tap"; then
  ok "fewer results than planned fail"
else
  fail "fewer results than planned fail"; diag <"$T_TMP/short.tap"
fi

# A GoogleTest-like program whose second case hangs: the first passes, the second is named.
cat >"$T_TMP/gtest-hang" <<'EOF'
#!/bin/sh
echo "[==========] Running 3 tests from 1 test suite."
echo "[ RUN      ] Suite.Fine"
echo "[       OK ] Suite.Fine (0 ms)"
echo "[ RUN      ] Suite.Hangs"
sleep 300
EOF
chmod +x "$T_TMP/gtest-hang"
GRIDRPC_TEST_TIMEOUT=2 sh "$wrap" "$T_TMP/gtest-hang" >"$T_TMP/gtest.tap" 2>&1
if grep -q '^ok 1 Suite.Fine$' "$T_TMP/gtest.tap" && grep -q '^not ok 2 Suite.Hangs$' "$T_TMP/gtest.tap" &&
  grep -q '^not ok 3 gtest-hang: timed out' "$T_TMP/gtest.tap"; then
  ok "a hung GoogleTest case is named and the program fails"
else
  fail "a hung GoogleTest case is named and the program fails"; diag <"$T_TMP/gtest.tap"
fi
grep -q '^# took [0-9][0-9]* s: tap3$' "$T_TMP/tap3.tap" && ok "the wrapper says how long the program took" ||
  { fail "no '# took N s' line"; diag <"$T_TMP/tap3.tap"; }
finish
