#!/usr/bin/env bash
# run-core.sh: the core-path benchmarks of BENCH.md in one run: starts gridrpcd on
# loopback, runs rpc_bench (null call, 64 MiB, dmmul, Linpack; each against its
# baseline measured in the same run), prints the tables and writes a PNG plot.
# "tls" runs the null call and 64 MiB again over gridrpcs:// (a second gridrpcd with
# --tls-cert, certificates made with the openssl command in a temporary folder), each
# against raw TCP as the plain ones, and prints TLS's cost beside the plain figures.
# Usage: bench/run-core.sh [--quick] [BENCHMARK...]   (after scripts/setup.sh)
#   BENCHMARK: null async bulk dmmul linpack tls (default: all)
# Output: bench/results/core.csv, bench/results/core.png, bench/results/core-tls.csv
# Environment: GRIDRPCD_ARGS, more gridrpcd options (e.g. --in-process-unsafe: the same
# run without executor processes, for a side-by-side figure of what they cost).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
quick=
case ${1:-} in
  -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --quick) quick=--quick; shift ;;
esac
for w in "$@"; do
  case $w in
    null | async | bulk | dmmul | linpack | tls) ;;
    *) echo "run-core.sh: unknown benchmark '$w' (null async bulk dmmul linpack tls; --help)" >&2; exit 2 ;;
  esac
done
which=("$@")
[ ${#which[@]} -gt 0 ] || which=(null async bulk dmmul linpack tls)
tls=
plain=()
for w in "${which[@]}"; do if [ "$w" = tls ]; then tls=1; else plain+=("$w"); fi; done
make -C "$build" -s bench/rpc_bench >/dev/null
mkdir -p bench/results
out=$(mktemp)
tmp=$(mktemp -d)
# shellcheck disable=SC2086
"$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --quiet ${GRIDRPCD_ARGS:-} >"$out" &
pid=$!
tpid=
trap 'kill -TERM $pid $tpid 2>/dev/null; wait $pid $tpid 2>/dev/null; rm -rf "$out" "$tmp"' EXIT
for _ in $(seq 1 100); do grep -q '^listening on ' "$out" && break; sleep 0.1; done
export GRIDRPC_SERVER=$(sed -n 's/^listening on //p' "$out")
# The local baseline's OpenBLAS threads would otherwise spin ~0.1 s after each dgemm
# and steal the cores from the remote call measured next (gridrpcd sets the same).
export OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-16}
echo "gridrpcd ${GRIDRPCD_ARGS:-(defaults)} at $GRIDRPC_SERVER; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
if [ ${#plain[@]} -gt 0 ]; then
  "$build/bench/rpc_bench" $quick --csv bench/results/core.csv "${plain[@]}"
  python3 bench/plot_core.py bench/results/core.csv bench/results/core.png && echo "plot: bench/results/core.png"
fi
[ -n "$tls" ] || exit 0

# ---- TLS: the same null call and 64 MiB over gridrpcs:// (TLS 1.3, P-256 certificate).
command -v openssl >/dev/null || { echo "tls: no openssl command to make a certificate: skipped"; exit 0; }
(cd "$tmp" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 1 \
    -subj "/CN=bench CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key -out srv.csr -subj "/CN=127.0.0.1" &&
  printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext &&
  openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 1 -extfile srv.ext) \
  >"$tmp/openssl.log" 2>&1 || { cat "$tmp/openssl.log"; exit 1; }
"$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --quiet \
  --tls-cert "$tmp/srv.pem" --tls-key "$tmp/srv.key" >"$tmp/tls.out" &
tpid=$!
for _ in $(seq 1 100); do grep -q '^listening on ' "$tmp/tls.out" && break; sleep 0.1; done
export GRIDRPC_SERVER="gridrpcs://$(sed -n 's/^listening on //p' "$tmp/tls.out")" GRIDRPC_TLS_CA="$tmp/ca.pem"
echo
echo "==== over TLS: gridrpcd --tls-cert at $GRIDRPC_SERVER (rows: grid_call over TLS vs raw TCP)"
"$build/bench/rpc_bench" $quick --csv bench/results/core-tls.csv null bulk
# TLS's cost beside the plain run's figures (when this run measured them too).
python3 - bench/results/core.csv bench/results/core-tls.csv "${plain[*]}" <<'PY'
import sys
def load(path):
    try:
        return {(r[0], r[1]): float(r[2]) for r in (l.strip().split(",") for l in open(path)) if len(r) == 3}
    except (OSError, ValueError):
        return {}
plain, tls, ran = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3].split()
print("\n| TLS cost (loopback)  | plain      | gridrpcs://  | TLS / plain | TLS vs raw TCP |")
print("|----------------------|------------|--------------|-------------|----------------|")
if ("null", "rpc_us") in tls:
    p = plain.get(("null", "rpc_us")) if "null" in ran else None
    print("| null call (us)       | %10s | %12.1f | %11s | %13.2fx |" % (
        "%.1f" % p if p else "-", tls[("null", "rpc_us")], "%.2fx" % (tls[("null", "rpc_us")] / p) if p else "-",
        tls[("null", "ratio")]))
if ("bulk", "rpc_s") in tls:
    p = plain.get(("bulk", "rpc_s")) if "bulk" in ran else None
    print("| 64 MiB each way (s)  | %10s | %12.3f | %11s | %13.2fx |" % (
        "%.3f" % p if p else "-", tls[("bulk", "rpc_s")], "%.2fx" % (tls[("bulk", "rpc_s")] / p) if p else "-",
        tls[("bulk", "ratio")]))
print("(null: time ratio, lower is better; 64 MiB: the TLS vs raw TCP column is throughput, higher is better)")
PY
