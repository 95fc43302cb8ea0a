"""Instructions of compiled agents: the PTX-level effect vocabulary of the pipelines.

The compiler (``model/compile.py``) specialises the kernel body for every warp of every
CTA.  Pipeline methods lower to these instructions in ``model/pipelines/``; the
transition system (``model/system.py``) gives them meaning; the PTX emitter lowers the
same instructions to PTX and GPU traces name them.  Operands are static: the compiler
has already evaluated stage indices, parities, CTA ranks, counts and masks for the warp
that runs the program (loops are unrolled until their state repeats).

Three kinds of instructions:

* synchronisation instructions (``Wait``, ``Arrive``, ``TmaLoad``, ...): one step of the
  warp in the transition system each;
* ghost effects (``GhostEffect``): bookkeeping of who reads or writes which stage buffer;
  they carry the data-race checks and run atomically with the synchronisation
  instruction they belong to (``pre`` effects run just before it, ``post`` just after);
* control (``Jump``, ``Branch``, ``SetLocal``, ``Exit``): local to the warp.

Terminology follows the research note ``cutlass-pipeline-semantics.md`` section 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Optional, Union

from .ir import NOLOC, Loc


@dataclass(frozen=True, order=True)
class BarRef:
    """An mbarrier: stage ``stage`` of barrier array ``array`` in CTA ``cta``."""

    cta: int
    array: str
    stage: int

    def __str__(self) -> str:
        return f"{self.array}[{self.stage}]@cta{self.cta}"


@dataclass(frozen=True, order=True)
class BufRef:
    """A stage buffer of a pipeline (smem tile, TMEM accumulator, CLC response)."""

    cta: int
    buffer: str
    stage: int

    def __str__(self) -> str:
        if self.cta == GMEM_CTA:
            return f"{self.buffer}[{self.stage}]@gmem"
        return f"{self.buffer}[{self.stage}]@cta{self.cta}"


#: ``BufRef.cta`` of a global-memory buffer (``gmem_buffer``): one copy shared by every
#: CTA of every modelled cluster
GMEM_CTA = -1


@dataclass(frozen=True, order=True)
class FlagRef:
    """Word ``index`` of the global-memory flag array ``array`` (``gmem_flags``): a 32-bit
    counter, zero at launch, shared by every CTA of the grid."""

    array: str
    index: int

    def __str__(self) -> str:
        return f"{self.array}[{self.index}]@gmem"


# Data tags (ghost): which fill of a buffer a write produces and a read expects.  A tag is
# the full-barrier phase (mod 4) the data belongs to; when only the parity of a state is
# known (FlashAttention's *_w_index_phase methods) it is PARITY_TAG + parity and is
# compared modulo 2.  NO_DATA is the stamp of a buffer never written.
PARITY_TAG = 4
NO_DATA = -1


def tags_match(stamp: int, tag: int) -> bool:
    if stamp == NO_DATA or tag == NO_DATA:
        return False
    if stamp >= PARITY_TAG or tag >= PARITY_TAG:
        return (stamp % 2) == (tag % 2)
    return stamp == tag


# --------------------------------------------------------------------------- ghost effects


@dataclass(frozen=True)
class GhostEffect:
    """Ghost bookkeeping on a stage buffer.

    ``kind``:
      * ``read``: the data must be complete and of fill ``tag`` (else read-before-full);
      * ``hold``/``unhold``: a reader starts/stops owning the buffer;
      * ``write_begin``: a writer starts (no reader may own it: overwrite-before-release);
      * ``write_end``: the write is complete and visible; the buffer holds fill ``tag``;
      * ``async_write_begin``/``async_write_end``: the same for a write by asynchronous
        hardware (a TMA load's delivery, cp.async copies).  A thread store to a buffer
        while such a write to it is in flight, or such a write starting while thread
        stores to it are not yet released, is ``overwrite-before-release``: the two
        writers race for the same bytes (PTX ISA 8.8: nothing orders the async proxy's
        writes with the thread's);
      * ``dirty``/``clean``: generic-proxy writes not yet followed by ``fence.proxy.async``;
      * ``async_read``: an async-proxy reader (TMA store, MMA) reads it: it must not be dirty;
      * ``wgmma_read``: the warp's share of a warpgroup's ``wgmma.mma_async`` reads ``buf``
        through the async proxy (the ``async_read`` checks); the read lasts until the
        wgmma-group the warp's next ``wgmma_commit`` closes is complete
        (``WgmmaWait``, ``model/wgmma.py``);
      * ``wgmma_commit``: ``wgmma.commit_group`` -- the warp closes its wgmma reads into
        its warpgroup's next wgmma-group (``buf`` names only the CTA:
        ``wgmma.WGMMA_GROUP``);
      * ``tmem_ptr``: a warp loads the tensor-memory address ``tcgen05.alloc`` wrote into
        ``buf`` (``TmemAllocator.retrieve_ptr``): the store must have happened and been
        released by the allocating warp (else ``tmem-misuse``);
      * ``tmem_use``: the warp accesses tensor memory of CTA ``buf.cta`` (a lifted
        tcgen05 MMA or ld/st; ``buf`` names no stage buffer): the CTA must hold an
        allocation and no ``cta_group::2`` dealloc of its pair may be under way
        (``System._tmem_use``, else ``tmem-misuse``).
    """

    kind: str
    buf: BufRef
    tag: int = NO_DATA

    def __str__(self) -> str:
        return f"{self.kind} {self.buf}" + (f" (fill {self.tag})" if self.tag != NO_DATA else "")


# --------------------------------------------------------------------------- instructions


@dataclass(frozen=True)
class Instr:
    """Common fields: source location, a label in the user's words, ghost effects."""

    loc: Loc = field(default=NOLOC, compare=False)
    label: str = field(default="", compare=False)
    pre: tuple[GhostEffect, ...] = ()
    post: tuple[GhostEffect, ...] = ()
    #: the conformance trace site whose GPU record this step answers to (a lifted CuTe
    #: DSL kernel compiled with trace sites, ``impl/cute_trace.py``); ``NO_SITE`` for
    #: a step no record stands for (ghost-only steps, the exit, the second step one op
    #: makes), which the replay takes as soon as the warp reaches it
    site: int = field(default=-1, compare=False)

    @property
    def is_sync(self) -> bool:
        return True


#: ``Instr.site`` of a step that no trace record stands for
NO_SITE = -1


@dataclass(frozen=True)
class Nop(Instr):
    """A step that only carries ghost effects (e.g. a ``read`` at the start of a role)."""


@dataclass(frozen=True)
class Wait(Instr):
    """``mbarrier.try_wait.parity`` in a loop until it returns True (a blocking wait).

    ``ghost`` is the phase (mod 4) the waiter means, when the compiler knows it; it
    drives the stale-parity check.
    """

    bar: BarRef = None  # type: ignore[assignment]
    parity: int = 0
    ghost: Optional[int] = None


@dataclass(frozen=True)
class TryWait(Instr):
    """One ``try_wait.parity`` (or ``test_wait`` when ``test``): result into local ``dest``."""

    bar: BarRef = None  # type: ignore[assignment]
    parity: int = 0
    ghost: Optional[int] = None
    dest: str = ""
    test: bool = False


@dataclass(frozen=True)
class Arrival:
    """One destination of an arrive instruction: ``count`` arrivals and ``tx`` bytes expected.

    ``phase`` is the phase (mod 4) of ``bar`` these arrivals belong to, when the compiler
    knows it from the arriving warp's pipeline state (``pipeline_state.arrival_phase``);
    it drives the surplus-arrival check of ``mbarrier.arrive``.  None: not known (raw
    ``mbarrier_arrive``, states built from a bare index and phase, lifted kernels).
    """

    bar: BarRef
    count: int = 1
    tx: int = 0
    phase: Optional[int] = None


@dataclass(frozen=True)
class Arrive(Instr):
    """``mbarrier.arrive{.expect_tx}`` by the active lanes of one warp.

    Lanes that target the same barrier are summed into one ``Arrival``; a lane targeting
    another CTA does a remote arrive (``mapa`` + ``.shared::cluster``).
    """

    arrivals: tuple[Arrival, ...] = ()
    drop: bool = False
    #: the release's memory scope (PTX ``mbarrier.arrive.release.{cta,cluster}``; the
    #: default, CUTLASS's choice even for remote arrives, is ``cta``)
    scope: str = "cta"


@dataclass(frozen=True)
class ExpectTx(Instr):
    """Bare ``mbarrier.expect_tx`` (no arrival)."""

    bar: BarRef = None  # type: ignore[assignment]
    tx: int = 0


@dataclass(frozen=True)
class CompleteTx(Instr):
    """Explicit ``mbarrier.complete_tx`` (synchronous, used by tests and emulation)."""

    bar: BarRef = None  # type: ignore[assignment]
    tx: int = 0


@dataclass(frozen=True)
class Delivery:
    """Where one destination of an asynchronous copy lands."""

    bar: BarRef
    bytes: int
    buf: Optional[BufRef]
    tag: int = NO_DATA


@dataclass(frozen=True)
class TmaLoad(Instr):
    """``cp.async.bulk{.tensor}...mbarrier::complete_tx::bytes{.multicast::cluster}``.

    Each delivery completes on its own, in any order, any time after issue: its bytes
    land in ``buf`` and a ``complete_tx(bytes)`` hits ``bar``.  ``kind`` is "tma" or
    "clc" (a CLC ``try_cancel`` response, 16 bytes, whose validity is chosen at issue;
    ``may_succeed`` False: the grid has no cluster left to cancel, the response is "no
    more work").
    """

    deliveries: tuple[Delivery, ...] = ()
    kind: str = "tma"
    may_succeed: bool = True

    @property
    def outcomes(self) -> int:
        """Nondeterministic outcomes at issue: a CLC query may return a tile or not."""
        return 2 if self.kind == "clc" and self.may_succeed else 1


@dataclass(frozen=True)
class CpAsync(Instr):
    """``cp.async`` copies by the active lanes into ``buf`` (tracked per warp, in order)."""

    buf: BufRef = None  # type: ignore[assignment]
    tag: int = NO_DATA


@dataclass(frozen=True)
class CpAsyncArrive(Instr):
    """``cp.async.mbarrier.arrive{.noinc}`` by ``count`` lanes: deferred until the warp's
    earlier cp.async copies complete; without ``.noinc`` pending is raised at issue."""

    bar: BarRef = None  # type: ignore[assignment]
    count: int = 1
    noinc: bool = True
    effects: tuple[GhostEffect, ...] = ()


@dataclass(frozen=True)
class CpAsyncCommit(Instr):
    """``cp.async.commit_group``: the warp's cp.async copies issued since its previous
    commit form a group (an empty group when there are none).  The group completes, in
    order with the warp's other cp.async work, once its copies have; ``effects`` (the
    end of the copies' writes) run then.  PTX ISA, "cp.async.commit_group"."""

    effects: tuple[GhostEffect, ...] = ()


@dataclass(frozen=True)
class CpAsyncWaitGroup(Instr):
    """``cp.async.wait_group n``: block until at most ``n`` of the warp's most recent
    committed groups are pending, i.e. every earlier group is complete (copies not yet
    committed are not waited for).  ``cp.async.wait_all`` is a commit then ``n = 0``.
    PTX ISA, "cp.async.wait_group / cp.async.wait_all"."""

    n: int = 0


@dataclass(frozen=True)
class UmmaCommit(Instr):
    """``tcgen05.commit...mbarrier::arrive::one{.multicast::cluster}``: one deferred arrive on
    each barrier once the warp's earlier tcgen05 operations complete.  ``effects`` are ghost
    effects (end of MMA reads of stage buffers, end of accumulator writes) performed when it
    fires."""

    bars: tuple[BarRef, ...] = ()
    effects: tuple[GhostEffect, ...] = ()
    #: ``.cta_group::1`` or ``::2``: the pipeline's (``PipelineAsyncUmma`` and the other
    #: UMMA pipelines commit with ``cta_group::2`` in a 2-CTA pair); the model's
    #: semantics do not depend on it, the PTX emitter does
    cta_group: int = 1


@dataclass(frozen=True)
class WgmmaWait(Instr):
    """``wgmma.wait_group.sync.aligned n`` by one warp of a warpgroup: blocks until every
    wgmma-group of the warpgroup but the ``n`` most recent this warp committed is
    complete, which needs every warp of the warpgroup to have committed it; then the
    shared-memory reads of those groups are over, for every warp's share
    (``model/wgmma.py``; PTX ISA 9.7.15.7.2-3)."""

    n: int = 0


@dataclass(frozen=True)
class TmaStore(Instr):
    """``cp.async.bulk.tensor`` store from smem ``buf`` (reads it asynchronously)."""

    buf: BufRef = None  # type: ignore[assignment]


@dataclass(frozen=True)
class BulkCommit(Instr):
    """``cp.async.bulk.commit_group``: close this warp's pending stores into a group."""


@dataclass(frozen=True)
class BulkWaitRead(Instr):
    """``cp.async.bulk.wait_group.read n``: block until at most ``n`` groups still read smem."""

    n: int = 0


@dataclass(frozen=True)
class NamedBarrierOp(Instr):
    """``bar.sync``/``bar.arrive`` (``barrier.sync``/``barrier.arrive`` when unaligned).

    ``count`` None means all threads of the CTA (``__syncthreads``).  A sync is two steps
    in the model: the arrival, then waiting for the generation to complete (``NamedWait``).
    """

    id: int = 0
    count: Optional[int] = None
    sync: bool = True
    aligned: bool = True


@dataclass(frozen=True)
class NamedWait(Instr):
    """Second half of ``bar.sync``: wait until the generation this warp arrived in completes."""

    id: int = 0


@dataclass(frozen=True)
class ClusterArrive(Instr):
    """``barrier.cluster.arrive{.relaxed}``."""

    relaxed: bool = False


@dataclass(frozen=True)
class ClusterWait(Instr):
    """``barrier.cluster.wait``."""


@dataclass(frozen=True)
class MbarInit(Instr):
    """``mbarrier.init`` of every stage of the listed barrier arrays (one elected lane)."""

    arrays: tuple[tuple[str, int], ...] = ()  # (array name, arrival count)
    cta: int = 0


@dataclass(frozen=True)
class FenceMbarInit(Instr):
    """``fence.mbarrier_init.release.cluster``: releases this warp's earlier inits."""

    cta: int = 0


@dataclass(frozen=True)
class Fail(Instr):
    """A misuse the compiler found statically; reaching it is a violation.

    ``guard`` is empty for a misuse in the program as written (a role calling the
    other side's method, ...), and names the check otherwise: ``"clc-grid"`` for the
    branch of a bounded grid's CLC response read that a correct program never takes
    (``Compiler.read_clc_response``)."""

    prop: str = ""
    message: str = ""
    guard: str = ""


@dataclass(frozen=True)
class TmemAlloc(Instr):
    """``tcgen05.alloc.cta_group::{1,2}.sync.aligned.shared::cta.b32 [addr], nCols`` by one
    warp.  ``cta_group`` 1: the CTA's allocation is live once the instruction returns.
    ``cta_group`` 2: one warp of each CTA of the pair performs it collectively; the pair's
    allocation is live once both have issued it, and neither continues before
    (``TmemWait`` follows).  The address store into ``addr`` (shared memory) is an ordinary
    weak store of the warp (``post`` ghost effects on the address word): it reaches
    other warps with the warp's next release.  PTX ISA, "tcgen05.alloc / tcgen05.dealloc /
    tcgen05.relinquish_alloc_permit"."""

    cta_group: int = 1
    columns: int = 32


@dataclass(frozen=True)
class TmemDealloc(Instr):
    """``tcgen05.dealloc.cta_group::{1,2}.sync.aligned.b32 taddr, nCols``: frees the CTA's
    (``cta_group`` 2: the pair's, collectively, ``TmemWait`` follows) allocation; every
    accumulator in tensor memory must be idle (no MMA writing it, no warp still reading
    it)."""

    cta_group: int = 1
    columns: int = 32


@dataclass(frozen=True)
class TmemRelinquish(Instr):
    """``tcgen05.relinquish_alloc_permit.cta_group::{1,2}.sync.aligned``: the CTA gives up
    the right to allocate; a later ``tcgen05.alloc`` of the CTA is illegal."""

    cta_group: int = 1


@dataclass(frozen=True)
class TmemWait(Instr):
    """Second half of a ``cta_group::2`` alloc or dealloc: the warp waits until the peer
    CTA's warp has issued the same collective instruction."""


@dataclass(frozen=True)
class GmemAtomic(Instr):
    """An atomic update of a global-memory flag by the warp's active lanes, at ``.gpu``
    scope: ``op`` "add" (``red.{sem}.gpu.global.add.s32``, ``value`` per lane, ``lanes``
    lanes) or "store" (``st.{sem}.gpu.global.b32`` of ``value``: a store, one lane's value
    wins, every lane stores the same).  ``sem`` "release": the update is a release at gpu
    scope -- the warp's earlier writes (and, cumulatively, the CTA's writes ordered
    before it by a barrier) are visible to any thread that acquires the flag and reads
    this or a later value (PTX ISA "Memory Consistency Model": release patterns, release
    sequences of atomic read-modify-writes; "red", "st").  "relaxed": no ordering.
    CUTLASS ``cutlass/barrier.h`` ``GenericBarrier::arrive_inc`` (``red.release.gpu``),
    ``cutlass/semaphore.h`` ``Semaphore::release`` (``st.release.gpu``)."""

    flag: FlagRef = None  # type: ignore[assignment]
    op: str = "add"
    value: int = 1
    lanes: int = 1
    sem: str = "release"


@dataclass(frozen=True)
class GmemWait(Instr):
    """A spin on a global-memory flag: ``ld.{sem}.gpu.global.b32`` in a loop until
    ``flag cmp value`` holds (``cmp`` "eq" or "ge").  Blocks while the predicate is false;
    a spin on a value nobody will write is a deadlock.  ``sem`` "acquire": the load that
    ends the spin is an acquire at gpu scope (it synchronizes with the release whose
    value, or a later one of its release sequence, it reads); "relaxed": it orders
    nothing.  CUTLASS ``GenericBarrier::wait_eq`` / ``wait_lt`` (``ld.acquire.gpu``
    spins), ``Semaphore::wait``."""

    flag: FlagRef = None  # type: ignore[assignment]
    cmp: str = "eq"
    value: int = 0
    sem: str = "acquire"


@dataclass(frozen=True)
class GmemFence(Instr):
    """``fence.acq_rel.gpu`` by the warp: a lightweight fence that, with the warp's
    relaxed flag loads before it, forms an acquire pattern, and with its relaxed flag
    updates after it a release pattern (PTX ISA "Memory Consistency Model": fence-SC
    and fence.acq_rel, release and acquire patterns; "membar/fence").  CUTLASS
    ``cutlass/barrier.h`` ``red_release``: ``fence.acq_rel.gpu`` then
    ``red.relaxed.gpu.global.add``."""


# --------------------------------------------------------------------------- control


@dataclass(frozen=True)
class Jump(Instr):
    target: int = 0

    @property
    def is_sync(self) -> bool:
        return False


@dataclass(frozen=True)
class Branch(Instr):
    """Branch on a dynamic local value (a try_wait token, a CLC response)."""

    cond: Any = None  # a DynExpr
    then: int = 0
    orelse: int = 0

    @property
    def is_sync(self) -> bool:
        return False


@dataclass(frozen=True)
class SetLocal(Instr):
    dest: str = ""
    value: Any = None  # a DynExpr

    @property
    def is_sync(self) -> bool:
        return False


@dataclass(frozen=True)
class Exit(Instr):
    """The warp leaves the kernel."""


@dataclass(frozen=True)
class ParamSplit(Instr):
    """A branch on symbolic parameters (``--param K=LO..HI`` left symbolic): one step of
    the warp that splits the set of parameter values still possible.

    ``mask[i]`` says whether the condition ``text`` holds at point ``i`` of the parameter
    domain (``CompiledKernel.param_points``).  The state keeps one bit per point: is that
    value still consistent with the run so far (all set initially).  Choice 0 takes the
    condition's side when some possible value satisfies it, choice 1 the other side when
    some possible value falsifies it; a side with no possible value falls back to the
    other one, so the step is always enabled and the two choices coincide where the
    condition is already decided.  The ``Branch`` the compiler puts right after it
    follows the side taken (``DynExpr("within", (mask,))``).

    Exactness: a state with bit set S stands for the concrete states of every value in S
    (the values that took the same branches); for a concrete value the compiler would
    fold the condition statically, so every run of a value is a run here with the
    values' sides chosen, and every run here is a run of each value still in S."""

    mask: tuple[bool, ...] = ()
    text: str = ""

    @property
    def outcomes(self) -> int:
        """The condition's side and the other side."""
        return 2


# --------------------------------------------------------------------------- dynamic values


@dataclass(frozen=True, repr=False)
class DynExpr:
    """An expression over the warp's dynamic locals (``op`` in local/const/not/and/or/eq/ne/
    lt/le/add/sub).  Static parts were folded by the compiler.  ``arg`` (``args``: name,
    value) is a kernel argument read at run time (structured compilation,
    ``compile_kernel(runtime=...)``): the model evaluates it to the value it was compiled
    with, the PTX emitter reads the kernel parameter.  ``param`` (a symbolic
    parameter, compile time only: the compiler folds it into ``ParamSplit`` masks) and
    ``within`` (are all parameter values still possible inside ``args[0]``, a mask over
    the parameter domain) come from symbolic parameters."""

    op: str
    args: tuple[Any, ...]

    def __repr__(self) -> str:
        if self.op == "param":
            return f"the symbolic parameter {self.args[0]}"
        return f"a value known only at run time ({self})"

    def __str__(self) -> str:
        if self.op == "local":
            return str(self.args[0])
        if self.op == "const":
            return repr(self.args[0])
        if self.op == "not":
            return f"not {self.args[0]}"
        if self.op in ("param", "arg"):
            return str(self.args[0])
        if self.op == "within":
            return "parameter split taken"
        _sym = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "add": "+", "sub": "-"}
        if self.op in ("min", "max"):
            return f"{self.op}({self.args[0]}, {self.args[1]})"
        if self.op in _sym and any(dyn_params(x) for x in self.args):
            return f"{self.args[0]} {_sym[self.op]} {self.args[1]}"
        return f"({f' {self.op} '.join(str(a) for a in self.args)})"


