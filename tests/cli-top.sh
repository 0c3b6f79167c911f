#!/bin/sh
# cli-top.sh: gridrpc top against a real grid on loopback (gridmetad and one gridrpcd
# registered with it): refreshes counted by --count, plain text without escape
# sequences when stdout is not a terminal, one JSON object per refresh, --server, a
# terminal's alternate screen given back on Ctrl-C with exit 0 (a pty), a metaserver
# killed while top runs shown as an error in the following refreshes until the count
# (exit 1: the last refresh failed), and bad --interval and --count refused. Every top
# runs under timeout: none may hang the suite.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
CLI=${GRIDRPC_CLI:-$B/gridrpc}
PY=${PYTHON:-python3}
export GRIDRPC_QUIET=1
unset GRIDRPC_SERVER GRIDRPC_METASERVER GRIDRPC_CONFIG GRIDRPC_SITE GRIDRPC_TOKEN
HOME=$T_TMP
export HOME
cd "$T_TMP" || exit 1

pids=
cleanup() { for p in $pids; do kill -KILL "$p" 2>/dev/null; done; }
trap cleanup EXIT
# run and expect: tests/lib.sh's t_run and t_expect.
run() { t_run "$@"; }
expect() { t_expect "$@"; }
ESC=$(printf '\033')

# ---- usage (nothing needs to answer)
M="--metaserver 127.0.0.1:1"
expect "bad --interval" 2 "--interval: 'soon' is not a duration" "$CLI" $M top --interval soon
expect "--interval 0 is refused" 2 "--interval: '0' is too short: give at least 100ms" "$CLI" $M top --interval 0
expect "--interval under 100ms is refused" 2 "--interval: '10ms' is too short: give at least 100ms" "$CLI" $M top --interval 10ms
expect "bad --count" 2 "--count: 'many' is not a positive integer" "$CLI" $M top --count many
expect "--count 0 is refused" 2 "--count: '0' must be at least 1" "$CLI" $M top --count 0
expect "--interval is top's own option" 2 "--interval is an option of top only: give it after the command" "$CLI" $M status --interval 1
expect "top takes no arguments" 2 "top takes no arguments, got 'now'" "$CLI" $M top now
expect "help top" 0 "Usage: gridrpc [OPTIONS] top [--interval DURATION] [--count N]" "$CLI" help top
expect "--help lists top" 0 "top [--interval DURATION] [--count N]" "$CLI" --help

# ---- a grid: gridmetad and one gridrpcd registered with it
"$B/gridmetad" --host 127.0.0.1 --port 0 --db "$T_TMP/registry.db" --heartbeat 100ms --http 0 \
  >meta.out 2>meta.err &
meta_pid=$!
pids="$pids $meta_pid"
if ! wait_line meta.out '^listening on ' 300; then
  fail "gridmetad starts"; diag <meta.err; finish; exit 1
fi
META=$(sed -n 's/^listening on //p' meta.out)
"$B/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$B/stubs/.libs" --threads 2 --quiet \
  --metaserver "$META" --name s1 >srv.out 2>srv.err &
pids="$pids $!"
up=
for _ in $(seq 1 150); do
  if "$CLI" --metaserver "$META" --json status 2>/dev/null |
    "$PY" -c 'import json,sys; sys.exit(0 if any(s["state"]=="up" for s in json.load(sys.stdin)["servers"]) else 1)' 2>/dev/null; then
    up=1; break
  fi
  sleep 0.1
done
if [ -z "$up" ]; then fail "gridrpcd registers"; diag <srv.err; finish; exit 1; fi
SRV=$(sed -n 's/^listening on //p' srv.out)

# ---- refreshes, not on a terminal
start=$(date +%s)
if run 0 timeout 60 "$CLI" --metaserver "$META" top --count 2 --interval 200ms &&
  [ "$(grep -c "^gridrpc top: .*, metaserver $META, every 0.2 s (refresh [12] of 2)$" out)" -eq 2 ] &&
  [ "$(grep -Ec '^1 +s1 +127\.0\.0\.1:[0-9]+ +up ' out)" -eq 2 ] &&
  [ "$(grep -c "^metaserver $META, site " out)" -eq 2 ] && [ $(($(date +%s) - start)) -lt 30 ]; then
  ok "top --count 2 --interval 200ms: two refreshes with the server, exit 0"
