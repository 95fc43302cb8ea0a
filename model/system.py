"""The transition system of a compiled kernel.

State: one flat vector of slots (``StateLayout``): per warp its program counter, dynamic
locals and barrier bookkeeping; per mbarrier its phase, pending and expected counts,
tx-count and ``observed`` ghost; per barrier array its init visibility; per stage buffer
its ghost (writes in progress, fill stamp, owners, unfenced generic writes, CLC response
validity); named and cluster barriers; and the asynchronous work in flight.

Agents: every warp of every CTA (``AgentProgram``), plus *environment agents* for
asynchronous hardware -- each in-flight TMA/CLC delivery, each warp's tcgen05 and
cp.async completion queue and its bulk-store groups -- which complete
nondeterministically, so late completions are explored rather than assumed away.

One step of a warp is one synchronisation instruction together with the ghost effects
attached to it and the local control flow that follows, up to its next synchronisation
instruction.  All rules are written once, against the value interface ``V`` and a state
accessor ``S``: the explicit engine runs them on Python ints, the BMC engine on z3 terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from . import mbarrier as mb
from .compile import CompiledKernel
from .groups import WARP_SIZE
from .mbarrier import MBarrier
from .program import (NO_DATA, PARITY_TAG, AgentProgram, Arrive, BarRef, Branch, BufRef,
                      BulkCommit, BulkWaitRead, ClusterArrive, ClusterWait, CompleteTx,
                      CpAsync, CpAsyncArrive, CpAsyncCommit, CpAsyncWaitGroup, ExpectTx, Exit, Fail, FenceMbarInit,
                      WgmmaWait,
                      GhostEffect, Instr, Jump, MbarInit, NamedBarrierOp, NamedWait, Nop,
                      ParamSplit,
                      SetLocal, TmaLoad, TmaStore, TmemAlloc, TmemDealloc, TmemRelinquish,
                      TmemWait, TryWait, UmmaCommit, Wait, eval_dyn, GMEM_CTA, FlagRef,
                      GmemAtomic, GmemFence, GmemWait, control_successors)
from .pipelines.gmem import GMEM_BUFFER, GMEM_FLAGS
from .errors import ConfigError
from .properties import Check, Prop, add_check, ranked
from .values import CONCRETE
from .wgmma import WgmmaState

#: ``System(memory_model=...)``: see ``System.__init__``
MEMORY_MODELS = ("cutlass", "strict")

#: program counter of a warp that has exited
DONE = -1
#: a read that needs complete data of any fill (a CLC response)
ANY_FILL = -2
#: commit-group marker in a warp's bulk-store queue
BULK_MARK = -1

# init visibility of a barrier array (per CTA)
UNINIT, INIT_PRIVATE, VIS_CTA, VIS_CLUSTER = 0, 1, 2, 3

# tensor memory of a CTA: slots at ``System.tmem[cta]`` + offset
TM_LIVE, TM_RELINQ, TM_PAIR = 0, 1, 2
#: ``TM_PAIR`` values: the CTA's allocator warp waits in a cta_group::2 alloc / dealloc for
#: its peer's warp to issue the same collective instruction
PAIR_NONE, PAIR_ALLOC, PAIR_DEALLOC = 0, 1, 2
#: pipeline classes whose stage buffers live in tensor memory (accumulators)
TMEM_CLASSES = ("PipelineUmmaAsync",)


# --------------------------------------------------------------------------- layout


@dataclass
class AgentInfo:
    index: int
    program: AgentProgram
    name: str
    role: str
    pc: int = 0
    locals: dict[str, int] = field(default_factory=dict)
    nbw: int = 0     # generation of the named barrier this warp is waiting on
    cgen: int = 0    # cluster-barrier generation at this warp's arrive (-1: not arrived)
    carr: int = 0    # 1 while this warp has arrived at the cluster barrier
    qtc: int = 0     # tcgen05 commit queue (tuple of pcs)
    qcp: int = 0     # cp.async queue (pcs of copies, arrives and group commits, in order)
    cpg: int = -1    # committed cp.async groups not yet complete (-1: the warp never commits)
    qbs: int = 0     # bulk stores and commit-group markers (BULK_MARK), in order
    nbflags: dict[int, int] = field(default_factory=dict)  # named barrier id -> slot
    #: strict scopes: buffer -> slot holding the fill this warp's wait acquired
    acq: dict = field(default_factory=dict)

    @property
    def cta(self) -> int:
        return self.program.cta

    @property
    def warp(self) -> int:
        return self.program.warp


BAR_FIELDS = mb.FIELDS  # phase pending expected tx observed
BUF_FIELDS = ("wip", "stamp", "rd", "dirty", "val", "wtag", "awip")
ARR_FIELDS = ("ivis", "fenced", "rel_cta", "rel_clu")
NB_FIELDS = ("arrived", "expected", "gen")


class StateLayout:
    """Slot allocation.  ``names[i]`` describes slot ``i`` (for traces)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.init: list[Any] = []

    def alloc(self, name: str, init: Any) -> int:
        self.names.append(name)
        self.init.append(init)
        return len(self.names) - 1

    def __len__(self) -> int:
        return len(self.names)


class QueueOps:
    """Queue and multiset operations of a state accessor, over tuple-valued slots.

    Accessors provide ``get(slot)`` and ``set(slot, value)``.  Asynchronous work in
    flight lives in *queue slots* (a warp's tcgen05 commits, cp.async copies and
    arrives, bulk stores and group markers, in issue order) and in the *pool* slot (a
    multiset of TMA/CLC deliveries).  Concrete accessors keep them as tuples (this
    mixin); a symbolic accessor encodes them with fixed-size vectors and overrides these
    methods, so the rules of ``System`` are written once.
    """

    def q_push(self, slot: int, x: Any) -> None:
        self.set(slot, self.get(slot) + (x,))

    def q_pop(self, slot: int) -> Any:
        q = self.get(slot)
        self.set(slot, q[1:])
        return q[0]

    def q_len(self, slot: int) -> Any:
        return len(self.get(slot))

    def q_head(self, slot: int) -> Any:
        return self.get(slot)[0]

    def q_count(self, slot: int, x: Any) -> Any:
        return self.get(slot).count(x)

    def pool_add(self, slot: int, item: tuple) -> None:
        self.set(slot, tuple(sorted(self.get(slot) + (item,))))

    def pool_remove(self, slot: int, item: tuple) -> None:
        items = list(self.get(slot))
        items.remove(item)
        self.set(slot, tuple(items))


class ConcreteState(QueueOps):
    """State accessor over a Python list (replay, tests)."""

    __slots__ = ("v",)

    def __init__(self, values: Iterable[Any]):
        self.v = list(values)

    def get(self, i: int) -> Any:
        return self.v[i]

    def set(self, i: int, x: Any) -> None:
        self.v[i] = x

    def freeze(self) -> tuple:
        return tuple(self.v)


@dataclass
class Outcome:
    """Result of executing one step: enabled (a value), checks, and a description."""

    enabled: Any
    checks: list[Check]
    what: str = ""

    def __post_init__(self) -> None:
        # the engines report a step's first failing check: first in the catalogue
        self.checks = ranked(self.checks)


_BLOCKED = Outcome(False, [], "blocked")


#: ghost effects whose rule (``System.ghost``) reads and writes the ghost of their own
#: buffer alone -- besides reading tensor-memory allocation state for its checks -- with
#: the default memory model and no global memory: two of them on distinct buffers give
#: the same state in either order (``checker/cta_symmetry.py`` reorders them); a wgmma
#: commit closes the group of the reads before it, a tensor-memory use is the CTA's
BUFFER_LOCAL_EFFECTS = frozenset({"read", "write_begin", "write_end", "async_write_begin",
                                  "async_write_end", "hold", "unhold", "dirty", "clean",
                                  "async_read"})

_BLOCKING = (Wait, NamedWait, ClusterWait, BulkWaitRead, CpAsyncWaitGroup, TmemWait, GmemWait,
             WgmmaWait)


