"""What the units outside a stubborn set can do before the set moves, in one state
(``Futures``, the base of ``closure.Closure``).

It reads the state as the closure needs it: pcs, environment units, which units are
enabled, who may arrive at or write an object.  A unit's *future* is the walk of its
program while the set T is frozen (``_future``; walks are shared across states by the
reducer).  The walk stops at blocking instructions that stay blocked
(``_blocked_frozen``, ``_block_requirement``).  The settle analysis
(``_settle_futures``) is the greatest fixpoint of the mbarrier waits that the units
outside T cannot complete on their own, so their futures stop there as well.
"""

from __future__ import annotations

from typing import Any, Optional

from ...model.groups import WARP_SIZE
from ...model.mbarrier import PHASE_MOD
from ...model.program import (BarRef, ClusterArrive, ClusterWait, CpAsyncArrive, Exit,
                              NamedWait, TmaLoad, TryWait, UmmaCommit, Wait, WgmmaWait)
from ...model.system import BULK_MARK, DONE
from .counts import NO_FUTURE, OpsByBar, can_complete, future_tuple, may_complete
from .modes import INF


#: ``Futures._later_waits`` of a warp with no wait a round ahead (shared: never changed)
_NO_LATER: dict = {}
#: entries a reducer's cross-state memo may hold before it is emptied (memory bound)
_MEMO_LIMIT = 1 << 18
#: a settle round re-asks only barriers whose operations changed (False: every barrier,
#: the plain fixpoint -- tests/test_por_memo.py compares the two)
INCREMENTAL_SETTLE = True


