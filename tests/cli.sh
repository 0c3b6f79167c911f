#!/bin/sh
# cli.sh: gridrpc, the command-line tool, as a user meets it: help and usage errors
# (exit 2), ls, describe and call against a real gridrpcd on loopback (values checked),
# clear errors naming the argument for bad input, status against a scripted metaserver
# (tests/unit/fake_metad.c: two servers, one down) as a table and as JSON, and clear
# messages when nothing answers. Every --json output must parse (python3 -m json.tool).
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
CLI=${GRIDRPC_CLI:-$top_builddir/gridrpc}
FAKE_METAD=${FAKE_METAD:-$top_builddir/fake-metad}
MODULES=${GRIDRPC_TEST_MODULES:-$top_builddir/stubs/.libs}
PY=${PYTHON:-python3}
cd "$T_TMP" || exit 1
# Nothing from the user's environment decides where the tool talks to.
unset GRIDRPC_SERVER GRIDRPC_METASERVER GRIDRPC_CONFIG GRIDRPC_SITE GRIDRPC_TOKEN
HOME=$T_TMP
export HOME

pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
# start NAME OUT CMD...: starts CMD in the background and waits for its listening line;
# the address goes to $addr.
start() {
  _name=$1; _out=$2; shift 2
  "$@" >"$_out" 2>"$_out.err" &
  pids="$pids $!"
  _i=0
  while [ $_i -lt 150 ]; do
    addr=$(sed -n 's/^listening on //p' "$_out" 2>/dev/null)
    [ -n "$addr" ] && return 0
    sleep 0.1; _i=$((_i + 1))
  done
  echo "# $_name did not start"; diag <"$_out.err"
  return 1
}
# run and expect: tests/lib.sh's t_run and t_expect.
run() { t_run "$@"; }
expect() { t_expect "$@"; }
# json NAME PYTHON-EXPR CMD...: CMD exits 0, prints valid JSON, and EXPR (over j, the
# parsed object) is true.
json() {
  _name=$1; _expr=$2; shift 2
  if run 0 "$@" && "$PY" -m json.tool <out >/dev/null 2>&1 &&
    "$PY" -c "import json,sys; j=json.load(open('out')); sys.exit(0 if ($_expr) else 1)" 2>>err; then
    ok "$_name"
  else
    fail "$_name (rc $rc)"; diag <out; diag <err
  fi
}
# A port nothing listens on: one the kernel gave a socket that is closed again.
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# ---- help and usage
"$CLI" --help >help.out 2>&1; rc=$?
missing=
for w in status ls describe call submit fetch jobs forget keygen --key-file --metaserver --server --token --site --json --timeout --help --version \
  GRIDRPC_METASERVER GRIDRPC_SERVER GRIDRPC_SITE 'Exit status'; do
  grep -q -- "$w" help.out || missing="$missing $w"
done
if [ $rc -eq 0 ] && grep -q '^Usage: gridrpc ' help.out && [ -z "$missing" ]; then ok "--help names every command and option"; else fail "--help (rc $rc, missing:$missing)"; diag <help.out; fi
for c in status ls describe call; do
  if "$CLI" $c --help >sub.out 2>&1 && grep -q "^Usage: gridrpc \[OPTIONS\] $c" sub.out && grep -q -- '--json' sub.out; then
    ok "$c --help"; else fail "$c --help"; diag <sub.out
  fi
done
expect "help COMMAND shows the command's help" 0 "OUT parameters are left out" "$CLI" help call
expect "--version" 0 "gridrpc (GridRPC) " "$CLI" --version
expect "no command is a usage error" 2 "no command given" "$CLI"
expect "unknown command" 2 "unknown command 'frobnicate': use status, ls, describe, call, submit, fetch, jobs, forget, cancel, unregister, keygen, top, completion or help (gridrpc --help)" "$CLI" frobnicate
expect "unknown option" 2 "unknown option '--frob'" "$CLI" --frob status
# Typos: the option or command meant is named; a far word and an ambiguous
# abbreviation (which lists its options already) get no guess.
if grep -q "did you mean" err; then fail "a far word gets no 'did you mean'"; diag <err; else ok "a far word gets no 'did you mean'"; fi
expect "unknown option: did you mean" 2 "unknown option '--jsno': did you mean --json?" "$CLI" --jsno status
expect "a subcommand's option: did you mean" 2 "unknown option '--timout': did you mean --timeout?" "$CLI" status --timout 1
expect "ambiguous option" 2 "option '--s' is ambiguous: --server, --site" "$CLI" --s status
if grep -q "did you mean" err; then fail "an ambiguous option gets no 'did you mean'"; diag <err; else ok "an ambiguous option gets no 'did you mean'"; fi
expect "unknown command: did you mean" 2 "unknown command 'stauts': did you mean 'status'? use status, ls," "$CLI" stauts
expect "help of an unknown command: did you mean" 2 "no command 'cal': did you mean 'call'?" "$CLI" help cal
expect "option without its value" 2 "--server needs a value" "$CLI" status --server
expect "bad --server address" 2 "--server: " "$CLI" --server nohostport:http ls
expect "bad --timeout" 2 "--timeout: 'soon' is not a duration" "$CLI" --timeout soon status
expect "nothing configured to talk to" 1 "no metaserver or server to ask: pass --metaserver HOST:PORT or --server HOST:PORT" "$CLI" status
expect "malformed GRIDRPC_METASERVER" 1 "GRIDRPC_METASERVER: " env GRIDRPC_METASERVER=bad:port:x "$CLI" status
expect "describe needs one name" 2 "describe takes one function name" "$CLI" --server 127.0.0.1:1 describe

