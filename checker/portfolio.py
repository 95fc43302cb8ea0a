"""The default engine (``--engine auto``): BMC first, the explicit engine where BMC's
certificate does not decide, BMC's unrolling where neither has.

Why this order (``bench/results/bmc.md``, 47 runs of 30 s): BMC's certificate
(``checker/certificate.py``) decides 39 of them -- PROVEN without unrolling, or the
shortest counterexample from the certified states -- and it is a proof over the z3
encoding that does not trust the explicit engine's reductions.  Where the unreduced
enumeration behind it does not finish (multicast clusters, the kernel skeletons K1-K5,
p9) the unrolling decided one (p9-bug, not confirmed shortest) in 30 s, while the
explicit engine, with its symmetry and partial-order reductions, decides every one of
them (K3 in 29-45 s, the others in under 25 s).  And where
the explicit engine gives up (``--max-states``, ``--timeout``) on a state space too
large to enumerate, the unrolling may still find a shallow counterexample, so it gets
the time that is left.

Every stage is one of the engines, unchanged; the verdict is the first stage's that
decides (VIOLATED or PROVEN; a bounded SAFE of the unrolling too, at the end), with
``stats.extra["auto"]`` saying what each earlier stage answered and how long it took.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from ..model.system import System
from .verdict import PROVEN, UNKNOWN, VIOLATED, Verdict

#: the unrolling runs after an undecided explicit search only with this much time left
MIN_UNROLL_SECONDS = 5.0


def check_auto(system: System, depth: int, timeout: float = 600.0,
               max_states: int = 3_000_000,
               progress: Optional[Callable[[int, int, float], None]] = None,
               reduce: bool = True, por: Optional[bool] = None,
               bmc_steps: str = "auto", confirm_timeout: Optional[float] = None) -> Verdict:
    """BMC's certificate, then the explicit engine, then BMC's unrolling, sharing
    ``timeout`` (module docstring)."""
    from .bmc import check_bmc
    from .explicit import check_explicit

    t0 = time.perf_counter()
    conf = {} if confirm_timeout is None else {"confirm_timeout": confirm_timeout}
    tried: list[dict[str, Any]] = []

    def left() -> float:
        return timeout - (time.perf_counter() - t0)

    def note(stage: str, v: Verdict) -> None:
        tried.append({"stage": stage, "status": v.status, "reason": v.reason or v.headline(),
                      "seconds": round(v.stats.seconds, 2)})

    def done(v: Verdict) -> Verdict:
        v.stats.extra["auto"] = tried
        v.stats.extra["auto_seconds"] = round(time.perf_counter() - t0, 2)
        return v

    v = check_bmc(system, depth=depth, timeout=timeout, steps=bmc_steps,
                  certificate_only=True, max_states=max_states, **conf)
    if v.status in (VIOLATED, PROVEN):
        return done(v)
    note("bmc certificate", v)
    if left() <= 0:
        return done(v)
    e = check_explicit(system, max_states=max_states, timeout=left(), progress=progress,
                       reduce=reduce, por=por, **conf)
    if e.status != UNKNOWN:
        return done(e)
    note("explicit", e)
    if left() < MIN_UNROLL_SECONDS:
        return done(e)
    u = check_bmc(system, depth=depth, timeout=left(), steps=bmc_steps, certificate=False,
                  **conf)
    if u.status == UNKNOWN:
        # both searches stopped: the explicit engine's account of how far it got first
        note("bmc unrolling", u)
        e.reason = f"{e.reason}; BMC unrolling: {u.reason}"
        return done(e)
    return done(u)
