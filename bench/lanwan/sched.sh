#!/usr/bin/env bash
# sched.sh: the scheduling study of the LAN/WAN study (issue 12, item 3). One mixed
# workload, Linpack, dmmul (communication-heavy: the matrices cross the link) and NAS EP
# (compute-heavy: a few bytes), from client processes at four sites, placed by gridmetad
# under round-robin, least-load and minimum completion time (GRIDRPC_SCHEDULER) on three
# servers of different speeds and links:
#
#   s1  25% of a CPU, WAN: 1 Gbit/s, 0 ms    (near, slow: the well-connected busy machine)
#   s2  80% of a CPU, WAN: 20 Mbit/s, 10 ms  (far, fast)
#   s3  40% of a CPU, WAN: 50 Mbit/s, 5 ms
#
# on two networks: "lan" (every link unshaped: only speed and load differ) and "wan"
# (multi-site WAN, the study's Figure 9: the servers' links above, and client sites
# c1..c4 behind 1 Gbit/s 1 ms, 100 Mbit/s 5 ms, 50 Mbit/s 10 ms and 20 Mbit/s 20 ms each
# way; a path crosses both links: the slower rate, the sum of the delays). Every client makes the same calls in the same order
# under each scheduler (each site its own order, so that the classes overlap). Per
# (network, scheduler, class): mean and worst completion time, and where the calls ran;
# every decision with its candidates' estimates (gridmetad's /api/status).
#
#   bench/lanwan/sched.sh [--out DIR] [--full] [--nets "lan wan"] [--reps R] [--smoke]
#     --out DIR   results (default bench/results/lanwan): sched-calls.csv (one line per
#                 call), sched-total.csv, sched-decisions.csv / .txt, and, through
#                 bench/plot_lanwan_sched.py, sched.csv, sched.md (the table) and
#                 sched.png (bar chart)
#     --full      bigger calls (dmmul 600-800, Linpack 1000-1400, EP 2^24-2^25), twice as
#                 many per client, 3 repeats; default: small, 2 repeats (about 2 minutes)
#     --smoke     wan only, two calls per client (the test suite's run, under a minute)
# Needs root (exit 77 otherwise) and a build (BUILD_DIR, else top_builddir, else build/).
# The lab (namespaces, links, cgroups, processes) is torn down on every exit, Ctrl-C too.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=sched
out= full=0 smoke=0 nets= reps=
while [ $# -gt 0 ]; do
  case $1 in
  --out) out=${2:-} && shift ;;
  --full) full=1 ;;
  --smoke) smoke=1 ;;
  --nets) nets=${2:-} && shift ;;
  --reps) reps=${2:-} && shift ;;
  -h | --help)
    sed -n '2,/^# The lab/p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "$prog: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
  esac
  shift
done
if [ $smoke = 1 ]; then
  : "${nets:=wan}" "${reps:=1}"
  specs=("dmmul:300,ep:22" "ep:22,linpack:400" "linpack:300,dmmul:200" "ep:22,dmmul:200")
elif [ $full = 1 ]; then
  : "${nets:=lan wan}" "${reps:=3}"
  specs=("dmmul:700,ep:24,linpack:1000,ep:25,dmmul:600,linpack:1400,ep:24,dmmul:800"
    "ep:25,linpack:1400,dmmul:600,ep:24,linpack:1000,dmmul:800,ep:24,linpack:1000"
    "linpack:1000,dmmul:800,ep:24,linpack:1400,ep:25,dmmul:600,linpack:1000,ep:24"
    "ep:24,dmmul:600,ep:25,linpack:1000,dmmul:700,ep:24,linpack:1400,dmmul:600")
else
  : "${nets:=lan wan}" "${reps:=2}"
  specs=("dmmul:500,ep:24,linpack:700,ep:24"
    "ep:24,linpack:800,dmmul:400,ep:24"
    "linpack:600,dmmul:500,ep:24,linpack:700"
    "ep:24,dmmul:400,linpack:600,dmmul:500")
fi
for n in $nets; do
  case $n in lan | wan) ;; *)
    echo "$prog: --nets takes lan and/or wan, not '$n'" >&2
    exit 2
    ;;
  esac
done
[[ $reps =~ ^[1-9][0-9]?$ ]] || {
  echo "$prog: --reps takes 1 to 99, not '$reps'" >&2
  exit 2
}
. "$here/grid_lab.sh"
gl_need_root $prog
gl_build $prog "$top"
: "${out:=$top/bench/results/lanwan}"
mkdir -p "$out" || exit 1
scheds="round-robin least-load mct"
sites="c1 c2 c3 c4"

export LAB_BUILD=$B
# A 10 ms quota period: with the default 100 ms, a call of a few tens of milliseconds runs
# at full speed or waits most of a period depending on when it starts, and the measured
# speeds the metaserver schedules by scatter by 5x between identical servers.
export LAB_CPU_PERIOD_US=${LAB_CPU_PERIOD_US:-10000}
. "$top/tests/lab/lab.sh"
lab_init sched || exit $?
lab_host meta 2 || exit 1
for i in 1 2 3; do lab_host "s$i" $((10 + i)) || exit 1; done
for i in 1 2 3 4; do lab_host "c$i" $((20 + i)) || exit 1; done
lab_have_cpu_quota || {
  echo "$prog: skipped: no cgroup cpu controller for the servers' CPU quotas"
  exit 77
}
d=1
lab_have_delay || {
  d=0
  echo "$prog: warning: link delays unavailable (nfq_delay not built): links get rates only" >&2
}
lab_cpu_quota s1 25 && lab_cpu_quota s2 80 && lab_cpu_quota s3 40 || exit 1
for s in s1 s2 s3; do gl_weight $s; done
gl_weight_unlimited meta $sites || exit 1