# ---- one real server
if ! start gridrpcd srv.out "$GRIDRPCD" --host 127.0.0.1 --port 0 --module-dir "$MODULES" --threads 2; then
  fail "gridrpcd starts"; finish; exit 1
fi
SRV=$addr
S="--server $SRV"

if run 0 "$CLI" $S ls && grep -Eq '^linalg/dmmul +double precision matrix multiply C = A \* B' out &&
  grep -Eq '^test/echo_int +echo an int array$' out && grep -q '^FUNCTION  *DESCRIPTION$' out; then
  ok "ls --server lists functions with their descriptions"; else fail "ls (rc $rc)"; diag <out; diag <err
fi
if run 0 "$CLI" $S ls dmm && [ "$(wc -l <out)" -eq 3 ] && grep -q '^linalg/dmmul ' out && grep -q '^linalg/dmmul_rows ' out; then ok "ls PATTERN: a part of the name"; else fail "ls dmm"; diag <out; fi
if run 0 "$CLI" $S ls 'linalg/d*v' && [ "$(wc -l <out)" -eq 2 ] && grep -q '^linalg/dgemv ' out; then ok "ls PATTERN: a shell pattern"; else fail "ls glob"; diag <out; fi
expect "ls with no match fails and says so" 1 "no function matches 'zzz'" "$CLI" $S ls zzz
json "ls --json" "any(f['name']=='linalg/dmmul' and f['description'].startswith('double precision matrix multiply') for f in j['functions']) and j['server']['port']==int('$SRV'.split(':')[1])" "$CLI" $S --json ls

if run 0 "$CLI" $S describe linalg/dmmul && grep -Eq '^ +IN +double +A +\[n\]\[n\]$' out &&
  grep -Eq '^ +OUT +double +C +\[n\]\[n\]$' out && grep -Eq '^ +IN +int +n$' out &&
  grep -q '^Complexity:  2\*n^3 flops$' out && grep -q 'double precision matrix multiply' out &&
  grep -q "^Servers:     $SRV$" out && grep -q '^Retry:       yes' out; then
  ok "describe: modes, types, dimensions, complexity, description, server"; else fail "describe (rc $rc)"; diag <out; diag <err
fi
if run 0 "$CLI" $S describe test/subrange && grep -Eq '^ +INOUT +double +x +\[n : lo, hi, 1\]$' out && grep -q '^Complexity:  not declared$' out; then
  ok "describe: a sub-range and no Complexity"; else fail "describe subrange"; diag <out
fi
json "describe --json" "j['name']=='linalg/dmmul' and j['complexity']=='2*n^3' and [p['mode'] for p in j['parameters']]==['IN','IN','IN','OUT'] and j['parameters'][1]['sizes']==['n','n'] and j['parameters'][3]['dims']=='[n][n]' and j['retry'] is True" "$CLI" $S --json describe linalg/dmmul
expect "describe an unknown function points to gridrpc ls" 1 "gridrpc ls --server $SRV" "$CLI" $S describe test/no_such

