"""Starvation lassos as verdicts: validation on the concrete model, and the wording.

A lasso is a run ``steps`` whose states from index ``ell`` on repeat for ever; some warp
that has not exited never gets past its wait in the loop, under a fair schedule (the
definition of ``checker/liveness.py``).  Both engines report their lassos through
``report_lasso`` -- BMC's from its unrolling or certificate, the explicit engine's from its
state graph -- so they name the starving warps alike.
"""

from __future__ import annotations

from typing import Any

from ..model.program import TryWait
from ..model.system import DONE, System
from .errors import InternalError
from .trace import Trace
from .tracebuild import build_trace
from .verdict import VIOLATED, Verdict

STARVATION = "starvation"


def poll_pcs(system: System, a: int) -> list[int]:
    """Program counters of warp ``a``'s polls (``TryWait``: try_wait / try_acquire).  A
    warp whose only moves in a loop are polls waits for ever as much as a blocked one."""
    return [pc for pc, ins in enumerate(system.agents[a].program.code)
            if isinstance(ins, TryWait)]


def report_lasso(system: System, runner: Any, steps: list[tuple], ell: int) -> Verdict:
    """Validate a lasso (``steps``, the loop from state ``ell`` back to it) on the
    concrete model -- it closes, its schedule is fair, some warp never gets past its
    wait in it -- and build the starvation verdict; every engine reports its lassos
    through here, so they name the starving warps alike."""
    states, viol = runner.run(steps)
    if viol is not None:
        raise InternalError(f"lasso violates {viol[0]}")
    if states[ell] != states[-1]:
        raise InternalError("the BMC lasso does not close in the concrete model")
    loop = steps[ell:]
    loop_states = states[ell:-1]
    moved = {st[1] for st in loop if st[0] == "a"}
    progressed = {st[1] for st, src in zip(loop, loop_states)
                  if st[0] == "a" and src[system.agents[st[1]].pc] not in
                  poll_pcs(system, st[1])}
    fired = {st[1] for st in loop if st[0] == "e"}
    for ag in system.agents:
        en_all = all(any(s[0] == "a" and s[1] == ag.index for s, _, _ in runner.successors(st))
                     for st in loop_states)
        if en_all and ag.index not in moved:
            raise InternalError(f"lasso is unfair to {ag.name}")
    for st in loop_states:
        for s, _, _ in runner.successors(st):
            if s[0] == "e" and s[1] not in fired:
                raise InternalError(f"lasso is unfair to the environment agent {s[1]}")
    start = states[ell]
    starving = [ag for ag in system.agents
                if start[ag.pc] != DONE and ag.index not in progressed]
    if not starving:
        raise InternalError("no warp starves in the BMC lasso")
    trace: Trace = build_trace(system, steps, None)
    trace.violated = STARVATION
    trace.loop_start = ell + 1
    names = ", ".join(f"{ag.name} ({ag.role})" for ag in starving)
    trace.detail = (f"{names} wait{'s' if len(starving) == 1 else ''} for ever: from step "
                    f"{ell + 1} the run repeats a loop of {len(loop)} steps in which "
                    f"{'it never gets past its wait' if len(starving) == 1 else 'they never get past their waits'}"
                    " (polls that fail do not count), "
                    "although every asynchronous operation completes and every warp "
                    "that stays enabled runs (fair schedule)")
    trace.blocked = [f"{ag.name} ({ag.role}) {system.blocked_reason(start, ag.index)}"
                     for ag in starving]
    v = Verdict(VIOLATED, STARVATION, trace.detail, trace, depth=len(steps))
    v.stats.extra["steps"] = steps
    v.stats.extra["loop_steps"] = len(loop)
    return v
