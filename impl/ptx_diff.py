"""The op-by-op comparison of a CuTe DSL kernel's PTX with pipeproof's emitted PTX (issue 25).

Three readings, the first that makes the two agree wins: role by role as written
(``ptx_sync.compare_roles``); the same with the code common to the end of every program
taken as code after the DSL's role dispatch; and the executed reading
(``compare_executed``): both kernels run lane by lane (``ptx_exec``), which follows what
text cannot be matched on -- the DSL's one code path for several warps or CTAs (role
blocks, leader-only code, the allocator warp's free), run-time loops, retried waits.
Where none agrees, the plain reading's differences are reported, unless the executed
reading ran and names its own.
"""

from __future__ import annotations

from typing import Mapping, Optional

from .ptx_sync import RoleDiff, _collapse, compare_roles, pipeproof_programs


def compare(cute_ptx: str, pipeproof_ptx: str,
            cute_params: Optional[Mapping[object, int]] = None,
            pipeproof_args: Optional[Mapping[str, int]] = None,
            clc_cancelled: int = 0) -> RoleDiff:
    """The first of the three readings (module docstring) under which the two agree;
    else the plain one, whose ``text()`` shows the differences.  The arguments after
    the two texts are the executed reading's (``compare_executed``)."""
    plain = compare_roles(cute_ptx, pipeproof_ptx, False)
    if plain.equal:
        return plain
    tail = compare_roles(cute_ptx, pipeproof_ptx, True)
    if tail.equal:
        return tail
    run = compare_executed(cute_ptx, pipeproof_ptx, cute_params, pipeproof_args,
                           clc_cancelled)
    return run if run.equal else plain


#: how often each wait fails before it succeeds, in the executed reading's runs: the
#: synchronisation a warp issues must not depend on it (a timed ``try_wait`` tried
#: again, then spun on, is one wait)
WAIT_FAILURES = (0, 1, 2)


