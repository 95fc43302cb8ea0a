"""The stubborn-set closure of ``checker/por/`` in native code (``porwalk.c``).

Three layers, each tested against its Python original state by state:

* ``pw_walk`` -- a warp's future while T is frozen (``Closure._future``'s walk and
  ``_walk_result``) over the integer tables of ``checker/por/tables.py``, given which
  blocking instructions stay blocked (tests/test_por_walk.py);
* ``pw_settle`` -- the settle analysis (``Closure._settle_futures``: the futures of the units
  outside T and the greatest fixpoint of the mbarrier waits that stay blocked, with
  ``_can_complete``) (tests/test_por_settle.py);
* ``pw_stubborn`` -- the closure (``Closure.stubborn`` and ``_grow``: enablers, holders,
  promotions, settle-free barriers and named barriers, the conflict exceptions)
  (tests/test_por_closure.py; whole searches: tests/test_por_native_search.py).

The state is read in Python once per state (``NativeClosure._state``: pcs, enabled
units, current footprints and operations, barrier counts, named-barrier flags, the
environment units' futures) through the same ``Closure`` helpers the Python closure uses; what
mbarrier waits and try_waits, cluster, named-barrier (counted ones: "threads") and wgmma
waits need of T to stay blocked, and the closed waits, are computed in C from the tables;
a walk goes over (pc, try_wait tokens known to be 0) with the known segments tabled
(``por_tables``); a wgmma wait's owner counts ("HG") are held-now flags and readers per
state; a disabled warp's enablers are asked back through a callback (``Closure._enablers``),
and so is any requirement where the C does not answer (``Closure._block_requirement``).  A
state the C does not take (more than 256 units, an object outside the tables, a
requirement with more than 32 sets, a token known 0 in a warp whose known segments are
not tabled, ``por_tables.tabled_tokens``) raises ``SettleUnavailable``: the reducer runs
the Python closure for that seed and counts it.

Compiled once per machine (the source does not depend on the kernel: the tables are
data), with the native engine's compiler and cache (``build``).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any, Optional

from ..por import Footprints, NativeClosureUnavailable
from ..por.tables import KINDS, PorTables, build
from .build import BuildFailed, NativeUnavailable, _compile, _ffi, cache_dir, compiler

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
    const int64_t *wait_parity, *wait_ghost, *wait_own;
    const int64_t *writers_from_off, *writers_from;
    const int64_t *arrivers_from_off, *arrivers_from;
    const int64_t *block_kind;
    const int64_t *succ_off, *succ;
    const int64_t *try_bar, *try_tok, *n_tok, *known_base;
    const int64_t *known_fp_off, *known_fp, *known_fp_nc_off, *known_fp_nc;
    const int64_t *known_arr_off, *known_arr, *known_ops_off, *known_ops;
    const int64_t *known_next_off, *known_next;
    int64_t phase_mod, warp_size;
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
            int32_t zero0, const int8_t *blocked, pw_result *r);
typedef struct {
    int32_t n_units, n_words;
    const int32_t *kind;
    const int32_t *agent;
    const int32_t *pc;
    const int64_t *env_fp_off, *env_fp;
    const int64_t *env_arr_off, *env_arr;
    const int64_t *env_ops_off, *env_ops;
    int64_t *cw_off, *cw;
    const int64_t *pending, *tx;
    const int64_t *pair_bar;
    int32_t frozen_cl;
    const uint64_t *T;
    int (*need)(int32_t a, int32_t pc, uint64_t *sets, int32_t max_sets);
    int32_t *need_kind;
    uint64_t *need_sets;
    int32_t native_waits;
    const int32_t *agent_unit;
    const int8_t *u_enabled;
    const int64_t *phase;
    const int64_t *obj_bar;
    const int64_t *env_w_off, *env_w;
    const int64_t *env_a_off, *env_a;
    uint64_t *writers_bar, *arrivers_bar;
    const int64_t *nw_key;
    const int8_t *nb_arrived;
    const int8_t *key_all_only;
    const int32_t *key_cta;
    const int64_t *key_users_off, *key_users;
    const int64_t *cta_agents_off, *cta_agents;
    const int64_t *wg_n;
    const int64_t *wg_cm;
    const int64_t *wg_sib_off, *wg_sib;
    const int32_t *zero0;
    const int64_t *key_thr, *key_now;
    const int64_t *lw_off, *lw, *lw_row, *expected;
} pw_state;
void pw_prepare(const pw_tables *t, pw_state *s);
typedef struct {
    uint8_t *blocked;
    uint8_t *unbounded;
    int64_t *fp_off, *fp;
    int64_t *arr_off, *arr;
    int64_t *ops_off, *ops;
    int64_t fp_cap, arr_cap, ops_cap;
    int32_t rounds;
    int64_t *bar_at;
    int64_t *gathered;
    int64_t gathered_cap;
    uint8_t *blocked2;
} pw_settled;
void pw_reset(int64_t rows, int32_t *need_kind);
int pw_can_complete(int64_t pending, int64_t tx, const int64_t *ops, int64_t n_ops,
                    int64_t stride, int64_t proper_of);
int pw_may_complete(int64_t pending, int64_t expected, int64_t tx, const int64_t *ops,
                    int64_t n_ops, int64_t stride, int32_t twice);
int pw_may_complete_memo(int64_t pending, int64_t expected, int64_t tx, const int64_t *ops,
                         int64_t n_ops, int64_t stride, int32_t twice);
int pw_settle(const pw_tables *t, pw_state *s, const int32_t *others, int32_t n_others,
              pw_result *r, pw_settled *out);
typedef struct {
    int32_t n_modes;
    int32_t m_M, m_MR, m_W, m_R, m_O;
    const uint8_t *free_mode;
    const uint8_t *barop_mode;
    const uint8_t *conflict;
    const int32_t *obj_kind;
    const int32_t *obj_arg;
    int32_t n_objects;
    const int8_t *enabled;
    const int64_t *cur_fp_off, *cur_fp;
    const int64_t *cur_ops_off, *cur_ops;
    const int64_t *exit_pair;
    const int32_t *ucta;
    const int8_t *cl_cand;
    const int8_t *carr0, *carr_not1;
    const int8_t *exit_sync;
    const int32_t *exit_nbkey, *sync_nbkey;
    int32_t n_keys;
    const int64_t *nb_need;
    const int64_t *nb_count;
    const int64_t *na_pair;
    const int8_t *arrived;
    const int8_t *saturated, *multi_init;
    const int32_t *arr_cta;
    const int8_t *sync0;
    const int32_t *sync0_key;
    const int64_t *m_pairs_off, *m_pairs;
    int32_t n_ctas;
    const int32_t *pair_exitw_cta;
    int64_t ca_pair;
    const int8_t *observed;
    const int8_t *in_sys;
    int (*enablers)(int32_t u, uint64_t *out);
    int8_t *en_done;
    uint64_t *en_sets;
    uint64_t *memo;
    int32_t memo_n, memo_cap;
    const int32_t *hg_slot;
    const int8_t *hg_held;
    const uint64_t *hg_readers;
    const int64_t *hg_ar;
    const int8_t *en_kind;
    const int32_t *env_owner;
} pw_closure;
void pw_closure_reset(pw_closure *c, int32_t n_units);
typedef struct {
    int32_t n_agents, n_bars, n_keys, n_arrays, n_hg, n_pairs_hg;
    const int64_t *pc_base;
    const int64_t *pc_pos, *carr_pos, *wg_cm_pos, *agent_cta;
    const int64_t *tok_off, *tok_pos, *n_tok;
    const int64_t *nc_off, *nc, *step_off, *step;
    const int64_t *ep, *cl_static, *es, *ek, *sk, *wg_wait, *completing;
    const int64_t *ops_off, *ops;
    const int64_t *reads_off, *reads;
    const int32_t *hg_slot;
    const int64_t *bar_pos;
    const int64_t *key_static, *key_all_only, *key_cta, *key_count_pos;
    const int64_t *flag_off, *flag_agent, *flag_pos;
    const int64_t *cta_off, *cta_agent;
    const int64_t *vis_pos;
    int64_t vis_cta, vis_cluster, cluster_one;
    const int64_t *due_off, *due_pos;
    const int64_t *lc_off, *lc_bar, *lc_pos, *lc_arr;
    int32_t n_reinit, n_ini;
    const int64_t *ini_agent, *ini_off, *ini_arr;
    int64_t done, warp_size, phase_mod;
} pw_mtables;
typedef struct {
    int32_t *pc, *zero0, *agent_unit;
    int64_t *phase, *pending, *expected, *tx;
    int64_t *cur_fp_off, *cur_fp, *cur_ops_off, *cur_ops, *exit_pair;
    int32_t *ucta, *exit_nbkey, *sync_nbkey;
    int8_t *cl_cand, *carr0, *carr_not1, *exit_sync;
    int64_t *nb_need, *nb_count;
    int8_t *arrived, *saturated, *hg_held, *observed;
    int64_t *wg_cm;
    uint64_t *hg_readers;
    int64_t n_fp, n_ops;
} pw_mout;
void pw_marshal(const pw_mtables *m, const int64_t *v, const int32_t *agents,
                int32_t n_agent_units, int32_t n_units, int32_t words, pw_mout *o);
typedef struct pw_lmemo pw_lmemo;
pw_lmemo *pw_lmemo_new(void);
void pw_lmemo_free(pw_lmemo *lm);
int pw_later(const pw_mtables *m, pw_lmemo *lm, const int64_t *v, const int32_t *agents,
             int32_t na, int32_t n_units,
             int (*cb)(int32_t a, int32_t pc, const int32_t *phases, int32_t n,
                       int64_t *out, int32_t cap),
             int64_t *lw_off, int64_t *lw, int64_t *lw_row, int64_t *lw_set, int64_t *n_set);
int pw_stubborn(const pw_tables *t, pw_state *s, pw_closure *c, int32_t seed,
                int32_t best_size, pw_result *r, pw_settled *out, uint64_t *T);
"""
#: answer what mbarrier waits need in C (``pw_prepare``, ``wait_need``); False: ask
#: ``Closure._block_requirement`` for every one (tests compare the two)
NATIVE_WAITS = True
#: read the state's slots in C (``pw_marshal``); False: through the ``Closure`` helpers in
#: Python (tests compare the two)
NATIVE_MARSHAL = True
#: room for the sets of one requirement (``porwalk.c`` PW_MAX_SETS) and unit bitset words
MAX_SETS = 32
MAX_WORDS = 4

