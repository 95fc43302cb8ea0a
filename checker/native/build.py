"""Compile the generated C and load it (cffi in ABI mode, the system C compiler).

The shared object is cached under a hash of its source (and the compiler command), so a
kernel checked twice is compiled once.  ``NativeUnavailable`` says, in words, what is
missing (cffi, a C compiler) or what failed; the engine turns it into exit code 2 or an
UNKNOWN verdict, never a traceback.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional

#: the functions of ``bfs.c`` the engine calls
CDEF = """
int pp_search(int64_t max_states, double timeout, int want_edges, int deadlock_rank);
void pp_free(void);
void pp_set_reduce(int on);
int pp_acyclic(void);
int64_t pp_nstates(void);
int64_t pp_ntrans(void);
int32_t pp_maxdepth(void);
int32_t pp_cur_depth(void);
int64_t pp_ncand(void);
const int64_t *pp_cands(void);
int64_t pp_nedges(void);
const int32_t *pp_edges(void);
int32_t pp_parent(int64_t id);
int32_t pp_ptid(int64_t id);
int32_t pp_depth(int64_t id);
int32_t pp_ovf_state(void);
int32_t pp_ovf_tid(void);
void pp_state(int64_t id, int32_t *out);
int pp_nkeys(void);
"""

CFLAGS = ["-O1", "-shared", "-fPIC", "-fwrapv", "-w", "-Werror=implicit-function-declaration"]


class NativeUnavailable(Exception):
    """The native engine cannot run here (the message says why and what to install)."""


class BuildFailed(Exception):
    """The C compiler rejected the generated program (an UNKNOWN, not a usage error)."""


def core_source() -> str:
    """The search (``bfs.c``) appended to every generated program."""
    return (Path(__file__).with_name("bfs.c")).read_text()


def compiler() -> str:
    """The C compiler: ``$CC``, else ``cc``, else ``gcc``."""
    for c in (os.environ.get("CC"), "cc", "gcc"):
        if c and shutil.which(c):
            return c
    raise NativeUnavailable("the native engine needs a C compiler (cc or gcc, or set CC)")


def _ffi() -> Any:
    try:
        import cffi
    except ImportError as e:
        raise NativeUnavailable("the native engine needs cffi: pip install 'pipeproof[native]'") \
            from e
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    return ffi


def unavailable() -> Optional[str]:
    """Why the native engine cannot run here (``NativeUnavailable``'s message), or None
    where cffi and a C compiler are both present; compiles nothing."""
    try:
        compiler()
        import cffi  # noqa: F401
    except NativeUnavailable as e:
        return str(e)
    except ImportError:
        return "the native engine needs cffi: pip install 'pipeproof[native]'"
    return None


def cache_dir() -> Path:
    base = os.environ.get("PIPEPROOF_NATIVE_CACHE")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pipeproof" / "native"


def load(source: str, timeout: Optional[float] = None) -> tuple[Any, Any]:
    """(ffi, library) of ``source``, compiled unless the cache has it; a compile that
    takes longer than ``timeout`` seconds is stopped (``BuildFailed``)."""
    ffi = _ffi()
    cc = compiler()
    digest = hashlib.sha256("\0".join([cc, *CFLAGS, source]).encode()).hexdigest()[:24]
    d = cache_dir()
    so = d / f"pp_{digest}.so"
    if not so.exists():
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            src = Path(tmp) / "k.c"
            src.write_text(source)
            out = Path(tmp) / "k.so"
            try:
                r = subprocess.run([cc, *CFLAGS, str(src), "-o", str(out)],
                                   capture_output=True, text=True,
                                   # no limit for an infinite budget: the OS wait takes none
                                   timeout=None if timeout is None or math.isinf(timeout)
                                   else max(timeout, 1.0))
            except subprocess.TimeoutExpired:
                raise BuildFailed(f"timeout: compiling the native successor function took "
                                  f"more than the {max(timeout or 0, 1.0):.0f} s left") from None
            if r.returncode != 0:
                raise BuildFailed(f"compiling the native successor function failed "
                                        f"({cc}): {_tail(r.stderr)}")
            os.replace(out, so)  # atomic: a concurrent build leaves one complete file
    try:
        return ffi, ffi.dlopen(str(so))
    except OSError as e:
        raise BuildFailed(f"loading the native successor function failed: {e}") from e


def _tail(text: Optional[str], n: int = 400) -> str:
    text = (text or "").strip()
    return text[-n:]