calls=$out/sched-calls.csv total=$out/sched-total.csv dec=$out/sched-decisions.txt deccsv=$out/sched-decisions.csv
echo "net,scheduler,rep,site,seq,func,size,server,start_s,seconds,ok" >"$calls"
echo "net,scheduler,rep,total_s,held_calls,load1" >"$total"
echo "tag,id,policy,site,function,chosen,held_s,candidates" >"$deccsv"
: >"$dec"
failed=0
echo "== the schedulers on a mix from 4 sites: $scheds; networks: $nets; $reps repeat(s)"
for i in "${!specs[@]}"; do echo "   c$((i + 1)): ${specs[$i]}"; done
echo "   load before: $(gl_load)"
for net in $nets; do
  if [ "$net" = lan ]; then
    for h in $sites s1 s2 s3; do lab_link "$h" 0 0 || exit 1; done
  else
    lab_link s1 1gbit 0 && lab_link s2 20mbit $((d * 10)) && lab_link s3 50mbit $((d * 5)) || exit 1
    lab_link c1 1gbit $d && lab_link c2 100mbit $((d * 5)) && lab_link c3 50mbit $((d * 10)) &&
      lab_link c4 20mbit $((d * 20)) || exit 1
  fi
  lab_info | sed 's/^/   /'
  gl_start "sched-$net" 3 c1 || {
    failed=1
    break
  }
  # Warm-up, round-robin: from c1, every server runs every function twice (speeds
  # measured); every site's first process probes its links; then wait until the
  # metaserver knows every site's bandwidth to every server.
  warm="dmmul:300,ep:22,linpack:300,dmmul:300,ep:22,linpack:300,dmmul:300,ep:22,linpack:300"
  # One site at a time (round-robin turns are per function: a site's calls then reach
  # every server): c2..c4 send each server a dmmul and a Linpack (their links measured
  # by the calls and by the probe at first contact); c1 makes every server run every
  # function (speeds measured).
  for c in c2 c3 c4 c1; do
    spec=$warm
    [ $c = c1 ] || spec="dmmul:300,dmmul:300,dmmul:300,linpack:300,linpack:300,linpack:300"
    gl_in $c $c env GRIDRPC_SCHEDULER=round-robin timeout 300 "$CLIENT" mix warm "$spec" >/dev/null || {
      echo "$prog: the warm-up from $c failed" >&2
      failed=1
    }
  done
  for c in $sites; do
    k=$(gl_links_known $c $c 3)
    [ "$k" = 3 ] || echo "$prog: warning: the metaserver knows only $k of 3 links from site $c" >&2
  done
  read -r last _ < <(gl_decisions c1 "$net warm-up" 0 "$dec" "$deccsv") || last=0
  for ((rep = 1; rep <= reps; rep++)); do
    # Each repeat starts with another scheduler: no scheduler always runs first.
    order=$(echo $scheds $scheds | cut -d' ' -f$(((rep - 1) % 3 + 1))-$(((rep - 1) % 3 + 3)))
    for sched in $order; do
      pids=()
      t0=$(date +%s.%N)
      for i in "${!specs[@]}"; do
        c=c$((i + 1))
        gl_in $c $c env GRIDRPC_SCHEDULER="$sched" timeout 600 "$CLIENT" mix "$c" "${specs[$i]}" \
          >"$LAB_DIR/mix.$c.out" 2>"$LAB_DIR/mix.$c.err" &
        pids+=($!)
      done
      for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || {
          echo "$prog: $net $sched: client c$((i + 1)) failed:" >&2
          tail -3 "$LAB_DIR/mix.c$((i + 1)).err" >&2
          failed=1
        }
      done
      t1=$(date +%s.%N)
      # Server sN is 10.77.0.(10 + N).
      cat "$LAB_DIR"/mix.c?.out | grep '^call,' | awk -F, -v n="$net" -v s="$sched" -v r="$rep" '{
        split($6, a, /[.:]/); printf "%s,%s,%s,%s,%s,%s,%s,s%d,%s,%s,%s\n", n, s, r, $2, $3, $4, $5, a[4] - 10, $7, $8, $9 }' >>"$calls"
      sleep 1 # the last REPORTs, and heartbeats showing idle servers again
      read -r last nheld _ < <(gl_decisions c1 "$net $sched $rep" "$last" "$dec" "$deccsv") || nheld=0
      tt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
      echo "$net,$sched,$rep,$tt,${nheld:-0},$(cut -d' ' -f1 /proc/loadavg)" >>"$total"
      printf '   %s %-11s rep %d: %7.2f s for all clients; held %s\n' "$net" "$sched" "$rep" "$tt" "${nheld:-0}"
    done
  done
  gl_stop
done
echo "   load after: $(gl_load)"
lab_teardown
python3 "$top/bench/plot_lanwan_sched.py" sched --dir "$out" || failed=1
if [ $failed != 0 ]; then
  echo "$prog: FAILED (a server did not start, or a call failed or gave a wrong result; see above; results in $out)" >&2
  exit 1
fi
echo "$prog: done; tables and plot in $out (sched.md, sched.png)"