def dyn_local(name: str) -> DynExpr:
    return DynExpr("local", (name,))


def dyn_params(e: Any) -> set[str]:
    """The symbolic parameters an expression mentions."""
    if not isinstance(e, DynExpr):
        return set()
    if e.op == "param":
        return {e.args[0]}
    return set().union(*[dyn_params(x) for x in e.args]) if e.args else set()


def dyn_locals(e: Any) -> set[str]:
    """The run-time locals an expression reads."""
    if not isinstance(e, DynExpr):
        return set()
    if e.op == "local":
        return {e.args[0]}
    if e.op in ("const", "param", "within", "arg"):
        return set()
    return set().union(*[dyn_locals(x) for x in e.args]) if e.args else set()


def dyn_args(e: Any) -> set[str]:
    """The kernel arguments (``arg``) an expression reads."""
    if not isinstance(e, DynExpr):
        return set()
    if e.op == "arg":
        return {e.args[0]}
    if e.op in ("const", "param", "within", "local"):
        return set()
    return set().union(*[dyn_args(x) for x in e.args]) if e.args else set()


def dyn_upper_bound(e: Any) -> Optional[int]:
    """A compile-time upper bound of a run-time value (kernel arguments, constants), or
    ``None``: ``min(c, k_tiles)`` is at most ``c`` whatever ``k_tiles`` is at launch."""
    if isinstance(e, int) and not isinstance(e, bool):
        return e
    if not isinstance(e, DynExpr):
        return None
    if e.op == "const":
        return dyn_upper_bound(e.args[0])
    bounds = [dyn_upper_bound(x) for x in e.args] if e.op in ("min", "max", "add") else []
    if e.op == "min":
        known = [b for b in bounds if b is not None]
        return min(known) if known else None
    if e.op in ("max", "add") and None not in bounds:
        return max(bounds) if e.op == "max" else bounds[0] + bounds[1]
    if e.op == "sub" and isinstance(e.args[1], DynExpr) and e.args[1].op == "const":
        hi = dyn_upper_bound(e.args[0])
        return None if hi is None else hi - e.args[1].args[0]
    return None


