#!/usr/bin/env bash
# example-three-servers.sh: the lab (tests/lab/lab.sh) at work, and the LAN/WAN study's point
# in one screen. Three real gridrpcd servers in three namespaces behind different links and
# with different CPU quotas, and a client host that calls each one directly:
#   lan  1 Gbit/s, 0 ms,    25% of a CPU   (fast link, slow/busy machine)
#   mid  100 Mbit/s, 5 ms,  40% of a CPU
#   wan  20 Mbit/s, 20 ms,  100% of a CPU  (slow link, fast idle machine)
# A communication-heavy call (dmmul, n = 400: 3.8 MB moved) is fastest on lan; a
# compute-heavy one with little data (EP, m = 25) is fastest on wan. Needs root and a build
# (BUILD_DIR, default build/). Usage: tests/lab/example-three-servers.sh [DMMUL_N [EP_M]]
set -u
cd "$(dirname "$0")/../.." || exit 1
build=$(cd "${BUILD_DIR:-build}" 2>/dev/null && pwd) || {
  echo "example: no build folder ${BUILD_DIR:-build}: build first (README.md)" >&2
  exit 1
}
n=${1:-400}
m=${2:-25}
for f in gridrpcd examples/dmmul examples/ep; do
  [ -x "$build/$f" ] || {
    echo "example: $build/$f is missing: run make in $build" >&2
    exit 1
  }
done
export LAB_BUILD=$build
. tests/lab/lab.sh
lab_init three-servers || exit $?

lab_host client 10
# name, address, rate, one-way delay of its link (ms), CPU quota (% of one CPU)
servers=("lan 11 1gbit 0 25" "mid 12 100mbit 5 40" "wan 13 20mbit 20 100")
for s in "${servers[@]}"; do
  read -r name x rate delay cpu <<<"$s"
  lab_host "$name" "$x" && lab_link "$name" "$rate" "$delay" && lab_cpu_quota "$name" "$cpu" || exit 1
  # One worker and one BLAS thread: the quota, not the core count, sets the speed.
  lab_start "$name" env OPENBLAS_NUM_THREADS=1 "$build/gridrpcd" --host "$(lab_ip "$name")" --insecure --port 7000 \
    --module-dir "$build/stubs/.libs" --threads 1 || exit 1
done
echo "== the lab (logs in $LAB_DIR):"
lab_info | sed 's/^/   /'

# best_of CMD...: runs CMD twice in the client host; prints the smaller time of the
# "remote X s" (dmmul) or "in N call(s): X s" (ep) it reports; fails on a wrong result.
best_of() {
  local best= t out i
  for i in 1 2; do
    out=$(lab_exec client env OPENBLAS_NUM_THREADS=1 "$@" 2>&1) || {
      echo "example: $* failed: $out" >&2
      return 1
    }
    t=$(sed -nE 's/.*remote ([0-9.]+) s.*/\1/p; s/.* call[s]?: ([0-9.]+) s.*/\1/p' <<<"$out" | head -1)
    case "$out" in *MISMATCH* | *FAILED*)
      echo "example: wrong result: $out" >&2
      return 1
      ;;
    esac
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  echo "$best"
}

echo
echo "== calls from the client host (10.77.0.10) to each server directly (best of 2):"
printf '   %-6s %-22s %-6s %16s %14s\n' server link cpu "dmmul n=$n (s)" "ep m=$m (s)"
best_d=
best_e=
for s in "${servers[@]}"; do
  read -r name x rate delay cpu <<<"$s"
  export GRIDRPC_SERVER=$(lab_ip "$name"):7000
  td=$(best_of "$build/examples/dmmul" "$n") || exit 1
  te=$(best_of "$build/examples/ep" "$m" 1) || exit 1
  printf '   %-6s %-22s %-6s %16s %14s\n' "$name" "$rate, ${delay} ms each way" "$cpu%" "$td" "$te"
  if [ -z "$best_d" ] || awk -v a="$td" -v b="${best_d#* }" 'BEGIN { exit !(a < b) }'; then best_d="$name $td"; fi
  if [ -z "$best_e" ] || awk -v a="$te" -v b="${best_e#* }" 'BEGIN { exit !(a < b) }'; then best_e="$name $te"; fi
done
echo
echo "   dmmul (data-heavy) is fastest on: ${best_d% *}; ep (compute-heavy) is fastest on: ${best_e% *}"
echo "   (a scheduler must weigh the link for the first and the server's speed for the second)"
