"""Dropping needless steps from a counterexample (``checker/shorten.py``).

Differential: ``Explorer.take`` (one step from a state, the replay's way) against the
step as ``Explorer._all_successors`` yields it, on every state of random runs of
generated kernels and mutants, for every step of every unit, enabled or not; and the
shortened counterexample against the one it came from (a real run of the model, ending
in the same property, no longer), with the faster replay and without it.
"""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings

import generators as G
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.shorten import counterexample_end, shorten
from pipeproof.checker.statespace import Explorer
from pipeproof.model.errors import ConfigError
from pipeproof.model.system import DONE
from test_reduction_hypothesis import SETTINGS

EX = Path(__file__).resolve().parent.parent / "examples"


def _every_step(ex: Explorer, state: tuple) -> list[tuple]:
    """Every step any unit could name in ``state``, enabled or not: each warp's choices
    (and one past them), the environment items in flight."""
    out = []
    for a in range(len(ex.sys.agents)):
        pc = ex.pc(state, a)
        n = 1 if pc == DONE else ex.sys.agent_choices(a, pc)
        out.extend(("a", a, c) for c in range(n + 1))
    out.extend(("e", it) for it in ex._env_items(state))
    return out


def _take_agrees(source: str, seed: int, length: int = 60) -> None:
    ex = Explorer(G.build_system(source), symmetry=False)
    rng = random.Random(seed)
    state = ex.initial
    for _ in range(length):
        succ = {st: (n, v) for st, n, v in ex._all_successors(state)}
        for step in _every_step(ex, state):
            assert ex.take(state, step) == succ.get(step), step
        if not succ:
            return
        step = rng.choice(sorted(succ, key=repr))
        state, viol = succ[step]
        if viol is not None:
            return


@settings(max_examples=30, **SETTINGS)
@given(G.programs())
def test_take_is_the_step_all_successors_yields(prog: G.Program) -> None:
    _take_agrees(prog.source, seed=len(prog.source))


@settings(max_examples=30, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_take_is_the_step_all_successors_yields_on_bugs(prog: G.Program) -> None:
    try:
        _take_agrees(prog.source, seed=len(prog.source))
    except ConfigError:
        return


def _slow_end(ex: Explorer, steps: list, prop: str):
    """``counterexample_end`` with each step looked up among all the successors of its
    state (the replay as it was before ``Explorer.take``)."""
    slow = Explorer(ex.sys, symmetry=False)
    slow.take = lambda state, step: next(
        ((n, v) for st, n, v in slow._all_successors(state) if st == step), None)
    return counterexample_end(slow, steps, prop)


@settings(max_examples=25, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_shortened_runs_are_runs_and_the_same_as_before(prog: G.Program) -> None:
    try:
        system = G.build_system(prog.source)
        v = check_explicit(system, max_states=20_000, confirm_timeout=0)
    except ConfigError:
        return
    if v.status != "VIOLATED" or v.prop == "starvation":
        return
    steps = v.trace.steps
    s = shorten(system, steps, v.prop)
    ex = Explorer(system, symmetry=False)
    if s is not None:
        assert s.prop == v.prop and len(s.trace) < len(steps)
        assert _slow_end(ex, s.trace.steps, v.prop) is not None
    # the replay with ``take`` decides every candidate as the old one did
    for i in range(len(steps)):
        cand = steps[:i] + steps[i + 1:]
        assert (counterexample_end(ex, cand, v.prop) is None) == \
            (_slow_end(ex, cand, v.prop) is None)


def test_p9_reduced_counterexample_shortens_to_the_shortest(monkeypatch) -> None:
    # no deadline here: what is dropped does not depend on the machine's speed
    from pipeproof.checker import explicit

    monkeypatch.setattr(explicit, "drop_needless_steps", lambda system, v: v)
    system = G.build_system((EX / "bugs/p9-bug.pipe").read_text())
    v = check_explicit(system, confirm_timeout=0)
    assert v.status == "VIOLATED" and v.depth > 51  # the reduced search's run
    s = shorten(system, v.trace.steps, v.prop)
    assert s is not None and s.prop == v.prop and s.depth == 51  # the shortest


def _units_prefix(short: list, long: list) -> bool:
    """Is every warp's part of ``short`` a prefix of its part of ``long`` (and every
    asynchronous step of ``short`` one of ``long``'s)?"""
    for a in {s[1] for s in long if s[0] == "a"}:
        mine = [s for s in short if s[:2] == ("a", a)]
        if mine != [s for s in long if s[:2] == ("a", a)][:len(mine)]:
            return False
    return all(s in long for s in short if s[0] == "e")


@settings(max_examples=25, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_dropping_tails_keeps_a_run_and_each_warps_prefix(prog: G.Program) -> None:
    """Random runs (long, many needless steps) of generated mutants: the tails phase
    drops only steps of warps that take no later step -- each warp keeps a prefix of its
    steps, so none runs at another pc -- and what is left is a run of the model ending
    in the same property (replayed the old way); the whole shortening too."""
    from _pytest.monkeypatch import MonkeyPatch

    from pipeproof.checker import shorten as sh, swarm

    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    with MonkeyPatch.context() as m:
        m.setattr(swarm, "drop_needless_steps", lambda system, v: v)  # the raw run
        v = swarm.check_swarm(system, timeout=60)
    if v.status != "VIOLATED":
        return
    run = v.trace.steps
    ex = Explorer(system, symmetry=False)
    at = [ex.initial]
    assert counterexample_end(ex, run, v.prop, states=at) is not None
    first = len(run) - 2 if v.prop != "deadlock" else len(run) - 1
    cur, _, got = sh._drop_tails(ex, list(run), at, v.prop, first, None)
    assert _units_prefix(cur, run)
    assert _slow_end(ex, cur, v.prop) is not None
    if got is None:
        assert cur == run
    s = shorten(system, run, v.prop)
    if s is not None:
        assert s.prop == v.prop and len(s.trace.steps) < len(run)
        assert _slow_end(ex, s.trace.steps, v.prop) is not None
