"""The z3 BMC engine (checker/bmc.py, checker/symbolic.py, checker/liveness.py).

* ``Z3Values``/``SV`` compute exactly what ``model.values.CONCRETE`` computes;
* every symbolic transition template, evaluated at a reachable concrete state, gives the
  enabledness, the first failing check, the successor and the overflow flag that the
  concrete model gives (the symbolic interpretation *is* the model);
* on examples, BMC and the explicit engine (``reduce=False``) agree on verdict,
  property and counterexample length; counterexamples replay; starvation lassos are
  found and closed; parameter ranges and SMT-LIB export work.

The differential test on generated configurations and mutants is in
``tests/test_bmc_hypothesis.py``.
"""

from __future__ import annotations

import operator
from collections import deque
from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.api import check_file, compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.concrete import ConcreteRunner, first_violation
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.symbolic import SV, Encoding, Z3Values, bits_for, sample_ranges
from pipeproof.model.compile import compile_kernel
from pipeproof.model.lang.parser import parse
from pipeproof.model.system import BULK_MARK, System
from pipeproof.model.values import CONCRETE
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"

V = Z3Values()


# --------------------------------------------------------------------------- values


def _const(x: Any) -> Any:
    """The concrete value of a folded or symbolic value (variables already substituted)."""
    if isinstance(x, (bool, int)):
        return x
    if isinstance(x, SV):
        return z3.simplify(x.t).as_signed_long()
    r = z3.simplify(x)
    assert z3.is_true(r) or z3.is_false(r)
    return z3.is_true(r)


def _sym(n: int, lo: int, hi: int) -> SV:
    """A symbolic integer that is in fact the constant ``n`` (a range around it)."""
    w = bits_for(lo, hi)
    return SV(z3.BitVecVal(n, w), lo, hi)


OPS = ["add", "sub", "neg", "mul", "ite", "eq", "ne", "lt", "le", "mod", "div", "and", "or",
       "not"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(-2000, 2000),
                          st.integers(-40, 40), st.booleans(), st.booleans()),
                min_size=1, max_size=12),
       st.integers(-300, 300))
def test_values_exact(prog: list, seed: int) -> None:
    """Random straight-line programs give the same result on ``CONCRETE`` and ``Z3Values``
    (mixing folded Python values and symbolic ones, arbitrary widths)."""
    conc: list[Any] = [seed]
    symb: list[Any] = [_sym(seed, seed - 5, seed + 700)]
    for op, k, m, flag, pick_sym in prog:
        a_c, a_s = conc[-1], symb[-1]
        b_c = conc[abs(m) % len(conc)]
        b_s = symb[abs(m) % len(symb)] if pick_sym else b_c
        if isinstance(a_c, bool) and op in ("add", "sub", "neg", "mul", "mod", "div"):
            a_c, a_s = int(a_c), V.ite(a_s, 1, 0)
        if isinstance(b_c, bool) and op in ("add", "sub", "mul", "ite"):
            b_c, b_s = int(b_c), V.ite(b_s, 1, 0) if not isinstance(b_s, bool) else int(b_s)
        if op == "add":
            c, s = a_c + b_c, a_s + b_s
        elif op == "sub":
            c, s = a_c - k, a_s - k
        elif op == "neg":
            c, s = -a_c, -a_s
        elif op == "mul":
            c, s = a_c * (m % 7), a_s * (m % 7)
        elif op == "ite":
            cond_c = CONCRETE.lt(a_c, k)
            cond_s = V.lt(a_s, k)
            c, s = CONCRETE.ite(cond_c, b_c, m), V.ite(cond_s, b_s, m)
        elif op in ("eq", "ne", "lt", "le"):
            c = getattr(CONCRETE, op)(a_c, b_c)
            s = getattr(V, op)(a_s, b_s)
        elif op == "mod":
            d = [1, 2, 3, 4, 8, 5][abs(m) % 6]
            c, s = CONCRETE.mod(a_c, d), V.mod(a_s, d)
        elif op == "div":
            d = [1, 2, 4, 3, 16][abs(m) % 5]
            c, s = CONCRETE.div(a_c, d), V.div(a_s, d)
        elif op in ("and", "or"):
            x_c, x_s = CONCRETE.lt(a_c, k), V.lt(a_s, k)
            y_c, y_s = flag, (V.le(b_s, m) if pick_sym else flag)
            if pick_sym:
                y_c = CONCRETE.le(b_c, m)
            c = getattr(CONCRETE, op + "_")(x_c, y_c)
            s = getattr(V, op + "_")(x_s, y_s)
        else:
            c, s = CONCRETE.not_(CONCRETE.lt(a_c, k)), V.not_(V.lt(a_s, k))
        got = _const(s)
        assert got == c, (op, a_c, b_c, k, m, c, got)
        if isinstance(s, SV):
            assert s.lo <= c <= s.hi  # the interval is sound
        conc.append(c)
        symb.append(s)


