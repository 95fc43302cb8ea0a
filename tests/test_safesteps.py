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
from pipeproof.checker.bmc import Unrolling, check_bmc, make_solver
from pipeproof.checker.certificate import certify_reduced, write_smt2
from pipeproof.checker.explicit import check_explicit, symmetric_groups
from pipeproof.checker.safesteps import SafeSteps, footprint_candidates
from pipeproof.checker.symbolic import Encoding, sample_ranges
from pipeproof.model.errors import ConfigError
from pipeproof.model.program import Wait
from pipeproof.model.system import System

import generators as G

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
    waits = {a: {pc for pc, ins in enumerate(system.code(a)) if isinstance(ins, Wait)}
             for a in range(len(system.agents))}
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
    v = check_bmc(System(compile_file(EX / "textbook/pipeline_tma_async.pipe")), timeout=300,
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
    e = check_explicit(system, max_states=200_000, timeout=120, reduce=False)
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
