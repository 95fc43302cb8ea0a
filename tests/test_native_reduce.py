"""The native engine's safe-step reduction (``checker/native/search.py``, ``safe_steps``)
against the explicit engine with its own reductions.

Which safe points z3 proves within its time may vary, so state counts are not
compared; verdicts, properties and (with the confirming search unbounded in time)
counterexample lengths are, and every counterexample is replayed on the concrete
model.  Searches are bounded by states; a reduced search only follows real steps, so it
reaches a subset of the states the unreduced one does."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("cffi", reason="the native engine needs cffi (pip install .[native])")
if not any(shutil.which(c) for c in ("cc", "gcc")):  # pragma: no cover
    pytest.skip("the native engine needs a C compiler", allow_module_level=True)

from generators import build_system, mutants, programs  # noqa: E402

from pipeproof.checker.concrete import ConcreteRunner  # noqa: E402
from pipeproof.checker.explicit import check_explicit  # noqa: E402
from pipeproof.checker.native import search  # noqa: E402
from pipeproof.checker.native.search import check_native  # noqa: E402
from pipeproof.model.errors import ConfigError, Unsupported  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["examples/textbook/pipeline_async.pipe", "examples/bugs/p1-bug.pipe",
         "examples/bugs/x5-fixed.pipe", "examples/bugs/x2-bug.pipe",
         "examples/textbook/pipeline_tma_store.pipe"]
MAX_STATES = 20_000


@pytest.fixture(autouse=True)
def _confirm_by_states(monkeypatch: Any) -> None:
    """The search for a shorter counterexample bounded by states only."""
    monkeypatch.setattr(search, "CONFIRM_SECONDS", 1e6)


def _same_verdict(system: Any, max_states: int = MAX_STATES) -> Any:
    v = check_native(system, max_states=max_states, timeout=1e6, symmetry=True,
                     safe_steps=True)
    w = check_explicit(system, max_states=max_states, timeout=1e6, confirm_timeout=1e6)
    u = check_native(system, max_states=max_states, timeout=1e6, symmetry=True)
    if "UNKNOWN" in (u.status, w.status):
        return v  # one of the searches stopped at the state limit: nothing to compare
    assert (v.status, v.prop) == (w.status, w.prop) == (u.status, u.prop), \
        (v.reason, w.reason, u.reason)
    assert v.stats.states <= u.stats.states
    if v.status == "VIOLATED":
        assert v.depth == w.depth == u.depth  # confirmed shortest by the unreduced search
        _states, viol = ConcreteRunner(system).run(v.trace.steps)
        assert (viol[0] if viol else "deadlock") == v.prop
    return v


@pytest.mark.parametrize("path", QUICK)
def test_safe_steps_keep_the_verdict(path: str) -> None:
    _same_verdict(build_system((ROOT / path).read_text()))


def test_safe_steps_reduce_and_are_reported() -> None:
    sysm = build_system((ROOT / "examples/bugs/x5-fixed.pipe").read_text())
    v = _same_verdict(sysm)
    assert v.status == "PROVEN" and v.stats.extra["safe_points"] >= 1
    assert "safe_steps" in v.stats.extra


def test_a_stopped_reduced_search_claims_nothing_about_bounded_runs() -> None:
    """Unreduced, a search stopped by the state limit says no run of up to N steps has
    a problem; reduced, it has not explored every run, so it must not say so."""
    sysm = build_system((ROOT / "examples/bugs/x5-fixed.pipe").read_text())
    v = check_native(sysm, max_states=60, timeout=1e6, symmetry=True, safe_steps=True)
    u = check_native(sysm, max_states=60, timeout=1e6, symmetry=True)
    assert v.status == u.status == "UNKNOWN"
    assert "every one explored" in u.reason and "every one explored" not in v.reason


def test_no_safe_steps_where_a_warp_loops_for_ever() -> None:
    """Starvation is not searched under the reduction: off for cyclic kernels."""
    path = "examples/liveness/persistent_consumer_stops_releasing.pipe"
    sysm = build_system((ROOT / path).read_text())
    v = check_native(sysm, max_states=MAX_STATES, timeout=1e6, symmetry=True,
                     safe_steps=True)
    assert v.status == "VIOLATED" and v.prop == "starvation"
    assert "safe_points" not in v.stats.extra


def _built(prog: Any) -> Any:
    try:
        return build_system(prog.source)
    except (ConfigError, Unsupported):  # the compiler's own refusals only
        return None


@pytest.mark.slow
@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_safe_steps_keep_the_verdict_on_generated_kernels(prog: Any) -> None:
    _same_verdict(build_system(prog.source), max_states=5_000)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(mutants())
def test_safe_steps_keep_the_verdict_on_generated_bugs(prog: Any) -> None:
    sysm = _built(prog)
    if sysm is not None:
        _same_verdict(sysm, max_states=5_000)