class Futures:
    """One state as the closure reads it, and the futures of its units (module
    docstring); ``Closure`` grows the stubborn sets on top of it."""

    def __init__(self, red: Any, state: tuple, get: Any):
        # red: the ``reducer.Reducer`` of the search (its footprints and cross-state
        # memos); not imported here, which would make the modules a circle
        self.red = red
        self.sys = red.sys
        self.fp = red.fp
        self.state = state
        self.get = get
        self.pcs = [get(ag.pc) for ag in self.sys.agents]
        self.env_items = self.sys.env_items_of(get)
        self.env_units = [("e", it) for it in self.env_items]
        # env units targeting each barrier / queue units per agent
        self.env_fps = {u: red.env_fp(u[1]) for u in self.env_units}
        self._en_cache: dict = {}
        self._wr_cache: dict = {}
        #: ``_env_writer_index`` of this state, made when first needed
        self._env_writers: Optional[dict] = None
        self._ar_cache: dict = {}
        #: ``_walk_result`` answers: a pure function of the program tables, shared
        #: by every state (the reducer's ``_walk_memo``)
        self._walk_cache: dict = red._walk_memo
        self._env_future: dict = {}
        self._block_need: dict = {}
        self._waits_cache: dict = {}
        self._cf_size = -1
        self._cf_value = False
        self._frozen_true: set = set()
        self._walk_tree: dict = {}
        self._settle_blocked: set = set()
        #: barriers whose phase cannot complete twice from what the units outside T do
        #: before T moves (``_settle_futures``): a wait that needs two completions
        #: (``Footprints.wait_completions``) stays blocked
        self._settle_blocked2: set = set()
        #: per warp: {pc: barrier} of the waits ahead that need two completions
        self._later_cache: dict = {}
        #: ``_wg_held`` answers of this state
        self._held_cache: dict = {}
        #: (cta, array) some live warp may still initialize (None: not computed)
        self._reinit: Optional[frozenset] = None
        #: where ``_settle_futures`` collects the barriers of ``_settle_blocked`` that
        #: stopped the walk of the future it computes (None: not collecting)
        self._stopped_by: Optional[set] = None
        #: per warp with async work queued: the pcs of that work (every reader asks
        #: ``queued.get(a, [])``: empty queues are left out)
        self.queued: dict[int, list[int]] = {}
        for ag in self.sys.agents:
            q: list = []
            for slot in (ag.qtc, ag.qcp, ag.qbs):
                x = get(slot)
                if x:
                    q.extend(y for y in x if y != BULK_MARK)
            if q:
                self.queued[ag.index] = q

    def _wg_held(self, key: tuple, buf: Any) -> bool:
        """Does a member of warpgroup ``key`` hold an owner count of ``buf`` for its wgmma
        reads now (``model/wgmma.py``: a non-zero due slot)?  (Cached for the state.)"""
        r = self._held_cache.get((key, buf))
        if r is None:
            get = self.get
            r = self._held_cache[(key, buf)] = any(
                get(s) > 0 for s in self.fp.due_slots(key, buf))
        return r

    def _nb_arrived(self, u: tuple, key: tuple) -> bool:
        if u[0] != "a":
            return False
        slot = self.sys.nbflag.get((key[0], key[1], self.sys.agents[u[1]].warp))
        return slot is not None and self.get(slot) == 1

    def _completes(self, a: int, pc: int) -> bool:
        ins = self.sys.code(a)[pc]
        if isinstance(ins, (ClusterArrive, Exit)):
            return all(b == a or p == DONE or self.get(self.sys.agents[b].carr) == 1
                       for b, p in enumerate(self.pcs))
        return True

    def _enabled(self, u: tuple) -> bool:
        r = self._en_cache.get(u)
        if r is None:
            r = self._enabled_uncached(u)
            self._en_cache[u] = r
        return r

    def _enabled_uncached(self, u: tuple) -> bool:
        if u[0] == "e":
            return True
        a = u[1]
        pc = self.pcs[a]
        if pc == DONE:
            return False
        ins = self.sys.code(a)[pc]
        if self.fp.blocking[a][pc]:
            return self.sys._concrete_enabled(_Getter(self.get), a, ins)
        return True

    def _arrivers(self, bar: BarRef) -> set:
        r = self._ar_cache.get(bar)
        if r is not None:
            return r
        out = set()
        for a, pc in enumerate(self.pcs):
            if pc != DONE and bar in self.fp.arrivers_from[a][pc]:
                out.add(("a", a))
        for u in self.env_units:
            it = u[1]
            if it[0] == "tma":
                continue
            a = it[1]
            for pc in self.queued.get(a, []):
                if bar in self.fp.arrivals_of(a, pc):
                    out.add(u)
        self._ar_cache[bar] = out
        return out

    def _writers(self, obj: tuple) -> set:
        """Units that may change ``obj`` from now on (warps through their programs and the
        async work they start or have queued; in-flight deliveries)."""
        r = self._wr_cache.get(obj)
        if r is None:
            r = self._writers_uncached(obj)
            self._wr_cache[obj] = r
        return r

    def _writers_uncached(self, obj: tuple) -> set:
        out = set()
        for a, pc in enumerate(self.pcs):
            if pc == DONE:
                continue
            if obj in self.fp.writers_from[a][pc]:
                out.add(("a", a))
        idx = self._env_writers
        if idx is None:
            idx = self._env_writers = self._env_writer_index()
        got = idx.get(obj)
        if got:
            out |= got
        return out

    def _env_writer_index(self) -> dict:
        """object -> the environment units that may change it: in-flight deliveries
        and queue heads by their own footprint; queued async work of a warp is
        performed by its queue unit (the head), and later entries become heads later:
        they are attributed to the queue's env unit.  (One pass per state.)"""
        idx: dict = {}
        for u in self.env_units:
            for (o, m) in self.env_fps[u]:
                if m not in ("R", "O", "RD"):
                    idx.setdefault(o, set()).add(u)
        for u in self.env_units:
            it = u[1]
            if it[0] == "tma":
                continue
            a = it[1]
            for pc in self.queued.get(a, []):
                for (o, m) in self.fp.future_env[a][pc]:
                    if m not in ("R", "O", "RD"):
                        idx.setdefault(o, set()).add(u)
        return idx

    def _blocked_frozen(self, a: int, pc: int, T: set) -> bool:
        """Does warp ``a``'s blocking instruction at ``pc`` stay blocked while T is frozen?"""
        key = (a, pc)
        got = self._block_need.get(key)
        if got is None:
            ins = self.sys.code(a)[pc]
            got = (self._block_requirement(a, pc),
                   ins.bar if isinstance(ins, (Wait, TryWait)) else None)
            self._block_need[key] = got
        need, bar = got
        if bar is not None and self._settle_blocked2 and bar in self._settle_blocked2 \
                and self._later_waits(a).get(pc) == bar:
            # a wait further down that needs a second completion of a barrier that
            # cannot complete twice before T moves
            if self._stopped_by is not None:
                self._stopped_by.add(("2", bar))
            return True
        if need is None:
            return False
        if bar is not None and bar in self._settle_blocked:
            if self._stopped_by is not None:
                self._stopped_by.add(bar)
            return True
        if key in self._frozen_true:
            return True
        if need == "cluster":
            r = self._cluster_frozen(T)
        else:
            kind, sets = need
            if kind == "threads":
                # a counted named barrier: blocked while the warps outside T that have
                # not arrived cannot bring the current generation to its count
                missing, may = sets
                r = WARP_SIZE * sum(1 for v in may if v not in T) < missing
            else:
                r = kind == "any" and any(x <= T for x in sets)
        if r:  # every test only grows with T, which only grows within a stubborn call
            self._frozen_true.add(key)
        return r

    def _block_requirement(self, a: int, pc: int) -> Any:
        """What T must contain for the instruction to stay blocked: None (it can proceed
        regardless), "cluster", or ("any", [sets]) -- blocked if T includes one of them."""
        ins = self.sys.code(a)[pc]
        if type(ins) is TryWait:
            # "blocked": its phase cannot complete before T moves, so it returns 0 --
            # what keeps a blocking wait on the barrier waiting (a try_wait is always
            # enabled, so this is asked at the warp's own pc too)
            ins = Wait(bar=ins.bar, parity=ins.parity, ghost=ins.ghost)
        elif self.pcs[a] == pc and self._enabled(("a", a)):
            return None
        g = _Getter(self.get)
        if isinstance(ins, Wait):
            if ins.bar.cta != self.sys.agents[a].cta or ins.bar not in self.sys.bar:
                return None
            if self.sys._concrete_enabled(g, a, ins):
                return None
            # the warp itself cannot change the barrier while it sits at this wait; one
            # further down its program may follow its own arrivals on it
            me = {("a", a)} if self.pcs[a] == pc else set()
            options = [self._writers(("bar", ins.bar)) - me]
            # the phase cannot complete while arrivals are missing and every unit that may
            # still arrive on the barrier is frozen (byte completions alone never finish it)
            if self.get(self.sys.bar[ins.bar] + 1) > 0:
                options.append(self._arrivers(ins.bar) - me)
            return ("any", options)
        if isinstance(ins, ClusterWait):
            return "cluster"
        if isinstance(ins, WgmmaWait):
            # blocked while a sibling that has not committed the groups it retires is
            # frozen.  For a wait further down the program the groups only grow (commits
            # add, and a retirement lowers every member's count alike), so a sibling
            # behind now is behind then too
            wg = self.sys.wgmma
            if a not in wg.group_of:
                return None
            k = self.get(wg.cm[a]) - ins.n
            need = [{("a", b)} for b in wg.siblings(a)
                    if b != a and self.pcs[b] != DONE and self.get(wg.cm[b]) < k]
            return ("any", need) if need else None
        if isinstance(ins, NamedWait):
            cta = self.sys.agents[a].cta
            if (cta, ins.id) in self.fp.nb_all_only:
                # bar.sync without a count completes only when every live warp of the CTA
                # has arrived: a live warp of T that has not arrived in this generation
                # keeps it (and any later one) from completing while T is frozen.  This
                # also holds for a wait further down the warp's program.
                need = [{("a", b)} for b in self.sys.agents_of_cta[cta]
                        if b != a and self.pcs[b] != DONE
                        and not self._nb_arrived(("a", b), (cta, ins.id))]
                return ("any", need) if need else None
            key = (cta, ins.id)
            count = self.fp.nb_count.get(key)
            if count is not None:
                # every warp uses the barrier with this thread count and waits right after
                # arriving, so each user adds at most one warp to a generation.  While
                # the current generation stays short of its count, neither it nor any
                # later one completes: this wait, or one further down the warp's program
                # (a later generation), stays blocked.  Warp ``a`` itself is outside T
                # and counted among those that may arrive (PTX ISA 9.7.13.1, bar{.cta}:
                # a generation completes when the expected number of threads arrived)
                missing = count - self.get(self.sys.nb[key])
                may = tuple(("a", b) for b in self.fp.nb_users.get(key, ())
                            if self.pcs[b] != DONE and not self._nb_arrived(("a", b), key))
                return ("threads", (missing, may))
            if self.sys._concrete_enabled(g, a, ins):
                return None
            users = self.fp.nb_users.get((self.sys.agents[a].cta, ins.id), set())
            others = {("a", b) for b in users if b != a and self.pcs[b] != DONE}
            if not others:
                return None
            return ("any", [others])
        return None

    def _future(self, u: tuple, T: set) -> tuple[frozenset, dict, Optional[tuple]]:
        """What unit ``u`` (not in T) may touch before any unit of T moves, how many
        arrivals it may perform on each barrier meanwhile, and its barrier operations
        (None when a loop makes them unbounded)."""
        if u[0] == "e":
            r = self._env_future.get(u)
            if r is None:
                fp = set(self.env_fps[u])
                counts: dict = {}
                it = u[1]
                if it[0] == "tma":
                    _, a0, pc0, d0, _c = it
                    dl = self.sys.code(a0)[pc0].deliveries[d0]
                    ops: list = [(dl.bar, "X", dl.bytes, 0)]
                else:
                    ops = []
                    for pc in self.queued.get(it[1], []):
                        fp |= self.fp.future_env[it[1]][pc]
                        for b, c in self.fp.arrival_counts(it[1], pc).items():
                            counts[b] = counts.get(b, 0) + c
                        ops.extend(o for o in self.fp.bar_ops(it[1], pc) if o[1] != "X")
                r = future_tuple(frozenset(fp), counts, tuple(ops), self.red._bar_id)
                self._env_future[u] = r
            return r
        a = u[1]
        start = self.pcs[a]
        if start == DONE:
            return NO_FUTURE
        frozen_cl = self._cluster_frozen(T)
        # the walk depends on T only through the answers to "is this blocking instruction
        # blocked?", asked in an order fixed by the earlier answers: a decision tree of
        # them per warp (and this state) gives the walk's result without walking again
        node = self._walk_tree.get((a, frozen_cl))
        while node is not None and node[0] == "ask":
            node = node[2].get(self._blocked_frozen(a, node[1], T))
        if node is not None:
            return node[1]
        segs = self.fp.seg_fp_nc[a] if frozen_cl else self.fp.seg_fp[a]
        blocking = self.fp.blocking[a]
        code = self.sys.code(a)
        # nodes (pc, try_wait tokens known to be 0): those 0 now, then each try_wait
        # that cannot see its phase complete before T moves (asked like a wait on the
        # barrier: ``_block_requirement``) -- a branch on a token then takes one side
        locals_ = self.sys.agents[a].locals
        zero0 = tuple(sorted(t for t in self.fp.tokens[a] if self.get(locals_[t]) == 0))
        visited: list[tuple] = []
        asked: list[tuple[int, bool]] = []
        seen: set = set()
        seen_pcs: set = set()
        work: list = [(start, zero0)]
        looped = False
        while work:
            node = work.pop()
            pc, zero = node
            if node in seen or pc in seen_pcs:
                # a pc again: a loop, or branches that rejoin (then it runs once, but
                # perhaps with other tokens known: both are walked)
                looped = looped or not self.fp.acyclic[a]
                if node in seen:
                    continue
            seen.add(node)
            seen_pcs.add(pc)
            if blocking[pc]:
                blocked = self._blocked_frozen(a, pc, T)
                if self._block_need[(a, pc)][0] is not None or pc in self._later_waits(a):
                    asked.append((pc, blocked))  # else never blocked here
                ins = code[pc]
                if type(ins) is TryWait:
                    z = set(zero) - {ins.dest}
                    if blocked:  # its phase cannot complete before T moves: token 0
                        z.add(ins.dest)
                    zero = tuple(sorted(z))
                elif blocked:
                    continue
            visited.append((pc, zero))
            if zero:
                nxt = self.fp.known_segment(a, pc, frozenset(zero), frozen_cl)[3]
                work.extend((q, tuple(sorted(z))) for q, z in nxt)
            else:
                work.extend((q, ()) for q in self.fp.seg_next[a][pc])
        r = self._walk_result(a, frozen_cl, segs, visited, looped)
        self._remember_walk((a, frozen_cl), asked, r)
        return r

    def _remember_walk(self, key: tuple, asked: list[tuple[int, bool]], r: tuple) -> None:
        """Add a walk to its decision tree: nodes ("ask", pc, {answer: child}) along the
        questions it asked, then ("result", r)."""
        if not asked:
            self._walk_tree[key] = ("result", r)
            return
        holder, slot = self._walk_tree, key
        for pc, blocked in asked:
            node = holder.get(slot)
            if node is None:
                node = holder[slot] = ("ask", pc, {})
            assert node[0] == "ask" and node[1] == pc, "the walk is not deterministic"
            holder, slot = node[2], blocked
        holder[slot] = ("result", r)

    def _walk_result(self, a: int, frozen_cl: bool, segs: Any, visited: list[tuple],
                     looped: bool) -> tuple[frozenset, dict, Optional[tuple]]:
        key = (a, frozen_cl, tuple(sorted(visited)), looped)
        r = self._walk_cache.get(key)
        if r is None:
            fp: set = set()
            counts = {}
            ops_l: Optional[list] = []
            for pc, zero in visited:
                if zero:
                    sfp, sarr, so, _n = self.fp.known_segment(a, pc, frozenset(zero),
                                                              frozen_cl)
                else:
                    sfp, sarr, so = segs[pc], self.fp.seg_arr[a][pc], self.fp.seg_ops[a][pc]
                fp |= sfp
                for b, c in sarr.items():
                    counts[b] = counts.get(b, 0) + c
                if so is None or ops_l is None:
                    ops_l = None
                else:
                    ops_l.extend(so)
            if looped:
                counts = {b: INF for b in counts}
                ops_l = None
            r = future_tuple(frozenset(fp), counts, None if ops_l is None else tuple(ops_l),
                              self.red._bar_id)
            if len(self._walk_cache) > _MEMO_LIMIT:
                self._walk_cache.clear()
            self._walk_cache[key] = r
        return r

    def _future_fp(self, u: tuple, T: set) -> frozenset:
        return self._future(u, T)[0]

    # ------------------------------------------------------------------ settle analysis

    def _can_complete(self, bar: BarRef, ops: list, proper_of: Optional[int] = None) -> bool:
        """Could some non-empty subset of ``ops`` on ``bar`` -- a proper one when
        ``proper_of`` gives the number of ops -- complete the barrier's current phase (or
        over-arrive)?  Conservative: True when unsure."""
        base = self.sys.bar[bar]
        pending, tx = self.get(base + 1), self.get(base + 3)
        key = (pending, tx, tuple(ops), proper_of)
        memo = self.red._complete_memo
        r = memo.get(key)
        if r is None:
            if len(memo) > _MEMO_LIMIT:
                memo.clear()
            r = memo[key] = can_complete(pending, tx, ops, proper_of)
        return r

    def _may_complete(self, bar: BarRef, ops: Any, twice: bool = False) -> bool:
        """``_may_complete`` for ``bar`` in this state (memoised by the reducer): may the
        operations complete its current phase (``twice``: and the next)?"""
        base = self.sys.bar[bar]
        pending, expected, tx = self.get(base + 1), self.get(base + 2), self.get(base + 3)
        key = ("phases", twice, pending, expected, tx, tuple(ops))
        memo = self.red._complete_memo
        r = memo.get(key)
        if r is None:
            if len(memo) > _MEMO_LIMIT:
                memo.clear()
            r = memo[key] = may_complete(pending, expected, tx, ops, twice)
        return r

    def _current_ops(self, u: tuple) -> list:
        """Barrier operations of the unit's current step (including, for a TMA issue, none:
        its landings are separate units)."""
        if u[0] == "e":
            it = u[1]
            if it[0] == "tma":
                _, a0, pc0, d0, _c = it
                dl = self.sys.code(a0)[pc0].deliveries[d0]
                return [(dl.bar, "X", dl.bytes, 0)]
            a0, head = it[1], it[2]
            if head == BULK_MARK:
                return []
            return [o for o in self.fp.bar_ops(a0, head) if o[1] != "X"]
        return self._ops_at(u[1], self.pcs[u[1]])

    def _ops_at(self, a: int, pc: int) -> list:
        """Barrier operations of warp ``a``'s step at ``pc`` (``_current_ops`` of a warp
        there: a function of the program alone)."""
        if pc == DONE:
            return []
        ins = self.sys.code(a)[pc]
        if isinstance(ins, (TmaLoad, UmmaCommit, CpAsyncArrive)):
            return [o for o in self.fp.bar_ops(a, pc) if o[1] == "W"]
        return self.fp.bar_ops(a, pc)

    def _stable_wait_bar(self, u: tuple, arrivals: dict) -> Optional[BarRef]:
        """If unit u's current step is a wait on barrier b whose phase is stable outside T
        (see ``stubborn``), return b."""
        if u[0] != "a":
            return None
        a = u[1]
        pc = self.pcs[a]
        ins = self.sys.code(a)[pc]
        if not isinstance(ins, Wait) or ins.bar not in self.sys.bar:
            return None
        base = self.sys.bar[ins.bar]
        pending = self.get(base + 1)
        observed = self.get(base + 4)
        if observed == 1 and pending > 0 and arrivals.get(ins.bar, 0) < pending:
            return ins.bar
        return None

    def _cluster_frozen(self, T: set) -> bool:
        """Can no cluster-barrier generation complete while T is frozen?  True when a warp
        of T is live and has not arrived (its arrival is needed).  Cached for T's size:
        within one ``stubborn`` call T only grows (the cache is reset there)."""
        n = len(T)
        if self._cf_size == n:
            return self._cf_value
        r = self._cluster_frozen_uncached(T)
        self._cf_size, self._cf_value = n, r
        return r

    def _cluster_frozen_uncached(self, T: set) -> bool:
        for u in T:
            if u[0] == "a":
                b = u[1]
                if self.pcs[b] != DONE and self.get(self.sys.agents[b].carr) == 0:
                    return True
        return False

    def _closed_waits(self, a: int) -> frozenset:
        """Barriers of the mbarrier waits ahead of warp ``a`` that cannot pass in this
        state (a property of the state alone: cached for every stubborn set of it)."""
        r = self._waits_cache.get(a)
        if r is None:
            out = set()
            if self.pcs[a] != DONE:
                g = _Getter(self.get)
                for pc in self.fp.waits_from(a, self.pcs[a]):
                    ins = self.sys.code(a)[pc]
                    if ins.bar in self.sys.bar and not self.sys._concrete_enabled(g, a, ins):
                        out.add(ins.bar)
            r = self._waits_cache[a] = frozenset(out)
        return r

    def _later_waits(self, a: int) -> dict:
        """``{pc: barrier}`` of the mbarrier waits ahead of warp ``a`` that need at least
        two completions of their barrier from its current phase (``Footprints.
        wait_completions``), on initialized barriers no live warp may initialize again
        (a property of the state alone: cached; across states by what it reads, the
        warp's pc and those barriers' phases -- the answer is shared, never changed)."""
        r = self._later_cache.get(a)
        if r is None:
            start = self.pcs[a]
            cands = self.fp.later_candidates(a, start) if start != DONE else ()
            if not cands:
                r = _NO_LATER
            else:
                if self._reinit is None:
                    pcs = self.pcs
                    self._reinit = frozenset().union(*(
                        self.fp.inits_from(v, pcs[v]) for v in self.fp.init_agents
                        if pcs[v] != DONE))
                reinit, get = self._reinit, self.get
                key = (a, start) + tuple(-1 if arr in reinit else get(slot) % PHASE_MOD
                                         for _b, slot, arr in cands)
                memo = self.red._later_memo
                r = memo.get(key)
                if r is None:
                    r = self.fp.later_waits(a, start, key[2:])
                    if len(memo) > _MEMO_LIMIT:
                        memo.clear()
                    memo[key] = r
            self._later_cache[a] = r
        return r

    def _settle_futures(self, others: list, T: set) -> tuple[dict, dict, set]:
        """Futures of the units outside T, with the waits that stay blocked before T moves.

        A wait of a unit outside T on barrier b that cannot pass now stays blocked if b's
        current phase cannot complete from what units outside T do before T moves.  Those
        futures themselves stop at blocked waits, so the set is a greatest fixpoint: start
        from every such wait, drop the barriers whose phase the futures (computed with
        the remaining ones blocked) can complete, repeat until nothing is dropped.  Sound
        by induction on time: before the first of the remaining waits passes, every unit
        outside T stays within those futures, which cannot complete any of the barriers,
        so none passes.  (A least fixpoint from the empty set would miss the case where
        a release needed by one blocked wait sits behind another one.)"""
        cands: set = set()
        cands2: set = set()
        for v in others:
            if v[0] == "a":
                cands |= self._closed_waits(v[1])
                cands2.update(self._later_waits(v[1]).values())
        blocked = cands
        # the barriers that cannot complete twice: the same greatest fixpoint, for the
        # waits further down that need a second completion (``_later_waits``)
        blocked2 = cands2
        # a warp's future from the last round, with the barriers of ``blocked`` that
        # stopped its walk: it is the same while none of those is dropped (every other
        # answer of ``_blocked_frozen`` does not depend on ``blocked``)
        last: dict = {}
        dropped: set = set()
        bar_id = self.red._bar_id
        #: ids of the barriers whose operations changed since the last round (None: the
        #: first round, every barrier is asked about)
        changed: Optional[set] = None
        while True:
            self._settle_blocked = blocked
            self._settle_blocked2 = blocked2
            self._walk_cache_round = None
            futures = {}
            for v in others:
                got = last.get(v)
                if got is not None and not (got[1] & dropped):
                    futures[v] = got[0]
                    continue
                self._stopped_by = stopped = set()
                futures[v] = r = self._future(v, T)
                last[v] = (r, stopped)
                if changed is not None and got is not None and r is not got[0]:
                    changed.update(got[0][3])
                    changed.update(r[3])
            self._stopped_by = None
            unbounded: set = set()
            for v in others:
                f = futures[v]
                if f[2] is None:
                    unbounded.update(f[4])
            # operations per barrier, gathered for the barriers asked about
            ops_by_bar = OpsByBar(others, futures, bar_id)
            # a barrier kept in the last round whose operations did not change keeps its
            # answer (the same question again: the futures only grow as barriers drop)
            keep = {b for b in blocked if b not in unbounded
                    and ((changed is not None and bar_id.get(b) not in changed)
                         or not self._may_complete(b, ops_by_bar.get(b, ())))}
            keep2 = {b for b in blocked2 if b not in unbounded
                     and ((changed is not None and bar_id.get(b) not in changed)
                          or not self._may_complete(b, ops_by_bar.get(b, ()), True))}
            if keep == blocked and keep2 == blocked2:
                return futures, ops_by_bar, unbounded
            dropped = (blocked - keep) | {("2", b) for b in blocked2 - keep2}
            blocked, blocked2 = keep, keep2
            changed = set() if INCREMENTAL_SETTLE else None


class _Getter:
    """Adapt a slot reader to the accessor interface ``_concrete_enabled`` expects."""

    __slots__ = ("get",)

    def __init__(self, get: Any):
        self.get = get

    def q_count(self, slot: int, x: Any) -> int:
        return self.get(slot).count(x)
