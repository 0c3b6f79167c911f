#!/bin/sh
# gridrpc-module.sh: the gridrpc-module command as a user meets it, run from the build
# tree: a module built from IDL + C loads and runs as the server will call it, the
# IDL's Required entries are honoured, and each way to fail says what went wrong.
. "$top_srcdir/tests/lib.sh"
GRIDRPC_MODULE="$top_builddir/scripts/gridrpc-module"
GRIDRPC_INCLUDE="$top_srcdir/include"
export IDLC GRIDRPC_INCLUDE CC
cd "$T_TMP" || exit 1

"$GRIDRPC_MODULE" --help >help.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^Usage: gridrpc-module' help.out; then ok "--help"; else fail "--help (rc $rc)"; diag <help.out; fi
# Run from the build tree, the help names the idlc it will run, and that one exists
# (it named /usr/local/bin/idlc before make install).
env -u IDLC "$GRIDRPC_MODULE" --help >help2.out 2>&1
named=$(sed -n 's/.*IDLC (the idlc to run; here: \([^)]*\)).*/\1/p' help2.out)
if [ -n "$named" ] && [ -x "$named" ]; then ok "--help names the idlc it runs ($named)"; else fail "--help names '$named' as idlc"; diag <help2.out; fi
"$GRIDRPC_MODULE" --version >ver.out 2>&1
if grep -q '^gridrpc-module (GridRPC) [0-9]' ver.out; then ok "--version"; else fail "--version"; diag <ver.out; fi
"$GRIDRPC_MODULE" >none.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q 'no IDL file given' none.out; then ok "no IDL file: usage error"; else fail "no IDL (rc $rc)"; diag <none.out; fi

# A module whose functions need libm (through the IDL) and a helper object the IDL
# names relative to itself, built from another directory.
mkdir src
cat >src/demo.idl <<'IDL'
Module demo;
Define hypot2(IN int n, IN double x[n], IN double y[n], OUT double r[n])
"elementwise hypot"
Required "-lm"
Calls "C" demo_hypot(n, x, y, r);
Define twice(IN double v, OUT double *w)
"2 v, from an object the IDL requires"
Required "helper.o"
Calls "C" demo_twice(v, w);
IDL
cat >src/demo.c <<'C'
#include <math.h>
void demo_hypot(int n, const double *x, const double *y, double *r);
void demo_hypot(int n, const double *x, const double *y, double *r) {
    for (int i = 0; i < n; i++) r[i] = hypot(x[i], y[i]);
}
C
cat >src/helper.c <<'C'
void demo_twice(double v, double *w);
void demo_twice(double v, double *w) { *w = 2 * v; }
C
"$CC" -c -fPIC -o src/helper.o src/helper.c

"$GRIDRPC_MODULE" src/demo.idl src/demo.c >build.out 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f demo.so ]; then ok "builds NAME.so in the current directory"; else fail "build (rc $rc)"; diag <build.out; fi
if nm -D --defined-only demo.so 2>&1 | grep -q ' T gridrpc_stub_entry$'; then ok "the module exports gridrpc_stub_entry"; else fail "gridrpc_stub_entry not exported"; nm -D demo.so 2>&1 | diag; fi

# Load it and call both functions as the server does: dlopen, entry, invoke.
cat >load.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "gridrpc_stub.h"
static const gridrpc_stub_function *find(const gridrpc_stub_module *m, const char *name) {
    for (unsigned i = 0; i < m->nfunctions; i++)
        if (strcmp(m->functions[i].name, name) == 0) return &m->functions[i];
    return NULL;
}
int main(int argc, char **argv) {
    void *h = dlopen(argc > 1 ? argv[1] : "./demo.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    gridrpc_stub_entry_fn entry = (gridrpc_stub_entry_fn)dlsym(h, GRIDRPC_STUB_ENTRY_SYMBOL);
    if (!entry) { printf("no entry\n"); return 1; }
    const gridrpc_stub_module *m = entry();
    const gridrpc_stub_function *f = find(m, "hypot2"), *g = find(m, "twice");
    if (strcmp(m->name, "demo") != 0 || m->nfunctions != 2 || !f || !g) { printf("bad table\n"); return 1; }
    int n = 2;
    double x[2] = {3, 5}, y[2] = {4, 12}, r[2] = {0, 0}, v = 21, w = 0;
    void *fa[] = {&n, x, y, r}, *ga[] = {&v, &w};
    f->invoke(fa);
    g->invoke(ga);
    printf("%g %g %g\n", r[0], r[1], w);
    return 0;
}
C
if "$CC" -I"$GRIDRPC_INCLUDE" -o load load.c -ldl >cc.out 2>&1; then
  ./load ./demo.so >load.out 2>&1
  if [ "$(cat load.out)" = "5 13 42" ]; then ok "the module loads and its functions run"; else fail "load and invoke"; diag <load.out; fi
else
  fail "compiling the loader"; diag <cc.out
fi

mkdir out
"$GRIDRPC_MODULE" -v -o out/other.so src/demo.idl src/demo.c >v.out 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f out/other.so ] && grep -q -- '-shared' v.out && ./load ./out/other.so >/dev/null 2>&1; then
  ok "-o OUT.so and -v"; else fail "-o / -v (rc $rc)"; diag <v.out; fi
ls out src >ls.out
if ! grep -q 'tmp' ls.out && [ ! -f src/demo_stub.c ] && [ ! -f demo_stub.c ]; then ok "leaves no stub or partial file behind"; else fail "left files behind"; diag <ls.out; fi

