#!/bin/sh
# safe-defaults.sh: what a fresh gridrpcd and gridmetad expose, with real daemons on
# loopback (docs/server.md, "Opening a server to a network"): both listen on loopback
# unless told otherwise; another address with no key and no TLS is refused without
# --insecure, and warned about loudly with it; control characters a peer puts in its
# HELLO name are escaped in both logs; the status page answers only its own Host names
# and stays up for others while one address holds slow connections; the files the
# daemons create are 0600 and their folders 0700; a token is read from a file and one
# typed on the command line is wiped from what ps shows. (The test module's absence
# from an installed server's defaults: tests/install.sh.)
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
PY=${PYTHON:-python3}
TESTMOD=$B/stubs/.libs/test.so
LINALG=$B/stubs/.libs/linalg.so
cd "$T_TMP" || exit 1
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
# start NAME PROG ARGS...: PROG in the background, stdout to NAME.out, stderr to
# NAME.err; $pid and $port once it prints "listening on".
start() {
  _n=$1; shift
  : >"$_n.out"
  "$@" >"$_n.out" 2>"$_n.err" &
  pid=$!
  pids="$pids $pid"
  port=$(listening_port "$_n.out" "$pid")
  [ -n "$port" ]
}
stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# The local address of the socket PID listens on port PORT, from ss.
bound() { ss -ltnH "sport = :$1" | awk '{print $4}' | head -n 1; }

# ---------------------------------------------------------------- loopback by default
if start rd "$B/gridrpcd" --port 0 --module "$TESTMOD"; then
  a=$(bound "$port")
  if grep -q "^listening on 127\.0\.0\.1:$port\$" rd.out && [ "$a" = "127.0.0.1:$port" ]; then
    ok "gridrpcd with no --host listens on 127.0.0.1 only (ss: $a)"
  else
    fail "gridrpcd's default address: $(cat rd.out), ss: $a"
  fi
  n=$(grep -c 'no key and no TLS: any program on this machine' rd.err)
  [ "$n" = 1 ] && ok "with no key on loopback it says so in one line" || { fail "loopback notice ($n lines)"; diag <rd.err; }
  stop "$pid"
else
  fail "gridrpcd starts with no --host"; diag <rd.err; fail "(no notice checked)"
fi
if start md "$B/gridmetad" --port 0 --db :memory:; then
  a=$(bound "$port")
  [ "$a" = "127.0.0.1:$port" ] && ok "gridmetad with no --host listens on 127.0.0.1 only" || fail "gridmetad's default address: $a"
  stop "$pid"
else
  fail "gridmetad starts with no --host"; diag <md.err
fi

# ---------------------------------------------------------------- another address
for prog in gridrpcd gridmetad; do
  extra=; [ $prog = gridmetad ] && extra="--db :memory:"
  # Bounded: a daemon that does not refuse would serve until killed.
  timeout 20 "$B/$prog" --host 0.0.0.0 --port 0 $extra >open.out 2>open.err; rc=$?
  if [ $rc = 2 ] && grep -q -- '--key-file' open.err && grep -q -- '--tls-cert' open.err && grep -q -- '--insecure' open.err \
    && ! grep -q '^listening' open.out; then
    ok "$prog --host 0.0.0.0 with no key and no TLS is refused (exit 2), naming --key-file, --tls-cert and --insecure"
  else
    fail "$prog --host 0.0.0.0 without --insecure: exit $rc"; diag <open.err
  fi
  if start ins "$B/$prog" --host 0.0.0.0 --port 0 --insecure $extra; then
    a=$(bound "$port")
    if [ "$a" = "0.0.0.0:$port" ] && grep -q 'warn: INSECURE: .*ANYONE WHO REACHES THIS PORT CAN DO ANYTHING' ins.err; then
      ok "$prog --host 0.0.0.0 --insecure listens there and warns at start"
    else
      fail "$prog --insecure: bound $a"; diag <ins.err
    fi
    stop "$pid"
  else
    fail "$prog --insecure starts"; diag <ins.err
  fi
done
# The status page has no keys: beyond loopback only with --insecure, even when the
# metaserver's own port is guarded by a key.
"$B/gridrpc" keygen key >/dev/null 2>&1
timeout 20 "$B/gridmetad" --port 0 --db :memory: --key-file key --http 0 --http-host 0.0.0.0 >page.out 2>page.err; rc=$?
if [ $rc = 2 ] && grep -q -- '--http-host 0.0.0.0 is not a loopback address' page.err && grep -q -- '--insecure' page.err \
  && ! grep -q '^listening' page.out; then
  ok "gridmetad --http-host 0.0.0.0 without --insecure is refused (exit 2), naming --insecure, even with a key"
