#!/usr/bin/env bash
# matmul-study.sh: the seeds' experiments of issue 11 with real gridrpcd processes:
#   matmul   the distributed matrix multiply of the sockets-vs-CORBA study
#            (examples/dmmul_dist): the rows of A in K blocks (--blocks, default 12) dealt
#            to S = 1..4 servers, stateless (B with every block) against stateful (B put
#            once per server as a remote data handle); time, speedup, efficiency, bytes;
#   linpack  the Linpack chain (examples/linpack_chain): dgefa, then R dgesl, with the
#            factors sent back and forth, kept on the servers as handles, and chained
#            by a transaction, on S = 1 and 2 servers;
#   ep       the EP sweep (examples/ep_sweep): EP in parts as plain async calls and as a
#            transaction over the servers, and with tiny parts the cost per call.
# The full run uses the network lab (tests/lab/lab.sh): a client host and four server
# hosts, each server one worker, one BLAS thread and a CPU quota (--quota, default 40% of
# a CPU), so that S servers mean S times the compute on a two-core machine; every link
# shaped to --rate (default 1gbit). The client's bytes on its link are read in its own
# namespace. Needs root (exit 77 otherwise). Writes CSV, Markdown tables and
# bench/results/matmul.png (bench/plot_matmul.py) into --out (default bench/results).
#
#   bench/matmul-study.sh [--smoke] [--study matmul|linpack|ep|all] [--sizes "100 200 ..."]
#                         [--servers "1 2 3 4"] [--reps R] [--blocks K] [--quota PCT]
#                         [--rate RATE] [--out DIR]
#   Each example runs one unmeasured warm-up of every variant first.
#     --smoke   the test suite's run: two gridrpcd on loopback (no lab, no root), tiny n,
#               S = 1 and 2, one repetition, results in a temporary folder; fails (exit 1)
#               on a failed call, a wrong result, B travelling with stateful blocks, or
#               factors crossing the client's link again (library byte counts); no time is judged
#     --sizes   the n of the multiply (default "100 200 500 1000 1500 2000"; add 3000 etc.)
#   MATMUL_MODES, LINPACK_MODES, EP_MODES: run only some variants (stateless|stateful|both;
#   sent|kept|txn|all; async|txn|both); LINPACK_SIZES (default "500 1000 2000"), EP_M, EP_PARTS
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@" # the test harness runs scripts with sh
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
smoke=0 study=all reps=3 blocks=12 quota=40 rate=1gbit out=
sizes="100 200 500 1000 1500 2000" servers="1 2 3 4"
usage() { sed -n '2,/^# *--sizes/p' "$0" | sed 's/^# \{0,1\}//'; }
need() { [ -n "${2:-}" ] || {
  echo "matmul-study: $1 needs a value (see --help)" >&2
  exit 2
}; }
while [ $# -gt 0 ]; do
  case $1 in
  --smoke) smoke=1 ;;
  --study | --sizes | --servers | --reps | --blocks | --quota | --rate | --out)
    need "$1" "${2:-}"
    v=$2
    case $1 in
    --study) study=$v ;; --sizes) sizes=$v ;; --servers) servers=$v ;; --reps) reps=$v ;;
    --blocks) blocks=$v ;; --quota) quota=$v ;; --rate) rate=$v ;; --out) out=$v ;;
    esac
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    echo "matmul-study: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
  esac
  shift
done
case $study in matmul | linpack | ep | all) ;; *)
  echo "matmul-study: --study takes matmul, linpack, ep or all, not '$study'" >&2
  exit 2
  ;;
esac
[[ $reps =~ ^[1-9][0-9]?$ ]] || { echo "matmul-study: --reps takes 1 to 99, not '$reps'" >&2; exit 2; }
[[ $blocks =~ ^[1-9][0-9]?$ ]] || { echo "matmul-study: --blocks takes 1 to 99, not '$blocks'" >&2; exit 2; }
[[ $quota =~ ^[1-9][0-9]{0,2}$ ]] || { echo "matmul-study: --quota takes a percentage of one CPU (1-999), not '$quota'" >&2; exit 2; }
for n in $sizes; do
  [[ $n =~ ^[1-9][0-9]{0,4}$ ]] || { echo "matmul-study: --sizes takes numbers from 1 to 99999, not '$n'" >&2; exit 2; }
