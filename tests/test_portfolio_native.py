"""The native stage of the default engine (``checker/portfolio.py``): racing, the CPU
BMC's certificate leaves when it gives up goes to the native engine, alongside the
explicit engine; the first to decide wins, and without cffi or a C compiler there is no
native stage and the answer says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeproof.checker import portfolio
from pipeproof.checker.portfolio import check_auto

import generators as G
from helpers import NO_DEADLINE, undecided_certificate

EX = Path(__file__).resolve().parent.parent / "examples"
#: these tests are about the stages after the quick one (tests/test_portfolio_quick.py)
pytestmark = pytest.mark.usefixtures("no_quick_stage")
_SMALL = (EX / "textbook/pipeline_async.pipe").read_text()
_BUG = (EX / "bugs/p1-bug.pipe").read_text()


def _slow_undecided_explicit(monkeypatch: Any, seconds: float) -> None:
    import time

    from pipeproof.checker import explicit
    from pipeproof.checker.verdict import UNKNOWN, Verdict

    def slow(system: Any, **kw: Any) -> Verdict:
        time.sleep(seconds)
        return Verdict(UNKNOWN, reason="state limit (test)")

    monkeypatch.setattr(explicit, "check_explicit", slow)


def _needs_native() -> None:
    why = portfolio.native_unavailable()
    if why:
        pytest.skip(why)


@pytest.mark.parametrize("source,status", [(_SMALL, "PROVEN"), (_BUG, "VIOLATED")])
def test_native_decides_where_the_explicit_engine_does_not(monkeypatch: Any, source: str,
                                                           status: str) -> None:
    """The explicit engine is held back (undecided after 60 s); the native engine's
    verdict is the answer, equal to ``--engine native`` alone, and the explicit stage
    says it was stopped."""
    from pipeproof.checker.native.search import check_native

    _needs_native()
    undecided_certificate(monkeypatch)
    _slow_undecided_explicit(monkeypatch, 60.0)
    system = G.build_system(source)
    v = check_auto(system, depth=60, timeout=NO_DEADLINE, jobs=2)
    alone = check_native(G.build_system(source), timeout=NO_DEADLINE, symmetry=True)
    assert (v.status, v.prop, v.depth, v.stats.states) == \
        (alone.status, alone.prop, alone.depth, alone.stats.states)
    assert v.status == status and v.stats.engine == "native"
    stages = v.stats.extra["auto"]
    assert [s["stage"] for s in stages] == ["bmc certificate", "explicit"]
    assert stages[1]["reason"] == "stopped when the native engine decided first"
    if status == "VIOLATED":
        assert v.trace is not None and len(v.trace.steps) == v.depth


def test_explicit_engine_still_answers_beside_the_native_stage(monkeypatch: Any) -> None:
    """Both run; whichever decides first, the verdict is the one the explicit engine
    gives alone (and the stage that lost, if it answered, is UNKNOWN)."""
    from pipeproof.checker.explicit import check_explicit

    _needs_native()
    undecided_certificate(monkeypatch)
    v = check_auto(G.build_system(_BUG), depth=60, timeout=NO_DEADLINE, jobs=2)
    alone = check_explicit(G.build_system(_BUG), timeout=NO_DEADLINE)
    assert (v.status, v.prop, v.depth) == (alone.status, alone.prop, alone.depth)
    assert v.stats.engine in ("explicit", "native")
    assert all(s["status"] == "UNKNOWN" for s in v.stats.extra["auto"])


def test_without_native_support_the_answer_says_why(monkeypatch: Any) -> None:
    import time

    from pipeproof.checker import explicit

    undecided_certificate(monkeypatch)
    real = explicit.check_explicit

    def late(system: Any, **kw: Any) -> Any:  # answers after the certificate gave up
        time.sleep(3.0)
        return real(system, **kw)

    monkeypatch.setattr(explicit, "check_explicit", late)
    monkeypatch.setattr(portfolio, "native_unavailable",
                        lambda: "the native engine needs cffi (test)")
    v = check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE, jobs=2)
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    stages = v.stats.extra["auto"]
    assert [s["stage"] for s in stages] == ["bmc certificate", "native"]
    assert stages[1]["reason"] == "not run: the native engine needs cffi (test)"


def test_sequential_auto_has_no_native_stage(monkeypatch: Any) -> None:
    """``jobs=1`` keeps the one-after-the-other order of the engines it always had."""
    undecided_certificate(monkeypatch)
    v = check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE, jobs=1)
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    assert [s["stage"] for s in v.stats.extra["auto"]] == ["bmc certificate"]


def test_no_native_stage_beside_stubborn_sets(monkeypatch: Any) -> None:
    """A 2x2 cluster: the explicit engine runs with stubborn sets, and no native search
    takes CPU from it."""
    undecided_certificate(monkeypatch)
    src = (EX / "textbook/pipeline_tma_async_multicast.pipe").read_text()
    v = check_auto(G.build_system(src), depth=60, timeout=NO_DEADLINE, jobs=2)
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    assert [s["stage"] for s in v.stats.extra["auto"]] == ["bmc certificate"]
