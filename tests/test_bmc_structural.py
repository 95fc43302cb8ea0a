"""Differential property test: BMC and the explicit engine agree on generated kernels
with empty bulk groups, zero-trip loops and deleted operations (issue 23 item 1).

These are the mutations that found the first disagreement (``pipeline_tma_store``
without its ``tma_store``: BMC claimed a deadlock the concrete model rejects).  The
kernels come from ``tests/generators.py`` (every pipeline class, small configurations);
``tests/structural_mutations.py`` changes their shape.  Both engines are bounded by
states and depth only: the explicit engine by ``MAX_STATES`` over the full interleaving
graph, BMC by ``DEPTH`` levels and, for its certificate's enumeration, ``MAX_STATES``
with ``phase_budgets=False``.  Their wall-clock limits are far beyond what any example
takes and only guard against a hang; a verdict never depends on them.

Cost (measured, ``bench/results/fuzz.md``): the unrolling without the certificate has a
fixed set-up of tens of seconds on kernels of a thousand states (level invariants, chain
dependence, then the solver), whatever the depth; the certificate decides the same kernels
in a second.  So the slow test unrolls only kernels of at most ``UNROLL_STATES`` reachable
states (the explicit engine's count, a property of the kernel, not of the machine); a
larger kernel drawn with ``certificate=False`` is checked with the certificate instead.

Agreement:

* a mutant that does not compile (a deleted ``make_pipeline_state``...) reaches no
  engine -- skipped;
* explicit PROVEN: BMC is PROVEN or SAFE, never VIOLATED;
* explicit VIOLATED ``p`` with a counterexample of ``n <= DEPTH`` steps: BMC is VIOLATED
  with ``n`` steps and the same property -- or, where several properties have
  counterexamples of that shortest length, one of them (the oracle of
  ``tests/test_reduction_hypothesis.py``);
* PROVEN against VIOLATED never, in either direction;
* UNKNOWN (either engine) only with a reason; an explicit UNKNOWN leaves nothing to
  compare against.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.errors import ConfigError

import generators as G
import structural_mutations as M
from test_reduction_hypothesis import shortest_violations

DEPTH = 20
MAX_STATES = 20_000
#: the unrolling (certificate off) runs only on kernels with at most this many reachable
#: states: its set-up grows with the kernel (about 10 s at 150 states, 20-80 s at 1,400
#: on the loaded 2-core machine), so a bound on states bounds the test's time
UNROLL_STATES = 300
#: a guard against a hang only: no example comes near it, and it never decides a verdict
GUARD_S = 1800.0

SETTINGS = dict(deadline=None, database=None, derandomize=True, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def _length(v: Any) -> Optional[int]:
    return len(v.trace) if v.trace is not None else None


@st.composite
def structural_mutants(draw: Any) -> tuple[str, str]:
    """(description, source) of a generated kernel with one or two structural
    mutations; the empty-groups mutation is drawn for every kernel that stores."""
    prog = draw(G.programs())
    src, done = prog.source, []
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, 50))
        kinds = [k for k in M.KINDS if M.apply(src, k, i) is not None]
        if not kinds:
            break
        kind = draw(st.sampled_from(kinds))
        src = M.apply(src, kind, i)
        done.append(f"{kind}[{i}]")
    return f"{prog.describe()} + {', '.join(done) or 'no mutation applies'}", src


def compare(what: str, source: str, certificate: bool, depth: int = DEPTH,
            unroll_states: Optional[int] = None) -> str:
    """Run both engines on ``source`` and assert they agree; returns a one-word
    outcome (for the test's statistics).  ``unroll_states``: with ``certificate=False``,
    a kernel of more reachable states than this is checked with the certificate."""
    try:
        system = G.build_system(source)
    except ConfigError:
        return "input-error"
    e = check_explicit(system, max_states=MAX_STATES, timeout=GUARD_S, reduce=False)
    assert e.status != "UNKNOWN" or e.reason, what
    if e.status == "UNKNOWN":
        return "explicit-unknown"
    if not certificate and unroll_states is not None and e.stats.states > unroll_states:
        certificate = True
        event("unrolling replaced by the certificate (kernel over UNROLL_STATES states)")
    b = check_bmc(G.build_system(source), depth=depth, timeout=GUARD_S, liveness=False,
                  confirm_timeout=GUARD_S, certificate=certificate,
                  max_states=MAX_STATES, phase_budgets=False)
    msg = (f"{what}\n  explicit: {e.headline()} len={_length(e)}\n  bmc (certificate "
           f"{'on' if certificate else 'off'}): {b.headline()} len={_length(b)} "
           f"{b.reason or ''}\n--- source ---\n{source}")
    assert not (e.status == "PROVEN" and b.status == "VIOLATED"), msg
    assert not (b.status == "PROVEN" and e.status == "VIOLATED"
                and e.prop != "starvation"), msg
    if b.status == "UNKNOWN":
        assert b.reason, msg
        # what BMC did establish still holds: no counterexample of up to b.depth steps
        assert not (e.status == "VIOLATED" and e.prop != "starvation"
                    and _length(e) <= b.depth), msg
        return "bmc-unknown"
    if e.status == "VIOLATED" and e.prop == "starvation":
        # liveness is off for BMC; its safety part must not invent a violation
        assert b.status != "VIOLATED", msg
        return "starvation"
    if e.status == "VIOLATED" and (_length(e) <= depth or b.status == "VIOLATED"):
        assert b.status == "VIOLATED", msg
        if b.stats.extra.get("shortest") is False:
            assert _length(b) >= _length(e), msg
            return "violated"
        assert _length(b) == _length(e), msg
        if b.prop != e.prop:
            oracle = shortest_violations(G.build_system(source))
            assert oracle is not None and oracle[0] == _length(e), msg
            assert b.prop in oracle[1] and e.prop in oracle[1], msg + f"\n  oracle {oracle}"
        return "violated"
    assert b.status in ("PROVEN", "SAFE"), msg
    return "agree-safe"


@settings(max_examples=10, **SETTINGS)
@given(structural_mutants())
def test_bmc_agrees_on_structural_mutants(m: tuple[str, str]) -> None:
    """The default run: BMC with its certificate (fast on these kernels); the unrolling
    alone takes up to half a minute per violated kernel and runs in the slow set (and on
    the first disagreement's shape below)."""
    event(compare(m[0], m[1], certificate=True, depth=12))


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(structural_mutants(), st.booleans())
def test_bmc_agrees_on_structural_mutants_long(m: tuple[str, str], certificate: bool) -> None:
    event(compare(m[0], m[1], certificate, unroll_states=UNROLL_STATES))


def test_the_mutations_do_what_they_say() -> None:
    src = ("@cute.kernel\n"
           "def k(n: int = 2):\n"
           "    launch(block=32)\n"
           "    with role(\"p\", warps=[0]):\n"
           "        for i in range(n):\n"
           "            h = pipe.producer_acquire(state)\n"
           "            tma_store(store, 0)\n"
           "            store.producer_commit()\n"
           "        for j in cutlass.range_constexpr(3):\n"
           "            pass\n")
    assert len(M.operations(src)) == 3  # launch(...) is not inside a role
    assert "            pass  # deleted: h = pipe.producer_acquire(state)\n" in M.delete_op(src, 0)
    assert "        for i in range(0):\n" in M.zero_trip(src, 0)
    assert "        for j in cutlass.range_constexpr(0):\n" in M.zero_trip(src, 1)
    e = M.empty_groups(src)
    assert "tma_store(" not in e.replace("# deleted: tma_store(", "")
    assert "store.producer_commit()" in e
    assert M.empty_groups(src.replace("tma_store(store, 0)", "pass")) is None


def test_the_first_disagreement_is_among_the_mutants() -> None:
    """The empty-groups mutation of a generated PipelineTmaStore kernel is the shape of
    the first disagreement; both engines agree on it (certificate and unrolling)."""
    cfg = G.Config(cls="PipelineTmaStore", stages=2, k_tiles=2, tiles=1)
    src = M.empty_groups(G.render(cfg))
    assert src is not None
    for certificate in (True, False):
        assert compare("empty groups", src, certificate) == "agree-safe"
