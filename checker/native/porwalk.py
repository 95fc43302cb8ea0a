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
    const int64_t *wait_bar;
} pw_tables;
typedef struct {
    uint8_t *fp;
    int64_t *counts;
    int64_t *ops;
    int64_t ops_cap;
    int64_t n_ops;
    int32_t looped;
    int32_t n_visited;
    int64_t *pairs;
    int64_t n_fp;
} pw_result;
int pw_walk(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
            const int8_t *blocked, pw_result *r);
typedef struct {
    int32_t n_units, n_words;
    const int32_t *kind;
    const int32_t *agent;
    const int32_t *pc;
    const int64_t *env_fp_off, *env_fp;
    const int64_t *env_arr_off, *env_arr;
    const int64_t *env_ops_off, *env_ops;
    const int64_t *cw_off, *cw;
    const int64_t *pending, *tx;
    const int64_t *pair_bar;
    int32_t frozen_cl;
    const uint64_t *T;
    int (*need)(int32_t a, int32_t pc, uint64_t *sets, int32_t max_sets);
    int32_t *need_kind;
    uint64_t *need_sets;
} pw_state;
typedef struct {
    uint8_t *blocked;
    uint8_t *unbounded;
    int64_t *fp_off, *fp;
    int64_t *arr_off, *arr;
    int64_t *ops_off, *ops;
    int64_t fp_cap, arr_cap, ops_cap;
    int32_t rounds;
} pw_settled;
void pw_reset(int64_t rows, int32_t *need_kind);
int pw_can_complete(int64_t pending, int64_t tx, const int64_t *ops, int64_t n_ops,
                    int64_t stride, int64_t proper_of);
int pw_settle(const pw_tables *t, pw_state *s, const int32_t *others, int32_t n_others,
              pw_result *r, pw_settled *out);
