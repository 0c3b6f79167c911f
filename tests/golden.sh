#!/bin/sh
# golden.sh: golden tests of idlc. Each folder tests/golden/CASE holds input.idl (and
# optionally "args", extra idlc options) and what idlc must produce from it:
#   input_stub.c, input_client.h   byte for byte
#   input.desc                     the descriptors, as gridrpc-desc prints input.gdesc
#   expected.errors                for IDL with errors: idlc's stderr, exit status 1,
#                                  and no file written
#   expected.warnings              for IDL that compiles with warnings: idlc's stderr;
#                                  without it, IDL that compiles must print nothing
# Generated stubs and headers must also compile cleanly. UPDATE_GOLDEN=1 rewrites the
# expected files from the current output (review the diff before committing it).
. "$top_srcdir/tests/lib.sh"

compile_outputs() {
  # the stub and a program including the client header must compile without warnings
  $CC -std=gnu11 $STUB_CPPFLAGS $STUB_CFLAGS -Werror -c "$1/input_stub.c" -o "$1/stub.o" &&
    printf '#include "input_client.h"\nint main(void) { return 0; }\n' >"$1/use.c" &&
    $CC -std=gnu11 $STUB_CPPFLAGS -I"$1" -Wall -Wextra -Werror -c "$1/use.c" -o "$1/use.o"
}

for dir in "$top_srcdir"/tests/golden/*/; do
  name=$(basename "$dir")
  work=$T_TMP/$name
  mkdir -p "$work"
  cp "$dir"input.idl "$work/"
  args=
  [ -f "$dir/args" ] && args=$(cat "$dir/args")
  (cd "$work" && "$IDLC" $args input.idl >idlc.out 2>idlc.err)
  rc=$?
  if [ -f "$dir/expected.errors" ]; then
    if [ -n "$UPDATE_GOLDEN" ]; then cp "$work/idlc.err" "$dir/expected.errors"; fi
    if [ $rc -ne 1 ]; then
      fail "$name: idlc exit status $rc, expected 1"; diag <"$work/idlc.err"
    elif ! diff -u "$dir/expected.errors" "$work/idlc.err" >"$work/diff"; then
      fail "$name: error messages differ"; diag <"$work/diff"
    elif ls "$work" | grep -q -e '_stub.c$' -e '.gdesc$' -e '_client.h$'; then
      fail "$name: idlc wrote output for IDL with errors"
    else
      ok "$name: errors as expected"
    fi
    continue
  fi
  if [ $rc -ne 0 ]; then
    fail "$name: idlc failed (exit status $rc)"; diag <"$work/idlc.err"
    continue
  fi
  if [ -n "$UPDATE_GOLDEN" ] && { [ -s "$work/idlc.err" ] || [ -f "$dir/expected.warnings" ]; }; then
    cp "$work/idlc.err" "$dir/expected.warnings"
  fi
  if [ -f "$dir/expected.warnings" ]; then
    if diff -u "$dir/expected.warnings" "$work/idlc.err" >"$work/diff"; then
      ok "$name: warnings as expected"
    else
      fail "$name: warnings differ"; diag <"$work/diff"
    fi
  elif [ -s "$work/idlc.err" ]; then
    fail "$name: idlc printed something for IDL without problems"; diag <"$work/idlc.err"
  fi
  "$GRIDRPC_DESC" "$work/input.gdesc" >"$work/input.desc" 2>&1 || echo "gridrpc-desc failed" >>"$work/input.desc"
  for f in input_stub.c input_client.h input.desc; do
    if [ -n "$UPDATE_GOLDEN" ]; then cp "$work/$f" "$dir/$f"; fi
    if [ ! -f "$dir/$f" ]; then
      fail "$name: $f: no expected file (run with UPDATE_GOLDEN=1)"
    elif diff -u "$dir/$f" "$work/$f" >"$work/diff"; then
      ok "$name: $f"
    else
      fail "$name: $f differs from the golden file"; diag <"$work/diff"
    fi
  done
  if compile_outputs "$work" >"$work/cc.out" 2>&1; then
    ok "$name: generated C compiles without warnings"
  else
    fail "$name: generated C does not compile"; diag <"$work/cc.out"
  fi
done
finish
