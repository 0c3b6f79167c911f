#!/usr/bin/env bash
# lanwan.sh: the LAN/WAN multi-client study (issue 12), the Ninf 1998 study ("Multi-client
# LAN/WAN Performance Analysis of Ninf") reproduced on emulated networks, in one command.
#
# Usage: bench/lanwan.sh [--full | --smoke] [--out DIR] [--part lanwan|sched|ep-meta|all]
#                        [--seconds T] [--clients "1 4 16"] [--linpack "600"] [--ep "24"]
#                        [--wan-linpack "600"]
#                        [--networks "lan wan wan4 wan1998"] [--configs "task data"]
#                        [--ratio BYTES_PER_FLOP]
#
# Needs root (network namespaces, tc, cgroups: tests/lab); without it, it says so and
# exits 77. Builds nothing: make first (gridrpcd, bench/lanwan_client, the stub modules).
#
# Part lanwan (this script): c client processes (bench/lanwan_client) call Linpack
# (linalg/linpack, order n) or NAS EP (nas/ep, 2^m pairs) in a loop for T seconds against
# one gridrpcd that has the machine's cores, for every c, n (m), network and server
# configuration:
#   task  gridrpcd --threads CORES --blas-threads 1  (the study's 1-PE version: calls
#         side by side, one core each)
#   data  gridrpcd --threads 1 --blas-threads CORES  (the study's 4-PE version: every
#         core for one call, calls in sequence)
# Networks (the client hosts' links; the server's is unshaped):
#   lan      unshaped veth
#   wan      single-site WAN: every client behind one link of 100 Mbit/s, 10 ms each way
#   wan4     multi-site WAN (the study's Figure 9): clients dealt round-robin to 4 sites,
#            200mbit/2 ms, 100mbit/5 ms, 50mbit/10 ms and 10mbit/15 ms (each way)
#   wan1998  one site at the study's ratio of link speed to server speed: the study's WAN
#            moved on the order of 0.1-0.2 MB/s against servers of a few hundred Mflops,
#            about 0.15 MB/s per 300 Mflops = 5e-4 bytes per flop (--ratio changes it). The
#            script measures our server's Linpack speed first (n = 1000, one client, LAN,
#            the first of --configs: task = one core per call) and shapes the link to that speed times the ratio, 10 ms each
#            way. E.g. 10 Gflops -> 5 MB/s = 40 Mbit/s.
# Defaults (small, a few minutes): c = 1 4 16, Linpack n = 600, EP m = 24 (class S),
# 3 s per run, every network, both configurations. --full: c = 1 2 4 8 16, n = 600 1000
# 1400 2000 4000 (on the shaped networks 600 1000 1400, the study's own: --wan-linpack),
# m = 24 25 28 (S, W, A), 30 s per run (hours; --seconds 10: about an hour). --smoke (the test):
# tiny and quick, LAN and multi-site WAN only, results in a temporary folder.
#
# Parts sched and ep-meta are bench/lanwan/sched.sh (the scheduling study) and
# bench/lanwan/ep_meta.sh (EP through the metaserver, the study's Figure 11), run with
# --out DIR/sched, DIR/ep-meta (and --full); skipped with a note when not there.
#
# Writes into DIR (default bench/results/lanwan-DATE): runs.csv, calls/ (one CSV per run
# and site, bench/lanwan_client's lines), logs/ (gridrpcd's logs), and from them
# (bench/lanwan_report.py) calls.csv, summary.csv, tables.md (the study's Tables 3-8
# layout), and (bench/plot_lanwan.py, matplotlib) fig7-perf.png, fig8-time.png,
# fig10-sites.png, ep.png. Everything the lab made is torn down at the end, after a
# failure and after Ctrl-C. Exit: 0 all right, 1 a run failed or a check did not hold,
# 2 usage, 77 not root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@" # the test harness runs scripts with sh
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
mode=small out= part=all seconds= clients= linpack=- wan_linpack=- ep=- networks= configs= ratio=5e-4
usage() { sed -n '2,/^# 2 usage/p' "$0" | sed 's/^# \{0,1\}//'; }
die() {
  echo "lanwan: $*" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
  --full) mode=full ;;
  --smoke) mode=smoke ;;
  --out | --part | --seconds | --clients | --linpack | --wan-linpack | --ep | --networks | --configs | --ratio)
    [ $# -ge 2 ] || die "$1 needs a value (see --help)"
    case $1 in
    --out) out=$2 ;; --part) part=$2 ;; --seconds) seconds=$2 ;; --clients) clients=$2 ;;
    --linpack) linpack=$2 ;; --wan-linpack) wan_linpack=$2 ;; --ep) ep=$2 ;; --networks) networks=$2 ;; --configs) configs=$2 ;;
    --ratio) ratio=$2 ;;
    esac
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
case $mode in
small) d_c="1 4 16" d_n="600" d_wn="600" d_m="24" d_s=3 d_net="lan wan wan4 wan1998" d_cfg="task data" ;;
full) d_c="1 2 4 8 16" d_n="600 1000 1400 2000 4000" d_wn="600 1000 1400" d_m="24 25 28" d_s=30 d_net="lan wan wan4 wan1998" d_cfg="task data" ;;
smoke) d_c="1 2" d_n="200" d_wn="200" d_m="22" d_s=1 d_net="lan wan4" d_cfg="task" ;;
esac
clients=${clients:-$d_c} seconds=${seconds:-$d_s}
# The shaped networks' Linpack sizes: --wan-linpack, else --linpack when given, else the
# mode's (full: the study's own 600-1400; n = 4000 moves 128 MB a call, minutes a call on a
# 10 Mbit/s site).
if [ "$wan_linpack" = - ]; then
  wan_linpack=$d_wn
  [ "$linpack" = - ] || wan_linpack=$linpack
