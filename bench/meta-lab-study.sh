#!/usr/bin/env bash
# meta-lab-study.sh: the metaserver's two lab studies (issue 9), on emulated links and CPU
# quotas (tests/lab/lab.sh), with real gridmetad and gridrpcd processes:
#   ep   EP spread over 1..S servers: S gridrpcd (one worker, a CPU quota each) under one
#        gridmetad (mct); one client starts N whole EP runs at once (async) and the wall
#        time is measured; speedup against one server; where the calls ran.
#   mix  mct, least-load and round-robin side by side: three servers (s1 fast link but a
#        low CPU quota; s2, s3 full or more CPU behind slow WAN links in the WAN set-up),
#        several client processes each making a mix of dmmul (data-heavy) and EP
#        (compute-heavy) calls; mean and worst completion time per call, and the total,
#        with every link fast ("LAN") and mixed ("WAN").
# Writes bench/results/meta-lab-ep.csv, meta-lab-mix-calls.csv, meta-lab-mix-total.csv,
# meta-lab-decisions-{ep,mix}.txt (every decision with its candidates' estimates) and,
# through bench/plot_meta_lab.py, meta-lab-mix.csv and meta-lab.svg; prints the tables.
# Needs root (skips with exit 77 otherwise) and a build (BUILD_DIR, else top_builddir,
# else build/). Every wait is bounded; the lab is torn down on every exit.
#
#   bench/meta-lab-study.sh [--smoke] [--study ep|mix|all] [--reps R] [--out DIR]
#     --smoke   a short run (about 30 s): both studies cut down, results in a temporary
#               folder (removed after a pass) unless --out is given; fails (exit 1) on
#               any failed or wrong call; no performance claim is checked. For the test
#               suite: a plain test judged by its exit status (77: skipped)
#   GRIDMETAD_ARGS="--max-hold 0" adds options to every gridmetad (words split on spaces)
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@" # the test harness runs scripts with sh
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
smoke=0 study=all reps=3 out=
usage() {
  sed -n '2,/^# *GRIDMETAD_ARGS/p' "$0" | sed 's/^# \{0,1\}//'
}
while [ $# -gt 0 ]; do
  case $1 in
  --smoke) smoke=1 ;;
  --study)
    study=${2:-}
    shift
    ;;
  --reps)
    reps=${2:-}
    shift
    ;;
  --out)
    out=${2:-}
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    echo "meta-lab-study: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
  esac
  shift
done
case $study in ep | mix | all) ;; *)
  echo "meta-lab-study: --study takes ep, mix or all, not '$study'" >&2
  exit 2
  ;;
esac
[[ $reps =~ ^[1-9][0-9]?$ ]] || {
  echo "meta-lab-study: --reps takes 1 to 99, not '$reps'" >&2
  exit 2
}
if [ "$(id -u)" != 0 ]; then
  echo "meta-lab-study: skipped: needs root (network namespaces, tc, cgroups); run as root"
  exit 77
fi
# The build: BUILD_DIR, else make check's top_builddir, else build/.
B=$(cd "${BUILD_DIR:-${top_builddir:-$top/build}}" 2>/dev/null && pwd) || {
  echo "meta-lab-study: no build folder ${BUILD_DIR:-${top_builddir:-$top/build}}: build first (README.md)" >&2
  exit 1
}
for f in gridmetad gridrpcd gridrpc stubs/.libs/nas.so stubs/.libs/linalg.so; do
  [ -e "$B/$f" ] || {
    echo "meta-lab-study: $B/$f is missing: run make in $B" >&2
    exit 1
  }
done
if [ ! -x "$B/bench/meta_lab_client" ]; then
  make -C "$B" -s bench/meta_lab_client >/dev/null || {
    echo "meta-lab-study: could not build bench/meta_lab_client (make -C $B bench/meta_lab_client)" >&2
    exit 1
  }