done
for s in $servers; do
  [[ $s =~ ^[1-4]$ ]] || { echo "matmul-study: --servers takes counts from 1 to 4, not '$s'" >&2; exit 2; }
done
if [ $smoke = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "matmul-study: skipped: the full study needs root (network namespaces, tc, cgroups); run as root, or --smoke"
  exit 77
fi
# The build: BUILD_DIR, else make check's top_builddir, else build/.
B=$(cd "${BUILD_DIR:-${top_builddir:-$top/build}}" 2>/dev/null && pwd) || {
  echo "matmul-study: no build folder ${BUILD_DIR:-${top_builddir:-$top/build}}: build first (README.md)" >&2
  exit 1
}
for f in gridrpcd examples/dmmul_dist examples/linpack_chain examples/ep_sweep stubs/.libs/linalg.so stubs/.libs/nas.so; do
  [ -e "$B/$f" ] || {
    echo "matmul-study: $B/$f is missing: run make in $B" >&2
    exit 1
  }
done
out_tmp=0
if [ -z "$out" ]; then
  if [ $smoke = 1 ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/matmul-smoke.XXXXXX") || exit 1
    out_tmp=1
  else
    out=$top/bench/results
  fi
fi
mkdir -p "$out" || exit 1
failed=0
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ---- where the servers run: the lab (full) or loopback (smoke)
pids=() addrs=()
if [ $smoke = 1 ]; then
  sizes="48 130" servers="1 2" reps=1
  tmp=$out/servers
  mkdir -p "$tmp"
  cleanup() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
      for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null
      wait "$p" 2>/dev/null
    done
    pids=()
  }
  trap cleanup EXIT
  trap 'exit 1' INT TERM
  for i in 1 2; do
    env OPENBLAS_NUM_THREADS=1 "$B/gridrpcd" --host 127.0.0.1 --port 0 --copy-to "127.0.0.1:*" --module-dir "$B/stubs/.libs" --threads 1 \
      >"$tmp/s$i.out" 2>"$tmp/s$i.log" </dev/null &
    pids+=($!)
  done
  for i in 1 2; do
    for _ in $(seq 1 300); do
      grep -q '^listening on ' "$tmp/s$i.out" 2>/dev/null && break
      kill -0 "${pids[$((i - 1))]}" 2>/dev/null || break
      sleep 0.1
    done
    a=$(sed -n 's/^listening on //p' "$tmp/s$i.out" | head -1)
    [ -n "$a" ] || {
      echo "matmul-study: gridrpcd s$i did not start:" >&2
      tail -5 "$tmp/s$i.log" >&2
      exit 1
    }
    addrs+=("$a")
  done
  in_client() { "$@"; }
  link_flag=
else
  export LAB_BUILD=$B
  . "$top/tests/lab/lab.sh"
  lab_init matmul || exit $?
  lab_have_cpu_quota || {
    echo "matmul-study: skipped: no cgroup cpu controller for the servers' CPU quotas"
    exit 77
  }
  lab_host client 10 && lab_link client "$rate" 0 && lab_host meta 2 || exit 1
  # A metaserver too, for the EP sweep placed by it (the other studies name servers).
  lab_start meta "$B/gridmetad" --host 10.77.0.2 --insecure --port 7100 --db "$LAB_DIR/grid.db" --heartbeat 250ms || exit 1
  pids+=("$LAB_PID")
  META=10.77.0.2:7100
  for i in 1 2 3 4; do
    lab_host "s$i" $((10 + i)) && lab_link "s$i" "$rate" 0 && lab_cpu_quota "s$i" "$quota" || exit 1
    lab_start "s$i" env OPENBLAS_NUM_THREADS=1 "$B/gridrpcd" --host "$(lab_ip "s$i")" --insecure --port 7000 \
      --module-dir "$B/stubs/.libs" --threads 1 --quiet --metaserver "$META" --name "s$i" || exit 1
    pids+=("$LAB_PID")
    addrs+=("$(lab_ip "s$i"):7000")
  done
  echo "== the lab:"
  lab_info | sed 's/^/   /'
  in_client() { lab_exec client "$@"; }
  link_flag=--link-bytes
fi
# first S: "a:p,b:p" of the first S servers.
first() { local IFS=,; echo "${addrs[*]:0:$1}"; }
echo "== load average before: $(load) (2 cores shared with other work: see the figures' note)"
note_load_start=$(load)

# ---- the multiply
study_matmul() {
  local csv=$out/matmul.csv n S lines
  echo "mode,n,servers,blocks,rep,seconds,put_seconds,local_seconds,sent_bytes,received_bytes,wire_tx_bytes,wire_rx_bytes,link_tx_bytes,link_rx_bytes,maxdiff,ok" >"$csv"
  echo "== distributed multiply: n = $sizes; S = $servers; $blocks row blocks; $reps runs each (interleaved)"
  for n in $sizes; do
    for S in $servers; do
      # --reps inside: stateless and stateful alternate, so drift hits both alike.
      lines=$(in_client timeout 900 "$B/examples/dmmul_dist" --servers "$(first "$S")" --blocks "$blocks" \
        --reps "$reps" --mode "${MATMUL_MODES:-both}" --csv $link_flag "$n") || {
        echo "matmul-study: dmmul_dist n=$n S=$S failed or gave a wrong C" >&2
        failed=1
      }
      grep -v '^mode,' <<<"$lines" >>"$csv"
      awk -F, -v n="$n" -v S="$S" '$1 != "mode" { t[$1] = t[$1] " " $6 } END {
        printf "   n=%-5d S=%d  stateless %s s | stateful %s s\n", n, S, t["stateless"], t["stateful"] }' <<<"$lines"
    done
  done
  if [ $smoke = 1 ]; then
    # Stateful sends B once per server, stateless once per block: the counts must be
    # exactly what the calls carry.
    python3 - "$csv" "$blocks" <<'EOF' || failed=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
k = int(sys.argv[2])
bad = [r for r in rows if r["ok"] != "1"]
if bad or not rows:
    sys.exit("matmul-study: %d of %d runs failed" % (len(bad), len(rows)))
for r in rows:
    n, s = int(r["n"]), int(r["servers"])
    if r["mode"] == "stateless":
        want = 8 * (n * n + k * n * n)
    else:
        want = 8 * (n * n + s * n * n)
    if int(r["sent_bytes"]) != want or int(r["received_bytes"]) != 8 * n * n:
        sys.exit("matmul-study: %s n=%d S=%d counted %s bytes sent, %s received; expected %d and %d" % (
            r["mode"], n, s, r["sent_bytes"], r["received_bytes"], want, 8 * n * n))
# The library's own count of what it wrote: B must not travel with the stateful calls
# (a handle sent inline would make the two variants equal), and nothing else large may.
wire = {}
for r in rows:
    wire.setdefault((int(r["n"]), int(r["servers"])), {})[r["mode"]] = r
for (n, s), v in sorted(wire.items()):
    if len(v) < 2:
        continue
    a, b = int(v["stateless"]["wire_tx_bytes"]), int(v["stateful"]["wire_tx_bytes"])
    saved = 8 * n * n * (k - s)
    if a - b < 0.95 * saved or b > 1.05 * int(v["stateful"]["sent_bytes"]) + 65536:
        sys.exit("matmul-study: n=%d S=%d: the library wrote %d bytes stateless and %d stateful; B once per block "
                 "against once per server should differ by %d, and stateful carry about %s" % (
                     n, s, a, b, saved, v["stateful"]["sent_bytes"]))
print("   the counted bytes match the calls: stateless sends B %d times, stateful once per server;"
      " the library's wire counts agree" % k)
EOF
  fi
  python3 "$here/plot_matmul.py" --dir "$out" $([ $smoke = 1 ] && echo --no-plot) \
    --note "Load average (1, 5, 15 min) at the start: $note_load_start; at the end of the multiply: $(load). Servers: one worker, one BLAS thread, $([ $smoke = 1 ] && echo "loopback, no quota" || echo "$quota% of a CPU each, links $([ "$rate" = 0 ] && echo unshaped || echo "$rate")")." >/dev/null ||
    failed=1
  [ $smoke = 1 ] || cat "$out/matmul-tables.md"
}

