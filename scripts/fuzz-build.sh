#!/bin/bash
# fuzz-build.sh: builds the libFuzzer targets of tests/fuzz/ with clang, under ASan and
# UBSan (any finding aborts), into build-fuzz/: the runtime is compiled once into
# build-fuzz/obj (again only where a source is newer) and archived, each target is
# linked against the archive. scripts/test.sh's fuzz tier and scripts/fuzz-long.sh use it.
#
#     scripts/fuzz-build.sh [TARGET...]      (default: every target; FUZZ_JOBS compilers, 2)
#
# Needs build/ configured and built first (config.h, build/stubs/gen/test_stub.c, the
# module build/stubs/.libs/test.so that the server target loads). Prints
# each target's binary as it is linked; exits non-zero when one fails to build (its
# compiler output is in build-fuzz/TARGET.build).
set -uo pipefail
cd "$(dirname "$0")/.."
all_targets="msg desc meta conf ogf opts idl server"
targets=${*:-$all_targets}
out=build-fuzz
jobs=${FUZZ_JOBS:-2}
mkdir -p $out/obj

if [ ! -f build/config.h ] || [ ! -f build/stubs/gen/test_stub.c ]; then
  echo "fuzz-build: build/ is not built: run ./configure and make in build/ first (scripts/test.sh's check tier does)" >&2
  exit 1
fi

san="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
inc="-Ibuild -Iinclude -Iruntime/desc -Iruntime/common -Iruntime/wire -Iruntime/marshal -Iruntime/proto
     -Iruntime/client -Iruntime/ogf -Iruntime/daemon -Iruntime/server -Imetaserver
     $(pkg-config --cflags libtirpc openssl sqlite3 2>/dev/null)"
libs="$(pkg-config --libs libtirpc openssl sqlite3 2>/dev/null) -lpthread -lm -ldl"
# ANTLR 4.9's headers do not compile with clang: Vocabulary's const members have no
# initializer, which makes InterpreterData's inline constructor ill-formed for clang
# (GCC accepts it). This build uses a copy of them with empty initializers added; the
# layout and the library's own compiled constructors are unchanged.
antlr_dir=${ANTLR4_INCLUDE:-/usr/include/antlr4-runtime}
if [ ! -f $out/antlr4-runtime/Vocabulary.h ] || [ $antlr_dir/Vocabulary.h -nt $out/antlr4-runtime/Vocabulary.h ]; then
  rm -rf $out/antlr4-runtime
  cp -r "$antlr_dir" $out/antlr4-runtime &&
    sed -i 's/\(std::vector<std::string> const _[A-Za-z]*\);/\1{};/' $out/antlr4-runtime/Vocabulary.h
fi
antlr_inc="-isystem $out/antlr4-runtime"

# The runtime the targets call: every decoder and parser, not the daemons' main loops.
core_c="runtime/version.c $(ls runtime/desc/*.c runtime/common/*.c runtime/wire/*.c runtime/marshal/*.c \
  runtime/proto/*.c runtime/client/*.c runtime/ogf/*.c runtime/daemon/*.c) $(ls runtime/server/gsv_*.c | grep -v -e gsv_main.c -e gsv_exec_main.c)
  $(ls metaserver/gms_*.c | grep -v -e gms_main.c -e gms_http.c)"
idl_cxx="idlc/src/diag.cpp idlc/src/preprocess.cpp idlc/src/parse.cpp idlc/src/sema.cpp idlc/src/printer.cpp
  idlc/src/emit_descriptor.cpp idlc/src/emit_stub.cpp idlc/src/emit_client.cpp $(ls idlc/gen/*.cpp)"

# compile SRC: the object in obj/ (path with '/' as '_'), rebuilt when the source or
# any header of the tree is newer. Coverage instrumentation without libFuzzer's main.
compile() {
  local src=$1 obj=$out/obj/$(echo "$1" | tr / _).o
  if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ -z "$(find include runtime metaserver idlc/src -name '*.h' -newer "$obj" | head -1)" ]; then
    return 0
  fi
  case $src in
    *.cpp) clang++ -std=c++17 $san -fsanitize=fuzzer-no-link $inc -Iidlc/gen -Iidlc/src $antlr_inc -w -c "$src" -o "$obj" ;;
    *) clang -std=gnu11 $san -fsanitize=fuzzer-no-link $inc -D_GNU_SOURCE -w -c "$src" -o "$obj" ;;
  esac
}
export -f compile
export out san inc antlr_inc

need_idl=0
case " $targets " in *" idl "*) need_idl=1 ;; esac
srcs=$core_c
[ $need_idl = 1 ] && srcs="$srcs $idl_cxx"
# shellcheck disable=SC2086
if ! printf '%s\n' $srcs | xargs -P "$jobs" -I{} bash -c 'compile {}' >$out/core.build 2>&1; then
  tail -30 $out/core.build
  echo "fuzz-build: the runtime does not build with clang (build-fuzz/core.build)" >&2
  exit 1
fi
rm -f $out/libfuzzcore.a
# shellcheck disable=SC2046
ar rcs $out/libfuzzcore.a $(for s in $core_c; do echo "$out/obj/$(echo "$s" | tr / _).o"; done)

failed=0
for t in $targets; do
  case $t in
    msg)  extra="-DGRIDRPC_STUB_NO_ENTRY build/stubs/gen/test_stub.c" ;;
    # The module (build/stubs/.libs/test.so) calls back into the server, as in gridrpcd.
    server) extra="-rdynamic -Wl,--whole-archive $out/libfuzzcore.a -Wl,--no-whole-archive" ;;
    *)    extra= ;;
  esac
  if [ $t = idl ]; then
    # shellcheck disable=SC2046
    cmd="clang++ -std=c++17 $san -fsanitize=fuzzer $inc -Iidlc/gen -Iidlc/src $antlr_inc tests/fuzz/idl_fuzz.cpp
         $(for s in $idl_cxx; do echo "$out/obj/$(echo "$s" | tr / _).o"; done) $out/libfuzzcore.a -lantlr4-runtime $libs"
  elif [ -f tests/fuzz/${t}_fuzz.c ]; then
    cmd="clang -std=gnu11 $san -fsanitize=fuzzer $inc $extra tests/fuzz/${t}_fuzz.c $out/libfuzzcore.a $libs"
  else
    echo "fuzz-build: no target '$t' (targets: $all_targets)" >&2
    failed=1
    continue
  fi
  rm -f $out/$t # a target that no longer builds must not run its old binary
  # shellcheck disable=SC2086
  if $cmd -o $out/$t >$out/$t.build 2>&1; then
    echo "$out/$t"
  else
    tail -20 $out/$t.build
    echo "fuzz-build: $t does not build (build-fuzz/$t.build)" >&2
    failed=1
  fi
done
exit $failed
