#!/usr/bin/env bash
# test.sh: runs every test tier of GridRPC from any machine of this kind, installing
# what is missing first (scripts/setup.sh). Tiers:
#   check      make check in build/ (golden files, unit tests, CLI, IDL examples, fuzz seeds)
#   sanitizers make check in build-san/, built with ASan + UBSan and -Werror
#   tsan       make check-tsan in build-tsan/, built with ThreadSanitizer: the tests that
#              drive threads (client, server, metaserver)
#   fuzz       every fuzz target (tests/fuzz) under libFuzzer (clang), a fixed seed and count
#   format     clang-format has nothing to change
#   distcheck  make distcheck-smoke (the release tarball builds, installs and passes a
#              smoke subset of its tests)
# The tiers run in two lanes side by side (check, sanitizers, format | tsan, fuzz,
# distcheck): a test run leaves half the CPU idle while it waits on servers and links,
# which the other lane's build takes. Each tier's output is shown whole when its lane
# ends. Tests run at twice the cores for the same reason (TEST_JOBS overrides).
# Ends with one line "N passed, N failed" over every test case of every tier, and exits
# non-zero if anything failed. TIERS="check fuzz" runs a subset; LANES=1 runs them one
# after another.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
tiers=${TIERS:-check sanitizers tsan fuzz format distcheck}
jobs=$(nproc)
test_jobs=${TEST_JOBS:-$((2 * jobs))}
lanes=${LANES:-2}
res=$(mktemp -d "${TMPDIR:-/tmp}/gridrpc-test.XXXXXX")
trap 'rm -rf "$res"' EXIT

t0=$(date +%s)
bash scripts/setup.sh || { echo "test: setup failed"; echo "0 passed, 1 failed"; exit 1; }
echo "test: setup took $(($(date +%s) - t0)) s"

# Each tier writes its output to $res/TIER.out and its counts ("passed failed") to
# $res/TIER.count, so the lanes, which are subshells, add up in the parent.
passed=0 failed=0

# Adds the results recorded by automake's test harness in DIR to the tier's counts.
count_automake() {
  local dir=$1 p f
  # automake's own summary of every test case (TAP) in the tree
  p=$(awk '/^# (PASS|XFAIL|SKIP):/ {n += $3} END {print n + 0}' "$dir/test-suite.log" 2>/dev/null)
  f=$(awk '/^# (FAIL|XPASS|ERROR):/ {n += $3} END {print n + 0}' "$dir/test-suite.log" 2>/dev/null)
  echo "test: $2: $p passed, $f failed"
  passed=$((passed + p))
  failed=$((failed + f))
}

one() { # NAME STATUS: one test case
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "test: $1: passed"
  else failed=$((failed + 1)); echo "test: $1: FAILED"; fi
}

run_check() { # DIR TIER [TARGET]
  rm -f "$1/test-suite.log" # a build that fails must not count an old summary
  make -C "$1" -j"$test_jobs" -k "${3:-check}" >"$1/check.out" 2>&1
  local rc=$?
  grep -E '^(FAIL|ERROR|XPASS)' "$1/check.out" | head -50
  # What a failing test said (automake keeps its log in test-suite.log): a failure on a
  # CI machine, seen once, must be readable from this output alone.
  if grep -q '^# \(FAIL\|ERROR\|XPASS\): *[1-9]' "$1/test-suite.log" 2>/dev/null; then
    echo "test: $2: what the failing tests said (test-suite.log, at most 150 lines):"
    grep -E '^(not ok|# |FAIL|ERROR)' "$1/test-suite.log" | grep -v '^# \(TOTAL\|PASS\|SKIP\|XFAIL\|FAIL\|XPASS\|ERROR\):' |
      head -150 | sed 's/^/  | /'
  fi
  count_automake "$1" "$2"
  if [ $rc -ne 0 ] && ! grep -q '^# FAIL: *[1-9]\|^# ERROR: *[1-9]' "$1/check.out"; then
    # the build itself failed: no test result says so
    tail -30 "$1/check.out"; one "$2 build" 1
  fi
}

