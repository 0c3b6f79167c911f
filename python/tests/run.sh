#!/bin/sh
# run.sh: the Python binding's tests for make check, in TAP (one line per pytest test).
# Installs the gridrpc package from the tree with pip into a temporary directory (built
# against the build tree's libgridrpc: GRIDRPC_BUILD_DIR), then runs python/tests with
# pytest against real gridrpcd servers. Nothing is written into the source tree.
#
# Environment (make check sets them): top_srcdir, top_builddir, GRIDRPCD,
# GRIDRPC_TEST_MODULES; PYTHON (default python3), which needs numpy, pytest and, for
# pip's offline build, setuptools and wheel (scripts/setup.sh installs them). Without
# setuptools/wheel pip falls back to an isolated build, which fetches setuptools.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${top_builddir:-$srcdir/build}
py=${PYTHON:-python3}
GRIDRPCD=${GRIDRPCD:-$builddir/gridrpcd}
GRIDRPC_TEST_MODULES=${GRIDRPC_TEST_MODULES:-$builddir/stubs/.libs}
export GRIDRPCD GRIDRPC_TEST_MODULES
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gridrpc-py.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

bail() { # bail REASON [LOGFILE]: one failing test line
  echo "1..1"
  echo "not ok 1 python: $1"
  [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -40
  exit 1
}

# A sanitizer build's libgridrpc cannot be loaded into a plain Python interpreter.
if [ -f "$builddir/Makefile" ] && grep -q '^SAN_FLAGS = .*-fsanitize' "$builddir/Makefile"; then
  echo "1..0 # SKIP libgridrpc is built with sanitizers: the Python binding is tested in a plain build"
  exit 0
fi
"$py" -c 'import numpy, pytest' >"$tmp/log" 2>&1 ||
  bail "$py lacks numpy or pytest (scripts/setup.sh installs them)" "$tmp/log"

# Build from a copy: pip and setuptools write build/ and *.egg-info next to setup.py.
mkdir "$tmp/src"
(cd "$srcdir/python" && tar cf - --exclude=build --exclude='*.egg-info' --exclude=__pycache__ --exclude=.pytest_cache .) |
  (cd "$tmp/src" && tar xf -) || bail "cannot copy $srcdir/python"
export GRIDRPC_BUILD_DIR="$builddir" GRIDRPC_SRC_DIR="$srcdir" PIP_DISABLE_PIP_VERSION_CHECK=1 \
  PIP_ROOT_USER_ACTION=ignore PYTHONDONTWRITEBYTECODE=1
if ! "$py" -m pip install -q --no-build-isolation --no-deps --no-index --target "$tmp/site" "$tmp/src" \
  >"$tmp/pip.log" 2>&1; then
  echo "# pip install --no-build-isolation failed (setuptools and wheel missing?); trying an isolated build" >&2
  rm -rf "$tmp/site"
  "$py" -m pip install -q --no-deps --target "$tmp/site" "$tmp/src" >>"$tmp/pip.log" 2>&1 ||
    bail "pip install of python/ failed" "$tmp/pip.log"
fi

cd "$tmp/src" || bail "cd $tmp/src"
to=
command -v timeout >/dev/null 2>&1 && to="timeout 900"
PYTHONPATH="$tmp/site" $to "$py" -m pytest -p no:cacheprovider -q --junitxml="$tmp/junit.xml" tests \
  >"$tmp/pytest.log" 2>&1
rc=$?

# One TAP line per test case from the JUnit XML; any other failure is one more line.
"$py" - "$tmp/junit.xml" "$rc" "$tmp/pytest.log" <<'EOF'
import sys
import xml.etree.ElementTree as ET

path, rc, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines, failed, n = [], 0, 0
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError):
    cases = []
for case in cases:
    name = (case.get("classname", "") + "::" + case.get("name", "")).lstrip(":")
    bad = case.find("failure")
    if bad is None:
        bad = case.find("error")
    skip = case.find("skipped")
    n += 1  # results only: a failure's comment lines do not shift the numbers
    if bad is not None:
        failed += 1
        lines.append(f"not ok {n} {name}")
        text = (bad.get("message") or "") + "\n" + (bad.text or "")
        lines += ["# " + t for t in text.strip().splitlines()[-30:]]
    elif skip is not None:
        lines.append(f"ok {n} {name} # SKIP {skip.get('message', '')}".rstrip())
    else:
        lines.append(f"ok {n} {name}")
extra = None
if rc == 5 or n == 0:
    extra = f"pytest ran no tests (exit status {rc})"
elif rc != 0 and failed == 0:
    extra = f"pytest exit status {rc}"
if extra:
    n += 1
    lines.append(f"not ok {n} {extra}")
    with open(log, errors="replace") as fh:
        lines += ["# " + t.rstrip("\n") for t in fh.readlines()[-40:]]
print(f"1..{n}")
print("\n".join(lines))
sys.exit(1 if failed or extra else 0)
EOF
