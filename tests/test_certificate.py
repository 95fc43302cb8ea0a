"""The BMC engine's certificate (checker/certificate.py): a complete enumeration of the
reachable states that z3 shows closed under the encoding's steps.  The checks here fail
when the certificate would accept a set that is not an inductive invariant."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import z3

from pipeproof.api import compile_file
from pipeproof.checker.bmc import check_bmc, prove_certificate
from pipeproof.checker.certificate import certify
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.symbolic import Encoding, Substitution, sample_ranges
from pipeproof.checker.unrolling import Unrolling, make_solver
from pipeproof.model.system import System
from helpers import NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"


def _parts(name: str, **sample_kw: Any) -> tuple[System, Any, Encoding, Unrolling]:
    system = System(compile_file(EX / name))
    sample = sample_ranges(system, **sample_kw)
    enc = Encoding(system, sample=sample)
    return system, sample, enc, Unrolling(enc, make_solver())


def _certify(enc: Encoding, u: Unrolling, states: Any, groups: Any) -> tuple[Any, str]:
    return certify(u, states, 1e18, groups)


def test_reachable_set_is_certified_and_a_missing_state_breaks_it() -> None:
    system, sample, enc, u = _parts("textbook/pipeline_async.pipe")
    assert sample.reachable is not None and len(sample.reachable) > 20
    cert, why = _certify(enc, u, sample.reachable, sample.symmetry)
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
        cert, why = _certify(enc, u, rest, sample.symmetry)
        assert cert is None and "not closed" in why


def test_initial_state_must_be_in_the_set() -> None:
    system, sample, enc, u = _parts("textbook/tma_store_fence.pipe")
    init = tuple(enc.init_values)
    rest = [s for s in sample.reachable if tuple(enc.encode_concrete(s)[0]) != init]
    cert, why = _certify(enc, u, rest, sample.symmetry)
    assert cert is None and "initial state" in why


def test_a_buggy_kernel_has_a_certificate_with_problems() -> None:
    """The reachable set of a kernel with a deadlock is still an invariant (the levels
    assert it), but not problem-free; BMC then finds the explicit engine's shortest
    counterexample."""
    system, sample, enc, u = _parts("bugs/p2-bug.pipe")
    cert, why = _certify(enc, u, sample.reachable, sample.symmetry)
    assert cert is not None and cert.problem_free is False, why
    b = check_bmc(System(compile_file(EX / "bugs/p2-bug.pipe")), timeout=NO_DEADLINE)
    e = check_explicit(System(compile_file(EX / "bugs/p2-bug.pipe")), reduce=False)
    assert b.stats.extra["certificate"]["problem_free"] is False
    assert (b.status, b.prop, len(b.trace)) == (e.status, e.prop, len(e.trace))


@pytest.mark.parametrize("name", ["bugs/p7-bug.pipe", "bugs/x2-bug.pipe"])
def test_certificate_with_problems_gives_the_shortest_counterexample(name: str) -> None:
    """A certificate with problem states: the breadth-first search of the encoding's
    compiled steps (checker/evalgraph.py) gives the explicit engine's answer -- same
    property, same length -- without unrolling (p7-bug: 66 steps, symmetric warps; the
    other bug examples in tests/test_bmc_examples.py)."""
    b = check_bmc(System(compile_file(EX / name)), timeout=NO_DEADLINE)
    e = check_explicit(System(compile_file(EX / name)), reduce=False)
    assert b.stats.extra["certificate"]["problem_free"] is False
    assert b.stats.extra["counterexample_from"] == "certificate"
    assert b.stats.extra["shortest"] is True
    assert (b.status, b.prop, len(b.trace)) == (e.status, e.prop, len(e.trace))


def test_certificate_counterexample_is_replayed(monkeypatch: Any) -> None:
    """The property the compiled checks name is checked against the concrete model's
    replay: a wrong name is an internal error, never a verdict."""
    from pipeproof.checker import evalgraph
    from pipeproof.checker.errors import InternalError

    monkeypatch.setattr(evalgraph.CompiledSteps, "first_check",
                        lambda self, c, row: "overwrite-before-release")
    with pytest.raises(InternalError, match="should violate overwrite-before-release"):
        check_bmc(System(compile_file(EX / "bugs/x2-bug.pipe")), timeout=NO_DEADLINE)


def test_shortest_problems_on_a_problem_free_graph_is_empty() -> None:
    from pipeproof.checker.evalgraph import CompiledSteps, shortest_problems

    system, sample, enc, u = _parts("textbook/pipeline_async.pipe")
    init = tuple(v & ((1 << w) - 1) for v, w in zip(enc.init_values, enc.width))
    assert shortest_problems(CompiledSteps(enc), init) == []
    system, sample, enc, u = _parts("bugs/p2-bug.pipe")
    init = tuple(v & ((1 << w) - 1) for v, w in zip(enc.init_values, enc.width))
    found = shortest_problems(CompiledSteps(enc), init)
    e = check_explicit(System(compile_file(EX / "bugs/p2-bug.pipe")), reduce=False)
    assert found and {len(p.steps) for p in found} == {len(e.trace)}
    assert e.prop in {p.prop for p in found}


def test_no_certificate_without_a_complete_enumeration() -> None:
    system, sample, enc, u = _parts("textbook/pipeline_async.pipe", max_states=5)
    assert sample.reachable is None
    cert, why = prove_certificate(enc, sample, 10.0)
    assert cert is None and "did not finish" in why
    v = check_bmc(system, timeout=NO_DEADLINE, phase_budgets=False)  # full enumeration: certificate
    assert v.status == "PROVEN" and v.stats.extra["certificate"]["problem_free"]


def test_states_outside_the_encoding_give_no_certificate() -> None:
    system = System(compile_file(EX / "textbook/pipeline_async.pipe"))
    sample = sample_ranges(system)
    wide = Encoding(system, sample=sample)
    name = next(n for n in wide.key_names if n.endswith(".phase"))
    enc = Encoding(system, ranges={name: (0, 0)}, sample=sample)
    cert, why = _certify(enc, Unrolling(enc, make_solver()), sample.reachable,
                         sample.symmetry)
    assert cert is None and "outside" in why


def _no_graph(monkeypatch: Any) -> None:
    """Leave starvation to the bounded lasso search (as for a symmetric certificate)."""
    from pipeproof.checker.certificate import Certificate

    monkeypatch.setattr(Certificate, "starvation_free", lambda self, enc: None)


def test_cyclic_kernel_safety_certified_and_starvation_still_found(monkeypatch: Any) -> None:
    """A kernel that loops for ever: the certificate settles safety and deadlock at every
    depth, and the lasso search (on levels constrained by it) still finds starvation."""
    bad = check_bmc(System(compile_file(EX / "liveness/persistent_consumer_stops_releasing.pipe")),
                    timeout=NO_DEADLINE)
    assert (bad.status, bad.prop) == ("VIOLATED", "starvation")
    assert bad.stats.extra["certificate"]["problem_free"] is True
    assert bad.stats.extra["starvation_free"] is False
    _no_graph(monkeypatch)
    ok = check_bmc(System(compile_file(EX / "liveness/persistent_consumer_releases.pipe")),
                   depth=12, timeout=NO_DEADLINE)
    assert ok.status == "SAFE" and ok.bounded and ok.depth == 12
    assert ok.stats.extra["safety_unbounded"] is True


def test_cli_reports_the_certificate(capsys: Any) -> None:
    from pipeproof.cli import main

    f = str(EX / "textbook/pipeline_cp_async.pipe")
    rc = main(["check", f, "--engine", "bmc", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "PROVEN (unbounded)" in out
    assert "engine bmc (certificate)" in out and "(certified inductive for the encoding)" in out
    rc = main(["check", f, "--engine", "bmc", "--quiet", "--json", "--bmc-certificate", "off"])
    js = json.loads(capsys.readouterr().out)
    assert rc == 0 and js["status"] == "PROVEN" and "certificate" not in js["stats"]
    assert js["stats"]["invariants"]["proven"] > 0


def test_unfinished_starvation_search_says_how_far_it_got(monkeypatch: Any) -> None:
    """Safety certified, the lasso search cut off by the timeout: UNKNOWN, with the lasso
    length it ruled out (not the depth asked for)."""
    from pipeproof.checker import liveness
    from pipeproof.checker.errors import Timeout

    _no_graph(monkeypatch)
    real = liveness.find_lasso

    def cut_off(system: Any, lu: Any, runner: Any, depth: int, check: Any,
                done: Any = None) -> Any:
        # the deadline, as a count of solver queries (was: timeout=6, which a loaded
        # machine spent before the certificate was built)
        asked = [0]

        def limited(*a: Any) -> Any:
            asked[0] += 1
            if asked[0] > 12:
                raise Timeout(depth)
            return check(*a)
        return real(system, lu, runner, depth, limited, done)

    monkeypatch.setattr(liveness, "find_lasso", cut_off)
    v = check_bmc(System(compile_file(EX / "liveness/persistent_consumer_releases.pipe")),
                  depth=60, timeout=NO_DEADLINE, phase_budgets=False)
    assert v.status == "UNKNOWN" and "at any depth (certified invariant)" in v.reason
    assert f"no starvation lasso of up to {v.depth} steps" in v.reason and v.depth < 60


# ---------------------------------------------------------------- warp symmetry

from itertools import product  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pipeproof.checker.certificate import WarpSymmetry, sorting_network  # noqa: E402
from pipeproof.checker.statespace import Explorer  # noqa: E402


def test_sorting_network_sorts_every_zero_one_input() -> None:
    """The 0-1 principle: a comparator network sorts every input iff it sorts every
    0-1 input."""
    for n in range(1, 11):
        net = sorting_network(n)
        assert all(i < j < n for i, j in net)
        for bits in product((0, 1), repeat=n):
            v = list(bits)
            for i, j in net:
                if v[j] < v[i]:
                    v[i], v[j] = v[j], v[i]
            assert v == sorted(bits), (n, bits)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_sort_terms_agree_with_canonical(data: Any) -> None:
    """z3's sorting network over key vectors puts the warps in the order ``canonical``
    does, negative values (read unsigned) included."""
    n = data.draw(st.integers(1, 6), label="warps")
    per = data.draw(st.integers(1, 3), label="keys per warp")
    width = [data.draw(st.integers(2, 5)) for _ in range(per)] * n + [4]
    keys = tuple(tuple(w * per + j for j in range(per)) for w in range(n))
    sym = WarpSymmetry(((0,) * n,), (keys,))
    row = tuple(data.draw(st.integers(-(1 << (w - 1)), (1 << (w - 1)) - 1)) for w in width)
    X = [z3.BitVec(f"k{i}", w) for i, w in enumerate(width)]
    got = sym.sort_terms(X)
    val = {x.get_id(): z3.BitVecVal(v, w) for x, v, w in zip(X, row, width)}
    ev = [z3.simplify(z3.substitute(t, *[(x, val[x.get_id()]) for x in X])).as_signed_long()
          for t in got]
    assert tuple(ev) == sym.canonical(row, width)
    assert sorted(ev[k] for ks in keys for k in ks) == sorted(row[:-1])


def orbit_classes(system: System) -> int:
    """Reachable states up to permutations of interchangeable warps (the explicit
    engine's symmetry reduction alone)."""
    ex = Explorer(system, symmetry=True)
    seen, todo = {ex.initial}, [ex.initial]
    while todo:
        for _, nxt, viol in ex.successors(todo.pop()):
            if viol is None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return len(seen)


def test_symmetric_certificate_counts_classes_and_needs_the_symmetry() -> None:
    """named_barrier: two groups of four interchangeable warps; the certificate holds
    one sorted state per class (963, not 31,151), and without the symmetry queries and
    the sorting the same rows are not closed -- the class representatives alone are no
    invariant."""
    system, sample, enc, u = _parts("textbook/named_barrier.pipe", max_states=100_000,
                                    seconds=30, exact_seconds=25)
    assert sample.symmetry == [[0, 1, 2, 3], [4, 5, 6, 7]]
    cert, why = _certify(enc, u, sample.reachable, sample.symmetry)
    assert cert is not None and cert.problem_free, why
    assert cert.states == orbit_classes(system) < 31_151
    assert cert.stats["symmetry"] == sample.symmetry
    assert [n for n, _ in cert.queries].count("closure") == 1
    assert sum(n.startswith("symmetry") for n, _ in cert.queries) == 2 * (3 + 3)
    cert, why = _certify(enc, u, sample.reachable, ())
    assert cert is None and "not closed" in why


ASYMMETRIC = """
@cute.kernel
def asym(rounds: int = 2):
    launch(block=64, cluster=(1, 1, 1))
    a = NamedBarrier(barrier_id=1, num_threads=64)
    b = NamedBarrier(barrier_id=2, num_threads=64)

    with role("first", warps=[0]):
        for r in range(rounds):
            a.arrive()
            b.arrive_and_wait()

    with role("second", warps=[1]):
        for r in range(rounds):
            a.arrive_and_wait()
            b.arrive()
"""


def test_warps_that_are_not_interchangeable_are_refused(tmp_path: Path) -> None:
    """Two warps with keys of one shape but different programs: claimed interchangeable,
    the symmetry query is sat and there is no certificate (the full set, without the
    claim, is certified)."""
    f = tmp_path / "asym.pipe"
    f.write_text(ASYMMETRIC)
    system = System(compile_file(f))
    sample = sample_ranges(system)
    assert sample.reachable is not None and sample.symmetry == []
    enc = Encoding(system, sample=sample)
    u = Unrolling(enc, make_solver())
    cert, why = _certify(enc, u, sample.reachable, [[0, 1]])
    assert cert is None and "not interchangeable" in why
    cert, why = _certify(enc, u, sample.reachable, [])
    assert cert is not None and cert.problem_free, why


def test_bmc_proves_symmetric_examples_with_the_certificate() -> None:
    """Examples whose full state space is beyond the certificate but whose classes are
    not: PROVEN without unrolling, with the explicit engine."""
    for name in ("textbook/named_barrier.pipe", "textbook/flash_attention_extensions.pipe"):
        v = check_bmc(System(compile_file(EX / name)), timeout=NO_DEADLINE)
        assert v.status == "PROVEN" and not v.bounded, (name, v.reason)
        c = v.stats.extra["certificate"]
        assert c["problem_free"] and c["symmetry"], (name, c)


# ---------------------------------------------------------------- evaluation

import random  # noqa: E402


from pipeproof.checker import certificate as certificate_mod  # noqa: E402
from pipeproof.checker.certificate import state_set  # noqa: E402
from pipeproof.checker.termeval import Unsupported, compile_functions  # noqa: E402


@pytest.mark.parametrize("name", ["textbook/named_barrier.pipe",
                                  "textbook/pipeline_tma_async_multicast.pipe",
                                  "textbook/flash_attention_extensions.pipe",
                                  "kernels/k2_blackwell_persistent_gemm.pipe"])
def test_compiled_terms_agree_with_z3(name: str) -> None:
    """Every transition template's compiled guard, violation, overflow and updates give
    z3's values on random assignments of the keys (anywhere in their ranges, reachable
    or not) and on sampled reachable states."""
    system = System(compile_file(EX / name))
    sample = sample_ranges(system, seconds=1.0)
    enc = Encoding(system, sample=sample)
    trs = enc.transitions
    fns = compile_functions(enc.X, {f"t{t.index}": [[t.guard], [t.viol, t.ovf,
                                                                 *t.updates.values()]]
                                    for t in trs})
    rnd = random.Random(7)
    rows = [enc.encode_concrete(s)[0] for s in sample.kept[:40]]
    rows += [[rnd.randint(lo, hi) for lo, hi in enc.key_range] for _ in range(40)]
    for row in rows:
        ux = [v & ((1 << w) - 1) for v, w in zip(row, enc.width)]
        sub = Substitution([(x, z3.BitVecVal(v, w)) for x, v, w in zip(enc.X, row, enc.width)])
        for t in trs:
            got = fns[f"t{t.index}"](ux)
            g = z3.simplify(sub(t.guard))
            assert (got is not None) == z3.is_true(g), (t.step, row)
            if got is None:
                continue
            want = [z3.simplify(sub(e)) for e in (t.viol, t.ovf, *t.updates.values())]
            want_v = [z3.is_true(e) if z3.is_bool(e) else e.as_long() for e in want]
            assert list(got[1:]) == want_v, (t.step, row)


def test_unsupported_operator_is_refused() -> None:
    x = z3.BitVec("x", 8)
    with pytest.raises(Unsupported):
        compile_functions([x], {"f": [[z3.UDiv(x, 3) == 1]]})


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_state_set_holds_exactly_its_rows(data: Any) -> None:
    """The decision diagram is true on exactly the rows it was built from (every
    assignment of three small keys tried)."""
    from types import SimpleNamespace

    width = [2, 3, 2]
    space = list(product(*[range(-(1 << (w - 1)), 1 << (w - 1)) for w in width]))
    rows = data.draw(st.sets(st.sampled_from(space), min_size=1, max_size=20))
    X = [z3.BitVec(f"s{i}", w) for i, w in enumerate(width)]
    R = state_set(SimpleNamespace(nkeys=3, width=width), rows, X)
    for pt in space:
        sub = Substitution([(x, z3.BitVecVal(v, w)) for x, v, w in zip(X, pt, width)])
        assert z3.is_true(z3.simplify(sub(R))) == (pt in rows), pt


def test_evaluation_and_z3_closure_query_agree(monkeypatch: Any) -> None:
    """The state-by-state check and the SAT query give the same answers: closed and
    problem-free, closed with problems, not closed."""
    cases = []
    for name, drop in (("textbook/pipeline_async.pipe", False), ("bugs/p2-bug.pipe", False),
                       ("textbook/named_barrier.pipe", True)):
        system, sample, enc, u = _parts(name, max_states=100_000, seconds=30,
                                        exact_seconds=25)
        states = sample.reachable
        if drop:
            states = [s for s in states if s != states[len(states) // 2]]
        cases.append((enc, u, states, sample.symmetry))
    answers = []
    for enc, u, states, groups in cases:
        cert, why = _certify(enc, u, states, groups)
        answers.append((cert is None, cert and cert.problem_free, cert and cert.states))
        assert cert is None or cert.stats["closure"] == "evaluated"

    def refuse(*a: Any, **k: Any) -> Any:
        raise Unsupported("forced")

    monkeypatch.setattr(certificate_mod, "check_by_evaluation", refuse)
    for (enc, u, states, groups), want in zip(cases, answers):
        cert, why = _certify(enc, u, states, groups)
        assert (cert is None, cert and cert.problem_free, cert and cert.states) == want
        assert cert is None or cert.stats["closure"] == "z3"
    assert [a[0] for a in answers] == [False, False, True]
    assert [a[1] for a in answers[:2]] == [True, False]


@pytest.mark.parametrize("name", ["bugs/p3-fixed", "textbook/pipeline_clc_fetch_async",
                                  "liveness/persistent_consumer_releases",
                                  "liveness/persistent_consumer_stops_releasing",
                                  "bugs/p3-bug"])
def test_starvation_on_the_certified_graph_agrees_with_the_explicit_engine(name: str) -> None:
    """Kernels that loop for ever: the starvation decision on the certified state graph
    (the encoding's own steps) gives the explicit engine's verdict -- PROVEN at any depth
    where it finds no starving fair cycle, and where it finds one, a lasso through it
    (replayed through the concrete model, its fairness checked there)."""
    system = System(compile_file(EX / f"{name}.pipe"))
    e = check_explicit(System(compile_file(EX / f"{name}.pipe")))
    v = check_bmc(system, timeout=NO_DEADLINE)
    assert (v.status, v.prop) == (e.status, e.prop), (v.headline(), e.headline())
    cert = v.stats.extra["certificate"]
    if cert.get("problem_free"):
        assert v.stats.extra["starvation_free"] == (e.status == "PROVEN")
    if v.status == "PROVEN":
        assert not v.bounded
    if v.prop == "starvation":
        assert v.stats.extra["counterexample_from"] == "certificate"
        assert v.trace.loop_start is not None


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_starvation_lasso_from_the_graph_needs_no_lasso_search(stages: int,
                                                               monkeypatch: Any) -> None:
    """The graph's starving cycle becomes a lasso of any length without the bounded
    lasso search (made to fail here), and the explicit engine agrees."""
    from pipeproof.checker import liveness

    def no_search(*a: Any, **k: Any) -> Any:
        raise AssertionError("the lasso search ran")

    monkeypatch.setattr(liveness, "find_lasso", no_search)
    f = EX / "liveness/persistent_consumer_stops_releasing.pipe"
    v = check_bmc(System(compile_file(f, {"stages": stages})), timeout=NO_DEADLINE)
    e = check_explicit(System(compile_file(f, {"stages": stages})))
    assert (v.status, v.prop) == (e.status, e.prop) == ("VIOLATED", "starvation")
    assert v.stats.extra["loop_steps"] >= 1


# ---------------------------------------------- looping warps that are interchangeable

@pytest.mark.parametrize("name,status", [("interchangeable_consumers_release", "PROVEN"),
                                         ("interchangeable_consumers_stop_releasing",
                                          "VIOLATED")])
def test_looping_interchangeable_warps_get_the_certified_graph(name: str, status: str) -> None:
    """Warps that loop for ever keep their identities in the certificate (no symmetry
    reduction, as in the explicit engine), so its state graph decides starvation: no
    bounded lasso search (which ran 60 s without an answer on the first), and both
    engines name the same starving warps."""
    from pipeproof.api import check_file

    f = EX / f"liveness/{name}.pipe"
    b = check_file(f, engine="bmc", timeout=NO_DEADLINE).verdict
    e = check_file(f, engine="explicit", timeout=NO_DEADLINE).verdict
    assert b.status == e.status == status
    assert b.stats.extra["certificate"]["symmetry"] == []
    # decided on the certified graph, not by a bounded lasso search (state, not time:
    # the default run must pass on a loaded machine)
    assert b.stats.extra.get("starvation_free") is (status == "PROVEN"), b.stats.extra
    if status == "VIOLATED":
        assert b.prop == e.prop == "starvation"
        assert b.reason == e.reason and "cta0.w1 (consumer), cta0.w2 (consumer)" in b.reason
    else:
        assert not b.bounded and b.stats.extra["starvation_free"] is True


# ---------------------------------------------- the symmetry, template by template

@pytest.mark.parametrize("name", ["textbook/named_barrier", "textbook/pipeline_tma_async",
                                  "textbook/pipeline_order", "bugs/p8-fixed",
                                  "liveness/interchangeable_consumers_release"])
def test_template_symmetry_agrees_with_the_queries(name: str) -> None:
    """``template_symmetry`` (the swap maps every transition template onto its twin's)
    is what the certificate relies on first; here the queries over the whole relation
    it stands for are solved as well, and every one is unsat."""
    from pipeproof.checker.certificate import (symmetry_queries, template_symmetry,
                                               warp_symmetry)
    from pipeproof.checker.statespace import symmetric_groups

    system = System(compile_file(EX / f"{name}.pipe"))
    enc = Encoding(system, sample=sample_ranges(system))
    u = Unrolling(enc, make_solver())
    groups = symmetric_groups(system)
    assert groups, name
    sym, why = warp_symmetry(enc, groups)
    assert sym is not None, why
    assert template_symmetry(u, sym, time.perf_counter() + 120) is True
    queries, why = symmetry_queries(u, sym)
    assert queries, why
    for q_name, q in queries:
        s = z3.SolverFor("QF_BV")
        s.add(q)
        assert s.check() == z3.unsat, (name, q_name)


def test_template_symmetry_refuses_warps_that_differ(tmp_path: Path) -> None:
    """The ASYMMETRIC warps (one shape of keys, different programs): no template match,
    so the certificate falls back to the queries, which are sat."""
    from pipeproof.checker.certificate import template_symmetry, warp_symmetry

    f = tmp_path / "asym.pipe"
    f.write_text(ASYMMETRIC)
    system = System(compile_file(f))
    enc = Encoding(system, sample=sample_ranges(system))
    u = Unrolling(enc, make_solver())
    sym, why = warp_symmetry(enc, [[0, 1]])
    assert sym is not None, why
    assert template_symmetry(u, sym, time.perf_counter() + 120) is False


def test_houdini_without_a_time_limit(monkeypatch: Any) -> None:
    """No phase budgets and no time limit (``timeout=inf``): Houdini gets all the time
    there is, and z3 gets its largest timeout, not an overflow of ``int(inf)``."""
    from pipeproof.api import check_file
    from pipeproof.checker.symbolic import solver_ms

    assert solver_ms(float("inf")) == solver_ms(1e12) == 2 ** 32 - 1
    assert solver_ms(0.0) == 1 and solver_ms(2.5) == 2500
    monkeypatch.setenv("PIPEPROOF_PHASE_BUDGETS", "0")
    r = check_file(EX / "textbook/pipeline_cp_async.pipe", engine="bmc",
                   timeout=float("inf"), bmc_certificate=False)
    assert r.status == "PROVEN"
    assert r.verdict.stats.extra["invariants"]["proven"] > 0
