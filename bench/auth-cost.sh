#!/usr/bin/env bash
# auth-cost.sh: what a change costs authenticated clients, against the build before it,
# in one run: connection set-up (connect, HELLO, key handshake, descriptor, one null call)
# and a null call on an open connection, with and without --key-file, each build's own
# gridrpcd and libgridrpc, in alternating rounds (bench/auth_cost.c). Prints medians and
# the ratio this tree / BASE (issue 25's target: within 5%).
# Usage: bench/auth-cost.sh BASE_TREE [ROUNDS]   (after scripts/setup.sh in both)
#   BASE_TREE  a checkout of the commit to compare with, built in BASE_TREE/build
#              (git worktree add ../base COMMIT && (cd ../base && scripts/setup.sh))
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  -h | --help | '') sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;;
esac
base=$(cd "$1" && pwd)
rounds=${2:-5}
new=$PWD
for t in "$base" "$new"; do
  [ -x "$t/build/gridrpcd" ] || { echo "auth-cost.sh: no $t/build/gridrpcd: run scripts/setup.sh there" >&2; exit 2; }
done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
"$new/build/gridrpc" keygen "$tmp/k" >/dev/null # untagged: both builds read it
declare -A addr
for which in base new; do
  t=$base; [ $which = new ] && t=$new
  cc -O2 -I "$t/include" "$new/bench/auth_cost.c" -L "$t/build/.libs" -Wl,-rpath,"$t/build/.libs" -lgridrpc \
    -o "$tmp/client-$which"
  for keyed in plain key; do
    extra=; [ $keyed = key ] && extra="--key-file $tmp/k"
    # shellcheck disable=SC2086
    "$t/build/gridrpcd" --host 127.0.0.1 --port 0 --module "$t/build/stubs/.libs/test.so" --quiet $extra \
      >"$tmp/$which-$keyed.out" 2>"$tmp/$which-$keyed.log" &
    pids+=($!)
    for _ in $(seq 1 100); do grep -q '^listening on ' "$tmp/$which-$keyed.out" && break; sleep 0.1; done
    addr[$which-$keyed]=$(sed -n 's/^listening on //p' "$tmp/$which-$keyed.out" | head -1)
    [ -n "${addr[$which-$keyed]}" ] || { echo "auth-cost.sh: $which gridrpcd ($keyed) did not start" >&2; cat "$tmp/$which-$keyed.log" >&2; exit 1; }
  done
done
echo "auth-cost: base $(git -C "$base" rev-parse --short HEAD), this tree $(git rev-parse --short HEAD); $(nproc) cores; $rounds rounds"
for r in $(seq 1 "$rounds"); do
  for keyed in plain key; do
    for which in base new; do
      kf=; [ $keyed = key ] && kf=$tmp/k
      line=$(GRIDRPC_SERVER=${addr[$which-$keyed]} GRIDRPC_KEY_FILE=$kf GRIDRPC_SESSION_FILE=$tmp/session \
        HOME=$tmp "$tmp/client-$which" 400 20000)
      echo "$which $keyed $line" >>"$tmp/results"
    done
  done
  echo "  ... round $r"
done
python3 - "$tmp/results" <<'EOF'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    which, keyed, _, setup, _, null = line.split()
    rows.setdefault((which, keyed), []).append((float(setup), float(null)))
print()
print("| figure | keys | base median | this tree median | this / base |")
print("|---|---|---:|---:|---:|")
for keyed in ("plain", "key"):
    for i, name in ((0, "connection set-up, us"), (1, "null call, us")):
        b = statistics.median(v[i] for v in rows[("base", keyed)])
        n = statistics.median(v[i] for v in rows[("new", keyed)])
        print("| %s | %s | %.2f | %.2f | %.3fx |" % (name, "yes" if keyed == "key" else "no", b, n, n / b))
EOF