# --------------------------------------------------------------------------- templates


def _reachable(system: System, limit: int) -> list[tuple]:
    runner = ConcreteRunner(system)
    seen = {runner.initial}
    todo = deque([runner.initial])
    out = [runner.initial]
    while todo and len(out) < limit:
        s = todo.popleft()
        for _step, nxt, viol in runner.successors(s):
            if viol is None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
                out.append(nxt)
    return out


def _eval(term: Any, pairs: list) -> Any:
    r = z3.simplify(z3.substitute(term, *pairs))
    if z3.is_bool(r):
        assert z3.is_true(r) or z3.is_false(r), r
        return z3.is_true(r)
    return r.as_signed_long()


TEMPLATE_CASES = [
    "textbook/pipeline_async.pipe",
    "textbook/pipeline_tma_umma.pipe",
    "textbook/pipeline_tma_multi_consumers_async.pipe",
    "bugs/x2-bug.pipe",
    "liveness/persistent_consumer_stops_releasing.pipe",
]


@pytest.mark.parametrize("narrow", [False, True], ids=["sampled", "narrow"])
@pytest.mark.parametrize("name", TEMPLATE_CASES)
def test_templates_match_concrete_model(name: str, narrow: bool) -> None:
    """Each transition template evaluated at reachable states equals a concrete step,
    or says it leaves the encoding exactly where the concrete successor does.  ``narrow``:
    the transaction counts get 2-bit keys, as from a sample that never saw a byte in
    flight (what a machine too busy to sample leaves, issue 23 item 1 (b)): an
    expect_tx of 8192 B, cut to the key's width, looks like no change at all, and the
    step must still say it leaves the encoding (it was dropped with its overflow: a
    silently wrong template, then a deadlock the concrete model does not have)."""
    system = System(compile_file(EX / name))
    sample = sample_ranges(system, max_states=200)
    narrow_tx = {n: (-2, 1) for n in system.layout.names if n.endswith(".tx")}
    enc = Encoding(system, sample=sample, ranges=narrow_tx if narrow else None)
    runner = ConcreteRunner(system)
    states = _reachable(system, 120)
    checked = 0
    for flat in states:
        vals, long = enc.encode_concrete(flat)
        if narrow and (long or any(enc.out_of_range(flat))):
            continue  # not a state of this encoding
        assert not long
        pairs = [(x, z3.BitVecVal(v, w)) for x, v, w in zip(enc.X, vals, enc.width)]
        succ = {step: (nxt, viol) for step, nxt, viol in runner.successors(flat)}
        for t in enc.transitions:
            g = _eval(t.guard, pairs)
            if t.agent is not None and flat[system.agents[t.agent].pc] != t.pc:
                assert not g
                continue
            assert g == (t.step in succ), (t.step, g)
            if not g:
                continue
            checked += 1
            nxt, viol = succ[t.step]
            sym_first = next((p for c, p in t.checks if _eval(c, pairs)), None)
            assert sym_first == (viol[0] if viol else None), t.step
            assert _eval(t.viol, pairs) == (viol is not None)
            bad, longq = enc.out_of_range(nxt)
            assert _eval(t.ovf, pairs) == bool(bad or longq)
            if bad or longq:
                continue
            nvals, _ = enc.encode_concrete(nxt)
            for k in range(enc.nkeys):
                want = nvals[k]
                got = _eval(t.updates[k], pairs) if k in t.updates else vals[k]
                assert got == want, (t.step, enc.key_names[k], got, want)
    assert checked > 20


