"""The mbarrier arithmetic of the stubborn-set closure: pure functions of a barrier's
pending count, tx-count and the operations still to come (PTX ISA, "mbarrier": phase
completion when both reach zero; ``model/mbarrier.py``).

``can_complete``: can some order of the operations complete the current phase
(``Closure._settle_free``: arrivals that cannot complete commute); ``may_complete``: may
they complete it, or complete it twice (a wait that needs the next phase stays blocked);
``wait_passes``: does a wait or try_wait pass at a phase.  ``future_tuple`` packs a
unit's future (footprint, counts, operations grouped per barrier) for the closure.
"""

from __future__ import annotations

from typing import Any, Optional

from ...model import mbarrier as mb
from ...model.mbarrier import PHASE_MOD
from ...model.values import CONCRETE


def future_tuple(fp: frozenset, counts: dict, ops: Optional[tuple], bar_id: dict) -> tuple:
    """A unit's future (``Closure._future``): footprint, arrival counts per barrier, barrier
    operations (None: unbounded), those operations per barrier
    ``{bar_id[bar]: ((kind, count, tx), ...)}`` (small ints: a ``BarRef`` hashes slowly),
    the barriers the footprint touches, and the footprint's modes per object (so that
    ``Closure._conflict`` looks up T's few objects instead of walking the footprint)."""
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


NO_FUTURE = future_tuple(frozenset(), {}, (), {})


class OpsByBar:
    """The barrier operations of the bounded futures of ``others``, per barrier (``get``):
    for each barrier the tuple, in the same order, that appending the operations of each
    future in turn gives (``future_tuple`` groups them per future, by barrier id).
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


def can_complete(pending: int, tx: int, ops: Any, proper_of: Optional[int]) -> bool:
    """``Closure._can_complete`` for a barrier with ``pending`` arrivals and ``tx`` bytes
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


def wait_passes(ins: Any, phase: int) -> bool:
    """Would the mbarrier wait ``ins`` return True with its barrier in ``phase`` (mod
    ``PHASE_MOD``)?  The model's rules (``model/mbarrier.py``, as ``System`` applies them):
    its phase is complete (``wait_done``), or the waiter's ghost phase is stale, a
    violation step that is enabled too (``stale_check``)."""
    b = mb.MBarrier(phase % PHASE_MOD, 0, 0, 0, 1)
    if mb.wait_done(CONCRETE, b, ins.parity):
        return True
    return ins.ghost is not None and bool(mb.stale_check(CONCRETE, b, ins.ghost).condition)


def may_complete(pending: int, expected: int, tx: int, ops: Any, twice: bool) -> bool:
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
