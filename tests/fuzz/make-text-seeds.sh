#!/bin/sh
# make-text-seeds.sh: regenerates the seed corpora that come from files already in the
# tree: server and meta (gridrpcd's and gridmetad's requests, from corpus/msg and the
# golden messages of tests/golden-msg, one connection each), idl (the IDL files of stubs/ and tests/), ogf, conf and opts (from
# the examples of the documentation, written here). Run from the top of the tree:
#     sh tests/fuzz/make-text-seeds.sh
# Files already there are replaced; findings kept as regression seeds (names starting
# with "regress-") are left alone.
set -eu
top=$(pwd)
c=tests/fuzz/corpus
[ -d tests/golden-msg ] || { echo "make-text-seeds.sh: run it from the top of the tree" >&2; exit 2; }
mkdir -p $c/meta $c/idl $c/ogf $c/conf $c/opts $c/server

# ---- meta: one connection = HELLO, then requests (the server ids of HEARTBEAT,
# UNREGISTER and CRASHED made 1, the id the first REGISTER gets).
msg() { xxd -r -p "$top/tests/golden-msg/$1.hex"; }
id1() { msg "$1" | python3 -c 'import sys; b=bytearray(sys.stdin.buffer.read()); b[28:36]=(1).to_bytes(8,"big"); sys.stdout.buffer.write(b)'; }
# A REPORT of a call that ran on server 1 (code 0, so the metaserver learns from it); with
# "big", 1 MiB each way (a bandwidth sample rather than a latency one).
report_ok() { msg report | python3 -c 'import sys; b=bytearray(sys.stdin.buffer.read()); b[36:44]=(1).to_bytes(8,"big"); b[44:48]=bytes(4)
if sys.argv[1:] == ["big"]: b[76:84]=b[84:92]=(1<<20).to_bytes(8,"big"); b[92:100]=(50*10**6).to_bytes(8,"big")
sys.stdout.buffer.write(b)' "$@"; }
conn() { out=$1; shift; { msg hello; for m in "$@"; do case $m in heartbeat|unregister|crashed) id1 $m ;; report-ok) report_ok ;;
  report-big) report_ok big ;; *) msg $m ;; esac; done; } >"$c/meta/$out"; }
conn hello
conn full register heartbeat schedule report servers list ping probe unregister
conn schedule-twice register heartbeat schedule schedule report schedule
conn empty-state ping list servers schedule
conn down register unregister schedule servers
conn learn register heartbeat schedule report-ok report-big schedule servers
conn crash register crashed crashed schedule holds servers
for m in register heartbeat schedule report servers list ping probe unregister call crashed holds; do
  [ -f tests/golden-msg/$m.hex ] && conn "one-$m" $m
done
msg register >"$c/meta/no-hello"