class System:
    """The transition system of one cluster of a compiled kernel."""

    def __init__(self, compiled: CompiledKernel, memory_model: str = "cutlass",
                 param_init: Optional[Iterable[int]] = None):
        """``memory_model``: ``"cutlass"`` (default) treats every release as reaching the
        threads that acquire it, as CUTLASS's default-scope (.cta) remote arrives assume;
        ``"strict"`` also tracks the scope of the release that published each stage's
        generic writes and reports ``insufficient-scope`` (``ghost``).
        ``param_init``: the points of the symbolic parameter domain the initial state
        allows (default: all of them)."""
        if memory_model not in MEMORY_MODELS:
            raise ConfigError(f"unknown memory model {memory_model!r} (expected one of "
                              f"{', '.join(MEMORY_MODELS)})")
        self.memory_model = memory_model
        self.strict_scopes = memory_model == "strict"
        self.compiled = compiled
        self.info = compiled.info
        self.layout = L = StateLayout()
        self.agents: list[AgentInfo] = []
        self.agents_of_cta: dict[int, list[int]] = {}
        for i, prog in enumerate(compiled.programs):
            name = f"cta{prog.cta}.w{prog.warp}"
            ag = AgentInfo(i, prog, name, prog.role or "idle")
            ag.pc = L.alloc(f"{name}.pc", 0)
            for loc in prog.locals:
                ag.locals[loc] = L.alloc(f"{name}.{loc}", 0)
            ag.nbw = L.alloc(f"{name}.nbgen", 0)
            ag.cgen = L.alloc(f"{name}.cgen", -1)
            ag.carr = L.alloc(f"{name}.carrived", 0)
            ag.qtc = L.alloc(f"{name}.tcgen05_queue", ())
            ag.qcp = L.alloc(f"{name}.cp_async_queue", ())
            if any(isinstance(i, CpAsyncCommit) for i in prog.code):
                ag.cpg = L.alloc(f"{name}.cp_async_groups", 0)
            ag.qbs = L.alloc(f"{name}.bulk_queue", ())
            # this warp's arrival flags at the named barriers (kept with its own slots, so
            # that identical warps stay symmetric and a warp's slots are contiguous)
            for bid in compiled.named_barrier_ids:
                if 0 <= bid <= 15:
                    ag.nbflags[bid] = L.alloc(f"{name}.named{bid}", 0)
            self.agents.append(ag)
            self.agents_of_cta.setdefault(prog.cta, []).append(i)
        self.agent_label = [f"{ag.name} ({ag.role})" for ag in self.agents]
        self.init_agent = {c: next(i for i in idx if self.agents[i].warp == 0)
                           for c, idx in self.agents_of_cta.items()}
        # which warps initialise each barrier array (CuTe DSL: warp 0; raw mbarrier_init:
        # whoever runs it) -- their releases publish the init
        self.initers: dict[tuple[int, str], set[int]] = {}
        for ag in self.agents:
            for ins in ag.program.code:
                if isinstance(ins, MbarInit):
                    for name, _count in ins.arrays:
                        self.initers.setdefault((ins.cta, name), set()).add(ag.index)
        # barriers, arrays, buffers
        self.bar: dict[BarRef, int] = {}
        self.arr: dict[tuple[int, str], int] = {}
        self.buf: dict[BufRef, int] = {}
        self.cta_only: dict[BufRef, list[int]] = {}
        self.arrays_of_cta: dict[int, list[str]] = {}
        for cta in range(self.info.num_ctas):
            for d in compiled.pipelines:
                if d.cls in (GMEM_FLAGS, GMEM_BUFFER):
                    continue  # global memory: once for the grid (_gmem_layout)
                for a in d.arrays:
                    name = f"{d.var}.{a.name}"
                    base = L.alloc(f"{name}@cta{cta}.ivis", UNINIT)
                    for f in ARR_FIELDS[1:]:
                        L.alloc(f"{name}@cta{cta}.{f}", 0)
                    self.arr[(cta, name)] = base
                    self.arrays_of_cta.setdefault(cta, []).append(name)
                    for s in range(a.stages):
                        ref = BarRef(cta, name, s)
                        b0 = None
                        for f, init in zip(BAR_FIELDS, mb.UNINITIALISED):
                            k = L.alloc(f"{ref}.{f}", init)
                            b0 = k if b0 is None else b0
                        self.bar[ref] = b0  # type: ignore[assignment]
                for s in range(d.stages):
                    ref = BufRef(cta, d.buffer, s)
                    if ref in self.buf:  # an alias (smem_buffer(alias=...)): one memory
                        continue
                    b0 = None
                    for f, init in zip(BUF_FIELDS, (0, NO_DATA, 0, 0, 0, NO_DATA, 0)):
                        k = L.alloc(f"{ref}.{f}", init)
                        b0 = k if b0 is None else b0
                    self.buf[ref] = b0  # type: ignore[assignment]
                    if self.strict_scopes:
                        # flag c: the fill holds generic writes by CTA c released only at
                        # .cta scope (invisible to other CTAs)
                        self.cta_only[ref] = [L.alloc(f"{ref}.cta_only{c}", 0)
                                              for c in range(self.info.num_ctas)]
        self._gmem_layout(L)
        self._tmem_layout(L)
        #: warpgroup-collective wgmma completion (model/wgmma.py)
        self.wgmma = WgmmaState(self.agents, L.alloc)
        self.array_decl = {f"{d.var}.{a.name}": a for d in compiled.pipelines for a in d.arrays}
        self.pub_bufs: dict[BarRef, tuple[BufRef, ...]] = {}
        self.acq_slots: dict[BufRef, list[int]] = {}  # every warp's acquisition of a buffer
        if self.strict_scopes:
            self._scope_layout(L)
        # named barriers: per (cta, id): arrived, expected, gen, then one flag per warp
        self.nb: dict[tuple[int, int], int] = {}
        self.nbflag: dict[tuple[int, int, int], int] = {}
        for cta in range(self.info.num_ctas):
            for bid in compiled.named_barrier_ids:
                if not 0 <= bid <= 15:
                    continue
                base = L.alloc(f"named{bid}@cta{cta}.arrived", 0)
                L.alloc(f"named{bid}@cta{cta}.expected", 0)
                L.alloc(f"named{bid}@cta{cta}.gen", 0)
                self.nb[(cta, bid)] = base
                for i in self.agents_of_cta.get(cta, []):
                    ag = self.agents[i]
                    self.nbflag[(cta, bid, ag.warp)] = ag.nbflags[bid]
        # named barriers some warp arrives at without a thread count (all the CTA's
        # threads): only their completion depends on which warps have exited.  For the
        # others ``expected`` is 0 or the count, and leaving the live-thread sum out keeps
        # it out of the symbolic terms too (checker/symbolic.py)
        self.nb_counts_live: set[tuple[int, int]] = {
            (self.agents[i].cta, ins.id) for i in range(len(self.agents))
            for ins in self.agents[i].program.code
            if isinstance(ins, NamedBarrierOp) and ins.count is None}
        self.cluster_gen = L.alloc("cluster_barrier.gen", 0)
        self.pool = L.alloc("in_flight", ())
        self.clc_failed = {c: L.alloc(f"cta{c}.clc_failed_seen", 0)
                           for c in range(self.info.cluster_size)}
        # symbolic parameters: one bit per value combination, "still possible"
        self.param_names = compiled.param_names
        self.param_points = compiled.param_points
        allowed = set(range(len(self.param_points)) if param_init is None else param_init)
        if self.param_points and not allowed:
            raise ValueError("no symbolic parameter value left to check")
        self.param_bits = [L.alloc("param[" + ",".join(
            f"{k}={v}" for k, v in zip(self.param_names, pt)) + "]", int(i in allowed))
            for i, pt in enumerate(self.param_points)]
        #: the splits of each mask: {mask: {agent: [pc, ...]}} (``_param_split``)
        self.splits_of_mask: dict[tuple, dict[int, list[int]]] = {}
        for a, ag in enumerate(self.agents):
            for pc, ins in enumerate(ag.program.code):
                if isinstance(ins, ParamSplit):
                    self.splits_of_mask.setdefault(ins.mask, {}).setdefault(a, []).append(pc)
        self.n = len(L)

    def _tmem_layout(self, L: Any) -> None:
        """Tensor memory (only for kernels that allocate it): per CTA the number of live
        allocations, whether it relinquished its allocation permit, and where its
        allocator warp stands in a cta_group::2 collective (``TM_PAIR``).  The CTA's
        accumulator stages (``TMEM_CLASSES``) are its tensor memory."""
        self.tmem: dict[int, int] = {}
        self.tmem_bufs: dict[int, tuple[BufRef, ...]] = {}
        self.tmem_buffers: frozenset = frozenset()
        self.tmem_paired = False
        kinds = (TmemAlloc, TmemDealloc, TmemRelinquish)
        used = [i for ag in self.agents for i in ag.program.code if isinstance(i, kinds)]
        if not used:
            return
        self.tmem_paired = any(i.cta_group == 2 for i in used)
        self.tmem_buffers = frozenset(d.buffer for d in self.compiled.pipelines
                                      if d.cls in TMEM_CLASSES)
        for cta in range(self.info.num_ctas):
            self.tmem[cta] = L.alloc(f"tmem@cta{cta}.allocations", 0)
            L.alloc(f"tmem@cta{cta}.permit_relinquished", 0)
            L.alloc(f"tmem@cta{cta}.pair_wait", PAIR_NONE)
            self.tmem_bufs[cta] = tuple(sorted(r for r in self.buf if r.cta == cta
                                               and r.buffer in self.tmem_buffers))

    def _gmem_layout(self, L: Any) -> None:
        """Global memory (only for kernels that declare it; spec/model.md "global
        memory"): one word per flag; per global data region stage the usual buffer
        ghost plus ``owner`` (the CTA whose stores made the current fill, -1: none),
        ``wcta`` (the CTA whose stores are in flight), ``wend`` (the warp whose stores
        completed the fill, -1: none yet, -2: several warps), one ``pub`` bit per flag
        (the fill was released at gpu scope by an update of that flag) and three bits
        per warp: ``acq`` (the warp is ordered after the fill: it wrote it, passed a CTA
        barrier with a warp ordered after it, or acquired it at gpu scope -- so its own
        gpu-scope release publishes it again, PTX's cumulativity), ``fen`` (it was
        ordered after the fill at its last ``fence.acq_rel.gpu``: a later relaxed flag
        update publishes it) and ``obs`` (a relaxed load of a flag the fill was released
        through: its next ``fence.acq_rel.gpu`` acquires it)."""
        self.gflag: dict[FlagRef, int] = {}
        self.gbufs: tuple[BufRef, ...] = ()
        self.gmeta: dict[BufRef, int] = {}
        self.gpub: dict[tuple[BufRef, FlagRef], int] = {}
        self.gacq: dict[tuple[BufRef, int], int] = {}
        self.gfen: dict[tuple[BufRef, int], int] = {}
        self.gobs: dict[tuple[BufRef, int], int] = {}
        for d in self.compiled.pipelines:
            if d.cls == GMEM_FLAGS:
                for i in range(d.stages):
                    f = FlagRef(d.var, i)
                    self.gflag[f] = L.alloc(str(f), 0)
        bufs = []
        for d in self.compiled.pipelines:
            if d.cls != GMEM_BUFFER:
                continue
            for st in range(d.stages):
                ref = BufRef(GMEM_CTA, d.buffer, st)
                b0 = None
                for f, init in zip(BUF_FIELDS, (0, NO_DATA, 0, 0, 0, NO_DATA, 0)):
                    k = L.alloc(f"{ref}.{f}", init)
                    b0 = k if b0 is None else b0
                self.buf[ref] = b0  # type: ignore[assignment]
                # no --memory-model strict marks: gpu scope is tracked below
                self.gmeta[ref] = L.alloc(f"{ref}.owner", -1)
                L.alloc(f"{ref}.wcta", -1)
                L.alloc(f"{ref}.wend", -1)
                L.alloc(f"{ref}.foreign_reader", -1)
                for f in self.gflag:
                    self.gpub[(ref, f)] = L.alloc(f"{ref}.released_by.{f}", 0)
                for ag in self.agents:
                    self.gacq[(ref, ag.index)] = L.alloc(f"{ref}.acquired_by.{ag.name}", 0)
                    self.gfen[(ref, ag.index)] = L.alloc(f"{ref}.fenced_by.{ag.name}", 0)
                    self.gobs[(ref, ag.index)] = L.alloc(f"{ref}.observed_by.{ag.name}", 0)
                bufs.append(ref)
        self.gbufs = tuple(bufs)

    def _gmem_ghost(self, V: Any, S: Any, e: GhostEffect, checks: list[Check], name: Any,
                    cta: Optional[int], agent: Optional[int]) -> None:
        """The gpu-scope ordering of a warp's access to a global data region (before the
        buffer ghost's own checks, which report ``gmem-race`` there too): a read, or a
        store, of a fill another CTA made needs this warp's acquire of a flag the fill
        was released through; stores of two CTAs in flight at once race."""
        if cta is None or agent is None or e.kind not in ("read", "write_begin", "write_end"):
            return
        b = self.buf[e.buf]
        owner, wcta, wend = self.gmeta[e.buf], self.gmeta[e.buf] + 1, self.gmeta[e.buf] + 2
        xread = self.gmeta[e.buf] + 3
        acq = self.gacq[(e.buf, agent)]
        if e.kind == "write_end":
            # the warp's stores of the fill are done (at its release): it alone is ordered
            # after them, if it alone wrote the fill
            w = S.get(wend)
            single = V.or_(V.eq(w, -1), V.eq(w, agent))
            S.set(wend, V.ite(single, agent, -2))
            S.set(acq, V.ite(single, 1, S.get(acq)))
            return
        foreign = V.and_(V.ne(S.get(owner), -1), V.ne(S.get(owner), cta),
                         V.ne(S.get(b + 1), NO_DATA))
        what = "reads" if e.kind == "read" else "stores to"
        if e.kind == "read":
            # which other CTA read this fill (-2: several): a later overwrite by the
            # owner is not ordered after that read by anything the model tracks
            x = S.get(xread)
            S.set(xread, V.ite(foreign, V.ite(V.or_(V.eq(x, -1), V.eq(x, cta)), cta, -2), x))
        add_check(checks, V.and_(foreign, V.eq(S.get(acq), 0)), Prop.GMEM_RACE,
                  lambda: f"{name()} {what} {e.buf}, whose data another CTA wrote, without "
                          "acquiring it: no ld.acquire.gpu (wait_eq/wait_ge with "
                          "sem='acquire') of a flag that CTA updated with a gpu-scope "
                          "release after its stores")
        if e.kind == "write_begin":
            add_check(checks, V.and_(V.lt(0, S.get(b)), V.ne(S.get(wcta), cta)),
                      Prop.GMEM_RACE,
                      lambda: f"{name()} stores to {e.buf} while another CTA's stores to it "
                              "are in flight (unordered writes: the result depends on the "
                              "schedule)")
            x = S.get(xread)
            add_check(checks, V.and_(V.ne(x, -1), V.ne(x, cta)), Prop.GMEM_RACE,
                      lambda: f"{name()} stores to {e.buf} over a fill that a warp of another "
                              "CTA read: the model does not track what orders that read "
                              "before these stores (write-after-read between CTAs: "
                              "reported, conservatively)")
            # a new fill (no stores in flight): its writer's CTA owns it, nobody has it
            # released, acquired or ordered after it
            new = V.eq(S.get(b), 0)
            S.set(xread, V.ite(new, -1, x))
            S.set(owner, cta)
            S.set(wcta, cta)
            S.set(wend, V.ite(new, -1, S.get(wend)))
            for f in self.gflag:
                slot = self.gpub[(e.buf, f)]
                S.set(slot, V.ite(new, 0, S.get(slot)))
            for a in range(len(self.agents)):
                for bits in (self.gacq, self.gfen, self.gobs):
                    slot = bits[(e.buf, a)]
                    S.set(slot, V.ite(new, 0, S.get(slot)))

    def _gmem_exec(self, V: Any, S: Any, a: int, ins: Instr) -> Any:
        """A flag update (release or relaxed), a spin on a flag (acquire or relaxed) or
        ``fence.acq_rel.gpu``; returns the step's enabledness."""
        if isinstance(ins, GmemFence):
            # acquire side: what the warp's earlier relaxed loads observed; release side:
            # what it is ordered after now, for its later relaxed updates (PTX ISA memory
            # consistency model, "fence-SC and fence.acq_rel" release/acquire patterns)
            for ref in self.gbufs:
                acq, fen = self.gacq[(ref, a)], self.gfen[(ref, a)]
                known = V.or_(V.eq(S.get(acq), 1), V.eq(S.get(self.gobs[(ref, a)]), 1))
                S.set(acq, V.ite(known, 1, 0))
                S.set(fen, V.ite(known, 1, 0))
            return True
        slot = self.gflag[ins.flag]
        val = S.get(slot)
        if isinstance(ins, GmemWait):
            ok = V.eq(val, ins.value) if ins.cmp == "eq" else V.le(ins.value, val)
            # an acquire synchronizes with every release of this flag already in its
            # modification order (the value read is that release's or a later one of
            # its release sequence: the flag's updates are atomic); a relaxed load only
            # observes it (a later fence.acq_rel.gpu makes that an acquire)
            bits = self.gacq if ins.sem == "acquire" else self.gobs
            for ref in self.gbufs:
                x = bits[(ref, a)]
                S.set(x, V.ite(V.eq(S.get(self.gpub[(ref, ins.flag)]), 1), 1, S.get(x)))
            return ok
        if ins.op == "add":
            S.set(slot, val + ins.value * ins.lanes)
        else:
            S.set(slot, ins.value)
        # a release publishes every complete fill this warp is ordered after (its own
        # stores, its CTA's ordered before it by a CTA barrier, fills it acquired); a
        # relaxed update those it was ordered after at its last fence.acq_rel.gpu
        bits = self.gacq if ins.sem == "release" else self.gfen
        for ref in self.gbufs:
            b = self.buf[ref]
            ok = V.and_(V.eq(S.get(b), 0), V.ne(S.get(b + 1), NO_DATA),
                        V.eq(S.get(bits[(ref, a)]), 1))
            pub = self.gpub[(ref, ins.flag)]
            S.set(pub, V.ite(ok, 1, S.get(pub)))
        return True

    def _gmem_barrier(self, V: Any, S: Any, cta: int, complete: Any, part: dict[int, Any],
                      full: Any) -> None:
        """A CTA barrier generation completes: its warps (``part``: agent -> arrived) are
        ordered after every fill of a global region some warp of theirs was ordered
        after (its writer, a warp that acquired it), and after every complete fill of
        the CTA when the barrier counts every thread of the CTA (``full``: a fill several
        warps wrote).  PTX: bar.sync is a release/acquire among its threads, and
        causality order is transitive."""
        for ref in self.gbufs:
            b = self.buf[ref]
            wend = S.get(self.gmeta[ref] + 2)
            known = V.or_(*[V.and_(p, V.eq(S.get(self.gacq[(ref, j)]), 1))
                            for j, p in part.items()])
            # only a fill with no stores in flight: stores a participant began after its
            # arrive (bar.arrive, then more stores) are not ordered before the waiters
            cond = V.and_(complete, V.eq(S.get(b), 0), V.or_(known, V.and_(
                V.eq(S.get(self.gmeta[ref]), cta),
                V.ne(S.get(b + 1), NO_DATA), V.eq(wend, -2), full)))
            for i, p in part.items():
                slot = self.gacq[(ref, i)]
                S.set(slot, V.ite(V.and_(cond, p), 1, S.get(slot)))

    def tmem_pair_of(self, cta: int) -> tuple[int, ...]:
        """The CTAs whose tensor memory a cta_group::2 collective of ``cta`` covers."""
        if self.tmem_paired and (cta ^ 1) in self.tmem:
            return tuple(sorted({cta, cta ^ 1}))
        return (cta,)

    # ---------------------------------------------------------------- basics

    def initial_state(self) -> tuple:
        return tuple(self.layout.init)

    def code(self, a: int) -> tuple[Instr, ...]:
        return self.agents[a].program.code

    def done(self, V: Any, S: Any, a: int) -> Any:
        return V.eq(S.get(self.agents[a].pc), DONE)

    def exited(self, V: Any, S: Any, cta: int) -> Any:
        return V.and_(*[self.done(V, S, a) for a in self.agents_of_cta[cta]])

    def read_bar(self, S: Any, ref: BarRef) -> MBarrier:
        b = self.bar[ref]
        return MBarrier(S.get(b), S.get(b + 1), S.get(b + 2), S.get(b + 3), S.get(b + 4))

    def write_bar(self, S: Any, ref: BarRef, v: MBarrier) -> None:
        b = self.bar[ref]
        for i, x in enumerate(v):
            S.set(b + i, x)

    def _bar_ref(self, ref: BarRef, checks: list[Check], V: Any) -> bool:
        """Is this barrier declared?  (A reference to an unknown one is a model error.)"""
        if ref not in self.bar:
            checks.append(Check(True, Prop.MASK_OUTSIDE_CLUSTER,
                                f"{ref} does not exist (CTA outside the cluster?)"))
            return False
        return True

    # ---------------------------------------------------------------- init visibility

    def use_check(self, V: Any, S: Any, ref: BarRef, user_cta: Optional[int],
                  user_agent: Optional[int], what: Any, checks: list[Check]) -> None:
        """A barrier may be used only once its init is visible to the user.

        CTA-local threads need the init ordered before them by a CTA barrier (or to be
        the initialising warp); another CTA's threads and asynchronous units of another
        CTA need ``fence.mbarrier_init`` (or a release) plus a cluster barrier
        (research note 5, PTX ISA ``fence.mbarrier_init``).  ``user_cta`` None stands for
        an asynchronous unit acting for the barrier's own CTA.
        """
        ivis = S.get(self.arr[(ref.cta, ref.array)])
        if user_cta is not None and user_cta != ref.cta:
            bad = V.ne(ivis, VIS_CLUSTER)
            why = "its init is not yet visible to other CTAs (needs fence.mbarrier_init + " \
                  "a cluster barrier)"
        elif user_agent is not None and user_agent in self.initers.get((ref.cta, ref.array), ()):
            bad = V.eq(ivis, UNINIT)
            why = "it has not been initialised"
        else:
            bad = V.lt(ivis, VIS_CTA)
            why = "its init is not yet visible (needs a CTA or cluster barrier after " \
                  "mbarrier.init)"
        add_check(checks, bad, Prop.USE_BEFORE_INIT,
                  lambda: f"{what() if callable(what) else what} on {ref}: {why}")

    # ---------------------------------------------------------------- ghost effects

    def ghost(self, V: Any, S: Any, e: GhostEffect, checks: list[Check], who: Any,
              cta: Optional[int] = None, scope: str = "cluster",
              agent: Optional[int] = None) -> None:
        """Apply one ghost effect on a stage buffer (``who`` names the actor; it may be a
        function returning the name, evaluated only for a message).

        Memory scopes (``memory_model="strict"`` only): ``cta`` is the CTA of the warp
        whose effect this is (None for hardware), ``scope`` the scope of the release
        that ends a write (``release_scope``).  A write ended by a .cta-scoped release
        marks the fill as visible to its writer's CTA only; a read by a warp of another
        CTA (or an MMA it issues) is then ``insufficient-scope``: under the PTX memory
        model a release synchronizes only with acquires by threads inside its scope
        (morally strong operations), so the reader may see stale data.  Conservative:
        a later cluster-scope release by the writer (cumulativity) does not clear the
        mark.  Acquire scopes need no check: a wait acquires at .cluster scope exactly
        where a remote .release.cluster arrive publishes through its barrier
        (``model/scopes.py``), .cta scope (CUTLASS's) everywhere else."""
        name = (lambda: who() if callable(who) else who)
        if e.kind == "wgmma_commit":  # wgmma.commit_group (model/wgmma.py)
            self.wgmma.commit(V, S, agent)
            return
        if e.kind == "tmem_use":  # a tensor-memory access of the CTA (R2, at its issue)
            if self.tmem:
                self._tmem_use(V, S, e, checks, name)
            else:
                checks.append(Check(True, Prop.TMEM_MISUSE,
                                    f"{name()} accesses tensor memory of CTA {e.buf.cta}, "
                                    "but the kernel never allocates any (tcgen05.alloc)"))
            return
        b = self.buf.get(e.buf)
        if b is None:
            checks.append(Check(True, Prop.MASK_OUTSIDE_CLUSTER, f"{e.buf} does not exist"))
            return
        wip, stamp, rd, dirty, awip = b, b + 1, b + 2, b + 3, b + 6
        k = e.kind
        # global memory: every race on it is a gmem-race (the buffer rules below, plus
        # the gpu-scope release/acquire of _gmem_ghost)
        gm = e.buf.cta == GMEM_CTA
        rbf = Prop.GMEM_RACE if gm else Prop.READ_BEFORE_FULL
        obr = Prop.GMEM_RACE if gm else Prop.OVERWRITE_BEFORE_RELEASE
        if gm:
            self._gmem_ghost(V, S, e, checks, name, cta, agent)
        if k == "tmem_ptr":
            # the address tcgen05.alloc stored must be there and released by its writer
            add_check(checks, V.or_(V.lt(0, S.get(wip)), V.eq(S.get(stamp), NO_DATA)),
                      Prop.TMEM_MISUSE,
                      lambda: f"{name()} loads the tensor-memory address from {e.buf} before "
                              "tcgen05.alloc stored it there and the allocating warp released "
                              "it (wait_for_alloc: a barrier with the allocator warp first)")
            return
        if self.tmem and e.buf.buffer in self.tmem_buffers and \
                k in ("read", "write_begin", "write_end"):
            self._tmem_use(V, S, e, checks, name)
        if k == "write_begin":
            # thread stores while the async proxy writes the same buffer: two writers
            add_check(checks, V.lt(0, S.get(awip)), Prop.OVERWRITE_BEFORE_RELEASE,
                      lambda: f"{name()} stores to {e.buf} while a TMA/cp.async write to it "
                              "is still in flight")
        elif k == "async_write_begin":
            add_check(checks, V.lt(S.get(awip), S.get(wip)), Prop.OVERWRITE_BEFORE_RELEASE,
                      lambda: f"{name()} starts writing {e.buf} while thread stores to it "
                              "are not yet released (a barrier must order them first)")
            # released generic stores are still unordered with the async proxy's writes
            self._proxy_fence_check(V, S, dirty, checks, lambda: f"{name()} writes {e.buf}")
            S.set(awip, S.get(awip) + 1)
            k = "write_begin"
        elif k == "async_write_end":
            S.set(awip, S.get(awip) - 1)
            k = "write_end"
        if k == "read":
            add_check(checks, V.lt(0, S.get(wip)), rbf,
                      lambda: f"{name()} reads {e.buf} while "
                              + self._writes_in_flight(V, S, awip))
            st = S.get(stamp)
            if e.tag == ANY_FILL:
                bad = V.eq(st, NO_DATA)
                msg = lambda: f"{name()} reads {e.buf} before anything was written to it"  # noqa: E731
            elif e.tag >= PARITY_TAG:
                bad = V.and_(V.ne(st, ANY_FILL),
                             V.or_(V.eq(st, NO_DATA), V.ne(V.mod(st, 2), e.tag % 2)))
                msg = lambda: (f"{name()} reads {e.buf} expecting a fill of parity "  # noqa: E731
                               f"{e.tag % 2}, but it holds another (or nothing)")
            else:
                bad = V.and_(V.ne(st, ANY_FILL), V.or_(
                    V.eq(st, NO_DATA),
                    V.ite(V.le(PARITY_TAG, st), V.ne(V.mod(st, 2), e.tag % 2),
                          V.ne(st, e.tag))))
                msg = lambda: (f"{name()} reads {e.buf} expecting fill {e.tag} (mod 4), "  # noqa: E731
                               "but it holds another fill or nothing")
            add_check(checks, bad, rbf, msg)
            self._scope_check(V, S, e, checks, name, cta)
        elif k == "hold":
            S.set(rd, S.get(rd) + 1)
        elif k == "unhold":
            S.set(rd, S.get(rd) - 1)
        elif k == "write_begin":
            add_check(checks, V.lt(0, S.get(rd)), obr,
                      lambda: f"{name()} starts writing {e.buf} while a consumer still owns it")
            # a write of another fill while one is still in flight overwrites data nobody
            # has consumed (the writes of one fill -- A and B tiles -- share the tag)
            if e.tag not in (NO_DATA, ANY_FILL):
                wt = S.get(b + 5)
                add_check(checks, V.and_(V.lt(0, S.get(wip)), _tag_differs(V, wt, e.tag)),
                          Prop.OVERWRITE_BEFORE_RELEASE,
                          lambda: f"{name()} starts writing fill {e.tag} of {e.buf} while the "
                                  "write of the previous fill is still in flight (it was "
                                  "never consumed)")
                if self.strict_scopes and not gm:
                    # a new fill: the marks of the old one go, and so does every warp's
                    # acquisition of it (fill tags repeat mod 4, so a later fill could
                    # otherwise pass for the acquired one in ``_publish``)
                    new = V.ne(wt, e.tag)
                    for m in self.cta_only[e.buf]:
                        S.set(m, V.ite(new, 0, S.get(m)))
                    for m in self.acq_slots.get(e.buf, ()):
                        S.set(m, V.ite(new, NO_DATA, S.get(m)))
                S.set(b + 5, e.tag)
            S.set(wip, S.get(wip) + 1)
        elif k == "write_end":
            S.set(wip, S.get(wip) - 1)
            S.set(stamp, e.tag)
            if self.strict_scopes and cta is not None and scope == "cta" and not gm:
                S.set(self.cta_only[e.buf][cta], 1)
        elif k == "dirty":
            S.set(dirty, S.get(dirty) + 1)
        elif k == "clean":
            S.set(dirty, S.get(dirty) - 1)
        elif k in ("async_read", "wgmma_read"):
            add_check(checks, V.lt(0, S.get(wip)), Prop.READ_BEFORE_FULL,
                      lambda: f"{name()} reads {e.buf} (async proxy) while a write to it is "
                              "still in progress")
            self._proxy_fence_check(V, S, dirty, checks, lambda: f"{name()} reads {e.buf}")
            if k == "async_read":
                S.set(rd, S.get(rd) + 1)
            else:  # held until a wait of its warpgroup retires its group (model/wgmma.py)
                self.wgmma.read(V, S, agent, e.buf, rd)
            self._scope_check(V, S, e, checks, name, cta)
        else:  # pragma: no cover
            raise ValueError(k)

    @staticmethod
    def _proxy_fence_check(V: Any, S: Any, dirty: int, checks: list[Check], what: Any) -> None:
        """An async-proxy access (``what``: "<actor> reads/writes <buffer>") after generic
        stores to the buffer with no ``fence.proxy.async`` between (PTX ISA 9.7.13.4.1)."""
        add_check(checks, V.lt(0, S.get(dirty)), Prop.MISSING_PROXY_FENCE,
                  lambda: f"{what()} through the async proxy after generic stores to it "
                          "without fence.proxy.async")

    @staticmethod
    def _writes_in_flight(V: Any, S: Any, awip: int) -> str:
        """Which writes a racing read meets (concrete states; symbolic: in general)."""
        if V.symbolic:
            return "a write to it is still in flight"
        if S.get(awip) > 0:
            return "an asynchronous write to it (TMA bytes, a CLC response, cp.async copies) " \
                "has not landed yet"
        return "thread stores to it are still in flight (not yet released by an arrive " \
            "or barrier)"

    def _tmem_use(self, V: Any, S: Any, e: GhostEffect, checks: list[Check], name: Any) -> None:
        """An access to an accumulator in tensor memory (an MMA starting or finishing its
        writes, a warp's tcgen05.ld): the CTA must hold an allocation, and no
        cta_group::2 dealloc of its pair may be under way."""
        cta = e.buf.cta
        t = self.tmem[cta]
        bad = V.le(S.get(t + TM_LIVE), 0)
        if self.tmem_paired:
            bad = V.or_(bad, *[V.eq(S.get(self.tmem[c] + TM_PAIR), PAIR_DEALLOC)
                               for c in self.tmem_pair_of(cta)])
        if e.kind == "tmem_use":  # a lifted tcgen05 access: no stage buffer to name
            what = "accesses"
        else:
            what = ("reads" if e.kind == "read" else "writes") + f" the accumulator {e.buf} in"
        add_check(checks, bad, Prop.TMEM_MISUSE,
                  lambda: f"{name()} {what} tensor memory of CTA {cta} while none is "
                          "allocated there (before tcgen05.alloc, or after or during its "
                          "tcgen05.dealloc)")

    def _tmem_exec(self, V: Any, S: Any, a: int, ins: Instr, checks: list[Check],
                   who: str) -> Any:
        """tcgen05.alloc / dealloc / relinquish_alloc_permit and the wait half of a
        cta_group::2 collective; returns the step's enabledness."""
        ag = self.agents[a]
        cta = ag.cta
        t = self.tmem[cta]
        if isinstance(ins, TmemWait):
            return V.eq(S.get(t + TM_PAIR), PAIR_NONE)
        if isinstance(ins, TmemRelinquish):
            S.set(t + TM_RELINQ, 1)
            return True
        alloc = isinstance(ins, TmemAlloc)
        op = "tcgen05.alloc" if alloc else "tcgen05.dealloc"
        op += f".cta_group::{ins.cta_group}"
        if alloc:
            add_check(checks, V.eq(S.get(t + TM_RELINQ), 1), Prop.TMEM_MISUSE,
                      f"{who} issues {op} after CTA {cta} relinquished its tensor-memory "
                      "allocation permit (tcgen05.relinquish_alloc_permit)")
        pair = self.tmem_pair_of(cta) if ins.cta_group == 2 else (cta,)
        if not alloc:
            add_check(checks, V.le(S.get(t + TM_LIVE), 0), Prop.TMEM_MISUSE,
                      f"{who} issues {op} while CTA {cta} holds no tensor-memory allocation "
                      "(a second dealloc, or one before any alloc)")
            for c in pair:
                for ref in self.tmem_bufs.get(c, ()):
                    rb = self.buf[ref]
                    add_check(checks, V.lt(0, S.get(rb)), Prop.TMEM_MISUSE,
                              lambda ref=ref: f"{who} issues {op} while an MMA still writes "
                                              f"the accumulator {ref} (its tcgen05.commit has "
                                              "not completed)")
                    add_check(checks, V.lt(0, S.get(rb + 2)), Prop.TMEM_MISUSE,
                              lambda ref=ref: f"{who} issues {op} while a warp still reads the "
                                              f"accumulator {ref} (it has not released it)")
        if ins.cta_group == 1 or len(pair) == 1:
            if ins.cta_group == 2:
                checks.append(Check(True, Prop.TMEM_MISUSE,
                                    f"{who} issues {op}, but CTA {cta} has no peer CTA in "
                                    "the cluster"))
            live = S.get(t + TM_LIVE)
            S.set(t + TM_LIVE, live + 1 if alloc else V.ite(V.lt(0, live), live - 1, 0))
            return True
        peer = cta ^ 1
        tp = self.tmem[peer]
        mark = PAIR_ALLOC if alloc else PAIR_DEALLOC
        # PTX ISA: "the issuing warp must make sure that peer CTA is launched and is still
        # active"
        add_check(checks, self.exited(V, S, peer), Prop.REMOTE_OP_TO_EXITED_CTA,
                  f"{who} issues {op} after its peer CTA {peer} exited")
        mine, theirs = S.get(t + TM_PAIR), S.get(tp + TM_PAIR)
        add_check(checks, V.or_(V.ne(mine, PAIR_NONE),
                                V.and_(V.ne(theirs, PAIR_NONE), V.ne(theirs, mark))),
                  Prop.TMEM_MISUSE,
                  f"{who} issues {op} while the CTA pair is inside another cta_group::2 "
                  "alloc/dealloc (both CTAs' allocator warps must issue the same collective "
                  "instructions in the same order)")
        done = V.eq(theirs, mark)
        for c in (cta, peer):
            live = S.get(self.tmem[c] + TM_LIVE)
            if alloc:
                S.set(self.tmem[c] + TM_LIVE, V.ite(done, live + 1, live))
            else:
                S.set(self.tmem[c] + TM_LIVE,
                      V.ite(V.and_(done, V.lt(0, live)), live - 1, live))
        S.set(tp + TM_PAIR, V.ite(done, PAIR_NONE, theirs))
        S.set(t + TM_PAIR, V.ite(done, PAIR_NONE, mark))
        return True

    def _tmem_exit(self, V: Any, S: Any, cta: int, checks: list[Check]) -> None:
        """A CTA that exits must have freed its tensor memory, and must not leave its peer
        waiting for it in a cta_group::2 collective."""
        if cta not in self.tmem:
            return
        gone = self.exited(V, S, cta)
        if gone is False:
            return
        t = self.tmem[cta]
        add_check(checks, V.and_(gone, V.lt(0, S.get(t + TM_LIVE))), Prop.TMEM_MISUSE,
                  f"CTA {cta} exits with tensor memory still allocated (every tcgen05.alloc "
                  "needs a tcgen05.dealloc before the kernel exits)")
        for c in self.tmem_pair_of(cta):
            if c != cta:
                add_check(checks, V.and_(gone, V.ne(S.get(self.tmem[c] + TM_PAIR),
                                                    PAIR_NONE)), Prop.TMEM_MISUSE,
                          f"CTA {cta} exits while its peer CTA {c} waits for it in a "
                          "cta_group::2 tcgen05.alloc/dealloc (one warp of each CTA of the "
                          "pair must take part)")

    def _scope_check(self, V: Any, S: Any, e: GhostEffect, checks: list[Check], name: Any,
                     cta: Optional[int]) -> None:
        if not self.strict_scopes or cta is None or e.buf.cta == GMEM_CTA:
            return  # (global regions: gpu-scope release/acquire, _gmem_ghost)
        flags = [S.get(m) for c, m in enumerate(self.cta_only[e.buf]) if c != cta]
        if not flags:
            return
        add_check(checks, V.or_(*[V.eq(f, 1) for f in flags]),
                  Prop.INSUFFICIENT_SCOPE,
                  lambda: f"{name()} (CTA {cta}) reads {e.buf}, whose data threads of another "
                          "CTA released only at .cta scope (mbarrier.arrive's default, remote "
                          "arrives included): the release does not synchronize with CTA "
                          f"{cta}; use a .release.cluster arrive")

    def _scope_layout(self, L: Any) -> None:
        """Strict scopes: which stage buffers each barrier publishes (TMA deliveries that
        complete on it, stores ended by arrives on it), and, per warp, one slot for each
        buffer a wait of that warp may acquire: the fill it acquired (``acquire``)."""
        pub: dict[BarRef, set[BufRef]] = {}
        for ag in self.agents:
            for ins in ag.program.code:
                if isinstance(ins, TmaLoad):
                    for dl in ins.deliveries:
                        if dl.buf is not None:
                            pub.setdefault(dl.bar, set()).add(dl.buf)
                elif isinstance(ins, Arrive):
                    ended = {e.buf for e in ins.pre if e.kind == "write_end"
                             and e.buf.cta != GMEM_CTA}
                    for arr in ins.arrivals:
                        pub.setdefault(arr.bar, set()).update(ended)
        self.pub_bufs = {b: tuple(sorted(x, key=str)) for b, x in pub.items()
                         if all(buf in self.buf for buf in x)}
        for ag in self.agents:
            mine: dict[BufRef, int] = {}
            for ins in ag.program.code:
                if isinstance(ins, Wait):
                    for buf in self.pub_bufs.get(ins.bar, ()):
                        if buf not in mine:
                            mine[buf] = L.alloc(f"{ag.name}.acq.{buf}", NO_DATA)
                            self.acq_slots.setdefault(buf, []).append(mine[buf])
            ag.acq = mine

    def acquired_by(self, a: int, ins: Instr) -> tuple[BufRef, ...]:
        """Strict scopes: the buffers whose current fill a passing wait acquires."""
        if not self.strict_scopes or not isinstance(ins, Wait):
            return ()
        return self.pub_bufs.get(ins.bar, ())

    def published_by(self, a: int, ins: Instr) -> tuple[BufRef, ...]:
        """Strict scopes: the buffers a cluster-scope release of warp ``a`` may publish to
        the whole cluster (those its waits may have acquired)."""
        if not self.strict_scopes or self.release_scope(ins) != "cluster" or \
                not isinstance(ins, (Arrive, ClusterArrive)):
            return ()
        return tuple(self.agents[a].acq)

    def _acquire(self, V: Any, S: Any, a: int, ins: Instr) -> None:
        ag = self.agents[a]
        for buf in self.acquired_by(a, ins):
            S.set(ag.acq[buf], S.get(self.buf[buf] + 1))  # the fill it now holds

    def _publish(self, V: Any, S: Any, a: int, ins: Instr) -> None:
        """A ``.release.cluster`` by a warp that acquired a fill (and it is still the
        buffer's fill) makes it visible cluster-wide as far as this warp's CTA goes:
        cumulativity of release through the warp's earlier acquire."""
        ag = self.agents[a]
        for buf in self.published_by(a, ins):
            got = S.get(ag.acq[buf])
            ok = V.and_(V.ne(got, NO_DATA), V.eq(got, S.get(self.buf[buf] + 1)))
            m = self.cta_only[buf][ag.cta]
            S.set(m, V.ite(ok, 0, S.get(m)))

    @staticmethod
    def release_scope(ins: Instr) -> str:
        """The scope of the release performed by the instruction that ends a warp's
        writes: ``cluster`` for ``mbarrier.arrive.release.cluster`` and a non-relaxed
        ``barrier.cluster.arrive``; ``cta`` for everything else (default-scope arrives,
        bar.sync/bar.arrive, exit, the warp's own TMA store)."""
        if isinstance(ins, Arrive):
            return ins.scope
        if isinstance(ins, ClusterArrive) and not ins.relaxed:
            return "cluster"
        return "cta"

    # ---------------------------------------------------------------- mbarrier operations

    def do_arrive(self, V: Any, S: Any, ref: BarRef, count: int, tx: int, checks: list[Check],
                  user_cta: Optional[int], user_agent: Optional[int], what: Any,
                  drop: bool = False, phase: Optional[int] = None) -> None:
        if not self._bar_ref(ref, checks, V):
            return
        self.use_check(V, S, ref, user_cta, user_agent, what, checks)
        src_cta = user_cta
        if src_cta is None or src_cta != ref.cta:
            prop = Prop.REMOTE_OP_TO_EXITED_CTA if src_cta is not None else \
                Prop.DANGLING_ARRIVE_AT_EXIT
            add_check(checks, self.exited(V, S, ref.cta), prop,
                      lambda: f"{_text(what)} targets {ref} after CTA {ref.cta} exited")
        nb, c = mb.arrive(V, self.read_bar(S, ref), count, tx, drop, phase)
        _label_into(checks, c, lambda: f"{_text(what)} on {ref}")
        self.write_bar(S, ref, nb)

    def do_complete_tx(self, V: Any, S: Any, ref: BarRef, nbytes: int, checks: list[Check],
                       src_cta: Optional[int], what: Any) -> None:
        if not self._bar_ref(ref, checks, V):
            return
        nb, c = mb.complete_tx(V, self.read_bar(S, ref), nbytes)
        _label_into(checks, c, lambda: f"{_text(what)} on {ref}")
        self.write_bar(S, ref, nb)

    # ---------------------------------------------------------------- agent steps

    def agent_choices(self, a: int, pc: int) -> int:
        """How many nondeterministic outcomes the instruction at ``pc`` has."""
        if pc == DONE:
            return 0
        return getattr(self.code(a)[pc], "outcomes", 1)

    def exec_agent(self, V: Any, S: Any, a: int, pc: int, choice: int = 0) -> Outcome:
        """Execute warp ``a``'s instruction at ``pc`` (the state's pc must equal it)."""
        ag = self.agents[a]
        ins = self.code(a)[pc]
        checks: list[Check] = []
        who = self.agent_label[a]
        t = type(ins)
        if not V.symbolic and t in _BLOCKING and not self._concrete_enabled(S, a, ins):
            return _BLOCKED  # a blocked warp does nothing: skip the work
        if ins.pre:
            scope = self.release_scope(ins)
            for e in ins.pre:
                self.ghost(V, S, e, checks, who, ag.cta, scope, a)
        if self.strict_scopes:
            self._publish(V, S, a, ins)
            self._acquire(V, S, a, ins)
        enabled: Any = True
        nxt = pc + 1
        label = ins.label or type(ins).__name__
        if t is Wait:
            if ins.bar.cta != ag.cta:
                checks.append(Check(True, Prop.REMOTE_WAIT,
                                    f"{who} waits on {ins.bar}, a barrier of another CTA"))
            else:
                self.use_check(V, S, ins.bar, ag.cta, a, "try_wait.parity", checks)
                b = self.read_bar(S, ins.bar)
                done = mb.wait_done(V, b, ins.parity)
                if ins.ghost is not None:
                    stale = mb.stale_check(V, b, ins.ghost)
                    checks.append(Check(stale.condition, stale.prop,
                                        f"{who} waits on {ins.bar} with parity {ins.parity}: "
                                        + stale.detail))
                    enabled = V.or_(done, stale.condition)
                else:
                    enabled = done
                self.write_bar(S, ins.bar, mb.observe(V, b, done))
        elif t is TryWait:
            self.use_check(V, S, ins.bar, ag.cta, a, "try_wait.parity", checks)
            b = self.read_bar(S, ins.bar)
            done = mb.wait_done(V, b, ins.parity)
            if ins.ghost is not None:
                stale = mb.stale_check(V, b, ins.ghost)
                checks.append(Check(stale.condition, stale.prop,
                                    f"{who} try_waits on {ins.bar}: " + stale.detail))
            self.write_bar(S, ins.bar, mb.observe(V, b, done))
            S.set(ag.locals[ins.dest], V.ite(done, 1, 0))
        elif t is Arrive:
            for arr in ins.arrivals:
                self.do_arrive(V, S, arr.bar, arr.count, arr.tx, checks, ag.cta, a,
                               lambda: f"{who} arrive", ins.drop, arr.phase)
        elif t is ExpectTx:
            if self._bar_ref(ins.bar, checks, V):
                self.use_check(V, S, ins.bar, ag.cta, a, "expect_tx", checks)
                nb, c = mb.expect_tx(V, self.read_bar(S, ins.bar), ins.tx)
                _label_into(checks, c, lambda: f"{who} expect_tx on {ins.bar}")
                self.write_bar(S, ins.bar, nb)
        elif t is CompleteTx:
            if self._bar_ref(ins.bar, checks, V):
                self.use_check(V, S, ins.bar, ag.cta, a, "complete_tx", checks)
                self.do_complete_tx(V, S, ins.bar, ins.tx, checks, ag.cta, f"{who} complete_tx")
        elif t is TmaLoad:
            if ins.kind == "clc":
                checks.append(Check(V.eq(S.get(self.clc_failed[ag.cta]), 1), Prop.ROLE_MISUSE,
                                    f"{who} issues another CLC try_cancel after observing a "
                                    "failed response (undefined behaviour)"))
            for d in range(len(ins.deliveries)):
                S.pool_add(self.pool, (a, pc, d, choice))
        elif t is CpAsync:
            S.q_push(ag.qcp, pc)
        elif t is CpAsyncArrive:
            if not ins.noinc and self._bar_ref(ins.bar, checks, V):
                self.use_check(V, S, ins.bar, ag.cta, a, "cp.async.mbarrier.arrive", checks)
                b = self.read_bar(S, ins.bar)
                for _ in range(ins.count):
                    b, c = mb.increment_pending(V, b)
                    _label_into(checks, c, lambda: f"{who} cp.async.mbarrier.arrive on {ins.bar}")
                self.write_bar(S, ins.bar, b)
            S.q_push(ag.qcp, pc)
        elif t is CpAsyncCommit:
            S.q_push(ag.qcp, pc)
            S.set(ag.cpg, S.get(ag.cpg) + 1)
        elif t is CpAsyncWaitGroup:
            if ag.cpg >= 0:  # a warp that never commits has no group to wait for
                enabled = V.le(S.get(ag.cpg), ins.n)
        elif t is UmmaCommit:
            S.q_push(ag.qtc, pc)
        elif t is WgmmaWait:
            if a in self.wgmma.group_of:  # a warp that never issues a wgmma waits for none
                enabled = self.wgmma.wait_enabled(V, S, a, ins)
                self.wgmma.wait(V, S, a, ins, lambda b: self.buf[b] + 2)
        elif t is TmaStore:
            S.q_push(ag.qbs, pc)
        elif t is BulkCommit:
            S.q_push(ag.qbs, BULK_MARK)
        elif t is BulkWaitRead:
            enabled = V.le(S.q_count(ag.qbs, BULK_MARK), ins.n)
        elif t is NamedBarrierOp:
            self._named_arrive(V, S, a, ins, checks, who)
        elif t is NamedWait:
            base = self.nb[(ag.cta, ins.id)]
            # released once the generation it arrived in completes (its flag is cleared)
            enabled = V.eq(S.get(self.nbflag[(ag.cta, ins.id, ag.warp)]), 0)
        elif t is ClusterArrive:
            self._cluster_arrive(V, S, a, ins, checks, who)
        elif t is ClusterWait:
            cg = S.get(ag.cgen)
            checks.append(Check(V.eq(cg, -1), Prop.CLUSTER_BARRIER_MISUSE,
                                f"{who} waits on the cluster barrier without having arrived"))
            enabled = V.or_(V.eq(cg, -1), V.ne(S.get(self.cluster_gen), cg))
            S.set(ag.cgen, -1)
        elif t is MbarInit:
            for name, count in ins.arrays:
                base = self.arr[(ins.cta, name)]
                checks.append(Check(V.ne(S.get(base), UNINIT), Prop.DOUBLE_INIT,
                                    f"{who} initialises {name}@cta{ins.cta} a second time"))
                _label_into(checks, mb.init_checks(V, count), lambda: f"{who} init {name}")
                S.set(base, INIT_PRIVATE)
                for s in range(self.array_decl[name].stages):
                    self.write_bar(S, BarRef(ins.cta, name, s), mb.init(count))
        elif t is FenceMbarInit:
            for name in self.arrays_inited_by(a):
                base = self.arr[(ag.cta, name)]
                S.set(base + 1, V.ite(V.ne(S.get(base), UNINIT), 1, S.get(base + 1)))
        elif t in (TmemAlloc, TmemDealloc, TmemRelinquish, TmemWait):
            enabled = self._tmem_exec(V, S, a, ins, checks, who)
        elif t in (GmemAtomic, GmemWait, GmemFence):
            enabled = self._gmem_exec(V, S, a, ins)
        elif t is Fail:
            checks.append(Check(True, ins.prop, f"{who}: {ins.message}"))
        elif t is Nop:
            pass
        elif t is Exit:
            nxt = DONE
        elif t is ParamSplit:
            label = self._param_split(V, S, a, ins, choice, checks)
        elif t is SetLocal:  # only reached as the first instruction of a program
            pass
        else:  # pragma: no cover
            raise NotImplementedError(t.__name__)
        for e in ins.post:
            self.ghost(V, S, e, checks, who, ag.cta, "cta", a)
        S.set(ag.pc, nxt)
        if nxt == DONE:
            self._after_exit(V, S, ag.cta, checks)
        else:
            self.run_local(V, S, a, checks)
        return Outcome(enabled, checks, label)

    def _param_split(self, V: Any, S: Any, a: int, ins: ParamSplit, choice: int,
                     checks: list[Check]) -> str:
        """``ParamSplit``: keep the parameter values on the side chosen (choice 0: where
        ``ins.text`` holds, 1: where it fails; the other side when no possible value is
        on the chosen one).  Returns the step's label (concretely: the side taken and the
        values left).

        Afterwards the split is decided, and so is every split of the same condition
        (mask): every other warp sitting at one passes it in this step, as ``run_local``
        passes one that is decided when the warp gets there.  So no split a warp takes
        leaves the values as they were -- the steps that would (a warp passing a split
        whose side another warp chose: it can only follow) are not steps of their own,
        and their orders do not multiply the states (stage counts: every warp starts
        with the same splits)."""
        bits = [S.get(b) for b in self.param_bits]
        inside, outside = self.split_sides(V, S.get, ins)
        holds = inside if choice == 0 else V.not_(outside)
        for slot, x, m in zip(self.param_bits, bits, ins.mask):
            S.set(slot, V.ite(holds, x if m else 0, 0 if m else x))
        for b, q in self.split_partners(a, ins):
            self._pass_split(V, S, b, q, V.eq(S.get(self.agents[b].pc), q), checks)
        if V.symbolic:
            return ins.label
        left = [pt for pt, b in zip(self.param_points, self.param_bits) if S.get(b) == 1]
        return (f"{ins.text}: {'yes' if holds else 'no'} (for "
                f"{describe_points(self.param_names, left)})")

    def arrays_inited_by(self, a: int) -> list[str]:
        """The barrier arrays of its CTA that warp ``a`` initialises."""
        cta = self.agents[a].cta
        return [name for name in self.arrays_of_cta.get(cta, [])
                if a in self.initers.get((cta, name), ())]

    def _concrete_enabled(self, S: Any, a: int, ins: Instr) -> bool:
        """Concrete enabledness of a blocking instruction (the same conditions exec_agent
        computes; evaluated first only to skip work for blocked warps)."""
        ag = self.agents[a]
        t = type(ins)
        if t is Wait:
            if ins.bar.cta != ag.cta or ins.bar not in self.bar:
                return True  # a violation step
            b = self.bar[ins.bar]
            phase = S.get(b)
            if (phase % 2) != ins.parity:
                return True
            if ins.ghost is not None:
                d = (phase - ins.ghost) % mb.PHASE_MOD
                return d not in (0, 1)
            return False
        if t is NamedWait:
            return S.get(self.nbflag[(ag.cta, ins.id, ag.warp)]) == 0
        if t is ClusterWait:
            cg = S.get(ag.cgen)
            return cg == -1 or S.get(self.cluster_gen) != cg
        if t is BulkWaitRead:
            return S.q_count(ag.qbs, BULK_MARK) <= ins.n
        if t is CpAsyncWaitGroup:
            return ag.cpg < 0 or S.get(ag.cpg) <= ins.n
        if t is WgmmaWait:
            return a not in self.wgmma.group_of or \
                bool(self.wgmma.wait_enabled(CONCRETE, S, a, ins))
        if t is TmemWait:
            return S.get(self.tmem[ag.cta] + TM_PAIR) == PAIR_NONE
        if t is GmemWait:
            v = S.get(self.gflag[ins.flag])
            return v == ins.value if ins.cmp == "eq" else v >= ins.value
        return True

    def run_local(self, V: Any, S: Any, a: int, checks: list[Check]) -> None:
        """Follow the warp's local control flow up to its next synchronisation instruction."""
        ag = self.agents[a]
        code = ag.program.code
        pc = S.get(ag.pc)
        steps = 0
        while pc != DONE:
            ins = code[pc]
            t = type(ins)
            if t is Jump:
                pc = ins.target
            elif t is Branch:
                c = eval_dyn(V, ins.cond, self._getter(S, ag))
                if V.symbolic and not isinstance(c, (bool, int)):
                    S.set(ag.pc, pc)
                    self._fork_local(V, S, a, c, ins, checks)
                    return
                pc = ins.then if c else ins.orelse
            elif t is ParamSplit:
                inside, outside = self.split_sides(V, S.get, ins)
                decided = V.not_(V.and_(inside, outside))
                if V.symbolic:
                    S.set(ag.pc, pc)
                    self._pass_split(V, S, a, pc, decided, checks)
                    return
                if not decided:
                    break
                pc += 1
            elif t is SetLocal:
                if ins.value.op == "response":
                    buf = ins.value.args[0]
                    val = S.get(self.buf[buf] + 4)
                    for e in ins.pre:
                        self.ghost(V, S, e, checks, f"{ag.name} ({ag.role})", ag.cta, "cta", a)
                    S.set(self.clc_failed[ag.cta],
                          V.ite(V.eq(val, 0), 1, S.get(self.clc_failed[ag.cta])))
                    S.set(ag.locals[ins.dest], val)
                else:
                    S.set(ag.locals[ins.dest],
                          eval_dyn(V, ins.value, self._getter(S, ag)))
                pc += 1
            else:
                break
            steps += 1
            if steps > 100_000:  # pragma: no cover - the compiler prevents local-only loops
                raise RuntimeError("local loop without synchronisation")
        S.set(ag.pc, pc)

    def split_partners(self, a: int, ins: ParamSplit) -> list[tuple[int, int]]:
        """``(warp, pc)`` of every split of the same condition in another warp's program:
        a warp sitting at one is moved past it by ``ins`` (``_param_split``)."""
        return [(b, q) for b, pcs in self.splits_of_mask[ins.mask].items() if b != a
                for q in pcs]

    def _pass_split(self, V: Any, S: Any, a: int, pc: int, cond: Any,
                    checks: list[Check]) -> None:
        """Where ``cond`` holds, warp ``a`` (at the split at ``pc``, decided) passes it and
        follows its local control flow on (the branch after a split tests the side the
        values are on); elsewhere nothing changes."""
        ag = self.agents[a]
        if not V.symbolic:
            if cond:
                S.set(ag.pc, pc + 1)
                self.run_local(V, S, a, checks)
            return
        S1, S0 = S.fork(), S.fork()
        S1.set(ag.pc, pc + 1)
        c1: list[Check] = []
        self.run_local(V, S1, a, c1)
        checks.extend(Check(V.and_(cond, ch.condition), ch.prop, ch.detail) for ch in c1)
        S.merge(cond, S1, S0)

    def split_sides(self, V: Any, get: Callable[[int], Any], ins: ParamSplit
                    ) -> tuple[Any, Any]:
        """Is some parameter value still possible on the condition's side of a split,
        and on the other side?  Where one of them is false the split is decided: it
        keeps the bits as they are, and stays decided, since steps only clear bits."""
        inside = V.or_(*[V.eq(get(b), 1) for b, m in zip(self.param_bits, ins.mask) if m])
        outside = V.or_(*[V.eq(get(b), 1) for b, m in zip(self.param_bits, ins.mask)
                          if not m])
        return inside, outside

    def _getter(self, S: Any, ag: AgentInfo) -> Callable[[Any], Any]:
        """Reads of a warp's dynamic expressions: its locals, and parameter bits
        (``model.program.param_bit``)."""
        def get(n: Any) -> Any:
            if isinstance(n, tuple):
                return S.get(self.param_bits[n[1]])
            return S.get(ag.locals[n])
        return get

    def _fork_local(self, V: Any, S: Any, a: int, c: Any, ins: Branch,
                    checks: list[Check]) -> None:
        """Symbolic engines: a branch on a symbolic local follows both sides (each up to
        its next synchronisation instruction) on copies of the state (``S.fork()``) and
        merges them with ``ite`` (``S.merge``); checks of a side hold only under its
        condition.  The concrete engines never come here."""
        ag = self.agents[a]
        sides = []
        for cond, target in ((c, ins.then), (V.not_(c), ins.orelse)):
            S1 = S.fork()
            S1.set(ag.pc, target)
            c1: list[Check] = []
            self.run_local(V, S1, a, c1)
            checks.extend(Check(V.and_(cond, ch.condition), ch.prop, ch.detail) for ch in c1)
            sides.append(S1)
        S.merge(c, sides[0], sides[1])

    def _named_arrive(self, V: Any, S: Any, a: int, ins: NamedBarrierOp, checks: list[Check],
                      who: str) -> None:
        ag = self.agents[a]
        base = self.nb[(ag.cta, ins.id)]
        flag = self.nbflag[(ag.cta, ins.id, ag.warp)]
        arrived, expected, gen = S.get(base), S.get(base + 1), S.get(base + 2)
        # PTX ISA bar/barrier: different warps may use different forms (sync, arrive) of
        # one barrier "using the same barrier name and thread count"; no thread count
        # means all the CTA's threads, the same participants as a count of the block
        # size.  Checked in both orders (``expected`` -1: the generation was opened
        # without a count)
        block = self.info.block_threads
        if ins.count is not None:
            want = ins.count
            other = V.ne(expected, want)
            if want == block:
                other = V.and_(other, V.ne(expected, -1))
            checks.append(Check(V.and_(V.ne(expected, 0), other),
                                Prop.NAMED_BARRIER_MISUSE,
                                f"{who} arrives at named barrier {ins.id} with {want} threads "
                                "while other warps of this generation used another count"
                                + ("" if want == block else
                                   " (or none: all the block's threads)")))
        else:
            want = 0  # all threads of the CTA: completion counts non-exited warps
            checks.append(Check(V.and_(V.ne(expected, 0), V.ne(expected, -1),
                                       V.ne(expected, block)),
                                Prop.NAMED_BARRIER_MISUSE,
                                f"{who} arrives at named barrier {ins.id} for all the block's "
                                f"{block} threads (no thread count) while other warps of this "
                                "generation gave a smaller thread count"))
        checks.append(Check(V.eq(S.get(flag), 1), Prop.NAMED_BARRIER_MISUSE,
                            f"{who} arrives twice at named barrier {ins.id} in one generation"))
        if ins.id == 0 or ins.count is None:
            self._release_inits(V, S, a, "rel_cta")
        S.set(flag, 1)
        S.set(base, arrived + WARP_SIZE)
        S.set(base + 1, V.ite(V.eq(expected, 0), want if want else -1, expected))
        S.set(ag.nbw, gen)
        self._named_complete(V, S, ag.cta, ins.id)

    def _named_complete(self, V: Any, S: Any, cta: int, bid: int) -> None:
        base = self.nb[(cta, bid)]
        arrived, expected = S.get(base), S.get(base + 1)
        need = expected
        if (cta, bid) in self.nb_counts_live:
            live = 0
            for i in self.agents_of_cta[cta]:
                live = live + V.ite(self.done(V, S, i), 0, WARP_SIZE)
            need = V.ite(V.eq(expected, -1), live, expected)
        complete = V.and_(V.ne(expected, 0), V.le(need, arrived))
        if complete is False:  # concretely incomplete: nothing changes
            return
        if self.gbufs:
            part = {i: V.eq(S.get(self.nbflag[(cta, bid, self.agents[i].warp)]), 1)
                    for i in self.agents_of_cta[cta]}
            full = V.or_(V.eq(expected, -1), V.le(self.info.block_threads, expected))
            self._gmem_barrier(V, S, cta, complete, part, full)
        S.set(base, V.ite(complete, 0, arrived))
        S.set(base + 1, V.ite(complete, 0, expected))
        S.set(base + 2, V.ite(complete, 1 - S.get(base + 2), S.get(base + 2)))
        for i in self.agents_of_cta[cta]:
            f = self.nbflag[(cta, bid, self.agents[i].warp)]
            S.set(f, V.ite(complete, 0, S.get(f)))
        if bid == 0:
            self._promote(V, S, complete, "rel_cta", VIS_CTA, [cta])

    def _release_inits(self, V: Any, S: Any, a: int, which: str) -> None:
        """The initialising warp's barrier arrival releases its earlier inits."""
        ag = self.agents[a]
        off = ARR_FIELDS.index(which)
        for name in self.arrays_inited_by(a):
            base = self.arr[(ag.cta, name)]
            S.set(base + off, V.ite(V.ne(S.get(base), UNINIT), 1, S.get(base + off)))

    def _promote(self, V: Any, S: Any, cond: Any, which: str, level: int,
                 ctas: list[int]) -> None:
        off = ARR_FIELDS.index(which)
        for c in ctas:
            for name in self.arrays_of_cta.get(c, []):
                base = self.arr[(c, name)]
                ok = V.and_(cond, V.eq(S.get(base + off), 1), V.lt(S.get(base), level),
                            V.ne(S.get(base), UNINIT))
                S.set(base, V.ite(ok, level, S.get(base)))

    def _cluster_arrive(self, V: Any, S: Any, a: int, ins: ClusterArrive, checks: list[Check],
                        who: str) -> None:
        ag = self.agents[a]
        checks.append(Check(V.eq(S.get(ag.carr), 1), Prop.CLUSTER_BARRIER_MISUSE,
                            f"{who} arrives at the cluster barrier twice before waiting"))
        if True:
            for name in self.arrays_inited_by(a):
                base = self.arr[(ag.cta, name)]
                released = V.ne(S.get(base), UNINIT) if not ins.relaxed else \
                    V.and_(V.ne(S.get(base), UNINIT), V.eq(S.get(base + 1), 1))
                S.set(base + 2, V.ite(released, 1, S.get(base + 2)))
                S.set(base + 3, V.ite(released, 1, S.get(base + 3)))
        S.set(ag.carr, 1)
        S.set(ag.cgen, S.get(self.cluster_gen))
        self._cluster_complete(V, S)

    def _cluster_complete(self, V: Any, S: Any) -> None:
        if not V.symbolic:
            # fast path: the barrier completes only when every live warp has arrived
            anyone = False
            for ag in self.agents:
                if S.get(ag.carr) == 1:
                    anyone = True
                elif S.get(ag.pc) != DONE:
                    return
            if not anyone:
                return
        every = V.and_(*[V.or_(V.eq(S.get(ag.carr), 1), self.done(V, S, ag.index))
                         for ag in self.agents])
        anyone = V.or_(*[V.eq(S.get(ag.carr), 1) for ag in self.agents])
        complete = V.and_(every, anyone)
        g = S.get(self.cluster_gen)
        S.set(self.cluster_gen, V.ite(complete, 1 - g, g))
        for ag in self.agents:
            S.set(ag.carr, V.ite(complete, 0, S.get(ag.carr)))
        ctas = list(range(self.info.num_ctas))
        self._promote(V, S, complete, "rel_clu", VIS_CLUSTER, ctas)
        self._promote(V, S, complete, "rel_cta", VIS_CTA, ctas)

    def _after_exit(self, V: Any, S: Any, cta: int, checks: list[Check]) -> None:
        """An exit can complete barriers that count the CTA's (or cluster's) live threads."""
        # (a barrier with a thread count does not change: its arrivals alone complete it)
        for (c, bid) in self.nb:
            if c == cta and (c, bid) in self.nb_counts_live:
                self._named_complete(V, S, c, bid)
        self._cluster_complete(V, S)
        self._tmem_exit(V, S, cta, checks)

    # ---------------------------------------------------------------- environment steps

    def env_items_of(self, get: Callable[[int], Any]) -> list[tuple]:
        """Environment agents that can act, given a concrete slot reader ``get``.

        ``("tma", agent, pc, delivery, choice)`` for each TMA/CLC delivery in flight, and
        ``(queue, agent, head)`` for the head of a warp's tcgen05, cp.async or bulk-store
        queue (``head`` is the pc of the instruction at the head, or BULK_MARK)."""
        out: list[tuple] = []
        seen = set()
        for item in get(self.pool):
            if item not in seen:
                seen.add(item)
                out.append(("tma",) + item)
        for ag in self.agents:
            q = get(ag.qtc)
            if q:
                out.append(("tcgen05", ag.index, q[0]))
            q = get(ag.qcp)
            if q:
                out.append(("cp.async", ag.index, q[0]))
            q = get(ag.qbs)
            if q:
                out.append(("bulk", ag.index, q[0]))
        return out

    def env_items(self, state: tuple) -> list[tuple]:
        return self.env_items_of(lambda i: state[i])

    def exec_env(self, V: Any, S: Any, item: tuple) -> Outcome:
        kind = item[0]
        checks: list[Check] = []
        if kind == "tma":
            _, a, pc, d, choice = item
            ins = self.code(a)[pc]
            dl = ins.deliveries[d]
            S.pool_remove(self.pool, (a, pc, d, choice))
            src = self.agents[a].cta
            what = ("CLC response" if ins.kind == "clc" else "TMA bytes") + \
                f" from {self.agents[a].name}"
            checks.append(Check(self.exited(V, S, dl.bar.cta),
                                Prop.REMOTE_OP_TO_EXITED_CTA if dl.bar.cta != src
                                else Prop.DANGLING_ARRIVE_AT_EXIT,
                                f"{what} land in CTA {dl.bar.cta} after it exited"))
            if dl.buf is not None:
                checks.append(Check(self.exited(V, S, dl.buf.cta),
                                    Prop.REMOTE_OP_TO_EXITED_CTA if dl.buf.cta != src
                                    else Prop.DANGLING_ARRIVE_AT_EXIT,
                                    f"{what} are written into CTA {dl.buf.cta} after it exited"))
                # the bytes are visible to the threads that observe the complete_tx: those
                # of the signalled barrier's CTA (waits are CTA-local)
                self.ghost(V, S, GhostEffect("async_write_end", dl.buf, dl.tag), checks, what,
                           dl.bar.cta, "cta")
                if ins.kind == "clc":
                    S.set(self.buf[dl.buf] + 4, choice)
            self.use_check(V, S, dl.bar, src if dl.bar.cta != src else None,
                                         None, "complete_tx", checks)
            self.do_complete_tx(V, S, dl.bar, dl.bytes, checks, src, what)
            label = f"{what}: {dl.bytes} B land in {dl.buf} -> complete_tx on {dl.bar}" \
                if dl.buf is not None else f"{what}: complete_tx {dl.bytes} B on {dl.bar}"
            if ins.kind == "clc":
                label += " (response: " + ("valid tile" if choice else "no more work") + ")"
            return Outcome(True, checks, label)
        a, head = item[1], item[2]
        ag = self.agents[a]
        if kind == "tcgen05":
            S.q_pop(ag.qtc)
            ins = self.code(a)[head]
            what = f"tcgen05.commit of {ag.name}"
            for e in ins.effects:  # the MMAs' reads are the issuing CTA's
                self.ghost(V, S, e, checks, what, ag.cta, "cluster")
            for bar in ins.bars:
                self.do_arrive(V, S, bar, 1, 0, checks, None if bar.cta == ag.cta else ag.cta,
                               None, what)
            return Outcome(True, checks, f"{what} fires: arrive on "
                           + ", ".join(str(b) for b in ins.bars))
        if kind == "cp.async":
            S.q_pop(ag.qcp)
            ins = self.code(a)[head]
            if isinstance(ins, CpAsync):
                return Outcome(True, checks, f"cp.async copy of {ag.name} into {ins.buf} completes")
            if isinstance(ins, CpAsyncCommit):
                what = f"cp.async group of {ag.name}"
                for e in ins.effects:
                    self.ghost(V, S, e, checks, what, ag.cta, "cta")
                S.set(ag.cpg, S.get(ag.cpg) - 1)
                return Outcome(True, checks, f"{what} (committed at line {ins.loc.line}) "
                               "completes")
            what = f"cp.async.mbarrier.arrive of {ag.name}"
            for e in ins.effects:  # a default-scope (.cta) arrive publishes the copies
                self.ghost(V, S, e, checks, what, ag.cta, "cta")
            self.do_arrive(V, S, ins.bar, ins.count, 0, checks, None, None, what)
            return Outcome(True, checks, f"{what} fires on {ins.bar}")
        if kind == "bulk":
            S.q_pop(ag.qbs)
            if head == BULK_MARK:
                return Outcome(True, checks, f"bulk store group of {ag.name} complete")
            ins = self.code(a)[head]
            what = f"bulk store of {ag.name}"
            checks.append(Check(self.exited(V, S, ins.buf.cta), Prop.DANGLING_ARRIVE_AT_EXIT,
                                f"{what} still reads {ins.buf} after its CTA exited"))
            self.ghost(V, S, GhostEffect("unhold", ins.buf), checks, what)
            return Outcome(True, checks, f"{what} finished reading {ins.buf}")
        raise ValueError(kind)  # pragma: no cover

    def static_env_items(self) -> list[tuple]:
        """Every environment agent that can ever exist (for symbolic engines)."""
        out: list[tuple] = []
        for ag in self.agents:
            code = ag.program.code
            for pc, ins in enumerate(code):
                if isinstance(ins, TmaLoad):
                    for d in range(len(ins.deliveries)):
                        for choice in range(ins.outcomes):
                            out.append(("tma", ag.index, pc, d, choice))
                elif isinstance(ins, UmmaCommit):
                    out.append(("tcgen05", ag.index, pc))
                elif isinstance(ins, (CpAsync, CpAsyncArrive, CpAsyncCommit)):
                    out.append(("cp.async", ag.index, pc))
                elif isinstance(ins, TmaStore):
                    out.append(("bulk", ag.index, pc))
            # the marker is pushed by the commit (``exec_agent``), with or without stores
            # in its group: a warp that commits an empty group drains a marker too
            if any(isinstance(i, BulkCommit) for i in code):
                out.append(("bulk", ag.index, BULK_MARK))
        return out

    def env_enabled(self, V: Any, S: Any, item: tuple) -> Any:
        """Can environment agent ``item`` act?  (Symbolic engines; the concrete engine
        enumerates ``env_items`` instead.)  A queue item needs its pc at the head; a bulk
        group needs a committed group, i.e. a marker somewhere in the queue."""
        kind = item[0]
        if kind == "tma":
            return V.lt(0, S.q_count(self.pool, item[1:]))
        ag = self.agents[item[1]]
        slot = {"tcgen05": ag.qtc, "cp.async": ag.qcp, "bulk": ag.qbs}[kind]
        return V.and_(V.lt(0, S.q_len(slot)), V.eq(S.q_head(slot), item[2]))

    def env_name(self, item: tuple) -> str:
        kind = item[0]
        if kind == "tma":
            ins = self.code(item[1])[item[2]]
            return "clc" if ins.kind == "clc" else "tma"
        return kind

    # ---------------------------------------------------------------- queries

    def all_done(self, state: tuple) -> bool:
        return all(state[ag.pc] == DONE for ag in self.agents)

    def blocked_reason(self, state: tuple, a: int) -> str:
        """Why warp ``a`` cannot move in ``state`` (for deadlock reports)."""
        ag = self.agents[a]
        pc = state[ag.pc]
        if pc == DONE:
            return "exited"
        ins = self.code(a)[pc]
        S = ConcreteState(state)
        if isinstance(ins, Wait):
            b = self.read_bar(S, ins.bar)
            missing = []
            if b.pending > 0:
                missing.append(f"{b.pending} of {b.expected} arrivals")
            if b.tx > 0:
                missing.append(f"{b.tx} bytes of tx")
            if b.tx < 0:
                missing.append(f"an expect_tx of {-b.tx} bytes")
            miss = (" -- still missing " + " and ".join(missing)) if missing else ""
            why = ""
            if missing:
                can = [g for g in self.agents if state[g.pc] != DONE
                       and self._may_signal(g.index, state[g.pc], ins.bar)]
                if not can:
                    why = ("; no warp that is still running will ever arrive on it or "
                           "load bytes into it")
                else:
                    names = ", ".join(f"{g.name} ({g.role})" for g in can[:6])
                    why = (f"; only {names}{' ...' if len(can) > 6 else ''} could still "
                           "signal it, and " + ("it is" if len(can) == 1 else "they are")
                           + " stuck too")
            return (f"waits on {ins.bar} for parity {ins.parity} (barrier in phase "
                    f"{b.phase} mod 4, parity {b.phase % 2}){miss}{why}")
        if isinstance(ins, NamedWait):
            base = self.nb[(ag.cta, ins.id)]
            return (f"waits at named barrier {ins.id} ({state[base]} threads arrived of "
                    f"{state[base + 1] if state[base + 1] > 0 else 'all live'})")
        if isinstance(ins, ClusterWait):
            missing = [g.name for g in self.agents
                       if state[g.carr] == 0 and state[g.pc] != DONE]
            return "waits at the cluster barrier for " + ", ".join(missing[:8]) + \
                (" ..." if len(missing) > 8 else "")
        if isinstance(ins, BulkWaitRead):
            return (f"waits for bulk stores (cp.async.bulk.wait_group.read {ins.n}; "
                    f"{state[ag.qbs].count(BULK_MARK)} groups outstanding)")
        if isinstance(ins, CpAsyncWaitGroup):
            return (f"waits for cp.async groups (cp.async.wait_group {ins.n}; "
                    f"{state[ag.cpg]} groups outstanding)")
        if isinstance(ins, WgmmaWait):
            return self.wgmma.blocked_reason(state, a, ins, [g.name for g in self.agents])
        if isinstance(ins, TmemWait):
            return (f"waits in {ins.label or 'a cta_group::2 tcgen05.alloc/dealloc'} for the "
                    f"allocator warp of its peer CTA {ag.cta ^ 1} to issue it too")
        if isinstance(ins, GmemWait):
            op = "==" if ins.cmp == "eq" else ">="
            can = [g for g in self.agents if state[g.pc] != DONE
                   and self._may_update(g.index, state[g.pc], ins.flag)]
            if not can:
                why = "no warp that is still running will ever update it"
            else:
                names = ", ".join(f"{g.name} ({g.role})" for g in can[:6])
                why = (f"only {names}{' ...' if len(can) > 6 else ''} could still update "
                       "it, and " + ("it is" if len(can) == 1 else "they are") + " stuck too")
            return (f"spins on {ins.flag} until it is {op} {ins.value} (ld.{ins.sem}.gpu; it "
                    f"holds {state[self.gflag[ins.flag]]}); {why}")
        return f"at {ins.label or type(ins).__name__}"

    def _reaches(self, a: int, pc: int, hit: Callable[[Instr], bool]) -> bool:
        """Can warp ``a``, from ``pc`` on, still execute an instruction ``hit`` accepts?
        (Reachability over its program's control flow; for deadlock reports.)"""
        code = self.code(a)
        seen: set[int] = set()
        todo = [pc]
        while todo:
            p = todo.pop()
            if p in seen or p < 0 or p >= len(code):
                continue
            seen.add(p)
            if hit(code[p]):
                return True
            todo.extend(control_successors(code, p))
        return False

    def _may_update(self, a: int, pc: int, flag: FlagRef) -> bool:
        """Can warp ``a``, from ``pc`` on, still update the global flag ``flag``?"""
        return self._reaches(a, pc, lambda ins: isinstance(ins, GmemAtomic)
                             and ins.flag == flag)

    def _may_signal(self, a: int, pc: int, ref: BarRef) -> bool:
        """Can warp ``a``, from ``pc`` on, still arrive on ``ref`` or have bytes or a
        commit complete on it?"""
        def hit(ins: Instr) -> bool:
            t = type(ins)
            return ((t is Arrive and any(x.bar == ref for x in ins.arrivals))
                    or (t is TmaLoad and any(d.bar == ref for d in ins.deliveries))
                    or (t is UmmaCommit and ref in ins.bars)
                    or (t in (CpAsyncArrive, CompleteTx) and ins.bar == ref))
        return self._reaches(a, pc, hit)


