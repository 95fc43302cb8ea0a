"""What every pipeline class shares: barrier arrays, stage buffers, the signalling
primitives of ``MbarrierArray`` (``cutlass/pipeline/helpers.py``) and the implicit
ownership of stage buffers.

A pipeline *declaration* (``PipelineDecl``) is shared by all warps: its barrier arrays
(with the init counts CUTLASS derives) and its stage buffers.  A pipeline *object* is
what one warp holds after ``create``: the declaration plus what CUTLASS computes per
thread at ``create`` time (multicast masks, destination ranks, ``is_leader_cta``).

Methods lower to instructions of ``model/program.py`` through the compile context ``cx``
(``model/compile.py``): ``cx.emit(instr)``, ``cx.cta``, ``cx.lanes`` (the active lanes of
the calling warp: all 32, or the elected lane 0 inside ``elect_one()``), ``cx.ghost``
(the warp's buffer ownership), ``cx.fail(prop, message)``, ``cx.error(message)``.

Buffer ownership (ghost, spec/semantics.md): between ``consumer_wait`` and
``consumer_release`` a consumer owns its stage buffer; a wait that returns while the
buffer is still being written, or holds another fill, is ``read-before-full``; a write
that starts while a consumer owns the buffer is ``overwrite-before-release``.  Producers
that write with threads own the buffer between ``producer_acquire`` and
``producer_commit``; TMA and MMA writes own it from issue to completion.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from ..groups import WARP_SIZE, CooperativeGroup, arrive_count
from ..pipeline_state import (PipelineStateVal, PipelineUserType, fill_tag_for_acquire,
                              fill_tag_for_wait, make_pipeline_state)
from ..program import (Arrival, Arrive, BarRef, BufRef, CpAsyncArrive, DynExpr, GhostEffect,
                       UmmaCommit, Wait, TryWait, dyn_local)
from ..errors import did_you_mean
from ..properties import Prop
from .dispatch import check_arguments


def _show(v: object) -> str:
    """A value in a message, as a .pipe author writes it (model/compile.py describe)."""
    from ..describe import describe

    return describe(v)


@dataclass(frozen=True)
class ArrayDecl:
    """An mbarrier array of ``stages`` barriers, initialised with ``count`` in every CTA."""

    name: str
    stages: int
    count: int
    tx_count: int = 0


@dataclass(frozen=True)
class PipelineDecl:
    """The shared, static part of a pipeline: its barriers and stage buffers."""

    var: str
    cls: str
    stages: int
    arrays: tuple[ArrayDecl, ...]
    buffer: str
    sync: str  # "none" (defer_sync), "cta" or "cluster": the sync create() itself runs


@dataclass(frozen=True)
class Ghost:
    """A warp's static knowledge of the buffers it owns (tracked by the compiler)."""

    holds: frozenset = frozenset()          # BufRef read-owned since a consumer wait
    writes: frozenset = frozenset()         # (BufRef, tag) generic writes not yet released
    dirty: frozenset = frozenset()          # BufRef written by the generic proxy, not fenced
    umma: frozenset = frozenset()           # GhostEffects to run at the next tcgen05.commit
    cp_async: frozenset = frozenset()       # GhostEffects to run at the next cp.async arrive
                                            # or group commit
    reads: frozenset = frozenset()          # BufRef of plain smem regions read since the
                                            # warp's last release (held until its next one)


# --------------------------------------------------------------------------- the base class


