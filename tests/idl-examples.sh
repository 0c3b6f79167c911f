#!/bin/sh
# idl-examples.sh: every IDL file we ship or document compiles: stubs/*.idl (the library
# served by default) and tests/idl/*.idl (the examples of docs/idl.md, as Ninf and
# Ninf-G print them). Their stubs and client headers compile, their descriptors decode.
. "$top_srcdir/tests/lib.sh"
for idl in "$top_srcdir"/stubs/*.idl "$top_srcdir"/tests/idl/*.idl; do
  name=$(basename "$idl" .idl)
  rel=${idl#"$top_srcdir"/}
  out=$T_TMP/$name
  mkdir -p "$out"
  if ! "$IDLC" -o "$out" "$idl" >"$out/idlc.err" 2>&1; then
    fail "$rel: idlc failed"; diag <"$out/idlc.err"; continue
  fi
  ok "$rel: idlc"
  check "$rel: descriptors decode" "$GRIDRPC_DESC" "$out/$name.gdesc"
  check "$rel: stub compiles" $CC -std=gnu11 $STUB_CPPFLAGS $STUB_CFLAGS -Werror -c "$out/${name}_stub.c" -o "$out/stub.o"
  printf '#include "%s_client.h"\nint main(void) { return 0; }\n' "$name" >"$out/use.c"
  check "$rel: client header compiles" $CC -std=gnu11 $STUB_CPPFLAGS -I"$out" -Wall -Wextra -Werror -c "$out/use.c" -o "$out/use.o"
done
finish
