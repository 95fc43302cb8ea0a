"""The default engine's quick stage (``checker/portfolio.py`` ``quick_search``): the
explicit engine in the calling process, bounded in states, before any other stage
starts.  Where it finishes, its answer is the one the later stages give (status,
property, counterexample length); where it does not, they run as without it.  The
tests bound it by states only (``QUICK_SECONDS`` raised), so that which stage decides
never depends on the machine's speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pipeproof.api import check_file, compile_file
from pipeproof.checker import portfolio
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.portfolio import check_auto
from pipeproof.model.errors import ConfigError
from pipeproof.model.system import System

import generators as G

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(autouse=True)
def _states_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(portfolio, "QUICK_SECONDS", 600.0)


def _system(rel: str) -> System:
    return System(compile_file(EX / rel))


@pytest.mark.parametrize("rel", ["textbook/pipeline_async.pipe", "bugs/p2-bug.pipe",
                                 "bugs/p1-bug.pipe"])
def test_quick_stage_answers_as_the_certificate_does(rel: str) -> None:
    q = check_auto(_system(rel), depth=60, timeout=120, jobs=1, quick_states=20_000)
    c = check_auto(_system(rel), depth=60, timeout=120, jobs=1, quick_states=0)
    assert q.stats.engine == "explicit" and q.stats.extra["quick"] is True
    assert q.stats.extra["auto"] == [] and q.stats.extra["auto_jobs"] == 1
    assert c.stats.engine == "bmc"  # the certificate decides these without the quick stage
    assert (q.status, q.prop, q.bounded) == (c.status, c.prop, c.bounded)
    if q.status == "VIOLATED":
        assert q.depth == c.depth and len(q.trace) == len(c.trace)
        assert q.stats.extra.get("shortest") is not False


def test_quick_stage_out_of_states_hands_over_to_the_certificate() -> None:
    v = check_auto(_system("textbook/pipeline_async.pipe"), depth=60, timeout=120, jobs=1,
                   quick_states=5)
    assert v.status == "PROVEN" and v.stats.engine == "bmc"
    (stage,) = v.stats.extra["auto"]
    assert stage["stage"] == "explicit (quick)" and stage["status"] == "UNKNOWN"
    assert "state" in stage["reason"]


def test_unconfirmed_counterexample_is_not_final(monkeypatch: pytest.MonkeyPatch) -> None:
    """A counterexample found with the partial-order reduction whose confirmation did not
    finish may not be a shortest one: the later stages decide."""
    from pipeproof.checker import explicit

    def unconfirmed(system: System, **kw: Any) -> Any:
        v = check_explicit(system, **kw)
        v.stats.extra["shortest"] = False
        return v

    monkeypatch.setattr(explicit, "check_explicit", unconfirmed)
    system = _system("bugs/p2-bug.pipe")
    final, q = portfolio.quick_search(system, 20_000, 60.0, 120.0, dict(
        max_states=3_000_000, progress=None, reduce=True, por=None, on_found=None))
    assert final is None and q.status == "VIOLATED"


def test_no_quick_stage_beside_stubborn_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2x2 cluster: the explicit engine runs with stubborn sets, whose preparation is
    not bounded by the quick stage's CPU budget, so there is no quick stage."""
    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("quick stage started")

    monkeypatch.setattr(portfolio, "quick_search", never)
    system = _system("textbook/pipeline_tma_async_multicast.pipe")
    assert portfolio._explicit_por(system, None)
    v = check_auto(system, depth=60, timeout=3, max_states=5, jobs=1, quick_states=50_000)
    assert v.status == "UNKNOWN" and "quick" not in v.stats.extra
    assert v.stats.extra["auto"][0]["stage"] == "bmc certificate"


def test_environment_turns_the_quick_stage_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPEPROOF_QUICK_STATES", "0")
    r = check_file(EX / "textbook/pipeline_async.pipe", jobs=1)
    assert r.verdict.stats.engine == "bmc" and "quick" not in r.verdict.stats.extra
    monkeypatch.delenv("PIPEPROOF_QUICK_STATES")
    assert portfolio.quick_states_default() == portfolio.QUICK_STATES
    r = check_file(EX / "textbook/pipeline_async.pipe", jobs=2)
    assert r.verdict.stats.engine == "explicit" and r.verdict.stats.extra["quick"] is True
    assert r.status == "PROVEN"


SETTINGS = dict(deadline=None, print_blob=True, max_examples=15,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@settings(**SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_quick_stage_agrees_with_the_unreduced_search(prog: G.Program) -> None:
    """Whichever stage decides, the verdict, property and counterexample length are the
    unreduced explicit search's (as ``test_portfolio.test_auto_agrees_with_the_explicit_
    engine`` checks without the quick stage)."""
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    e = check_explicit(system, max_states=200_000, timeout=120, reduce=False)
    if e.status == "UNKNOWN":
        return
    a = check_auto(G.build_system(prog.source), depth=60, timeout=240, confirm_timeout=120,
                   quick_states=20_000)
    msg = f"{prog.describe()}\n explicit {e.headline()}\n auto {a.headline()} {a.reason}"
    assert (a.status, a.prop) == (e.status, e.prop), msg
    if e.status == "VIOLATED" and e.prop != "starvation":
        assert len(a.trace) == len(e.trace), msg