# A body that includes grpc_executable.h and polls grpc_is_canceled_np (Ninf-G's
# cooperative cancel) links with --no-undefined: gridrpcd provides the function when it
# loads the module; loaded anywhere else, the call answers 0 (not cancelled).
cat >src/cancel.idl <<'IDL'
Module cancel;
Globals { #include "grpc_executable.h" }
Define poll(OUT int *c, OUT int *err)
{ grpc_error_t e = -1; *c = grpc_is_canceled_np(&e); *err = e; }
IDL
"$GRIDRPC_MODULE" -o cancel.so src/cancel.idl >cancel.out 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f cancel.so ]; then ok "a body calling grpc_is_canceled_np links"; else fail "grpc_is_canceled_np module (rc $rc)"; diag <cancel.out; fi
cat >loadc.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include "gridrpc_stub.h"
int main(void) {
    void *h = dlopen("./cancel.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    gridrpc_stub_entry_fn entry = (gridrpc_stub_entry_fn)dlsym(h, GRIDRPC_STUB_ENTRY_SYMBOL);
    const gridrpc_stub_module *m = entry ? entry() : NULL;
    int c = -1, err = -1;
    void *a[] = {&c, &err};
    if (!m || m->nfunctions != 1) { printf("bad table\n"); return 1; }
    m->functions[0].invoke(a);
    printf("%d %d\n", c, err);
    return 0;
}
C
if "$CC" -I"$GRIDRPC_INCLUDE" -o loadc loadc.c -ldl >ccc.out 2>&1 && ./loadc >loadc.out 2>&1 && [ "$(cat loadc.out)" = "0 0" ]; then
  ok "outside gridrpcd, grpc_is_canceled_np answers 0 and GRPC_NO_ERROR"
else
  fail "grpc_is_canceled_np outside the server"; diag <ccc.out; diag <loadc.out 2>/dev/null
fi

# Failures: each names its cause, exits 1 and writes no module.
"$GRIDRPC_MODULE" -o missing.so src/demo.idl src/nosuch.c >miss.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "gridrpc-module: cannot read 'src/nosuch.c'" miss.out && [ ! -f missing.so ]; then
  ok "missing source file"; else fail "missing source (rc $rc)"; diag <miss.out; fi
"$GRIDRPC_MODULE" nosuch.idl >missidl.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot read 'nosuch.idl'" missidl.out; then ok "missing IDL file"; else fail "missing IDL (rc $rc)"; diag <missidl.out; fi
"$GRIDRPC_MODULE" -o undef.so src/demo.idl >undef.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q 'gridrpc-module: cc failed (see above)' undef.out && grep -q 'demo_hypot' undef.out && [ ! -f undef.so ]; then
  ok "an unresolved function fails the link"; else fail "unresolved function (rc $rc)"; diag <undef.out; fi
mv src/helper.o src/helper.o.away
"$GRIDRPC_MODULE" -o noreq.so src/demo.idl src/demo.c >noreq.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "requires 'helper.o'" noreq.out; then ok "a missing Required file"; else fail "missing Required (rc $rc)"; diag <noreq.out; fi
mv src/helper.o.away src/helper.o
# A Calls body that leaves out an OUT parameter once built silently, and its first call
# ran the library function with an argument missing; now idlc names it, and nothing is
# built. An IN array left out only warns: the module builds, the warning shows.
cat >src/smooth.c <<'C'
void my_smooth(int n, const double *x, double *y);
void my_smooth(int n, const double *x, double *y) { for (int i = 0; i < n; i++) y[i] = x[i]; }
C
printf 'Module smooth;\nDefine smooth(IN int n, IN double x[n], OUT double y[n])\nCalls "C" my_smooth(n, x);\n' >smooth.idl
"$GRIDRPC_MODULE" smooth.idl src/smooth.c >smooth.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "smooth.idl:3:1: error: smooth: OUT parameter 'y' is not passed to my_smooth" smooth.out &&
  grep -q 'Calls "C" my_smooth(n, x, y)' smooth.out && [ ! -f smooth.so ]; then
  ok "a Calls body that leaves out an OUT parameter builds nothing"; else fail "unpassed OUT (rc $rc)"; diag <smooth.out; fi
printf 'Module unread;\nDefine unread(IN int n, IN double x[n], OUT double y[n])\nCalls "C" my_smooth(n, y, y);\n' >unread.idl
"$GRIDRPC_MODULE" unread.idl src/smooth.c >unread.out 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f unread.so ] && grep -q "unread.idl:3:1: warning: unread: IN array 'x' is not passed to my_smooth" unread.out; then
  ok "an IN array a Calls body leaves out: built, with a warning"; else fail "unpassed IN (rc $rc)"; diag <unread.out; fi
printf 'Module bad;\nDefine f(IN int n, IN double x[k]) { }\n' >bad.idl
"$GRIDRPC_MODULE" bad.idl >bad.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "bad.idl:2:" bad.out && grep -q "idlc failed on 'bad.idl'" bad.out && [ ! -f bad.so ]; then
  ok "IDL errors are idlc's"; else fail "IDL errors (rc $rc)"; diag <bad.out; fi
"$GRIDRPC_MODULE" --frobnicate src/demo.idl >opt.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "unknown option '--frobnicate'" opt.out; then ok "unknown option"; else fail "unknown option (rc $rc)"; diag <opt.out; fi
IDLC=/nonexistent/idlc "$GRIDRPC_MODULE" src/demo.idl src/demo.c >noidlc.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "idlc not found at '/nonexistent/idlc'" noidlc.out; then ok "idlc not found"; else fail "no idlc (rc $rc)"; diag <noidlc.out; fi
finish