def test_overflowing_encoding_grows_and_stays_exact(monkeypatch: Any) -> None:
    """Ranges and queue capacities guessed from a one-state sample overflow; the engine
    widens them and restarts, never trusting the guess, and ends with the same answer."""
    import pipeproof.checker.bmc as B

    system = System(compile_file(EX / "liveness/persistent_consumer_releases.pipe"))
    # without the certificate: it would decide at once (the unrolled encoding is tested)
    ref = check_bmc(system, depth=14, timeout=NO_DEADLINE, liveness=False, certificate=False)
    real = B.sample_ranges
    monkeypatch.setattr(B, "sample_ranges", lambda s, **kw: real(s, max_states=1))
    v = check_bmc(system, depth=14, timeout=NO_DEADLINE, liveness=False, certificate=False)
    assert (v.status, v.prop, v.depth) == (ref.status, ref.prop, ref.depth) == \
        ("SAFE", None, 14)
    assert v.stats.extra["restarts"] >= 1 and ref.stats.extra["restarts"] == 0


@pytest.mark.parametrize("certificate", [True, False], ids=["certificate", "unrolling"])
def test_no_time_to_sample_is_still_sound(certificate: bool) -> None:
    """Issue 23 item 1 (b), deterministically: the enumeration's budget spent at once (a
    state bound of 1, not a clock) leaves ranges read off the initial states only, as a
    machine too busy to sample does.  The encoding must grow until it fits and give the
    explicit engine's verdict; it claimed a deadlock the concrete model rejects (UNKNOWN
    internal error) where a transaction count's update vanished with its overflow."""
    system = System(compile_file(EX / "textbook/pipeline_tma_multi_consumers_async.pipe"))
    e = check_explicit(system, reduce=False, timeout=NO_DEADLINE)
    v = check_bmc(system, depth=30, timeout=NO_DEADLINE, certificate=certificate, max_states=1,
                  phase_budgets=False)
    assert (v.status, v.prop) == (e.status, e.prop) == ("PROVEN", None), v.headline()
    assert v.stats.extra["restarts"] >= 1  # the narrow ranges did overflow


# --------------------------------------------------------------------------- agreement


AGREE = [
    ("textbook/pipeline_async.pipe", 60),
    ("bugs/x1-bug.pipe", 20),
    ("bugs/x2-bug.pipe", 20),
    ("bugs/p6-bug.pipe", 30),
]


@pytest.mark.parametrize("name,depth", AGREE)
def test_examples_agree_with_explicit(name: str, depth: int) -> None:
    system = System(compile_file(EX / name))
    e = check_explicit(system, reduce=False, timeout=NO_DEADLINE)
    b = check_bmc(system, depth=depth, timeout=NO_DEADLINE)
    assert b.status == e.status, (b.headline(), e.headline())
    assert b.prop == e.prop
    if e.status == "VIOLATED":
        assert len(b.trace) == len(e.trace) == b.depth
        # the trace replays (build_trace already did; check the shape)
        assert b.trace.events[-1].violation or b.prop == "deadlock"


def test_deadlock_counterexample_has_blocked_warps() -> None:
    src = (EX / "textbook/pipeline_async.pipe").read_text().replace(
        "pipe.consumer_release(state)", "pass")
    from pipeproof.api import check_source

    b = check_source(src, engine="bmc", depth=40, timeout=NO_DEADLINE)
    e = check_source(src, engine="explicit", reduce=False)
    assert (b.status, b.prop) == (e.status, e.prop) == ("VIOLATED", "deadlock")
    assert len(b.verdict.trace) == len(e.verdict.trace)
    assert b.verdict.trace.blocked


