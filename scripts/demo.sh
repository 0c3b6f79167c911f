#!/usr/bin/env bash
# demo.sh: the five-minute tour. Sets the machine up (scripts/setup.sh), compiles the
# numerical library of stubs/ with idlc, and shows what a client learns from a server:
# each function's interface descriptor, evaluated for real argument values.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
out=$build/demo
mkdir -p "$out"

echo
echo "== idlc compiles the library served by default (stubs/*.idl)"
for idl in stubs/*.idl; do
  "$build/idlc/idlc" -o "$out" "$idl"
  base=$(basename "$idl" .idl)
  printf '   %-16s -> %s_stub.c (%s bytes), %s.gdesc (%s bytes), %s_client.h\n' "$idl" "$base" \
    "$(stat -c %s "$out/${base}_stub.c")" "$base" "$(stat -c %s "$out/$base.gdesc")" "$base"
done

echo
echo "== the interface descriptors a client fetches and interprets (gridrpc-desc $out/linalg.gdesc)"
"$build/gridrpc-desc" "$out/linalg.gdesc" | sed 's/^/   /'

echo
echo "== sizing arguments from a descriptor: linalg/dmmul for n = 2000"
"$build/gridrpc-desc" --eval n=2000 "$out/linalg.gdesc" 2>/dev/null | sed -n '/dmmul/,/^$/p' | sed 's/^/   /' ||
  true

echo
echo "== idlc explains mistakes (tests/golden/err_dimension/input.idl)"
"$build/idlc/idlc" --check tests/golden/err_dimension/input.idl 2>&1 | sed 's/^/   /' || true
echo
echo "demo: done. The computing server and grid_call arrive with the runtime (docs/)."
