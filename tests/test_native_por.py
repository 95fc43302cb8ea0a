"""The native engine with stubborn sets (``check_native(por=True)``,
``checker/native/por.py``) against the explicit engine with its stubborn sets.

Both ask the same ``Reducer`` in the same states, over the same steps in the same
order, so with the warp symmetry off on both sides (its representatives differ: the
explicit engine sorts warps by component number, the native one by key values) they
expand the same states: equal state counts and depths on a proof, equal reduced
searches and equal confirmed counterexample lengths on a bug.  With the warp symmetry
on, verdicts and counterexample lengths are compared.  Searches are bounded by states;
the confirming searches by states only."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import generators as G
from por_cases import ALL, ROOT
from pipeproof.checker import statespace
from pipeproof.checker.concrete import ConcreteRunner
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.native import search
from pipeproof.checker.native.build import unavailable
from pipeproof.checker.native.por import NativeStubborn
from pipeproof.model.errors import ConfigError, Unsupported
from pipeproof.model.program import is_acyclic

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

QUICK = ["textbook/pipeline_tma_async_multicast.pipe", "textbook/named_barrier.pipe",
         "bugs/p6-bug.pipe", "bugs/x2-bug.pipe", "bugs/g4-bug.pipe", "bugs/t2-bug.pipe"]
#: the bundled examples but those whose point is starvation (where stubborn sets are
#: off: a warp loops for ever; the other searches are compared too, unreduced)
SEARCHED = [n for n in ALL if not n.startswith("liveness/")]
MAX_STATES = 20_000


@pytest.fixture(autouse=True)
def _confirm_by_states(monkeypatch: Any) -> None:
    monkeypatch.setattr(search, "CONFIRM_SECONDS", 1e6)


def _no_warp_symmetry(monkeypatch: Any) -> None:
    monkeypatch.setattr(statespace, "symmetric_groups", lambda system: [])
    monkeypatch.setattr(search, "symmetric_groups", lambda system: [])


def _compare(system: Any, max_states: int, exact: bool) -> Any:
    w = check_explicit(system, max_states=max_states, timeout=1e6, por=True,
                       confirm_timeout=1e6)
    v = search.check_native(system, max_states=max_states, timeout=1e6, symmetry=True,
                            por=True)
    if "UNKNOWN" in (v.status, w.status):
        # a state bound: the same searches stop at the same state
        if exact and v.status == w.status == "UNKNOWN":
            assert v.stats.states == w.stats.states
        return v
    assert (v.status, v.prop) == (w.status, w.prop), (v.reason, w.reason)
    # stubborn sets where every warp ends (in both engines)
    assert ("por" in v.stats.extra) == _acyclic(system)
    if v.status == "PROVEN":
        if exact:
            assert (v.stats.states, v.depth) == (w.stats.states, w.depth)
    else:
        assert v.depth == w.depth  # both confirmed shortest by an unreduced search
        if exact and "reduced_states" in w.stats.extra:
            assert v.stats.extra["reduced_states"] == w.stats.extra["reduced_states"]
        _states, viol = ConcreteRunner(system).run(v.trace.steps)
        assert (viol[0] if viol else "deadlock") == v.prop
    return v


def _acyclic(system: Any) -> bool:
    return all(is_acyclic(ag.program.code) for ag in system.agents)


def _example(name: str, params: dict | None = None) -> Any:
    return G.build_system((ROOT / "examples" / name).read_text(), params or {})


@pytest.mark.parametrize("name", QUICK)
def test_native_stubborn_sets_search_what_the_explicit_engine_does(
        name: str, monkeypatch: Any) -> None:
    _no_warp_symmetry(monkeypatch)
    _compare(_example(name), MAX_STATES, exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SEARCHED if n not in QUICK])
def test_native_stubborn_sets_search_what_the_explicit_engine_does_everywhere(
        name: str, monkeypatch: Any) -> None:
    _no_warp_symmetry(monkeypatch)
    _compare(_example(name), MAX_STATES, exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", SEARCHED)
def test_native_stubborn_sets_with_warp_symmetry_keep_the_verdict(name: str) -> None:
    _compare(_example(name), MAX_STATES, exact=False)


def test_stubborn_sets_reduce_the_native_search() -> None:
    """Not a reduction that does nothing: the 4-stage 2x2 multicast example, decided."""
    system = _example("textbook/pipeline_tma_async_multicast.pipe",
                      {"stages": 4, "k_tiles": 8})
    v = search.check_native(system, max_states=200_000, timeout=1e6, symmetry=True,
                            por=True)
    u = search.check_native(system, max_states=v.stats.states * 4, timeout=1e6,
                            symmetry=True)
    assert v.status == "PROVEN"
    assert u.status == "UNKNOWN" or u.stats.states > 4 * v.stats.states
    por = v.stats.extra["por"]
    assert 0 < por["states"] <= v.stats.states and por.get("fallbacks", 0) == 0


def test_restarts_with_a_wider_encoding_keep_the_reduced_search(monkeypatch: Any) -> None:
    """A sample too small for the encoding: the overflowing step is found again under
    the stubborn sets' stored states (dead locals forgotten, warps sorted), the search
    restarts wider, and ends where the explicit engine does."""
    _no_warp_symmetry(monkeypatch)
    monkeypatch.setattr(search, "SAMPLE_STATES", 3)
    system = _example("textbook/pipeline_tma_async_multicast.pipe")
    v = _compare(system, MAX_STATES, exact=True)
    assert v.stats.extra["restarts"] >= 1


def test_a_failing_reduction_is_unknown_not_a_verdict(monkeypatch: Any) -> None:
    """An exception in the callback cannot pass through C: the search stops, UNKNOWN."""
    def broken(self: Any, x: Any) -> list:
        raise RuntimeError("planted")

    monkeypatch.setattr(NativeStubborn, "decode", broken)
    system = _example("textbook/pipeline_tma_async_multicast.pipe")
    v = search.check_native(system, max_states=MAX_STATES, timeout=1e6, symmetry=True,
                            por=True)
    assert v.status == "UNKNOWN" and "planted" in v.reason


def test_no_stubborn_sets_where_a_warp_loops_for_ever() -> None:
    system = _example("liveness/persistent_consumer_stops_releasing.pipe")
    assert not _acyclic(system)
    v = search.check_native(system, max_states=MAX_STATES, timeout=1e6, symmetry=True,
                            por=True)
    assert v.status == "VIOLATED" and v.prop == "starvation"
    assert "por" not in v.stats.extra


def _built(prog: Any) -> Any:
    try:
        return G.build_system(prog.source)
    except (ConfigError, Unsupported):  # the compiler's own refusals only
        return None


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(G.mutants())
def test_native_stubborn_sets_on_generated_bugs(prog: Any) -> None:
    system = _built(prog)
    if system is None or not _acyclic(system):
        return
    with pytest.MonkeyPatch.context() as m:
        _no_warp_symmetry(m)
        _compare(system, 3_000, exact=True)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(G.programs())
def test_native_stubborn_sets_on_generated_kernels(prog: Any) -> None:
    system = G.build_system(prog.source)
    if not _acyclic(system):
        return
    with pytest.MonkeyPatch.context() as m:
        _no_warp_symmetry(m)
        _compare(system, 3_000, exact=True)