def _empty_bulk_group() -> str:
    """pipeline_tma_store without its ``tma_store``: warp 0 commits an empty bulk group,
    then waits for the groups to be read (issue 23, first item (a))."""
    src = (EX / "textbook/pipeline_tma_store.pipe").read_text()
    lines = [ln for ln in src.splitlines() if "tma_store(store, buf)" not in ln]
    assert len(lines) == len(src.splitlines()) - 1
    return "\n".join(lines) + "\n"


def _empty_bulk_group_system(**params: int) -> System:
    return System(compile_kernel(parse(_empty_bulk_group(), "<empty-group>"), params))


def test_empty_bulk_group_is_drained_symbolically() -> None:
    """The commit's group marker is an environment agent of every warp that commits,
    stores or not: without it the encoding never drains the marker, the warp's
    ``producer_acquire`` (wait_group.read) blocks for ever, and BMC claimed a deadlock
    the concrete model rejects (UNKNOWN internal error); the explicit engine proves it."""
    system = _empty_bulk_group_system()
    assert ("bulk", 0, BULK_MARK) in system.static_env_items()
    e = check_explicit(system, reduce=False, timeout=NO_DEADLINE)
    assert e.status == "PROVEN", e.headline()
    v = check_bmc(system, depth=40, timeout=NO_DEADLINE, phase_budgets=False)  # the certificate
    assert v.status == "PROVEN", v.headline()
    # the unrolling alone (one subtile: producer_tail waits for the empty group)
    v = check_bmc(_empty_bulk_group_system(subtiles=1), depth=60, timeout=NO_DEADLINE,
                  certificate=False)
    assert v.status == "PROVEN", v.headline()


@pytest.mark.parametrize("name", ["textbook/pipeline_tma_store.pipe", "<empty-group>",
                                  "textbook/pipeline_tma_umma.pipe",
                                  "textbook/pipeline_cp_async.pipe", "bugs/x2-bug.pipe"])
def test_static_env_items_cover_the_reachable_ones(name: str) -> None:
    """Every environment agent that can act in a reachable state is one the symbolic
    engines know of (``System.static_env_items``): a missing one is a step BMC never
    takes -- a deadlock it claims, a state it never reaches."""
    system = (_empty_bulk_group_system() if name == "<empty-group>"
              else System(compile_file(EX / name)))
    static = set(system.static_env_items())
    for flat in _reachable(system, 3000):
        missing = set(system.env_items(flat)) - static
        assert not missing, missing


def test_safe_is_bounded_with_its_depth() -> None:
    system = System(compile_file(EX / "textbook/pipeline_tma_umma.pipe"))
    # the unrolling alone (the certificate proves this kernel at any depth)
    v = check_bmc(system, depth=8, timeout=NO_DEADLINE, certificate=False)
    assert v.status == "SAFE" and v.bounded and v.depth == 8
    assert "depth 8" in v.headline()


def test_timeout_is_unknown_with_depth() -> None:
    system = System(compile_file(EX / "textbook/pipeline_tma_async.pipe"))
    # the unrolling alone (with warp symmetry the certificate proves it within 3 s)
    v = check_bmc(system, depth=200, timeout=3.0, certificate=False)
    assert v.status == "UNKNOWN" and "timeout" in v.reason
    assert v.exit_code == 3
    # the reason states the levels finished, in words that fit the count
    d = v.depth
    assert (f"within {d} level{'s' * (d != 1)} of chained steps" in v.reason
            if d else "no level finished" in v.reason), v.reason


# --------------------------------------------------------------------------- liveness


