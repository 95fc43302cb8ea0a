"""Invariants for the BMC engine (checker/invariants.py): exact candidates, proven ones
hold in every reachable state, and they are what makes named barriers commute."""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.api import check_source, compile_file
from pipeproof.checker.bmc import prove_invariants
from pipeproof.checker.concrete import ConcreteRunner
from pipeproof.checker.chain import ChainUnrolling
from pipeproof.checker.invariants import Candidate, affine_hull, houdini
from pipeproof.checker.symbolic import Encoding, sample_ranges
from pipeproof.checker.unrolling import Unrolling, make_solver
from pipeproof.model.errors import ConfigError
from pipeproof.model.system import System

import generators as G
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = dict(deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _rank(rows: list[list[int]]) -> int:
    m = [[Fraction(x) for x in r] for r in rows]
    rank, col = 0, 0
    ncol = len(m[0]) if m else 0
    while rank < len(m) and col < ncol:
        p = next((i for i in range(rank, len(m)) if m[i][col] != 0), None)
        if p is None:
            col += 1
            continue
        m[rank], m[p] = m[p], m[rank]
        for i in range(len(m)):
            if i != rank and m[i][col] != 0:
                f = m[i][col] / m[rank][col]
                m[i] = [a - f * b for a, b in zip(m[i], m[rank])]
        rank += 1
        col += 1
    return rank


@settings(max_examples=60, **SETTINGS)
@given(st.integers(1, 6), st.integers(0, 4), st.integers(0, 2**32 - 1))
def test_affine_hull_is_exact(n: int, m: int, seed: int) -> None:
    """Points x = A t + b of a random integer affine subspace: every equality returned
    holds on every point, and there are exactly as many independent ones as the points'
    affine hull has codimension (none is missed)."""
    rnd = random.Random(seed)
    A = [[rnd.randint(-3, 3) for _ in range(m)] for _ in range(n)]
    b = [rnd.randint(-50, 50) for _ in range(n)]
    pts = []
    for _ in range(40):
        t = [rnd.randint(-20, 20) for _ in range(m)]
        pts.append([sum(A[i][j] * t[j] for j in range(m)) + b[i] for i in range(n)])
    eqs = affine_hull(pts[:10], pts)
    for terms, c0 in eqs:
        assert all(sum(c * p[j] for j, c in terms) == c0 for p in pts)
    # codimension of the hull = n - rank of the differences to the first point
    diffs = [[p[i] - pts[0][i] for i in range(n)] for p in pts[1:]]
    assert len(eqs) == n - _rank(diffs)
    assert _rank([[c for c in _dense(terms, n)] for terms, _ in eqs] or [[0] * n]) == len(eqs)


def _dense(terms: tuple, n: int) -> list[int]:
    out = [0] * n
    for j, c in terms:
        out[j] = c
    return out


def _reachable(system: System, cap: int = 60_000) -> list[tuple]:
    runner = ConcreteRunner(system)
    seen = {runner.initial}
    todo = [runner.initial]
    while todo:
        s = todo.pop()
        for _, n, viol in runner.successors(s):
            if viol is None and n not in seen:
                seen.add(n)
                todo.append(n)
        assert len(seen) < cap, "test system too large"
    return list(seen)


def _proven(system: System, seconds: float = 60.0):
    sample = sample_ranges(system)
    enc = Encoding(system, {}, {}, sample)
    return enc, prove_invariants(enc, sample, seconds)


def _check_invariants_hold(system: System) -> int:
    """Every proven invariant holds in every reachable state (found by the concrete
    model, not from the samples the candidates came from)."""
    enc, inv = _proven(system)
    assert "note" not in inv.stats, inv.stats
    for s in _reachable(system):
        vals, long = enc.encode_concrete(s)
        if long:
            continue  # beyond the encoding: its BMC search would restart first
        for c in inv.proven:
            assert c.holds(vals), (c.text(enc), s)
    return len(inv.proven)


@pytest.mark.parametrize("name", ["pipeline_async", "named_barrier", "pipeline_tma_async",
                                  "tma_store_fence"])
def test_proven_invariants_hold_on_textbook(name: str) -> None:
    system = System(compile_file(ROOT / "examples" / "textbook" / f"{name}.pipe"))
    assert _check_invariants_hold(system) > 0


@settings(max_examples=10, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_proven_invariants_hold_on_mutants(prog: G.Program) -> None:
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    if len(_reachable_or_none(system)) == 0:
        return
    _check_invariants_hold(system)


def _reachable_or_none(system: System) -> list[tuple]:
    try:
        return _reachable(system, cap=30_000)
    except AssertionError:
        return []


def test_houdini_drops_what_is_not_inductive() -> None:
    """"Warp 0 stays at its first instruction" holds initially but not after its step;
    "the named barrier's count is 32 per arrived warp" is inductive (given that the
    arrival flags are 0 or 1) and kept."""
    system = System(compile_file(ROOT / "examples" / "textbook" / "named_barrier.pipe"))
    sample = sample_ranges(system)
    enc = Encoding(system, {}, {}, sample)
    u = Unrolling(enc, make_solver())
    Xn = [u.Xn.get(k, x) for k, x in enumerate(enc.X)]
    k = {n: i for i, n in enumerate(enc.key_names)}
    pc0 = k["cta0.w0.pc"]
    stay = Candidate("affine", ((pc0, 1),), enc.init_values[pc0])
    count = Candidate("affine", ((k["named1@cta0.arrived"], 1),)
                      + tuple((k[f"cta0.w{w}.named1"], -32) for w in range(8)), 0)
    flags = [Candidate("range", ((k[f"cta0.w{w}.named1"], 1),), values=(0, 1))
             for w in range(8)]
    import time

    kept = houdini(enc, [stay, count] + flags, z3.And(u.T_GOOD, u.T_NEXT), Xn,
                   time.perf_counter() + 60)
    assert kept == [count] + flags
    # the count alone is not inductive: a flag of -2 set to 1 adds 3 arrivals, not one
    assert houdini(enc, [count], z3.And(u.T_GOOD, u.T_NEXT), Xn,
                   time.perf_counter() + 60) == []


def test_no_invariant_past_the_budget() -> None:
    system = System(compile_file(ROOT / "examples" / "textbook" / "named_barrier.pipe"))
    enc, inv = _proven(system, seconds=0.0)
    assert inv.proven == () and z3.is_true(inv.term)
    assert "no inductive subset" in inv.stats["note"]


def test_invariants_make_named_barrier_arrivals_commute() -> None:
    """Without invariants two producer warps' arrivals at named barrier 1 "do not
    commute" (in unreachable states where the count disagrees with the arrival flags);
    with them they do, and only the waits and later arrivals stay dependent."""
    system = System(compile_file(ROOT / "examples" / "textbook" / "named_barrier.pipe"))
    enc, inv = _proven(system)
    bare = ChainUnrolling(enc, make_solver(), budget=60)
    strong = ChainUnrolling(enc, make_solver(), budget=60, inv=inv.term)
    assert (0, 0) in bare.pcdep[(0, 1)]
    assert (0, 0) not in strong.pcdep[(0, 1)]
    assert strong.pcdep[(0, 1)] < bare.pcdep[(0, 1)]


SMALL_NAMED = """
@cute.kernel
def k(rounds: int = 2):
    launch(block=128, cluster=(1, 1, 1))
    full = NamedBarrier(barrier_id=1, num_threads=128)
    done = NamedBarrier(barrier_id=2, num_threads=128)
    with role("producer", warps=[0, 1]):
        for r in range(rounds):
            full.arrive()
            done.arrive_and_wait()
    with role("consumer", warps=[2, 3]):
        for r in range(rounds):
            full.arrive_and_wait()
            done.arrive_and_wait()
"""


def test_bmc_proves_named_barriers() -> None:
    r = check_source(SMALL_NAMED, engine="bmc", timeout=NO_DEADLINE, bmc_certificate=False)
    assert r.status == "PROVEN", r.verdict.headline()
    assert r.verdict.stats.extra["invariants"]["proven"] > 0
    e = check_source(SMALL_NAMED, engine="explicit")
    assert e.status == "PROVEN"


def test_free_vars_match_a_plain_traversal() -> None:
    """The memoised raw-API walk (chain footprints) finds exactly the constants a plain
    traversal of the z3 terms finds, for every transition of an example."""
    from pipeproof.checker.symbolic import FreeVars

    system = System(compile_file(ROOT / "examples" / "textbook" / "pipeline_tma_async.pipe"))
    enc = Encoding(system, {}, {}, sample_ranges(system))
    fv = FreeVars()

    def plain(t: z3.ExprRef) -> set[int]:
        out, seen, todo = set(), set(), [t]
        while todo:
            x = todo.pop()
            if x.get_id() in seen:
                continue
            seen.add(x.get_id())
            if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                out.add(x.get_id())
            todo.extend(x.children())
        return out

    n = 0
    for t in enc.transitions:
        for term in (t.guard, t.viol, t.ovf, *t.updates.values()):
            assert fv(term) == plain(term)
            n += len(plain(term))
    assert n > 0


def test_houdini_rejects_a_term_false_initially() -> None:
    """A range whose bound does not fit the key's width holds over the integers but not
    as a bit-vector term; if it were kept, every level past 0 would be empty and BMC
    would "prove" anything.  It must be rejected before Houdini starts."""
    import time

    system = System(compile_file(ROOT / "examples" / "textbook" / "named_barrier.pipe"))
    enc = Encoding(system, {}, {}, sample_ranges(system))
    u = Unrolling(enc, make_solver())
    Xn = [u.Xn.get(k, x) for k, x in enumerate(enc.X)]
    # a key no step changes: any fact about it is inductive, so only the initial check
    # can reject it
    k = next(k for k in range(enc.nkeys) if k not in u.changing and enc.init_values[k] == 0)
    hi = 1 << enc.width[k]  # "-1 <= x <= hi - 1" holds for x = 0; as bits it is x == -1
    wrap = Candidate("range", ((k, 1),), values=(-1, hi - 1))
    assert wrap.holds(enc.init_values)
    assert houdini(enc, [wrap], z3.And(u.T_GOOD, u.T_NEXT), Xn,
                   time.perf_counter() + 60) == []