fi
[ "$linpack" = - ] && linpack=$d_n # "": no Linpack runs
[ "$ep" = - ] && ep=$d_m
networks=${networks:-$d_net} configs=${configs:-$d_cfg}
case $part in lanwan | sched | ep-meta | all) ;; *) die "--part takes lanwan, sched, ep-meta or all, not '$part'" ;; esac
for c in $clients; do [[ $c =~ ^[1-9][0-9]?$ ]] || die "--clients takes counts from 1 to 99, not '$c'"; done
for n in $linpack $wan_linpack; do [[ $n =~ ^[1-9][0-9]{1,4}$ ]] || die "--linpack takes orders from 10 to 99999, not '$n'"; done
for m in $ep; do [[ $m =~ ^[1-9][0-9]?$ ]] && [ "$m" -ge 10 ] && [ "$m" -le 30 ] || die "--ep takes m from 10 to 30, not '$m'"; done
for x in $networks; do case $x in lan | wan | wan4 | wan1998) ;; *) die "--networks takes lan, wan, wan4, wan1998, not '$x'" ;; esac; done
for x in $configs; do case $x in task | data) ;; *) die "--configs takes task and data, not '$x'" ;; esac; done
[[ $seconds =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--seconds takes a number of seconds, not '$seconds'"
[[ $ratio =~ ^[0-9.]+(e-?[0-9]+)?$ ]] || die "--ratio takes bytes per flop (e.g. 5e-4), not '$ratio'"
[ -n "$linpack$ep" ] || die "nothing to run: --linpack and --ep are both empty"

if [ "$(id -u)" != 0 ]; then
  echo "lanwan: skipped: the study needs root for the network lab (namespaces, tc, cgroups: tests/lab);" \
    "run it as root, e.g. sudo bench/lanwan.sh"
  exit 77
fi
B=$(cd "${BUILD_DIR:-${top_builddir:-$top/build}}" 2>/dev/null && pwd) || {
  echo "lanwan: no build folder ${BUILD_DIR:-${top_builddir:-$top/build}}: build first (README.md)" >&2
  exit 1
}
for f in gridrpcd bench/lanwan_client stubs/.libs/linalg.so stubs/.libs/nas.so; do
  [ -e "$B/$f" ] || {
    echo "lanwan: $B/$f is missing: run make in $B" >&2
    exit 1
  }
done
out_tmp=0
if [ -z "$out" ]; then
  if [ $mode = smoke ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/lanwan-smoke.XXXXXX") || exit 1
    out_tmp=1
  else
    out=$top/bench/results/lanwan-$(date +%Y%m%d-%H%M)
  fi
fi
mkdir -p "$out/calls" "$out/logs" || exit 1
out=$(cd "$out" && pwd)
cores=$(nproc)
failed=0
t_start=$SECONDS

# ---------------------------------------------------------------- part lanwan
run_lanwan() {
  . "$top/tests/lab/lab.sh"
  lab_init lanwan || return $?
  # Ctrl-C or SIGTERM: the lab's teardown (it stops every process it started), then out.
  trap 'echo "lanwan: interrupted: tearing the lab down" >&2; lab_teardown; exit 130' INT TERM
  lab_host srv 2
  lab_host c1 11
  local i
  for i in 1 2 3 4; do lab_host "s$i" $((20 + i)); done
  local delay=1
  lab_have_delay || {
    delay=0
    echo "lanwan: no link delay here (tests/lab/nfq_delay not built: libnetfilter-queue-dev):" \
      "WAN links get their rate but no delay" >&2
  }
  local -A site_rate=([s1]=200mbit [s2]=100mbit [s3]=50mbit [s4]=10mbit) site_ms=([s1]=2 [s2]=5 [s3]=10 [s4]=15)
  local rate1998=
  # What the tables say the server ran on (no commas: a CSV field).
  local server_desc
  server_desc="gridrpcd on $cores cores of $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | tr -d ,)"
  local runs=$out/runs.csv
  echo "run,network,config,workload,size,clients,sites,links,seconds,server_log,t0_ns,t1_ns,server_cpu_s,server_cores,loadavg_start,loadavg_end,rc,server_desc" >"$runs"
  local x nw nwl nwl_wan
  nwl=$(echo $linpack $ep | wc -w)
  nwl_wan=$(echo $wan_linpack $ep | wc -w)
  local total=0 k=0
  for x in $configs; do for nw in $networks; do for _ in $clients; do
    [ "$nw" = lan ] && total=$((total + nwl)) || total=$((total + nwl_wan))
  done; done; done
  echo "lanwan: $total runs of ${seconds}s (c = $clients; Linpack n = ${linpack:-none}, on shaped links ${wan_linpack:-none}; EP m = ${ep:-none};" \
    "networks $networks; configs $configs); $cores cores; load $(cut -d' ' -f1-3 /proc/loadavg); out $out" >&2

  # link NETWORK: shapes the client hosts' links for NETWORK; prints the sites to use.
  link() {
    local s
    case $1 in
    lan) lab_link c1 0 0 ;;
    wan) lab_link c1 100mbit $((10 * delay)) ;;
    wan1998) lab_link c1 "$rate1998" $((10 * delay)) ;;
    wan4) for s in s1 s2 s3 s4; do lab_link "$s" "${site_rate[$s]}" $((site_ms[$s] * delay)); done ;;
    esac
  }
  # link_desc NETWORK HOST: "RATE/DELAYms" as link set it (rate 0: unshaped).
  link_desc() {
    case $1 in
    lan) echo "0/0ms" ;;
    wan) echo "100mbit/$((10 * delay))ms" ;;
    wan1998) echo "$rate1998/$((10 * delay))ms" ;;
    wan4) echo "${site_rate[$2]}/$((site_ms[$2] * delay))ms" ;;
    esac
  }
  # cpu_s PID: the server's CPU time (user + system) in seconds, with its executor
  # processes' (its children: the live ones' own, the reaped ones' in its cutime/cstime),
  # where the functions run.
  local tck
  tck=$(getconf CLK_TCK)
  # (cat, one file at a time: a process that ends meanwhile makes awk stop at its file.)
  cpu_s() {
    local f
    for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null; done |
      awk -v t="$tck" -v p="$1" '{ pid = $1; sub(/^.*\) /, "") }
        pid == p { s += $12 + $13 + $14 + $15 } $2 == p { s += $12 + $13 }
        END { print s / t + 0 }'
  }

  # one_run NAME NETWORK CONFIG WORKLOAD SIZE C SERVER_PID SERVER_ADDR LOG: c clients over
  # the network's sites; a row of runs.csv; prints a progress line.
  one_run() {
    local name=$1 net=$2 cfg=$3 wl=$4 size=$5 c=$6 spid=$7 saddr=$8 slog=$9
    local sites=() counts=() s i n pids=() logs=() rc=0 links=""
    if [ "$net" = wan4 ]; then
      for i in 1 2 3 4; do
        n=$(((c + 4 - i) / 4))
        [ "$n" -gt 0 ] && sites+=("s$i") counts+=("$n")
      done
    else
      sites=(c1) counts=("$c")
    fi
    for s in "${sites[@]}"; do links+="$s=$(link_desc "$net" "$s") "; done
    local load0 cpu0 cpu1
    load0=$(cut -d' ' -f1 /proc/loadavg)
    cpu0=$(cpu_s "$spid")
    local wlarg=(--linpack "$size")
    [ "$wl" = ep ] && wlarg=(--ep "$size")
    for i in "${!sites[@]}"; do
      s=${sites[$i]}
      : >"$out/calls/$name.$s.csv"
      lab_run_bg "$s" env GRIDRPC_SERVER="$saddr" timeout $((${seconds%.*} + 900)) "$B/bench/lanwan_client" \
        --clients "${counts[$i]}" --seconds "$seconds" "${wlarg[@]}" --out "$out/calls/$name.$s.csv"
      pids+=("$LAB_PID") logs+=("$LAB_LOG")
    done
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
    cpu1=$(cpu_s "$spid")
    local w t0 t1
    w=$(cat "${logs[@]}" | awk '/^lanwan_client: window / { if (t0 == "" || $3 < t0) t0 = $3; if ($4 > t1) t1 = $4 } END { print t0, t1 }')
    read -r t0 t1 <<<"$w"
    if [ $rc != 0 ] || [ -z "$t0" ]; then
      rc=1
      echo "lanwan: run $name failed:" >&2
      cat "${logs[@]}" | grep -v '^lanwan_client: window' | head -5 | sed 's/^/lanwan:   /' >&2
    fi
    echo "$name,$net,$cfg,$wl,$size,$c,${sites[*]},${links% },$seconds,logs/$slog,${t0:-0},${t1:-0},$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }'),$cores,$load0,$(cut -d' ' -f1 /proc/loadavg),$rc,$server_desc" >>"$runs"
    k=$((k + 1))
    local ncalls perf
    ncalls=$(cat "$out/calls/$name".*.csv | wc -l)
    perf=$(cat "$out/calls/$name".*.csv | awk -F, '{ s += $13 / ($8 - $5) * 1e3; n++ } END { if (n) printf "%.0f", s / n; else print "-" }')
    printf 'lanwan: [%d/%d] %-7s %-4s %-7s %5s c=%-2s %4d calls, mean %s M%s/s  (%ds)\n' "$k" "$total" "$net" "$cfg" \
      "$wl" "$size" "$c" "$ncalls" "$perf" "$([ "$wl" = ep ] && echo op || echo flop)" $((SECONDS - t_start)) >&2
    return $rc
  }

  local cfg net wl size c spid saddr slog
  for cfg in $configs; do
    local sargs=(--threads "$cores" --blas-threads 1)
    [ "$cfg" = data ] && sargs=(--threads 1 --blas-threads "$cores")
    lab_start srv "$B/gridrpcd" --host "$(lab_ip srv)" --insecure --port 7000 --module-dir "$B/stubs/.libs" \
      --log-level info "${sargs[@]}" || {
      failed=1
      continue
    }
    spid=$LAB_PID saddr=$LAB_ADDR slog=server-$cfg.log
    local server_log=$LAB_LOG
    for net in $networks; do
      if [ "$net" = wan1998 ] && [ -z "$rate1998" ]; then
        # The server's speed: Linpack n = 1000, one client, LAN, this configuration.
        lab_link c1 0 0
        local cal=$out/calls/calibrate.csv speed
        : >"$cal"
        lab_exec c1 env GRIDRPC_SERVER="$saddr" timeout 300 "$B/bench/lanwan_client" --clients 1 --seconds 2 \
          --linpack 1000 --out "$cal" 2>/dev/null
        speed=$(awk -F, '{ s += $13 / ($8 - $5) * 1e3; n++ } END { if (n) printf "%.0f", s / n }' "$cal")
        [ -n "$speed" ] || speed=1000
        # bytes/s = flop/s x ratio; in kbit/s for tc (at least 64 kbit).
        rate1998=$(awk -v f="$speed" -v r="$ratio" 'BEGIN { k = f * 1e6 * r * 8 / 1000; if (k < 64) k = 64; printf "%dkbit", k }')
        echo "lanwan: 1998 WAN: server Linpack $speed Mflops (n = 1000, $cfg) x $ratio bytes/flop -> $rate1998" >&2
        echo "$speed,$ratio,$rate1998" >"$out/wan1998-rate.csv"
      fi
      link "$net"
      for wl in linpack ep; do
        local sizes=$linpack
        [ "$net" = lan ] || sizes=$wan_linpack
        [ $wl = ep ] && sizes=$ep
        for size in $sizes; do
          for c in $clients; do
            one_run "$net-$cfg-$wl-$size-c$c" "$net" "$cfg" "$wl" "$size" "$c" "$spid" "$saddr" "$slog" || failed=1
          done
        done
      done
    done
    lab_stop "$spid" 10
    cp "$server_log" "$out/logs/$slog"
  done
  lab_teardown
  trap - INT TERM
  python3 "$here/lanwan_report.py" "$out" || failed=1
  if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$here/plot_lanwan.py" "$out" || failed=1
  else
    echo "lanwan: no matplotlib: no plots (pip install matplotlib; then python3 bench/plot_lanwan.py $out)" >&2
  fi
  return $failed
}