# ---- call
if run 0 "$CLI" $S call linalg/dmmul 2 '[1,2,3,4]' '[5,6,7,8]' && [ "$(cat out)" = "C =
  19 22
  43 50" ]; then ok "call dmmul: the product, row by row"; else fail "call dmmul (rc $rc)"; diag <out; diag <err; fi
json "call --json dmmul: nested by dimensions" "j=={'function':'linalg/dmmul','results':{'C':[[19,22],[43,50]]}}" "$CLI" $S --json call linalg/dmmul 2 '[[1,2],[3,4]]' '[5,6,7,8]'
if run 0 "$CLI" $S call linalg/dmmul 3 '[1,0,0,0,1,0,0,0,1]' '[1,2,3,4,5,6,7,8,9.5]' && grep -q '^    7   8 9.5$' out; then ok "call dmmul 3x3 (columns aligned)"; else fail "dmmul 3x3"; diag <out; diag <err; fi
expect "call echo_int" 0 "out = [1, -2, 3]" "$CLI" $S call test/echo_int 3 '[1,-2,3]'
expect "call echo_string (spaces and quotes)" 0 'out = "hello \"grid\" world"' "$CLI" $S call test/echo_string 'hello "grid" world'
printf '1.5 2\n\n  -3\n' >nums.txt
expect "call with @FILE, an INOUT array" 0 "x = [3, 4, -6]" "$CLI" $S call test/inout_double 3 @nums.txt
expect "call: a scalar out (WORK array left out)" 0 "sum = 14" "$CLI" $S call test/work_sum 3 '[1,2,3]'
expect "call: complex arrays as re,im pairs" 0 "out = [1+2i, 3-4i]" "$CLI" $S call test/echo_dcomplex 2 '[1,2,3,-4]'
expect "call: strings arrays" 0 'out = ["a b", "c"]' "$CLI" $S call test/echo_strings 2 '["a b", "c"]'
expect "call: INOUT scalars" 0 'v = 5' "$CLI" $S call test/inout_scalars 1 2.5 abc
json "call --json: every scalar type" "j['results']=={'co':65,'so':-2,'io':3,'lo':4,'llo':5,'fo':1.5,'dout':0.1,'sco':[1,2],'dco':[3,-4],'uo':4294967295}" "$CLI" $S --json call test/echo_scalars 65 -2 3 4 5 1.5 0.1 '[1,2]' '[3,-4]' 4294967295
expect "call: a function without results" 0 "ok (the function returns nothing)" "$CLI" $S call test/null_call

# Bad input: exit 2, naming the argument and what it expects.
expect "call: too few arguments" 2 "linalg/dmmul takes 3 arguments: n (int), A (double [n][n]), B (double [n][n]), 2 given" "$CLI" $S call linalg/dmmul 2 '[1,2,3,4]'
expect "call: array length against its dimensions" 2 "argument A (IN double [n][n]): expects 4 numbers (double [n][n] with n=2), got 3" "$CLI" $S call linalg/dmmul 2 '[1,2,3]' '[1,0,0,1]'
expect "call: not a number" 2 "argument B (IN double [n][n]): element 2: 'x' is not a number" "$CLI" $S call linalg/dmmul 2 '[1,2,3,4]' '[1,0,x,1]'
expect "call: not a whole number for an int" 2 "argument n (IN int): '2.5' is not a whole number" "$CLI" $S call linalg/dmmul 2.5 '[1]' '[1]'
expect "call: out of range for the type" 2 "'3000000000' is out of range for int" "$CLI" $S call test/echo_int 1 '[3000000000]'
expect "call: negative for unsigned" 2 "'-1' is negative: expected unsigned int" "$CLI" $S call test/echo_unsigned 1 '[-1]'
expect "call: a missing @FILE" 2 "cannot read 'nope.txt'" "$CLI" $S call test/inout_double 3 @nope.txt
expect "call: unbalanced list" 2 "'[' without its ']'" "$CLI" $S call test/echo_int 2 '[1,2'
expect "call: unknown function, and how to list them at this server" 1 "no function 'test/no_such' on this server; \`gridrpc ls --server $SRV\` lists its functions" "$CLI" $S call test/no_such 1
expect "call: a typo of a function names the function" 1 "no function 'linalg/dmmull' on this server; did you mean 'linalg/dmmul'? \`gridrpc ls --server $SRV\`" "$CLI" $S call linalg/dmmull 2 '[1,2,3,4]' '[1,0,0,1]'
expect "call: a typo of a plain name names the plain name" 1 "no function 'dmmull' on this server; did you mean 'dmmul'?" "$CLI" $S call dmmull 2 '[1,2,3,4]' '[1,0,0,1]'
expect "call: --timeout bounds the call" 1 "call test/sleep failed: test/sleep on $SRV: no reply within the call timeout of 0.5 s (--timeout)" "$CLI" $S --timeout 0.5 call test/sleep 3

# ---- status of one server
if run 0 "$CLI" $S status && grep -q "^server   $SRV (gridrpcd " out && grep -q '^state    up$' out &&
  grep -q '^workers  2$' out; then ok "status --server: PING shows its load"; else fail "status --server (rc $rc)"; diag <out; diag <err; fi
json "status --server --json" "j['server']['state']=='up' and j['server']['workers']==2 and 'loadavg' in j['server']" "$CLI" $S --json status
P=$(free_port)
expect "status of a server that is not there" 1 "cannot reach the server at 127.0.0.1:$P: connection refused; is gridrpcd running there?" "$CLI" --server 127.0.0.1:$P status

# ---- a metaserver (scripted: alpha up, at the real server; beta down)
expect "status: the metaserver is not there" 1 "cannot reach the metaserver at 127.0.0.1:$P: connection refused; is gridmetad running? set GRIDRPC_METASERVER or pass --metaserver" "$CLI" --metaserver 127.0.0.1:$P status
if ! start fake-metad meta.out "$FAKE_METAD" --alpha "$SRV"; then fail "fake-metad starts"; finish; exit 1; fi
META=$addr
if run 0 env GRIDRPC_METASERVER=$META "$CLI" --site labsite status &&
  grep -q "^metaserver $META, site labsite: 2 servers, 1 up$" out &&
  grep -Eq "^ID +NAME +ADDRESS +STATE +RUN/QUEUE/PEND +CORES +LOAD +GFLOP/S +MB/S +LAT\(MS\) +CALLS/FAIL +BEAT$" out &&
  grep -Eq "^1 +alpha +$SRV +up +3/2/1 +8 +2.50 +12.50 +117.5 +0.42 +1234/5 +0.3s$" out &&
  grep -Eq '^2 +beta +10.9.9.9:7002 +DOWN +0/0/0 +2 +0.00 +- +- +- +7/7 +95s$' out &&
  grep -q '^SERVERS site=labsite$' meta.out.err; then
  ok "status: the metaserver's table (GRIDRPC_METASERVER, --site)"; else fail "status table (rc $rc)"; diag <out; diag <err
fi
json "status --json" "[s['name'] for s in j['servers']]==['alpha','beta'] and [s['state'] for s in j['servers']]==['up','down'] and j['servers'][0]['latency']==0.00042 and j['servers'][0]['bandwidth']==117.5e6 and j['servers'][1]['bandwidth'] is None and j['servers'][1]['speed'] is None and j['site']=='envsite' and j['servers'][0]['functions'][0]=='linalg/dmmul'" env GRIDRPC_SITE=envsite "$CLI" --json --metaserver $META status
if run 0 "$CLI" --metaserver $META ls && grep -Eq '^linalg/dmmul +1,2\(down\) +double precision matrix multiply' out &&
  grep -Eq '^only/on_beta +2\(down\) +-$' out && grep -Eq '^test/echo_int +1 +echo an int array$' out; then
  ok "ls from the metaserver: who has what, descriptions from an up server"; else fail "ls via metaserver (rc $rc)"; diag <out; diag <err
fi
json "ls --json from the metaserver" "[f['name'] for f in j['functions']]==['linalg/dmmul','only/on_beta','test/echo_int','test/echo_string'] and [s['state'] for s in j['functions'][0]['servers']]==['up','down'] and j['functions'][1]['description'] is None" "$CLI" --metaserver $META --json ls
if run 0 "$CLI" --metaserver $META describe dmmul && grep -q '^linalg/dmmul$' out &&
  grep -q "^Servers:     1 alpha ($SRV), 2 beta (10.9.9.9:7002, down)$" out; then
  ok "describe from the metaserver: which servers have it"; else fail "describe via metaserver (rc $rc)"; diag <out; diag <err
fi
expect "describe: only a down server has it" 1 "every server that has 'only/on_beta' is down" "$CLI" --metaserver $META describe only/on_beta
expect "describe: nobody has it" 1 "no server registered with the metaserver at $META has 'nope'" "$CLI" --metaserver $META describe nope
expect "--server wins over the metaserver" 0 "Servers:     $SRV" env GRIDRPC_METASERVER=$META "$CLI" $S describe linalg/dmmul

if start fake-metad empty.out "$FAKE_METAD" --empty; then
  expect "status of an empty grid says how to add a server" 0 "no servers have registered yet: start one with gridrpcd --metaserver $addr" "$CLI" --metaserver $addr status
  json "status --json of an empty grid" "j['servers']==[]" "$CLI" --metaserver $addr --json status
else
  fail "fake-metad --empty starts"
fi

finish
