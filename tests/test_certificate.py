"""The BMC engine's certificate (checker/certificate.py): a complete enumeration of the
reachable states that z3 shows closed under the encoding's steps.  The checks here fail
when the certificate would accept a set that is not an inductive invariant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import z3

from pipeproof.api import compile_file
from pipeproof.checker.bmc import Unrolling, check_bmc, make_solver, prove_certificate
from pipeproof.checker.certificate import certify
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.symbolic import Encoding, sample_ranges
from pipeproof.model.system import System

EX = Path(__file__).resolve().parent.parent / "examples"


def _parts(name: str, **sample_kw: Any) -> tuple[System, Any, Encoding, Unrolling]:
    system = System(compile_file(EX / name))
    sample = sample_ranges(system, **sample_kw)
    enc = Encoding(system, sample=sample)
    return system, sample, enc, Unrolling(enc, make_solver())


def _certify(enc: Encoding, u: Unrolling, states: Any) -> tuple[Any, str]:
    Xn = [u.Xn.get(k, x) for k, x in enumerate(enc.X)]
    problem = z3.Or(u.T_BAD, z3.And(z3.Not(u.T_ENABLED), z3.Not(u.T_DONE)))
    return certify(enc, states, z3.And(u.T_GOOD, u.T_NEXT), Xn, problem, 1e18)


def test_reachable_set_is_certified_and_a_missing_state_breaks_it() -> None:
    system, sample, enc, u = _parts("textbook/pipeline_async.pipe")
    assert sample.reachable is not None and len(sample.reachable) > 20
    cert, why = _certify(enc, u, sample.reachable)
    assert cert is not None and cert.problem_free, why
    assert cert.states == len({tuple(enc.encode_concrete(s)[0]) for s in sample.reachable})
    # every state but the initial one has a predecessor in the set: without it the set
    # is not closed, and there is no certificate
    init = tuple(enc.init_values)
    for drop in (5, 17, len(sample.reachable) - 1):
        st = sample.reachable[drop]
        if tuple(enc.encode_concrete(st)[0]) == init:
            continue
        rest = [s for s in sample.reachable if s != st]
        cert, why = _certify(enc, u, rest)
        assert cert is None and "not closed" in why


def test_initial_state_must_be_in_the_set() -> None:
    system, sample, enc, u = _parts("textbook/tma_store_fence.pipe")
    init = tuple(enc.init_values)
    rest = [s for s in sample.reachable if tuple(enc.encode_concrete(s)[0]) != init]
    cert, why = _certify(enc, u, rest)
    assert cert is None and "initial state" in why


def test_a_buggy_kernel_has_a_certificate_with_problems() -> None:
    """The reachable set of a kernel with a deadlock is still an invariant (the levels
    assert it), but not problem-free; BMC then finds the explicit engine's shortest
    counterexample."""
    system, sample, enc, u = _parts("bugs/p2-bug.pipe")
    cert, why = _certify(enc, u, sample.reachable)
    assert cert is not None and cert.problem_free is False, why
    b = check_bmc(System(compile_file(EX / "bugs/p2-bug.pipe")), timeout=120)
    e = check_explicit(System(compile_file(EX / "bugs/p2-bug.pipe")), reduce=False)
    assert b.stats.extra["certificate"]["problem_free"] is False
    assert (b.status, b.prop, len(b.trace)) == (e.status, e.prop, len(e.trace))


def test_no_certificate_without_a_complete_enumeration() -> None:
    system, sample, enc, u = _parts("textbook/pipeline_async.pipe", max_states=5)
    assert sample.reachable is None
    cert, why = prove_certificate(enc, sample, 10.0)
    assert cert is None and "did not finish" in why
    v = check_bmc(system, timeout=60)  # the full enumeration: certificate
    assert v.status == "PROVEN" and v.stats.extra["certificate"]["problem_free"]


def test_states_outside_the_encoding_give_no_certificate() -> None:
    system = System(compile_file(EX / "textbook/pipeline_async.pipe"))
    sample = sample_ranges(system)
    wide = Encoding(system, sample=sample)
    name = next(n for n in wide.key_names if n.endswith(".phase"))
    enc = Encoding(system, ranges={name: (0, 0)}, sample=sample)
    cert, why = _certify(enc, Unrolling(enc, make_solver()), sample.reachable)
    assert cert is None and "outside" in why


def test_cyclic_kernel_safety_certified_and_starvation_still_found() -> None:
    """A kernel that loops for ever: the certificate settles safety and deadlock at every
    depth, and the lasso search (on levels constrained by it) still finds starvation."""
    bad = check_bmc(System(compile_file(EX / "liveness/persistent_consumer_stops_releasing.pipe")),
                    timeout=120)
    assert (bad.status, bad.prop) == ("VIOLATED", "starvation")
    assert bad.stats.extra["certificate"]["problem_free"] is True
    ok = check_bmc(System(compile_file(EX / "liveness/persistent_consumer_releases.pipe")),
                   depth=12, timeout=120)
    assert ok.status == "SAFE" and ok.bounded and ok.depth == 12
    assert ok.stats.extra["safety_unbounded"] is True


def test_cli_reports_the_certificate(capsys: Any) -> None:
    from pipeproof.cli import main

    f = str(EX / "textbook/pipeline_cp_async.pipe")
    rc = main(["check", f, "--engine", "bmc", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "PROVEN (unbounded)" in out
    assert "engine bmc (certificate)" in out and "reachable states (z3-certified" in out
    rc = main(["check", f, "--engine", "bmc", "--quiet", "--json", "--bmc-certificate", "off"])
    js = json.loads(capsys.readouterr().out)
    assert rc == 0 and js["status"] == "PROVEN" and "certificate" not in js["stats"]
    assert js["stats"]["invariants"]["proven"] > 0


def test_unfinished_starvation_search_says_how_far_it_got() -> None:
    """Safety certified, the lasso search cut off by the timeout: UNKNOWN, with the lasso
    length it ruled out (not the depth asked for)."""
    v = check_bmc(System(compile_file(EX / "liveness/persistent_consumer_releases.pipe")),
                  depth=60, timeout=6)
    assert v.status == "UNKNOWN" and "at any depth (certified invariant)" in v.reason
    assert f"no starvation lasso of up to {v.depth} steps" in v.reason and v.depth < 60
