"""The native stubborn-set closure (``checker/native/porwalk.c`` ``pw_stubborn``) against
the Python one (``por.Closure.stubborn``): in every state of bounded searches with the
partial-order reduction, every seed the reducer tries gives the same answer (the same
stubborn set, or none) in C.  States it does not take (``SettleUnavailable``) are
counted and must not occur on these kernels.  Skipped without cffi or a C compiler."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import generators as G
from por_cases import ROOT, cases, others
from pipeproof.checker import por
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.native.build import unavailable
from pipeproof.checker.por.tables import build


pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

CASES = cases({"textbook/pipeline_tma_async_multicast.pipe": 300,
                "kernels/k3_blackwell_persistent_gemm_clc.pipe": 300,
                "kernels/k5_hopper_fmha.pipe": 300, "kernels/k1_hopper_persistent_gemm.pipe": 600,
                "textbook/named_barrier.pipe": 300, "bugs/p9-bug.pipe": 300})


def _compare(name: str, params: dict, states: int, monkeypatch: Any,
             source: Any = None) -> tuple[int, int]:
    from pipeproof.checker.native.porwalk import NativeClosure, SettleUnavailable

    orig = por.Closure.stubborn
    natives: dict = {}
    seen = [0, 0]

    def stubborn(self: Any, seed: tuple, best_size: Any) -> Any:
        r = orig(self, seed, best_size)
        nc = natives.get(id(self.red))
        if nc is None:
            nc = natives[id(self.red)] = (self.red, NativeClosure(build(self.fp)))
        try:
            got = nc[1].stubborn(self, seed, best_size)
        except SettleUnavailable:
            seen[1] += 1
            return r
        assert got == r, (name, self.pcs, seed, best_size)
        seen[0] += 1
        return r

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")  # the Python closure runs
        m.setattr(por.Closure, "stubborn", stubborn)
        if source is None:
            source = (ROOT / "examples" / name).read_text()
        system = G.build_system(source, params)
        check_explicit(system, max_states=states, timeout=600, por=True, confirm_timeout=0)
    return seen[0], seen[1]


@pytest.mark.parametrize("name,params,states", CASES)
def test_native_closure_equals_the_python_closure(name: str, params: dict, states: int,
                                                  monkeypatch: Any) -> None:
    done, skipped = _compare(name, params, states, monkeypatch)
    assert done > 20 and skipped == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", others(CASES))
def test_native_closure_equals_the_python_closure_everywhere(name: str,
                                                             monkeypatch: Any) -> None:
    done, skipped = _compare(name, {}, 300, monkeypatch)
    assert skipped == 0


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(prog=G.mutants(include_config_errors=False))
def test_native_closure_equals_the_python_closure_on_generated_kernels(prog: Any) -> None:
    """Generated pipelines (every class of ``generators``, clusters, named barriers)
    with one bug each: the states a bug leads to are the closure's rare cases."""
    from _pytest.monkeypatch import MonkeyPatch

    mp = MonkeyPatch()
    try:
        done, skipped = _compare(prog.describe(), {}, 400, mp, source=prog.source)
        assert skipped == 0
    finally:
        mp.undo()
