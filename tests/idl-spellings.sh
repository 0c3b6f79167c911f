#!/bin/sh
# idl-spellings.sh: what Ninf-G programs (the manual's samples, the diag suite) write
# compiles to exactly what our spelling of it does: the descriptor, the stub and the
# client header are byte for byte those of the other spelling. Each pair differs in one
# parameter and keeps its lines, so the stubs' #line directives agree too.
. "$top_srcdir/tests/lib.sh"
cd "$T_TMP" || exit 1

# same WHAT NINFG OURS: compiles the parameter list NINFG and OURS of one function with
# a callback-free inline body, and compares the outputs.
same() {
  what=$1
  for side in ninfg ours; do
    if [ $side = ninfg ]; then params=$2; else params=$3; fi
    rm -rf "$side" && mkdir "$side"
    printf 'Module sp;\nDefine f(%s)\n{ }\n' "$params" >"$side/sp.idl"
    if ! (cd "$side" && "$IDLC" sp.idl >idlc.err 2>&1); then
      fail "$what: idlc refuses '$params'"; diag <"$side/idlc.err"; return
    fi
  done
  for f in sp.gdesc sp_stub.c sp_client.h; do
    if ! cmp -s "ninfg/$f" "ours/$f"; then
      fail "$what: $f differs from that of '$3'"
      diff -u "ours/$f" "ninfg/$f" | head -n 20 | diag
      return
    fi
  done
  ok "$what: compiles exactly as '$3'"
}

same "the manual's one value 'OUT double result[]'" "OUT double result[]" "OUT double *result"
same "'INOUT int count[]'" "INOUT int count[]" "INOUT int *count"
same "'OUT dcomplex z[]'" "OUT dcomplex z[]" "OUT dcomplex *z"
same "'IN double x[]', one element" "IN double x[]" "IN double x[1]"
same "an IN scalar written 'IN int *n'" "IN int *n" "IN int n"
same "a callback's 'IN int *k'" "IN int n, cb(IN int *k, IN double *v)" "IN int n, cb(IN int k, IN double v)"
same "a callback's 'OUT double r[]'" "IN int n, cb(OUT double r[])" "IN int n, cb(OUT double *r)"

# What keeps its meaning: 'OUT string s[]' is one string (docs/idl.md), and a '*' on an
# IN string or an empty dimension on a WORK array stays an error.
same "'OUT string s[]'" "OUT string s[]" "OUT string *s"
printf 'Module sp;\nDefine f(IN string *s, WORK double w[])\n{ }\n' >bad.idl
"$IDLC" --check bad.idl >bad.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "'\*s' marks a scalar the function writes" bad.out &&
  grep -q "'w\[\]' on a WORK array has no size" bad.out; then
  ok "'IN string *s' and 'WORK double w[]' are still errors"
else
  fail "'IN string *s' and 'WORK double w[]' (rc $rc)"; diag <bad.out
fi
finish
