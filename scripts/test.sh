#!/usr/bin/env bash
# test.sh: runs every test tier of GridRPC from any machine of this kind, installing
# what is missing first (scripts/setup.sh). Tiers:
#   check      make check in build/ (golden files, unit tests, CLI, IDL examples, fuzz seeds)
#   sanitizers make check in build-san/, built with ASan + UBSan and -Werror
#   tsan       make check-tsan in build-tsan/, built with ThreadSanitizer: the tests that
#              drive threads (client, server, metaserver)
#   fuzz       every fuzz target (tests/fuzz) under libFuzzer (clang), FUZZ_SECONDS each
#   format     clang-format has nothing to change
#   distcheck  make distcheck-smoke (the release tarball builds, installs and passes a
#              smoke subset of its tests)
# Ends with one line "N passed, N failed" over every test case of every tier, and exits
# non-zero if anything failed. TIERS="check fuzz" runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
tiers=${TIERS:-check sanitizers tsan fuzz format distcheck}
jobs=$(nproc)
passed=0
failed=0

t0=$(date +%s)
bash scripts/setup.sh || { echo "test: setup failed"; echo "0 passed, 1 failed"; exit 1; }
echo "test: setup took $(($(date +%s) - t0)) s"

# Adds the results recorded by automake's test harness in DIR to the totals.
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
  make -C "$1" -j"$jobs" -k "${3:-check}" >"$1/check.out" 2>&1
  local rc=$?
  grep -E '^(FAIL|ERROR|XPASS)' "$1/check.out" | head -50
  count_automake "$1" "$2"
  if [ $rc -ne 0 ] && ! grep -q '^# FAIL: *[1-9]\|^# ERROR: *[1-9]' "$1/check.out"; then
    # the build itself failed: no test result says so
    tail -30 "$1/check.out"; one "$2 build" 1
  fi
}

for tier in $tiers; do
  t0=$(date +%s)
  case $tier in
  check)
    run_check build check ;;
  sanitizers)
    BUILD_DIR=build-san CONFIGURE_FLAGS="--enable-sanitizers --enable-werror" bash scripts/setup.sh >/dev/null ||
      { one "sanitizer build" 1; continue; }
    run_check build-san sanitizers ;;
  fuzz)
    # Every target of tests/fuzz/ (README.md there) under libFuzzer (clang, ASan + UBSan),
    # from its seeds, with its dictionary, FUZZ_SECONDS each: 5 by default, so the eight
    # take about what two took at 20. scripts/fuzz-long.sh is the long run.
    mkdir -p build-fuzz
    scripts/fuzz-build.sh >build-fuzz/build.out 2>&1
    for target in msg desc meta conf ogf opts idl server; do
      if [ ! -x build-fuzz/$target ]; then
        tail -20 build-fuzz/$target.build 2>/dev/null || tail -20 build-fuzz/build.out; one "fuzz: $target build" 1; continue
      fi
      rm -rf "build-fuzz/corpus-$target"
      mkdir -p "build-fuzz/corpus-$target"
      cp tests/fuzz/corpus/$target/* "build-fuzz/corpus-$target/"
      (cd build-fuzz && ./$target -max_total_time="${FUZZ_SECONDS:-5}" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -dict=../tests/fuzz/$target.dict corpus-$target >$target.out 2>&1)
      rc=$?
      grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|invariant' build-fuzz/$target.out | head -5
      one "fuzz: $target under libFuzzer" $rc
    done ;;
  tsan)
    BUILD_DIR=build-tsan CONFIGURE_FLAGS="--enable-sanitizers=thread" bash scripts/setup.sh >/dev/null ||
      { one "thread sanitizer build" 1; continue; }
    run_check build-tsan tsan check-tsan ;; # the tests that drive threads (Makefile.am's TSAN_TESTS)
  format)
    bad=$(git ls-files '*.c' '*.h' '*.cpp' | grep -v '^tests/golden/' | while read -r f; do
      clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
    [ -n "$bad" ] && printf 'test: not formatted (run make format): %s\n' $bad
    one "format: clang-format" "$([ -z "$bad" ] && echo 0 || echo 1)" ;;
  distcheck)
    # The tarball builds and passes a smoke subset (Makefile.am's DISTCHECK_TESTS).
    make -C build -j"$jobs" distcheck-smoke >build/distcheck.out 2>&1
    rc=$?
    [ $rc -ne 0 ] && tail -30 build/distcheck.out
    one "distcheck" $rc ;;
  *)
    echo "test: unknown tier '$tier' (check sanitizers tsan fuzz format distcheck)"; one "tier $tier" 1 ;;
  esac
  echo "test: $tier took $(($(date +%s) - t0)) s"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
