"""Static footprints of the stubborn-set reduction: for every warp and pc, what its step
may touch and with which mode (``modes``), what the asynchronous work it starts may
touch later, the segments of its program between blocking instructions with their
footprints, arrivals and barrier operations, and the waits ahead of it.  Computed once
per program (``Footprints``); the closure (``closure.py``) and its native twin
(``checker/native/porwalk.py`` over ``tables.py``) read them in every state.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Iterable, Optional

from ...model.program import (Arrive, BarRef, Branch, BulkCommit, BulkWaitRead, ClusterArrive,
                              ClusterWait, CompleteTx, CpAsync, CpAsyncArrive, CpAsyncCommit,
                              CpAsyncWaitGroup, Exit, ExpectTx, Fail, FenceMbarInit,
                              GhostEffect, GMEM_CTA, GmemAtomic, GmemFence, GmemWait, Jump,
                              MbarInit, NamedBarrierOp, NamedWait, Nop, ParamSplit, SetLocal,
                              TmaLoad, TmaStore, TmemAlloc, TmemDealloc, TmemRelinquish,
                              TmemWait, TryWait, UmmaCommit, Wait, WgmmaWait,
                              control_successors, eval_dyn, is_acyclic)
from ...model.system import System
from ...model.values import CONCRETE
from ..errors import SetupTimeout
from .counts import wait_passes
from .modes import GHOST_MODE, INF, PARAM_FP, PARAM_READ, Footprint


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
        #: the warps whose programs initialize an mbarrier (``inits_from`` is empty for
        #: the others)
        self.init_agents: tuple = tuple(
            a for a in range(len(sysm.agents))
            if any(isinstance(ins, MbarInit) for ins in sysm.code(a)))
        self.blocking: list[list[bool]] = []
        for a in range(n):
            self._due()
            code = sysm.code(a)
            self.step.append([self._step_fp(a, pc) for pc in range(len(code))])
            self.future_env.append([self._env_fp_of_instr(a, pc) for pc in range(len(code))])
            # a try_wait never blocks, but its result decides where the warp goes: the
            # segments stop at it so that a walk can take its failing side alone
            # (``Closure._future``)
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
        #: ``_wait_completions_dag``'s answers by (warp, barrier, phase), then (pc, m)
        self._wait_dag: dict = {}
        self._reach_memo: dict = {}
        # barrier operations per segment (for the settle analysis); None marks a loop
        self.seg_ops: list[list[Optional[tuple]]] = self._per_pc(self._segment_ops)
        # arrivals (pending decrements) per barrier within each segment
        self.seg_arr: list[list[dict]] = self._per_pc(self._segment_arrivals)
        # segment footprints with non-completing cluster arrivals/exits
        self.seg_fp_nc: list[list[frozenset]] = self._per_pc(
            lambda a, pc: self._segment(a, pc, noncompleting=True)[0])
        # named-barrier participants per (cta, id): agents with a NamedBarrierOp on it
        self.nb_users: dict[tuple, set[int]] = defaultdict(set)
        for a, ag in enumerate(sysm.agents):
            for ins in ag.program.code:
                if isinstance(ins, NamedBarrierOp):
                    self.nb_users[(ag.cta, ins.id)].add(a)

    def _per_pc(self, fn: Any) -> list[list[Any]]:
        """``fn(a, pc)`` for every warp ``a`` and pc of its program (the set-up's
        deadline checked before each)."""
        out = []
        for a in range(len(self.sys.agents)):
            row = []
            for pc in range(len(self.sys.code(a))):
                self._due()
                row.append(fn(a, pc))
            out.append(row)
        return out

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
        goes on with the count before it.  Memoized (a pure function of the programs); in
        an acyclic program, through ``_wait_completions_dag``, whose answers for every
        (pc, count) it passes serve later starts too."""
        key = (a, start, bar, phase)
        r = self._wait_comp.get(key)
        if r is not None:
            return r
        if self.acyclic[a]:
            r = self._wait_comp[key] = self._wait_completions_dag(a, start, bar, phase)
        else:
            r = self._wait_comp[key] = self._wait_completions_dfs(a, start, bar, phase)
        return r

    def _wait_completions_dfs(self, a: int, start: int, bar: BarRef, phase: int) -> dict:
        """``wait_completions`` by a walk over (pc, completions so far) from ``start``."""
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
                while k < 2 and not wait_passes(ins, phase + k):
                    k += 1
                if k < out.get(pc, 3):
                    out[pc] = k
                if type(ins) is Wait:
                    nxt = k
            work.extend((q, nxt) for q in self._successors(a, pc))
        return out

    def _wait_completions_dag(self, a: int, start: int, bar: BarRef, phase: int) -> dict:
        """``wait_completions`` where warp ``a``'s program has no loop: the answer from
        (pc, m) -- m completions needed so far -- is the wait at pc's own entry merged with
        its successors' answers (the fewest over all paths is the fewest over each first
        step's), computed once per (pc, m) for this barrier and phase, bottom-up.  The
        dicts are shared between nodes and callers: never changed once made."""
        code = self.sys.code(a)
        memo = self._wait_dag.setdefault((a, bar, phase), {})
        stack = [(start, 0)]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            pc, m = node
            if pc >= len(code):
                memo[node] = {}
                stack.pop()
                continue
            ins = code[pc]
            nxt, k = m, -1
            if type(ins) in (Wait, TryWait) and ins.bar == bar:
                k = m
                while k < 2 and not wait_passes(ins, phase + k):
                    k += 1
                if type(ins) is Wait:
                    nxt = k
            kids = [(q, nxt) for q in self._successors(a, pc)]
            todo = [x for x in kids if x not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            if k < 0 and len(kids) == 1:
                memo[node] = memo[kids[0]]  # straight-line code: the successor's answer
                continue
            out: dict = {}
            for x in kids:
                for q, n in memo[x].items():
                    if n < out.get(q, 3):
                        out[q] = n
            if k >= 0 and k < out.get(pc, 3):
                out[pc] = k
            memo[node] = out
        return memo[(start, 0)]

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

    def _ahead(self, a: int, pc: int, tag: str, own: Any) -> frozenset:
        """The union of ``own(p)`` over the pcs warp ``a`` may reach from ``pc``, memoized
        under ``(tag, a, p)``: over ``_reach`` where the program loops, else bottom-up, each
        pc's set its own with its successors' (shared along straight-line code), so that
        the pcs a search passes one after another cost one step each."""
        memo = self._reach_memo
        r = memo.get((tag, a, pc))
        if r is not None:
            return r
        if not self.acyclic[a]:
            r = memo[(tag, a, pc)] = frozenset().union(*(own(p) for p in self._reach(a, pc)))
            return r
        n = len(self.sys.code(a))
        stack = [pc]
        while stack:
            p = stack[-1]
            if (tag, a, p) in memo:
                stack.pop()
                continue
            kids = [q for q in self._successors(a, p) if q < n]
            todo = [q for q in kids if (tag, a, q) not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            mine = own(p)
            if not mine and len(kids) == 1:
                memo[(tag, a, p)] = memo[(tag, a, kids[0])]
            else:
                memo[(tag, a, p)] = frozenset(mine).union(*(memo[(tag, a, q)] for q in kids))
        return memo[(tag, a, pc)]

    def wait_bars_from(self, a: int, pc: int) -> frozenset:
        """Barriers of the mbarrier waits (``Wait``, ``TryWait``) warp ``a`` may reach from
        ``pc``."""
        code = self.sys.code(a)
        return self._ahead(a, pc, "w", lambda p: (code[p].bar,)
                           if type(code[p]) in (Wait, TryWait) else ())

    def later_candidates(self, a: int, pc: int) -> tuple:
        """``(barrier, phase slot, (cta, array))`` of the barriers of ``wait_bars_from(a,
        pc)`` in warp ``a``'s own CTA and in the system: the ones ``Closure._later_waits``
        asks (memoized; sorted, so that a state's phases make a key)."""
        r = self._reach_memo.get(("l", a, pc))
        if r is None:
            cta = self.sys.agents[a].cta
            r = self._reach_memo[("l", a, pc)] = tuple(sorted(
                ((b, self.sys.bar[b], (b.cta, b.array))
                 for b in self.wait_bars_from(a, pc) if b.cta == cta and b in self.sys.bar),
                key=lambda x: x[1]))
        return r

    def later_waits(self, a: int, start: int, phases: Any) -> dict:
        """``{pc: barrier}`` of the waits ahead of warp ``a`` at ``start`` that need at least
        two completions of their barrier (``wait_completions``), given, per entry of
        ``later_candidates(a, start)``, its barrier's phase (mod ``PHASE_MOD``), or -1
        where some live warp may initialize it again (``Futures._later_waits``)."""
        r: dict = {}
        for (b, _slot, _arr), phase in zip(self.later_candidates(a, start), phases):
            if phase < 0:
                continue
            for pc, n in self.wait_completions(a, start, b, phase).items():
                if n >= 2:
                    r[pc] = b
        return r

    def inits_from(self, a: int, pc: int) -> frozenset:
        """(cta, array) of the barriers an ``MbarInit`` warp ``a`` may reach from ``pc``
        initializes: their phase may start again at 0."""
        code = self.sys.code(a)
        return self._ahead(a, pc, "i", lambda p: [(code[p].cta, name) for name, _ in
                                                  code[p].arrays]
                           if isinstance(code[p], MbarInit) else ())

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
        wait) is the enabling relation, which ``Closure._enablers`` and
        ``Closure._block_requirement`` follow; the owner counts a wait gives back are
        the buffers' own footprint ("HG", ``_wg_hold``)."""
        return (("wg", a), "G")

    def hold_mode(self, key: tuple) -> str:
        """The mode of the owner counts a ``WgmmaWait`` of warpgroup ``key`` gives back:
        "H" for the conflict relation, and it names the warpgroup, so that a state
        where no member holds the buffer, nor may read it before T moves, drops it
        (``Closure._wg_may_hold``)."""
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
            mode = GHOST_MODE[e.kind]
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
        (each failed, ``Closure._future``): a branch on them takes one side.  Returns the
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
