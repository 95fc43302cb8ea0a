"""The optional stubborn-set partial-order reduction (``check_explicit(por=True)``) gives
the same verdict, property and counterexample length as the full interleaving graph, on
random valid configurations, random single mutations and the stress configurations of
tests/test_reduction_hypothesis.py."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generators as G
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.errors import ConfigError
from test_reduction_hypothesis import SETTINGS, STRESS, _length, shortest_violations
from helpers import NO_DEADLINE


def _compare_por(source: str, what: str) -> None:
    try:
        full = check_explicit(G.build_system(source), max_states=300_000, timeout=NO_DEADLINE,
                              reduce=False)
    except ConfigError:
        return
    red = check_explicit(G.build_system(source), max_states=300_000, timeout=NO_DEADLINE,
                         reduce=True, por=True)
    msg = (f"{what}\n  full: {full.status} {full.prop} len={_length(full)}\n"
           f"  por:  {red.status} {red.prop} len={_length(red)}\n--- source ---\n{source}")
    assert full.status != "UNKNOWN", msg
    assert red.status == full.status, msg
    if full.status == "VIOLATED" and "starvation" not in (full.prop, red.prop) and \
            (red.prop, _length(red)) != (full.prop, _length(full)):
        oracle = shortest_violations(G.build_system(source))
        assert oracle is not None and _length(red) == oracle[0] and red.prop in oracle[1], \
            msg + f"\n  oracle {oracle}"


@settings(max_examples=15, **SETTINGS)
@given(G.programs())
def test_por_preserves_verdicts_of_valid_programs(prog: G.Program) -> None:
    _compare_por(prog.source, prog.describe())


@settings(max_examples=25, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_por_preserves_counterexamples_of_mutants(prog: G.Program) -> None:
    _compare_por(prog.source, prog.describe())


@st.composite
def _exit_races(draw: Any) -> G.Program:
    """A mutant that may touch a CTA after it exited (no producer_tail, a missing wait),
    or, where the configuration has none, its correct program."""
    cfg = draw(G.configs())
    muts = [(n, e) for n, e in G.mutations(cfg)
            if e.kind == "violated" and e.props & G.EXIT_RACE]
    if not muts:
        return G.Program(cfg, None, G.render(cfg), G.Expected("ok"))
    name, exp = draw(st.sampled_from(muts))
    return G.Program(cfg, name, G.render(cfg, name), exp)


@settings(max_examples=25, **SETTINGS)
@given(_exit_races())
def test_por_keeps_reads_of_exited_ctas(prog: G.Program) -> None:
    """Exits commute one way with the checks that read whether a CTA has exited
    (``por.EXIT_READS_COMMUTE``): an exit in the stubborn set may go before such a read
    outside it.  The reduced search still finds every such violation (and the same
    verdict, property and shortest length as the full graph)."""
    _compare_por(prog.source, prog.describe())


@pytest.mark.parametrize("cfg,mutation", STRESS,
                         ids=[f"{c.cls}-{m or 'ok'}" for c, m in STRESS])
def test_por_on_stress_configurations(cfg: Any, mutation: Optional[str]) -> None:
    _compare_por(G.render(cfg, mutation), f"{cfg.describe()} mutation={mutation}")


def test_unconfirmed_reduced_counterexample_is_valid_and_says_so() -> None:
    """When the search that confirms a shortest counterexample runs out of its budget,
    the reduced one -- with the steps it does not need dropped -- is reported, and the
    output says a shorter one may exist.  p9-bug: partial-order reduction finds 61 steps
    at once (55 before exits stopped conflicting with the reads of whether a CTA exited:
    ``por.EXIT_READS_COMMUTE``), dropping needless steps leaves 51 (the shortest, which the
    unreduced search needs 2.1 million states to confirm)."""
    from pathlib import Path

    from pipeproof.api import check_file
    from pipeproof.model.system import System

    f = Path(__file__).resolve().parent.parent / "examples" / "bugs" / "p9-bug.pipe"
    r = check_file(f, confirm_timeout=0.0, engine="explicit")
    v = r.verdict
    assert r.status == "VIOLATED" and r.prop == "read-before-full"
    assert v.stats.extra["shortest"] is False
    assert v.stats.extra["reduced_length"] == 61 and len(v.trace) == v.depth == 51
    assert "shorter counterexample may exist" in r.render_text()
    # the way out is named as the caller writes it: an argument in Python, a flag in the CLI
    from pipeproof.model.errors import command_line_wording
    assert "confirm_timeout" in r.render_text() and "--confirm" not in r.render_text()
    with command_line_wording():
        cli = r.render_text()
        assert "--no-confirm" in cli or "--confirm-timeout" in cli
    # the real-warp steps replay through the unreduced model, ending in the violation
    assert _is_counterexample(System(r.compiled), v.trace.steps, v.prop)
    # a confirmed one is not flagged
    small = Path(__file__).resolve().parent.parent / "examples" / "bugs" / "p3-bug.pipe"
    r3 = check_file(small, por=True, engine="explicit")
    assert r3.status == "VIOLATED"
    assert r3.verdict.stats.extra.get("shortest", True) is not False
    assert "shorter counterexample may exist" not in r3.render_text()


@settings(max_examples=25, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_unconfirmed_counterexamples_are_real_runs(prog: G.Program) -> None:
    """Without the confirming search (budget 0), the partial-order-reduced and shortened
    counterexample still has the full interleaving's verdict and property, is no shorter
    than its shortest one, and its steps replay through the unreduced model."""
    try:
        full = check_explicit(G.build_system(prog.source), max_states=300_000, timeout=NO_DEADLINE,
                              reduce=False)
    except ConfigError:
        return
    system = G.build_system(prog.source)
    red = check_explicit(system, max_states=300_000, timeout=NO_DEADLINE, reduce=True, por=True,
                         confirm_timeout=0.0)
    msg = f"{prog.describe()}\n  full {full.status} {full.prop} {_length(full)}\n" \
          f"  red {red.status} {red.prop} {_length(red)}\n{prog.source}"
    assert red.status == full.status, msg
    if full.status != "VIOLATED" or "starvation" in (full.prop, red.prop):
        return
    assert _length(red) >= _length(full), msg
    assert _is_counterexample(system, red.trace.steps, red.prop), msg


def _is_counterexample(system: Any, steps: list, prop: str) -> bool:
    """``steps`` (real warps) are a counterexample for ``prop`` in the unreduced model."""
    from pipeproof.checker.shorten import counterexample_end
    from pipeproof.checker.statespace import Explorer

    return counterexample_end(Explorer(system, symmetry=False), steps, prop) is not None


@settings(max_examples=25, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_bounded_claims_of_unfinished_searches_hold(prog: G.Program) -> None:
    """An unreduced search stopped early says how many steps every run was explored to;
    the shortest counterexample (if any) is longer than that."""
    import re

    try:
        full = check_explicit(G.build_system(prog.source), max_states=300_000, timeout=NO_DEADLINE,
                              reduce=False)
    except ConfigError:
        return
    for cap in (10, 40, 160):
        cut = check_explicit(G.build_system(prog.source), max_states=cap, timeout=NO_DEADLINE,
                             reduce=False)
        m = re.search(r"any run of up to (\d+) steps", cut.reason or "")
        if cut.status != "UNKNOWN" or m is None:
            continue
        if full.status == "VIOLATED" and full.prop != "starvation":
            assert _length(full) > int(m.group(1)), (prog.describe(), cut.reason,
                                                      _length(full))
