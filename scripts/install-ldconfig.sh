#!/bin/sh
# install-ldconfig.sh: make install's (and make uninstall's) hook for the dynamic
# linker's cache. A library installed in a directory the linker searches is found by
# programs only once ldconfig has run, so after an install to the real root as root it
# runs ldconfig; then a program built with `pkg-config --cflags --libs gridrpc` runs
# without LD_LIBRARY_PATH. A staged install (DESTDIR), an install by another user, or a
# libdir the linker does not search leaves the system alone and says what to do instead.
#
# Usage: install-ldconfig.sh install|uninstall DESTDIR LIBDIR
# LDCONFIG (default: ldconfig on PATH, else /sbin/ldconfig) may name another program.
what=$1 destdir=$2 libdir=$3

# A staged install is someone else's to register (a package's postinst runs ldconfig).
[ -n "$destdir" ] && exit 0

if [ -z "$LDCONFIG" ]; then
  LDCONFIG=$(command -v ldconfig 2>/dev/null)
  [ -z "$LDCONFIG" ] && for p in /sbin/ldconfig /usr/sbin/ldconfig; do [ -x "$p" ] && LDCONFIG=$p && break; done
fi
# Not a glibc system (or not Linux): the runtime linker has no cache to refresh.
[ -z "$LDCONFIG" ] && exit 0

# The directories the linker searches: ldconfig -v lists them as "DIR: (from FILE:LINE)",
# without rebuilding the cache (-N) or touching links (-X).
searched=no
for d in $("$LDCONFIG" -v -N -X 2>/dev/null | sed -n 's/^\(\/[^:]*\):.*/\1/p'); do
  if [ "$d" = "$libdir" ] || { [ -d "$d" ] && [ -d "$libdir" ] && [ "$d" -ef "$libdir" ]; }; then searched=yes; break; fi
done

if [ "$searched" = no ]; then
  [ "$what" = install ] && cat <<EOF
gridrpc: libgridrpc is installed in $libdir, which the dynamic linker does not search.
gridrpc: programs linked with it need one of: LD_LIBRARY_PATH=$libdir when they run;
gridrpc: -Wl,-rpath,$libdir when they are linked; or, as root,
gridrpc:   echo $libdir > /etc/ld.so.conf.d/gridrpc.conf && ldconfig
EOF
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  [ "$what" = install ] && echo "gridrpc: run 'ldconfig' as root, so that programs find libgridrpc in $libdir"
  exit 0
fi
echo "gridrpc: $LDCONFIG (the dynamic linker's cache now $([ "$what" = install ] && echo has || echo drops) libgridrpc in $libdir)"
"$LDCONFIG" || echo "gridrpc: $LDCONFIG failed: run it by hand, as root" >&2
exit 0
