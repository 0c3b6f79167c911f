#!/bin/sh
# idlc-cli.sh: idlc's command line as a user meets it: help, version, usage errors,
# output directory, selective and change-only writes, cpp options, unreadable input.
. "$top_srcdir/tests/lib.sh"
cd "$T_TMP" || exit 1
cp "$top_srcdir/tests/idl/ninfg_data.idl" data.idl

"$IDLC" --help >help.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^Usage: idlc' help.out && grep -q -- '--output' help.out; then ok "--help"; else fail "--help (rc $rc)"; fi
"$IDLC" --version >ver.out 2>&1
if grep -q '^idlc (GridRPC) [0-9]' ver.out; then ok "--version"; else fail "--version"; diag <ver.out; fi
"$IDLC" >none.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q 'no IDL file given' none.out; then ok "no input: usage error"; else fail "no input (rc $rc)"; diag <none.out; fi
"$IDLC" --frobnicate data.idl >bad.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "unknown option '--frobnicate'" bad.out; then ok "unknown option"; else fail "unknown option (rc $rc)"; fi
"$IDLC" --emit stubs data.idl >emit.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "unknown output 'stubs'" emit.out; then ok "bad --emit value"; else fail "bad --emit (rc $rc)"; fi
"$IDLC" --check data.idl --output >noval.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "--output needs a value" noval.out; then ok "missing option value"; else fail "missing value (rc $rc)"; diag <noval.out; fi
"$IDLC" --check=yes data.idl >flagval.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "--check takes no value" flagval.out; then ok "a flag given a value"; else fail "flag with a value (rc $rc)"; diag <flagval.out; fi
"$IDLC" --c data.idl >amb.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "option '--c' is ambiguous: --check, --cpp" amb.out; then ok "ambiguous abbreviation"; else fail "ambiguous (rc $rc)"; diag <amb.out; fi
"$IDLC" missing.idl >missing.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot read 'missing.idl'" missing.out; then ok "missing input file"; else fail "missing input (rc $rc)"; diag <missing.out; fi

mkdir out
"$IDLC" -o out data.idl >o.out 2>&1
if [ -f out/data_stub.c ] && [ -f out/data.gdesc ] && [ -f out/data_client.h ] && [ ! -f data_stub.c ]; then ok "-o DIR writes the three outputs there"; else fail "-o DIR"; diag <o.out; fi
touch -d '2000-01-01' out/data_stub.c
before=$(stat -c %Y out/data_stub.c)
"$IDLC" -o out data.idl
if [ "$(stat -c %Y out/data_stub.c)" = "$before" ]; then ok "unchanged output is not rewritten"; else fail "unchanged output was rewritten"; fi
mkdir only
"$IDLC" --emit=desc -o only data.idl
if [ -f only/data.gdesc ] && [ ! -f only/data_stub.c ] && [ ! -f only/data_client.h ]; then ok "--emit=desc writes only the descriptors"; else fail "--emit=desc"; fi
# Options may follow the files; after "--" a word that starts with '-' is a file.
mkdir after
"$IDLC" data.idl -o after --emit=stub >after.out 2>&1
if [ -f after/data_stub.c ] && [ ! -f after/data.gdesc ]; then ok "options after the file"; else fail "options after the file"; diag <after.out; fi
cp data.idl ./-dash.idl
"$IDLC" --check -- -dash.idl >dash.out 2>&1 && ok "-- ends the options" || { fail "-- ends the options"; diag <dash.out; }
mkdir chk
"$IDLC" --check -o chk data.idl
if [ -z "$(ls chk)" ]; then ok "--check writes nothing"; else fail "--check wrote files"; fi
"$IDLC" --output nonexistent/dir data.idl >nodir.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot write 'nonexistent/dir/data_stub.c'" nodir.out; then ok "unwritable output directory"; else fail "unwritable output (rc $rc)"; diag <nodir.out; fi