#: ``get`` key of parameter point ``i``'s bit (``eval_dyn`` of ``within``)
def param_bit(i: int) -> tuple[str, int]:
    return ("$param", i)


def eval_dyn(V: Any, e: DynExpr, get: Any) -> Any:
    """Evaluate a dynamic expression with value interface ``V``; ``get(name)`` reads a local."""
    op, a = e.op, e.args
    if op == "local":
        return get(a[0])
    if op == "const":
        return a[0]
    if op == "within":
        outside = [V.eq(get(param_bit(i)), 1) for i, m in enumerate(a[0]) if not m]
        return V.not_(V.or_(*outside)) if outside else True
    if op == "param":
        return get(a[0])
    if op == "arg":
        return a[1]
    vals = [eval_dyn(V, x, get) for x in a]
    if op == "not":
        return V.not_(V.ne(vals[0], 0)) if not isinstance(vals[0], bool) else V.not_(vals[0])
    if op == "and":
        return V.and_(*[V.ne(v, 0) for v in vals])
    if op == "or":
        return V.or_(*[V.ne(v, 0) for v in vals])
    if op == "eq":
        return V.eq(vals[0], vals[1])
    if op == "ne":
        return V.ne(vals[0], vals[1])
    if op == "lt":
        return V.lt(vals[0], vals[1])
    if op == "le":
        return V.le(vals[0], vals[1])
    if op == "add":
        return vals[0] + vals[1]
    if op == "sub":
        return vals[0] - vals[1]
    if op == "min":
        return V.ite(V.lt(vals[1], vals[0]), vals[1], vals[0])
    if op == "max":
        return V.ite(V.lt(vals[0], vals[1]), vals[1], vals[0])
    if op == "truth":
        return V.ne(vals[0], 0)
    raise ValueError(f"unknown dynamic operator {op}")


