#!/usr/bin/env bash
# ep_meta.sh: the Ninf study's EP metaserver experiment (its Figure 11), item 4 of the
# LAN/WAN study (issue 12). One EP run of 2^M pairs is cut into S equal ranges, all
# started at once by one client (bench/meta_lab_client split, async calls under the plain
# name "nas/ep"); gridmetad (mct) places each on one of S gridrpcd, each one worker, one
# BLAS thread and a CPU quota of Q% of one CPU (default 12.5: a server is a CPU eight
# times slower; on a 2-core machine S = 16 servers are all of it, S = 8 one core; the
# client and gridmetad get no quota and a higher CPU weight, as machines of their own). Speedup = median wall time of the whole run on one
# server / median on S; every part's server, time and start, and the metaserver's holds
# and decision times, show where the time goes. The parts' sums are checked against NPB's.
#
#   bench/lanwan/ep_meta.sh [--out DIR] [--full] [--servers "1 2 4 8 16"] [--ms "24"]
#                           [--reps R] [--quota Q] [--smoke]
#     --out DIR   results (default bench/results/lanwan): ep-meta-runs.csv (one line per
#                 run), ep-meta-calls.csv (one per part), ep-meta.csv and ep-meta.md (the
#                 table: median, speedup, efficiency), ep-meta-decisions.txt, and, through
#                 bench/plot_lanwan_sched.py, ep-meta.png (the Figure 11 plot)
#     --full      M = 24 28 30 (the study's sizes; 2^30 on one server at 12.5% is about
#                 2.5 min a run: about 20 min in all), 3 repeats; default: M = 24,
#                 3 repeats (about 1.5 min; --ms "24 28": about 8 min)
#     --smoke     S = 1 2, M = 24, 1 repeat (the test suite's run)
# Needs root (exit 77 otherwise) and a build (BUILD_DIR, else top_builddir, else build/).
# The lab (namespaces, links, cgroups, processes) is torn down on every exit, Ctrl-C too.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=ep_meta
out= full=0 smoke=0 servers= ms= reps= quota=12.5
while [ $# -gt 0 ]; do
  case $1 in
  --out) out=${2:-} && shift ;;
  --full) full=1 ;;
  --smoke) smoke=1 ;;
  --servers) servers=${2:-} && shift ;;
  --ms) ms=${2:-} && shift ;;
  --reps) reps=${2:-} && shift ;;
  --quota) quota=${2:-} && shift ;;
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
  : "${servers:=1 2}" "${ms:=24}" "${reps:=1}"
elif [ $full = 1 ]; then
  : "${servers:=1 2 4 8 16}" "${ms:=24 28 30}" "${reps:=3}"
else
  : "${servers:=1 2 4 8 16}" "${ms:=24}" "${reps:=3}"
fi
for s in $servers; do
  [[ $s =~ ^[0-9]+$ ]] && [ "$s" -ge 1 ] && [ "$s" -le 16 ] || {
    echo "$prog: --servers takes counts from 1 to 16, not '$s'" >&2
    exit 2
  }
done
for m in $ms; do
  [[ $m =~ ^[0-9]+$ ]] && [ "$m" -ge 16 ] && [ "$m" -le 30 ] || {
    echo "$prog: --ms takes exponents from 16 to 30, not '$m'" >&2
    exit 2
  }
done
[[ $reps =~ ^[1-9][0-9]?$ ]] || {
  echo "$prog: --reps takes 1 to 99, not '$reps'" >&2
  exit 2
}
[[ $quota =~ ^[0-9]+(\.[0-9]+)?$ ]] || {
  echo "$prog: --quota takes a percentage of one CPU (12.5), not '$quota'" >&2
  exit 2
}
. "$here/grid_lab.sh"
gl_need_root $prog
gl_build $prog "$top"
: "${out:=$top/bench/results/lanwan}"
mkdir -p "$out" || exit 1

export LAB_BUILD=$B
# A 10 ms quota period: with the default 100 ms, a call of a few tens of milliseconds runs
# at full speed or waits most of a period depending on when it starts, and the measured
# speeds the metaserver schedules by scatter by 5x between identical servers.
export LAB_CPU_PERIOD_US=${LAB_CPU_PERIOD_US:-10000}
. "$top/tests/lab/lab.sh"
lab_init ep-meta || exit $?
lab_host client 10 && lab_host meta 2 || exit 1
smax=0
for s in $servers; do [ "$s" -gt $smax ] && smax=$s; done
for ((i = 1; i <= smax; i++)); do
  lab_host "s$i" $((10 + i)) || exit 1
done
lab_have_cpu_quota || {
  echo "$prog: skipped: no cgroup cpu controller for the servers' CPU quotas"
  exit 77
}
for ((i = 1; i <= smax; i++)); do
  lab_cpu_quota "s$i" "$quota" || exit 1
  gl_weight "s$i"
