"""The explicit-state engine: exhaustive breadth-first search with state hashing.

Breadth-first order makes the first violation found a shortest counterexample (fewest
steps, counting every warp step and every completion of asynchronous hardware).  A
state with no enabled step in which some warp has not exited is a deadlock.  When the
whole reachable state space has been explored without a violation the verdict is
PROVEN for this configuration; when a state or time limit stops the search first, the
verdict is UNKNOWN with the depth reached -- never SAFE by default.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from typing import Any, Callable, Optional

from ..model.system import System
from .concrete import ConcreteRunner
from .errors import SetupTimeout
from .graphs import fair_cycle, starving_component
from .lasso import poll_pcs, report_lasso
from .native.porwalk import closure_factory
from .por import stubborn_sets
from .properties import DEADLOCK_MSG, PRIORITY
from .shorten import SHORTEN_TIMEOUT, shorten
from .statespace import Explorer
from .verdict import PROVEN, UNKNOWN, VIOLATED, Stats, Verdict, state_limit_reason

#: seconds the search for a shorter counterexample than the reduced one may take
CONFIRM_TIMEOUT = 20.0

#: ``por=None``: stubborn sets for one CTA from this many warps on (see check_explicit)
POR_AUTO_WARPS = 10


def check_explicit(system: System, max_states: int = 2_000_000, timeout: float = 600.0,
                   progress: Optional[Callable[[int, int, float], None]] = None,
                   reduce: bool = True, por: Optional[bool] = None,
                   confirm_timeout: float = CONFIRM_TIMEOUT,
                   on_found: Optional[Callable[[Verdict], None]] = None,
                   cpu_seconds: Optional[float] = None,
                   cta_symmetry: Optional[bool] = None) -> Verdict:
    """Exhaustive breadth-first search.

    The reported violation is a shortest one (fewest steps); among violations of equal
    length the property that comes first in the catalogue (``model.properties.Prop``)
    is reported, so the answer does not depend on exploration order.

    ``reduce`` enables symmetry reduction (identical warps of a CTA are interchangeable,
    which preserves path lengths exactly) and explores a step alone when nothing any
    other warp ever does can interfere with it (``checker/por/``).  The second
    reduction preserves every verdict but may lengthen counterexamples, so when it finds
    a violation of length D the engine confirms the shortest one with a search without
    it, bounded to depth D, for at most ``confirm_timeout`` seconds (if that search
    exceeds its limits, the reduced counterexample is reported -- replayed and valid, but
    perhaps not the shortest -- with ``stats.extra["shortest"] = False``; the text
    output says so).  The confirmation can cost far more than the search: p9-bug's
    55-step counterexample takes 56 reduced states, the 51-step one 2.1 million.  ``reduce=False`` explores the
    full interleaving graph (the reference for differential tests).  ``por`` adds the
    full stubborn-set computation (fewer states, each costlier to expand); ``None``
    (``auto``) turns it on where it pays: clusters of more than one CTA, and CTAs of at
    least ``POR_AUTO_WARPS`` warps.  Measured (bench/results/explicit.md): it cuts the
    2x2-cluster and 2-CTA kernels and the 12-warp FMHA from millions of states to
    thousands, while on small CTAs it can cost more time than it saves (p7-fixed, 8
    warps: 1.6 s without, 8.6 s with).

    ``on_found``: called with the reduced counterexample (shortened) before the search
    that confirms it is shortest starts (``stats.extra["confirming"]``: that search's
    budget in seconds), so that a caller can show it at once; the confirming search then
    reports to ``progress`` with ``confirm=D`` (the length it confirms).  The returned
    verdict is that counterexample again where the search finds none shorter and none of
    the same length with a property first in the catalogue.  ``confirm_timeout=0``
    skips the confirmation (``stats.extra["confirm_skipped"]``).  ``cpu_seconds``: a
    bound on this process's CPU time for both searches (the default engine's quick
    stage, ``portfolio.quick_search``: on a loaded machine wall-clock seconds say little
    about the work done).  ``cta_symmetry`` (default: ``reduce``) also keeps one state
    per class of states equal up to renaming identical CTAs of the cluster
    (``checker/cta_symmetry.py``; kernels whose warps all end), which keeps run lengths
    too."""
    t0 = time.perf_counter()
    if cta_symmetry is None:
        cta_symmetry = reduce
    cpu_end = None if cpu_seconds is None else time.process_time() + cpu_seconds
    if por is None:
        por = por_auto(system)
    try:
        ex = Explorer(system, symmetry=reduce, cta_symmetry=cta_symmetry,
                      reduction=stubborn_sets(full=por, deadline=t0 + timeout,
                                              native=closure_factory() if por else None)
                      if reduce else None)
    except SetupTimeout as e:
        st = Stats(engine="explicit")
        st.seconds = time.perf_counter() - t0
        return Verdict(UNKNOWN, reason=f"timeout after {timeout:.0f} s while preparing {e} "
                       f"({sum(len(a.program.code) for a in system.agents):,} instructions)",
                       stats=st, depth=0)
    if ex.cyclic and ex.groups:
        # the starvation search follows each warp along cycles: no permuted warps
        ex = Explorer(system, symmetry=False)
    v = _bfs(ex, max_states, timeout, progress, None, t0, cpu_end)
    red = ex.reducer
    if red is not None and red.native is not None:
        # seeds the native stubborn-set closure answered, and those left to Python
        v.stats.extra["por_native"] = {"seeds": red.native_calls,
                                       "fallbacks": red.native_fallbacks}
    if v.status == VIOLATED and ex.reducer is not None and v.prop != "starvation":
        # first drop the steps the violation does not need (cheap; often already the
        # shortest), then confirm: search the unreduced graph to that depth
        v = drop_needless_steps(system, v)
        if confirm_timeout <= 0:
            return unconfirmed(v, t0)
        budget = min(max(timeout - (time.perf_counter() - t0), 1.0), confirm_timeout)
        if on_found is not None:
            # a copy: the verdict returned below may be this one, with other statistics
            v.stats.seconds = time.perf_counter() - t0
            on_found(replace(v, stats=replace(v.stats, extra=dict(
                v.stats.extra, confirming=round(budget, 1)))))
        exact = Explorer(system, symmetry=reduce, cta_symmetry=cta_symmetry)
        confirm_progress = (None if progress is None else
                            lambda n, d, t, _p=progress, _D=v.depth: _p(n, d, t, confirm=_D))
        w = _bfs(exact, max_states, budget, confirm_progress, v.depth, time.perf_counter(),
                 cpu_end)
        return confirmed(v, w, t0)
    return v


def por_auto(system: System) -> bool:
    """``--por auto``: stubborn sets where they pay (``check_explicit``): clusters of
    more than one CTA, and CTAs of at least ``POR_AUTO_WARPS`` warps."""
    return system.info.num_ctas > 1 or len(system.agents) >= POR_AUTO_WARPS


def drop_needless_steps(system: System, v: Verdict) -> Verdict:
    """A counterexample found under a reduction, with the steps the violation does not
    need dropped (cheap; often already the shortest); ``v`` itself when none can go."""
    if v.trace is None or v.prop is None:
        return v
    s = shorten(system, v.trace.steps, v.prop, time.perf_counter() + SHORTEN_TIMEOUT)
    if s is None:
        return v
    s.stats = v.stats
    s.stats.extra["reduced_length"] = v.depth
    s.reason = s.reason or v.reason
    return s


def unconfirmed(v: Verdict, t0: float) -> Verdict:
    """The reduced counterexample, reported without the confirming search (skipped)."""
    v.stats.extra["shortest"] = False
    v.stats.extra["confirm_skipped"] = True
    v.stats.seconds = time.perf_counter() - t0
    return v


def confirmed(v: Verdict, w: Verdict, t0: float) -> Verdict:
    """The reduced search's counterexample ``v`` after the unreduced search ``w``
    bounded to its length: a shorter (or catalogue-first) one found replaces it;
    otherwise ``v`` is a shortest one if ``w`` found it again or finished, and says
    what the confirmation cost."""
    if w.status == VIOLATED and (w.depth, w.prop) != (v.depth, v.prop):
        w.stats.extra["reduced_states"] = v.stats.states
        w.stats.states += v.stats.states
        w.stats.seconds = time.perf_counter() - t0
        return w
    if w.status == VIOLATED:
        # no shorter run violates, and none of this length violates a property first in
        # the catalogue: the counterexample already found (and perhaps shown) is shortest
        v.stats.extra["shortest"] = True
        v.stats.extra["reduced_states"] = v.stats.states
        v.stats.states += w.stats.states
    else:
        v.stats.extra["shortest"] = w.status == PROVEN
        v.stats.extra["confirm_states"] = w.stats.states
        v.stats.extra["confirm_stopped"] = w.reason
    v.stats.extra["confirm_seconds"] = round(w.stats.seconds, 2)
    v.stats.seconds = time.perf_counter() - t0
    return v


def _bfs(ex: Explorer, max_states: int, timeout: float,
         progress: Optional[Callable[[int, int, float], None]],
         depth_limit: Optional[int], t0: float,
         cpu_end: Optional[float] = None) -> Verdict:
    """One breadth-first search; ``depth_limit`` bounds the length of runs explored;
    ``cpu_end``: a ``time.process_time()`` value past which it stops (UNKNOWN)."""
    init = ex.initial
    key = ex.orbit_key
    index: dict[tuple, int] = {key(init): 0}
    parent: list[tuple[int, Any]] = [(-1, None)]
    depth_of: list[int] = [0]
    queue: deque[tuple[tuple, int]] = deque([(init, 0)])
    states: list[tuple] = [init]
    succ_lists: Optional[list[list[tuple[int, Any]]]] = [] if ex.cyclic else None
    stats = Stats(engine="explicit")
    transitions = 0
    max_depth = 0
    next_report = time.perf_counter() + 1.0
    # candidate violations found in the layer being finished: (length, rank, steps, viol,
    # stuck state)
    found: list[tuple] = []
    found_len: Optional[int] = None

    def path_to(i: int) -> list:
        steps = []
        while i > 0:
            p, step = parent[i]
            steps.append(step)
            i = p
        steps.reverse()
        return steps

    def finish(v: Verdict) -> Verdict:
        stats.states = len(parent)
        stats.transitions = transitions
        stats.depth = max_depth
        stats.seconds = time.perf_counter() - t0
        stats.extra["components"] = len(ex.packer.table)
        stats.extra["symmetric_groups"] = [len(g) for g in ex.groups]
        if ex.cta_perms:
            stats.extra["cta_automorphisms"] = len(ex.cta_perms) + 1
        v.stats = stats
        return v

    def bounded_note(d: int) -> str:
        """What the unfinished search does guarantee.  Breadth-first: every state of
        depth < d was expanded, so every step from them was checked -- no violation in
        runs of up to d steps, no deadlock within d - 1 -- provided no reduction that
        can lengthen runs was used (symmetry keeps lengths; partial-order and safe-step
        reductions do not)."""
        if ex.reducer is not None or d < 2:
            return ""
        return (f"; no violation or deadlock in any run of up to {d - 1} steps (every one "
                "explored; starvation not checked)")

    def report() -> Verdict:
        length, _rank, steps, viol, stuck = min(found, key=lambda f: (f[0], f[1]))
        if viol[0] == "deadlock":
            trace = ex.replay(steps, None, stuck_state=stuck)
            trace.violated, trace.detail = viol
        else:
            trace = ex.replay(steps, viol)
        return finish(Verdict(VIOLATED, viol[0], trace.detail or viol[1], trace,
                              depth=len(steps)))

    while queue:
        state, si = queue.popleft()
        d = depth_of[si]
        if found_len is not None and d >= found_len:
            break  # every run shorter than the violation found has been explored
        any_succ = False
        out_edges: list[tuple[int, Any]] = []
        expand = depth_limit is None or d < depth_limit
        for step, nxt, viol in (ex.successors(state) if expand else ()):
            any_succ = True
            transitions += 1
            if viol is not None:
                if found_len is None or d + 1 <= found_len:
                    found.append((d + 1, PRIORITY.get(viol[0], 99), path_to(si) + [step],
                                  viol, None))
                    found_len = d + 1
                continue
            k = key(nxt)
            ni = index.get(k)
            if ni is None:
                ni = index[k] = len(parent)
                parent.append((si, step))
                depth_of.append(d + 1)
                states.append(nxt)
                if d + 1 > max_depth:
                    max_depth = d + 1
                queue.append((nxt, ni))
            if succ_lists is not None:
                out_edges.append((ni, ("a", step[1]) if step[0] == "a" else ("e", step[1])))
        if succ_lists is not None:
            succ_lists.append(out_edges)
        if expand and not any_succ and not ex.all_done(state):
            found.append((d, PRIORITY.get("deadlock", 99), path_to(si),
                          ("deadlock", DEADLOCK_MSG), state))
            found_len = d if found_len is None else min(found_len, d)
        if len(parent) > max_states and found_len is None:
            return finish(Verdict(UNKNOWN, reason=state_limit_reason(max_states, max_depth,
                                                                 bounded_note(d)),
                                  depth=max_depth))
        if cpu_end is not None and found_len is None and time.process_time() > cpu_end:
            return finish(Verdict(UNKNOWN, reason=f"CPU budget spent with {len(parent)} "
                                  f"states explored to depth {max_depth}", depth=max_depth))
        now = time.perf_counter()
        if now - t0 > timeout and found_len is None:
            return finish(Verdict(UNKNOWN, reason=f"timeout after {timeout:.0f} s with "
                                  f"{len(parent)} states explored to depth {max_depth}"
                                  f"{bounded_note(d)}", depth=max_depth))
        if progress is not None and now >= next_report:
            progress(len(parent), max_depth, now - t0)
            next_report = now + 1.0
    if found:
        return report()
    if depth_limit is not None:
        return finish(Verdict(PROVEN, depth=max_depth, bounded=True))
    if succ_lists is not None:
        lasso = _find_starvation(ex, states, succ_lists)
        if lasso is not None:
            entry, cycle_steps = lasso
            v = report_graph_lasso(ex, path_to(entry), cycle_steps)
            stats.extra.update(v.stats.extra)
            return finish(v)
    return finish(Verdict(PROVEN, depth=max_depth, bounded=False))



def report_graph_lasso(ex: Explorer, steps: list, cycle_steps: list) -> Verdict:
    """The starvation verdict of a cycle of the explored graph (``cycle_steps``, from the
    state ``steps`` reach), checked on the concrete model and worded as BMC's lassos are
    (``lasso.report_lasso``).  Where the graph's states forget dead locals
    (``Explorer.forget``) the cycle returns to its entry only up to them; once round,
    the concrete run is at a state it then returns to exactly (each local the cycle
    writes gets the same value every time round, from the same live state; the others
    keep theirs), so the lasso starts there."""
    if ex.dead:
        steps = steps + cycle_steps
    return report_lasso(ex.sys, ConcreteRunner(ex.sys), steps + cycle_steps, len(steps))


def _find_starvation(ex: Explorer, states: list[tuple],
                     succ: list[list[tuple[int, Any]]]) -> Optional[tuple]:
    """A fair cycle in which some warp that has not exited never gets past its wait --
    it does not move, or only polls (the definition the BMC engine uses,
    ``checker/liveness.py``): asynchronous hardware is strongly fair
    (an operation enabled somewhere in the cycle completes in it) and warps are weakly
    fair (a warp enabled in every state of the cycle moves in it), so the starving warp
    really waits.  For each warp ``w``: the strongly connected components of the graph
    without ``w``'s moves, refined the Emerson-Lei way (drop the states where a strongly
    fair actor is enabled but never acts inside; drop a component where a warp is
    enabled everywhere but never moves).  Returns (entry state, steps of a fair cycle
    through it) or None; ``lasso.report_lasso`` names the starving warps.  ``succ[v]`` lists (target, actor) pairs, actor
    = ("a", warp) or ("e", item); the explorer must not permute warps (no symmetry)."""
    nag = len(ex.sys.agents)
    enabled = [{a for _t, a in succ[v]} for v in range(len(succ))]
    best = starving_component(nag, lambda v, w: ex.pc(states[v], w),
                              [set(poll_pcs(ex.sys, a)) for a in range(nag)], succ, enabled)
    if best is None:
        return None
    entry = best[0]

    def step_of(u: int, t: int, actor: tuple) -> tuple:
        for step, nxt, viol in ex.successors(states[u]):
            if viol is None and nxt == states[t] and _actor(step) == actor:
                return step
        raise AssertionError("a graph edge the explorer does not take")  # pragma: no cover

    return entry, [step_of(*e) for e in fair_cycle(succ, enabled, best, nag)]


def _actor(step: tuple) -> tuple:
    return ("a", step[1]) if step[0] == "a" else ("e", step[1])

