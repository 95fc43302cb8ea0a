"""The explicit engine's state-space reductions preserve verdicts and shortest
counterexamples.

``check_explicit(system, reduce=True)`` (symmetry over identical warps, partial-order
reduction, ...) must give the same verdict, the same property and a counterexample of
the same length as ``reduce=False`` (the full interleaving graph), on random valid
configurations and random single mutations of every class (tests/generators.py).  The
reduced search may explore fewer states, never more.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings

from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.statespace import Explorer
from pipeproof.model.errors import ConfigError

import generators as G
from helpers import NO_DEADLINE

SETTINGS = dict(deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _length(v: Any) -> Optional[int]:
    return len(v.trace) if v.trace is not None else None


def shortest_violations(system: Any) -> Optional[tuple[int, frozenset]]:
    """Oracle: the length of the shortest counterexamples of the full interleaving graph
    and every property some counterexample of that length violates (a violating step
    from a state at depth d has length d + 1; a deadlocked state at depth d, length d).
    None when no step violates and no state deadlocks."""
    ex = Explorer(system, symmetry=False)
    frontier = [ex.initial]
    seen = {ex.initial}
    pending: Optional[tuple[int, set]] = None   # violations of length depth + 1
    depth = 0
    while frontier:
        props: set = set()
        nxt: list = []
        violating: set = set()
        for s in frontier:
            succ = list(ex.successors(s))
            if not succ and not ex.all_done(s):
                props.add("deadlock")
            for _step, n, viol in succ:
                if viol is not None:
                    violating.add(viol[0])
                elif n not in seen:
                    seen.add(n)
                    nxt.append(n)
        if pending is not None:
            return depth, frozenset(pending[1] | props)
        if props:
            return depth, frozenset(props)
        if violating:
            pending = (depth + 1, violating)
        frontier = nxt
        depth += 1
        assert len(seen) < 400_000
    if pending is not None:
        return pending[0], frozenset(pending[1])
    return None


def _compare(source: str, what: str) -> None:
    try:
        system_full = G.build_system(source)
    except ConfigError:
        return  # input errors never reach the engine
    full = check_explicit(system_full, max_states=300_000, timeout=NO_DEADLINE, reduce=False)
    red = check_explicit(G.build_system(source), max_states=300_000, timeout=NO_DEADLINE, reduce=True)
    msg = (f"{what}\n  reduce=False: {full.status} {full.prop} len={_length(full)} "
           f"states={full.stats.states}\n  reduce=True:  {red.status} {red.prop} "
           f"len={_length(red)} states={red.stats.states}\n--- source ---\n{source}")
    assert full.status != "UNKNOWN", msg
    assert red.status == full.status, msg
    if (red.prop, _length(red)) != (full.prop, _length(full)) and full.status == "VIOLATED" \
            and "starvation" not in (full.prop, red.prop):
        # both must be shortest counterexamples of the full graph; when several
        # properties tie at that length, the search order may pick either
        oracle = shortest_violations(G.build_system(source))
        msg += f"\n  oracle (full graph): shortest length and properties {oracle}"
        assert oracle is not None, msg
        assert (_length(full), _length(red)) == (oracle[0], oracle[0]), msg
        assert full.prop in oracle[1] and red.prop in oracle[1], msg
    else:
        assert red.prop == full.prop, msg
        assert _length(red) == _length(full), msg
    if full.status in ("SAFE", "PROVEN"):
        assert red.stats.states <= full.stats.states, msg


@settings(max_examples=25, **SETTINGS)
@given(G.programs())
def test_reduction_preserves_the_verdict_of_valid_programs(prog: G.Program) -> None:
    _compare(prog.source, prog.describe())


@settings(max_examples=35, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_reduction_preserves_counterexamples_of_mutants(prog: G.Program) -> None:
    _compare(prog.source, prog.describe())


#: configurations that stress the reductions: identical warps (symmetry), clusters,
#: asynchronous completions in flight, tokens
STRESS = [
    (G.Config("PipelineAsync", stages=2, k_tiles=3, pw=2, cw=1), None),
    (G.Config("PipelineAsync", stages=2, k_tiles=3, pw=1, cw=2, csig="elect"),
     "consumer_count_minus"),
    (G.Config("PipelineAsync", stages=1, k_tiles=2, pw=2, cw=1), "missing_release"),
    (G.Config("PipelineCpAsync", stages=2, k_tiles=2, pw=2), "missing_wait"),
    (G.Config("PipelineTmaAsync", stages=2, k_tiles=2, cw=2, try_wait=True), None),
    (G.Config("PipelineTmaAsync", stages=1, k_tiles=1, cluster=(2, 1)), "no_tail"),
    (G.Config("PipelineTmaAsync", stages=1, k_tiles=2, cluster=(1, 2)), "tx_minus"),
    (G.Config("PipelineTmaUmma", stages=1, k_tiles=2, cluster=(2, 1), v=2), None),
    (G.Config("PipelineTmaUmma", stages=2, k_tiles=2), "no_tail"),
    (G.Config("PipelineUmmaAsync", stages=1, k_tiles=2, cluster=(2, 1), v=2),
     "consumer_count_plus"),
    (G.Config("PipelineClcFetchAsync", stages=1, k_tiles=1, cluster=(2, 1)), None),
    (G.Config("PipelineTmaStore", stages=1, k_tiles=3, cw=2), "missing_first_sync"),
    (G.Config("NamedBarrier", k_tiles=2, pw=2, cw=2), "named_double_arrival"),
    # two warps arriving at one named barrier with different thread counts: the misuse
    # shows only when the larger count arrives first (the arrivals do not commute)
    (G.Config("NamedBarrier", stages=1, k_tiles=1), "named_differing_counts"),
    (G.Config("PipelineOrder", stages=1, k_tiles=2, length=3), "double_arrive"),
]


@pytest.mark.parametrize("cfg,mutation", STRESS,
                         ids=[f"{c.cls}-{m or 'ok'}" for c, m in STRESS])
def test_reduction_on_stress_configurations(cfg: G.Config, mutation: Optional[str]) -> None:
    _compare(G.render(cfg, mutation), f"{cfg.describe()} mutation={mutation}")


@settings(max_examples=15, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_counterexamples_are_shortest(prog: G.Program) -> None:
    """The engine's counterexample (without reductions) has the length of the shortest
    counterexample of the full graph, and its property is one violated at that length
    (a deadlocked state at depth d counts d steps; a violating step from depth d, d + 1)."""
    v = check_explicit(G.build_system(prog.source), max_states=300_000, timeout=NO_DEADLINE,
                       reduce=False)
    if v.status != "VIOLATED" or v.prop == "starvation":
        return
    oracle = shortest_violations(G.build_system(prog.source))
    assert oracle is not None
    assert (len(v.trace), v.prop in oracle[1]) == (oracle[0], True), (
        f"{prog.describe()}\n  engine: {v.prop} in {len(v.trace)} steps; "
        f"oracle: {oracle}\n{prog.source}")
