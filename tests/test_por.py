"""The optional stubborn-set partial-order reduction (``check_explicit(por=True)``) gives
the same verdict, property and counterexample length as the full interleaving graph, on
random valid configurations, random single mutations and the stress configurations of
tests/test_reduction_hypothesis.py."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import given, settings

import generators as G
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.errors import ConfigError
from test_reduction_hypothesis import SETTINGS, STRESS, _length, shortest_violations


def _compare_por(source: str, what: str) -> None:
    try:
        full = check_explicit(G.build_system(source), max_states=300_000, timeout=120,
                              reduce=False)
    except ConfigError:
        return
    red = check_explicit(G.build_system(source), max_states=300_000, timeout=120,
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


@pytest.mark.parametrize("cfg,mutation", STRESS,
                         ids=[f"{c.cls}-{m or 'ok'}" for c, m in STRESS])
def test_por_on_stress_configurations(cfg: Any, mutation: Optional[str]) -> None:
    _compare_por(G.render(cfg, mutation), f"{cfg.describe()} mutation={mutation}")


def test_unconfirmed_reduced_counterexample_is_valid_and_says_so() -> None:
    """When the search that confirms a shortest counterexample runs out of its budget,
    the reduced one is reported -- a real run, replayed -- and the output says a shorter
    one may exist (p9-bug: 55 reduced steps found at once; the 51-step one needs 2.1
    million unreduced states)."""
    from pathlib import Path

    from pipeproof.api import check_file

    f = Path(__file__).resolve().parent.parent / "examples" / "bugs" / "p9-bug.pipe"
    r = check_file(f, confirm_timeout=0.0)
    assert r.status == "VIOLATED" and r.prop == "read-before-full"
    assert r.verdict.stats.extra["shortest"] is False
    assert "shorter counterexample may exist" in r.render_text()
    assert "--confirm-timeout" in r.render_text()
    # the trace was replayed step by step through the model (Explorer.replay raises on
    # a step that is not enabled or a last step that does not violate)
    assert len(r.verdict.trace) == r.verdict.depth >= 51
    # a confirmed one is flagged so
    small = Path(__file__).resolve().parent.parent / "examples" / "bugs" / "p3-bug.pipe"
    r3 = check_file(small, por=True)
    assert r3.status == "VIOLATED"
    assert r3.verdict.stats.extra.get("shortest", True) is not False
    assert "shorter counterexample may exist" not in r3.render_text()