# ---------------------------------------------------------------- the other parts
run_part() { # run_part NAME SCRIPT
  local script=$here/lanwan/$2
  if [ ! -x "$script" ] && [ ! -f "$script" ]; then
    echo "lanwan: part $1: $script is not there yet: skipped" >&2
    return 0
  fi
  local args=(--out "$out/$1")
  [ $mode = full ] && args+=(--full)
  [ $mode = smoke ] && args+=(--smoke)
  echo "lanwan: part $1: $script ${args[*]}" >&2
  bash "$script" "${args[@]}"
}

if [ "$part" = lanwan ] || [ "$part" = all ]; then
  (run_lanwan) || { rc=$?; [ $rc = 77 ] && exit 77; failed=1; }
fi
if [ "$part" = sched ] || { [ "$part" = all ] && [ $mode != smoke ]; }; then run_part sched sched.sh || failed=1; fi
if [ "$part" = ep-meta ] || { [ "$part" = all ] && [ $mode != smoke ]; }; then run_part ep-meta ep_meta.sh || failed=1; fi

echo "lanwan: done in $((SECONDS - t_start)) s: $out$([ $failed = 0 ] || echo ' (FAILED: see above)')" >&2
[ $out_tmp = 1 ] && [ $failed = 0 ] && [ -z "${LANWAN_KEEP:-}" ] && rm -rf "$out"
exit $failed