run_tier() { # TIER: runs one tier, its counts and output under $res
  local tier=$1 t0 rc target
  t0=$(date +%s)
  case $tier in
  check)
    run_check build check
    touch "$res/check.done" ;; # distcheck's tarball comes from build/ (below)
  sanitizers)
    if BUILD_DIR=build-san CONFIGURE_FLAGS="--enable-sanitizers --enable-werror" bash scripts/setup.sh >/dev/null; then
      run_check build-san sanitizers
    else one "sanitizer build" 1; fi ;;
  fuzz)
    # Every target of tests/fuzz/ (README.md there) under libFuzzer (clang, ASan + UBSan),
    # from its seeds, with its dictionary, for a fixed number of inputs from a fixed seed
    # (FUZZ_SEED, 1), so that two runs of one tree try the same inputs: a finding fails
    # every run, never one in ten. Each count is what the target gets through in about 5 s
    # on a loaded CI machine; FUZZ_SECONDS (60) caps a target on a slower one.
    # scripts/fuzz-long.sh is the long run, from random seeds, to find new faults.
    mkdir -p build-fuzz
    scripts/fuzz-build.sh >build-fuzz/build.out 2>&1
    for entry in msg:60000 desc:25000 meta:800 conf:1500 ogf:1500 opts:80000 idl:1000 server:4000; do
      target=${entry%%:*} runs=${entry#*:}
      if [ ! -x build-fuzz/$target ]; then
        tail -20 build-fuzz/$target.build 2>/dev/null || tail -20 build-fuzz/build.out; one "fuzz: $target build" 1; continue
      fi
      rm -rf "build-fuzz/corpus-$target"
      mkdir -p "build-fuzz/corpus-$target"
      cp tests/fuzz/corpus/$target/* "build-fuzz/corpus-$target/"
      (cd build-fuzz && ./$target -seed="${FUZZ_SEED:-1}" -runs="$runs" -max_total_time="${FUZZ_SECONDS:-60}" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -dict=../tests/fuzz/$target.dict corpus-$target >$target.out 2>&1)
      rc=$?
      grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|invariant' build-fuzz/$target.out | head -5
      one "fuzz: $target under libFuzzer" $rc
    done ;;
  tsan)
    if BUILD_DIR=build-tsan CONFIGURE_FLAGS="--enable-sanitizers=thread" bash scripts/setup.sh >/dev/null; then
      run_check build-tsan tsan check-tsan # the tests that drive threads (Makefile.am's TSAN_TESTS)
    else one "thread sanitizer build" 1; fi ;;
  format)
    bad=$(git ls-files '*.c' '*.h' '*.cpp' | grep -v '^tests/golden/' | while read -r f; do
      clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
    [ -n "$bad" ] && printf 'test: not formatted (run make format): %s\n' $bad
    one "format: clang-format" "$([ -z "$bad" ] && echo 0 || echo 1)" ;;
  distcheck)
    # The tarball builds and passes a smoke subset (Makefile.am's DISTCHECK_TESTS). It is
    # made in build/, so not while the check tier's make runs there (bounded wait).
    case " $tiers " in *" check "*)
      for _ in $(seq 1 3600); do [ -f "$res/check.done" ] && break; sleep 1; done ;;
    esac
    make -C build -j"$jobs" distcheck-smoke >build/distcheck.out 2>&1
    rc=$?
    [ $rc -ne 0 ] && tail -30 build/distcheck.out
    one "distcheck" $rc ;;
  *)
    echo "test: unknown tier '$tier' (check sanitizers tsan fuzz format distcheck)"; one "tier $tier" 1 ;;
  esac
  echo "test: $tier took $(($(date +%s) - t0)) s"
}

run_lane() { # TIER...: runs the tiers in order, each into $res
  local tier
  for tier in "$@"; do
    passed=0 failed=0
    run_tier "$tier" >"$res/$tier.out" 2>&1
    echo "$passed $failed" >"$res/$tier.count"
  done
}

lane_a=() lane_b=()
for tier in $tiers; do
  case $lanes:$tier in
  2:tsan | 2:fuzz | 2:distcheck) lane_b+=("$tier") ;;
  *) lane_a+=("$tier") ;;
  esac
done
t0=$(date +%s)
run_lane "${lane_a[@]}" &
pid_a=$!
run_lane "${lane_b[@]}" &
pid_b=$!
wait $pid_a $pid_b

passed=0 failed=0
for tier in $tiers; do
  cat "$res/$tier.out" 2>/dev/null
  if read -r p f <"$res/$tier.count" 2>/dev/null; then
    passed=$((passed + p)) failed=$((failed + f))
  else
    echo "test: $tier: FAILED (it left no result)"; failed=$((failed + 1))
  fi
done
echo "test: the tiers took $(($(date +%s) - t0)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
