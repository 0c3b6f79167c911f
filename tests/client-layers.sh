#!/bin/sh
# client-layers.sh: the client's call engine and what lies below it never call up into a
# public entry file. A public entry file of runtime/client defines a public function
# (grid_, grpc_); every other file there may call the functions of the files below it,
# never one a public entry file defines (the small helpers both need live below, in
# grc_report.c and grc_config.c). Reads the sources: nothing needs building.
. "$top_srcdir/tests/lib.sh"
dir=$top_srcdir/runtime/client
# Functions defined at the start of a line (the style of these files), not static.
defined() { grep -oE '^[A-Za-z_][A-Za-z0-9_ *]* \**(grc|grid|grpc)_[a-z0-9_]+\(' "$1" | grep -v '^static' | sed -E 's/.*[ *]([a-z0-9_]+)\($/\1/'; }
public= engine=
for f in "$dir"/*.c; do
  if defined "$f" | grep -qE '^(grid|grpc)_'; then public="$public $f"; else engine="$engine $f"; fi
done
if [ -n "$public" ] && [ -n "$engine" ]; then ok "public entry files:$(for f in $public; do printf ' %s' "${f##*/}"; done)"; else fail "no public entry files or no others found in $dir"; fi
for f in $public; do defined "$f"; done | sort -u >"$T_TMP/up"
bad=
for f in $engine; do
  # Calls only: a name followed by '(' outside comments and string literals.
  sed -E -e 's#"([^"\\]|\\.)*"##g' -e 's#/\*.*\*/##g' -e 's#^ *\*.*##' "$f" |
    grep -oE '(^|[^A-Za-z0-9_])(grc|grid|grpc)_[a-z0-9_]+ *\(' | sed -E 's/^[^a-z]//; s/ *\($//' | sort -u |
    comm -12 - "$T_TMP/up" | sed "s|^|${f##*/} calls |" >>"$T_TMP/bad"
done
if [ ! -s "$T_TMP/bad" ]; then ok "no engine file calls a function a public entry file defines"; else fail "calls up into the public entry files"; diag <"$T_TMP/bad"; fi
finish
