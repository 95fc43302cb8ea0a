"""The memory scope of each wait's acquire: where ``.acquire.cta`` is what the model assumes.

PTX ISA 8.7 "Morally strong operations": a release and an acquire of two threads
synchronize only when each specifies a scope that includes the other thread; an
``mbarrier.try_wait``/``test_wait`` without ``.scope`` is ``.acquire.cta`` (9.7.13.15.16),
which is what CUTLASS's ``ClusterBarrier::wait`` and the CuTe DSL's ``consumer_wait`` /
``producer_acquire`` emit, in cluster kernels too.

What the model lets a passing wait synchronize with (``model/system.py``):

* arrives of warps of the barrier's own CTA, at either release scope: a ``.cta`` acquire
  includes them;
* TMA / cp.async.bulk bytes (and CLC responses) whose ``complete_tx`` signals this
  barrier: the bytes land in the barrier's CTA and are visible to the threads of that
  CTA, the ones that can wait on it (``spec/properties.md`` ``insufficient-scope``: "TMA
  bytes are marked visible to the CTA of the barrier their complete_tx signals");
  the same hand-off CUTLASS makes with its ``.cta`` waits, also for multicast copies
  issued by a peer CTA and the ``cta_group::2`` routing to the leader's barrier;
  ``tcgen05.commit`` arrivals likewise (they order asynchronous MMA work, not stores);
* remote arrives with CUTLASS's default ``.release.cta``: the default memory model
  accepts the hand-off as CUTLASS does (``--memory-model strict`` reports the stores they
  publish as ``insufficient-scope``), and no acquire scope makes it morally strong (the
  release's ``.cta`` scope does not include the waiter), so ``.cta`` loses nothing;
* remote arrives with ``.release.cluster`` (``mbarrier_arrive(..., scope="cluster")``):
  the strict model takes them to publish the arriving warp's stores cluster-wide
  (``System.release_scope``, ``System._publish``).  That needs the waiter's acquire to be
  ``.cluster`` as well, so every wait on such a barrier acquires at ``.cluster`` scope.

``acquire_scope`` is that rule; the PTX emitter lowers each wait with it.
"""

from __future__ import annotations

from typing import Iterable

from .program import AgentProgram, Arrive, BarRef


def cluster_acquired(programs: Iterable[AgentProgram]) -> frozenset[tuple[int, str]]:
    """The barrier arrays ``(cta, array)`` that a warp of another CTA arrives on with a
    ``.release.cluster`` arrive (every stage of the array counts: a conservative key that
    does not depend on which stage a loop reaches)."""
    out: set[tuple[int, str]] = set()
    for prog in programs:
        for ins in prog.code:
            if isinstance(ins, Arrive) and ins.scope == "cluster":
                out.update((a.bar.cta, a.bar.array) for a in ins.arrivals
                           if a.bar.cta != prog.cta)
    return frozenset(out)


def acquire_scope(bar: BarRef, cluster: frozenset[tuple[int, str]]) -> str:
    """``"cluster"`` for a wait on ``bar`` when ``bar``'s array is in ``cluster``
    (``cluster_acquired``), else ``"cta"`` (see the module docstring)."""
    return "cluster" if (bar.cta, bar.array) in cluster else "cta"


__all__ = ["cluster_acquired", "acquire_scope"]
