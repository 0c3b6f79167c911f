#!/usr/bin/env bash
# setup.sh: makes a fresh Debian bookworm machine ready for GridRPC and builds it.
# Installs the Debian packages, the ANTLR 4.9 tool jar (from Maven Central) and the
# Python packages the project uses, then bootstraps, configures and builds in build/.
# Idempotent and quiet: when everything is present it only brings the build up to date.
# Environment: BUILD_DIR (default build), CONFIGURE_FLAGS (extra ./configure options).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
log=$(mktemp "${TMPDIR:-/tmp}/gridrpc-setup.XXXXXX")
trap 'rm -f "$log"' EXIT

# Runs a command quietly; on failure shows its output and stops.
quiet() {
  if ! "$@" >"$log" 2>&1; then
    echo "setup: failed: $*" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "setup: need root to run: $* (install sudo or run as root)" >&2; exit 1; fi
}

packages=(build-essential autoconf automake libtool libtool-bin pkg-config autoconf-archive
  gfortran libtirpc-dev libopenblas-dev liblapacke-dev libsqlite3-dev sqlite3
  googletest libgtest-dev libantlr4-runtime-dev default-jre-headless
  python3-dev python3-pip iproute2 clang libclang-rt-14-dev clang-format git
  libmicrohttpd-dev chromium libnetfilter-queue-dev iptables libssl-dev openssl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  quiet as_root apt-get update -q
  # unsafe-io: dpkg skips its fsync per file, a third of the install time on a fresh root
  quiet as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Options::=--force-unsafe-io "${missing[@]}"
fi

# The ANTLR tool must match the C++ runtime (4.9); Debian's antlr4 package is 4.7. The jar
# comes straight from Maven Central and must have the digest below (Maven itself and its
# Java dependencies took a minute of a fresh machine's setup for this one file).
jar_dir=${ANTLR_JAR_DIR:-/usr/local/share/java}
jar=$jar_dir/antlr4-4.9-complete.jar
jar_url=https://repo1.maven.org/maven2/org/antlr/antlr4/4.9/antlr4-4.9-complete.jar
jar_sha256=bd11b2464bc8aee5f51b119dff617101b77fa729540ee7f08241a6a672e6bc81
if [ ! -f "$jar" ]; then
  echo "setup: fetching the ANTLR 4.9 tool jar"
  tmp=$(mktemp -d)
  quiet python3 - "$jar_url" "$jar_sha256" "$tmp/antlr.jar" <<'PY'
import hashlib, sys, urllib.request
url, want, out = sys.argv[1:]
data = urllib.request.urlopen(url, timeout=60).read()
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"{url}: sha256 {got}, expected {want}: a changed or damaged download")
open(out, "wb").write(data)
PY
  quiet as_root mkdir -p "$jar_dir"
  quiet as_root cp "$tmp/antlr.jar" "$jar"
  rm -rf "$tmp"
fi

# Python: the binding (built offline with setuptools), its tests and the plots use these,
# within the bounds of scripts/python-requirements.txt (checked here without pip, which
# is slow even when everything is present).
py=${PYTHON:-python3}
reqs=scripts/python-requirements.txt
if ! "$py" - "$reqs" >/dev/null 2>&1 <<'PY'
import re, sys
from importlib.metadata import version
def key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, spec = re.match(r"([A-Za-z0-9_.-]+)(.*)", line).groups()
    have = key(version(name))
    for op, v in re.findall(r"(>=|<)\s*([0-9.]+)", spec):
        if (op == ">=" and have < key(v)) or (op == "<" and have >= key(v)):
            sys.exit(1)
PY
then
  echo "setup: installing Python packages ($(grep -v '^#' "$reqs" | tr '\n' ' '))"
  pip_flags=(-q --disable-pip-version-check)
  "$py" -m pip install "${pip_flags[@]}" --help 2>/dev/null | grep -q break-system-packages &&
    [ -f "$("$py" -c 'import sys, sysconfig; print(sysconfig.get_path("stdlib"))')/EXTERNALLY-MANAGED" ] &&
    pip_flags+=(--break-system-packages)
  quiet "$py" -m pip install "${pip_flags[@]}" -r "$reqs"
fi

# Bootstrap, configure and build.
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
  echo "setup: bootstrapping"
  quiet ./bootstrap
fi
build=${BUILD_DIR:-build}
mkdir -p "$build"
if [ ! -f "$build/Makefile" ] || [ configure -nt "$build/config.status" ]; then
  echo "setup: configuring in $build/"
  # shellcheck disable=SC2086
  (cd "$build" && quiet "$top/configure" ANTLR_JAR="$jar" ${CONFIGURE_FLAGS:-})
fi
quiet make -C "$build" -j"$(nproc)"
echo "setup: ready: programs in $build/ (idlc/idlc, gridrpc-desc)"
