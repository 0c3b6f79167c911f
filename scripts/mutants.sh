#!/usr/bin/env bash
# mutants.sh: keeps the tests honest. Applies each small fault of tests/mutants.txt, one
# at a time, to a COPY of the source tree (the working tree is never changed), rebuilds,
# runs the tests named for it (or the whole make check with --full) and reports every
# mutant that no test catches. A mutant is caught when a test case fails that passes
# on the unmutated copy (the baseline run first records which cases already fail).
#
# usage: scripts/mutants.sh [--full] [--dir DIR] [ID...]
#   ID...   only these entries (default: all)
#   --full  run the whole make check for every mutant (slow), not the named tests
#   --dir   the work directory (default _build-mutants): DIR/src is the copy, DIR/build
#           its build (configured once, reused; delete DIR to start afresh)
# Exit status: 0 when every mutant was caught; 1 when one survived, its fragment was not
# found (the code moved on: update tests/mutants.txt), or it did not build.
# Not part of .ci/run: it rebuilds once per mutant (minutes each).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
full=0
dir=_build-mutants
ids=()
while [ $# -gt 0 ]; do
  case "$1" in
  --full) full=1 ;;
  --dir) dir=$2; shift ;;
  -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "mutants.sh: unknown option $1" >&2; exit 2 ;;
  *) ids+=("$1") ;;
  esac
  shift
done
list=$top/tests/mutants.txt
src=$top/$dir/src
build=$top/$dir/build
mkdir -p "$top/$dir"
log=$top/$dir/log
: >"$log"

# The entries as NUL-free records: id<TAB>file<TAB>tests (fragments are read by apply).
entries=$(python3 - "$list" <<'EOF'
import sys
blocks, cur = [], {}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("#"):
        continue
    if not line.strip():
        if cur: blocks.append(cur); cur = {}
        continue
    k, _, v = line.partition(": ")
    cur[k.strip()] = v
if cur: blocks.append(cur)
for b in blocks:
    missing = [f for f in ("id", "file", "from", "to", "what", "tests") if f not in b]
    if missing:
        sys.exit(f"mutants.txt: entry {b.get('id', '?')} lacks {', '.join(missing)}")
    print("\t".join((b["id"], b["file"], b["tests"], b["what"])))
EOF
) || exit 2

# apply ID FILE: rewrites FILE (in the copy) with the entry's fragment replaced.
# Exit 3: the fragment is not found; 4: it is found more than once.
apply() {
  python3 - "$list" "$1" "$2" <<'EOF'
import sys
path, want, target = sys.argv[1:]
def unesc(s):
    return s.replace("\\\\", "\0").replace("\\n", "\n").replace("\0", "\\")
cur, entry = {}, None
for line in open(path).read().split("\n") + [""]:
    if line.startswith("#"):
        continue
    if not line.strip():
        if cur.get("id") == want: entry = cur
        cur = {}
        continue
    k, _, v = line.partition(": ")
    cur[k.strip()] = v
text = open(target).read()
frm, to = unesc(entry["from"]), unesc(entry["to"])
n = text.count(frm)
if n == 0: sys.exit(3)
if n > 1: sys.exit(4)
open(target, "w").write(text.replace(frm, to))
EOF
}

# The copy: the working tree without .git and build directories, timestamps kept.
echo "mutants: copying the tree to $src"
mkdir -p "$src"
tar -C "$top" --exclude=./.git --exclude=./build --exclude='./build-[!a]*' --exclude='./_build*' -cf - . | tar -C "$src" -xf - || exit 2
restore() { # restore FILE: the copy's FILE from the working tree, timestamp bumped
  cp "$top/$1" "$src/$1" && touch "$src/$1"
}
current=
trap '[ -n "$current" ] && restore "$current"; exit 130' INT TERM
trap '[ -n "$current" ] && restore "$current"' EXIT

if [ ! -f "$build/Makefile" ]; then
  echo "mutants: configuring $build"
  mkdir -p "$build"
  jar=${ANTLR_JAR:-/usr/local/share/java/antlr4-4.9-complete.jar}
  (cd "$build" && "$src/configure" ANTLR_JAR="$jar" ${CONFIGURE_FLAGS:-}) >>"$log" 2>&1 ||
    { echo "mutants: configure failed (see $log)"; exit 2; }
fi

