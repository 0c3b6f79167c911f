#!/usr/bin/env bash
# status-page-grid.sh: the status page against a REAL grid, in headless chromium:
# gridmetad --http with two real gridrpcd registered (heartbeat 200 ms, down after 3
# missed), the page loads and shows both servers up; then one gridrpcd is killed and the
# same open page (no reload: it polls api/status) shows it down, the other still up,
# and its final DOM agrees with gridmetad's own api/status. Before the kill, a dmmul
# that succeeds and a test/crash that fails go through the metaserver: at 1,280 x 800
# the page shows both in its recent calls (the failure marked and red, with its error),
# their per-function counts, and no sideways scrolling; after it, beta greyed with when
# it was last seen. A screenshot of each (STATUS_PAGE_SHOTS, default the build tree) is
# named in the diagnostics. tests/status-page.sh checks
# the page's details with scripted JSON; this one checks the whole path. Every wait is
# bounded; every process started here is killed on exit. Skips (77) without chromium.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
PY=${PYTHON:-python3}
HELPER=$top_srcdir/tests/status_page.py
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "# chromium is not installed (apt-get install chromium): skipping the status page test"
  rm -rf "$T_TMP"
  exit 77
fi
export GRIDRPC_QUIET=1
unset GRIDRPC_SERVER GRIDRPC_CONFIG GRIDRPC_METASERVER
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# api_states: "alpha:up beta:down", as api/status says now.
api_states() {
  "$PY" - "$HTTP/api/status" <<'PYEOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    print(" ".join(sorted("%s:%s" % (s["name"], s["state"]) for s in json.load(r)["servers"])))
PYEOF
}
wait_states() { # wait_states WANT: up to 10 s until api/status says exactly WANT
  for _ in $(seq 1 100); do [ "$(api_states)" = "$1" ] && return 0; sleep 0.1; done
  return 1
}

"$B/gridmetad" --host 127.0.0.1 --port 0 --http 0 --db "$T_TMP/registry.db" --heartbeat 200ms \
  --down-after 3 >"$T_TMP/meta.out" 2>"$T_TMP/meta.err" &
pids+=("$!")
if wait_line "$T_TMP/meta.out" '^http on ' && wait_line "$T_TMP/meta.out" '^listening on '; then
  META=$(sed -n 's/^listening on //p' "$T_TMP/meta.out")
  HTTP=http://$(sed -n 's/^http on //p' "$T_TMP/meta.out")
  ok "gridmetad listens on $META, its page on $HTTP"
else
  fail "gridmetad did not start"
  diag <"$T_TMP/meta.err"
  finish
  exit 1
fi

declare -A srv_pid
for name in alpha beta; do
  "$B/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$B/stubs/.libs" --threads 1 --quiet \
    --metaserver "$META" --name "$name" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err" &
  srv_pid[$name]=$!
  pids+=("$!")
done
if wait_states "alpha:up beta:up"; then
  ok "both gridrpcd register and are up in api/status"
else
  fail "both gridrpcd register: api/status says '$(api_states)'"
  diag <"$T_TMP/meta.err"
fi

# inspect CHECKS PNG: status_page.py's in-page checks at 1,280 x 800, one TAP line each.
SHOTS=${STATUS_PAGE_SHOTS:-$B}
inspect() {
  timeout 120 "$PY" "$HELPER" inspect "$HTTP/" --chromium "$CHROMIUM" --profile "$T_TMP/chrome-$1" \
    --checks "$1" --width 1280 --height 800 --shot "$2" --timeout 20 >"$T_TMP/inspect-$1.out" 2>"$T_TMP/inspect-$1.err"
  local rc=$? verdict what
  while read -r verdict what; do
    case $verdict in
      PASS) ok "$what" ;;
      FAIL) fail "$what" ;;
    esac
  done <"$T_TMP/inspect-$1.out"
  if [ $rc -ne 0 ]; then
    grep -q '^FAIL' "$T_TMP/inspect-$1.out" || fail "the $1 page check (exit status $rc)"
    diag <"$T_TMP/inspect-$1.err"
  fi
  if [ "$(head -c 4 "$2" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ]; then
    diag <<<"screenshot ($1): $2"
  else
    fail "a screenshot of the $1 page ($2)"
  fi
}

# Two calls through the metaserver, each REPORTed by its client: one succeeds, one
# fails (test/crash 1 kills its executor).
if GRIDRPC_METASERVER=$META "$B/gridrpc" call linalg/dmmul 2 '[1,2,3,4]' '[5,6,7,8]' >"$T_TMP/dmmul.out" 2>&1; then
  ok "a dmmul through the metaserver succeeds"
else
  fail "a dmmul through the metaserver"
  diag <"$T_TMP/dmmul.out"
fi
if GRIDRPC_METASERVER=$META "$B/gridrpc" call test/crash 1 >"$T_TMP/crash.out" 2>&1; then
  fail "test/crash 1 through the metaserver succeeded"
else
  ok "test/crash 1 through the metaserver fails ($(head -c 120 "$T_TMP/crash.out" | tr '\n' ' '))"
fi
inspect calls "$SHOTS/status-page-failed-call.png"

# One page load: both up; beta killed; the open page shows it down.
timeout 120 "$PY" "$HELPER" live "$HTTP/" --chromium "$CHROMIUM" --profile "$T_TMP/chrome" \
  --want alpha:up,beta:up --then "kill -KILL ${srv_pid[beta]}" --want alpha:up,beta:down \
  --dump "$T_TMP/live.html" --timeout 20 >"$T_TMP/live.out" 2>"$T_TMP/live.err"
rc=$?
wait "${srv_pid[beta]}" 2>/dev/null # reaped here: no "Killed" notice from bash
while read -r verdict what; do
  case $verdict in
    PASS) ok "$what" ;;
    FAIL) fail "$what" ;;
  esac
done <"$T_TMP/live.out"
if [ $rc -ne 0 ]; then
  grep -q '^FAIL' "$T_TMP/live.out" || fail "the live page check (exit status $rc)"
  diag <"$T_TMP/live.err"
  [ -f "$T_TMP/chrome.err" ] && tail -20 "$T_TMP/chrome.err" | diag
fi

# The metaserver agrees: beta is down, and the final DOM shows what api/status says.
if wait_states "alpha:up beta:down"; then ok "api/status has beta down"; else fail "api/status says '$(api_states)'"; fi
if [ -s "$T_TMP/live.html" ] && "$PY" "$HELPER" check "$T_TMP/live.html" --api "$HTTP/api/status" --conn ok \
  >"$T_TMP/check.out" 2>&1; then
  ok "the page's final DOM agrees with gridmetad's api/status"
else
  fail "the final DOM against api/status"
  [ -f "$T_TMP/check.out" ] && diag <"$T_TMP/check.out"
fi
inspect down "$SHOTS/status-page-down-server.png"
finish
