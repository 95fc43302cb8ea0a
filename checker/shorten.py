"""Shorter counterexamples: drop the steps a run does not need.

Used by both engines when the search that would confirm a shortest counterexample has
no time left (``explicit.check_explicit`` after a reduced search, ``bmc._confirm`` after
a chain): the result is a real run of the unreduced model, not necessarily a shortest.
"""

from __future__ import annotations

import time
from typing import Optional

from ..model.system import System
from .properties import DEADLOCK_MSG
from .statespace import Explorer
from .verdict import VIOLATED, Verdict

#: seconds for dropping needless steps from an unconfirmed counterexample (``shorten``)
SHORTEN_TIMEOUT = 10.0


def counterexample_end(ex: "Explorer", steps: list[tuple], prop: str,
                       start: Optional[tuple] = None,
                       states: Optional[list[tuple]] = None) -> Optional[tuple]:
    """(violation, final state) when ``steps`` (real warps; ``ex`` without symmetry) run
    in the unreduced model -- each enabled, none violating before the last -- and end in a
    violation of ``prop``, or, for ``deadlock``, in a state where nothing can move and some
    warp has not exited (violation None); otherwise None.  ``start``: the state they run
    from (default: the initial one); ``states``: gets the state after each step."""
    state = ex.initial if start is None else start
    for i, step in enumerate(steps):
        nxt = ex.take(state, step)
        if nxt is None:
            return None
        state, viol = nxt
        if states is not None:
            states.append(state)
        if viol is not None:
            return (viol, state) if i == len(steps) - 1 and viol[0] == prop else None
    if prop == "deadlock" and not ex.all_done(state) and \
            not any(True for _ in ex._all_successors(state)):
        return (None, state)
    return None


def _drop_tails(ex: Explorer, cur: list, at: list, prop: str, first: int,
                deadline: Optional[float]) -> tuple[list, list, Optional[tuple]]:
    """One backward pass dropping windows of steps at once: a window (positions up to
    ``first``, going back) holds steps whose warps take no step after it, so that no
    kept step of theirs runs at another pc; it doubles after a window that could go and
    halves after one that could not (a single step that cannot go is kept).  Returns
    the run, its states and the last successful replay's ending (None: nothing went)."""
    best = None
    i, k = first, 1
    later = {x[:2] for x in cur[i + 1:]}  # the units acting after position i
    while i >= 0:
        if deadline is not None and time.perf_counter() > deadline:
            break
        lo = i
        while lo >= 0 and i - lo < k and not (cur[lo][0] == "a" and cur[lo][:2] in later):
            lo -= 1
        lo += 1  # the window is cur[lo:i + 1]
        if lo > i:  # the step at i is a warp's that acts later: not a tail
            later.add(cur[i][:2])
            i, k = i - 1, 1
            continue
        after: list[tuple] = []
        r = counterexample_end(ex, cur[i + 1:], prop, start=at[lo], states=after)
        if r is not None:  # the units after the window are the same
            cur, at, best = cur[:lo] + cur[i + 1:], at[:lo + 1] + after, r
            i, k = lo - 1, 2 * k
        elif k > 1:
            k = max(1, (i - lo + 1) // 2)
        else:
            later.add(cur[i][:2])
            i -= 1
    return cur, at, best


def shorten(system: System, steps: list[tuple], prop: str,
            deadline: Optional[float] = None) -> Optional[Verdict]:
    """A shorter run with the same ending: drop steps while the rest still replays
    through the unreduced model -- every step enabled, none violating early -- and ends
    in a violation of ``prop`` (for ``deadlock``: in a state where nothing can move and
    some warp has not exited).  First whole tails of the warps' steps, a window at a
    time (``_drop_tails``: on NVIDIA's 2x2 Hopper GEMM with an exit race, a random run
    of 1,625 steps loses 566 in about half the replays single steps take), then single
    steps, last first, until none can go.  ``steps`` name real warps
    (``Trace.steps``).  Used when the search that would confirm a shortest
    counterexample runs out of time: the result is a real run, not necessarily a
    shortest one.  Returns the shorter counterexample as a verdict, or None if no step
    could be dropped."""
    ex = Explorer(system, symmetry=False)
    cur = list(steps)
    # at[j]: the state after cur[:j] -- a candidate without step i runs from at[i]
    at = [ex.initial]
    if counterexample_end(ex, cur, prop, states=at) is None:
        return None
    best = None
    first = len(cur) - 2 if prop != "deadlock" else len(cur) - 1
    changed = True
    while changed:  # whole tails first: one replay drops many steps
        cur, at, got = _drop_tails(ex, cur, at, prop, first, deadline)
        changed = got is not None
        best = got or best
        first = len(cur) - 2 if prop != "deadlock" else len(cur) - 1
    changed = True
    while changed:
        changed = False
        i = len(cur) - 2 if prop != "deadlock" else len(cur) - 1
        while i >= 0:
            if deadline is not None and time.perf_counter() > deadline:
                changed = False
                break
            after: list[tuple] = []
            r = counterexample_end(ex, cur[i + 1:], prop, start=at[i], states=after)
            if r is not None:
                cur, best = cur[:i] + cur[i + 1:], r
                at = at[:i + 1] + after
                changed = True
            i -= 1
    if best is None:
        return None
    viol, final = best
    if viol is None:
        trace = ex.replay(cur, None, stuck_state=final)
        trace.violated = "deadlock"
        trace.detail = DEADLOCK_MSG
    else:
        trace = ex.replay(cur, viol)
    return Verdict(VIOLATED, trace.violated, trace.detail or "", trace, depth=len(cur))