def _label(checks: list[Check], prefix: str) -> list[Check]:
    return [Check(c.condition, c.prop, f"{prefix}: {c.detail}") for c in checks
            if c.condition is not False]


def _label_into(out: list[Check], checks: list[Check], prefix: Any) -> None:
    """Add ``checks`` to ``out`` with a prefix, formatting only those that may fail."""
    for c in checks:
        if c.condition is not False:
            out.append(Check(c.condition, c.prop, f"{_text(prefix)}: {c.detail}"))


def _tag_differs(V: Any, stamp: Any, tag: int) -> Any:
    """Does a stored fill tag differ from ``tag``?  Parity-only tags compare by parity;
    ANY_FILL (a bare stage index) matches everything."""
    if tag >= PARITY_TAG:
        return V.and_(V.ne(stamp, NO_DATA), V.ne(stamp, ANY_FILL),
                      V.ne(V.mod(stamp, 2), tag % 2))
    return V.and_(V.ne(stamp, NO_DATA), V.ne(stamp, ANY_FILL),
                  V.ite(V.le(PARITY_TAG, stamp), V.ne(V.mod(stamp, 2), tag % 2),
                        V.ne(stamp, tag)))


def _text(x: Any) -> str:
    return x() if callable(x) else x


def describe_points(names: tuple[str, ...], points: list[tuple[int, ...]]) -> str:
    """Parameter values in words: ``k_tiles=3..16`` for a run of one parameter's values,
    else the combinations."""
    if not points:
        return "no value"
    if len(names) == 1:
        vals = sorted(p[0] for p in points)
        runs: list[list[int]] = []
        for v in vals:
            if runs and v == runs[-1][1] + 1:
                runs[-1][1] = v
            else:
                runs.append([v, v])
        return f"{names[0]}=" + ",".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)
    shown = [", ".join(f"{k}={v}" for k, v in zip(names, p)) for p in points[:6]]
    more = f" and {len(points) - 6} more" if len(points) > 6 else ""
    return "; ".join(shown) + more