else
  fail "gridmetad --http-host 0.0.0.0 without --insecure: exit $rc"; diag <page.err
fi
if start pageins "$B/gridmetad" --port 0 --db :memory: --key-file key --http 0 --http-host 0.0.0.0 --insecure \
  && grep -q 'warn: INSECURE: the status page listens on 0.0.0.0' pageins.err; then
  ok "gridmetad --http-host 0.0.0.0 --insecure serves the page and warns at start"
else
  fail "gridmetad --http-host 0.0.0.0 --insecure"; diag <pageins.err
fi
stop "$pid"
if start keyed "$B/gridrpcd" --host 0.0.0.0 --port 0 --key-file key --module "$TESTMOD" \
  && ! grep -q 'INSECURE\|no key and no TLS' keyed.err; then
  ok "with --key-file, --host 0.0.0.0 needs no --insecure and logs no warning"
else
  fail "gridrpcd --key-file on 0.0.0.0"; diag <keyed.err
fi
stop "$pid"

# ---------------------------------------------------------------- logs escape peers' names
name=$(printf 'evil\nFAKE gridrpcd error: forged\033[31mred\177')
for prog in gridrpcd gridmetad; do
  extra="--module $TESTMOD"; [ $prog = gridmetad ] && extra="--db :memory:"
  if start log "$B/$prog" --port 0 --log-level debug $extra && "$B/raw-hello" "$port" "$name" >hello.out 2>&1; then
    wait_line log.err 'hello from' 50
    stop "$pid"
    if grep -q "hello from 'evil\\\\nFAKE gridrpcd error: forged\\\\x1b\[31mred\\\\x7f'" log.err \
      && ! grep -q '^FAKE' log.err && ! tr -d '\n' <log.err | LC_ALL=C grep -q "$(printf '[\001-\037\177]')"; then
      ok "$prog writes a HELLO name's newline, ESC and DEL escaped, on one line"
    else
      fail "$prog's log of a hostile HELLO name"; LC_ALL=C cat -v log.err | diag
    fi
  else
    fail "$prog and raw-hello"; diag <log.err; diag <hello.out
  fi
done

# ---------------------------------------------------------------- the status page
# code [-H "Host: H"] [--interface SRC] URL: the HTTP status of a GET, or 000 (Python's
# http.client: curl is not on a bare machine).
code() {
  "$PY" - "$@" <<'PYEOF' 2>/dev/null || echo 000
import http.client, sys, urllib.parse
args, host, src = sys.argv[1:], None, None
while len(args) > 1:
    if args[0] == "-H": host = args[1].split(":", 1)[1].strip()
    elif args[0] == "--interface": src = (args[1], 0)
    args = args[2:]
u = urllib.parse.urlsplit(args[0])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10, source_address=src)
c.putrequest("GET", u.path, skip_host=host is not None)
if host is not None: c.putheader("Host", host)
c.endheaders()
print(c.getresponse().status)
PYEOF
}
# http_port NAME: the status page's port from NAME.out.
http_port() { wait_line "$1.out" '^http on' 100; sed -n 's/^http on 127\.0\.0\.1://p' "$1.out"; }
if start page "$B/gridmetad" --port 0 --db :memory: --http 0; then
  hport=$(http_port page)
  u=http://127.0.0.1:$hport/api/status
  c1=$(code "$u"); c2=$(code -H "Host: localhost:$hport" "$u")
  c4=$(code -H "Host: rebound.attacker.example:$hport" "$u"); c5=$(code -H "Host: 127.0.0.1.attacker.example" "$u")
  [ "$c1$c2" = 200200 ] && ok "the page answers its own Host names (127.0.0.1, localhost)" || fail "own Host names: $c1 $c2"
  [ "$c4$c5" = 421421 ] && ok "and refuses any other Host with 421 (DNS rebinding)" || fail "foreign Host: $c4 $c5"
  # 100 connections from 127.0.0.1 that send half a request and then a byte a second;
  # a client at another address (127.0.0.2) still gets the page.
  "$PY" - "$hport" >slow.out 2>&1 <<'PYEOF' &
import socket, sys, time
port = int(sys.argv[1])
socks = []
for i in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        socks.append(s)
    except OSError:
        pass
print("ready", len(socks), flush=True)
for _ in range(40):  # bounded: 40 s at most
    time.sleep(1)
    for s in list(socks):
        try:
            s.send(b"a")
        except OSError:
            socks.remove(s)