_LIB: list = []
#: compiled once per machine and small: worth the optimiser (the kernels' C uses -O1)
PW_CFLAGS = ["-O2", "-shared", "-fPIC", "-fwrapv", "-w",
             "-Werror=implicit-function-declaration"]


def _library() -> tuple[Any, Any]:
    """(ffi, library) of ``porwalk.c``, compiled unless the cache has it."""
    if _LIB:
        return _LIB[0]
    ffi = _ffi(CDEF)
    source = Path(__file__).with_name("porwalk.c").read_text()
    cc = compiler()
    digest = hashlib.sha256("\0".join(["porwalk", cc, *PW_CFLAGS, source]).encode()
                            ).hexdigest()[:24]
    d = cache_dir()
    so = d / f"pw_{digest}.so"
    if not so.exists():
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            out = Path(tmp) / "pw.so"
            _compile(cc, [source], Path(tmp), out, None, flags=PW_CFLAGS)
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
        #: the first row of each agent in the flat tables, then the end
        self.pc_base: list[int] = flat["pc_base"]
        self._keep = []  # the arrays the C struct points into
        st = self.c_tables = ffi.new("pw_tables *")
        st.n_agents = len(tables.acyclic)
        st.n_pairs = len(tables.objects) * tables.n_modes
        st.n_bars = len(tables.bars)
        from ...model.groups import WARP_SIZE
        from ...model.mbarrier import PHASE_MOD
        st.phase_mod, st.warp_size = PHASE_MOD, WARP_SIZE
        for name in ("pc_base", "blocking", "acyclic", "seg_fp_off", "seg_fp", "seg_fp_nc_off",
                     "seg_fp_nc", "seg_next_off", "seg_next", "seg_ops_off", "seg_ops",
                     "seg_arr_off", "seg_arr", "wait_bar", "wait_parity", "wait_ghost",
                     "wait_own", "writers_from_off", "writers_from", "arrivers_from_off",
                     "arrivers_from", "block_kind", "succ_off", "succ", "try_bar", "try_tok",
                     "n_tok", "known_base", "known_fp_off", "known_fp", "known_fp_nc_off",
                     "known_fp_nc", "known_arr_off", "known_arr", "known_ops_off", "known_ops",
                     "known_next_off", "known_next"):
            arr = ffi.new("int64_t[]", flat[name] or [0])
            self._keep.append(arr)
            setattr(st, name, arr)
        self.max_pcs = max((len(r) for r in tables.blocking), default=0)
        # a walk enters each node (pc, mask of tokens known 0) of one warp once, and each
        # holds the operations of one row of that warp, plain or known
        n_ops = max([sum(len(o) for o in plain if o) + sum(len(o) for o in known if o)
                     for plain, known in zip(tables.seg_ops, tables.known_ops)] + [0]) + 1
        res = self.c_result = ffi.new("pw_result *")
        self._fp = ffi.new("uint8_t[]", max(st.n_pairs, 1))
        self._counts = ffi.new("int64_t[]", max(st.n_bars, 1))
        self._ops = ffi.new("int64_t[]", 4 * n_ops)
        self._pairs = ffi.new("int64_t[]", max(st.n_pairs, 1))
        res.fp, res.counts, res.ops, res.ops_cap = self._fp, self._counts, self._ops, n_ops
        res.pairs, res.n_fp = self._pairs, 0
        self._blocked = ffi.new("int8_t[]", max(self.max_pcs, 1))

    def zero_mask(self, a: int, zero: Any) -> int:
        """The mask of warp ``a``'s try_wait tokens named in ``zero`` (those 0 now); 1
        for any where the warp has more than the tables take (the walk gives up)."""
        return zero_mask(self.t, a, lambda name: name in zero)

    def walk(self, a: int, start: int, frozen_cl: bool, blocked: dict[int, bool],
             zero: Any = ()) -> Optional[tuple[frozenset, dict, Optional[tuple], bool]]:
        """(footprint, arrival counts, barrier operations or None, looped) of warp ``a``'s
        walk from ``start``, where ``blocked`` answers for the blocking pcs it reaches and
        ``zero`` names the try_wait tokens that are 0 now; None where it reaches a pc
        without an answer, or needs known segments the tables do not have."""
        b = self._blocked
        n = len(self.t.blocking[a])
        for pc in range(n):
            b[pc] = -1
        for pc, x in blocked.items():
            b[pc] = 1 if x else 0
        rc = self.lib.pw_walk(self.c_tables, a, start, int(frozen_cl), self.zero_mask(a, zero),
                              b, self.c_result)
        if rc in (-1, -3):
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


def zero_mask(t: PorTables, a: int, is_zero: Any) -> int:
    """The mask (``t.tokens[a]`` order) of warp ``a``'s try_wait tokens for which
    ``is_zero`` holds; where the warp has more tokens than the tables take (``n_tok``
    -1), 1 if any (``pw_walk`` then gives up)."""
    bits = [i for i, name in enumerate(t.tokens[a]) if is_zero(name)]
    if t.n_tok[a] < 0:
        return 1 if bits else 0
    return sum(1 << i for i in bits)


class SettleUnavailable(NativeClosureUnavailable):
    """A state the native settle analysis does not take (too many units, a unit or
    object outside the tables): the caller keeps the Python analysis."""