def compare_executed(cute_ptx: str, pipeproof_ptx: str,
                     cute_params: Optional[Mapping[object, int]] = None,
                     pipeproof_args: Optional[Mapping[str, int]] = None,
                     clc_cancelled: int = 0) -> RoleDiff:
    """The executed reading (``ptx_exec``): for each of pipeproof's programs, lane 0 of
    that warp and CTA is run through both kernels, and the synchronisation each issues
    must be the same ops, operands and barriers, in the same order.

    Loops with run-time trip counts, ``while`` loops on cluster-launch-control responses
    and retried timed waits are followed, not matched as text.  ``cute_params`` gives the
    DSL kernel's scalar parameters (by index or name), ``pipeproof_args`` pipeproof's
    kernel arguments (``manifest.args``), ``clc_cancelled`` how many
    ``query_cancel`` responses say a cluster was cancelled.  Barriers are named by
    (CTA rank, position in that CTA's ``mbarrier.init`` order), so two kernels that lay
    their barriers out differently in shared memory compare equal when they use them
    alike.  Accepted differences, as in ``compare_roles``: pipeproof's prologue before
    a program's ``$Pk`` label and its exit code are not compared, ``elect.sync`` is not
    an op, runs of one ``cp.async.mbarrier.arrive`` are one.  Every run is repeated with
    each wait failing ``WAIT_FAILURES`` times first; a warp whose synchronisation changes
    with that is a difference.  A run that depends on something the evaluator does not
    compute is a difference that says so (``NotEvaluable``), never a match."""
    from .ptx_exec import (RANK_SHIFT, NotEvaluable, Run, launch_shape, parse, run_lane,
                           run_warp)

    _, progs = pipeproof_programs(pipeproof_ptx)
    pp_params = {f"p_a_{k}": v for k, v in (pipeproof_args or {}).items()}
    _, _, labels = parse(pipeproof_ptx)
    stop = ("$EXIT", "$STUCK_EXIT")
    warps, ctas = launch_shape(cute_ptx)
    who = [(p.cta, p.warp) for p in progs]
    extra = [(c, w) for c in range(ctas or 1) for w in range(warps or 0)
             if (c, w) not in who]

    def runs(side: str, cta: int, warp: int, k: Optional[int]) -> list[list]:
        """Every lane's issued ops; lane 0 also with its waits failing first."""
        ptx = cute_ptx if side == "cute" else pipeproof_ptx
        args = dict(params=cute_params or {}) if side == "cute" else \
            dict(params=pp_params, stop_at=stop)
        lanes = run_warp(ptx, Run(warp, cta, clc_cancelled=clc_cancelled, **args))
        for f in WAIT_FAILURES[1:]:
            again = run_lane(ptx, Run(warp, cta, clc_cancelled=clc_cancelled,
                                      wait_failures=f, **args))[0]
            if [(i.op, i.addr) for i in again] != [(i.op, i.addr) for i in lanes[0]]:
                raise NotEvaluable(f"{side}: the synchronisation of cta {cta} warp {warp} "
                                   f"changes when its waits fail before they succeed")
        if side != "cute":
            lanes = [[i for i in seq if i.at >= labels.get(f"$P{k}", 0)] for seq in lanes]
        return lanes

    try:
        got = {(p.cta, p.warp): (runs("cute", p.cta, p.warp, None),
                                 runs("pipeproof", p.cta, p.warp, p.index)) for p in progs}
        for c, w in extra:
            got[(c, w)] = (runs("cute", c, w, None), [[] for _ in range(32)])
    except NotEvaluable as e:
        return RoleDiff((("the executed reading", (f"not evaluable: {e}",), ()),))

    low = (1 << RANK_SHIFT) - 1

    def names(side: int) -> dict[int, list[int]]:
        inits: dict[int, list[int]] = {}
        for (c, _w), lanes in sorted(got.items()):
            inits.setdefault(c, []).extend(i.addr & low for seq in lanes[side] for i in seq
                                           if i.op.op.startswith("mbarrier.init"))
        return inits

    def text(issued, inits: dict[int, list[int]]) -> tuple[str, ...]:
        out = []
        for i in issued:
            if i.op.op == "elect.sync":
                continue
            s = str(i.op)
            if i.addr is not None:
                rank, local = i.addr >> RANK_SHIFT, i.addr & low
                own = inits.get(rank, [])
                s += f" @cta{rank}." + (f"bar{own.index(local)}" if local in own
                                        else f"{local & 0xFFFFF:#x}")
            out.append(s)
        return tuple(_collapse(out))

    ci, pi = names(0), names(1)
    parts = []
    for (c, w), (a, b) in sorted(got.items()):
        role = next((p.role for p in progs if (p.cta, p.warp) == (c, w)), "no program")
        for lane in range(32):
            ta, tb = text(a[lane], ci), text(b[lane], pi)
            if lane:
                ta, tb = _arrivals(ta), _arrivals(tb)
            if lane == 0 or ta != tb:
                parts.append((f"cta {c} warp {w} ({role}) lane {lane}", ta, tb))
        ca, cb = _cp_async_arrivals(a, ci, text), _cp_async_arrivals(b, pi, text)
        if ca != cb:
            parts.append((f"cta {c} warp {w} ({role}): cp.async.mbarrier.arrive per "
                          "barrier, all lanes", ca, cb))
    return RoleDiff(tuple(parts))


#: what a lane other than 0 is not compared on: pipeproof runs a warp's waits, fences,
#: cp.async copies (with their groups and their ``cp.async.mbarrier.arrive``s, counted
#: over the warp instead: ``_cp_async_arrivals``) and bulk stores with their bulk groups
#: in lane 0 and orders the other lanes after them with ``bar.warp.sync``
#: (``compare_roles``: single-thread steps in lane 0); the DSL's threads each wait,
#: fence and copy their own part, and a ``cute.copy`` of a TMA store runs in every lane
#: of the warp that calls it (the same store once per lane)
_LANE0_ONLY = ("mbarrier.try_wait", "mbarrier.test_wait", "fence.", "cp.async.ca",
               "cp.async.cg", "cp.async.commit_group", "cp.async.wait_group",
               "cp.async.wait_all", "cp.async.arrive", "cp.async.bulk.bulk_group",
               "cp.async.bulk.commit_group", "cp.async.bulk.read", "cp.async.bulk.wait",
               "ld.acquire", "st.release")


def _arrivals(ops: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(o for o in ops if not o.startswith(_LANE0_ONLY))


def _cp_async_arrivals(lanes, inits, text) -> tuple[str, ...]:
    """How many ``cp.async.mbarrier.arrive`` the warp's lanes issue on each barrier (the
    DSL's threads one each, pipeproof's lane 0 as many)."""
    from collections import Counter

    n: Counter = Counter()
    for seq in lanes:
        for i in seq:
            if i.op.op.startswith("cp.async.arrive"):
                n[text([i], inits)[0]] += 1
    return tuple(f"{k} x{v}" for k, v in sorted(n.items()))