@dataclass(frozen=True)
class PipelineBase:
    """Fields common to all pipeline objects (per warp)."""

    decl: PipelineDecl
    cta: int

    # ---- helpers for subclasses

    def bar(self, array: str, stage: int, cta: Optional[int] = None) -> BarRef:
        return BarRef(self.cta if cta is None else cta, f"{self.decl.var}.{array}", stage)

    def buf(self, stage: int, cta: Optional[int] = None) -> BufRef:
        return BufRef(self.cta if cta is None else cta, self.decl.buffer, stage)

    @property
    def num_stages(self) -> int:
        return self.decl.stages

    def check_state(self, cx: Any, state: Any, what: str) -> PipelineStateVal:
        if not isinstance(state, PipelineStateVal):
            cx.error(f"{what} expects a PipelineState, got {type(state).__name__}")
        if state.stages != self.decl.stages and state.stages != 0:
            cx.error(f"{what}: the state has {state.stages} stages but pipeline "
                     f"{self.decl.var} has {self.decl.stages}")
        return state

    # ---- method dispatch from .pipe code

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        fn = getattr(self, "m_" + name, None)
        if fn is None:
            methods = [m[2:] for m in dir(self) if m.startswith("m_")]
            cx.error(f"{self.decl.cls} has no method {name}()", did_you_mean(name, methods))
        while args and args[-1] is None:
            args = args[:-1]
        check_arguments(cx, self.decl.cls, name, fn, args, kwargs)
        hook = getattr(cx, "pipeline_call", None)
        if hook is not None:  # the compiler's role bookkeeping (model/roles.py)
            hook(self, name, args)
        return fn(cx, *args, **kwargs)

    def call_mutating(self, cx: Any, name: str, state: Any) -> Any:
        """Call a method that mutates its state argument; return the new state."""
        with cx.capture_args() as cap:
            self.call(cx, name, (state,), {})
        return cap.get(0, state)

    # ---- attribute access from .pipe code

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "num_stages":
            return self.decl.stages
        if name in ("is_leader_cta",) and hasattr(self, "leader"):
            return getattr(self, "leader")
        if name in ("sync_object_full", "sync_object_empty"):
            return SyncObjectView(self, name.split("_")[-1])
        known = ["num_stages", "sync_object_full", "sync_object_empty"] + \
            [m[2:] for m in dir(self) if m.startswith("m_")]
        cx.error(f"{self.decl.cls} has no attribute {name!r}", did_you_mean(name, known))

    def make_state(self, user_type: str, cx: Any) -> PipelineStateVal:
        st = make_pipeline_state(user_type, self.decl.stages, cx.track_count)
        return st if not cx.in_loop else replace(st, tracked=False)


@dataclass(frozen=True)
class SyncObjectView:
    """``pipeline.sync_object_full`` / ``sync_object_empty`` used directly (FA does this)."""

    pipe: Any
    side: str


# --------------------------------------------------------------------------- signalling


def elected(cx: Any, what: str) -> bool:
    """Election inside the library (``with elect_one():`` in ``MbarrierArray``).

    ``elect.sync`` with a full member mask waits for every lane of the warp; running it
    where only one lane is active (inside the user's own ``elect_one()``) hangs the warp.
    Returns False after emitting the failure.
    """
    if len(cx.lanes) < WARP_SIZE:
        cx.fail(Prop.ELECT_MISUSE,
                f"{what} elects a lane itself (elect.sync over the whole warp); called "
                "inside elect_one() only one lane reaches it and elect.sync waits for the "
                "other 31 forever")
        return False
    return True


def wait_effects(cx: Any, pipe: PipelineBase, bufs: tuple[BufRef, ...],
                 state: PipelineStateVal) -> tuple[GhostEffect, ...]:
    """Ghost effects of a successful consumer wait: the data must be complete, then own it."""
    tag = fill_tag_for_wait(state)
    effects = []
    for b in bufs:
        effects.append(GhostEffect("read", b, tag))
        if b not in cx.ghost.holds:
            effects.append(GhostEffect("hold", b))
    cx.ghost = replace(cx.ghost, holds=cx.ghost.holds | set(bufs))
    return tuple(effects)


def release_effects(cx: Any, bufs: tuple[BufRef, ...]) -> tuple[GhostEffect, ...]:
    """Ghost effects of a consumer release: stop owning the stage buffers it held."""
    held = tuple(b for b in bufs if b in cx.ghost.holds)
    cx.ghost = replace(cx.ghost, holds=cx.ghost.holds - set(held))
    return tuple(GhostEffect("unhold", b) for b in held)