SyncInstr = Union[Nop, Wait, TryWait, Arrive, ExpectTx, CompleteTx, TmaLoad, CpAsync,
                  CpAsyncArrive, CpAsyncCommit, CpAsyncWaitGroup, UmmaCommit, WgmmaWait, TmaStore,
                  BulkCommit, BulkWaitRead, NamedBarrierOp, NamedWait, ClusterArrive, ClusterWait, MbarInit,
                  FenceMbarInit, Fail, Exit, ParamSplit, TmemAlloc, TmemDealloc,
                  TmemRelinquish, TmemWait, GmemAtomic, GmemWait, GmemFence]


def control_successors(code: tuple[Instr, ...] | list, pc: int) -> list[int]:
    """The program counters control may reach from ``pc`` (no wait is taken into account:
    a blocking instruction continues at ``pc + 1`` once it completes)."""
    ins = code[pc]
    if isinstance(ins, Exit):
        return []
    if isinstance(ins, Jump):
        return [ins.target]
    if isinstance(ins, Branch):
        return [ins.then, ins.orelse]
    return [pc + 1] if pc + 1 < len(code) else []


def back_edges(code: tuple[Instr, ...] | list) -> list[int]:
    """The pcs whose control goes back (to themselves or earlier).  The compiler unrolls
    bounded loops and closes unbounded ones (persistent ``while True`` loops) with such
    an edge, so a program without one runs each pc at most once and always ends: two
    branches that rejoin are not a loop.  The one rule every engine uses to tell
    terminating programs from looping ones."""
    return [pc for pc in range(len(code)) if any(t <= pc for t in control_successors(code, pc))]