# run_tests TESTS: builds what they need and runs them; prints the failing cases
# (descriptions without digits, one per line) to stdout. Returns make's status.
run_tests() {
  local tests=$1 targets=() t
  local logs=()
  for t in $tests; do logs+=("$build/$t.log"); done
  rm -f "${logs[@]}"
  if [ "$full" -eq 1 ]; then
    make -C "$build" -j2 check >>"$log" 2>&1
  else
    local scripts=0
    for t in $tests; do
      case "$t" in *.sh) scripts=1 ;; *) targets+=("$t") ;; esac
    done
    # One goal per make: several goals at once race on the same libraries.
    if [ "$scripts" -eq 1 ]; then
      make -C "$build" -j2 check TESTS="$tests" >>"$log" 2>&1
    else
      make -C "$build" -j2 all >>"$log" 2>&1 &&
        for t in "${targets[@]}"; do make -C "$build" -j2 "$t" >>"$log" 2>&1 || exit 1; done &&
        make -C "$build" check-TESTS TESTS="$tests" >>"$log" 2>&1
    fi
  fi
  local rc=$?
  if [ "$full" -eq 1 ]; then
    mapfile -t logs < <(find "$build" -name '*.log' ! -name 'test-suite.log' ! -name 'config.log' -newer "$build/.mutant-stamp")
  fi
  for f in "${logs[@]}"; do
    [ -f "$f" ] && sed -n "s/^not ok [0-9]* \(.*\)/$(basename "$f" .log): \1/p" "$f" | tr -d '0-9'
  done | sort -u
  return $rc
}

# Baseline: the unmutated copy, per distinct test set.
declare -A baseline
survived=() stale=() broken=() caught=()
while IFS=$'\t' read -r id file tests what; do
  if [ ${#ids[@]} -gt 0 ]; then
    hit=0
    for x in "${ids[@]}"; do [ "$x" = "$id" ] && hit=1; done
    [ "$hit" -eq 1 ] || continue
  fi
  key=$([ "$full" -eq 1 ] && echo FULL || echo "$tests")
  if [ -z "${baseline[$key]+x}" ]; then
    echo "mutants: baseline for: $key"
    touch "$build/.mutant-stamp"
    baseline[$key]=$(run_tests "$tests")
    for t in $tests; do
      [ "$full" -eq 1 ] || [ -f "$build/$t.log" ] ||
        { echo "mutants: the unmutated tree does not build or run '$t' (see $log)"; exit 2; }
    done
    [ -n "${baseline[$key]}" ] && echo "${baseline[$key]}" | sed 's/^/  already failing: /'
  fi
  if [ ! -f "$src/$file" ]; then
    echo "mutant $id: $file does not exist; update tests/mutants.txt"
    stale+=("$id")
    continue
  fi
  current=$file
  apply "$id" "$src/$file"
  arc=$?
  if [ "$arc" -eq 3 ]; then
    echo "mutant $id: fragment not found in $file; update tests/mutants.txt"
    stale+=("$id"); restore "$file"; current=; continue
  elif [ "$arc" -eq 4 ]; then
    echo "mutant $id: fragment found more than once in $file; make it unique in tests/mutants.txt"
    stale+=("$id"); restore "$file"; current=; continue
  elif [ "$arc" -ne 0 ]; then
    echo "mutant $id: cannot apply (status $arc)"; stale+=("$id"); restore "$file"; current=; continue
  fi
  echo "mutant $id ($what): testing with ${tests}" >>"$log"
  t0=$(date +%s)
  touch "$build/.mutant-stamp"
  if ! make -C "$build" -j2 all >>"$log" 2>&1; then
    echo "mutant $id: does not build; fix the entry (see $log)"
    broken+=("$id"); restore "$file"; current=; continue
  fi
  fails=$(run_tests "$tests")
  for t in $tests; do # a test that did not run (build failure) is no catch
    [ "$full" -eq 1 ] || [ -f "$build/$t.log" ] || fails=
  done
  new=$(comm -13 <(printf '%s\n' "${baseline[$key]}" | sort -u) <(printf '%s\n' "$fails" | sort -u) | grep -v '^$')
  took=$(($(date +%s) - t0))
  if [ -n "$new" ]; then
    echo "mutant $id: caught (${took} s): $(echo "$new" | head -n 1)"
    caught+=("$id")
  else
    echo "mutant $id: SURVIVED (${took} s): $what; no test in '$tests' failed"
    survived+=("$id")
  fi
  restore "$file"
  current=
done <<<"$entries"
# The restored files must build again (leaves the build as the tree is).
make -C "$build" -j2 all >>"$log" 2>&1

echo "mutants: ${#caught[@]} caught, ${#survived[@]} survived${survived[*]:+ (${survived[*]})}," \
  "${#stale[@]} not applicable${stale[*]:+ (${stale[*]})}, ${#broken[@]} not building${broken[*]:+ (${broken[*]})}"
[ ${#survived[@]} -eq 0 ] && [ ${#stale[@]} -eq 0 ] && [ ${#broken[@]} -eq 0 ]