def write_begin_effects(cx: Any, bufs: tuple[BufRef, ...], tag: int) -> tuple[GhostEffect, ...]:
    """A thread-written stage: the writer owns it until its commit (generic writes)."""
    open_bufs = {b for b, _ in cx.ghost.writes}
    new = tuple(b for b in bufs if b not in open_bufs)
    cx.ghost = replace(cx.ghost, writes=cx.ghost.writes | {(b, tag) for b in new})
    return tuple(GhostEffect("write_begin", b, tag) for b in new)


def write_end_effects(cx: Any, bufs: Optional[tuple[BufRef, ...]] = None) -> tuple[GhostEffect, ...]:
    """End the warp's open generic writes (all of them, or those on ``bufs``)."""
    ending = tuple(sorted((w for w in cx.ghost.writes if bufs is None or w[0] in bufs),
                          key=lambda w: (w[0], w[1])))
    cx.ghost = replace(cx.ghost, writes=cx.ghost.writes - set(ending))
    return tuple(GhostEffect("write_end", b, t) for b, t in ending)


def release_point_effects(cx: Any) -> tuple[GhostEffect, ...]:
    """What the warp's next release (an mbarrier arrive, ``bar.sync``/``bar.arrive``, a
    cluster arrive, its exit) ends: its open generic writes, and its reads of plain
    shared-memory regions (PTX ISA 8.8, memory consistency model: a release orders the
    thread's earlier accesses before what the synchronizing threads do next)."""
    effects = write_end_effects(cx)
    held = tuple(sorted(cx.ghost.reads))
    if held:
        cx.ghost = replace(cx.ghost, reads=frozenset())
    return effects + tuple(GhostEffect("unhold", b) for b in held)


def emit_wait(cx: Any, bar: BarRef, state: PipelineStateVal, label: str,
              post: tuple[GhostEffect, ...] = ()) -> None:
    cx.emit(Wait(bar=bar, parity=state.phase, ghost=state.ghost if state.tracked else None,
                 loc=cx.loc, label=label, post=post))


def emit_try_wait(cx: Any, bar: BarRef, state: PipelineStateVal, label: str,
                  test: bool = False) -> Any:
    dest = cx.new_local("token")
    cx.emit(TryWait(bar=bar, parity=state.phase, ghost=state.ghost if state.tracked else None,
                    dest=dest, test=test, loc=cx.loc, label=label))
    return dyn_local(dest)


def emit_arrive(cx: Any, arrivals: list[tuple[BarRef, int, int]], label: str,
                pre: tuple[GhostEffect, ...] = (), phase: Optional[int] = None) -> None:
    """One arrive instruction of the calling warp; arrivals on the same barrier are summed.

    ``phase``: the barrier phase every arrival belongs to, when the pipeline state says
    (``pipeline_state.arrival_phase``); None leaves the surplus check out."""
    merged: dict[BarRef, list[int]] = {}
    order: list[BarRef] = []
    for bar, count, tx in arrivals:
        if bar not in merged:
            merged[bar] = [0, 0]
            order.append(bar)
        merged[bar][0] += count
        merged[bar][1] += tx
    arr = tuple(Arrival(b, merged[b][0], merged[b][1], phase) for b in order)
    pre = pre + release_point_effects(cx)
    cx.emit(Arrive(arrivals=arr, loc=cx.loc, label=label, pre=pre))


def emit_umma_commit(cx: Any, bars: tuple[BarRef, ...], label: str,
                     effects: tuple[GhostEffect, ...] = (), cta_group: int = 1) -> None:
    """``tcgen05.commit.cta_group::N``: the effects of MMAs issued since the last commit
    ride along.  ``cta_group`` is the issuing pipeline's (CUTLASS ``sm100.py``: the
    commit of a 2-CTA pipeline is ``cta_group::2``)."""
    pending = tuple(sorted(cx.ghost.umma, key=lambda g: (g.buf, g.kind)))
    cx.ghost = replace(cx.ghost, umma=frozenset())
    cx.emit(UmmaCommit(bars=bars, effects=pending + effects, loc=cx.loc, label=label,
                       cta_group=cta_group))


