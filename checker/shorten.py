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


def shorten(system: System, steps: list[tuple], prop: str,
            deadline: Optional[float] = None) -> Optional[Verdict]:
    """A shorter run with the same ending: greedily drop single steps (last first) while
    the rest still replays through the unreduced model -- every step enabled, none
    violating early -- and ends in a violation of ``prop`` (for ``deadlock``: in a state
    where nothing can move and some warp has not exited).  ``steps`` name real warps
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
