"""Compile the generated C and load it (cffi in ABI mode, the system C compiler).

The shared object is cached under a hash of its source (and the compiler command), so a
kernel checked twice is compiled once.  ``NativeUnavailable`` says, in words, what is
missing (cffi, a C compiler) or what failed; the engine turns it into exit code 2 or an
UNKNOWN verdict, never a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

#: the functions of ``bfs.c`` the engine calls
CDEF = """
int pp_search(int64_t max_states, double timeout, int want_edges, int deadlock_rank);
void pp_free(void);
void pp_set_reduce(int on);
void pp_set_por(int (*f)(int32_t *, int, int32_t *, int8_t *));
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

#: the line between the units of a generated program (``ccode.generate``, ``split_units``)
UNIT = "/*@pp-unit@*/"

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


def _ffi(cdef: str = CDEF) -> Any:
    """A cffi ``FFI`` declaring ``cdef`` (the engine's interface by default)."""
    try:
        import cffi
    except ImportError as e:
        raise NativeUnavailable("the native engine needs cffi: pip install 'pipeproof[native]'") \
            from e
    ffi = cffi.FFI()
    ffi.cdef(cdef)
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


def jobs() -> int:
    """Compiler processes run at once: ``$PIPEPROOF_NATIVE_JOBS``, else 1 (one file).

    Not the CPU count by default: on the shared 2-core machine of
    ``bench/results/native.md`` two processes compiled a kernel more slowly than one
    (p9-fixed: 8.2-9.7 s against 6.8-7.4 s); where cores are idle, more may pay."""
    n = os.environ.get("PIPEPROOF_NATIVE_JOBS")
    if n and n.strip().isdigit() and int(n) >= 1:
        return int(n)
    return 1


def split_units(source: str, n: int) -> list[str]:
    """``source`` (``ccode.generate``'s, cut by ``UNIT`` lines) as at most ``n`` C files:
    each the prelude and a run of consecutive units, the runs of about equal size
    (the compile time grows with the code).  A source without units stays one file."""
    prelude, *units = source.split(UNIT + "\n")
    if n <= 1 or len(units) <= 1:
        return [source]
    total = sum(len(u) for u in units)
    files, cur, size = [], [], 0
    for u in units:
        cur.append(u)
        size += len(u)
        if size >= total * (len(files) + 1) / n and len(files) < n - 1:
            files.append(prelude + "".join(cur))
            cur = []
    if cur:
        files.append(prelude + "".join(cur))
    return files


def _compile(cc: str, sources: list[str], tmp: Path, out: Path,
             timeout: Optional[float], flags: Optional[list[str]] = None) -> None:
    """``sources`` compiled (each file by its own compiler process, all at once) and
    linked into the shared object ``out`` (with ``flags``, else ``CFLAGS``)."""
    cflags = CFLAGS if flags is None else flags
    # no limit for an infinite budget: the OS waits take none
    limit = None if timeout is None or math.isinf(timeout) else max(timeout, 1.0)
    t0 = time.monotonic()
    if len(sources) == 1:
        src = tmp / "k.c"
        src.write_text(sources[0])
        cmds = [[cc, *cflags, str(src), "-o", str(out)]]
    else:
        cmds = []
        for j, text in enumerate(sources):
            src = tmp / f"k{j}.c"
            src.write_text(text)
            cmds.append([cc, *cflags, "-c", str(src), "-o", str(tmp / f"k{j}.o")])
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for c in cmds]
    try:
        errs = []
        for p in procs:
            left = None if limit is None else max(limit - (time.monotonic() - t0), 0.01)
            _out, err = p.communicate(timeout=left)
            if p.returncode != 0:
                errs.append(err)
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.wait()
        raise BuildFailed(f"timeout: compiling the native successor function took "
                          f"more than the {limit:.0f} s left") from None
    if errs:
        raise BuildFailed(f"compiling the native successor function failed ({cc}): "
                          f"{_tail(errs[0])}")
    if len(sources) > 1:
        objs = [str(tmp / f"k{j}.o") for j in range(len(sources))]
        r = subprocess.run([cc, *cflags, *objs, "-o", str(out)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise BuildFailed(f"linking the native successor function failed ({cc}): "
                              f"{_tail(r.stderr)}")


#: objects loaded in this process, by path, the most recently used last: a kernel checked
#: again reuses its library (cffi resolves a function on its first call through a new
#: handle: tens of us each, and the first calls pay the object's page faults)
_OPEN: dict[str, Any] = {}
#: libraries kept loaded while no search uses them
OPEN_KEPT = 8
#: paths whose library a search is using now (its globals hold that search's state)
_BUSY: set[str] = set()
_LOCK = threading.Lock()


@contextlib.contextmanager
def loaded(source: str, timeout: Optional[float] = None) -> Iterator[tuple[Any, Any]]:
    """(ffi, library) of ``source`` for the ``with`` block, compiled unless the cache has
    it; a compile that takes longer than ``timeout`` seconds is stopped (``BuildFailed``).
    The source's units (``split_units``) are compiled by ``jobs()`` compiler processes at
    once (one file by default).

    The search keeps its state in the library's globals, and the dynamic loader gives
    one copy of them per path: while one block uses a library, another thread that asks
    for the same source gets a private copy of the object (loaded from a file of its
    own), never the globals of a search in progress."""
    ffi = _ffi()
    cc = compiler()
    digest = hashlib.sha256("\0".join([cc, *CFLAGS, source]).encode()).hexdigest()[:24]
    d = cache_dir()
    so = d / f"pp_{digest}.so"
    if not so.exists():
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            out = Path(tmp) / "k.so"
            _compile(cc, split_units(source, jobs()), Path(tmp), out, timeout)
            os.replace(out, so)  # atomic: a concurrent build leaves one complete file
    key = str(so)
    with _LOCK:
        private = key in _BUSY
        if not private:
            _BUSY.add(key)
    if private:
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            copy = Path(tmp) / so.name
            shutil.copyfile(so, copy)
            lib = _dlopen(ffi, copy)  # mapped: the file may go
        try:
            yield ffi, lib
        finally:
            ffi.dlclose(lib)
        return
    try:
        with _LOCK:
            lib = _OPEN.pop(key, None)
        if lib is None:
            lib = _dlopen(ffi, so)
        with _LOCK:
            _OPEN[key] = lib  # the most recent last
            for old in [k for k in _OPEN if k not in _BUSY][:-OPEN_KEPT]:
                del _OPEN[old]  # unloaded once unreferenced
        yield ffi, lib
    finally:
        with _LOCK:
            _BUSY.discard(key)


def _dlopen(ffi: Any, path: Path) -> Any:
    try:
        return ffi.dlopen(str(path))
    except OSError as e:
        raise BuildFailed(f"loading the native successor function failed: {e}") from e


def _tail(text: Optional[str], n: int = 400) -> str:
    text = (text or "").strip()
    return text[-n:]
