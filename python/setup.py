"""setup.py: builds the gridrpc._core C extension against libgridrpc.

Where libgridrpc comes from, in order:

1. GRIDRPC_BUILD_DIR=<top build dir of the autotools tree>: the library in
   $GRIDRPC_BUILD_DIR/.libs (linked with an rpath there, so nothing needs installing),
   the headers in the source tree's include/ (GRIDRPC_SRC_DIR, else abs_top_srcdir
   from the build dir's Makefile, else the tree this file lives in);
2. pkg-config gridrpc (an installed libgridrpc; PKG_CONFIG_PATH for a custom prefix;
   an rpath to its libdir is added as well).

Everything else (name, version, package data) is in pyproject.toml.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent


def _src_dir(build: Path) -> Path:
    env = os.environ.get("GRIDRPC_SRC_DIR")
    if env:
        return Path(env)
    makefile = build / "Makefile"
    if makefile.is_file():
        m = re.search(r"^abs_top_srcdir = (.*)$", makefile.read_text(errors="replace"), re.M)
        if m and m.group(1).strip():
            return Path(m.group(1).strip())
    return HERE.parent


def _from_build_dir(build: Path) -> dict[str, list[str]]:
    libs = build / ".libs"
    if not (libs / "libgridrpc.so").exists() and not list(libs.glob("libgridrpc*.dylib")):
        raise SystemExit(f"gridrpc: no libgridrpc in {libs}: build the C tree first (make) "
                         "or unset GRIDRPC_BUILD_DIR to use an installed one (pkg-config)")
    include = _src_dir(build) / "include"
    if not (include / "gridrpc.h").is_file():
        raise SystemExit(f"gridrpc: no gridrpc.h in {include}: set GRIDRPC_SRC_DIR to the source tree")
    return {
        "include_dirs": [str(include)],
        "library_dirs": [str(libs)],
        "libraries": ["gridrpc"],
        "runtime_library_dirs": [str(libs)],
    }


def _from_pkg_config() -> dict[str, list[str]]:
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", "gridrpc"], check=True, capture_output=True,
                                text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs", "gridrpc"], check=True, capture_output=True,
                              text=True).stdout
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "gridrpc"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("gridrpc: libgridrpc not found: install it (make install; pkg-config gridrpc "
                         "must work, PKG_CONFIG_PATH for a custom prefix) or set GRIDRPC_BUILD_DIR to "
                         f"the top build directory of the C tree ({e})") from None
    out: dict[str, list[str]] = {"include_dirs": [], "library_dirs": [], "libraries": [],
                                 "runtime_library_dirs": [libdir] if libdir else [],
                                 "extra_compile_args": [], "extra_link_args": []}
    for tok in shlex.split(cflags):
        (out["include_dirs"].append(tok[2:]) if tok.startswith("-I") else out["extra_compile_args"].append(tok))
    for tok in shlex.split(libs):
        if tok.startswith("-L"):
            out["library_dirs"].append(tok[2:])
        elif tok.startswith("-l"):
            out["libraries"].append(tok[2:])
        else:
            out["extra_link_args"].append(tok)
    return out


def _flags() -> dict[str, list[str]]:
    build = os.environ.get("GRIDRPC_BUILD_DIR")
    flags = _from_build_dir(Path(build).resolve()) if build else _from_pkg_config()
    flags.setdefault("extra_compile_args", []).extend(["-Wall", "-Wextra"])
    return flags


# The extension is one C file per thing it serves (src/gridrpc/_core.c says which).
CORE_SOURCES = [f"src/gridrpc/{name}.c" for name in ("_core", "_core_calls", "_core_convert", "_core_data",
                                                     "_core_errors", "_core_interrupt", "_core_settings", "_core_txn")]

setup(ext_modules=[Extension("gridrpc._core", sources=CORE_SOURCES, depends=["src/gridrpc/_core.h"],
                             **_flags())])
