#!/bin/sh
# tap-wrap.sh: runs one test program and speaks TAP for it, so that automake's TAP
# driver counts GoogleTest cases one by one. Scripts that already print TAP ("1..N")
# pass through unchanged; any other program is one test, judged by its exit status.
prog=$1
shift
case "$prog" in
*.sh) exec "${SHELL:-/bin/sh}" "$prog" "$@" ;;
esac
out=$(mktemp)
"$prog" "$@" >"$out" 2>&1
rc=$?
if grep -q '^\[==========\] Running' "$out"; then
  awk -v rc="$rc" '
    /^\[ RUN      \]/ { name = $4; running[name] = 1; order[++n] = name; next }
    /^\[       OK \]/ { res[$4] = "ok"; next }
    /^\[  FAILED  \] [^ ]+ \(/ { res[$4] = "not ok"; next }
    /^\[  SKIPPED \] [^ ]+ \(/ { res[$4] = "skip"; next }
    { lines[n] = lines[n] "\n# " $0 }
    END {
      print "1.." n
      for (i = 1; i <= n; i++) {
        nm = order[i]; r = res[nm]
        if (r == "") r = "not ok"   # crashed inside this test
        if (r == "skip") print "ok " i " " nm " # SKIP"
        else print r " " i " " nm
        if (r == "not ok") printf "%s\n", lines[i]
      }
      if (n == 0 && rc != 0) print "not ok 1 no test ran"
    }' "$out"
  if [ "$rc" -ne 0 ] && ! grep -q '^\[  FAILED  \]' "$out"; then
    echo "# exit status $rc"
    sed 's/^/# /' "$out" | tail -40
  fi
else
  sed 's/^/# /' "$out"
  echo "1..1"
  if [ "$rc" -eq 0 ]; then echo "ok 1 $(basename "$prog")"
  elif [ "$rc" -eq 77 ]; then echo "ok 1 $(basename "$prog") # SKIP"
  else echo "not ok 1 $(basename "$prog") (exit status $rc)"; fi
fi
rm -f "$out"