"""
#: room for the sets of one requirement (``porwalk.c`` PW_MAX_SETS) and unit bitset words
MAX_SETS = 32
MAX_WORDS = 4

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
                     "seg_arr_off", "seg_arr", "wait_bar"):
            arr = ffi.new("int64_t[]", flat[name] or [0])
            self._keep.append(arr)
            setattr(st, name, arr)
        self.max_pcs = max((len(r) for r in tables.blocking), default=0)
        n_ops = sum(len(o) for rows in tables.seg_ops for o in rows if o) + 1
        res = self.c_result = ffi.new("pw_result *")
        self._fp = ffi.new("uint8_t[]", max(st.n_pairs, 1))
        self._counts = ffi.new("int64_t[]", max(st.n_bars, 1))
        self._ops = ffi.new("int64_t[]", 4 * n_ops)
        self._pairs = ffi.new("int64_t[]", max(st.n_pairs, 1))
        res.fp, res.counts, res.ops, res.ops_cap = self._fp, self._counts, self._ops, n_ops
        res.pairs, res.n_fp = self._pairs, 0
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


class SettleUnavailable(Exception):
    """A state the native settle analysis does not take (too many units, a unit or
    object outside the tables): the caller keeps the Python analysis."""


class NativeSettle:
    """``pw_settle``: ``por._Ctx._settle_futures`` in native code, over one reducer's
    tables.  ``settle(ctx, others, T)`` returns what the Python analysis returns, in
    Python terms: the barriers kept blocked, the futures of ``others`` (footprint,
    arrival counts, operations or None) and the unbounded barriers."""

    def __init__(self, tables: PorTables):
        self.w = NativeWalk(tables)
        self.t = tables
        ffi = self.ffi = self.w.ffi
        self.lib = self.w.lib
        nm = tables.n_modes
        self.oid = {o: i for i, o in enumerate(tables.objects)}
        self.mid = {m: i for i, m in enumerate(tables.modes)}
        self.bid = {b: i for i, b in enumerate(tables.bars)}
        self.nm = nm
        pair_bar = [-1] * (len(tables.objects) * nm)
        for i, o in enumerate(tables.objects):
            if o[0] == "bar" and o[1] in self.bid:
                for m in range(nm):
                    pair_bar[i * nm + m] = self.bid[o[1]]
        self._pair_bar = ffi.new("int64_t[]", pair_bar or [0])
        self.rows = sum(len(r) for r in tables.blocking)
        self._need_kind = ffi.new("int32_t[]", max(self.rows, 1))
        self._need_sets = ffi.new("uint64_t[]", max(self.rows, 1) * MAX_SETS * MAX_WORDS)
        nb = max(len(tables.bars), 1)
        self._blocked = ffi.new("uint8_t[]", nb)
        self._unb = ffi.new("uint8_t[]", nb)
        self._ctx: Any = None
        self._cb = ffi.callback("int(int32_t, int32_t, uint64_t *, int32_t)", self._need)
        self._keep: list = []

    # ------------------------------------------------------------------ per state

    def _pairs(self, fp: frozenset) -> list[int]:
        try:
            return [self.oid[o] * self.nm + self.mid[m] for o, m in fp]
        except KeyError as e:
            raise SettleUnavailable(f"an object outside the tables: {e}") from None

    def _state(self, ctx: Any) -> None:
        """Marshal what the analysis reads of ``ctx``'s state (once per state)."""
        ffi, t = self.ffi, self.t
        units = ctx._units
        n = len(units)
        words = (n + 63) // 64
        if words > MAX_WORDS:
            raise SettleUnavailable(f"{n} units")
        self.units = units
        self.uidx = {u: i for i, u in enumerate(units)}
        self.words = words
        kind, agent, pc = [], [], []
        efo, ef, eao, ea, eoo, eo, cwo, cw = [0], [], [0], [], [0], [], [0], []
        for u in units:
            if u[0] == "a":
                kind.append(0)
                agent.append(u[1])
                pc.append(ctx.pcs[u[1]])
                cw.extend(self.bid[b] for b in ctx._closed_waits(u[1]))
            else:
                kind.append(1)
                agent.append(-1)
                pc.append(-1)
                f = ctx._future(u, set())
                ef.extend(self._pairs(f[0]))
                for b, c in sorted((self.bid[b], c) for b, c in f[1].items()):
                    ea += [b, c]
                for b, k, c, x in f[2]:
                    eo += [self.bid[b], KINDS.index(k), c, x]
            efo.append(len(ef))
            eao.append(len(ea))
            eoo.append(len(eo))
            cwo.append(len(cw))
        pending = [0] * len(t.bars)
        tx = [0] * len(t.bars)
        for i, b in enumerate(t.bars):
            base = ctx.sys.bar.get(b)
            if base is not None:
                pending[i] = ctx.get(base + 1)
                tx[i] = ctx.get(base + 3)
        st = self._st = ffi.new("pw_state *")
        keep = []

        def arr(ty: str, xs: list) -> Any:
            a = ffi.new(ty, xs or [0])
            keep.append(a)
            return a

        st.n_units, st.n_words = n, words
        st.kind, st.agent, st.pc = arr("int32_t[]", kind), arr("int32_t[]", agent), \
            arr("int32_t[]", pc)
        st.env_fp_off, st.env_fp = arr("int64_t[]", efo), arr("int64_t[]", ef)
        st.env_arr_off, st.env_arr = arr("int64_t[]", eao), arr("int64_t[]", ea)
        st.env_ops_off, st.env_ops = arr("int64_t[]", eoo), arr("int64_t[]", eo)
        st.cw_off, st.cw = arr("int64_t[]", cwo), arr("int64_t[]", cw)
        st.pending, st.tx = arr("int64_t[]", pending), arr("int64_t[]", tx)
        st.pair_bar = self._pair_bar
        st.need = self._cb
        st.need_kind, st.need_sets = self._need_kind, self._need_sets
        self._T = arr("uint64_t[]", [0] * words)
        st.T = self._T
        self._keep = keep
        self.lib.pw_reset(self.rows, self._need_kind)
        self._ctx = ctx
        # room for the futures: every unit's footprint at most every pair, etc.
        n_pairs = len(t.objects) * self.nm
        self._out = ffi.new("pw_settled *")
        o = self._out
        o.blocked, o.unbounded = self._blocked, self._unb
        o.fp_off, o.arr_off, o.ops_off = (arr("int64_t[]", [0] * (n + 1)) for _ in range(3))
        o.fp_cap = n * n_pairs + 1
        o.fp = arr("int64_t[]", [0] * o.fp_cap)
        o.arr_cap = 2 * n * len(t.bars) + 2
        o.arr = arr("int64_t[]", [0] * o.arr_cap)
        o.ops_cap = n * (self.w.c_result.ops_cap + len(eo) // 4) + 1
        o.ops = arr("int64_t[]", [0] * (4 * o.ops_cap))
        self._others = arr("int32_t[]", [0] * (n + 1))

    def _need(self, a: int, pc: int, sets: Any, max_sets: int) -> int:
        """``_Ctx._block_requirement`` of (a, pc), cached as ``_blocked_frozen`` caches it:
        -1 none, -2 "cluster", else the number of unit sets written to ``sets``."""
        try:
            ctx = self._ctx
            key = (a, pc)
            got = ctx._block_need.get(key)
            if got is None:
                from ...model.program import Wait
                ins = ctx.sys.code(a)[pc]
                got = (ctx._block_requirement(a, pc), ins.bar if isinstance(ins, Wait) else None)
                ctx._block_need[key] = got
            need = got[0]
            if need is None:
                return -1
            if need == "cluster":
                return -2
            k = 0
            w = self.words
            for x in need[1]:
                if any(u not in self.uidx for u in x):
                    continue  # never within T
                if k == max_sets:
                    return -4
                bits = [0] * w
                for u in x:
                    i = self.uidx[u]
                    bits[i >> 6] |= 1 << (i & 63)
                for j in range(w):
                    sets[k * w + j] = bits[j]
                k += 1
            return k
        except Exception:  # a callback must not raise through C: no answer
            return -4

    def settle(self, ctx: Any, others: list, T: set) -> tuple[set, dict, set]:
        if ctx is not self._ctx:
            self._state(ctx)
        bits = [0] * self.words
        for u in T:
            i = self.uidx.get(u)
            if i is None:
                raise SettleUnavailable(f"unit {u} of T is not live")
            bits[i >> 6] |= 1 << (i & 63)
        for j, x in enumerate(bits):
            self._T[j] = x
        self._st.frozen_cl = int(ctx._cluster_frozen(T))
        for i, v in enumerate(others):
            self._others[i] = self.uidx[v]
        rc = self.lib.pw_settle(self.w.c_tables, self._st, self._others, len(others),
                                self.w.c_result, self._out)
        if rc != 0:
            raise SettleUnavailable(f"pw_settle: {rc}")
        t, o, nm = self.t, self._out, self.nm
        blocked = {t.bars[b] for b in range(len(t.bars)) if self._blocked[b]}
        unbounded = {t.bars[b] for b in range(len(t.bars)) if self._unb[b]}
        futures = {}
        for i, v in enumerate(others):
            fp = frozenset((t.objects[p // nm], t.modes[p % nm])
                           for p in (o.fp[k] for k in range(o.fp_off[i], o.fp_off[i + 1])))
            counts = {t.bars[o.arr[k]]: o.arr[k + 1]
                      for k in range(o.arr_off[i], o.arr_off[i + 1], 2)}
            ops = None
            if o.ops_off[i] >= 0:
                j = i + 1
                while o.ops_off[j] < 0:
                    j += 1
                ops = tuple((t.bars[o.ops[4 * k]], KINDS[o.ops[4 * k + 1]], o.ops[4 * k + 2],
                             o.ops[4 * k + 3]) for k in range(o.ops_off[i], o.ops_off[j]))
            futures[v] = (fp, counts, ops)
        return blocked, futures, unbounded
