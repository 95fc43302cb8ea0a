"""The reduced certificate (checker/certificate.py ``certify_reduced``) and the z3 check
of its safe steps (checker/safesteps.py): a proof from a reduced enumeration, never a
PROVEN the exhaustive explicit search contradicts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.api import compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.certificate import certify_reduced, write_smt2
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.safesteps import SafeSteps, footprint_candidates
from pipeproof.checker.symbolic import Encoding, sample_ranges
from pipeproof.checker.statespace import symmetric_groups
from pipeproof.checker.unrolling import Unrolling, make_solver
from pipeproof.model.errors import ConfigError
from pipeproof.model.program import Wait
from pipeproof.model.system import System

import generators as G
from helpers import NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"


def _unrolling(system: System) -> tuple[Any, Unrolling]:
    sample = sample_ranges(system)
    enc = Encoding(system, sample=sample)
    return sample, Unrolling(enc, make_solver())


def _reduced(system: System) -> tuple[Any, str]:
    sample, u = _unrolling(system)
    return certify_reduced(u, time.perf_counter() + 300,
                           symmetric_groups(system))


def test_a_wait_is_not_a_safe_step() -> None:
    """A consumer's wait on a full barrier the producer arrives at is enabled by the
    producer: offered as a candidate, z3 refuses it; the footprint candidates pass."""
    system = System(compile_file(EX / "textbook/pipeline_async.pipe"))
    _, u = _unrolling(system)
    # the consumer's waits (warp 1).  The producer's producer_tail waits, its last steps,
    # are proven safe since a surplus arrive is a violation (arrival-overflow, issue 22
    # item 7): a good consumer arrive can no longer spoil them
    consumer = next(a for a, ag in enumerate(system.agents) if ag.role == "consumer")
    waits = {consumer: {pc for pc, ins in enumerate(system.code(consumer))
                        if isinstance(ins, Wait)}}
    assert any(waits.values())
    ss = SafeSteps(u, waits, time.perf_counter() + 120)
    assert ss.safe == {} and ss.stats["refused"] == sum(map(len, waits.values()))
    cand = footprint_candidates(system)
    ok = SafeSteps(u, cand, time.perf_counter() + 120)
    assert ok.stats["undecided"] == 0
    assert ok.safe and all(ok.safe[a] <= cand[a] for a in ok.safe)


def test_p9_fixed_is_proven_from_the_reduced_set() -> None:
    """p9-fixed's unreduced enumeration has 1,554,128 classes, too many for a
    certificate; the reduced one has the explicit engine's safe-step count (54,225), and
    the SMT-LIB file of its queries is unsat in z3."""
    system = System(compile_file(EX / "bugs/p9-fixed.pipe"))
    cert, why = _reduced(system)
    assert cert is not None and cert.problem_free, why
    assert cert.states == 54_225
    assert cert.stats["safe_steps"]["refused"] == 0


def test_reduced_certificate_smt2_is_unsat(tmp_path: Path) -> None:
    system = System(compile_file(EX / "textbook/pipeline_tma_async.pipe"))
    cert, why = _reduced(system)
    assert cert is not None, why
    path = tmp_path / "cert.smt2"
    write_smt2(cert, str(path))
    s = z3.SolverFor("QF_BV")
    s.from_file(str(path))
    assert s.check() == z3.unsat


@pytest.mark.parametrize("name", ["bugs/p2-bug.pipe", "bugs/p6-bug.pipe", "bugs/x2-bug.pipe"])
def test_a_buggy_kernel_gets_no_reduced_certificate(name: str) -> None:
    cert, why = _reduced(System(compile_file(EX / name)))
    assert cert is None and ("violating" in why or "deadlocks" in why), why


def test_bmc_engine_uses_the_reduced_certificate() -> None:
    """Where the unreduced enumeration does not finish, ``--engine bmc`` proves from the
    reduced set (here forced by a tiny cap on the unreduced enumeration)."""
    v = check_bmc(System(compile_file(EX / "textbook/pipeline_tma_async.pipe")), timeout=NO_DEADLINE,
                  max_states=200)
    assert v.status == "PROVEN", v.reason
    assert "reduced" in v.stats.extra["certificate"], v.stats.extra["certificate"]


@settings(max_examples=25, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(G.programs(), G.mutants(include_config_errors=False)))
def test_reduced_certificate_only_where_the_explicit_engine_proves(prog: G.Program) -> None:
    """Generated programs and mutants: a reduced certificate exists only where the
    unreduced explicit search finds no violation or deadlock, and its set is never
    larger than the reachable set up to interchangeable warps."""
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    if not all(ag.program for ag in system.agents):
        return
    e = check_explicit(system, max_states=200_000, timeout=NO_DEADLINE, reduce=False)
    if e.status == "UNKNOWN":
        return
    cert, why = _reduced(G.build_system(prog.source))
    msg = f"{prog.describe()}\n  explicit: {e.headline()}\n  reduced: {why}\n{prog.source}"
    if cert is not None:
        assert e.status == "PROVEN", msg
        assert cert.states <= e.stats.states, msg
    elif e.status == "PROVEN" and "loops for ever" not in why:
        # a correct kernel: only an unproven candidate or the budget can stop the proof
        assert "violating" not in why and "deadlocks" not in why, msg


def _reachable(runner: Any, cap: int) -> list[tuple]:
    seen = {runner.initial}
    todo = [runner.initial]
    while todo and len(seen) < cap:
        for _, nxt, viol in runner.successors(todo.pop()):
            if viol is None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    assert not todo, "example too large for this test"
    return list(seen)


def _broken_safe_point(system: System, safe: dict) -> Any:
    """The first reachable state (of the concrete model: ``ConcreteRunner``, the explicit
    engine's steps) where a warp at one of the points ``safe`` with an enabled step is
    not persistent, with the condition it breaks; None if there is none.  Conditions:
    every other actor's good step keeps the warp's good steps good and enables no other
    one of them (1); after a good step of the warp every other step is still enabled
    with the same outcome (2); two good steps commute (3)."""
    from pipeproof.checker.concrete import ConcreteRunner

    runner = ConcreteRunner(system)
    checked = 0
    for s in _reachable(runner, 60_000):
        succ = list(runner.successors(s))
        for a, pcs in safe.items():
            if s[system.agents[a].pc] not in pcs:
                continue
            mine = [x for x in succ if x[0][0] == "a" and x[0][1] == a]
            if not mine:
                continue
            for ustep, unxt, uviol in succ:
                if ustep[0] == "a" and ustep[1] == a:
                    continue
                checked += 1
                after_u: dict = {}
                if uviol is None:
                    after_u = {st: (n, v) for st, n, v in runner.successors(unxt)}
                    if not ({st for st in after_u if st[0] == "a" and st[1] == a}
                            <= {st for st, _, _ in mine}):
                        return "1: enables", s, ustep
                for tstep, tnxt, tviol in mine:
                    if tviol is not None:
                        continue
                    if uviol is None and after_u.get(tstep, (None, "off"))[1] is not None:
                        return "1: spoils", s, tstep, ustep
                    after_t = {st: (n, v) for st, n, v in runner.successors(tnxt)}
                    if ustep not in after_t:
                        return "2: disables", s, tstep, ustep
                    if (after_t[ustep][1] is None) != (uviol is None):
                        return "2: outcome", s, tstep, ustep
                    if uviol is None and after_t[ustep][0] != after_u[tstep][0]:
                        return "3: commute", s, tstep, ustep
    assert checked > 0
    return None


@pytest.mark.parametrize("name", ["textbook/pipeline_tma_async.pipe", "bugs/x2-fixed.pipe",
                                  "bugs/p6-fixed.pipe", "textbook/tma_store_fence.pipe",
                                  "textbook/pipeline_clc_fetch_async.pipe"])
def test_safe_points_hold_in_the_concrete_model(name: str) -> None:
    """The z3 answers against the concrete model, in every reachable state."""
    system = System(compile_file(EX / name))
    _, u = _unrolling(system)
    safe = SafeSteps(u, footprint_candidates(system), time.perf_counter() + 120).safe
    assert safe
    assert _broken_safe_point(system, safe) is None


def test_the_concrete_check_finds_a_race() -> None:
    """p6-bug's producer may overwrite a stage a consumer still reads: with every
    program point declared safe, the concrete check finds a reachable state where one
    is not persistent (a step spoils another's outcome); the points z3 proves pass.
    (In the correct single-CTA kernels every enabled step happens to be persistent in
    reachable states; z3, asked about every state of the encoding, is stricter.)"""
    system = System(compile_file(EX / "bugs/p6-bug.pipe"))
    every = {a: frozenset(range(len(system.code(a)))) for a in range(len(system.agents))}
    assert _broken_safe_point(system, every) is not None
    _, u = _unrolling(system)
    proven = SafeSteps(u, footprint_candidates(system), time.perf_counter() + 120).safe
    assert _broken_safe_point(system, proven) is None
