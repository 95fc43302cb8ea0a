"""The stubborn-set closure in one state (``Closure``).

From a seed unit it grows a set T of units (warps, TMA/CLC deliveries, completion
queues) until Valmari's D1 and D2 hold (``checker/por/__init__.py``).  Two kinds of unit
join it: those that may enable a disabled unit of T, and every unit whose future
(``futures.Futures``) may conflict with an enabled step of T.  The state-dependent
commutations (settle-free barriers, exits that cannot be their CTA's last, exits before
the checks that read them, saturated barrier arrays) are argued at ``_grow`` and
``_conflict``.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ...model.groups import WARP_SIZE
from ...model.program import (BarRef, BulkWaitRead, ClusterArrive, ClusterWait,
                              CpAsyncWaitGroup, Exit, GmemWait, NamedBarrierOp, NamedWait,
                              TmemWait, Wait, WgmmaWait)
from ...model.system import DONE, VIS_CLUSTER, VIS_CTA
from .futures import Futures
from .modes import BAR_OPS, FREE_MODES, Footprint, conflicts


class NativeClosureUnavailable(Exception):
    """A state (or seed) the native closure does not take: the Python closure decides."""


class Closure(Futures):
    """Stubborn-set computation in one state: ``stubborn`` grows a set from a seed."""

    def __init__(self, red: Any, state: tuple, get: Any):
        super().__init__(red, state, get)
        self._units = [("a", i) for i, p in enumerate(self.pcs) if p != DONE] + self.env_units
        #: (futures, {named barrier: gap closers}) of the last ``_nb_gap_closers``
        #: (``others`` is the complement of T, of which ``futures`` is a function)
        self._gap_memo: list = [None, {}]
        #: frozenset(T) -> T after one round of ``_grow``
        self._grow_memo: dict = {}

    def _current_fp(self, u: tuple, holders: dict) -> Footprint:
        """Footprint of the unit's current step; a cluster/named-barrier arrival that does
        not complete the barrier in this state does not touch init visibility, and an
        exit that cannot be its CTA's last (``holders``: see ``_holders``) does not change
        whether the CTA has exited."""
        if u[0] == "a":
            a = u[1]
            pc = self.pcs[a]
            if pc == DONE:
                return frozenset()
            nc = self.fp.noncompleting[a][pc]
            fp = nc if nc is not None and not self._completes(a, pc) else self.fp.step[a][pc]
            if nc is not None and isinstance(self.sys.code(a)[pc], Exit):
                cta = self.sys.agents[a].cta
                if holders.get(cta, set()) - {a}:
                    fp = fp - {(("exit", cta), "W")}
            if isinstance(self.sys.code(a)[pc], WgmmaWait):
                # it gives back only the owner counts its warpgroup holds now
                fp = frozenset(x for x in fp if x[1][:2] != "HG"
                               or self._wg_held(self.fp.hold_key[x[1]], x[0][1]))
            return fp
        return self.env_fps[u]

    def _wg_may_hold(self, key: tuple, buf: Any, T: set, futures: dict) -> bool:
        """May a wait of warpgroup ``key`` give back an owner count of ``buf`` before T
        moves?  Only if a member holds one now, or a member outside T may read the
        buffer with its wgmma before T moves: within its future (``futures``, which
        stops at the waits that stay blocked; a wgmma read's footprint is mode "AR" on
        the buffer).  The reads of the members in T wait for T to move."""
        if self._wg_held(key, buf):
            return True
        ar = (("buf", buf), "AR")
        return any(("a", w) not in T and self.pcs[w] != DONE
                   and buf in self.fp.wgmma_reads_from[w][self.pcs[w]]
                   and ar in futures[("a", w)][0]
                   for w in self.sys.wgmma.members[key])

    def _nb_settle_free(self, index: dict, others: list, futures: dict) -> set:
        """Named barriers whose arrivals by T commute with what units outside T may do
        before T moves: every warp arrives with the same thread count (or every warp
        syncs without one: bar.sync 0) and the arrivals outside T cannot complete the
        current generation on their own.  Then every one of
        those arrivals joins the current generation in any order, the completion (at the
        last one) leaves the same state, and no warp outside T passes its NamedWait
        before T moves (PTX ISA, barrier{.cta}: a generation completes when the expected
        number of threads has arrived)."""
        out = set()
        for obj, modes in index.items():
            if obj[0] != "nb" or modes != {"NA"}:
                continue
            key = (obj[1], obj[2])
            # all-thread barriers: an exit ("NA" too) lowers the need by a warp as an
            # arrival raises the count; each unit outside T closes the gap by at most one
            # warp before T moves (after arriving it waits -- there are no bar.arrive-only
            # users, see Footprints -- and after exiting it is gone; a warp that has
            # arrived in this generation adds nothing), and the live count is fixed
            # meanwhile (exits of units outside T are gap closers)
            if self._nb_cannot_complete(key, others, futures, own=0):
                out.add(obj)
        return out

    def _nb_cannot_complete(self, key: tuple, others: list, futures: dict, own: int) -> bool:
        """Can the current generation of named barrier ``key`` not complete from what units
        outside T may do before T moves plus ``own`` more warp arrivals (or exits) of T?
        False when the expected count is not known statically."""
        need = self._nb_need(key)
        if need is None:
            return False
        n = self._nb_gap_closers(key, others, futures)
        return self.get(self.sys.nb[key]) + WARP_SIZE * (n + own) < need

    def _nb_gap_closers(self, key: tuple, others: list, futures: dict) -> int:
        """How many units outside T may still arrive at (or, for all-thread barriers,
        exit from) named barrier ``key`` before T moves: at most once each.  (Memoised
        for one ``futures``: a round of ``_grow`` asks it for every unit of T.)"""
        memo = self._gap_memo
        if memo[0] is not futures:
            memo[0], memo[1] = futures, {}
        n = memo[1].get(key)
        if n is None:
            obj = ("nb",) + key
            n = memo[1][key] = sum(1 for v in others if (obj, "NA") in futures[v][0]
                                   and not self._nb_arrived(v, key))
        return n

    def _nb_need(self, key: tuple) -> Optional[int]:
        """Threads that complete a generation of named barrier ``key`` (None: unknown)."""
        need = self.fp.nb_count.get(key)
        if need is None and key in self.fp.nb_all_only:
            need = WARP_SIZE * sum(1 for b in self.sys.agents_of_cta[key[0]]
                                   if self.pcs[b] != DONE)
        return need

    def _sync_cannot_complete(self, u: tuple, others: list, futures: dict) -> bool:
        """Is unit u's current step a CTA-wide named-barrier arrival (bar.sync 0 /
        sync_threads, whose completion makes barrier inits CTA-visible) that cannot
        complete the generation, even together with everything units outside T may do
        before T moves?  Then its init-visibility footprint ("M") only sets release
        flags, which no use check reads: it becomes "MR" and commutes with uses ("R")."""
        if u[0] != "a":
            return False
        a = u[1]
        pc = self.pcs[a]
        ins = self.sys.code(a)[pc]
        if not isinstance(ins, NamedBarrierOp):
            return False
        return self._nb_cannot_complete((self.sys.agents[a].cta, ins.id), others, futures,
                                        own=1)

    def _init_settles(self, obj: tuple, T: set) -> bool:
        """May T's init of barrier array ``obj`` (and its release-only steps) commute with
        the visibility updates ("M"/"MR") units outside T may make before T moves?  Yes
        when the array has a single initialising warp (so the others' release flags are
        for other arrays) and no promotion can happen while T is frozen: the cluster
        barrier needs a warp of T, and so does the CTA's bar.sync 0 (it promotes to CTA
        visibility on completion, model.system.System._named_complete)."""
        cta, name = obj[1], obj[2]
        if len(self.sys.initers.get((cta, name), ())) > 1:
            return False
        if not self._cluster_frozen(T):
            return False
        key = (cta, 0)
        if key in self.sys.nb:
            if key not in self.fp.nb_all_only:
                return False
            if not any(u[0] == "a" and self.sys.agents[u[1]].cta == cta
                       and self.pcs[u[1]] != DONE and not self._nb_arrived(u, key)
                       for u in T):
                return False
        return True

    def _cluster_may_complete(self, u: tuple, T: set, futures: dict) -> bool:
        """Is u's current step a cluster arrive or exit that does not complete the cluster
        barrier now (so ``_current_fp`` dropped its promotion) but may once the warps
        outside T that have not arrived arrive (or exit) before T moves?"""
        if u[0] != "a":
            return False
        a = u[1]
        pc = self.pcs[a]
        if pc == DONE or not isinstance(self.sys.code(a)[pc], (ClusterArrive, Exit)):
            return False
        if self._completes(a, pc) or not self.fp.has_cluster_arrive:
            return False  # the full footprint is used already / no generation ever starts
        for b, pb in enumerate(self.pcs):
            if b == a or pb == DONE or self.get(self.sys.agents[b].carr) == 1:
                continue
            v = ("a", b)
            if v in T or ((("cl",), "CA") not in futures[v][0]):
                return False  # b cannot arrive before T moves: no completion
        return True

    def _exit_may_complete_sync(self, u: tuple, others: list, futures: dict) -> bool:
        """Is u's current step an exit that may complete a generation of its CTA's bar.sync
        0 -- the live-thread count drops -- before or together with what units outside T
        do before T moves?  (Counted uses of barrier 0 do not depend on the live count.)"""
        if u[0] != "a":
            return False
        a = u[1]
        pc = self.pcs[a]
        if pc == DONE or not isinstance(self.sys.code(a)[pc], Exit):
            return False
        key = (self.sys.agents[a].cta, 0)
        if key not in self.fp.nb_all_threads:
            return False
        if key not in self.fp.nb_all_only:
            return True
        return not self._nb_cannot_complete(key, others, futures, own=1)

    def _saturated(self, obj: tuple) -> bool:
        """Is the barrier array's init already visible to the whole cluster?  Then the
        monotone visibility updates ("M": fences, releases, cluster-barrier promotes) can
        no longer change what a use of it reads ("R"), so the two commute."""
        slot = self.sys.arr.get((obj[1], obj[2]))
        if slot is None:  # an array of a CTA outside the cluster: the use is a violation
            return False
        vis = self.get(slot)
        # in a cluster of one CTA no use is from another CTA: CTA visibility is the last
        # level any use check (model.system.System.use_check) distinguishes
        return vis == VIS_CLUSTER or (vis == VIS_CTA and self.sys.info.cluster_size == 1)

    def _holders(self, T: set, futures: dict) -> dict:
        """Per CTA, the live warps that stay live until a unit of T moves: those in T and
        those whose future (``_future``) cannot reach their exit.  While one of them is
        live, no other warp's exit is its CTA's last, so such exits commute with
        everything that reads whether the CTA has exited (landings, remote arrives)."""
        out: dict = {}
        for b, pc in enumerate(self.pcs):
            if pc == DONE:
                continue
            cta = self.sys.agents[b].cta
            u = ("a", b)
            if u in T or (("exit", cta), "W") not in futures[u][0]:
                out.setdefault(cta, set()).add(b)
        return out

    def _settle_free(self, bar: BarRef, t_ops: list, non_t: list, t_waits: bool) -> bool:
        """Do the T-current operations on ``bar`` commute with everything units outside T
        may do to it before T moves?  Yes when no phase completion can happen in between:
        no proper subset of all those operations completes the phase (so any completion
        comes after all of them, whatever the order), units outside T cannot complete it
        on their own if T waits on it, and the completed phase is already observed."""
        if bar not in self.sys.bar:
            return False
        base = self.sys.bar[bar]
        if self.get(base + 4) != 1:
            return False
        if t_waits and self._can_complete(bar, non_t):
            return False
        if t_ops:
            allops = list(t_ops) + list(non_t)
            if self._can_complete(bar, allops, proper_of=len(allops)):
                return False
        return True

    def _enablers(self, u: tuple) -> set:
        """Units that may enable the disabled step of warp unit ``u``."""
        a = u[1]
        pc = self.pcs[a]
        ins = self.sys.code(a)[pc]
        if isinstance(ins, Wait):
            return self._writers(("bar", ins.bar)) - {u}
        if isinstance(ins, ClusterWait):
            return {("a", b) for b, p in enumerate(self.pcs)
                    if p != DONE and b != a} 
        if isinstance(ins, NamedWait):
            cta = self.sys.agents[a].cta
            return {("a", b) for b in self.sys.agents_of_cta[cta] if b != a and self.pcs[b] != DONE}
        if isinstance(ins, BulkWaitRead):
            return {v for v in self.env_units if v[1][0] == "bulk" and v[1][1] == a}
        if isinstance(ins, CpAsyncWaitGroup):
            return {v for v in self.env_units if v[1][0] == "cp.async" and v[1][1] == a}
        if isinstance(ins, WgmmaWait):  # the warps of its warpgroup that have not committed
            return {("a", b) for b in self.sys.wgmma.siblings(a)
                    if b != a and self.pcs[b] != DONE}
        if isinstance(ins, GmemWait):  # any warp that may still update the flag
            return {("a", b) for b, p in enumerate(self.pcs)
                    if p != DONE and b != a and self.sys._may_update(b, p, ins.flag)}
        if isinstance(ins, TmemWait):  # the peer CTA's allocator warp (any of its warps)
            peer = self.sys.agents[a].cta ^ 1
            return {("a", b) for b in self.sys.agents_of_cta.get(peer, [])
                    if self.pcs[b] != DONE}
        return set()

    def stubborn(self, seed: tuple, best_size: Optional[int]) -> Optional[set]:
        units = self._units
        T = {seed}
        self._cf_size = -1  # a new T: _cluster_frozen's cache is for the last one
        self._frozen_true: set = set()  # and _blocked_frozen's
        changed = True
        while changed:
            # one round of closure is a function of T alone (in this state): seeds whose
            # sets meet at the same T share the rest of the computation
            key = frozenset(T)
            nxt = self._grow_memo.get(key)
            if nxt is None:
                self._grow(T, units)
                nxt = frozenset(T)
                if self.red.why is None:  # the debugging trace wants every reason
                    self._grow_memo[key] = nxt
            else:
                T = set(nxt)
            changed = nxt != key
            if best_size is not None and sum(1 for u in T if self._enabled(u)) >= best_size:
                return None
        if not any(self._enabled(u) for u in T):
            return None
        return T

    def _grow(self, T: set, units: list) -> None:
        """One round of the closure: add to T the enablers of its disabled warps and the
        units outside T whose future conflicts with an enabled step of T.  Only adds
        (``stubborn`` repeats it until T stops growing)."""
        # enablers of disabled units in T
        for u in list(T):
            if u[0] == "a" and not self._enabled(u):
                add = self._enablers(u) - T
                if add and self.red.why is not None:
                    self.red.why.append(("enablers of", u, tuple(sorted(add, key=repr))))
                if add:
                    T |= add
        # what units outside T may do before T moves; a wait whose barrier cannot
        # complete from what they do alone stays blocked (iterate: fewer futures, fewer
        # operations)
        others = [v for v in units if v not in T]
        futures, ops_by_bar, unbounded = self._settle_futures(others, T)
        arrivals: dict = {}
        for v in others:
            for b, c in futures[v][1].items():
                arrivals[b] = arrivals.get(b, 0) + c
        # conflicts between enabled units of T and what others may do.  Operations on
        # one mbarrier commute when no completion can happen among them (settle-free).
        holders = self._holders(T, futures)
        index: dict = {}
        t_ops_by_bar: dict = {}
        t_waits: set = set()
        for u in T:
            if not self._enabled(u):
                continue
            release_only = self._sync_cannot_complete(u, others, futures)
            fp = self._current_fp(u, holders)
            if self._cluster_may_complete(u, T, futures):
                # not the completing arrival now, but arrivals outside T may make it
                # one before T moves; the completion promotes every CTA's inits
                fp = fp | {(x, "M") for c in self.fp.all_ctas
                           for x in self.fp._arrays_of(c)}
            if self._exit_may_complete_sync(u, others, futures):
                # the exit may complete bar.sync 0 (now or after arrivals outside T),
                # which promotes the CTA's inits (System._named_complete): keep "M"
                fp = fp | {(x, "M") for x in self.fp._arrays_of(self.sys.agents[u[1]].cta)}
            for obj, mode in fp:
                if release_only and mode == "M":
                    mode = "MR"
                index.setdefault(obj, set()).add(mode)
                if obj[0] == "bar" and mode == "O":
                    t_waits.add(obj[1])
            for (b, kind, count, dtx) in self._current_ops(u):
                t_ops_by_bar.setdefault(b, []).append((kind, count, dtx))
        free: set = set()
        for obj in index:
            if obj[0] != "bar":
                continue
            b = obj[1]
            if b in unbounded:
                continue
            modes = index[obj]
            if not modes <= (BAR_OPS | {"O"}):
                continue
            if self._settle_free(b, t_ops_by_bar.get(b, []), ops_by_bar.get(b, []),
                                 b in t_waits):
                free.add(obj)
        free |= self._nb_settle_free(index, others, futures)
        for v in others:
            # T's objects that v's future touches (any conflict adds v: the order of
            # the pairs does not matter)
            fobj = futures[v][5]
            pairs = ((obj, fobj[obj], ms) for obj, ms in index.items() if obj in fobj)
            if self._conflict(v, pairs, holders, free, T, futures):
                T.add(v)

    def _conflict(self, v: tuple, pairs: Iterable, holders: dict, free: set, T: set,
                  futures: dict) -> bool:
        """Does some operation of unit v's future (``modes`` on ``obj``) conflict with an
        operation of an enabled step of T on it (``ms``)?  ``pairs``: (obj, modes, ms).

        EXIT_READS_COMMUTE: v's reads of whether a CTA has exited (remote arrivals,
        landings, TMA stores, peer tensor-memory operations) never conflict with T's
        exits, in this direction only.  The flag only grows (a warp that exits stays
        done: ``System.exited``) and only violation checks read it, so taking T's exit
        before v's reads can only make one of them fail.  Either both orders reach the
        same state, or the one with the exit first is a run of the model that ends in a
        violation, sooner than the other.  Every violation and deadlock of the full
        graph is still matched by one of the reduced graph (the induction on the
        remaining run length goes through: the exit first gives a shorter run to a
        violation).  The other direction stays a conflict: an exit
        outside T (v) may make a read of T fail, which taking T's read first would lose.
        (The lifted 2x2 Hopper GEMM: the idle producer warps' exits conflicted with
        every peer's remote arrivals, so they stayed in every set to the end, 2^12
        orders of them.)"""
        for obj, modes, ms in pairs:
            if not ms or not modes:
                continue
            for mode in modes:
                if obj[0] == "exit":
                    if mode == "R":
                        continue  # see EXIT_READS_COMMUTE
                    if mode == "W" and holders.get(obj[1], set()) - {v[1]}:
                        continue  # not the CTA's last exit
                if obj[0] == "arr" and mode != "W" and "W" not in ms and self._saturated(obj):
                    continue
                if (obj[0] == "arr" and mode in ("M", "MR") and ms <= {"W", "MR", "R"}
                        and self._init_settles(obj, T)):
                    continue
                if obj in free and mode in FREE_MODES:
                    continue
                if mode[:2] == "HG" and not self._wg_may_hold(self.fp.hold_key[mode],
                                                                obj[1], T, futures):
                    continue  # a wgmma wait with no owner count of the buffer to give back
                if any(conflicts(mode, m) for m in ms):
                    if self.red.why is not None:
                        self.red.why.append((v, obj, mode, tuple(sorted(ms))))
                    return True
        return False
