#!/usr/bin/env bash
# multiclient_bench.sh: the multi-client server experiment of the seeds (thread-per-
# request vs worker pool). For each server configuration (gridrpcd --mode pool with
# --threads 5, 20, 50, 100, and --mode thread) it starts a server on loopback and races
# Q = 5 .. 1000 simultaneous clients at it (examples/multiclient: one process per
# client, each a fresh connection, all released at once), each solving a small
# least-squares problem three ways on the server (lsq/lsq_experiment). Reported per
# configuration and Q: mean, standard deviation and p99 of two connection times (tcp:
# a plain TCP connect, the seeds' measure; connect: the client library's connection
# ready to call, with HELLO and the descriptor fetch; see examples/multiclient.c), mean
# and standard deviation of the response time, failed calls (targets in shared/BENCH.md:
# 0 failed calls and p99 connect < 5 ms at 1000 clients). Each point is run REPS times,
# the configurations alternating, and the table gives medians with min and max.
# There is no baseline to divide by here: the target is absolute.
#
# Usage: bench/multiclient_bench.sh [--quick] [--reps R] [--size M N]   (after scripts/setup.sh)
#   --quick   Q = 5, 50, 200; pools of 5 and 50 workers and thread-per-request; 1 rep
# Output: a markdown table on stdout, progress on stderr, bench/results/multiclient.csv
# (one row per configuration and Q), bench/results/multiclient-clients.csv (one row per
# client) and bench/results/multiclient.png.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}

quick=0 reps= m=40 n=20
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --reps) reps=$2; shift ;;
    --size) m=$2; n=$3; shift 2 ;;
    *) echo "usage: $0 [--quick] [--reps R] [--size M N]" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then
  configs=("pool 5" "pool 50" "thread")
  clients=(5 50 200)
  reps=${reps:-1}
else
  configs=("pool 5" "pool 20" "pool 50" "pool 100" "thread")
  clients=(5 10 50 100 500 1000)
  reps=${reps:-3}
fi

make -C "$build" -s examples/multiclient >/dev/null
mkdir -p bench/results
tmp=$(mktemp -d)
spid=
stop_server() {
  [ -n "$spid" ] || return 0
  kill -TERM "$spid" 2>/dev/null || true
  # Bounded: a server that does not stop within 10 s is killed.
  for _ in $(seq 1 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  spid=
}
trap 'stop_server; rm -rf "$tmp"' EXIT

# 1000 clients are 1000 sockets in the server (and as many reader threads): make sure
# the server, a child of this script, may open them.
want_fd=4096
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $want_fd ]; then
  ulimit -n "$want_fd" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
fi

# start_server MODE [THREADS]: gridrpcd on 127.0.0.1, an ephemeral port; sets $spid and
# exports GRIDRPC_SERVER. The log (warnings and errors only: one line per call at info
# would be 1000 lines per point) goes to $tmp/server-*.log.
start_server() {
  # Every client is on 127.0.0.1: allow them all from the one address (the default of
  # --max-connections-per-address is for servers shared by many hosts).
  local args=(--host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --log-level warn --mode "$1"
    --max-connections-per-address $((clients[-1] + 64)))
  [ -n "${2:-}" ] && args+=(--threads "$2")
  slog=$tmp/server-$1${2:+-$2}.log
  "$build/gridrpcd" "${args[@]}" >"$tmp/listen" 2>>"$slog" &
  spid=$!
  # Bounded: 30 s, for a machine under load.
  for _ in $(seq 1 300); do grep -q "^listening on " "$tmp/listen" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  grep -q "^listening on " "$tmp/listen" || { echo "gridrpcd did not start ($*):" >&2; tail -5 "$slog" >&2; exit 1; }
  export GRIDRPC_SERVER=$(sed -n 's/^listening on //p' "$tmp/listen")
  local lim
  lim=$(awk '/^Max open files/ {print $4}' "/proc/$spid/limits")
  if [ "$lim" != unlimited ] && [ "$lim" -lt $((clients[-1] + 64)) ]; then
    echo "gridrpcd may open only $lim files: too few for ${clients[-1]} clients" >&2
    exit 1
  fi
}

npoints=$((reps * ${#configs[@]} * ${#clients[@]}))
raw=bench/results/multiclient-clients.csv
echo "config,clients,rep,client,start_ms,tcp_ms,connect_ms,response_ms,ok" >"$raw"
echo "gridrpcd on loopback; $(nproc) cores; m=$m n=$n (lsq/lsq_experiment); server open files $(ulimit -n);" \
  "$reps rep(s); $(date -u +%Y-%m-%dT%H:%MZ)" >&2
point=0 t_start=$SECONDS
for rep in $(seq 1 "$reps"); do
  for cfg in "${configs[@]}"; do
    set -- $cfg
    name=$1${2:+-$2}
    start_server "$@"
    for q in "${clients[@]}"; do
      point=$((point + 1))
      t0=$SECONDS
      # Bounded: every client has a 10 s connect and a 120 s call timeout; this is
      # the backstop.
      rc=0
      timeout 300 "$build/examples/multiclient" "$q" "$m" "$n" >"$tmp/run.out" 2>&1 || rc=$?
      # client I: start +S ms, tcp T ms, connect C ms, response R ms, residual ...: ok
      # client I: start +S ms, tcp T ms, connect C ms: FAILED: why
      awk -v cfg="$name" -v q="$q" -v rep="$rep" '
        /^client [0-9]+: start .*: FAILED: / {
          gsub(/[:,+]/, " "); print cfg "," q "," rep "," $2 "," $4 "," $7 "," $10 ",,0"; next }
        /^client [0-9]+: start / {
          gsub(/[:,+]/, " "); ok = ($NF == "ok") ? 1 : 0
          print cfg "," q "," rep "," $2 "," $4 "," $7 "," $10 "," $13 "," ok }' "$tmp/run.out" >"$tmp/rows"
      got=$(wc -l <"$tmp/rows")
      # A client that left no line at all (the run was killed) counts as failed.
      for i in $(seq "$got" $((q - 1))); do echo "$name,$q,$rep,missing-$i,,,,,0"; done >>"$tmp/rows"
      cat "$tmp/rows" >>"$raw"
      [ $rc = 0 ] || { echo "  multiclient exited $rc:" >&2; grep -v '^client .*: ok$' "$tmp/run.out" | head -5 >&2; }
      summary() { grep "^$1 " "$tmp/run.out" | sed 's/ *(ms[^)]*)://' | tr -s ' ' | cut -d' ' -f1-5,8,9; }
      echo "[$point/$npoints] $name q=$q rep $rep: $(summary tcp) | $(summary connect) | $(summary response)" \
        "| failed $(awk -F, '$9 == 0' "$tmp/rows" | wc -l) ($((SECONDS - t0)) s, $((SECONDS - t_start)) s in all)" >&2
      # Let the server reap the last run's connections before the next race.
      sleep 0.5
    done
    stop_server
  done
done
for f in "$tmp"/server-*.log; do
  w=$(grep -c -e ' warn: ' -e ' error: ' "$f" || true)
  [ "$w" = 0 ] || { echo "$(basename "$f" .log): $w warnings or errors, first:" >&2; grep -m3 -e ' warn: ' -e ' error: ' "$f" >&2; }
done
python3 bench/plot_multiclient.py "$raw" bench/results/multiclient.csv bench/results/multiclient.png "$m" "$n"
echo "plot: bench/results/multiclient.png; per client: $raw" >&2