fi
CLIENT=$B/bench/meta_lab_client
# The smoke run keeps its figures apart, so that it never overwrites a full study's.
out_tmp=0
if [ -z "$out" ]; then
  if [ $smoke = 1 ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/meta-lab-smoke.XXXXXX") || exit 1
    out_tmp=1
  else
    out=$top/bench/results
  fi
fi
mkdir -p "$out" || exit 1

if [ $smoke = 1 ]; then
  reps=1
  ep_servers="1 2" ep_calls=4 ep_m=24
  setups="WAN"
  specs=("dmmul:500,ep:24" "ep:24,dmmul:400")
  warm_spec="dmmul:300,ep:24,dmmul:300,ep:24,dmmul:300,ep:24"
else
  ep_servers="1 2 3 4" ep_calls=8 ep_m=24
  setups="LAN WAN"
  # Each client its own order, so that data-heavy and compute-heavy calls overlap.
  specs=("dmmul:600,ep:25,dmmul:500,ep:24"
    "ep:25,dmmul:700,ep:24,dmmul:400"
    "dmmul:500,ep:24,dmmul:600,ep:25"
    "ep:24,dmmul:600,ep:25,dmmul:500")
  warm_spec="dmmul:500,ep:24,dmmul:500,ep:24,dmmul:500,ep:24"
fi
scheds="mct least-load round-robin"

export LAB_BUILD=$B
. "$top/tests/lab/lab.sh"
lab_init meta-study || exit $?
META_IP=10.77.0.2
lab_host client 10 && lab_host meta 2 || exit 1
for i in 1 2 3 4; do lab_host "s$i" $((10 + i)) || exit 1; done
lab_have_cpu_quota || {
  echo "meta-lab-study: skipped: no cgroup cpu controller for the servers' CPU quotas"
  exit 77
}
delay_ok=1
lab_have_delay || {
  delay_ok=0
  echo "meta-lab-study: warning: link delays unavailable (nfq_delay not built): WAN links get rates only" >&2
}
failed=0
meta_port=7100
META= META_HTTP= meta_pid= srv_pids=()

# in_client CMD...: CMD in the client host, routed by the current metaserver.
in_client() { lab_exec client env GRIDRPC_METASERVER="$META" GRIDRPC_SITE=labclient GRIDRPC_QUIET=1 "$@"; }

# start_grid TAG NSERVERS: a fresh gridmetad (its own registry file) and servers s1..sN,
# each with one worker and one BLAS thread (the quota, not the cores, sets its speed);
# waits (bounded) until all are up.
start_grid() {
  local tag=$1 n=$2 i up
  meta_port=$((meta_port + 1))
  lab_start meta "$B/gridmetad" --host $META_IP --insecure --port $meta_port --db "$LAB_DIR/$tag.db" \
    --heartbeat 250ms --http $((meta_port + 100)) --http-host $META_IP -v ${GRIDMETAD_ARGS:-} || return 1
  meta_pid=$LAB_PID
  META=$META_IP:$meta_port META_HTTP=$META_IP:$((meta_port + 100))
  cp /dev/null "$LAB_DIR/$tag.names"
  srv_pids=()
  for ((i = 1; i <= n; i++)); do
    lab_start "s$i" env OPENBLAS_NUM_THREADS=1 "$B/gridrpcd" --host "$(lab_ip "s$i")" --insecure --port 7000 \
      --module-dir "$B/stubs/.libs" --threads 1 --quiet --metaserver "$META" --name "s$i" || return 1
    srv_pids+=("$LAB_PID")
  done
  for _ in $(seq 1 60); do
    up=$(in_client "$B/gridrpc" --timeout 2 --json status 2>/dev/null |
      python3 -c 'import json,sys; print(sum(s["state"]=="up" for s in json.load(sys.stdin)["servers"]))' 2>/dev/null)
    [ "$up" = "$n" ] && return 0
    sleep 0.25
  done
  echo "meta-lab-study: only ${up:-0} of $n servers came up within 15 s (logs: $LAB_DIR)" >&2
  return 1
}
stop_grid() {
  local p
  for p in "${srv_pids[@]}"; do lab_stop "$p" 5; done
  [ -n "$meta_pid" ] && lab_stop "$meta_pid" 5
  srv_pids=() meta_pid=
}
# calls_by_server: "s1:N s2:N ..." completed calls per server, from `gridrpc --json status`.
calls_by_server() {
  in_client "$B/gridrpc" --timeout 5 --json status 2>/dev/null | python3 -c '
import json, sys
print(" ".join("%s:%d" % (s["name"], s["calls"]) for s in sorted(json.load(sys.stdin)["servers"], key=lambda s: s["name"])))'
}
# delta BEFORE AFTER: the calls each server completed in between ("s1:3 s2:5").
delta() {
  python3 -c '
import sys
b = dict(x.split(":") for x in sys.argv[1].split())
a = dict(x.split(":") for x in sys.argv[2].split())
print(" ".join("%s:%d" % (k, int(a[k]) - int(b.get(k, 0))) for k in sorted(a)))' "$1" "$2"
}
# names: maps "10.77.0.1N:7000" in a CSV stream to "sN" (the server column).
names() { sed -E 's/,10\.77\.0\.1([1-4]):7000,/,s\1,/'; }
# decisions TAG FROM: the metaserver's decisions after id FROM, one line each, with every
# candidate's estimate (from GET /api/status), appended to $DECISIONS; prints
# the newest decision id, how many of the new decisions were held (every server full)
# and their seconds held in all.
decisions() {
  lab_exec client python3 - "$META_HTTP" "$2" "$1" "$DECISIONS" <<'EOF'
import json, sys, urllib.request
url, since, tag, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
st = json.load(urllib.request.urlopen("http://%s/api/status" % url, timeout=5))
name = {s["id"]: s["name"] for s in st["servers"]}
new = [d for d in st["decisions"] if d["id"] > since]
with open(path, "a") as f:
    # What the scheduler believes of each server (cores and workers divide its wait).
    f.write("%s servers: %s\n" % (tag, " ".join("%s(cores=%d,workers=%d,speed=%.3g,calls=%d)" % (
        s["name"], s["cores"], s["workers"], s["speed"], s["calls"]) for s in sorted(st["servers"], key=lambda s: s["name"]))))
    for d in sorted(new, key=lambda d: d["id"]):
        c = " ".join("%s=%.3f(w%.3f+t%.3f+c%.3f%s)" % (name.get(x["server"], x["server"]), x["estimate"], x["wait"],
                                                       x["transfer"], x["compute"], ",assumed" if x["assumed_link"] else "")
                     for x in d["candidates"])
        held = " (held %.2f s, %d full)" % (d["held_s"], d["full"]) if d.get("held_s") or d.get("full") else ""
        f.write("%s #%d %s %s -> %s%s | %s\n" % (tag, d["id"], d["policy"], d["function"], name.get(d["chosen"], d["chosen"]),
                                                held, c))
held = [d.get("held_s", 0) for d in new if d.get("held_s", 0) > 0]
print(max([since] + [d["id"] for d in st["decisions"]]), len(held), "%.2f" % sum(held))
EOF
}

# ---- Study 1: EP spread over 1..S servers
study_ep() {
  local csv=$out/meta-lab-ep.csv S i rep before after lines wall spread last nheld theld
  echo "servers,rep,calls,m,wall_s,spread_client,spread_status,held_calls,held_s" >"$csv"
  DECISIONS=$out/meta-lab-decisions-ep.txt
  : >"$DECISIONS"
  echo "== EP spread: $ep_calls whole EP runs (m = $ep_m) at once, servers at 40% of a CPU, one worker each"
  for i in 1 2 3 4; do lab_link "s$i" 0 0 && lab_cpu_quota "s$i" 40 || return 1; done
  for S in $ep_servers; do
    start_grid "ep$S" "$S" || return 1
    local last=0
    # Warm-up, round-robin: two calls per server, so that every server's EP speed is
    # measured (not guessed, nor one noisy sample) before the measured bursts.
    in_client env GRIDRPC_SCHEDULER=round-robin timeout 60 "$CLIENT" burst "$ep_m" $((2 * S)) >/dev/null ||
      { echo "meta-lab-study: EP warm-up failed" >&2; failed=1; }
    sleep 0.5
    read -r last _ < <(decisions "ep S=$S warm-up" 0) || last=0
    for ((rep = 1; rep <= reps; rep++)); do
      before=$(calls_by_server)
      lines=$(in_client timeout 120 "$CLIENT" burst "$ep_m" "$ep_calls" | names) || {
        echo "meta-lab-study: EP burst on $S servers failed or gave wrong sums" >&2
        failed=1
      }
      sleep 0.5 # the REPORTs of the last calls
      after=$(calls_by_server)
      read -r last nheld theld < <(decisions "ep S=$S rep $rep" "$last") || { last=0 nheld=? theld=?; }
      wall=$(sed -n 's/^wall,//p' <<<"$lines")
      [ -n "$wall" ] || continue
      spread=$(grep '^call,' <<<"$lines" | cut -d, -f6 | sort | uniq -c | awk '{ printf "%s%s:%d", (NR > 1 ? " " : ""), $2, $1 }')
      printf '%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$S" "$rep" "$ep_calls" "$ep_m" "$wall" "$spread" "$(delta "$before" "$after")" \
        "$nheld" "$theld" >>"$csv"
      printf '   S=%d rep %d: wall %.2f s; ran on: %s (status: %s); held by the metaserver: %s calls, %s s\n' "$S" "$rep" \
        "$wall" "$spread" "$(delta "$before" "$after")" "$nheld" "$theld"
    done
    stop_grid
  done
}

# ---- Study 2: the three schedulers on a mixed workload, LAN and WAN
study_mix() {
  local csv=$out/meta-lab-mix-calls.csv setup sched i pids t0 t1 last k nheld
  echo "setup,scheduler,round,client,seq,func,size,server,start_s,seconds,ok" >"$csv"
  echo "setup,scheduler,round,total_s" >"$out/meta-lab-mix-total.csv"
  DECISIONS=$out/meta-lab-decisions-mix.txt
  : >"$DECISIONS"
  echo "== the schedulers: ${#specs[@]} clients, each: ${specs[*]}"
  for setup in $setups; do
    # s1: fast link, a third of a CPU (the busy/slow machine); s2: a whole CPU; s3: 60%.
    lab_cpu_quota s1 30 && lab_cpu_quota s2 100 && lab_cpu_quota s3 60 || return 1
    if [ "$setup" = LAN ]; then
      lab_link s1 1gbit 0 && lab_link s2 1gbit 0 && lab_link s3 1gbit 0 || return 1
    else
      lab_link s1 1gbit 0 && lab_link s2 20mbit $((delay_ok * 15)) && lab_link s3 20mbit $((delay_ok * 25)) || return 1
    fi
    start_grid "mix-$setup" 3 || return 1
    echo "   $setup: s1 $(lab_info | awk '$1 == "s1" { print $4 ", " $5 " ms, " $6 }'); s2 $(lab_info |
      awk '$1 == "s2" { print $4 ", " $5 " ms, " $6 }'); s3 $(lab_info | awk '$1 == "s3" { print $4 ", " $5 " ms, " $6 }')"
    # Warm-up, round-robin: every server runs both functions once (speeds measured), and
    # this first process from the site probes every link (bandwidth, latency).
    in_client env GRIDRPC_SCHEDULER=round-robin timeout 120 "$CLIENT" mix warm "$warm_spec" >/dev/null ||
      { echo "meta-lab-study: the warm-up failed" >&2; failed=1; }
    for _ in $(seq 1 40); do
      k=$(in_client "$B/gridrpc" --timeout 2 --json status 2>/dev/null |
        python3 -c 'import json,sys; print(sum((s["bandwidth"] or 0) > 0 for s in json.load(sys.stdin)["servers"]))' 2>/dev/null)
      [ "$k" = 3 ] && break
      sleep 0.25
    done
    [ "$k" = 3 ] || echo "meta-lab-study: warning: only ${k:-0} of 3 links measured from the client site" >&2
    read -r last _ < <(decisions "$setup warm-up" 0) || last=0
    for ((rep = 1; rep <= reps; rep++)); do
      for sched in $scheds; do
        pids=()
        t0=$(date +%s.%N)
        for i in "${!specs[@]}"; do
          in_client env GRIDRPC_SCHEDULER="$sched" timeout 180 "$CLIENT" mix "c$((i + 1))" "${specs[$i]}" \
            >"$LAB_DIR/mix.$i.out" 2>"$LAB_DIR/mix.$i.err" &
          pids+=($!)
        done
        for i in "${!pids[@]}"; do
          wait "${pids[$i]}" || {
            echo "meta-lab-study: $setup $sched client c$((i + 1)) failed:" >&2
            tail -3 "$LAB_DIR/mix.$i.err" >&2
            failed=1
          }
        done
        t1=$(date +%s.%N)
        cat "$LAB_DIR"/mix.*.out | grep '^call,' | names | sed "s/^call,/$setup,$sched,$rep,/" >>"$csv"
        echo "$setup,$sched,$rep,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >>"$out/meta-lab-mix-total.csv"
        sleep 1 # the last REPORTs, and heartbeats showing idle servers again
        read -r last nheld _ < <(decisions "$setup $sched round $rep" "$last") || last=0
        [ "${nheld:-0}" != 0 ] && echo "   $setup $sched round $rep: $nheld calls held by the metaserver (every server full)"
      done
    done
    stop_grid
  done
}

if [ "$study" != mix ]; then study_ep || failed=1; fi
if [ "$study" != ep ]; then study_mix || failed=1; fi
lab_teardown
python3 "$here/plot_meta_lab.py" --dir "$out" || failed=1
if [ $failed != 0 ]; then
  echo "meta-lab-study: FAILED (a server did not start, or a call failed or gave a wrong result; see above; results in $out)" >&2
  exit 1
fi
if [ $out_tmp = 1 ]; then
  rm -rf "$out"
  echo "meta-lab-study: smoke run passed (its temporary results are removed)"
else
  echo "meta-lab-study: done; CSV, decisions and the plot in $out"
fi