# -D reaches cpp; --no-cpp leaves directives alone (and then they are syntax errors).
cat >defs.idl <<'IDL'
Module defs;
Define f(IN int n, IN double x[SIZE]) { }
IDL
"$IDLC" -DSIZE=n --check defs.idl >d.out 2>&1 && ok "-D defines a macro for the IDL" || { fail "-D"; diag <d.out; }
"$IDLC" --check defs.idl >u.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "defs.idl:2:32: error: dimension 1 of 'x' uses 'SIZE'" u.out; then ok "undefined macro reported at its place"; else fail "undefined macro (rc $rc)"; diag <u.out; fi
printf 'Module m;\n#define N 4\nDefine f(IN double x[N]) { }\n' >nocpp.idl
"$IDLC" --no-cpp --check nocpp.idl >n.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "nocpp.idl:2:1: error: unexpected character '#'" n.out; then ok "--no-cpp skips the preprocessor"; else fail "--no-cpp (rc $rc)"; diag <n.out; fi
"$IDLC" --cpp=/nonexistent/cpp --check data.idl >c.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot run the C preprocessor '/nonexistent/cpp'" c.out; then ok "missing preprocessor"; else fail "missing preprocessor (rc $rc)"; diag <c.out; fi
# An #include resolves next to the including file, and errors name the included file.
mkdir inc
printf 'Define g(IN int n, IN double y[m]) { }\n' >inc/part.idl
printf 'Module inc;\n#include "part.idl"\n' >inc/main.idl
"$IDLC" --check inc/main.idl >i.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "part.idl:1:32: error: dimension 1 of 'y' uses 'm'" i.out; then ok "errors inside an #included file name that file"; else fail "include (rc $rc)"; diag <i.out; fi

# Several files: the good one is written, the bad one is not, the exit status is 1.
printf 'Module bad;\nDefine f(IN int n, IN double x[k]) { }\n' >bad.idl
mkdir two
"$IDLC" -o two data.idl bad.idl >two.out 2>&1; rc=$?
if [ $rc -eq 1 ] && [ -f two/data_stub.c ] && [ ! -f two/bad_stub.c ]; then ok "one bad file of two"; else fail "one bad file of two (rc $rc)"; diag <two.out; fi

# gridrpc-desc --eval sizes arrays as a client does.
"$GRIDRPC_DESC" --eval N=5 out/data.gdesc >ev.out 2>&1
if grep -q 'eval: in: 5 elements, 40 bytes sent' ev.out && grep -q 'eval: out: 5 elements, 40 bytes returned' ev.out; then ok "gridrpc-desc --eval"; else fail "gridrpc-desc --eval"; diag <ev.out; fi
"$GRIDRPC_DESC" --eval N=-1 out/data.gdesc >neg.out 2>&1
if grep -q "size -1 is negative" neg.out; then ok "gridrpc-desc --eval: negative size reported"; else fail "--eval negative"; diag <neg.out; fi
"$GRIDRPC_DESC" --eval N out/data.gdesc >bad.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q 'NAME=INTEGER' bad.out; then ok "gridrpc-desc --eval usage error"; else fail "--eval usage (rc $rc)"; fi
"$GRIDRPC_DESC" --eval=N=5 -- out/data.gdesc >eq.out 2>&1
if grep -q 'eval: in: 5 elements, 40 bytes sent' eq.out; then ok "gridrpc-desc --eval=NAME=VALUE and --"; else fail "gridrpc-desc --eval= and --"; diag <eq.out; fi
"$GRIDRPC_DESC" --eval >noval.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q 'NAME=INTEGER' noval.out; then ok "gridrpc-desc --eval without a value"; else fail "--eval without a value (rc $rc)"; fi
"$GRIDRPC_DESC" --frobnicate out/data.gdesc >unk.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "unknown option '--frobnicate'" unk.out; then ok "gridrpc-desc unknown option"; else fail "gridrpc-desc unknown option (rc $rc)"; diag <unk.out; fi
"$GRIDRPC_DESC" --evl N=5 out/data.gdesc >typo.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "unknown option '--evl': did you mean --eval?" typo.out; then ok "gridrpc-desc: a typo of an option names it"; else fail "gridrpc-desc option typo (rc $rc)"; diag <typo.out; fi
# Thousands of unclosed '{' with comments between them: ANTLR's lexer once kept every
# reading of "/*" and the braces alive at once and took minutes on 20 KB of this (a fuzz
# finding). The C-block scanner reads each character once: milliseconds, far inside
# the bound, which is only there to end a regression.
{ printf 'Module m;\nGlobals {\n'; i=0; while [ $i -lt 2000 ]; do printf '{ /* x */ '; i=$((i + 1)); done; } >braces.idl
timeout 60 "$IDLC" --check --no-cpp braces.idl >braces.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "^braces.idl:2:9: error: this '{' has no matching '}': close the Globals or inline body" braces.out; then
  ok "2,000 unclosed '{' between comments: one error, at once"