def emit_cp_async_arrive(cx: Any, bar: BarRef, label: str, noinc: bool = True) -> None:
    """``cp.async.mbarrier.arrive``: the copies' write completions ride along (they are
    visible once the deferred arrive fires)."""
    pending = tuple(sorted(cx.ghost.cp_async, key=lambda g: (g.buf, g.kind)))
    cx.ghost = replace(cx.ghost, cp_async=frozenset())
    cx.emit(CpAsyncArrive(bar=bar, count=len(cx.lanes), noinc=noinc, effects=pending,
                          loc=cx.loc, label=label))


def group_count(cx: Any, group: Any, what: str) -> int:
    if not isinstance(group, CooperativeGroup):
        cx.error(f"{what} must be a CooperativeGroup(Agent..., size), got {_show(group)}")
    n = arrive_count(group, cx.kernel.block_threads, cx.kernel.cluster_size)
    threads = cx.kernel.block_threads * cx.kernel.cluster_size
    if n > threads:
        cx.error(f"{what} {group} counts {n} arrivals per phase, but the cluster has only "
                 f"{threads} threads ({cx.kernel.cluster_size} CTA(s) of "
                 f"{cx.kernel.block_threads}): the group does not fit the launch",
                 hint="arrival counts are arrive operations: one per signalling thread or "
                      "per elected lane, never more than the threads that exist")
    return n


def user_state_type(value: Any) -> str:
    if value not in (PipelineUserType.Producer, PipelineUserType.Consumer,
                     PipelineUserType.ProducerConsumer):
        raise ValueError(f"expected PipelineUserType.Producer/Consumer, got {_show(value)}")
    return value


__all__ = [
    "ArrayDecl", "PipelineDecl", "Ghost", "PipelineBase", "SyncObjectView", "elected",
    "wait_effects", "release_effects", "write_begin_effects", "write_end_effects",
    "release_point_effects",
    "emit_wait", "emit_try_wait", "emit_arrive", "emit_umma_commit", "emit_cp_async_arrive",
    "group_count", "fill_tag_for_acquire",
]


# --------------------------------------------------------------------------- create()


def create_effects(cx: Any, decl: PipelineDecl, defer_sync: bool) -> None:
    """What ``create()`` does at run time in the calling warp.

    ``MbarrierArray.mbarrier_init``: warp 0 (one elected lane) initialises every barrier
    of the pipeline; no other warp does.  Unless ``defer_sync``, ``create`` then runs
    ``mbarrier_init_fence`` and a CTA barrier (``sync_threads``) or a cluster barrier
    (relaxed arrive + wait), so it must be reached by every thread of every CTA.
    """
    from ..program import MbarInit

    if cx.warp == 0 and decl.arrays:
        cx.emit(MbarInit(arrays=tuple((f"{decl.var}.{a.name}", a.count) for a in decl.arrays),
                         cta=cx.cta, loc=cx.loc, label=f"{decl.var} = {decl.cls}.create(...): "
                         f"mbarrier.init by warp 0"))
    if not defer_sync:
        cx.builtin("mbarrier_init_fence")
        if decl.sync == "cluster" and cx.kernel.cluster_size > 1:
            cx.builtin("cluster_arrive_relaxed")
            cx.builtin("cluster_wait")
        else:
            cx.builtin("sync_threads")


def wait_unless(cx: Any, token: Any, bar: BarRef, state: PipelineStateVal, label: str,
                post: tuple[GhostEffect, ...] = ()) -> None:
    """``if_generate(token is None or token == 0, wait)``: skip the wait on a True token.

    The ghost effects of the wait hold on both paths (a True token came from a
    successful try_wait on the same state).
    """
    from ..program import Nop

    if token is None or token is False or token == 0:
        emit_wait(cx, bar, state, label, post)
        return
    if token is True or (isinstance(token, int) and token != 0):
        if post:
            cx.emit(Nop(loc=cx.loc, label=label + " (wait skipped: token is True)", post=post))
        return
    if not isinstance(token, DynExpr):
        from ..describe import describe

        cx.error(f"{label}: the token must be the result of a try_wait / try_acquire on "
                 f"this pipeline, or True, False or None; got {describe(token)}")
    cx.branch_unless(token, lambda: emit_wait(cx, bar, state, label))
    if post:
        cx.emit(Nop(loc=cx.loc, label=label + " (data owned)", post=post))
