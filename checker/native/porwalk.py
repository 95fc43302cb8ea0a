"""A warp's future under a frozen stubborn set, walked in native code (``porwalk.c``).

The first piece of the stubborn-set closure in C (issue 26): ``por._Ctx._future``'s walk
and ``_walk_result`` over the integer tables of ``checker/por_tables.py``.  What stays
in Python for now is everything state-dependent: which blocking instructions stay
blocked while T is frozen comes in as an answer per pc (``walk``'s ``blocked``), as
``_Ctx._blocked_frozen`` gives it.  tests/test_por_walk.py compares the two walks on
every future the Python closure computes in bounded searches.

Compiled once per machine (the source does not depend on the kernel: the tables are
data), with the native engine's compiler and cache (``build``).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any, Optional

from ..por_tables import KINDS, PorTables
from .build import BuildFailed, NativeUnavailable, _compile, cache_dir, compiler

CDEF = """
typedef struct {
    int32_t n_agents;
    int64_t n_pairs, n_bars;
    const int64_t *pc_base;
    const int64_t *blocking, *acyclic;
    const int64_t *seg_fp_off, *seg_fp, *seg_fp_nc_off, *seg_fp_nc;
    const int64_t *seg_next_off, *seg_next;
    const int64_t *seg_ops_off, *seg_ops;
    const int64_t *seg_arr_off, *seg_arr;
} pw_tables;
typedef struct {
    uint8_t *fp;
    int64_t *counts;
    int64_t *ops;
    int64_t ops_cap;
    int64_t n_ops;
    int32_t looped;
    int32_t n_visited;
} pw_result;
int pw_walk(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
            const int8_t *blocked, pw_result *r);
"""

_LIB: list = []


def _library() -> tuple[Any, Any]:
    """(ffi, library) of ``porwalk.c``, compiled unless the cache has it."""
    if _LIB:
        return _LIB[0]
    try:
        import cffi
    except ImportError as e:
        raise NativeUnavailable("the native engine needs cffi: pip install 'pipeproof[native]'") \
            from e
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    source = Path(__file__).with_name("porwalk.c").read_text()
    cc = compiler()
    digest = hashlib.sha256(("porwalk\0" + cc + "\0" + source).encode()).hexdigest()[:24]
    d = cache_dir()
    so = d / f"pw_{digest}.so"
    if not so.exists():
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            out = Path(tmp) / "pw.so"
            _compile(cc, [source], Path(tmp), out, None)
            out.replace(so)
    try:
        lib = ffi.dlopen(str(so))
    except OSError as e:
        raise BuildFailed(f"loading the native stubborn-set walk failed: {e}") from e
    _LIB.append((ffi, lib))
    return ffi, lib


class NativeWalk:
    """``pw_walk`` over one system's ``PorTables``."""

    def __init__(self, tables: PorTables):
        self.t = tables
        ffi, lib = self.ffi, self.lib = _library()
        flat = tables.flat()
        self._keep = []  # the arrays the C struct points into
        st = self.c_tables = ffi.new("pw_tables *")
        st.n_agents = len(tables.acyclic)
        st.n_pairs = len(tables.objects) * tables.n_modes
        st.n_bars = len(tables.bars)
        for name in ("pc_base", "blocking", "acyclic", "seg_fp_off", "seg_fp", "seg_fp_nc_off",
                     "seg_fp_nc", "seg_next_off", "seg_next", "seg_ops_off", "seg_ops",
                     "seg_arr_off", "seg_arr"):
            arr = ffi.new("int64_t[]", flat[name] or [0])
            self._keep.append(arr)
            setattr(st, name, arr)
        self.max_pcs = max((len(r) for r in tables.blocking), default=0)
        n_ops = sum(len(o) for rows in tables.seg_ops for o in rows if o) + 1
        res = self.c_result = ffi.new("pw_result *")
        self._fp = ffi.new("uint8_t[]", max(st.n_pairs, 1))
        self._counts = ffi.new("int64_t[]", max(st.n_bars, 1))
        self._ops = ffi.new("int64_t[]", 4 * n_ops)
        res.fp, res.counts, res.ops, res.ops_cap = self._fp, self._counts, self._ops, n_ops
        self._blocked = ffi.new("int8_t[]", max(self.max_pcs, 1))

    def walk(self, a: int, start: int, frozen_cl: bool,
             blocked: dict[int, bool]) -> Optional[tuple[frozenset, dict, Optional[tuple], bool]]:
        """(footprint, arrival counts, barrier operations or None, looped) of warp ``a``'s
        walk from ``start``, where ``blocked`` answers for the blocking pcs it reaches;
        None where it reaches one without an answer."""
        b = self._blocked
        n = len(self.t.blocking[a])
        for pc in range(n):
            b[pc] = -1
        for pc, x in blocked.items():
            b[pc] = 1 if x else 0
        rc = self.lib.pw_walk(self.c_tables, a, start, int(frozen_cl), b, self.c_result)
        if rc == -1:
            return None
        if rc != 0:
            raise RuntimeError(f"pw_walk failed ({rc})")
        t = self.t
        nm = t.n_modes
        fpb = self.ffi.buffer(self._fp, len(t.objects) * nm)[:]
        fp = frozenset((t.objects[p // nm], t.modes[p % nm])
                       for p, x in enumerate(fpb) if x)
        counts = {t.bars[i]: self._counts[i] for i in range(len(t.bars)) if self._counts[i] >= 0}
        res = self.c_result
        ops = None
        if res.n_ops >= 0:
            o = self._ops
            ops = tuple((t.bars[o[4 * k]], KINDS[o[4 * k + 1]], o[4 * k + 2],
                         o[4 * k + 3]) for k in range(res.n_ops))
        return fp, counts, ops, bool(res.looped)