# ---- the Linpack chain
study_linpack() {
  local csv=$out/linpack-chain.csv n S lines ns=${LINPACK_SIZES:-"500 1000 2000"} rhs=8
  [ $smoke = 1 ] && ns="40 120" rhs=3
  echo "mode,n,servers,rhs,rep,seconds,sent_bytes,received_bytes,wire_tx_bytes,wire_rx_bytes,link_tx_bytes,link_rx_bytes,max_residual,ok" >"$csv"
  echo "== Linpack chain: n = $ns, $rhs right-hand sides, factors sent / kept / transaction"
  for n in $ns; do
    for S in 1 2; do
      lines=$(in_client timeout 600 "$B/examples/linpack_chain" --servers "$(first "$S")" --rhs "$rhs" --reps "$reps" \
        --mode "${LINPACK_MODES:-all}" --csv $link_flag "$n") || {
        echo "matmul-study: linpack_chain n=$n S=$S failed" >&2
        failed=1
      }
      grep -v '^mode,' <<<"$lines" >>"$csv"
    done
  done
  if [ $smoke = 1 ]; then
    # Kept and in a transaction, the factors stay on the servers: the client sends A once
    # and the right-hand sides (the library's count), never the factors again per solve.
    python3 - "$csv" "$rhs" <<'EOF' || failed=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = int(sys.argv[2])
if not rows or any(x["ok"] != "1" for x in rows):
    sys.exit("matmul-study: a Linpack chain run failed")
for x in rows:
    n, tx = int(x["n"]), int(x["wire_tx_bytes"])
    once = 8 * n * n + 8 * r * n
    limit = once + 4096 * (r + 4)  # messages' heads and names
    if x["mode"] in ("kept", "txn") and not once <= tx <= limit:
        sys.exit("matmul-study: linpack %s n=%d S=%s: the client sent %d bytes; A once and %d right-hand sides "
                 "are %d (the factors must not be sent again)" % (x["mode"], n, x["servers"], tx, r, once))
    if x["mode"] == "sent" and tx < once + r * 8 * n * n:
        sys.exit("matmul-study: linpack sent n=%d: only %d bytes sent; the factors go with every solve" % (n, tx))
print("   the factors crossed the client's connections once (kept, txn), or with every solve (sent)")
EOF
  fi
  python3 - "$csv" <<'EOF' | tee "$out/linpack-chain.md"
import csv, statistics, sys
from collections import defaultdict
g = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r["ok"] == "1":
        g[(int(r["n"]), int(r["servers"]), r["mode"])].append(r)
print("| n | S | mode | time (s), median | min-max | arrays sent MB | arrays received MB | wire tx MB | wire rx MB | link tx MB | link rx MB |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (n, s, m), rs in sorted(g.items(), key=lambda kv: (kv[0][0], kv[0][1], ["sent", "kept", "txn"].index(kv[0][2]))):
    t = [float(r["seconds"]) for r in rs]
    mb = lambda c: "%.1f" % (statistics.median(float(r[c]) for r in rs) / 1e6) if rs[0][c] not in ("", "0") else "-"
    print("| %d | %d | %s | %.3f | %.3f-%.3f | %s | %s | %s | %s | %s | %s |" % (n, s, m, statistics.median(t), min(t),
          max(t), mb("sent_bytes"), mb("received_bytes"), mb("wire_tx_bytes"), mb("wire_rx_bytes"), mb("link_tx_bytes"),
          mb("link_rx_bytes")))
EOF
}

# ---- the EP sweep
study_ep() {
  local csv=$out/ep-sweep.csv S lines m=${EP_M:-24} parts=${EP_PARTS:-8} om=16 oparts=2000
  [ $smoke = 1 ] && m=20 parts=4 oparts=200
  echo "mode,m,parts,servers,rep,seconds,us_per_call,wire_tx_bytes,wire_rx_bytes,txn_servers,verified,ok" >"$csv"
  echo "== EP sweep: m = $m in $parts parts over S servers; and m = $om in $oparts parts (cost per call)"
  for S in $servers; do
    lines=$(in_client timeout 600 "$B/examples/ep_sweep" --servers "$(first "$S")" --reps "$reps" \
      --mode "${EP_MODES:-both}" --csv "$m" "$parts") || {
      echo "matmul-study: ep_sweep m=$m S=$S failed" >&2
      failed=1
    }
    grep -v '^mode,' <<<"$lines" >>"$csv"
  done
  lines=$(in_client timeout 600 "$B/examples/ep_sweep" --servers "$(first 2)" --reps "$reps" --mode "${EP_MODES:-both}" \
    --csv "$om" "$oparts") || {
    echo "matmul-study: ep_sweep m=$om failed" >&2
    failed=1
  }
  grep -v '^mode,' <<<"$lines" >>"$csv"
  if [ -n "${META:-}" ]; then
    # The plain name: gridmetad places every call (async) or the transaction's calls.
    lines=$(in_client env GRIDRPC_METASERVER="$META" GRIDRPC_QUIET=1 timeout 600 "$B/examples/ep_sweep" --reps "$reps" \
      --mode "${EP_MODES:-both}" --csv "$m" "$parts") || {
      echo "matmul-study: ep_sweep m=$m through the metaserver failed" >&2
      failed=1
    }
    grep -v '^mode,' <<<"$lines" >>"$csv"
  fi
  python3 - "$csv" <<'EOF' | tee "$out/ep-sweep.md"
import csv, statistics, sys
from collections import defaultdict
g = defaultdict(list)
used = defaultdict(set)
for r in csv.DictReader(open(sys.argv[1])):
    if r["ok"] == "1":
        g[(int(r["m"]), int(r["parts"]), int(r["servers"]), r["mode"])].append(float(r["seconds"]))
        used[(int(r["m"]), int(r["parts"]), int(r["servers"]), r["mode"])].add(r["txn_servers"])
print("| m | parts | S | mode | time (s), median | min-max | us per call | speedup vs S = 1 | servers the transaction used |")
print("|---:|---:|---:|---|---:|---:|---:|---:|---:|")
for (m, p, s, mode), t in sorted(g.items()):
    base = g.get((m, p, 1, mode))
    sp = "%.2f" % (statistics.median(base) / statistics.median(t)) if base else "-"
    u = ",".join(sorted(used[(m, p, s, mode)])) if mode == "txn" else "-"
    print("| %d | %d | %s | %s | %.3f | %.3f-%.3f | %.1f | %s | %s |" % (m, p, s or "4, by gridmetad", mode,
          statistics.median(t), min(t), max(t), statistics.median(t) / p * 1e6, sp, u))
EOF
}

if [ "$study" = matmul ] || [ "$study" = all ]; then study_matmul || failed=1; fi
if [ "$study" = linpack ] || [ "$study" = all ]; then study_linpack || failed=1; fi
if [ "$study" = ep ] || [ "$study" = all ]; then study_ep || failed=1; fi
echo "== load average after: $(load)"
echo "load: start $note_load_start, end $(load)" >"$out/load.txt"
if [ $smoke = 0 ]; then lab_teardown; fi
if [ $failed != 0 ]; then
  echo "matmul-study: FAILED (a server did not start, or a call failed or gave a wrong result; see above; results in $out)" >&2
  exit 1
fi
if [ $out_tmp = 1 ]; then
  cleanup # the servers write in $out
  rm -rf "$out"
  echo "matmul-study: smoke run passed (its temporary results are removed)"
else
  echo "matmul-study: done; CSV, tables and the plot in $out"
fi
