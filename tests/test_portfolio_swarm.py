"""The default engine's random runs (checker/portfolio.py, ``_explicit_or_swarm``): where
the explicit engine runs with stubborn sets and the certificate gave up, random runs
(``checker/swarm.py``) take the second CPU ``swarm_after()`` seconds into the race (the
suite sets ``PIPEPROOF_SWARM_AFTER=inf``, tests/conftest.py; these tests set their own).

No assertion here depends on the machine's speed: where the random runs must win, the
explicit engine is replaced by one that never answers; where the explicit engine decides,
either outcome of the random runs (all runs done, or stopped) is accepted.
"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from pipeproof.checker import explicit, portfolio
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.portfolio import check_auto
from pipeproof.checker.verdict import UNKNOWN, Verdict

import generators as G
from helpers import NO_DEADLINE, undecided_certificate
from test_por import _is_counterexample

EX = Path(__file__).resolve().parent.parent / "examples"

pytestmark = [
    pytest.mark.usefixtures("no_quick_stage"),
    pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                       reason="the race needs fork (Linux)"),
]


def _no_certificate(monkeypatch: Any) -> None:
    undecided_certificate(monkeypatch)
    monkeypatch.setenv("PIPEPROOF_SWARM_AFTER", "0")


def _system(name: str) -> Any:
    s = G.build_system((EX / name).read_text())
    assert s.info.num_ctas > 1  # the explicit engine runs with stubborn sets
    return s


def test_random_runs_report_the_violation_a_stuck_search_has_not(monkeypatch) -> None:
    _no_certificate(monkeypatch)

    def stuck(system: Any, **kw: Any) -> Verdict:
        time.sleep(600)  # stopped by the race
        return Verdict(UNKNOWN, reason="(test)")

    monkeypatch.setattr(explicit, "check_explicit", stuck)
    system = _system("bugs/l1-bug.pipe")
    v = check_auto(system, depth=60, timeout=120.0, jobs=2)
    assert v.status == "VIOLATED" and v.stats.engine == "swarm"
    assert v.prop == "mask-outside-cluster"
    stages = {s["stage"]: s for s in v.stats.extra["auto"]}
    assert stages["explicit"]["reason"] == ("stopped when the random runs found a violation "
                                            "first")
    # a run of the model that ends in the violation reported, no shorter than a shortest
    assert _is_counterexample(system, v.trace.steps, v.prop)
    w = check_explicit(G.build_system((EX / "bugs/l1-bug.pipe").read_text()))
    assert w.status == "VIOLATED" and len(v.trace) >= len(w.trace)


def test_a_proof_is_the_explicit_engines_whatever_the_random_runs_did(monkeypatch) -> None:
    _no_certificate(monkeypatch)
    v = check_auto(_system("bugs/l1-fixed.pipe"), depth=60, timeout=NO_DEADLINE, jobs=2)
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    (swarm,) = [s for s in v.stats.extra["auto"] if s["stage"] == "swarm"]
    assert swarm["status"] == "UNKNOWN"
    assert ("no violation" in swarm["reason"]
            or swarm["reason"] == "stopped when the explicit engine decided first")


def test_no_random_runs_without_time_for_them(monkeypatch) -> None:
    _no_certificate(monkeypatch)
    monkeypatch.setattr(portfolio, "MIN_SWARM_SECONDS", 1e6)  # more than the timeout
    v = check_auto(_system("bugs/l1-fixed.pipe"), depth=60, timeout=600.0, jobs=2)
    assert v.status == "PROVEN"
    (swarm,) = [s for s in v.stats.extra["auto"] if s["stage"] == "swarm"]
    assert swarm["reason"].startswith("not run: less than")


def test_no_random_runs_beside_the_native_engine() -> None:
    # one CTA of few warps: no stubborn sets, the second CPU goes to the native engine
    s = G.build_system((EX / "bugs/p1-fixed.pipe").read_text())
    assert s.info.num_ctas == 1
    v = check_auto(s, depth=60, timeout=NO_DEADLINE, jobs=2)
    assert not [st for st in v.stats.extra.get("auto", []) if st["stage"] == "swarm"]


def test_an_unknown_points_at_other_random_runs() -> None:
    from pipeproof.api import CheckResult
    from pipeproof.checker.swarm import RUNS

    def text(swarm_reason: str) -> str:
        v = Verdict(UNKNOWN, reason="timeout after 60 s")
        v.stats.engine = "explicit"
        v.stats.extra["auto"] = [{"stage": "swarm", "status": UNKNOWN, "seconds": 50.0,
                                  "reason": swarm_reason}]
        return CheckResult(v, "k", "k.pipe", {}, (2, 1, 1), 8, "auto").render_text()

    hint = "looks for violations deeper"
    # every run --engine swarm would make with the same seed was made: another seed
    done = text(f"no violation or deadlock in {RUNS} random runs, the longest 900 steps; "
                "random runs prove nothing")
    assert hint in done and "seed=N, with a seed other than this check's" in done
    for reason in ("no violation or deadlock in 12 random runs (stopped by the timeout), "
                   "the longest 900 steps; random runs prove nothing",
                   "not run: less than 5 s left"):
        t = text(reason)
        assert hint in t and "seed" not in t


def test_another_seed_makes_other_runs(monkeypatch) -> None:
    _no_certificate(monkeypatch)
    seeds = []
    real = portfolio._swarm_job

    def job(system: Any, timeout: float, seed: int) -> Any:
        seeds.append(seed)
        return real(system, timeout, seed)

    monkeypatch.setattr(portfolio, "_swarm_job", job)
    check_auto(_system("bugs/l1-fixed.pipe"), depth=60, timeout=NO_DEADLINE, jobs=2, seed=7)
    assert seeds == [7]


def test_the_suites_setting_runs_none(monkeypatch) -> None:
    _no_certificate(monkeypatch)
    monkeypatch.setenv("PIPEPROOF_SWARM_AFTER", "inf")
    v = check_auto(_system("bugs/l1-fixed.pipe"), depth=60, timeout=NO_DEADLINE, jobs=2)
    assert v.status == "PROVEN"
    assert not [s for s in v.stats.extra["auto"] if s["stage"] == "swarm"]
