"""Chained BMC steps (checker/chain.py): the normal form loses no run.

The chain search's PROVEN rests on two claims: steps the commutation queries call
independent really commute in every reachable state, and every run has a normal form
of at most as many levels as steps.  Both are checked here against the concrete model
and the explicit engine, on the bundled textbook examples and on generated programs and
mutants (tests/generators.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings

from pipeproof.api import compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.concrete import ConcreteRunner
from pipeproof.checker.chain import ChainUnrolling
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.symbolic import Encoding, sample_ranges
from pipeproof.checker.unrolling import make_solver
from pipeproof.model.errors import ConfigError
from pipeproof.model.system import DONE, System

import generators as G
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = dict(deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DEPTH = 20


def _unrolling(system: System) -> ChainUnrolling:
    enc = Encoding(system, {}, {}, sample_ranges(system))
    return ChainUnrolling(enc, make_solver(), budget=60.0)


def _independence_holds(system: System, max_states: int = 3000) -> int:
    """Every pair of good steps the chain calls independent commutes in every reachable
    state (breadth-first, up to ``max_states``): same state both ways, or one order runs
    into a violation.  Returns the number of pairs checked."""
    u = _unrolling(system)
    runner = ConcreteRunner(system)
    actor_of_step = {}
    for i, act in enumerate(u.actors):
        actor_of_step[act if isinstance(act, tuple) else ("a", act)] = i
    pcs = [ag.pc for ag in system.agents]

    def actor(step: tuple) -> int:
        return step[1] if step[0] == "a" else actor_of_step[step[1]]

    def pc(state: tuple, a: int) -> Any:
        return state[pcs[a]] if a < len(pcs) else None

    seen = {runner.initial}
    todo = [runner.initial]
    checked = 0
    while todo and len(seen) < max_states:
        st = todo.pop()
        succ = [(s, n) for s, n, viol in runner.successors(st) if viol is None]
        for s, n in succ:
            if n not in seen:
                seen.add(n)
                todo.append(n)
        for (s1, n1), (s2, n2) in itertools.combinations(succ, 2):
            a, b = actor(s1), actor(s2)
            if a == b:
                continue
            p, q = pc(st, a), pc(st, b)
            key = (min(a, b), max(a, b))
            pair = (p, q) if a < b else (q, p)
            if b in u.dep[a] and pair in u.pcdep.get(key, set()):
                continue  # declared dependent: nothing to check
            # independent: whenever one order runs without a violation, so does the
            # other (or it runs into a violation) and both reach the same state
            r12 = runner.step(n1, s2)
            r21 = runner.step(n2, s1)
            for r, other in ((r12, r21), (r21, r12)):
                if r is not None and r[1] is None:
                    assert other is not None, (s1, s2, st)
                    if other[1] is None:
                        assert r[0] == other[0], (s1, s2)
            checked += 1
    return checked


@pytest.mark.parametrize("name", ["pipeline_tma_async", "pipeline_async_umma",
                                  "pipeline_cp_async", "pipeline_tma_store"])
def test_declared_independence_commutes_on_textbook(name: str) -> None:
    system = System(compile_file(ROOT / "examples" / "textbook" / f"{name}.pipe"))
    assert _independence_holds(system) > 0


def test_independence_finds_the_commuting_consumers() -> None:
    """Four consumer warps of PipelineTmaAsync arrive on the same empty barriers (their
    footprints overlap) yet commute everywhere but at the named barrier of the set-up and
    at exit: the semantic queries must see that, or chains gain nothing."""
    system = System(compile_file(ROOT / "examples" / "textbook" / "pipeline_tma_async.pipe"))
    u = _unrolling(system)
    consumers = [ag.index for ag in system.agents if ag.role == "mma"]
    for a, b in itertools.combinations(consumers, 2):
        pairs = u.pcdep[(a, b)]
        code = system.agents[a].program.code
        kinds = {type(code[p]).__name__ for p, _ in pairs if p is not None}
        assert kinds <= {"NamedBarrierOp", "NamedWait", "Exit"}, kinds


def _compare(source: str, what: str) -> None:
    try:
        system = G.build_system(source)
    except ConfigError:
        return
    e = check_explicit(system, max_states=200_000, timeout=NO_DEADLINE, reduce=False)
    if e.status == "UNKNOWN":
        return
    # the chain search alone: no confirmation by single steps (its counterexample is
    # only shortened)
    c = check_bmc(G.build_system(source), depth=DEPTH, timeout=NO_DEADLINE, liveness=False,
                  steps="chain", confirm_timeout=0.0, certificate=False)
    msg = (f"{what}\n  explicit: {e.headline()} len={e.depth}\n  chain:    "
           f"{c.headline()} depth={c.depth} {c.reason or ''}\n--- source ---\n{source}")
    safety_bug = e.status == "VIOLATED" and e.prop != "starvation"
    if c.status == "PROVEN":
        assert e.status == "PROVEN", msg
    elif c.status == "VIOLATED":
        assert e.status == "VIOLATED", msg
        assert len(c.trace) >= len(e.trace), msg
    elif c.status in ("SAFE", "UNKNOWN"):
        # c.depth levels cover every run of up to c.depth steps
        assert not (safety_bug and len(e.trace) <= c.depth), msg
    if safety_bug and len(e.trace) <= DEPTH:
        assert c.status in ("VIOLATED", "UNKNOWN"), msg


@settings(max_examples=5, **SETTINGS)
@given(G.programs())
def test_chain_agrees_on_valid_programs(prog: G.Program) -> None:
    _compare(prog.source, prog.describe())


@settings(max_examples=12, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_chain_agrees_on_mutants(prog: G.Program) -> None:
    _compare(prog.source, prog.describe())


@settings(max_examples=6, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_declared_independence_commutes_on_mutants(prog: G.Program) -> None:
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    _independence_holds(system, max_states=1500)


def test_chain_proves_what_single_steps_cannot_in_time() -> None:
    """The point of chains: pipeline_tma_async is PROVEN by BMC within a minute; single
    steps reach depth ~28 in 30 s and no verdict, as its longest run has 59 steps (the
    explicit engine's PROVEN depth), while the chains' normal form ends by level 23."""
    system = System(compile_file(ROOT / "examples" / "textbook" / "pipeline_tma_async.pipe"))
    v = check_bmc(system, depth=60, timeout=NO_DEADLINE)
    assert v.status == "PROVEN", v.reason
    assert v.depth < 30  # levels, not steps
    assert v.stats.extra["bmc_steps"] == "chain"


def test_chain_counterexample_is_confirmed_shortest() -> None:
    """x2-bug: the chain finds the read-before-full; the single-step confirmation makes it
    the explicit engine's shortest counterexample (same property, same length)."""
    path = ROOT / "examples" / "bugs" / "x2-bug.pipe"
    e = check_explicit(System(compile_file(path)), reduce=False)
    v = check_bmc(System(compile_file(path)), depth=60, timeout=NO_DEADLINE, confirm_timeout=NO_DEADLINE)
    assert v.status == e.status == "VIOLATED"
    assert v.prop == e.prop
    assert len(v.trace) == len(e.trace)
    assert v.stats.extra.get("shortest") is True


def test_unconfirmed_chain_counterexample_says_so() -> None:
    """p4-bug: a 44-step deadlock the chain search finds in seconds and single steps do
    not reach in minutes.  With a 3-second confirmation the (replayed, shortened)
    counterexample is reported, marked as perhaps not the shortest.  (Without the
    certificate: with it, the shortest one comes from the certified states, see
    tests/test_certificate.py.)"""
    from pipeproof.api import check_file

    path = ROOT / "examples" / "bugs" / "p4-bug.pipe"
    e = check_explicit(System(compile_file(path)), reduce=False)
    r = check_file(path, engine="bmc", timeout=NO_DEADLINE, confirm_timeout=3, bmc_certificate=False)
    v = r.verdict
    assert v.status == "VIOLATED" and v.prop == e.prop == "deadlock"
    assert v.stats.extra["shortest"] is False
    assert len(v.trace) >= len(e.trace)
    text = r.render_text(fmt="steps")
    assert "found with chained steps; a shorter counterexample may exist" in text


def test_cli_bmc_steps(capsys: Any) -> None:
    import json

    from pipeproof.cli import main

    x1 = str(ROOT / "examples" / "bugs" / "x1-bug.pipe")
    rc = main(["check", x1, "--engine", "bmc", "--bmc-steps", "single", "--depth", "10",
               "--quiet", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["stats"]["bmc_steps"] == "single"
    assert out["property"] == "named-barrier-misuse"
    rc = main(["check", str(ROOT / "examples" / "textbook" / "pipeline_async.pipe"),
               "--engine", "bmc", "--depth", "3", "--quiet", "--format", "steps",
               "--bmc-certificate", "off"])
    text = capsys.readouterr().out
    assert rc == 0 and "SAFE (bounded to depth 3)" in text
    assert "3 levels of chained steps" in text and "any run of up to 3 steps" in text
    assert "engine bmc (chained steps): 3 levels" in text


@pytest.mark.parametrize("steps", ["chain", "single"])
def test_smt2_export_in_both_step_modes(tmp_path: Path, steps: str) -> None:
    """The exported query is the unrolling that was searched: sat for a bug within the
    depth, unsat for a fixed kernel, whichever steps a level takes."""
    from pipeproof.api import check_file

    for name, depth, want in (("bugs/x1-bug.pipe", 6, z3.sat),
                              ("textbook/pipeline_async.pipe", 8, z3.unsat)):
        out = tmp_path / f"{steps}-{depth}.smt2"
        check_file(ROOT / "examples" / name, engine="bmc", depth=depth, timeout=NO_DEADLINE,
                   smt2=str(out), bmc_steps=steps, bmc_certificate=False)
        s = z3.Solver()
        s.from_file(str(out))
        assert s.check() == want, (name, steps)


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_declared_independence_commutes_on_many_mutants(prog: G.Program) -> None:
    """The larger run of the commutation check (pytest -m slow)."""
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    _independence_holds(system, max_states=5000)


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_chain_agrees_on_many_mutants(prog: G.Program) -> None:
    """The larger run of the chain-vs-explicit comparison (pytest -m slow)."""
    _compare(prog.source, prog.describe())


def test_forced_chains_on_a_looping_kernel_still_find_the_lasso() -> None:
    """``steps="chain"`` on a kernel whose consumer loops for ever: the chain levels
    give SAFE to their depth, and the starvation lasso is then sought over single steps
    on an unrolling of its own (the same lasso the default finds)."""
    path = ROOT / "examples" / "liveness" / "persistent_consumer_stops_releasing.pipe"
    chained = check_bmc(System(compile_file(path)), depth=24, timeout=NO_DEADLINE, steps="chain")
    default = check_bmc(System(compile_file(path)), depth=24, timeout=NO_DEADLINE)
    assert default.stats.extra["bmc_steps"] == "single"
    assert chained.stats.extra["bmc_steps"] == "chain"
    assert chained.status == default.status == "VIOLATED"
    assert chained.prop == default.prop == "starvation"
    assert chained.trace.loop_start is not None
    assert len(chained.trace) == len(default.trace)


def test_a_level_past_the_deadline_is_not_built() -> None:
    """Building a chain level checks the time slot by slot (a level of a large encoding
    takes tens of seconds: pipeline_tma_async with k_tiles=1..64 overran a 60 s timeout
    by 47 s).  Past the deadline it raises ``Timeout`` before anything reaches the
    solver, so the unrolling stays as it was and can be deepened later."""
    from pipeproof.checker.errors import Timeout

    system = System(compile_file(ROOT / "examples/textbook/pipeline_tma_async.pipe"))
    u = _unrolling(system)
    u.assert_step(0)
    before = (u.asserted_steps, len(u.states), len(u.sub), len(u.solver.assertions()))
    u.deadline = 0.0  # long past
    with pytest.raises(Timeout) as e:
        u.assert_step(1)
    assert e.value.depth == 2
    assert (u.asserted_steps, len(u.states), len(u.sub),
            len(u.solver.assertions())) == before
    u.deadline = None
    u.assert_step(1)
    assert u.asserted_steps == 2 and len(u.states) == 3