else
  fail "top --count 2 (rc $rc)"; diag <out; diag <err
fi
if [ -s out ] && ! grep -q "$ESC" out; then ok "not on a terminal: no escape sequences"; else fail "escape sequences in a pipe"; od -c out | head | diag; fi
if run 0 timeout 60 "$CLI" --metaserver "$META" --json top --count 2 --interval 200ms &&
  "$PY" -c '
import json, sys
text, docs, d = open("out").read(), [], json.JSONDecoder()
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    o, i = d.raw_decode(text, i)
    docs.append(o)
sys.exit(0 if len(docs) == 2 and all(o["servers"][0]["name"] == "s1" for o in docs) else 1)' 2>>err && ! grep -q "$ESC" out; then
  ok "top --json: one status object per refresh"
else
  fail "top --json (rc $rc)"; diag <out; diag <err
fi
if run 0 timeout 60 "$CLI" --server "$SRV" top --count 1 && grep -q "^gridrpc top: .*, server $SRV, every 2 s (refresh 1 of 1)$" out &&
  grep -q "^server   $SRV (gridrpcd " out; then
  ok "top --server: that server's load"
else
  fail "top --server (rc $rc)"; diag <out; diag <err
fi

# ---- on a terminal (a pty): the alternate screen, redrawn in place, given back on Ctrl-C
if "$PY" - "$CLI" "$META" >pty.out 2>pty.err <<'EOF'; then
import os, pty, select, signal, sys, time
cli, meta = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(cli, [cli, "--metaserver", meta, "top", "--interval", "200ms"])
buf, end = b"", time.time() + 30
# Two frames drawn, then Ctrl-C.
while buf.count(b"(refresh ") < 2 and time.time() < end:
    if select.select([fd], [], [], 0.5)[0]:
        try:
            buf += os.read(fd, 65536)
        except OSError:
            break
os.kill(pid, signal.SIGINT)
while time.time() < end:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    buf += chunk
_, status = os.waitpid(pid, 0)
print(repr(buf))
ok = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and buf.startswith(b"\x1b[?1049h")
      and buf.rstrip(b"\r\n").endswith(b"\x1b[?25h\x1b[?1049l") and buf.count(b"\x1b[H") >= 2
      and b"\x1b[J" in buf and b"Ctrl-C quits" in buf and b" s1 " in buf)
print("exit status", status)
sys.exit(0 if ok else 1)
EOF
  ok "on a terminal: redrawn in place, screen and cursor given back, exit 0 on Ctrl-C"
else
  fail "top on a terminal"; diag <pty.out; diag <pty.err
fi

# ---- the metaserver goes away while top runs: the error in the view, top goes on
timeout 60 "$CLI" --metaserver "$META" top --count 5 --interval 300ms >kill.out 2>kill.err &
top_pid=$!
if wait_line kill.out '^1  *s1 ' 300; then
  { kill -KILL "$meta_pid"; wait "$meta_pid"; } 2>/dev/null
  wait "$top_pid"; rc=$?
  errs=$(grep -c "^error: cannot reach the metaserver at $META" kill.out)
  if [ "$rc" -eq 1 ] && [ "$(grep -c '^gridrpc top: ' kill.out)" -eq 5 ] && [ "$errs" -ge 3 ] &&
    [ "$(grep -c '^top keeps trying every 0.3 s$' kill.out)" -eq "$errs" ] &&
    tail -n 2 kill.out | grep -q '^error: cannot reach the metaserver'; then
    ok "a metaserver killed: the next refreshes show the error, top goes on to its count, exit 1"
  else
    fail "metaserver killed under top (rc $rc, $errs errors)"; diag <kill.out; diag <kill.err
  fi
else
  fail "top's first refresh"; diag <kill.out; diag <kill.err
  kill "$top_pid" 2>/dev/null
fi

finish
