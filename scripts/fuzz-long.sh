#!/bin/bash
# fuzz-long.sh: the long fuzzing run: every libFuzzer target of tests/fuzz/ (built once
# by scripts/fuzz-build.sh, ASan + UBSan) for N executions each, one process per target
# (libFuzzer's -runs=N in process: one job, one worker), starting from the seed corpus
# and dictionary in the tree. New corpus entries and findings stay in a work folder,
# never in the tree: copy a finding to tests/fuzz/corpus/TARGET/regress-NAME once fixed.
#
#     scripts/fuzz-long.sh [-n N] [-w DIR] [TARGET...]
#         -n N     executions per target (default 1000000; FUZZ_RUNS)
#         -w DIR   work folder (default build-fuzz/long-DATE; FUZZ_WORK): DIR/TARGET/corpus
#                  (seeds and what the run added), DIR/TARGET/crash-*, leak-*, timeout-*,
#                  oom-* (findings), DIR/TARGET/log
#         TARGET   default: every target (fuzz-build.sh lists them)
#
# Prints a table: target, executions, executions per second of wall time and of processor
# time, wall and processor seconds, findings (files libFuzzer wrote for crashes, leaks,
# timeouts, out-of-memory). Exits 1 when anything was found or a target did not run to
# its N. Each input has FUZZ_TIMEOUT seconds of wall time (-timeout, default 30: on a
# loaded machine an input of 0.7 s took 16) and 2 GiB (-rss_limit_mb); FUZZ_FLAGS adds
# libFuzzer options.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
runs=${FUZZ_RUNS:-1000000}
work=${FUZZ_WORK:-build-fuzz/long-$(date -u +%Y%m%dT%H%M%S)}
while getopts "n:w:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    w) work=$OPTARG ;;
    *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
case $runs in '' | *[!0-9]*) echo "fuzz-long: -n '$runs' is not a number of executions" >&2; exit 2 ;; esac
targets=${*:-msg desc meta conf ogf opts idl server}

# shellcheck disable=SC2086
if ! scripts/fuzz-build.sh $targets >/dev/null; then
  echo "fuzz-long: the targets do not all build (see above)" >&2
  exit 1
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
# The server target loads stubs/test.idl's module; the runs are in the work folder.
export FUZZ_TEST_MODULE=${FUZZ_TEST_MODULE:-$top/build/stubs/.libs/test.so}
echo "fuzz-long: $runs executions per target; work folder $work"

rows=()
bad=0
for t in $targets; do
  d=$work/$t
  mkdir -p "$d/corpus"
  cp tests/fuzz/corpus/$t/* "$d/corpus/" 2>/dev/null
  dict=
  [ -f tests/fuzz/$t.dict ] && dict=-dict=$(pwd)/tests/fuzz/$t.dict
  start=$(date +%s.%N)
  # The processor time too: on a shared machine the wall clock says more about the
  # others than about the target.
  TIMEFORMAT='%U %S'
  # shellcheck disable=SC2086
  { time (cd "$d" && "$top/build-fuzz/$t" -runs="$runs" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$d/" $dict ${FUZZ_FLAGS:-} corpus >log 2>&1); } 2>"$d/cpu"
  rc=$?
  end=$(date +%s.%N)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log" | tail -1)
  findings=$(find "$d" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  read -r rows_line < <(awk -v e="${execs:-0}" -v s="$start" -v f="$end" '{ c = $1 + $2; w = f - s;
    printf "%.1f %.1f %.0f %.0f\n", w, c, e / (w > 0 ? w : 1), e / (c > 0 ? c : 1) }' "$d/cpu")
  read -r secs cpu rate cpurate <<<"$rows_line"
  rows+=("$(printf '%-6s %12s %10s %10s %9s %8s %9s' "$t" "${execs:-?}" "$rate" "$cpurate" "$secs" "$cpu" "$findings")")
  if [ "$findings" -gt 0 ] || [ $rc -ne 0 ] || [ "${execs:-0}" -lt "$runs" ]; then
    bad=1
    echo "fuzz-long: $t: exit status $rc, ${execs:-no} executions, $findings findings (see $d/log)" >&2
    grep -E 'ERROR|SUMMARY|invariant' "$d/log" | head -5 >&2
  fi
done

printf '%-6s %12s %10s %10s %9s %8s %9s\n' target execs "exec/s" "exec/cpu-s" "time(s)" "cpu(s)" findings
printf '%s\n' "${rows[@]}"
exit $bad
