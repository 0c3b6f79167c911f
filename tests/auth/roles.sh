#!/bin/sh
# roles.sh: who may do what at gridmetad (issue 25, findings 1 and 4; docs/security.md;
# an admin key's gridrpc unregister),
# with real daemons on loopback and roles-peer sending raw metaserver messages as a
# hostile peer would. The metaserver's key file holds a client key, two server keys and
# nothing untagged; a real server registers with its server key. Then: a client key
# cannot REGISTER a fake server; another server key cannot REGISTER over the real
# server's host:port (the entry keeps its name and functions), nor HEARTBEAT or
# UNREGISTER it; a client's forged REPORT GRID_ERR_CONN_LOST does not mark the live
# server down; the start-up warnings for no key and for untagged keys. TAP output.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
MODULES=${GRIDRPC_TEST_MODULES:-$B/stubs/.libs}
export GRIDRPC_QUIET=1
unset GRIDRPC_SERVER GRIDRPC_METASERVER GRIDRPC_CONFIG GRIDRPC_TOKEN GRIDRPC_KEY_FILE
cd "$T_TMP" || exit 1
pids=
cleanup() {
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
peer() { timeout 30 "$B/roles-peer" "$MPORT" "$@"; }
# entry ID: the SERVERS line of server ID ("ID HOST:PORT NAME up|down NFUNCTIONS").
entry() { peer kc client servers | awk -v id="$1" '$1 == id'; }

"$B/gridrpc" keygen --role client kc >/dev/null && "$B/gridrpc" keygen --role server ks >/dev/null &&
  "$B/gridrpc" keygen --role server ks2 >/dev/null && "$B/gridrpc" keygen k_untagged >/dev/null &&
  "$B/gridrpc" keygen --role admin ka >/dev/null ||
  { fail "gridrpc keygen --role"; finish; exit 1; }
if grep -Eqx 'server [0-9a-f]{64}' ks && grep -Eqx '[0-9a-f]{64}' k_untagged; then ok "keygen --role server writes 'server HEX'"; else fail "keygen --role"; diag <ks; fi
(cat kc ks ks2 ka) >meta.keys && chmod 600 meta.keys
(cat ks kc) >srv.keys && chmod 600 srv.keys

# A long heartbeat: the server's last beat is recent for the whole test, and a REPORT
# is not undone by a beat between it and the check.
"$B/gridmetad" --host 127.0.0.1 --port 0 --db :memory: --heartbeat 5s --key-file meta.keys >meta.out 2>meta.err &
mpid=$!
pids="$pids $mpid"
MPORT=$(listening_port meta.out "$mpid") || { fail "gridmetad did not start"; diag <meta.err; finish; exit 1; }
if grep -q "untagged" meta.err; then fail "a tagged key file is warned about"; diag <meta.err; else ok "no warning for a key file whose keys are all tagged"; fi

"$B/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$MODULES" --threads 2 --key-file srv.keys \
  --metaserver "127.0.0.1:$MPORT" --name real-server >s.out 2>s.err &
spid=$!
pids="$pids $spid"
SPORT=$(listening_port s.out "$spid") || { fail "gridrpcd did not start"; diag <s.err; finish; exit 1; }
if wait_line s.err "registered with metaserver"; then ok "a server with a server key registers"; else fail "real server did not register"; diag <s.err; diag <meta.err; fi
line=$(peer kc client servers | grep " real-server ")
SID=${line%% *}
ADDR=$(echo "$line" | awk '{print $2}')
NFN=$(echo "$line" | awk '{print $5}')
if [ -n "$SID" ] && [ "${ADDR##*:}" = "$SPORT" ] && [ "$NFN" -gt 1 ] && echo "$line" | grep -q " up "; then
  ok "the real server is listed up with its functions (id $SID, $ADDR, $NFN functions)"
else
  fail "real server entry: '$line'"
fi
HOST=${ADDR%:*}

# A key the metaserver does not hold: refused in the handshake, naming the key.
out=$(peer k_untagged client servers)
if echo "$out" | grep -q "^refused: .*authentication failed: the client's key (id [0-9a-f]*) is not in this server's key file.*(GRID_ERR_AUTH)$"; then
  ok "a key the metaserver does not hold is refused with GRID_ERR_AUTH"
else
  fail "an unknown key at the metaserver: $out"
fi

# Finding 1: a fake REGISTER with a client key.
out=$(peer kc client register 127.0.0.1 9 fake-ddot)
if echo "$out" | grep -q "^refused: REGISTER refused: key .* proved the client role; only a server key.*(GRID_ERR_AUTH)$"; then
  ok "a client key cannot REGISTER a server (GRID_ERR_AUTH, told which key may)"
else
  fail "a client key's REGISTER: $out"
fi
if peer kc client servers | grep -q fake-ddot; then fail "the fake server is listed"; else ok "the fake server is not listed"; fi

# Finding 1: another server key REGISTERs the real server's host:port.
out=$(peer ks2 server register "$HOST" "$SPORT" hijacked)
if echo "$out" | grep -q "^refused: REGISTER of $HOST:$SPORT refused: server $SID at that address was registered with another server key.*(GRID_ERR_AUTH)$"; then
  ok "REGISTER over another server's host:port is refused (GRID_ERR_AUTH)"
else
  fail "REGISTER over the real server: $out"
fi
now=$(entry "$SID")
if [ "$now" = "$line" ]; then ok "the real entry is unchanged (name, address, functions, up)"; else fail "entry changed: '$line' -> '$now'"; fi

# Finding 1: HEARTBEAT and UNREGISTER of another's id.
out=$(peer ks2 server unregister "$SID")
if echo "$out" | grep -q "^refused: UNREGISTER of server $SID refused: it was registered with another server key.*(GRID_ERR_AUTH)$"; then
  ok "UNREGISTER of another server's id is refused (GRID_ERR_AUTH)"
else
  fail "UNREGISTER of another's id: $out"
fi
out=$(peer kc client unregister "$SID")
if echo "$out" | grep -q "^refused: UNREGISTER refused: .*only a server key.*(GRID_ERR_AUTH)$"; then ok "a client key cannot UNREGISTER (GRID_ERR_AUTH)"; else fail "client UNREGISTER: $out"; fi
out=$(peer ks2 server heartbeat "$SID")
if echo "$out" | grep -q "^refused: HEARTBEAT of server $SID refused.*(GRID_ERR_AUTH)$"; then ok "HEARTBEAT for another server's id is refused (GRID_ERR_AUTH)"; else fail "HEARTBEAT of another's id: $out"; fi
if entry "$SID" | grep -q " up "; then ok "the real server is still up"; else fail "real server down: $(entry "$SID")"; fi

# Finding 1: a forged REPORT GRID_ERR_CONN_LOST from one client.
out=$(peer kc client report "$SID")
if [ "$out" = ok ] && entry "$SID" | grep -q " up "; then
  ok "one client's REPORT CONN_LOST does not mark a live server down"
else
  fail "after a forged REPORT: $out / $(entry "$SID")"
fi
expect_call=$("$B/gridrpc" --metaserver "127.0.0.1:$MPORT" --key-file kc call test/echo_int 1 '[4]' 2>&1)
if echo "$expect_call" | grep -q "out = \[4\]"; then ok "a client key still calls through the metaserver"; else fail "call: $expect_call"; fi

# The administrator's action: gridrpc unregister forgets a server's entry at once; a
# client key may not.
out=$("$B/gridrpc" --metaserver "127.0.0.1:$MPORT" --key-file kc unregister "$SID" 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "UNREGISTER refused" && entry "$SID" | grep -q " up "; then
  ok "gridrpc unregister with a client key is refused, the entry stays"
else
  fail "client unregister: rc $rc: $out"
fi
out=$("$B/gridrpc" --metaserver "127.0.0.1:$MPORT" --key-file ka unregister "$SID" 2>&1); rc=$?
if [ $rc = 0 ] && [ "$out" = "unregistered server $SID" ] && [ -z "$(entry "$SID")" ]; then
  ok "gridrpc unregister with an admin key removes another key's server at once"
else
  fail "admin unregister: rc $rc: $out / $(entry "$SID")"
fi
if grep -q "server $SID unregistered by administrator key" meta.err; then ok "gridmetad logs the administrator's unregister"; else fail "admin unregister not logged"; diag <meta.err; fi
stop "$spid"
stop "$mpid"

# Start-up warnings: no key at all, and an untagged key.
"$B/gridmetad" --host 127.0.0.1 --port 0 --db :memory: >m2.out 2>m2.err &
m2=$!
pids="$pids $m2"
listening_port m2.out "$m2" >/dev/null
if grep -q "no --key-file: anyone who reaches this metaserver may do anything" m2.err; then ok "gridmetad without keys warns at start"; else fail "no-key warning"; diag <m2.err; fi
stop "$m2"
"$B/gridmetad" --host 127.0.0.1 --port 0 --db :memory: --key-file k_untagged >m3.out 2>m3.err &
m3=$!
pids="$pids $m3"
listening_port m3.out "$m3" >/dev/null
if grep -q "1 untagged key: any holder may register as a server; tag each line" m3.err; then ok "gridmetad warns about an untagged key"; else fail "untagged warning"; diag <m3.err; fi
stop "$m3"
"$B/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$MODULES" --key-file k_untagged >s3.out 2>s3.err &
s3=$!
pids="$pids $s3"
listening_port s3.out "$s3" >/dev/null
if grep -q "1 untagged key: any holder may act as a server too" s3.err; then ok "gridrpcd warns about an untagged key"; else fail "gridrpcd untagged warning"; diag <s3.err; fi
stop "$s3"
finish