def test_starvation_lasso() -> None:
    system = System(compile_file(EX / "liveness/persistent_consumer_stops_releasing.pipe"))
    v = check_bmc(system, depth=30, timeout=NO_DEADLINE)
    assert v.status == "VIOLATED" and v.prop == "starvation"
    tr = v.trace
    assert tr.loop_start is not None and 1 <= tr.loop_start <= len(tr)
    assert "producer" in tr.detail and tr.blocked
    # the loop closes: the stem and the whole run end in the same concrete state
    steps = v.stats.extra["steps"]
    assert len(steps) == len(tr)
    states, viol = ConcreteRunner(system).run(steps)
    assert viol is None and states[tr.loop_start - 1] == states[-1]
    loop = steps[tr.loop_start - 1:]
    starving = [ag.index for ag in system.agents if ag.role == "producer"]
    assert all(not (s[0] == "a" and s[1] in starving) for s in loop)


def test_no_starvation_when_every_warp_progresses() -> None:
    """The fixed persistent kernel: no lasso in which a warp waits for ever -- up to the
    depth with the unrolling alone, at any depth on the certified state graph."""
    system = System(compile_file(EX / "liveness/persistent_consumer_releases.pipe"))
    v = check_bmc(system, depth=24, timeout=NO_DEADLINE, certificate=False)
    assert v.status == "SAFE" and v.depth == 24
    v = check_bmc(system, depth=24, timeout=NO_DEADLINE)
    assert v.status == "PROVEN" and not v.bounded and v.stats.extra["starvation_free"]


# --------------------------------------------------------------------------- api / cli


def test_param_range_checks_every_value() -> None:
    for sym in (True, False):
        r = check_file(EX / "textbook/pipeline_async.pipe", {"k_tiles": range(1, 4)},
                       engine="bmc", depth=60, timeout=NO_DEADLINE, symbolic_params=sym)
        assert r.status == "PROVEN"
        assert r.params["k_tiles"] == "1..3"
        assert r.verdict.stats.extra["parameter_values_checked"] == 3
        assert r.verdict.stats.extra.get("symbolic_runs") == (1 if sym else None)


def test_smt2_export_is_a_faithful_query(tmp_path: Path) -> None:
    out = tmp_path / "q.smt2"
    r = check_file(EX / "bugs/x1-bug.pipe", engine="bmc", depth=10, timeout=NO_DEADLINE,
                   smt2=str(out))
    assert r.status == "VIOLATED"
    s = z3.Solver()
    s.from_file(str(out))
    assert s.check() == z3.sat
    out2 = tmp_path / "q2.smt2"
    r = check_file(EX / "textbook/pipeline_async.pipe", engine="bmc", depth=12, timeout=NO_DEADLINE,
                   smt2=str(out2))
    # after the stamp (proofs/recheck.py), the header says what the query is
    first = next(ln for ln in out2.read_text().splitlines()
                 if not ln.startswith("; pipeproof-"))
    assert r.status == "PROVEN" and "certificate" in first
    s = z3.Solver()
    s.from_file(str(out2))
    assert s.check() == z3.unsat


def test_cli_engine_bmc(capsys: Any) -> None:
    from pipeproof.cli import main

    rc = main(["check", str(EX / "bugs/x1-bug.pipe"), "--engine", "bmc", "--depth", "10",
               "--quiet"])
    assert rc == 1
    assert "VIOLATED" in capsys.readouterr().out


def test_first_violation_helper() -> None:
    from pipeproof.model.properties import Check

    assert first_violation([Check(False, "a", ""), Check(True, "b", "x")]) == ("b", "x")
    assert first_violation([Check(False, "a", "")]) is None


LIVENESS_CASES = ["liveness/persistent_consumer_releases.pipe",
                  "liveness/persistent_consumer_stops_releasing.pipe"]


