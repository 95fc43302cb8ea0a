"""The bundled examples under BMC give the explicit engine's verdict.

``DECIDED`` are the examples BMC settles within seconds on the 2-core machine
(bench/results/bmc.md): every one a certificate decides -- a proof, the shortest
counterexample from the certified states, a starvation lasso on the certified graph,
or (p9-fixed, about 12 s) a proof from the reduced certificate.  43 of the 49 benchmark
runs are decided; p9-bug (30 s) and the multicast example are in the slow run, the
kernel skeletons in tests/test_examples.py with the explicit engine.  Each must be decided, with the explicit engine's status,
property and -- both being shortest -- counterexample length (starvation lassos: the
property only; neither engine promises shortest lassos).  The slow run (``pytest -m
slow``) checks every other example with a 60 s budget: any verdict BMC gives must be
the explicit engine's, and UNKNOWN must be a timeout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.api import check_file, compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.model.system import System

from test_bugs import parse_header
from helpers import NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"

DECIDED = [
    "textbook/tma_store_fence", "textbook/pipeline_async", "textbook/pipeline_cp_async",
    "textbook/pipeline_tma_multi_consumers_async", "textbook/pipeline_tma_store",
    "textbook/pipeline_tma_umma", "textbook/pipeline_async_umma", "textbook/pipeline_order",
    "textbook/pipeline_tma_async", "textbook/named_barrier",
    "textbook/pipeline_umma_async", "textbook/flash_attention_extensions",
    "bugs/p4-fixed", "bugs/p5-fixed", "bugs/p7-fixed", "bugs/p8-fixed", "bugs/p10-fixed",
    "bugs/p1-fixed", "bugs/p2-fixed", "bugs/p6-fixed", "bugs/x1-fixed", "bugs/x2-fixed",
    "bugs/x3-fixed", "bugs/x1-bug", "bugs/x2-bug", "bugs/x3-bug", "bugs/p6-bug",
    "bugs/x4-bug", "bugs/x4-fixed", "bugs/x5-bug", "bugs/x5-fixed",
    "bugs/p2-bug", "bugs/p3-bug", "bugs/p1-bug",
    "bugs/p4-bug", "bugs/p5-bug", "bugs/p7-bug", "bugs/p8-bug", "bugs/p10-bug",
    "bugs/p3-fixed", "bugs/p9-fixed", "textbook/pipeline_clc_fetch_async",
    "textbook/tmem_allocator", "bugs/t1-bug", "bugs/t1-fixed", "bugs/t2-bug",
    "bugs/t2-fixed", "bugs/t3-bug", "bugs/t3-fixed", "bugs/t4-bug", "bugs/t4-fixed",
    "textbook/split_k_serial", "textbook/stream_k_fixup", "bugs/g1-bug", "bugs/g1-fixed",
    "bugs/g2-bug", "bugs/g2-fixed", "bugs/g3-bug", "bugs/g3-fixed", "bugs/g4-bug",
    "bugs/g4-fixed",
    "liveness/persistent_consumer_releases", "liveness/persistent_consumer_stops_releasing",
    "liveness/interchangeable_consumers_release",
    "liveness/interchangeable_consumers_stop_releasing",
]
OTHERS = sorted(str(p.relative_to(EX))[:-5] for d in ("textbook", "bugs", "liveness")
                for p in (EX / d).glob("*.pipe")
                if str(p.relative_to(EX))[:-5] not in DECIDED)


def _memory_model(name: str) -> str:
    return parse_header(EX / f"{name}.pipe").memory_model if name.startswith("bugs/") \
        else "cutlass"


def _both(name: str, timeout: float, phase_budgets: bool = True) -> tuple:
    """The explicit engine's verdict and BMC's.  ``phase_budgets=False``: BMC's phases
    are bounded by states, not by shares of the clock (``check_bmc``), so a busy machine
    cannot turn a decided example into UNKNOWN before ``timeout``; the enumeration stops
    at ``certificate.MAX_STATES`` (p9-fixed's 1.5 million classes: the reduced
    certificate proves it)."""
    mm = _memory_model(name)
    e = check_file(EX / f"{name}.pipe", engine="explicit", memory_model=mm).verdict
    if phase_budgets:
        b = check_file(EX / f"{name}.pipe", engine="bmc", timeout=timeout,
                       memory_model=mm).verdict
    else:
        b = check_bmc(System(compile_file(EX / f"{name}.pipe"), mm), timeout=timeout,
                      phase_budgets=False)
    return e, b


def _agree(name: str, e: object, b: object) -> None:
    msg = f"{name}: explicit {e.headline()}, bmc {b.headline()}"
    assert b.status == e.status and b.prop == e.prop, msg
    if b.status == "VIOLATED" and b.prop != "starvation" \
            and b.stats.extra.get("shortest") is not False \
            and e.stats.extra.get("shortest") is not False:
        assert len(b.trace) == len(e.trace), msg


@pytest.mark.parametrize("name", DECIDED)
def test_bmc_decides_like_the_explicit_engine(name: str) -> None:
    e, b = _both(name, NO_DEADLINE, phase_budgets=False)
    _agree(name, e, b)


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHERS)
def test_bmc_never_contradicts_the_explicit_engine(name: str) -> None:
    e, b = _both(name, 60.0)
    if b.status == "UNKNOWN":
        assert "timeout" in b.reason
        return
    _agree(name, e, b)