else
  fail "2,000 unclosed '{' (rc $rc; 124: idlc took over 60 s)"; diag <braces.out
fi
# Expressions deeper than idlc's parser can recurse: 256 brackets open at once and 1,000
# operators in a declaration are taken, one more is a clear error, and 100,000 (which
# overflowed the stack, a crash) are the same error, at once.
deep() { # deep FILE OPEN CLOSE: a function costed with OPEN '(' around n, CLOSE ')'
  python3 -c 'import sys; o, c = int(sys.argv[2]), int(sys.argv[3])
open(sys.argv[1], "w").write("Module m;\nDefine f(IN int n) CalcOrder " + "(" * o + "n" + ")" * c + "\n{ }\n")' "$@"
}
ops() { # ops FILE N: N operators in one declaration, over ten array sizes (each a valid program)
  python3 -c 'import sys; n = int(sys.argv[2])
dims = [n // 10 + (1 if i < n % 10 else 0) for i in range(10)]
args = ", ".join("IN double a%d[%s]" % (i, "+".join(["n"] * (k + 1))) for i, k in enumerate(dims))
open(sys.argv[1], "w").write("Module m;\nDefine f(IN int n, " + args + ")\n{ }\n")' "$@"
}
bound() { # bound NAME FILE RC PATTERN: idlc --check FILE exits RC, its output matching PATTERN (or not, for "!PATTERN")
  timeout 60 "$IDLC" --check --no-cpp "$2" >"$2.out" 2>&1; rc=$?
  case $4 in
  !*) grep -q -- "${4#!}" "$2.out"; found=$((1 - $?)); want=0 ;;
  *) grep -q -- "$4" "$2.out"; found=$((1 - $?)); want=1 ;;
  esac
  if [ $rc -eq "$3" ] && [ $found -eq $want ]; then ok "$1"; else fail "$1 (rc $rc)"; diag <"$2.out"; fi
}
deep d256.idl 256 256 && bound "256 nested brackets are taken" d256.idl 0 "!nested more than"
deep d257.idl 257 257 && bound "257 nested brackets: an error" d257.idl 1 "^d257.idl:2:286: error: brackets nested more than 256 deep"
deep d100k.idl 100000 100000 && bound "100,000 nested brackets: the same error, no crash" d100k.idl 1 "brackets nested more than 256 deep"
deep dopen.idl 5000 0 && bound "5,000 unclosed '(': the same error, at once" dopen.idl 1 "brackets nested more than 256 deep"
ops o1000.idl 1000 && bound "1,000 operators in a declaration are taken" o1000.idl 0 "!operators in one declaration"
ops o1001.idl 1001 && bound "1,001 operators: an error" o1001.idl 1 "more than 1000 operators in one declaration"
python3 -c 'open("chain.idl", "w").write("Module m;\nDefine f(IN int n) CalcOrder " + "!" * 100000 + "n\n{ }\n")'
bound "100,000 unary operators: an error, no crash" chain.idl 1 "more than 1000 operators in one declaration"
finish