done
gl_weight_unlimited client meta || exit 1

runs=$out/ep-meta-runs.csv calls=$out/ep-meta-calls.csv dec=$out/ep-meta-decisions.txt deccsv=$LAB_DIR/dec.csv
echo "m,servers,rep,quota_pct,wall_s,distinct_servers,max_part_s,min_part_s,last_start_s,held_calls,held_s,decide_us,load1" >"$runs"
echo "m,servers,rep,part,server,start_s,seconds,ok" >"$calls"
: >"$dec"
failed=0
echo "== EP over S servers through gridmetad (mct): M = $ms, S = $servers, $reps repeats, each server $quota% of a CPU"
echo "   load before: $(gl_load)"
for S in $servers; do
  gl_start "ep$S" "$S" client --quiet || {
    failed=1
    break
  }
  k=$(gl_probe client client "$S")
  [ "$k" = "$S" ] || echo "$prog: warning: the metaserver knows only $k of $S links from the client" >&2
  last=0
  for m in $ms; do
    # Warm-up: every server runs two parts of the measured runs' size (at most 2^25 / S
    # pairs: longer parts measure the same speed), round-robin, so that mct knows each
    # one's EP speed (measured, not the start-up guess) before the measured runs. The
    # size matters under a CPU quota: a much shorter call can run on the quota left in a
    # period at the CPU's full speed, and would make identical servers look several
    # times faster than they are, and unequal.
    wm=$((m < 25 ? m : 25))
    for w in 1 2; do
      gl_in client client env GRIDRPC_SCHEDULER=round-robin timeout 900 "$CLIENT" split "$wm" "$S" >/dev/null || {
        echo "$prog: warm-up M=$m S=$S failed" >&2
        failed=1
      }
    done
    read -r last _ < <(gl_decisions client "warm m=$m S=$S" "$last" "$dec" "$deccsv") || last=0
    for ((rep = 1; rep <= reps; rep++)); do
      lines=$(gl_in client client timeout 900 "$CLIENT" split "$m" "$S") || {
        echo "$prog: M=$m S=$S rep $rep failed or gave wrong sums" >&2
        failed=1
      }
      read -r last nheld theld < <(gl_decisions client "m=$m S=$S rep $rep" "$last" "$dec" "$deccsv") || nheld=0 theld=0
      wall=$(sed -n 's/^wall,//p' <<<"$lines")
      [ -n "$wall" ] || continue
      # Server sN is 10.77.0.(10 + N).
      grep '^call,' <<<"$lines" | awk -F, -v m="$m" -v S="$S" -v r="$rep" '{
          split($6, a, /[.:]/); printf "%s,%s,%s,%s,s%d,%s,%s,%s\n", m, S, r, $3, a[4] - 10, $7, $8, $9 }' >>"$calls"
      # Per run: how many servers, the slowest and fastest part, the last start (the
      # calls' submission), the holds and the mean decision time (from /api/status).
      stats=$(awk -F, -v m="$m" -v S="$S" -v r="$rep" '$1 == m && $2 == S && $3 == r {
          srv[$5] = 1; if ($7 > mx) mx = $7; if (mn == "" || $7 < mn) mn = $7; if ($6 > ls) ls = $6 }
          END { n = 0; for (k in srv) n++; printf "%d,%.4f,%.4f,%.4f", n, mx, mn, ls }' "$calls")
      dus=$(lab_exec client python3 -c '
import json, sys, urllib.request
st = json.load(urllib.request.urlopen("http://%s/api/status" % sys.argv[1], timeout=5))
d = sorted(st["decisions"], key=lambda d: -d["id"])[: int(sys.argv[2])]
print("%.1f" % (sum(x["elapsed_us"] for x in d) / max(1, len(d))))' "$GL_META_HTTP" "$S" 2>/dev/null) || dus=
      echo "$m,$S,$rep,$quota,$wall,$stats,${nheld:-0},${theld:-0},${dus},$(cut -d' ' -f1 /proc/loadavg)" >>"$runs"
      printf '   M=%d S=%2d rep %d: wall %7.3f s  (servers, slowest, fastest part, last start: %s; held %s)\n' \
        "$m" "$S" "$rep" "$wall" "$stats" "${nheld:-0}"
    done
  done
  gl_stop
done
echo "   load after: $(gl_load)"
lab_teardown
python3 "$top/bench/plot_lanwan_sched.py" ep --dir "$out" || failed=1
if [ $failed != 0 ]; then
  echo "$prog: FAILED (a server did not start, or a call failed or gave wrong sums; see above; results in $out)" >&2
  exit 1
fi
echo "$prog: done; tables and plot in $out (ep-meta.md, ep-meta.png)"