# ---- server: one connection to gridrpcd = HELLO, then each message of corpus/msg, then
# a few calls in a row (the sessions, jobs and objects they open are the server's).
mkdir -p $c/server
for f in $c/msg/*; do
  n=$(basename "$f")
  case $n in hello* | regress-*) continue ;; esac
  { msg hello; cat "$f"; } >"$c/server/$n"
done
# The golden messages carry a made-up descriptor hash (11 22 .. 88): test/echo_double's
# real one, from the CALL make-msg-seeds encoded, makes them reach the call.
hash=$(python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); k=b"\x00\x00\x00\x0becho_double\x00"; i=d.index(k)+len(k); print(d[i:i+8].hex())' $c/msg/call-echo-double)
for f in $c/server/*; do
  python3 -c 'import sys; p=sys.argv[1]; d=open(p,"rb").read(); open(p,"wb").write(d.replace(bytes.fromhex("1122334455667788"), bytes.fromhex(sys.argv[2])))' "$f" "$hash"
done
{ msg hello; cat $c/msg/call-echo-double $c/msg/call-echo-strings $c/msg/get_descriptor $c/msg/ping; msg list; } >$c/server/calls
# Each of those files begins with its own HELLO (60 bytes): the messages after it.
strip() { tail -c +61 "$1"; }
{ msg hello; for m in data-put call-data data-get data-free session-end; do strip $c/server/$m; done; } >$c/server/data-session
{ msg hello; for m in submit jobs fetch job-info forget; do strip $c/server/$m; done; } >$c/server/jobs-flow
{ msg hello; cat $c/msg/obj-create $c/msg/obj-invoke-echo-double $c/msg/obj-destroy; } >$c/server/object-flow
# The same flows from a client that sends its session (an owner, so its SUBMIT is kept).
msg hello_session >$c/msg/hello-session
{ msg hello_session; for m in submit jobs fetch job-info forget; do strip $c/server/$m; done; } >$c/server/jobs-flow-session
{ msg hello_session; cat $c/msg/obj-create $c/msg/obj-invoke-echo-double $c/msg/obj-destroy; } >$c/server/object-flow-session

# ---- idl: every IDL file of the tree, as idlc --no-cpp reads it (#include lines and all).
for f in stubs/*.idl tests/idl/*.idl tests/golden/*/input.idl tests/ngobj/*.idl tests/ngdiag/*.idl \
         tests/ngcallback/*.idl tests/fortran/*.idl; do
  [ -f "$f" ] || continue
  name=$(echo "$f" | sed 's|/input.idl$||; s|\.idl$||; s|^tests/||; s|/|-|g')
  cp "$f" "$c/idl/$name.idl"
done

# ---- ogf: grpc_initialize's file in both formats (docs/api.md, tests/ngsample).
cat >$c/ogf/ours <<'X'
# our format
server 127.0.0.1:7000
metaserver [::1]:7100
timeout 2m
connect_timeout 500ms
token "a secret"
X
cat >$c/ogf/ninfg <<'X'
<CLIENT>
  metaserver localhost:7100
</CLIENT>
<SERVER_DEFAULT>
  port 7001
  session_timeout 30
</SERVER_DEFAULT>
<SERVER>
  hostname node1.example.org node2.example.org
  port 7000
  tag fast
</SERVER>
<SERVER>
  hostname "node3.example.org"
</SERVER>
<FUNCTION_INFO>
  hostname fast
  funcname linalg/dmmul
</FUNCTION_INFO>
<INVOKE_SERVER>
  type SSH
</INVOKE_SERVER>
X
cat >$c/ogf/include <<'X'
<INCLUDE>
  filename other.conf
</INCLUDE>
<FUNCTION_INFO>
  hostname other.example.org
  funcname dmmul
</FUNCTION_INFO>
X
cat >$c/ogf/include-self <<'X'
server localhost
<INCLUDE>
  filename self.conf
</INCLUDE>
X

# ---- conf: ~/.gridrpc.conf (docs/api.md); each line is also a value and a name.
cat >$c/conf/full <<'X'
# the client's file
server localhost:7000
metaserver [::1]:7100   # a comment
timeout 1.5 h
connect_timeout "250ms"
token tok
X
printf 'gridrpc://127.0.0.1:7000/test/echo_double\ngridrpc://[::1]:1/f\n16MiB\n1 GB\nyes\nOFF\n30 seconds\n' >$c/conf/values
printf 'server host\ntimeout 5x\n' >$c/conf/bad

# ---- opts: command lines, one word a line.
printf -- '--port\n0\n--threads\n4\n--mode\nthread\n--queue\nsjf\n--max-message\n64MiB\n--io-timeout\n5s\n' >$c/opts/gridrpcd
printf -- '--metaserver\n[::1]:7100\n--advertise\nnode:7000\n--name\nn1\n--speed\n2.5G\n--metaserver-token\nt\n' >$c/opts/gridrpcd-meta
printf -- '--data-memory\n1G\n--data-grace\n1m\n--data-lease\n1h\n--job-dir\n/tmp/j\n--job-keep\n1d\n--module\nm.so\n' >$c/opts/gridrpcd-data
printf -- '--db\n:memory:\n--scheduler\nleast-load\n--http\n0\n--heartbeat\n250ms\n--down-after\n3\n--max-hold\n20s\n' >$c/opts/gridmetad
printf -- '--max-connections\n64\n-v\n--log-level\ndebug\n--token\nabc\n' >$c/opts/gridmetad-more
printf -- '--help\n' >$c/opts/help
printf -- '--port=7000\n--bogus\n' >$c/opts/bad
echo "make-text-seeds.sh: $(ls $c/server | wc -l) server, $(ls $c/meta | wc -l) meta, $(ls $c/idl | wc -l) idl, $(ls $c/ogf | wc -l) ogf, $(ls $c/conf | wc -l) conf, $(ls $c/opts | wc -l) opts"