def is_acyclic(code: tuple[Instr, ...] | list) -> bool:
    return not back_edges(code)


def locals_read(ins: Instr) -> set[str]:
    """The run-time locals an instruction reads (those of every dynamic expression it
    carries: a ``Branch``'s condition, a ``SetLocal``'s value)."""
    out: set[str] = set()
    for f in fields(ins):
        v = getattr(ins, f.name)
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, DynExpr):
                out |= dyn_locals(x)
    return out


def locals_written(ins: Instr) -> set[str]:
    """The run-time locals an instruction writes (a try_wait's token, ``SetLocal``)."""
    dest = getattr(ins, "dest", "")
    return {dest} if isinstance(ins, (TryWait, SetLocal)) and dest else set()


def live_locals(code: tuple[Instr, ...] | list) -> list[frozenset[str]]:
    """For each pc, the locals some run from it may read before writing them again
    (backward liveness over ``control_successors``).  A local outside this set at a
    warp's pc is *dead* there: no later step depends on its value."""
    n = len(code)
    reads = [locals_read(i) for i in code]
    writes = [locals_written(i) for i in code]
    live: list[set[str]] = [set(r) for r in reads]
    changed = True
    while changed:
        changed = False
        for pc in range(n - 1, -1, -1):
            out: set[str] = set()
            for q in control_successors(code, pc):
                if q < n:
                    out |= live[q]
            new = reads[pc] | (out - writes[pc])
            if new != live[pc]:
                live[pc] = new
                changed = True
    return [frozenset(x) for x in live]