PYEOF
  slow=$!; pids="$pids $slow"
  wait_line slow.out '^ready' 300
  sleep 1
  c6=$(code --interface 127.0.0.2 "$u")
  [ "$c6" = 200 ] && ok "100 slow connections from one address leave the page to others ($(cat slow.out))" ||
    { fail "page with slow connections open: $c6"; diag <slow.out; diag <page.err; }
  stop "$slow"
  stop "$pid"
else
  fail "gridmetad --http starts"; diag <page.err; fail "(no foreign Host checked)"; fail "(no slow connections checked)"
fi
if start allow "$B/gridmetad" --port 0 --db :memory: --http 0 --http-allow-host grid.example.org; then
  hport=$(http_port allow)
  c3=$(code -H "Host: grid.example.org:$hport" "http://127.0.0.1:$hport/api/status")
  [ "$c3" = 200 ] && ok "--http-allow-host adds a name the page answers" || fail "--http-allow-host: $c3"
  stop "$pid"
else
  fail "gridmetad --http-allow-host"; diag <allow.err
fi

# ---------------------------------------------------------------- file modes
# An operator's lax umask: what the daemons create is private all the same.
umask 022
if start db "$B/gridmetad" --port 0 --db "$T_TMP/registry.db" \
  && start jobs "$B/gridrpcd" --port 0 --module "$TESTMOD" --job-dir "$T_TMP/state/jobs"; then
  job=$("$B/gridrpc" --server "127.0.0.1:$port" submit test/null_call 2>submit.err)
  [ -n "$job" ] && "$B/gridrpc" --server "127.0.0.1:$port" fetch "$job" >/dev/null 2>&1
  sleep 1
  modes=$(find "$T_TMP/state" "$T_TMP"/registry.db* -printf '%m %p\n' 2>/dev/null)
  bad=$(echo "$modes" | while read -r m p; do
    if [ -d "$p" ]; then [ "$m" = 700 ] || echo "$m $p"; else [ "$m" = 600 ] || echo "$m $p"; fi
  done)
  nf=$(echo "$modes" | grep -c .)
  if [ -z "$bad" ] && [ -n "$job" ] && echo "$modes" | grep -q ' .*registry\.db$'; then
    ok "the registry database, the job folders and job files are 0600/0700 under umask 022 ($nf checked)"
  else
    fail "modes: ${bad:-no job or no database}"; echo "$modes" | diag; diag <submit.err
  fi
else
  fail "the daemons start with --db and --job-dir"; diag <db.err; diag <jobs.err
fi
umask 077
for p in $pids; do stop "$p"; done; pids=

# ---------------------------------------------------------------- secrets off the command line
printf 's3cret-token-1\n' >tok; chmod 600 tok
if start tf "$B/gridmetad" --port 0 --db :memory: --token-file tok \
  && GRIDRPC_TOKEN=s3cret-token-1 "$B/gridrpc" --metaserver "127.0.0.1:$port" status >st.out 2>&1 \
  && ! GRIDRPC_TOKEN=wrong "$B/gridrpc" --metaserver "127.0.0.1:$port" status >st2.out 2>&1 \
  && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q s3cret; then
  ok "gridmetad --token-file: the token on the file's first line is required, and not in its arguments"
else
  fail "gridmetad --token-file"; diag <tf.err; diag <st.out; diag <st2.out
fi
stop "$pid"
chmod 644 tok
timeout 20 "$B/gridrpcd" --port 0 --token-file tok >/dev/null 2>tf2.err; rc=$?
[ $rc = 2 ] && grep -q 'chmod 600' tf2.err && ok "a token file others may read is refused" || { fail "token file 0644: exit $rc"; diag <tf2.err; }
if start tc "$B/gridrpcd" --port 0 --module "$TESTMOD" --token s3cret-token-2 \
  && GRIDRPC_TOKEN=s3cret-token-2 "$B/gridrpc" --server "127.0.0.1:$port" call test/null_call >call.out 2>&1; then
  args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  case $args in
  *s3cret*) fail "the token still shows in ps: $args" ;;
  *) grep -q 'warn: --token: a secret on the command line' tc.err &&
    ok "gridrpcd --token still works, is wiped from what ps shows ($args) and warned about" ||
    { fail "no warning for --token"; diag <tc.err; } ;;
  esac
else
  fail "gridrpcd --token"; diag <tc.err; diag <call.out
fi
stop "$pid"
finish
