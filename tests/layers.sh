#!/bin/sh
# layers.sh: the layers of the runtime are enforced by the compiler, not by a rule in a
# document. Each layer's sources build with an include path of the public headers,
# their own folder and the layers below (Makefile.am's LAYER_*, docs/layers.md). For
# each layer a real source file compiles as it is with its layer's flags, and the same
# file with one #include of a layer above it added does not: "No such file". The flags
# come from the Makefile, so a layer given a wider path fails here.
. "$top_srcdir/tests/lib.sh"
cd "$T_TMP" || exit 1
unset MAKEFLAGS MFLAGS MAKELEVEL
make -s -C "$top_builddir" -f Makefile -f - print-layer-flags >flags.out 2>&1 <<'EOF' || { fail "reading the layers' flags from the Makefile"; diag <flags.out; finish; exit 1; }
print-layer-flags:
	@echo "base $(DEFS) $(DEFAULT_INCLUDES) $(PTHREAD_CFLAGS)"
	@echo "common $(LAYER_COMMON)"
	@echo "desc $(LAYER_DESC)"
	@echo "wire $(LAYER_WIRE)"
	@echo "marshal $(LAYER_MARSHAL)"
	@echo "proto $(LAYER_PROTO)"
	@echo "client $(LAYER_CLIENT)"
	@echo "server $(GSV_CPPFLAGS)"
	@echo "metaserver $(GMS_CPPFLAGS)"
	@echo "daemon $(GDM_CPPFLAGS)"
EOF
flags() { sed -n "s/^$1 //p" flags.out; }
base=$(flags base)
# The flags' paths are relative to the build folder (configure's srcdir): compile there.
cc_in_build() { (cd "$top_builddir" && eval "${CC:-cc} $base $1 -fsyntax-only \"\$T_TMP/$2\"") ; }

# layer FILE HEADER...: FILE (relative to the top) compiles with LAYER's flags, and does
# not with each HEADER included first.
layer() {
  _layer=$1 _file=$2; shift 2
  _f=$(flags "$_layer")
  if [ -z "$_f" ]; then fail "$_layer: no flags in the Makefile"; return; fi
  # A copy in a folder of its own, so that "..." includes resolve through the flags only.
  mkdir -p "src-$_layer"
  cp "$top_srcdir/$_file" "src-$_layer/"
  _src=src-$_layer/$(basename "$_file")
  if cc_in_build "$_f" "$_src" >"$_layer.ok.out" 2>&1; then
    ok "$_layer: $_file compiles with its layer's include path"
  else
    fail "$_layer: $_file does not compile with its layer's include path"; diag <"$_layer.ok.out"; return
  fi
  for _h in "$@"; do
    { echo "#include \"$_h\""; cat "$top_srcdir/$_file"; } >"$_src"
    if cc_in_build "$_f" "$_src" >"$_layer.up.out" 2>&1; then
      fail "$_layer: $_file still compiles with #include \"$_h\" (a layer above)"
    elif grep -q "$_h: No such file" "$_layer.up.out"; then
      ok "$_layer: #include \"$_h\" in $(basename "$_file") fails: no such file on its path"
    else
      fail "$_layer: #include \"$_h\" failed, but not for want of the file"; diag <"$_layer.up.out"
    fi
  done
}

# every_file LAYER FOLDER: each .c of FOLDER compiles with LAYER's flags alone.
every_file() {
  _f=$(flags "$1") _bad=
  for _c in "$top_srcdir/$2"/*.c; do
    mkdir -p "all-$1"
    cp "$_c" "all-$1/"
    cc_in_build "$_f" "all-$1/$(basename "$_c")" >>"all-$1.out" 2>&1 || _bad="$_bad $(basename "$_c")"
  done
  [ -z "$_bad" ] && ok "$1: every file of $2 compiles with its layer's include path" ||
    { fail "$1: files of $2 reach outside their layer:$_bad"; diag <"all-$1.out"; }
}
every_file common runtime/common
every_file desc runtime/desc
every_file wire runtime/wire
every_file marshal runtime/marshal
every_file proto runtime/proto

layer common runtime/common/gr_error.c grw_wire.h grd_desc.h grp_proto.h grc_client.h
layer desc runtime/desc/grd_common.c gr_error.h grw_wire.h grp_proto.h
layer wire runtime/wire/grw_reader.c grp_proto.h grp_limits.h grm_marshal.h grc_client.h
layer marshal runtime/marshal/grm_call.c grp_proto.h grc_client.h gsv.h
layer proto runtime/proto/grp_call.c grc_client.h gsv.h gms.h
layer client runtime/client/grc_call.c gsv.h gms.h
layer daemon runtime/daemon/gdm_conn.c grc_client.h gsv.h gms.h
layer server runtime/server/gsv_call.c grc_client.h gms.h
layer metaserver metaserver/gms_decide.c grc_client.h gsv.h
finish