@dataclass(frozen=True)
class AgentProgram:
    """The compiled program of one warp of one CTA."""

    cta: int
    warp: int
    role: str
    code: tuple[Instr, ...]
    locals: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"cta{self.cta}.w{self.warp}"


def map_ctas(x: Any, f: Callable[[int], int]) -> Any:
    """``x`` (a program, an instruction or any part of one) with every CTA it names --
    its own, its barriers', its buffers', an ``mbarrier.init``'s -- replaced by ``f`` of
    it; global memory (``GMEM_CTA``, ``FlagRef``) and source locations stay.  Used to
    relocate a program to another cluster of the grid (``compile``) and to map programs
    by a permutation of a cluster's CTAs (``checker/cta_symmetry.py``)."""
    if isinstance(x, (BarRef, BufRef)):
        return x if x.cta == GMEM_CTA else replace(x, cta=f(x.cta))
    if isinstance(x, tuple):
        return tuple(map_ctas(y, f) for y in x)
    if isinstance(x, list):
        return [map_ctas(y, f) for y in x]
    if isinstance(x, FlagRef) or not hasattr(x, "__dataclass_fields__"):
        return x
    changes = {}
    for name in x.__dataclass_fields__:
        if name == "loc":
            continue
        v = getattr(x, name)
        # the CTA an AgentProgram runs in, or an mbarrier.init / fence.mbarrier_init acts on
        nv = f(v) if name == "cta" and isinstance(x, (AgentProgram, MbarInit, FenceMbarInit)) \
            else map_ctas(v, f)
        if nv is not v and nv != v:
            changes[name] = nv
    return replace(x, **changes) if changes else x


#: steps that complete when a wait returns (a blocking or polling wait on an mbarrier,
#: the wait half of ``bar.sync`` and of the cluster barrier, a bulk group's read wait,
#: a cp.async group wait, the wait half of a 2-CTA tensor-memory alloc/dealloc): a trace
#: records them after the wait, every other step before it
WAIT_STEPS = (Wait, TryWait, NamedWait, ClusterWait, BulkWaitRead, CpAsyncWaitGroup, TmemWait,
              GmemWait, WgmmaWait)