@pytest.mark.parametrize("name", LIVENESS_CASES + ["<spin>"])
def test_engines_agree_on_starvation(name: str) -> None:
    """One definition of starvation in both engines: a fair loop in which a warp that has
    not exited never gets past its wait (blocked, or only polling with try_wait).  A
    persistent kernel whose warps all keep making progress is not starvation."""
    from pipeproof.api import check_source

    if name == "<spin>":
        import render_cases

        src = render_cases.STARVATION  # a consumer spinning on try_wait for ever
    else:
        src = (EX / name).read_text()
    e = check_source(src, engine="explicit")
    b = check_source(src, engine="bmc", depth=24, timeout=NO_DEADLINE)
    expect = "PROVEN" if name.endswith("releases.pipe") else "VIOLATED"
    assert e.status == expect, e.verdict.headline()
    if expect == "VIOLATED":
        assert (e.prop, b.status, b.prop) == ("starvation", "VIOLATED", "starvation")
        assert e.verdict.trace.loop_start is not None
    else:
        assert b.status in ("SAFE", "PROVEN"), b.verdict.headline()


def test_param_range_in_parallel_gives_the_one_by_one_answer() -> None:
    """--jobs 2 checks the values of a range in two processes; the answer (the first
    violating value in order, its counterexample) is the one-by-one order's."""
    f = EX / "bugs/p6-bug.pipe"
    got = [check_file(f, {"k_iters": range(1, 7)}, timeout=NO_DEADLINE, jobs=j,
                      symbolic_params=False) for j in (1, 2)]
    assert [(r.status, r.prop, r.params["k_iters"], len(r.verdict.trace)) for r in got] \
        == [(got[0].status, got[0].prop, 2, len(got[0].verdict.trace))] * 2
    assert got[0].status == "VIOLATED" and got[1].compiled is not None
    r = check_file(EX / "textbook/pipeline_async.pipe", {"k_tiles": range(1, 5)},
                   timeout=NO_DEADLINE, jobs=2, symbolic_params=False)
    assert r.status == "PROVEN" and r.params["k_tiles"] == "1..4"
    assert r.verdict.stats.extra["parameter_values_checked"] == 4
    assert r.verdict.stats.extra["parameter_jobs"] == 2


@pytest.mark.parametrize("name,pool,queue", [
    ("textbook/pipeline_tma_async_multicast.pipe", 11, 0),  # up to 11 deliveries in flight
    ("textbook/pipeline_tma_store.pipe", 0, 2),  # bulk stores
    ("textbook/cp_async_groups.pipe", 0, 4),
    ("textbook/pipeline_umma_async.pipe", 0, 1),  # tcgen05 commits
    ("kernels/k5_hopper_fmha.pipe", 2, 2)])
def test_concrete_decoder_inverts_encode_concrete(name: str, pool: int, queue: int) -> None:
    """``Encoding.concrete_decoder`` (the native engine's stubborn-set callback reads its
    states through it) gives back every concrete state from its keys: TMA deliveries in
    flight (the pool), bulk, cp.async and tcgen05 queues, locals -- on the states of
    seeded random runs, which go deeper than a breadth-first prefix."""
    import random

    system = System(compile_file(EX / name))
    runner = ConcreteRunner(system)
    rng = random.Random(7)
    states = []
    for _ in range(30):
        flat = runner.initial
        for _ in range(400):
            states.append(flat)
            nxt = [n for _s, n, viol in runner.successors(flat) if viol is None]
            if not nxt:
                break
            flat = rng.choice(nxt)
    sample = sample_ranges(system, max_states=300)
    queues = [q for ag in system.agents for q in (ag.qtc, ag.qcp, ag.qbs)]
    for q in queues:  # room for every queue the runs fill
        sample.qlen[q] = max([sample.qlen.get(q, 0)] + [len(f[q]) for f in states])
    enc = Encoding(system, sample=sample)
    decode = enc.concrete_decoder()
    # the runs reach what the case is here for: deliveries in flight, queued work
    assert max(len(f[system.pool]) for f in states) == pool
    assert max((len(f[q]) for f in states for q in queues), default=0) == queue
    for flat in states:
        vals, long = enc.encode_concrete(flat)
        assert not long
        assert tuple(decode(vals)) == flat