class NativeSettle:
    """``pw_settle``: ``por.Closure._settle_futures`` in native code, over one reducer's
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
        self._obj_bar = ffi.new("int64_t[]", [self.bid.get(o[1], -1) if o[0] == "bar" else -1
                                              for o in tables.objects] or [0])
        self.rows = sum(len(r) for r in tables.blocking)
        self._need_kind = ffi.new("int32_t[]", max(self.rows, 1))
        self._need_sets = ffi.new("uint64_t[]", max(self.rows, 1) * MAX_SETS * MAX_WORDS)
        nb = max(len(tables.bars), 1)
        self._blocked = ffi.new("uint8_t[]", nb)
        self._blocked2 = ffi.new("uint8_t[]", nb)
        self._unb = ffi.new("uint8_t[]", nb)
        #: per row (``NativeWalk.pc_base`` numbering): the barrier of a wait further down
        #: that needs two completions (``Closure._later_waits``), else -1; the rows set for
        #: this state
        self._lw_row = ffi.new("int64_t[]", [-1] * max(self.rows, 1))
        self._lw_set: list = []
        #: the barriers the last ``settle`` found unable to complete twice
        self.blocked2: set = set()
        self._ctx: Any = None
        #: mbarrier waits (closed waits, requirements) answered in C: ``NativeClosure``
        self._native_waits = False
        self._cb = ffi.callback("int(int32_t, int32_t, uint64_t *, int32_t)", self._need)
        #: each table barrier's first slot in the system (None: not in it), at the first
        #: state
        self._bar_base: Optional[list] = None
        self._keep: list = []
        #: the slot reads are ``pw_marshal``'s (``NativeClosure``)
        self._c_reads = False
        #: ``_env_record`` by (item, queue), and the waits a round ahead's rows by the
        #: reducer's shared answer (warp, its identity)
        self._env_memo: dict = {}
        self._lw_memo: dict = {}

    # ------------------------------------------------------------------ per state

    def _buf(self, name: str, ty: str, xs: Any = None, n: int = 0) -> Any:
        """A reusable C array for ``name`` (grown when too small), holding ``xs`` (or
        ``n`` entries of whatever was there before): no allocation per state."""
        need = max(len(xs) if xs is not None else n, 1)
        pool = self.__dict__.setdefault("_pool", {})
        got = pool.get(name)
        if got is None or got[1] < need:
            cap = max(need, 2 * got[1] if got else 0)
            got = pool[name] = (self.ffi.new(ty, cap), cap)
        if xs:
            got[0][0:len(xs)] = xs
        return got[0]

    def _pairs(self, fp: frozenset) -> list[int]:
        """The pair ids of a footprint (memoised: the footprints are the tables' own
        frozensets, or an environment unit's, few per kernel)."""
        memo = self.__dict__.setdefault("_pairs_memo", {})
        got = memo.get(fp)
        if got is None:
            try:
                got = [self.oid[o] * self.nm + self.mid[m] for o, m in fp]
            except KeyError as e:
                raise SettleUnavailable(f"an object outside the tables: {e}") from None
            if len(memo) > 1 << 16:
                memo.clear()
            memo[fp] = got
        return got

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
        #: the live agents, the first units (``Closure._units``)
        self._agent_ids = [u[1] for u in units if u[0] == "a"]
        self.words = words
        #: the agents' pcs and tokens, the barrier words and the agent -> unit map are
        #: read by ``pw_marshal`` (``NativeClosure``) rather than here
        c_reads = self._c_reads
        agents = self._agent_ids
        na = len(agents)
        ne = n - na  # the environment units, after the agents
        kind = [0] * na + [1] * ne
        agent = agents + [-1] * ne
        lwo, lw = [0], []
        lw_row = self._lw_row
        for r in self._lw_set:
            lw_row[r] = -1
        self._lw_set = lw_set = []
        lw_memo = self._lw_memo
        for a in agents if not c_reads else ():  # pw_later's, after the gather
            later = ctx._later_waits(a)
            if later:
                got = lw_memo.get((a, id(later)))
                if got is None or got[0] is not later:
                    if len(lw_memo) > 1 << 16:
                        lw_memo.clear()
                    base = self.w.pc_base[a]
                    got = lw_memo[(a, id(later))] = (
                        later, sorted({self.bid[b] for b in later.values()}),
                        [(base + lpc, self.bid[b]) for lpc, b in later.items()])
                lw.extend(got[1])
                for r, b in got[2]:
                    lw_row[r] = b
                    lw_set.append(r)
            lwo.append(len(lw))
        if not c_reads:
            lwo.extend([len(lw)] * ne)
        if not c_reads:
            pc = [ctx.pcs[a] for a in agents] + [-1] * ne
            # Closure._future: the try_wait tokens that are 0 now
            zero0 = []
            for a in agents:
                if t.tokens[a]:
                    loc = ctx.sys.agents[a].locals
                    zero0.append(zero_mask(t, a, lambda name: ctx.get(loc[name]) == 0))
                else:
                    zero0.append(0)
            zero0 += [0] * ne
        cwo, cw = [0], []
        if not self._native_waits:
            for a in agents:
                cw.extend(self.bid[b] for b in ctx._closed_waits(a))
                cwo.append(len(cw))
            cwo.extend([len(cw)] * ne)
        efo, ef, eao, ea, eoo, eo = [0] * (na + 1), [], [0] * (na + 1), [], [0] * (na + 1), []
        ewo, ew, eao2, ea2 = [0] * (na + 1), [], [0] * (na + 1), []
        for u in units[na:]:  # futures, and the environment's part of Closure._writers
            rec = self._env_record(ctx, u)  # and Closure._arrivers (_env_writer_index)
            ef.extend(rec[0])
            ea.extend(rec[1])
            eo.extend(rec[2])
            ew.extend(rec[3])
            ea2.extend(rec[4])
            efo.append(len(ef))
            eao.append(len(ea))
            eoo.append(len(eo))
            ewo.append(len(ew))
            eao2.append(len(ea2))
        if self._bar_base is None:
            self._bar_base = [ctx.sys.bar.get(b) for b in t.bars]
        get = ctx.get
        if not c_reads:
            phase = [0 if s is None else get(s) for s in self._bar_base]
            pending = [0 if s is None else get(s + 1) for s in self._bar_base]
            expected = [0 if s is None else get(s + 2) for s in self._bar_base]
            tx = [0 if s is None else get(s + 3) for s in self._bar_base]
            agent_unit = [-1] * len(ctx.sys.agents)
            for i, u in enumerate(units):
                if u[0] == "a":
                    agent_unit[u[1]] = i
            self._agent_unit_list = agent_unit
        st = self._st = self.__dict__.get("_st") or ffi.new("pw_state *")
        keep: list = []

        def arr(ty: str, xs: list, _names: Any = iter(range(1 << 30))) -> Any:
            return self._buf(f"s{next(_names)}", ty, xs)

        st.n_units, st.n_words = n, words
        st.kind, st.agent = arr("int32_t[]", kind), arr("int32_t[]", agent)
        if c_reads:  # the agents' part is pw_marshal's; the environment units' is constant
            na = len(self._agent_ids)
            st.pc, st.zero0 = self._buf("m_pc", "int32_t[]", n=n), \
                self._buf("m_zero0", "int32_t[]", n=n)
            if n > na:
                st.pc[na:n] = [-1] * (n - na)
                st.zero0[na:n] = [0] * (n - na)
        else:
            st.pc, st.zero0 = arr("int32_t[]", pc), arr("int32_t[]", zero0)
        st.env_fp_off, st.env_fp = arr("int64_t[]", efo), arr("int64_t[]", ef)
        st.env_arr_off, st.env_arr = arr("int64_t[]", eao), arr("int64_t[]", ea)
        st.env_ops_off, st.env_ops = arr("int64_t[]", eoo), arr("int64_t[]", eo)
        if self._native_waits:  # pw_prepare fills them
            st.cw_off = self._buf("cw_off", "int64_t[]", n=n + 1)
            st.cw = self._buf("cw", "int64_t[]", n=n * len(t.bars) + 1)
        else:
            st.cw_off, st.cw = arr("int64_t[]", cwo), arr("int64_t[]", cw)
        if c_reads:
            nb = len(t.bars)
            st.pending, st.tx = self._buf("m_pending", "int64_t[]", n=nb), \
                self._buf("m_tx", "int64_t[]", n=nb)
            st.expected = self._buf("m_expected", "int64_t[]", n=nb)
        else:
            st.pending, st.tx = arr("int64_t[]", pending), arr("int64_t[]", tx)
            st.expected = arr("int64_t[]", expected)
        if c_reads:  # pw_later fills them
            st.lw_off = self._buf("m_lwo", "int64_t[]", n=n + 1)
            st.lw = self._buf("m_lw", "int64_t[]", n=n * len(t.bars) + 1)
        else:
            st.lw_off, st.lw = arr("int64_t[]", lwo), arr("int64_t[]", lw)
        st.lw_row = self._lw_row
        st.pair_bar = self._pair_bar
        st.native_waits = 0
        st.nw_key = ffi.NULL
        st.wg_n = ffi.NULL
        st.key_thr = st.key_now = self._buf("no_keys", "int64_t[]", n=1)
        if c_reads:
            st.agent_unit = self._buf("m_agent_unit", "int32_t[]", n=len(ctx.sys.agents))
            st.phase = self._buf("m_phase", "int64_t[]", n=len(t.bars))
        else:
            st.agent_unit = arr("int32_t[]", agent_unit)
            st.phase = arr("int64_t[]", phase)
        st.obj_bar = self._obj_bar
        st.env_w_off, st.env_w = arr("int64_t[]", ewo), arr("int64_t[]", ew)
        st.env_a_off, st.env_a = arr("int64_t[]", eao2), arr("int64_t[]", ea2)
        st.writers_bar = self._buf("writers_bar", "uint64_t[]", n=len(t.bars) * words)
        st.arrivers_bar = self._buf("arrivers_bar", "uint64_t[]", n=len(t.bars) * words)
        st.need = self._cb
        st.need_kind, st.need_sets = self._need_kind, self._need_sets
        self._T = self._buf("T", "uint64_t[]", n=words)
        st.T = self._T
        self._keep = keep
        self.lib.pw_reset(self.rows, self._need_kind)
        self._ctx = ctx
        # room for the futures: every unit's footprint at most every pair, etc.
        n_pairs = len(t.objects) * self.nm
        o = self._out = self.__dict__.get("_out") or ffi.new("pw_settled *")
        o.blocked, o.unbounded = self._blocked, self._unb
        o.blocked2 = self._blocked2
        o.fp_off = self._buf("fp_off", "int64_t[]", n=n + 1)
        o.arr_off = self._buf("arr_off", "int64_t[]", n=n + 1)
        o.ops_off = self._buf("ops_off", "int64_t[]", n=n + 1)
        o.fp_cap = n * n_pairs + 1
        o.fp = self._buf("fp", "int64_t[]", n=o.fp_cap)
        o.arr_cap = 2 * n * len(t.bars) + 2
        o.arr = self._buf("arr", "int64_t[]", n=o.arr_cap)
        o.ops_cap = n * (self.w.c_result.ops_cap + len(eo) // 4) + 1
        o.ops = self._buf("ops", "int64_t[]", n=4 * o.ops_cap)
        o.bar_at = self._buf("bar_at", "int64_t[]", n=len(t.bars) + 2)
        o.gathered_cap = o.ops_cap
        o.gathered = self._buf("gathered", "int64_t[]", n=4 * o.ops_cap)
        self._others = self._buf("others", "int32_t[]", n=n + 1)

    def _env_record(self, ctx: Any, u: tuple) -> tuple:
        """An environment unit's part of the state's reading: its future while T is frozen
        (``Closure._future``: footprint pairs, arrival counts, operations) and the barriers
        it may write and arrive at (``Closure._env_writer_index``, ``_arrivers``).  A
        function of the item and its warp's queue: memoized across states."""
        it = u[1]
        q = () if it[0] == "tma" else tuple(ctx.queued.get(it[1], ()))
        got = self._env_memo.get((it, q))
        if got is not None:
            return got
        f = ctx._future(u, set())
        ea, eo = [], []
        for b, c in sorted((self.bid[b], c) for b, c in f[1].items()):
            ea += [b, c]
        for b, k, c, x in f[2]:
            eo += [self.bid[b], KINDS.index(k), c, x]
        fpt = ctx.fp
        ws = {o[1] for o, m in ctx.env_fps[u] if o[0] == "bar" and m not in ("R", "O", "RD")}
        ars: set = set()
        for qpc in q:
            ws |= {o[1] for o, m in fpt.future_env[it[1]][qpc]
                   if o[0] == "bar" and m not in ("R", "O", "RD")}
            ars |= fpt.arrivals_of(it[1], qpc)
        got = (self._pairs(f[0]), ea, eo, sorted(self.bid[b] for b in ws),
               sorted(self.bid[b] for b in ars))
        if len(self._env_memo) > 1 << 16:
            self._env_memo.clear()
        self._env_memo[(it, q)] = got
        return got

    def _need(self, a: int, pc: int, sets: Any, max_sets: int) -> int:
        """``Closure._block_requirement`` of (a, pc), cached as ``_blocked_frozen`` caches it:
        -1 none, -2 "cluster", else the number of unit sets written to ``sets``."""
        try:
            ctx = self._ctx
            key = (a, pc)
            got = ctx._block_need.get(key)
            if got is None:  # as Closure._blocked_frozen fills the cache
                from ...model.program import TryWait, Wait
                ins = ctx.sys.code(a)[pc]
                got = (ctx._block_requirement(a, pc),
                       ins.bar if isinstance(ins, (Wait, TryWait)) else None)
                ctx._block_need[key] = got
            need = got[0]
            if need is None:
                return -1
            if need == "cluster":
                return -2
            w = self.words
            if need[0] == "threads":
                # porwalk.c PW_THREADS: the units that may arrive, then the threads missing
                missing, may = need[1]
                bits = [0] * w
                for u in may:
                    i = self.uidx[u]
                    bits[i >> 6] |= 1 << (i & 63)
                for j in range(w):
                    sets[j] = bits[j]
                sets[w] = missing & ((1 << 64) - 1)
                return -10
            k = 0
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
        self.blocked2 = {t.bars[b] for b in range(len(t.bars)) if self._blocked2[b]}
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


class NativeClosure(NativeSettle):
    """``pw_stubborn``: ``por.Closure.stubborn`` (the closure rounds of ``_grow`` over the
    settle analysis) in native code.  ``stubborn(ctx, seed, best_size)`` answers what
    ``ctx.stubborn`` answers, or raises ``SettleUnavailable`` for a state it does not
    take (the caller then runs the Python closure)."""

    def __init__(self, tables: PorTables):
        super().__init__(tables)
        self._native_waits = NATIVE_WAITS
        self._c_reads = NATIVE_MARSHAL
        from ...model.program import ClusterArrive, Exit, NamedBarrierOp
        from ..por.modes import BAR_OPS, FREE_MODES
        self._kinds = (ClusterArrive, Exit, NamedBarrierOp)
        ffi, t, nm = self.ffi, tables, self.nm
        self.fpt: Any = None  # the reducer's Footprints (bound at the first state)
        mid = self.mid
        c = self._c = ffi.new("pw_closure *")
        keep = self._static = []

        def arr(ty: str, xs: list) -> Any:
            a = ffi.new(ty, xs or [0])
            keep.append(a)
            return a

        c.n_modes = nm
        c.m_M, c.m_MR, c.m_W, c.m_R, c.m_O = (mid[m] for m in ("M", "MR", "W", "R", "O"))
        c.free_mode = arr("uint8_t[]", [int(m in FREE_MODES) for m in t.modes])
        c.barop_mode = arr("uint8_t[]", [int(m in BAR_OPS | {"O"}) for m in t.modes])
        c.conflict = arr("uint8_t[]", list(t.conflict))
        c.n_objects = len(t.objects)
        self._arrays = [o for o in t.objects if o[0] == "arr"]
        self._arr_idx = {o: i for i, o in enumerate(self._arrays)}
        self._key_idx: dict = {}
        self._keys: list = []
        self.n_pairs = len(t.objects) * nm
        #: ``_static_record`` by (warp, pc), and ``_pairs_of`` by footprint identity
        self._statics: dict = {}
        self._pairs_id: dict = {}

    def _bind(self, ctx: Any) -> None:
        """The tables that need the system (named-barrier keys, CTAs): at the first state."""
        ffi, t, nm, c = self.ffi, self.t, self.nm, self._c
        sysm, fpt = ctx.sys, ctx.fp
        self.fpt = fpt
        keep = self._static

        def arr(ty: str, xs: list) -> Any:
            a = ffi.new(ty, xs or [0])
            keep.append(a)
            return a

        n_ctas = sysm.info.num_ctas
        keys = set(fpt.nb_count) | fpt.nb_all_threads | {(cta, 0) for cta in range(n_ctas)}
        for ag in sysm.agents:
            for ins in ag.program.code:
                if isinstance(ins, self._kinds[2]):
                    keys.add((ag.cta, ins.id))
        self._keys = sorted(keys)
        self._key_idx = {k: i for i, k in enumerate(self._keys)}
        from ...model.program import NamedWait
        nwk = []
        for a, ag in enumerate(sysm.agents):
            for ins in ag.program.code:
                nwk.append(self._key_idx.get((ag.cta, ins.id), -1)
                           if isinstance(ins, NamedWait) else -1)
        self._nw_key = arr("int64_t[]", nwk)
        self._key_all_only = arr("int8_t[]", [int(k in fpt.nb_all_only) for k in self._keys])
        # counted named barriers (Closure._block_requirement "threads")
        self._key_thr = arr("int64_t[]", [fpt.nb_count.get(k, -1) for k in self._keys])
        self._key_cta = arr("int32_t[]", [k[0] for k in self._keys])
        uo, us = [0], []
        for k in self._keys:
            us.extend(sorted(fpt.nb_users.get(k, ())))
            uo.append(len(us))
        self._key_users_off, self._key_users = arr("int64_t[]", uo), arr("int64_t[]", us)
        co, ca = [0], []
        for cta in range(n_ctas):
            ca.extend(sysm.agents_of_cta.get(cta, []))
            co.append(len(ca))
        self._cta_agents_off, self._cta_agents = arr("int64_t[]", co), arr("int64_t[]", ca)
        # wgmma waits (model/wgmma.py): n per row, the warpgroups' members
        from ...model.program import WgmmaWait
        wg = sysm.wgmma
        self._wg_n = arr("int64_t[]", [ins.n if isinstance(ins, WgmmaWait) else -1
                                       for ag in sysm.agents for ins in ag.program.code])
        so, sl = [0], []
        for a in range(len(sysm.agents)):
            sl.extend(wg.siblings(a) if a in wg.group_of else [])
            so.append(len(sl))
        self._wg_sib_off, self._wg_sib = arr("int64_t[]", so), arr("int64_t[]", sl)
        self._nb_slots = [[(a, sysm.nbflag[(k[0], k[1], ag.warp)])
                           for a, ag in enumerate(sysm.agents)
                           if (k[0], k[1], ag.warp) in sysm.nbflag] for k in self._keys]
        kind, argv = [], []
        for o in t.objects:
            if o[0] == "bar":
                kind.append(0)
                argv.append(self.bid.get(o[1], -1))
            elif o[0] == "arr":
                kind.append(1)
                argv.append(self._arr_idx[o])
            elif o[0] == "exit":
                kind.append(2)
                argv.append(o[1])
            elif o[0] == "nb" and (o[1], o[2]) in self._key_idx:
                kind.append(3)
                argv.append(self._key_idx[(o[1], o[2])])
            else:
                kind.append(4)
                argv.append(0)
        c.obj_kind, c.obj_arg = arr("int32_t[]", kind), arr("int32_t[]", argv)
        c.n_keys = len(self._keys)
        na = []
        for k in self._keys:
            o = ("nb",) + k
            na.append(self.oid[o] * nm + self.mid["NA"] if o in self.oid else -1)
        c.na_pair = arr("int64_t[]", na)
        c.multi_init = arr("int8_t[]", [int(len(sysm.initers.get((o[1], o[2]), ())) > 1)
                                        for o in self._arrays])
        c.arr_cta = arr("int32_t[]", [o[1] for o in self._arrays])
        sync0, sync0_key = [], []
        for cta in range(n_ctas):
            key = (cta, 0)
            sync0.append(0 if key not in sysm.nb else (2 if key in fpt.nb_all_only else 1))
            sync0_key.append(self._key_idx[key])
        c.sync0, c.sync0_key = arr("int8_t[]", sync0), arr("int32_t[]", sync0_key)
        mo, mp = [0], []
        for cta in range(n_ctas):
            for x in fpt._arrays_of(cta):
                if x not in self.oid:
                    raise SettleUnavailable(f"array {x} outside the tables")
                mp.append(self.oid[x] * nm + self.mid["M"])
            mo.append(len(mp))
        c.m_pairs_off, c.m_pairs = arr("int64_t[]", mo), arr("int64_t[]", mp)
        c.n_ctas = n_ctas
        pec = [-1] * self.n_pairs
        for i, o in enumerate(t.objects):
            if o[0] == "exit":
                pec[i * nm + self.mid["W"]] = o[1]
        c.pair_exitw_cta = arr("int32_t[]", pec)
        ca = ("cl",)
        c.ca_pair = self.oid[ca] * nm + self.mid["CA"] if ca in self.oid and "CA" in self.mid \
            else -1
        c.in_sys = arr("int8_t[]", [int(b in sysm.bar) for b in t.bars])
        # wgmma waits' owner counts (Footprints.hold_mode): a slot per ("buf", b) pair
        # of an "HG" mode that a member of the warpgroup may ever hold (a due slot) or
        # read (wgmma_reads_from); -2 for the others (Closure._wg_may_hold is always False)
        hg_slot = [-1] * self.n_pairs
        self._hg: list = []  # per slot: (warpgroup key, buffer)
        for m, key in sorted(fpt.hold_key.items()):
            if m not in self.mid:
                continue
            members = wg.members[key]
            for o in t.objects:
                if o[0] != "buf":
                    continue
                b = o[1]
                ever = any((w_, b) in wg.due for w_ in members) or \
                    any(b in r for w_ in members for r in fpt.wgmma_reads_from[w_])
                p = self.oid[o] * nm + self.mid[m]
                if ever:
                    hg_slot[p] = len(self._hg)
                    self._hg.append((key, b))
                else:
                    hg_slot[p] = -2
        c.hg_slot = arr("int32_t[]", hg_slot)
        #: the slots of each warpgroup: [(slot, buffer)]
        self._hg_by_key: dict = {}
        for sl, (key, b) in enumerate(self._hg):
            self._hg_by_key.setdefault(key, []).append((sl, b))
        c.hg_ar = arr("int64_t[]", [
            self.oid[("buf", b)] * nm + self.mid["AR"]
            if ("buf", b) in self.oid and "AR" in self.mid else -1 for _key, b in self._hg])
        self._en_cb = ffi.callback("int(int32_t, uint64_t *)", self._enablers)
        c.enablers = self._en_cb
        # how porwalk.c finds a disabled warp's enablers (Closure._enablers), per row
        from ...model.program import (BulkWaitRead, ClusterWait, CpAsyncWaitGroup, TmemWait,
                                      Wait)
        en = {Wait: 1, ClusterWait: 2, NamedWait: 3, WgmmaWait: 4, BulkWaitRead: 5,
              CpAsyncWaitGroup: 6, TmemWait: 7}
        c.en_kind = arr("int8_t[]", [en.get(type(ins), 0) for ag in sysm.agents
                                     for ins in ag.program.code])
        c.memo_cap = 256
        if self._c_reads:
            self._bind_reads(ctx)

    def _bind_reads(self, ctx: Any) -> None:
        """``pw_marshal``'s tables: where each slot it reads sits in the gathered values,
        and every (warp, pc)'s ``_static_record`` (so C needs no Python per state)."""
        from operator import itemgetter

        from ...model.program import ClusterArrive, Exit
        from ...model.groups import WARP_SIZE
        from ...model.mbarrier import PHASE_MOD
        from ...model.system import DONE, VIS_CLUSTER, VIS_CTA
        ffi, t, sysm, fpt = self.ffi, self.t, ctx.sys, ctx.fp
        keep = self._static
        slots: list = []
        where: dict = {}

        def pos(slot: int) -> int:
            if slot not in where:
                where[slot] = len(slots)
                slots.append(slot)
            return where[slot]

        def arr(ty: str, xs: list) -> Any:
            a = ffi.new(ty, xs or [0])
            keep.append(a)
            return a

        m = self._m = ffi.new("pw_mtables *")
        agents, wg = sysm.agents, sysm.wgmma
        m.n_agents, m.n_bars, m.n_keys = len(agents), len(t.bars), len(self._keys)
        m.n_arrays, m.n_hg = len(self._arrays), len(self._hg)
        m.pc_base = arr("int64_t[]", self.w.pc_base)
        m.pc_pos = arr("int64_t[]", [pos(ag.pc) for ag in agents])
        m.carr_pos = arr("int64_t[]", [pos(ag.carr) for ag in agents])
        m.wg_cm_pos = arr("int64_t[]", [pos(wg.cm[a]) if a in wg.group_of else -1
                                        for a in range(len(agents))])
        m.agent_cta = arr("int64_t[]", [ag.cta for ag in agents])
        to, tp = [0], []
        for a, names in enumerate(t.tokens):
            tp.extend(pos(agents[a].locals[name]) for name in names)
            to.append(len(tp))
        m.tok_off, m.tok_pos = arr("int64_t[]", to), arr("int64_t[]", tp)
        m.n_tok = arr("int64_t[]", list(t.n_tok))
        # the hg slots each (warp, pc) may read (Closure._wg_may_hold's readers)
        reads_of: dict = {}
        for key, sl_bs in self._hg_by_key.items():
            for w_ in wg.members[key]:
                for pc, rd in enumerate(fpt.wgmma_reads_from[w_]):
                    got = [sl for sl, b in sl_bs if b in rd]
                    if got:
                        reads_of.setdefault((w_, pc), []).extend(got)
        nco, nc, so, sp, oo, ops, ro, rd = [], [], [0], [], [0], [], [0], []
        ep, cls, es, ek, sk, wgw, comp = [], [], [], [], [], [], []
        max_fp = max_ops = 0
        for a in range(len(agents)):
            code = sysm.code(a)
            for pc in range(self.w.pc_base[a + 1] - self.w.pc_base[a]):
                rec = self._static_record(ctx, a, pc)
                nc_fp, step_fp, e_p, _cta, cl_static, e_s, e_k, s_k, wg_wait, _c, row_ops = rec
                if nc_fp is None:
                    nco.append(-1)
                else:
                    nco.append(len(nc))
                    nc.extend(self._pairs_of(nc_fp))
                    max_fp = max(max_fp, len(nc_fp))
                sp.extend(self._pairs_of(step_fp))
                so.append(len(sp))
                max_fp = max(max_fp, len(step_fp))
                ops.extend(row_ops)
                oo.append(len(ops))
                max_ops = max(max_ops, len(row_ops))
                rd.extend(reads_of.get((a, pc), ()))
                ro.append(len(rd))
                ep.append(e_p)
                cls.append(int(cl_static))
                es.append(e_s)
                ek.append(e_k)
                sk.append(s_k)
                wgw.append(int(wg_wait))
                comp.append(int(isinstance(code[pc], (ClusterArrive, Exit))))
        nco.append(len(nc))
        m.nc_off, m.nc = arr("int64_t[]", nco), arr("int64_t[]", nc)
        m.step_off, m.step = arr("int64_t[]", so), arr("int64_t[]", sp)
        m.ops_off, m.ops = arr("int64_t[]", oo), arr("int64_t[]", ops)
        m.reads_off, m.reads = arr("int64_t[]", ro), arr("int64_t[]", rd)
        m.ep, m.cl_static, m.es = arr("int64_t[]", ep), arr("int64_t[]", cls), arr("int64_t[]", es)
        m.ek, m.sk = arr("int64_t[]", ek), arr("int64_t[]", sk)
        m.wg_wait, m.completing = arr("int64_t[]", wgw), arr("int64_t[]", comp)
        #: room for one agent unit's current footprint and operations
        self._max_fp, self._max_ops = max_fp, max_ops
        m.hg_slot = self._c.hg_slot
        bp = []
        for b in t.bars:
            base = sysm.bar.get(b)
            bp.extend([-1] * 5 if base is None else [pos(base + i) for i in range(5)])
        m.bar_pos = arr("int64_t[]", bp)
        m.key_static = arr("int64_t[]", [fpt.nb_count.get(k, -1) for k in self._keys])
        m.key_all_only = arr("int64_t[]", [int(k in fpt.nb_all_only) for k in self._keys])
        m.key_cta = arr("int64_t[]", [k[0] for k in self._keys])
        m.key_count_pos = arr("int64_t[]", [pos(sysm.nb[k]) if k in sysm.nb else -1
                                            for k in self._keys])
        fo, fa, fpos = [0], [], []
        for flags in self._nb_slots:
            for a, slot in flags:
                fa.append(a)
                fpos.append(pos(slot))
            fo.append(len(fa))
        m.flag_off, m.flag_agent, m.flag_pos = (arr("int64_t[]", fo), arr("int64_t[]", fa),
                                                arr("int64_t[]", fpos))
        co, ca = [0], []
        for cta in range(sysm.info.num_ctas):
            ca.extend(sysm.agents_of_cta.get(cta, []))
            co.append(len(ca))
        m.cta_off, m.cta_agent = arr("int64_t[]", co), arr("int64_t[]", ca)
        m.vis_pos = arr("int64_t[]", [pos(sysm.arr[(o[1], o[2])]) if (o[1], o[2]) in sysm.arr
                                      else -1 for o in self._arrays])
        m.vis_cta, m.vis_cluster = VIS_CTA, VIS_CLUSTER
        m.done, m.warp_size, m.phase_mod = DONE, WARP_SIZE, PHASE_MOD
        m.cluster_one = int(sysm.info.cluster_size == 1)
        do, dp = [0], []
        for key, b in self._hg:
            dp.extend(pos(x) for x in fpt.due_slots(key, b))
            do.append(len(dp))
        m.due_off, m.due_pos = arr("int64_t[]", do), arr("int64_t[]", dp)
        # the waits a round ahead (Futures._later_waits): per row its candidates, the
        # arrays some warp may initialize again
        ini = sorted(fpt.init_agents)
        ri: dict = {}
        io, ia = [0], []
        lo, lb, lp, la = [0], [], [], []
        for a in range(len(agents)):
            for pc in range(self.w.pc_base[a + 1] - self.w.pc_base[a]):
                arrs = sorted(fpt.inits_from(a, pc)) if a in ini else []
                ia.extend(ri.setdefault(x, len(ri)) for x in arrs)
                io.append(len(ia))
        for a in range(len(agents)):
            for pc in range(self.w.pc_base[a + 1] - self.w.pc_base[a]):
                for b, slot, x in fpt.later_candidates(a, pc):
                    lb.append(self.bid[b])
                    lp.append(pos(slot))
                    la.append(ri.get(x, -1))
                lo.append(len(lb))
        m.lc_off, m.lc_bar = arr("int64_t[]", lo), arr("int64_t[]", lb)
        m.lc_pos, m.lc_arr = arr("int64_t[]", lp), arr("int64_t[]", la)
        m.n_reinit, m.n_ini = len(ri), len(ini)
        m.ini_agent, m.ini_off, m.ini_arr = (arr("int64_t[]", ini), arr("int64_t[]", io),
                                             arr("int64_t[]", ia))
        self._lmemo = ffi.gc(self.lib.pw_lmemo_new(), self.lib.pw_lmemo_free)
        self._later_cb = ffi.callback(
            "int(int32_t, int32_t, const int32_t *, int32_t, int64_t *, int32_t)", self._later)
        self._lw_rows = arr("int64_t[]", [0] * max(self.rows, 1))
        self._lw_n = ffi.new("int64_t *", 0)
        keep.append(self._lw_n)
        self._slots = slots
        self._gather = itemgetter(*slots) if len(slots) > 1 else (lambda f: (f[slots[0]],))
        self._vals = arr("int64_t[]", [0] * len(slots))
        self._mo = ffi.new("pw_mout *")

    def _static_record(self, ctx: Any, a: int, pc: int) -> tuple:
        """What the marshal reads of warp ``a`` at ``pc`` that does not depend on the
        state: its non-completing and full footprints, the exit pair, its CTA, whether it
        is a cluster-barrier candidate when it does not complete, the named-barrier keys of
        an exit and a named-barrier op, whether it is a wgmma wait, its cluster-arrival
        slot, and its barrier operations (``Closure._current_ops``, flattened)."""
        ClusterArrive, Exit, NamedBarrierOp = self._kinds
        from ...model.program import WgmmaWait
        sysm, fpt, nm = ctx.sys, ctx.fp, self.nm
        ins = sysm.code(a)[pc]
        cta = sysm.agents[a].cta
        nc = fpt.noncompleting[a][pc]
        ep, es, ek, sk = -1, 0, -1, -1
        if nc is not None and isinstance(ins, Exit):
            o = ("exit", cta)
            if o in self.oid:
                ep = self.oid[o] * nm + self.mid["W"]
        cl_static = isinstance(ins, (ClusterArrive, Exit)) and fpt.has_cluster_arrive
        if isinstance(ins, Exit):
            key = (cta, 0)
            if key in fpt.nb_all_threads:
                es = 2 if key in fpt.nb_all_only else 1
                ek = self._key_idx[key]
        if isinstance(ins, NamedBarrierOp):
            sk = self._key_idx[(cta, ins.id)]
        ops: list = []
        for b, k, cnt, x in ctx._ops_at(a, pc):
            ops += [self.bid[b], KINDS.index(k), cnt, x]
        return (nc, fpt.step[a][pc], ep, cta, cl_static, es, ek, sk,
                isinstance(ins, WgmmaWait), sysm.agents[a].carr, tuple(ops))

    def _pairs_of(self, fp: frozenset) -> list[int]:
        """``_pairs`` of one of the footprint tables' own frozensets, memoized by identity
        (they live as long as the tables)."""
        got = self._pairs_id.get(id(fp))
        if got is None or got[0] is not fp:
            got = self._pairs_id[id(fp)] = (fp, self._pairs(fp))
        return got[1]

    def _enablers(self, u: int, out: Any) -> int:
        try:
            add = self._ctx._enablers(self.units[u])
            bits = [0] * self.words
            for x in add:
                i = self.uidx.get(x)
                if i is None:
                    return -1
                bits[i >> 6] |= 1 << (i & 63)
            for j in range(self.words):
                out[j] = bits[j]
            return 0
        except Exception:  # a callback must not raise through C: no answer
            return -1

    def _state(self, ctx: Any) -> None:
        super()._state(ctx)
        if self.fpt is None:
            self._bind(ctx)
        c, st, n = self._c, self._st, len(self.units)
        if self._c_reads:
            self._read_c(ctx)
        else:
            self._read_py(ctx)
        na = len(self._agent_ids)
        c.env_owner = self._buf("env_owner", "int32_t[]", [-1] * na + [
            2 * u[1][1] if u[1][0] == "bulk" else 2 * u[1][1] + 1 if u[1][0] == "cp.async"
            else -1 for u in self.units[na:]])
        st.u_enabled = c.enabled
        st.native_waits = int(NATIVE_WAITS)
        st.key_thr, st.key_now = self._key_thr, c.nb_count
        st.nb_arrived = c.arrived
        st.nw_key = self._nw_key if NATIVE_WAITS else self.ffi.NULL
        st.key_all_only, st.key_cta = self._key_all_only, self._key_cta
        st.key_users_off, st.key_users = self._key_users_off, self._key_users
        st.cta_agents_off, st.cta_agents = self._cta_agents_off, self._cta_agents
        st.wg_n = self._wg_n if NATIVE_WAITS else self.ffi.NULL
        st.wg_sib_off, st.wg_sib = self._wg_sib_off, self._wg_sib
        self.lib.pw_prepare(self.w.c_tables, st)
        c.en_done = self._buf("en_done", "int8_t[]", n=n)
        c.en_sets = self._buf("en_sets", "uint64_t[]", n=n * self.words)
        c.memo = self._buf("memo", "uint64_t[]", n=2 * c.memo_cap * self.words)
        self.lib.pw_closure_reset(c, n)
        self._Tout = self._buf("Tout", "uint64_t[]", n=self.words)

    def _read_c(self, ctx: Any) -> None:
        """The state's reading by ``pw_marshal``, from the values of the slots it reads;
        the environment units' records (few, from the reducer's memos) in Python."""
        c, st, units = self._c, self._st, self.units
        n, words = len(units), self.words
        agents = self._agent_ids
        na = len(agents)
        flat = getattr(ctx.get, "__self__", None)
        if isinstance(flat, list):
            self._vals[0:len(self._slots)] = self._gather(flat)
        else:
            self._vals[0:len(self._slots)] = [ctx.get(x) for x in self._slots]
        buf = self._buf
        c.enabled = buf("m_enabled", "int8_t[]", [int(ctx._enabled(u)) for u in units])
        env_fp: list = []
        env_ops: list = []
        env_fo: list = []
        env_oo: list = []
        for u in units[na:]:
            env_fp.extend(self._pairs(ctx.env_fps[u]))
            for b, k, cnt, x in ctx._current_ops(u):
                env_ops += [self.bid[b], KINDS.index(k), cnt, x]
            env_fo.append(len(env_fp))
            env_oo.append(len(env_ops))
        o = self._mo
        o.pc, o.zero0, o.agent_unit = st.pc, st.zero0, st.agent_unit
        o.phase, o.pending, o.expected, o.tx = st.phase, st.pending, st.expected, st.tx
        o.cur_fp_off = c.cur_fp_off = buf("m_cfo", "int64_t[]", n=n + 1)
        o.cur_fp = c.cur_fp = buf("m_cf", "int64_t[]", n=na * self._max_fp + len(env_fp))
        o.cur_ops_off = c.cur_ops_off = buf("m_coo", "int64_t[]", n=n + 1)
        o.cur_ops = c.cur_ops = buf("m_co", "int64_t[]", n=na * self._max_ops + len(env_ops))
        o.exit_pair = c.exit_pair = buf("m_ep", "int64_t[]", n=n)
        o.ucta = c.ucta = buf("m_ucta", "int32_t[]", n=n)
        o.exit_nbkey = c.exit_nbkey = buf("m_ek", "int32_t[]", n=n)
        o.sync_nbkey = c.sync_nbkey = buf("m_sk", "int32_t[]", n=n)
        o.cl_cand = c.cl_cand = buf("m_cl", "int8_t[]", n=n)
        o.carr0 = c.carr0 = buf("m_carr0", "int8_t[]", n=n)
        o.carr_not1 = c.carr_not1 = buf("m_carr1", "int8_t[]", n=n)
        o.exit_sync = c.exit_sync = buf("m_es", "int8_t[]", n=n)
        o.nb_need = c.nb_need = buf("m_need", "int64_t[]", n=len(self._keys))
        o.nb_count = c.nb_count = buf("m_count", "int64_t[]", n=len(self._keys))
        o.arrived = c.arrived = buf("m_arrived", "int8_t[]", n=len(self._keys) * n)
        o.saturated = c.saturated = buf("m_sat", "int8_t[]", n=len(self._arrays))
        o.hg_held = c.hg_held = buf("m_held", "int8_t[]", n=len(self._hg))
        o.hg_readers = c.hg_readers = buf("m_readers", "uint64_t[]", n=len(self._hg) * words)
        o.observed = c.observed = buf("m_observed", "int8_t[]", n=len(self.t.bars))
        o.wg_cm = st.wg_cm = buf("m_wgcm", "int64_t[]", n=len(ctx.sys.agents))
        ag = buf("m_agents", "int32_t[]", agents)
        self.lib.pw_marshal(self._m, self._vals, ag, na, n, words, o)
        rc = self.lib.pw_later(self._m, self._lmemo, self._vals, ag, na, n, self._later_cb,
                               st.lw_off, st.lw, self._lw_row, self._lw_rows, self._lw_n)
        if rc != 0:
            self._ctx = None  # this state's reading is not complete
            raise SettleUnavailable(f"pw_later: {rc}")
        if n > na:  # the environment units, after the agents
            nf, no, e = o.n_fp, o.n_ops, n - na
            if env_fp:
                c.cur_fp[nf:nf + len(env_fp)] = env_fp
            if env_ops:
                c.cur_ops[no:no + len(env_ops)] = env_ops
            c.cur_fp_off[na + 1:n + 1] = [nf + x for x in env_fo]
            c.cur_ops_off[na + 1:n + 1] = [no + x for x in env_oo]
            c.exit_pair[na:n] = [-1] * e
            c.ucta[na:n] = [-1] * e
            c.exit_nbkey[na:n] = [-1] * e
            c.sync_nbkey[na:n] = [-1] * e
            for name in ("cl_cand", "carr0", "carr_not1", "exit_sync"):
                getattr(c, name)[na:n] = [0] * e

    def _later(self, a: int, pc: int, phases: Any, n: int, out: Any, cap: int) -> int:
        """``pw_later``'s question: ``Footprints.later_waits`` as (pc, barrier id) pairs
        (their number; -1: no answer)."""
        try:
            r = self.fpt.later_waits(a, pc, [phases[i] for i in range(n)])
            if len(r) > cap:
                return -1
            for k, (q, b) in enumerate(r.items()):
                out[2 * k], out[2 * k + 1] = q, self.bid[b]
            return len(r)
        except Exception:  # a callback must not raise through C: no answer
            return -1

    def _read_py(self, ctx: Any) -> None:
        """The state's reading through the ``Closure`` helpers (``NATIVE_MARSHAL``
        False): the reference ``pw_marshal`` is tested against."""
        c = self._c
        sysm, fpt = ctx.sys, ctx.fp
        units = self.units
        n = len(units)

        def arr(ty: str, xs: list, _names: Any = iter(range(1 << 30))) -> Any:
            return self._buf(f"c{next(_names)}", ty, xs)

        enabled, cfo, cf, coo, co = [], [0], [], [0], []
        exit_pair, ucta, cl_cand, carr0, carr_not1 = [], [], [], [], []
        exit_sync, exit_nbkey, sync_nbkey = [], [], []
        get, pcs, statics = ctx.get, ctx.pcs, self._statics
        for u in units:
            enabled.append(int(ctx._enabled(u)))
            if u[0] == "a":
                a = u[1]
                pc = pcs[a]
                rec = statics.get((a, pc))
                if rec is None:
                    rec = statics[(a, pc)] = self._static_record(ctx, a, pc)
                nc, step_fp, ep, cta, cl_static, es, ek, sk, wg_wait, carr_slot, ops = rec
                completes = True if nc is None else ctx._completes(a, pc)
                fp = nc if nc is not None and not completes else step_fp
                if wg_wait:
                    # Closure._current_fp: only the owner counts its warpgroup holds now
                    fp = frozenset(x for x in fp if x[1][:2] != "HG"
                                   or ctx._wg_held(fpt.hold_key[x[1]], x[0][1]))
                    cf.extend(self._pairs(fp))
                else:
                    cf.extend(self._pairs_of(fp))
                carr = get(carr_slot)
                exit_pair.append(ep)
                ucta.append(cta)
                cl_cand.append(int(cl_static and not completes))
                carr0.append(int(carr == 0))
                carr_not1.append(int(carr != 1))
                exit_sync.append(es)
                exit_nbkey.append(ek)
                sync_nbkey.append(sk)
                co.extend(ops)
            else:
                cf.extend(self._pairs(ctx.env_fps[u]))
                for b, k, cnt, x in ctx._current_ops(u):
                    co += [self.bid[b], KINDS.index(k), cnt, x]
                exit_pair.append(-1)
                ucta.append(-1)
                cl_cand.append(0)
                carr0.append(0)
                carr_not1.append(0)
                exit_sync.append(0)
                exit_nbkey.append(-1)
                sync_nbkey.append(-1)
            cfo.append(len(cf))
            coo.append(len(co))
        c.enabled = arr("int8_t[]", enabled)
        st = self._st
        c.cur_fp_off, c.cur_fp = arr("int64_t[]", cfo), arr("int64_t[]", cf)
        c.cur_ops_off, c.cur_ops = arr("int64_t[]", coo), arr("int64_t[]", co)
        c.exit_pair, c.ucta = arr("int64_t[]", exit_pair), arr("int32_t[]", ucta)
        c.cl_cand, c.carr0 = arr("int8_t[]", cl_cand), arr("int8_t[]", carr0)
        c.carr_not1, c.exit_sync = arr("int8_t[]", carr_not1), arr("int8_t[]", exit_sync)
        c.exit_nbkey, c.sync_nbkey = arr("int32_t[]", exit_nbkey), arr("int32_t[]", sync_nbkey)
        need, count = [], []
        arrived = [0] * (len(self._keys) * n)
        for k, key in enumerate(self._keys):
            x = ctx._nb_need(key)
            need.append(-1 if x is None else x)
            count.append(ctx.get(sysm.nb[key]) if key in sysm.nb else 0)
            # Closure._nb_arrived: the warp's flag for the key
            for a, slot in self._nb_slots[k]:
                i = self._agent_unit_list[a]
                if i >= 0 and ctx.get(slot) == 1:
                    arrived[k * n + i] = 1
        c.nb_need, c.nb_count = arr("int64_t[]", need), arr("int64_t[]", count)
        c.arrived = arr("int8_t[]", arrived)
        wg = sysm.wgmma
        st.wg_cm = arr("int64_t[]", [ctx.get(wg.cm[a]) if a in wg.group_of else -1
                                     for a in range(len(sysm.agents))])
        c.saturated = arr("int8_t[]", [int(ctx._saturated(o)) for o in self._arrays])
        # Closure._wg_may_hold, less T: held now, and the members that may still read
        held = [int(ctx._wg_held(key, b)) for key, b in self._hg]
        readers = [0] * max(len(self._hg) * self.words, 1)
        words, unit_of = self.words, self._agent_unit_list
        for key, slots in self._hg_by_key.items():
            for w_ in wg.members[key]:
                i = unit_of[w_]
                if i < 0:
                    continue
                reads = fpt.wgmma_reads_from[w_][ctx.pcs[w_]]
                if reads:
                    for sl, b in slots:
                        if b in reads:
                            readers[sl * words + (i >> 6)] |= 1 << (i & 63)
        c.hg_held = arr("int8_t[]", held)
        c.hg_readers = arr("uint64_t[]", readers)
        get = ctx.get
        c.observed = arr("int8_t[]", [int(base is not None and get(base + 4) == 1)
                                      for base in self._bar_base])

    def stubborn(self, ctx: Any, seed: tuple, best_size: Optional[int]) -> Optional[set]:
        if ctx is not self._ctx:
            self._state(ctx)
        rc = self.lib.pw_stubborn(self.w.c_tables, self._st, self._c, self.uidx[seed],
                                  -1 if best_size is None else best_size, self.w.c_result,
                                  self._out, self._Tout)
        if rc < 0:
            raise SettleUnavailable(f"pw_stubborn: {rc}")
        if rc == 0:
            return None
        T = set()
        for j in range(self.words):
            x = self._Tout[j]
            while x:
                low = x & -x
                T.add(self.units[(j << 6) + low.bit_length() - 1])
                x ^= low
        return T


def closure_factory() -> Optional[Any]:
    """The ``native`` argument of ``por.stubborn_sets``: a maker of ``NativeClosure``s
    (None where cffi or a C compiler is missing, or ``PIPEPROOF_POR_CLOSURE=python``).
    A closure that cannot be built (the C does not compile, a table it cannot hold)
    leaves the Python closure in place."""
    import os

    from .build import unavailable
    if os.environ.get("PIPEPROOF_POR_CLOSURE", "native") == "python" or unavailable():
        return None

    def make(fp: Footprints) -> Optional[NativeClosure]:
        try:
            return NativeClosure(build(fp))
        except (NativeUnavailable, BuildFailed, NativeClosureUnavailable, OSError):
            return None

    return make
