"""Partial-order reduction for the explicit engine: stubborn sets.

In a state ``s`` the engine may explore only the enabled transitions of a *stubborn set*
``T`` of units (warps, and environment units: in-flight TMA/CLC deliveries and the
completion queues of each warp) instead of all enabled transitions.  ``T`` satisfies
Valmari's conditions:

* D1 -- no sequence of transitions of units outside ``T`` can conflict with an enabled
  transition of ``T``, nor enable a disabled one;
* D2 -- ``T`` has an enabled transition that units outside ``T`` cannot disable.

Under D1 and D2 every reachable deadlock of the full graph is reachable in the reduced
graph by a permutation of the same steps, and every violating step still occurs in it
(Valmari, "Stubborn sets for reduced state space generation", 1990; Godefroid,
"Partial-order methods for the verification of concurrent systems", 1996, ch. 4).  A
violation may be reached by a *longer* run, though: when no step of ``T`` is on the
shortest run to it, an enabled step of ``T`` is taken first (p9-bug: 55 steps reduced,
51 shortest).  So ``explicit.check_explicit`` confirms the length with a search without
this reduction.

What a unit outside ``T`` can do before ``T`` moves is over-approximated by walking its
program from its current pc; the walk stops at a blocking instruction that stays blocked
while ``T`` is frozen (a wait whose barrier only ``T`` can change, a cluster wait some
frozen warp has not arrived at).  Conflicts are decided on *operations*, not only on the
objects they touch: two arrivals at a cluster barrier commute, two ``hold``s of a stage
buffer commute, a ``write_begin`` commutes with a ``write_end``, two waits on one barrier
commute, and so on (table ``_COMMUTE``); everything else on a shared object conflicts.
Some pairs commute only in the current state (``_Ctx.stubborn``): arrivals at one
mbarrier or named barrier that units outside T cannot complete on their own
(``_settle_free``, ``_nb_settle_free``; for ``bar.sync 0`` an exit counts as an arrival),
an exit that cannot be its CTA's last (``_holders``), an exit of T before another unit's
check of whether its CTA exited (one way only: ``_Ctx._conflict``, EXIT_READS_COMMUTE),
uses of a barrier array whose init no later promotion can change (``_saturated``), a
CTA-wide ``bar.sync`` arrival that cannot complete even with everything outside T (its
visibility footprint shrinks to release flags, "MR"), and an init while no promotion can
happen (``_init_settles``).
A wait on a counted named barrier stays blocked while the warps outside T that have not
arrived cannot make up the count; a ``try_wait`` whose phase cannot complete before T
moves returns 0, and a walk then takes the failing side of a branch on its token
(``Footprints.known_segment``); a wgmma wait gives back only owner counts its warpgroup
holds or takes within its members' futures ("HG"; docs/engines.md, "Reductions and the
stage buffers' ghost state").  A wait further down a warp's program that needs its
barrier's next phase (``Footprints.wait_completions``) stays blocked while the operations
outside T cannot complete the barrier twice (``_may_complete``; orders that over-arrive
end in a violation, not a completion).

Cost (none of this changes a set: tests/test_por_speed.py compares every state's set with
a frozen copy of the code before it): a round of the closure is a function of T in a
state, so seeds whose sets meet share the rest (``_Ctx._grow``); ``_can_complete`` is a
pure function of the barrier's counts and the operations, memoised across states; a
warp's future is reused across the settle rounds while no barrier that stopped its walk
is dropped; the futures' barrier operations are grouped once per future, by small ints.
A walk's result (footprint, counts, operations of the segments it passed) reads only the
static tables, so it is shared by every state (``Reducer._walk_memo``); a settle round asks
again only about barriers whose operations changed in it; a future carries its footprint
by object, so the conflict check looks up T's few objects in it.  The waits a round ahead
are memoised across states by what they read: the warp's pc and the phases of the
barriers it may wait on (``Reducer._later_memo``; tests/test_por_memo.py compares them with
the answer computed afresh).

The same closure runs in C where cffi and a C compiler are present
(``checker/native/porwalk.py``, passed in as ``stubborn_sets(native=...)`` by the engine):
the same set for every seed (tests/test_por_closure.py); ``Reducer._stubborn`` falls back to
``_Ctx.stubborn`` for a state the C does not take.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Iterable, Optional

from ..model.program import (Arrive, BarRef, Branch, BulkCommit, BulkWaitRead,
                             ClusterArrive, ClusterWait, CompleteTx, CpAsync, CpAsyncArrive,
                             CpAsyncCommit, CpAsyncWaitGroup,
                             Exit, ExpectTx, Fail, FenceMbarInit, GhostEffect, Jump, MbarInit,
                             NamedBarrierOp, NamedWait, Nop, ParamSplit, SetLocal, TmaLoad,
                             TmaStore, TmemAlloc, TmemDealloc, TmemRelinquish, TmemWait,
                             GmemAtomic, GmemFence, GmemWait, GMEM_CTA,
                             TryWait, UmmaCommit, Wait, WgmmaWait, control_successors,
                             eval_dyn, is_acyclic)
from ..model.groups import WARP_SIZE
from ..model import mbarrier as mb
from ..model.mbarrier import PHASE_MOD
from ..model.system import BULK_MARK, DONE, VIS_CLUSTER, VIS_CTA, System
from ..model.values import CONCRETE
from .errors import SetupTimeout

# Operation modes on an object.  Two operations on the same object conflict unless the
# pair is listed here (the relation is symmetric).
_COMMUTE = {
    frozenset(["O"]),             # two waits on one mbarrier (both only set ``observed``)
    frozenset(["R"]),             # reads
    frozenset(["R", "O"]),
    frozenset(["M"]),             # monotone init-visibility updates (fence, releases, promotes)
    frozenset(["MR"]), frozenset(["MR", "M"]), frozenset(["MR", "R"]),  # release flags only
    frozenset(["CA"]),            # cluster-barrier arrivals / exits (order-free completion)
    frozenset(["CW"]), frozenset(["CW", "CA"]),  # a cluster wait that can proceed cannot be
                                  # disabled: no generation completes without its warp
    # (named-barrier arrivals do NOT commute: an arrival may complete a generation and
    # reset the thread count a later arrival is checked against)
    frozenset(["H"]),             # buffer owner counts +-1
    frozenset(["H", "RD"]), frozenset(["H", "WE"]), frozenset(["H", "D"]),
    frozenset(["H", "AR"]), frozenset(["AR"]),  # async reads: check wip/dirty, count +1
    frozenset(["RD"]), frozenset(["RD", "D"]), frozenset(["RD", "AR"]),
    frozenset(["WB"]), frozenset(["WB", "WE"]), frozenset(["WB", "D"]),
    frozenset(["WE", "D"]),
    frozenset(["D"]),
    frozenset(["Q"]),             # queue push (owner) and pop (environment)
    frozenset(["F"]),             # reads of CLC responses: each ORs "a failed response was
                                  # seen" into its CTA's flag (only a try_cancel reads it)
    frozenset(["PR"]),            # reads of the parameter values still possible
    frozenset(["G"]),             # wgmma reads, commits and waits of one warpgroup
                                  # (``Footprints._wg``)
    # "PB" (strict scopes: a release publishing acquired fills) commutes with nothing
}


def _base(m: str) -> str:
    return m[:2] if m[:2] in ("WE", "WB", "AE", "AB") else m


#: asynchronous writes (TMA deliveries, cp.async) behave like thread writes towards
#: every other mode; between the two kinds of writer see ``conflicts``
_ASYNC_WRITE = {"AB": "WB", "AE": "WE"}


def conflicts(m1: str, m2: str) -> bool:
    """Do two operation modes on one object conflict?  (Memoised: modes are few.)"""
    r = _CONFLICTS.get((m1, m2))
    if r is None:
        r = _CONFLICTS[(m1, m2)] = _conflicts(m1, m2)
    return r


_CONFLICTS: dict = {}


def _conflicts(m1: str, m2: str) -> bool:
    # a wgmma wait's owner counts ("HG<warpgroup>", ``Footprints.hold_mode``) are
    # owner counts like any other; only ``_Ctx._conflict`` reads the warpgroup
    m1 = "H" if m1[:2] == "HG" else m1
    m2 = "H" if m2[:2] == "HG" else m2
    # write_begin/write_end modes carry the fill they write: completions of the same fill
    # commute, and a write_begin commutes with a write_end of the same fill (with another
    # fill in flight, the write_begin is a violation only before that write_end lands)
    b1, b2 = _base(m1), _base(m2)
    a1, a2 = b1 in _ASYNC_WRITE, b2 in _ASYNC_WRITE
    if a1 != a2 and {b1, b2} <= {"WB", "WE", "AB", "AE"}:
        # a thread write checks the async writes in flight and the reverse
        # (``System.ghost``): the two kinds of writer never commute
        return True
    if (a1 and b2 == "D") or (a2 and b1 == "D"):
        return True  # an async write checks the generic stores not yet fenced
    if a1:
        b1, m1 = _ASYNC_WRITE[b1], _ASYNC_WRITE[b1] + m1[2:]
    if a2:
        b2, m2 = _ASYNC_WRITE[b2], _ASYNC_WRITE[b2] + m2[2:]
    if b1 == "WE" and b2 == "WE":
        return m1 != m2
    if {b1, b2} == {"WE", "WB"}:
        return m1[2:] != m2[2:]
    return frozenset([b1, b2]) not in _COMMUTE


#: modes of operations that change an mbarrier's pending count or tx-count (commutative
#: among themselves unless one of them can complete the phase: see _Ctx._settle_free)
BAR_OPS = frozenset(["A", "X"])
#: modes of operations on a settle-free barrier that commute with T's (``_Ctx._grow``)
_FREE_MODES = BAR_OPS | {"O", "NA"}


_GHOST_MODE = {"read": "RD", "hold": "H", "unhold": "H", "write_begin": "WB",
               "write_end": "WE", "dirty": "D", "clean": "D", "async_read": "AR",
               "async_write_begin": "AB", "async_write_end": "AE", "tmem_ptr": "RD",
               # a wgmma's read checks like an async read and may take an owner count
               "wgmma_read": "AR"}

Footprint = frozenset  # of (object, mode)
#: a parameter split's footprint: reads and narrows the parameter values still possible
PARAM_FP = (("param",), "PS")
#: a step whose local control flow may pass a split its values decide (``run_local``):
#: it reads them, so a split elsewhere (which may decide it) conflicts with it
PARAM_READ = (("param",), "PR")
INF = 1 << 40
#: ``_Ctx._later_waits`` of a warp with no wait a round ahead (shared: never changed)
_NO_LATER: dict = {}
#: entries a reducer's cross-state memo may hold before it is emptied (memory bound)
_MEMO_LIMIT = 1 << 18
#: a settle round re-asks only barriers whose operations changed (False: every barrier,
#: the plain fixpoint -- tests/test_por_memo.py compares the two)
INCREMENTAL_SETTLE = True


class Footprints:
    """Static footprints of every step of every warp and of environment completions."""

    def __init__(self, sysm: System, deadline: Optional[float] = None):
        self.sys = sysm
        #: ``time.perf_counter()`` value past which the set-up gives up (``SetupTimeout``):
        #: the per-instruction passes below are quadratic in a warp's straight-line code
        #: (an unrolled prologue of 256 stages: over a minute)
        self.deadline = deadline
        n = len(sysm.agents)
        self.init_agent = set().union(*sysm.initers.values()) if sysm.initers else set()
        # thread counts each named barrier is used with (None: all threads of the CTA)
        counts: dict = defaultdict(set)
        # named barriers some warp arrives at without waiting right after (bar.arrive):
        # such a warp may arrive again before the generation completes
        pure_arrive: set = set()
        for ag in sysm.agents:
            code = ag.program.code
            for pc, ins in enumerate(code):
                if isinstance(ins, NamedBarrierOp):
                    counts[(ag.cta, ins.id)].add(ins.count)
                    nxt = code[pc + 1] if pc + 1 < len(code) else None
                    if not (isinstance(nxt, NamedWait) and nxt.id == ins.id):
                        pure_arrive.add((ag.cta, ins.id))
        # used with one and the same explicit thread count by every warp
        self.nb_count = {k: next(iter(v)) for k, v in counts.items()
                         if len(v) == 1 and None not in v and k not in pure_arrive}
        # used without a count by some warp: completion counts live threads
        self.nb_all_threads = {k for k, v in counts.items() if None in v}
        # used without a count by every warp: the expected count is always the CTA's live
        # threads (bar.sync 0 / sync_threads)
        self.nb_all_only = {k for k, v in counts.items() if v == {None} and k not in pure_arrive}
        # without any cluster arrive no cluster-barrier generation ever completes (an exit
        # alone never does: model.system.System._cluster_complete needs an arrival)
        self.has_cluster_arrive = any(isinstance(i, ClusterArrive)
                                      for ag in sysm.agents for i in ag.program.code)
        self.all_ctas = list(range(sysm.info.num_ctas))
        #: ``hold_mode``'s modes by warpgroup, and back
        self._hold_modes: dict = {}
        self.hold_key: dict = {}
        #: per warp and pc, the buffers its wgmma may still read (``_wgmma_reads_from``)
        self.wgmma_reads_from: list[list[frozenset]] = [
            self._wgmma_reads_from(a) if a in sysm.wgmma.group_of else []
            for a in range(n)]
        # step footprint of (agent, pc): the instruction, its ghost effects and the local
        # control flow that follows it within the same step
        self.step: list[list[Footprint]] = []
        # footprint of the asynchronous completions an instruction starts (landings,
        # commit arrivals, ...), which happen later as environment steps
        self.future_env: list[list[Footprint]] = []
        # barriers written (now or through started async work) in the reachable future
        self.writers_from: list[list[frozenset]] = []
        # programs without a back edge: a pc reached twice by a walk is a join of two
        # branches, not a loop (each run passes it at most once)
        self.acyclic: list[bool] = [is_acyclic(sysm.code(a)) for a in range(len(sysm.agents))]
        self.blocking: list[list[bool]] = []
        for a in range(n):
            self._due()
            code = sysm.code(a)
            self.step.append([self._step_fp(a, pc) for pc in range(len(code))])
            self.future_env.append([self._env_fp_of_instr(a, pc) for pc in range(len(code))])
            # a try_wait never blocks, but its result decides where the warp goes: the
            # segments stop at it so that a walk can take its failing side alone
            # (``_Ctx._future``)
            self.blocking.append([isinstance(i, (Wait, NamedWait, ClusterWait, BulkWaitRead,
                                                 CpAsyncWaitGroup, TmemWait, GmemWait,
                                                 WgmmaWait, TryWait))
                                  for i in code])
        #: per warp, the locals its try_waits write (their tokens: 1 when the phase was
        #: complete, else 0)
        self.tokens: list[frozenset] = [
            frozenset(i.dest for i in sysm.code(a) if isinstance(i, TryWait))
            for a in range(n)]
        self._known_memo: dict = {}
        for a in range(n):
            self._due()
            self.writers_from.append(self._suffix_writes(a))
        self.arrivers_from: list[list[frozenset]] = [self._suffix_arrivals(a) for a in range(n)]
        # footprint of a cluster arrive / exit that cannot complete the cluster barrier
        # (some warp has neither arrived nor exited): only the warp's own releases of its
        # CTA's barrier inits remain
        self.noncompleting: list[list[Optional[frozenset]]] = []
        for a in range(n):
            row: list = []
            own_cta = sysm.agents[a].cta
            for pc, ins in enumerate(sysm.code(a)):
                if isinstance(ins, (ClusterArrive, Exit)):
                    f = self.step[a][pc]
                    keep = frozenset(x for x in f if not (
                        x[0][0] == "arr" and x[1] == "M"
                        and not (a in self.init_agent and x[0][1] == own_cta)))
                    row.append(keep)
                else:
                    row.append(None)
            self.noncompleting.append(row)
        # segments: from pc, everything up to the next blocking instructions
        self.seg_fp: list[list[frozenset]] = []
        self.seg_next: list[list[tuple]] = []
        for a in range(n):
            fps, nxts = [], []
            for pc in range(len(sysm.code(a))):
                self._due()
                f, nx = self._segment(a, pc)
                fps.append(f)
                nxts.append(nx)
            self.seg_fp.append(fps)
            self.seg_next.append(nxts)
        # the blocking waits each warp may reach from each pc (settle-blocked
        # refinement): computed when a state asks (``waits_from``), for the pcs the search
        # reaches -- all of them up front cost a walk of the program per pc
        self._waits_from: dict = {}
        self._wait_comp: dict = {}
        self._reach_memo: dict = {}
        # barrier operations per segment (for the settle analysis); None marks a loop
        self.seg_ops: list[list[Optional[tuple]]] = []
        for a in range(n):
            row = []
            for pc in range(len(sysm.code(a))):
                self._due()
                row.append(self._segment_ops(a, pc))
            self.seg_ops.append(row)
        # arrivals (pending decrements) per barrier within each segment
        self.seg_arr: list[list[dict]] = []
        for a in range(n):
            row = []
            for pc in range(len(sysm.code(a))):
                self._due()
                row.append(self._segment_arrivals(a, pc))
            self.seg_arr.append(row)
        # segment footprints with non-completing cluster arrivals/exits
        self.seg_fp_nc: list[list[frozenset]] = []
        for a in range(n):
            row = []
            for pc in range(len(sysm.code(a))):
                self._due()
                row.append(self._segment(a, pc, noncompleting=True)[0])
            self.seg_fp_nc.append(row)
        # named-barrier participants per (cta, id): agents with a NamedBarrierOp on it
        self.nb_users: dict[tuple, set[int]] = defaultdict(set)
        for a, ag in enumerate(sysm.agents):
            for ins in ag.program.code:
                if isinstance(ins, NamedBarrierOp):
                    self.nb_users[(ag.cta, ins.id)].add(a)

    def _due(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise SetupTimeout("the partial-order reduction's set-up")

    def waits_from(self, a: int, pc: int) -> tuple:
        """The pcs of the mbarrier waits warp ``a`` may reach from ``pc`` (memoized)."""
        r = self._waits_from.get((a, pc))
        if r is None:
            code = self.sys.code(a)
            r = self._waits_from[(a, pc)] = tuple(
                sorted(p for p in self._reach(a, pc) if isinstance(code[p], Wait)))
        return r

    def wait_completions(self, a: int, start: int, bar: BarRef, phase: int) -> dict:
        """``{pc: n}`` for the mbarrier waits (``Wait``, ``TryWait``) on ``bar`` that warp
        ``a`` may reach from ``start``, the barrier being in ``phase`` (mod
        ``PHASE_MOD``): n is the fewest completions of ``bar`` (capped at 2) that some
        path to the wait needs before the wait can return True.

        Along a path every blocking wait on ``bar`` must see its condition hold (parity
        differs from the phase, or the stale-parity violation, ``model/mbarrier.py``);
        the phase only moves forward, one step per completion, so the fewest completions
        before each wait are found greedily.  A ``TryWait`` may fail: the path after it
        goes on with the count before it.  Memoized (a pure function of the programs)."""
        key = (a, start, bar, phase)
        r = self._wait_comp.get(key)
        if r is not None:
            return r
        code = self.sys.code(a)
        out: dict = {}
        seen: set = set()
        work = [(start, 0)]
        while work:
            pc, m = work.pop()
            if (pc, m) in seen or pc >= len(code):
                continue
            seen.add((pc, m))
            ins = code[pc]
            nxt = m
            if type(ins) in (Wait, TryWait) and ins.bar == bar:
                k = m
                while k < 2 and not _wait_passes(ins, phase + k):
                    k += 1
                if k < out.get(pc, 3):
                    out[pc] = k
                if type(ins) is Wait:
                    nxt = k
            work.extend((q, nxt) for q in self._successors(a, pc))
        self._wait_comp[key] = out
        return out

    def _reach(self, a: int, pc: int) -> frozenset:
        """The pcs warp ``a`` may reach from ``pc`` by control flow, ``pc`` included
        (memoized, as the sets below derived from it: keys ("w" | "i", a, pc))."""
        r = self._reach_memo.get((a, pc))
        if r is None:
            code = self.sys.code(a)
            seen: set = set()
            work = [pc]
            while work:
                p = work.pop()
                if p in seen or p >= len(code):
                    continue
                seen.add(p)
                work.extend(self._successors(a, p))
            r = self._reach_memo[(a, pc)] = frozenset(seen)
        return r

    def wait_bars_from(self, a: int, pc: int) -> frozenset:
        """Barriers of the mbarrier waits (``Wait``, ``TryWait``) warp ``a`` may reach from
        ``pc``."""
        r = self._reach_memo.get(("w", a, pc))
        if r is None:
            code = self.sys.code(a)
            r = self._reach_memo[("w", a, pc)] = frozenset(
                code[p].bar for p in self._reach(a, pc) if type(code[p]) in (Wait, TryWait))
        return r

    def later_candidates(self, a: int, pc: int) -> tuple:
        """``(barrier, phase slot, (cta, array))`` of the barriers of ``wait_bars_from(a,
        pc)`` in warp ``a``'s own CTA and in the system: the ones ``_Ctx._later_waits``
        asks (memoized; sorted, so that a state's phases make a key)."""
        r = self._reach_memo.get(("l", a, pc))
        if r is None:
            cta = self.sys.agents[a].cta
            r = self._reach_memo[("l", a, pc)] = tuple(sorted(
                ((b, self.sys.bar[b], (b.cta, b.array))
                 for b in self.wait_bars_from(a, pc) if b.cta == cta and b in self.sys.bar),
                key=lambda x: x[1]))
        return r

    def inits_from(self, a: int, pc: int) -> frozenset:
        """(cta, array) of the barriers an ``MbarInit`` warp ``a`` may reach from ``pc``
        initializes: their phase may start again at 0."""
        r = self._reach_memo.get(("i", a, pc))
        if r is None:
            code = self.sys.code(a)
            r = self._reach_memo[("i", a, pc)] = frozenset(
                (code[p].cta, name) for p in self._reach(a, pc)
                if isinstance(code[p], MbarInit) for name, _ in code[p].arrays)
        return r

    # ------------------------------------------------------------------ per instruction

    @staticmethod
    def _wg(a: int) -> tuple:
        """Warp ``a``'s share of its warpgroup's wgmma state (model/wgmma.py: its commit
        count and the groups its reads end with).  The warp's own wgmma reads and
        commits write it, and so does every wait of the warpgroup (which reads all the
        members' counts and retires their groups).  Mode "G": these operations commute
        whenever both are enabled.  A wait retires the warpgroup's groups up to an
        absolute index fixed by its own warp's commits (``WgmmaState.retiring``), and
        the counts are kept relative to the completed groups: two waits retire up to
        the larger index in either order; a sibling's commit adds a group after that
        index (an enabled wait needs no commit it has not got: its target is at most
        the sibling's count); a sibling's read makes its buffer due at the group its
        next commit closes, which is after the index too, so the due slot and the owner
        count end equal in both orders.  What a commit *enables* (a sibling's blocked
        wait) is the enabling relation, which ``_Ctx._enablers`` and
        ``_Ctx._block_requirement`` follow; the owner counts a wait gives back are
        the buffers' own footprint ("HG", ``_wg_hold``)."""
        return (("wg", a), "G")

    def hold_mode(self, key: tuple) -> str:
        """The mode of the owner counts a ``WgmmaWait`` of warpgroup ``key`` gives back:
        "H" for the conflict relation, and it names the warpgroup, so that a state
        where no member holds the buffer, nor may read it before T moves, drops it
        (``_Ctx._wg_may_hold``)."""
        m = self._hold_modes.get(key)
        if m is None:
            m = self._hold_modes[key] = f"HG{len(self._hold_modes)}"
            self.hold_key[m] = key
        return m

    def due_slots(self, key: tuple, buf: Any) -> tuple:
        """The due slots (``model/wgmma.py``) of warpgroup ``key``'s members for ``buf``
        (memoized)."""
        r = self._reach_memo.get(("d", key, buf))
        if r is None:
            due = self.sys.wgmma.due
            r = self._reach_memo[("d", key, buf)] = tuple(
                due[(w, buf)] for w in self.sys.wgmma.members[key] if (w, buf) in due)
        return r

    def _wgmma_reads_from(self, a: int) -> list[frozenset]:
        """For each pc of warp ``a``: the buffers its wgmma may read from there on (the
        program's suffix, loops included)."""
        code = self.sys.code(a)
        out = [set(e.buf for e in ins.pre + ins.post if e.kind == "wgmma_read")
               for ins in code]
        if not any(out):
            return [frozenset()] * len(code)
        changed = True
        while changed:
            changed = False
            for pc in range(len(code) - 1, -1, -1):
                for q in self._successors(a, pc):
                    if q < len(code) and not out[q] <= out[pc]:
                        out[pc] |= out[q]
                        changed = True
        return [frozenset(o) for o in out]

    def _ghost(self, effects: Iterable[GhostEffect], a: int = -1) -> set:
        out = set()
        for e in effects:
            if e.kind == "wgmma_commit":
                out.add(self._wg(a))
                continue
            if e.kind == "wgmma_read":
                out.add(self._wg(a))
            if e.kind == "tmem_use":  # reads the CTA's (and pair's) tensor-memory state
                out |= {(("tmem", c), "R") for c in self.sys.tmem_pair_of(e.buf.cta)}
                continue
            mode = _GHOST_MODE[e.kind]
            if e.buf.cta == GMEM_CTA and mode in ("WE", "WB"):
                # a global region's writes also set its owner and clear every warp's
                # acquisition (System._gmem_ghost): they commute with nothing on it
                mode = "W"
            elif mode in ("WE", "WB", "AE", "AB"):
                mode = f"{mode}{e.tag}"
            out.add((("buf", e.buf), mode))
            if self.sys.tmem and e.buf.buffer in self.sys.tmem_buffers and \
                    e.kind in ("read", "write_begin", "write_end"):
                # an accumulator access checks its CTA's (and pair's) tensor memory
                out |= {(("tmem", c), "R") for c in self.sys.tmem_pair_of(e.buf.cta)}
        return out

    def _arrays_of(self, cta: int) -> list:
        return [("arr", cta, name) for name in self.sys.arrays_of_cta.get(cta, [])]

    def _use(self, bar: BarRef, user_cta: Optional[int]) -> set:
        """What a use of ``bar`` reads besides the barrier: init visibility; a remote user
        also reads whether the target CTA has exited."""
        out = {(("arr", bar.cta, bar.array), "R")}
        if user_cta is None or user_cta != bar.cta:
            out.add((("exit", bar.cta), "R"))
        return out

    def _instr_fp(self, a: int, pc: int) -> set:
        sysm = self.sys
        ag = sysm.agents[a]
        ins = sysm.code(a)[pc]
        fp: set = self._ghost(ins.pre, a) | self._ghost(ins.post, a)
        # strict memory scopes: a passing wait reads the fills it acquires; a cluster-scope
        # release may rewrite the visibility of those (``System._acquire``/``_publish``)
        fp |= {(("buf", b), "RD") for b in sysm.acquired_by(a, ins)}
        fp |= {(("buf", b), "PB") for b in sysm.published_by(a, ins)}
        t = type(ins)
        cta = ag.cta
        if t in (Wait, TryWait):
            fp |= {(("bar", ins.bar), "O")} | self._use(ins.bar, cta)
        elif t is Arrive:
            for arr in ins.arrivals:
                fp |= {(("bar", arr.bar), "W" if ins.drop else "A")} | self._use(arr.bar, cta)
        elif t is CompleteTx:
            fp |= {(("bar", ins.bar), "X")} | self._use(ins.bar, cta)
        elif t is ExpectTx:
            fp |= {(("bar", ins.bar), "W")} | self._use(ins.bar, cta)
        elif t is TmaLoad:
            fp.add((("pool",), "Q"))
            if ins.kind == "clc":
                fp.add((("clc", cta), "R"))
        elif t is CpAsync:
            fp.add((("q", a, "cp"), "Q"))
        elif t is CpAsyncCommit:
            fp.add((("q", a, "cp"), "Q"))
        elif t is CpAsyncWaitGroup:
            fp.add((("q", a, "cp"), "R"))  # the count of the warp's groups in flight
        elif t is CpAsyncArrive:
            fp.add((("q", a, "cp"), "Q"))
            if not ins.noinc:
                fp |= {(("bar", ins.bar), "W")} | self._use(ins.bar, cta)
        elif t is UmmaCommit:
            fp.add((("q", a, "tc"), "Q"))
        elif t in (TmaStore, BulkCommit):
            fp.add((("q", a, "bulk"), "Q"))
        elif t is BulkWaitRead:
            fp.add((("q", a, "bulk"), "R"))
        elif t is WgmmaWait:
            # the warpgroup's group counts, and the owner counts of every buffer its
            # warps' wgmma may still read (model/wgmma.py)
            fp |= {self._wg(b) for b in sysm.wgmma.siblings(a)}
            key = sysm.wgmma.group_of.get(a)
            if key:
                m = self.hold_mode(key)
                fp |= {(("buf", b), m) for _w, b in sysm.wgmma.bufs_of(key)}
        elif t is NamedBarrierOp:
            fp.add((("nb", cta, ins.id), "NA"))
            if ins.id == 0 or ins.count is None:
                fp |= {(x, "M") for x in self._arrays_of(cta)}
        elif t is NamedWait:
            # an enabled NamedWait reads only the warp's own arrival flag, which no other
            # unit can set again (completions only clear it): it conflicts with nothing.
            # Its disabled case is handled by _enablers / _block_requirement.
            pass
        elif t is ClusterArrive:
            fp.add((("cl",), "CA"))
            for c in self.all_ctas:
                fp |= {(x, "M") for x in self._arrays_of(c)}
        elif t is ClusterWait:
            fp.add((("cl",), "CW"))
        elif t is MbarInit:
            for name, _count in ins.arrays:
                fp.add((("arr", ins.cta, name), "W"))
                for s in range(sysm.array_decl[name].stages):
                    fp.add((("bar", BarRef(ins.cta, name, s)), "W"))
        elif t is FenceMbarInit:
            # sets only the warp's own "fenced" flags, never the visibility a use reads
            if a in self.init_agent:
                fp |= {(x, "MR") for x in self._arrays_of(cta)}
        elif t is Exit:
            fp.add((("exit", cta), "W"))
            fp.add((("cl",), "CA"))
            for c in self.all_ctas:
                fp |= {(x, "M") for x in self._arrays_of(c)}
            # an exit changes the live-thread count that only all-thread named barriers
            # (bar.sync without a count) complete against (model.system._named_complete)
            for (c, bid) in self.nb_all_threads:
                if c == cta:
                    fp.add((("nb", c, bid), "NA"))
        elif t is SetLocal:
            if getattr(ins.value, "op", "") == "response":
                fp.add((("buf", ins.value.args[0]), "RD"))
                fp.add((("clc", cta), "F"))
        elif t is ParamSplit:
            # reads and narrows the set of parameter values still possible: two splits
            # conflict (one may decide the other's condition)
            fp.add(PARAM_FP)
        elif t is TmemRelinquish:
            # sets only its own CTA's permit flag, which only an alloc reads
            # (System._tmem_exec): no tensor-memory access or dealloc touches it
            fp.add((("tmem_permit", cta), "W"))
        elif t in (TmemAlloc, TmemDealloc):
            pair = sysm.tmem_pair_of(cta) if getattr(ins, "cta_group", 1) == 2 else (cta,)
            fp |= {(("tmem", c), "W") for c in pair}
            if t is TmemAlloc:  # refused after the CTA's own relinquish
                fp.add((("tmem_permit", cta), "R"))
            if t is TmemDealloc:  # the accumulators must be idle: reads wip and owners
                fp |= {(("buf", r), "R") for c in pair for r in sysm.tmem_bufs.get(c, ())}
            for c in pair:
                if c != cta:
                    fp.add((("exit", c), "R"))
        elif t is TmemWait:
            fp.add((("tmem", cta), "R"))
        elif t is GmemAtomic:
            # the flag word; the update also publishes fills of global data regions
            # (System._gmem_exec reads their ghost and writes their release bits)
            fp.add((("gflag", ins.flag), "W"))
            fp |= {(("buf", b), "W") for b in sysm.gbufs}
        elif t is GmemWait:
            # sets the warp's acquired (or observed) bits from the release bits
            fp.add((("gflag", ins.flag), "R"))
            fp |= {(("buf", b), "W") for b in sysm.gbufs}
        elif t is GmemFence:
            fp |= {(("buf", b), "W") for b in sysm.gbufs}
        elif t in (Fail, Nop, Jump, Branch):
            pass
        if t in (NamedBarrierOp, Exit) and sysm.gbufs:
            # completing a CTA barrier orders its warps after the CTA's global fills
            # (System._gmem_barrier writes their ordered-after bits)
            fp |= {(("buf", b), "W") for b in sysm.gbufs}
        if t is Exit and sysm.tmem:
            # the exit checks the CTA's allocations and its peer's collective wait
            fp |= {(("tmem", c), "R") for c in sysm.tmem_pair_of(cta)}
        return fp

    def _step_fp(self, a: int, pc: int) -> Footprint:
        """The instruction plus the local control flow run in the same step."""
        code = self.sys.code(a)
        fp = self._instr_fp(a, pc)
        seen = set()
        work = [pc + 1] if not isinstance(code[pc], Exit) else []
        while work:
            p = work.pop()
            if p in seen or p >= len(code):
                continue
            seen.add(p)
            ins = code[p]
            if isinstance(ins, Jump):
                work.append(ins.target)
            elif isinstance(ins, Branch):
                work.extend((ins.then, ins.orelse))
            elif isinstance(ins, SetLocal):
                fp |= self._instr_fp(a, p)
                work.append(p + 1)
            elif isinstance(ins, ParamSplit):
                # passed in this step where the values decide it, else the step ends here
                fp.add(PARAM_READ)
                work.append(p + 1)
        return frozenset(fp)

    def _env_fp_of_instr(self, a: int, pc: int) -> Footprint:
        ins = self.sys.code(a)[pc]
        cta = self.sys.agents[a].cta
        fp: set = set()
        if isinstance(ins, TmaLoad):
            for d in ins.deliveries:
                fp |= {(("bar", d.bar), "X")} | self._use(d.bar, None if d.bar.cta == cta else cta)
                fp.add((("exit", d.bar.cta), "R"))
                if d.buf is not None:
                    fp.add((("buf", d.buf), f"AE{d.tag}"))
                    fp.add((("exit", d.buf.cta), "R"))
                    if ins.kind == "clc":
                        fp.add((("buf", d.buf), "W"))  # the response value differs by choice
            fp.add((("pool",), "Q"))
        elif isinstance(ins, UmmaCommit):
            fp |= self._ghost(ins.effects)
            for bar in ins.bars:
                fp |= {(("bar", bar), "A")} | self._use(bar, None if bar.cta == cta else cta)
            fp.add((("q", a, "tc"), "Q"))
        elif isinstance(ins, CpAsyncArrive):
            fp |= self._ghost(ins.effects)
            fp |= {(("bar", ins.bar), "A")} | self._use(ins.bar, None)
            fp.add((("q", a, "cp"), "Q"))
        elif isinstance(ins, CpAsync):
            fp.add((("q", a, "cp"), "Q"))
        elif isinstance(ins, CpAsyncCommit):
            fp |= self._ghost(ins.effects)
            fp.add((("q", a, "cp"), "Q"))
        elif isinstance(ins, TmaStore):
            fp.add((("buf", ins.buf), "H"))
            fp.add((("exit", ins.buf.cta), "R"))
            fp.add((("q", a, "bulk"), "Q"))
        elif isinstance(ins, BulkCommit):
            fp.add((("q", a, "bulk"), "Q"))
        return frozenset(fp)

    def _successors(self, a: int, pc: int) -> list[int]:
        return control_successors(self.sys.code(a), pc)

    def _segment(self, a: int, pc: int, noncompleting: bool = False) -> tuple[frozenset, tuple]:
        """Footprint of pc and of every non-blocking step reachable from it without
        passing another blocking instruction; and the blocking pcs where it stops."""
        def step(p: int) -> frozenset:
            if noncompleting and self.noncompleting[a][p] is not None:
                return self.noncompleting[a][p]
            return self.step[a][p]

        fp: set = set(step(pc)) | set(self.future_env[a][pc])
        frontier = set()
        seen = {pc}
        work = list(self._successors(a, pc))
        while work:
            p = work.pop()
            if p in seen:
                continue
            seen.add(p)
            if self.blocking[a][p]:
                frontier.add(p)
                continue
            fp |= step(p)
            fp |= self.future_env[a][p]
            work.extend(self._successors(a, p))
        return frozenset(fp), tuple(sorted(frontier))

    def known_segment(self, a: int, pc: int, zero: frozenset, noncompleting: bool
                      ) -> tuple[frozenset, dict, Optional[tuple], tuple]:
        """``_segment`` from ``pc`` where the try_wait tokens ``zero`` are known to be 0
        (each failed, ``_Ctx._future``): a branch on them takes one side.  Returns the
        footprint, the arrival counts, the barrier operations (None: a loop inside) and
        the nodes ``(pc, zero)`` where it stops: blocking instructions (a try_wait among
        them), or where a token is written again (with the tokens still known)."""
        key = (a, pc, zero, noncompleting)
        r = self._known_memo.get(key)
        if r is not None:
            return r
        code = self.sys.code(a)

        def step(p: int) -> frozenset:
            if noncompleting and self.noncompleting[a][p] is not None:
                return self.noncompleting[a][p]
            return self.step[a][p]

        def succ(p: int) -> list[int]:
            ins = code[p]
            if isinstance(ins, Branch):
                def get(name: str) -> int:
                    if name in zero:
                        return 0
                    raise KeyError(name)
                try:
                    c = eval_dyn(CONCRETE, ins.cond, get)
                except KeyError:  # reads a value not known here: both sides
                    return [ins.then, ins.orelse]
                return [ins.then if c else ins.orelse]
            return self._successors(a, p)

        fp: set = set(step(pc)) | set(self.future_env[a][pc])
        counts = dict(self.arrival_counts(a, pc))
        ops = list(self.bar_ops(a, pc))
        frontier: set = set()
        seen = {pc}
        looped = False
        work = succ(pc)
        while work:
            p = work.pop()
            if p in seen:
                looped = looped or not self.acyclic[a]
                continue
            seen.add(p)
            ins = code[p]
            if self.blocking[a][p]:
                frontier.add((p, zero))
                continue
            if isinstance(ins, SetLocal) and ins.dest in zero:
                frontier.add((p, zero - {ins.dest}))
                continue
            fp |= step(p)
            fp |= self.future_env[a][p]
            for b, c in self.arrival_counts(a, p).items():
                counts[b] = counts.get(b, 0) + c
            ops.extend(self.bar_ops(a, p))
            work.extend(succ(p))
        if looped:
            counts = {b: INF for b in counts}
        r = (frozenset(fp), counts, None if looped else tuple(ops),
             tuple(sorted(frontier, key=lambda x: (x[0], sorted(x[1])))))
        self._known_memo[key] = r
        return r

    def arrivals_of(self, a: int, pc: int) -> set:
        """Barriers whose pending count the instruction at pc decrements, now or when the
        asynchronous work it starts completes."""
        ins = self.sys.code(a)[pc]
        if isinstance(ins, Arrive):
            return {arr.bar for arr in ins.arrivals}
        if isinstance(ins, UmmaCommit):
            return set(ins.bars)
        if isinstance(ins, CpAsyncArrive):
            return {ins.bar}
        return set()

    def bar_ops(self, a: int, pc: int) -> list:
        """Operations on mbarriers the instruction performs now or when its asynchronous
        work completes: ``(bar, kind, count, tx)`` with kind "A" (arrive: pending -= count,
        tx += tx), "X" (complete_tx: tx -= count) or "W" (anything else)."""
        ins = self.sys.code(a)[pc]
        out: list = []
        if isinstance(ins, Arrive):
            for arr in ins.arrivals:
                out.append((arr.bar, "W" if ins.drop else "A", arr.count, arr.tx))
        elif isinstance(ins, UmmaCommit):
            for b in ins.bars:
                out.append((b, "A", 1, 0))
        elif isinstance(ins, CpAsyncArrive):
            out.append((ins.bar, "A", ins.count, 0))
            if not ins.noinc:
                out.append((ins.bar, "W", 0, 0))
        elif isinstance(ins, TmaLoad):
            for d in ins.deliveries:
                out.append((d.bar, "X", d.bytes, 0))
        elif isinstance(ins, CompleteTx):
            out.append((ins.bar, "X", ins.tx, 0))
        elif isinstance(ins, (ExpectTx, MbarInit)):
            if isinstance(ins, ExpectTx):
                out.append((ins.bar, "W", 0, 0))
            else:
                for name, _c in ins.arrays:
                    for st in range(self.sys.array_decl[name].stages):
                        out.append((BarRef(ins.cta, name, st), "W", 0, 0))
        return out

    def arrival_counts(self, a: int, pc: int) -> dict:
        """Arrival counts per barrier of the instruction at pc (now or when it fires)."""
        ins = self.sys.code(a)[pc]
        out: dict = {}
        if isinstance(ins, Arrive):
            for arr in ins.arrivals:
                out[arr.bar] = out.get(arr.bar, 0) + arr.count
        elif isinstance(ins, UmmaCommit):
            for b in ins.bars:
                out[b] = out.get(b, 0) + 1
        elif isinstance(ins, CpAsyncArrive):
            out[ins.bar] = out.get(ins.bar, 0) + ins.count
        return out

    def _segment_ops(self, a: int, pc: int) -> Optional[tuple]:
        ops = list(self.bar_ops(a, pc))
        seen = {pc}
        work = list(self._successors(a, pc))
        while work:
            p = work.pop()
            if p in seen:
                if self.acyclic[a]:
                    continue  # two branches join again (no back edge: not a loop)
                return None  # a loop inside the segment: unbounded
            seen.add(p)
            if self.blocking[a][p]:
                continue
            ops.extend(self.bar_ops(a, p))
            work.extend(self._successors(a, p))
        return tuple(ops)

    def _segment_arrivals(self, a: int, pc: int) -> dict:
        counts = dict(self.arrival_counts(a, pc))
        seen = {pc}
        work = list(self._successors(a, pc))
        looped = False
        while work:
            p = work.pop()
            if p in seen:
                looped = looped or not self.acyclic[a]
                continue
            seen.add(p)
            if self.blocking[a][p]:
                continue
            for b, c in self.arrival_counts(a, p).items():
                counts[b] = counts.get(b, 0) + c
            work.extend(self._successors(a, p))
        if looped:
            counts = {b: INF for b in counts}
        return counts

    def _suffix_arrivals(self, a: int) -> list[frozenset]:
        n = len(self.sys.code(a))
        out = [set(self.arrivals_of(a, pc)) for pc in range(n)]
        changed = True
        while changed:
            changed = False
            for pc in range(n - 1, -1, -1):
                for q in self._successors(a, pc):
                    if not out[q] <= out[pc]:
                        out[pc] |= out[q]
                        changed = True
        return [frozenset(o) for o in out]

    def _suffix_writes(self, a: int) -> list[frozenset]:
        """For each pc: the objects the warp may write (W, or any mode that changes what a
        waiter sees) from pc on, directly or through asynchronous work it starts."""
        code = self.sys.code(a)
        n = len(code)
        succ: list[list[int]] = []
        for pc, ins in enumerate(code):
            if isinstance(ins, Exit):
                succ.append([])
            elif isinstance(ins, Jump):
                succ.append([ins.target])
            elif isinstance(ins, Branch):
                succ.append([ins.then, ins.orelse])
            else:
                succ.append([pc + 1] if pc + 1 < n else [])
        own = []
        for pc in range(n):
            objs = set()
            for (obj, mode) in self.step[a][pc] | self.future_env[a][pc]:
                if mode not in ("R", "O", "RD"):
                    objs.add(obj)
            own.append(objs)
        # fixpoint over the control-flow graph (loops close with back edges)
        out = [set(o) for o in own]
        changed = True
        while changed:
            changed = False
            for pc in range(n - 1, -1, -1):
                for q in succ[pc]:
                    if not out[q] <= out[pc]:
                        out[pc] |= out[q]
                        changed = True
        return [frozenset(o) for o in out]


def _fp_conflict(f1: Iterable, f2: Footprint) -> bool:
    """Do two footprints conflict on some object?"""
    by_obj: dict = {}
    for obj, mode in f2:
        by_obj.setdefault(obj, []).append(mode)
    for obj, mode in f1:
        ms = by_obj.get(obj)
        if ms:
            for m in ms:
                if conflicts(mode, m):
                    return True
    return False


class Reducer:
    """Compute stubborn sets in concrete states.

    Fast path (``safe``): a warp's enabled step that conflicts with nothing any *other*
    warp's whole program (or the asynchronous work it starts) may ever do is a stubborn
    set on its own -- nothing outside can interfere with it or disable it -- so it is
    explored alone.  Cluster arrivals that do not complete the barrier, exits that do not
    complete it and no-op fences are typical: the prologue of a kernel collapses to one
    order.  Only when no such step exists is the full computation run (``full=True``).
    """

    def __init__(self, sysm: System, explorer: Any, full: bool = True,
                 deadline: Optional[float] = None,
                 native: Optional[Callable[[Footprints], Any]] = None):
        self.sys = sysm
        self.ex = explorer
        self.fp = Footprints(sysm, deadline)
        self.full = full
        #: the closure in native code (``native/porwalk.py`` ``NativeClosure``: the same
        #: sets, tests/test_por_closure.py), made by ``native`` from the footprints; None:
        #: the Python closure.  States it does not take go to the Python closure
        #: (counted in ``native_fallbacks``)
        self.native = native(self.fp) if native is not None and full else None
        self.native_calls = 0
        self.native_fallbacks = 0
        #: a list to collect why units join a stubborn set (debugging), or None
        self.why: Optional[list] = None
        # object -> {agent: modes} over each warp's whole program and async work
        self.touch: dict = {}
        for a in range(len(sysm.agents)):
            for pc in range(len(sysm.code(a))):
                for obj, mode in self.fp.step[a][pc] | self.fp.future_env[a][pc]:
                    self.touch.setdefault(obj, {}).setdefault(a, set()).add(mode)
        self._safe_cache: dict = {}
        #: ``_can_complete`` answers by (pending, tx, ops, proper_of), across states
        self._complete_memo: dict = {}
        #: a small int per barrier (``_future_tuple``), across states
        self._bar_id: dict = {}
        #: ``_Ctx._walk_result`` by (warp, cluster frozen, pcs walked, looped), across
        #: states: it reads only the static segment tables
        self._walk_memo: dict = {}
        #: ``_Ctx._later_waits`` answers by (warp, pc, phases it reads), across states
        self._later_memo: dict = {}
        #: seed position -> how often it gave the chosen stubborn set: tried first later
        self._hits: dict = {}

    def safe_point(self, a: int, pc: int) -> bool:
        """Is warp ``a``'s step at ``pc`` safe by its static footprint alone (without the
        state-dependent cases of ``safe_step``)?"""
        return self._safe(a, self.fp.step[a][pc])

    def _safe(self, a: int, fp: frozenset) -> bool:
        key = (a, fp)
        r = self._safe_cache.get(key)
        if r is None:
            r = True
            for obj, mode in fp:
                for b, modes in self.touch.get(obj, {}).items():
                    if b != a and any(conflicts(mode, m) for m in modes):
                        r = False
                        break
                if not r:
                    break
            self._safe_cache[key] = r
        return r

    def safe_step(self, state: tuple, enabled: list[tuple]) -> Optional[list[tuple]]:
        """The steps of one warp whose current step is safe (see the class docstring)."""
        get = None
        for e in enabled:
            step = e[0]
            if step[0] != "a":
                continue
            a = step[1]
            if get is None:
                get = self.ex.getter(state)
            pc = get(self.sys.agents[a].pc)
            nc = self.fp.noncompleting[a][pc]
            if nc is not None and not self._completes_now(get, a):
                fp = nc
            else:
                fp = self.fp.step[a][pc]
            if PARAM_FP in fp and self._uniform_split(get, a, pc):
                fp = fp - {PARAM_FP}
            if self._safe(a, fp):
                return [x for x in enabled if x[0][0] == "a" and x[0][1] == a]
        return None

    def _uniform_split(self, get: Any, a: int, pc: int) -> bool:
        """A parameter split whose condition every value still possible decides alike
        (``System.split_sides``): it leaves the parameter bits as they are (only the
        warp's pc moves), and other splits only remove values, which keeps it decided.
        So it conflicts with no other unit's step, now or later -- unless another warp
        sits at a split of the same condition, which it moves on too (it would move this
        warp on as well)."""
        ins = self.sys.code(a)[pc]
        if not isinstance(ins, ParamSplit):
            return False
        inside, outside = self.sys.split_sides(CONCRETE, get, ins)
        if inside and outside:
            return False
        return not any(get(self.sys.agents[b].pc) == q
                       for b, q in self.sys.split_partners(a, ins))

    def _completes_now(self, get: Any, a: int) -> bool:
        for b, ag in enumerate(self.sys.agents):
            if b != a and get(ag.pc) != DONE and get(ag.carr) != 1:
                return False
        return True

    # units: ("a", agent) for warps; ("e", item) for environment items

    def env_fp(self, item: tuple) -> Footprint:
        kind = item[0]
        if kind == "tma":
            _, a, pc, d, _choice = item
            ins = self.sys.code(a)[pc]
            dl = ins.deliveries[d]
            cta = self.sys.agents[a].cta
            fp = {(("bar", dl.bar), "X"), (("pool",), "Q"), (("exit", dl.bar.cta), "R"),
                  (("arr", dl.bar.cta, dl.bar.array), "R")}
            if dl.buf is not None:
                fp.add((("buf", dl.buf), f"AE{dl.tag}"))
                fp.add((("exit", dl.buf.cta), "R"))
                if ins.kind == "clc":
                    fp.add((("buf", dl.buf), "W"))
            return frozenset(fp)
        a, head = item[1], item[2]
        if kind == "bulk" and head == BULK_MARK:
            return frozenset({(("q", a, "bulk"), "Q")})
        return self.fp.future_env[a][head]

    def reduce(self, state: tuple, enabled: list[tuple]) -> list[tuple]:
        """Given the enabled steps of ``state`` (tuples whose first item is the step, the
        rest carried along: ``Explorer.successors`` passes ``(step, S, outcome)`` before
        the kept ones are made states), return those of a smallest stubborn set found
        (trying each enabled unit as the seed).

        Seeds whose position (warp and pc, or environment item) gave the chosen set most
        often so far go first: every seed gives a stubborn set, so the order is only
        about how soon a set with one enabled step ends the search (K3: 3.2 seeds tried
        a state and 24 s in smallest-unit order; 2.0 and 18 s this way)."""
        units = {}
        for e in enabled:
            units.setdefault(_unit(e[0]), []).append(e)
        if len(units) <= 1:
            return enabled
        one = self.safe_step(state, enabled)
        if one is not None:
            return one
        if not self.full:
            return enabled
        get = self.ex.getter(state)
        ctx = _Ctx(self, state, get)
        best: Optional[set] = None
        best_pos = None
        pos = {u: (u[0], u[1], ctx.pcs[u[1]]) if u[0] == "a" else u for u in units}
        hits = self._hits
        for u in sorted(units, key=lambda u: (-hits.get(pos[u], 0), len(units[u]))):
            t = self._stubborn(ctx, u, None if best is None else _count(best, units))
            if t is None:
                continue
            if best is None or _count(t, units) < _count(best, units):
                best, best_pos = t, pos[u]
                if _count(best, units) == 1:
                    break
        if best is None:
            return enabled
        hits[best_pos] = hits.get(best_pos, 0) + 1
        return [e for e in enabled if _unit(e[0]) in best]


    def _stubborn(self, ctx: "_Ctx", seed: tuple, best_size: Optional[int]) -> Optional[set]:
        """``ctx.stubborn``, by the native closure where there is one and it takes the
        state (the debugging trace ``why`` wants the Python one)."""
        if self.native is not None and self.why is None:
            try:
                t = self.native.stubborn(ctx, seed, best_size)
                self.native_calls += 1
                return t
            except NativeClosureUnavailable:
                self.native_fallbacks += 1
        return ctx.stubborn(seed, best_size=best_size)


class NativeClosureUnavailable(Exception):
    """A state (or seed) the native closure does not take: the Python closure decides."""


def _unit(step: tuple) -> tuple:
    if step[0] == "a":
        return ("a", step[1])
    return ("e", step[1])


def _count(t: set, units: dict) -> int:
    return sum(len(units[u]) for u in t if u in units)


class _Ctx:
    """Stubborn-set computation in one state."""

    def __init__(self, red: Reducer, state: tuple, get: Any):
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
        self._units = [("a", i) for i, p in enumerate(self.pcs) if p != DONE] + self.env_units
        #: (futures, {named barrier: gap closers}) of the last ``_nb_gap_closers``
        #: (``others`` is the complement of T, of which ``futures`` is a function)
        self._gap_memo: list = [None, {}]
        #: frozenset(T) -> T after one round of ``_grow``
        self._grow_memo: dict = {}
        self.queued: dict[int, list[int]] = {}
        for ag in self.sys.agents:
            q = []
            for slot in (ag.qtc, ag.qcp, ag.qbs):
                q.extend(x for x in get(slot) if x != BULK_MARK)
            self.queued[ag.index] = q

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

    def _wg_held(self, key: tuple, buf: Any) -> bool:
        """Does a member of warpgroup ``key`` hold an owner count of ``buf`` for its wgmma
        reads now (``model/wgmma.py``: a non-zero due slot)?  (Cached for the state.)"""
        r = self._held_cache.get((key, buf))
        if r is None:
            get = self.get
            r = self._held_cache[(key, buf)] = any(
                get(s) > 0 for s in self.fp.due_slots(key, buf))
        return r

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

    def _nb_arrived(self, u: tuple, key: tuple) -> bool:
        if u[0] != "a":
            return False
        slot = self.sys.nbflag.get((key[0], key[1], self.sys.agents[u[1]].warp))
        return slot is not None and self.get(slot) == 1

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
                r = _future_tuple(frozenset(fp), counts, tuple(ops), self.red._bar_id)
                self._env_future[u] = r
            return r
        a = u[1]
        start = self.pcs[a]
        if start == DONE:
            return _NO_FUTURE
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
            r = _future_tuple(frozenset(fp), counts, None if ops_l is None else tuple(ops_l),
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
            r = memo[key] = _can_complete(pending, tx, ops, proper_of)
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
            r = memo[key] = _may_complete(pending, expected, tx, ops, twice)
        return r

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
        a = u[1]
        pc = self.pcs[a]
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
                    self._reinit = frozenset().union(*(
                        self.fp.inits_from(v, p) for v, p in enumerate(self.pcs)
                        if p != DONE))
                reinit, get = self._reinit, self.get
                key = (a, start) + tuple(-1 if arr in reinit else get(slot) % PHASE_MOD
                                         for _b, slot, arr in cands)
                memo = self.red._later_memo
                r = memo.get(key)
                if r is None:
                    r = {}
                    for (b, _slot, _arr), phase in zip(cands, key[2:]):
                        if phase < 0:
                            continue
                        for pc, n in self.fp.wait_completions(a, start, b, phase).items():
                            if n >= 2:
                                r[pc] = b
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
            ops_by_bar = _OpsByBar(others, futures, bar_id)
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
                if obj in free and mode in _FREE_MODES:
                    continue
                if mode[:2] == "HG" and not self._wg_may_hold(self.fp.hold_key[mode],
                                                                obj[1], T, futures):
                    continue  # a wgmma wait with no owner count of the buffer to give back
                if any(conflicts(mode, m) for m in ms):
                    if self.red.why is not None:
                        self.red.why.append((v, obj, mode, tuple(sorted(ms))))
                    return True
        return False


def _future_tuple(fp: frozenset, counts: dict, ops: Optional[tuple], bar_id: dict) -> tuple:
    """A unit's future (``_Ctx._future``): footprint, arrival counts per barrier, barrier
    operations (None: unbounded), those operations per barrier
    ``{bar_id[bar]: ((kind, count, tx), ...)}`` (small ints: a ``BarRef`` hashes slowly),
    the barriers the footprint touches, and the footprint's modes per object (so that
    ``_Ctx._conflict`` looks up T's few objects instead of walking the footprint)."""
    grouped: dict = {}
    for (b, kind, count, dtx) in ops or ():
        i = bar_id.get(b)
        if i is None:
            i = bar_id[b] = len(bar_id)
        grouped.setdefault(i, []).append((kind, count, dtx))
    bars = tuple(obj[1] for obj, _m in fp if obj[0] == "bar")
    by_obj: dict = {}
    for obj, m in fp:
        by_obj.setdefault(obj, []).append(m)
    return (fp, counts, ops, {b: tuple(x) for b, x in grouped.items()}, bars,
            {obj: tuple(ms) for obj, ms in by_obj.items()})


_NO_FUTURE = _future_tuple(frozenset(), {}, (), {})


class _OpsByBar:
    """The barrier operations of the bounded futures of ``others``, per barrier (``get``):
    for each barrier the tuple, in the same order, that appending the operations of each
    future in turn gives (``_future_tuple`` groups them per future, by barrier id).
    A tuple (made when first asked), so that ``_can_complete``'s memo key costs no copy."""

    __slots__ = ("by_id", "bar_id")

    def __init__(self, others: list, futures: dict, bar_id: dict):
        by_id: dict = {}
        for v in others:
            f = futures[v]
            if f[2] is None:
                continue
            for i, ops in f[3].items():
                got = by_id.get(i)
                if got is None:
                    by_id[i] = [ops]
                else:
                    got.append(ops)
        self.by_id = by_id
        self.bar_id = bar_id

    def get(self, bar: Any, default: Any = None) -> Any:
        i = self.bar_id.get(bar)
        if i is None:
            return default
        got = self.by_id.get(i)
        if got is None:
            return default
        if type(got) is list:
            got = self.by_id[i] = got[0] if len(got) == 1 else sum(got, ())
        return got


def _can_complete(pending: int, tx: int, ops: Any, proper_of: Optional[int]) -> bool:
    """``_Ctx._can_complete`` for a barrier with ``pending`` arrivals and ``tx`` bytes
    outstanding (a pure function of its arguments: memoised by the reducer)."""
    states = {(0, 0, 0)}
    for kind, count, dtx in ops:
        if kind == "W":
            return True
        da, dt = (count, dtx) if kind == "A" else (0, -count)
        new = set()
        for (am, tm, k) in states:
            a2 = am + da
            if a2 > pending:
                return True  # some order over-arrives
            new.add((a2, tm + dt, k + 1))
        states |= new
        if len(states) > 4096:
            return True
    for (am, tm, k) in states:
        if k == 0:
            continue
        if proper_of is not None and k == proper_of:
            continue
        if am == pending and tx + tm == 0:
            return True
    return False


def _wait_passes(ins: Any, phase: int) -> bool:
    """Would the mbarrier wait ``ins`` return True with its barrier in ``phase`` (mod
    ``PHASE_MOD``)?  The model's rules (``model/mbarrier.py``, as ``System`` applies them):
    its phase is complete (``wait_done``), or the waiter's ghost phase is stale, a
    violation step that is enabled too (``stale_check``)."""
    b = mb.MBarrier(phase % PHASE_MOD, 0, 0, 0, 1)
    if mb.wait_done(CONCRETE, b, ins.parity):
        return True
    return ins.ghost is not None and bool(mb.stale_check(CONCRETE, b, ins.ghost).condition)


def _may_complete(pending: int, expected: int, tx: int, ops: Any, twice: bool) -> bool:
    """Can the operations ``ops`` of units outside T complete the barrier's current
    phase (``twice``: that phase and the next), in some order?

    A phase completes when its pending count and tx-count both reach 0 (PTX ISA
    mbarrier, 'Phase Completion'); the next starts with the expected count and tx-count
    0.  So a completion needs a set of the operations whose arrivals make up the
    pending count exactly and whose tx-count changes cancel the tx-count; two need two
    disjoint such sets.  An order in which an arrival finds no pending arrival left is
    an ``arrival-overflow`` violation (``model/mbarrier.arrive``), which ends that run
    before any completion, so such sets are not counted (the violation step itself is
    in the unit's future, and the conflicts with it are ``_settle_free``'s, which does
    count over-arrivals).  Arrival counts are never negative (a pending-count increment
    is an unknown operation, "W", in ``Footprints.bar_ops``), so a set whose arrivals fit
    the count over-arrives in no order, and the sums need no order.  True when unsure:
    an unknown operation or too many partial sums."""
    states = {(0, 0, 0, 0, 0)}
    for kind, count, dtx in ops:
        if kind == "W":
            return True
        da, dt = (count, dtx) if kind == "A" else (0, -count)
        new = set()
        for (a1, t1, a2, t2, k) in states:
            if a1 + da <= pending:
                new.add((a1 + da, t1 + dt, a2, t2, k | 1))
            if twice and a2 + da <= expected:
                new.add((a1, t1, a2 + da, t2 + dt, k | 2))
        states |= new
        if len(states) > 4096:
            return True
    if twice:
        return any(k == 3 and a1 == pending and tx + t1 == 0 and a2 == expected and t2 == 0
                   for (a1, t1, a2, t2, k) in states)
    return any(k and a1 == pending and tx + t1 == 0 for (a1, t1, _a2, _t2, k) in states)


class _Getter:
    """Adapt a slot reader to the accessor interface ``_concrete_enabled`` expects."""

    __slots__ = ("get",)

    def __init__(self, get: Any):
        self.get = get

    def q_count(self, slot: int, x: Any) -> int:
        return self.get(slot).count(x)


def stubborn_sets(full: bool, deadline: Optional[float] = None,
                  native: Optional[Callable[[Footprints], Any]] = None
                  ) -> Callable[[Any], Reducer]:
    """The ``reduction`` argument of ``statespace.Explorer``: a ``Reducer`` over that
    explorer -- the safe steps alone, or with ``full`` the whole stubborn-set
    computation.  Passed from above so that the state space knows nothing of it.
    ``deadline`` (a ``time.perf_counter()`` value): its set-up raises ``SetupTimeout``
    past it.  ``native``: makes the native closure from the footprints (or None)."""
    return lambda explorer: Reducer(explorer.sys, explorer, full=full, deadline=deadline,
                                    native=native)
