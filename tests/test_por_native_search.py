"""The explicit engine with the native stubborn-set closure (the default where cffi and a
C compiler are present) against the same engine with the Python closure
(``PIPEPROOF_POR_CLOSURE=python``): the same verdict, states, transitions and depth,
bounded by states; and no state left to the Python closure on these examples.  Skipped
without cffi or a C compiler."""

from __future__ import annotations

from typing import Any

import pytest

import generators as G
from por_cases import ROOT, cases, others
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.native.build import unavailable


pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

CASES = cases({"textbook/pipeline_tma_async_multicast.pipe": 3000,
                "kernels/k1_hopper_persistent_gemm.pipe": 3000, "kernels/k5_hopper_fmha.pipe": 1500,
                "bugs/p9-bug.pipe": 3000, "textbook/named_barrier.pipe": 3000},
               multicast=("textbook/pipeline_tma_async_multicast.pipe", {}))


def _run(name: str, params: dict, states: int, closure: str, monkeypatch: Any) -> tuple:
    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", closure)
        system = G.build_system((ROOT / "examples" / name).read_text(), params)
        v = check_explicit(system, max_states=states, timeout=3600, por=True,
                           confirm_timeout=0)
    return (v.status, v.prop, v.stats.states, v.stats.transitions, v.depth), \
        v.stats.extra.get("por_native")


def _compare(name: str, params: dict, states: int, monkeypatch: Any) -> None:
    native, counts = _run(name, params, states, "native", monkeypatch)
    python, none = _run(name, params, states, "python", monkeypatch)
    assert none is None
    assert native == python
    assert counts is None or counts["fallbacks"] == 0


@pytest.mark.parametrize("name,params,states", CASES)
def test_native_closure_searches_what_the_python_closure_does(
        name: str, params: dict, states: int, monkeypatch: Any) -> None:
    _compare(name, params, states, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("name", others(CASES))
def test_native_closure_searches_what_the_python_closure_does_everywhere(
        name: str, monkeypatch: Any) -> None:
    _compare(name, {}, 20000, monkeypatch)


@pytest.mark.slow
def test_native_closure_decides_k3_as_the_python_closure_does(monkeypatch: Any) -> None:
    _compare("kernels/k3_blackwell_persistent_gemm_clc.pipe", {}, 100000, monkeypatch)


def test_a_warp_with_more_try_wait_tokens_than_the_tables_take_falls_back(
        monkeypatch: Any) -> None:
    """With no known segments tabled (``por_tables.MAX_TOKENS`` and ``MORE_TOKENS`` 0), a
    walk that needs one gives up: the Python closure answers those seeds (counted), and
    the search is the same as with the Python closure alone."""
    from pipeproof.checker.por import tables as por_tables

    name, states = "kernels/k3_blackwell_persistent_gemm_clc.pipe", 1000
    python, _ = _run(name, {}, states, "python", monkeypatch)
    monkeypatch.setattr(por_tables, "MAX_TOKENS", 0)
    monkeypatch.setattr(por_tables, "MORE_TOKENS", 0)
    native, counts = _run(name, {}, states, "native", monkeypatch)
    assert native == python
    assert counts is not None and counts["fallbacks"] > 0


@pytest.mark.parametrize("rows,tabled", [(1 << 14, True), (8, False)])
def test_warps_past_max_tokens_are_tabled_within_the_row_budget(
        rows: int, tabled: bool, monkeypatch: Any) -> None:
    """Past ``MAX_TOKENS`` (here 0) a warp's known segments are still tabled while its
    pcs times token masks fit ``KNOWN_ROWS`` (NVIDIA's lifted Blackwell CLC GEMM: warps of
    6 tokens): then no seed falls back and the search is the Python closure's; past the
    budget the seeds that need one fall back, with the same search."""
    from pipeproof.checker.por import tables as por_tables

    name, states = "kernels/k3_blackwell_persistent_gemm_clc.pipe", 1000
    python, _ = _run(name, {}, states, "python", monkeypatch)
    monkeypatch.setattr(por_tables, "MAX_TOKENS", 0)
    monkeypatch.setattr(por_tables, "KNOWN_ROWS", rows)
    native, counts = _run(name, {}, states, "native", monkeypatch)
    assert native == python
    assert counts is not None and (counts["fallbacks"] == 0) == tabled
