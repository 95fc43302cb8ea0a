"""The native settle analysis (``checker/native/porwalk.c`` ``pw_settle``) against the
Python closure's (``por.Closure._settle_futures``): in every state of bounded searches with
the partial-order reduction, every settle analysis the closure runs is run again in C on
the same state, T and units outside T, and keeps the same mbarrier waits blocked and
gives the same futures (footprint, arrival counts, barrier operations) and the same
unbounded barriers.  States it does not take (``SettleUnavailable``) are counted and
must be rare.  Skipped without cffi or a C compiler."""

from __future__ import annotations

from typing import Any

import pytest

import generators as G
from por_cases import ROOT, cases, others
from pipeproof.checker import por
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.native.build import unavailable
from pipeproof.checker.por.tables import build


pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

CASES = cases({"textbook/pipeline_tma_async_multicast.pipe": 250,
                "kernels/k3_blackwell_persistent_gemm_clc.pipe": 200,
                "kernels/k5_hopper_fmha.pipe": 150, "kernels/k1_hopper_persistent_gemm.pipe": 600,
                "textbook/named_barrier.pipe": 200, "bugs/p9-bug.pipe": 200})


def _ops(ops: Any) -> Any:
    # the same operations; Python's walk memo is keyed by the set of pcs entered, so
    # its order within a future is that of the first walk over the set
    return None if ops is None else sorted(ops, key=repr)


def _compare(name: str, params: dict, states: int, monkeypatch: Any) -> tuple[int, int]:
    from pipeproof.checker.native.porwalk import NativeSettle, SettleUnavailable

    orig = por.Closure._settle_futures
    natives: dict = {}
    seen = [0, 0]

    def settle(self: Any, others: list, T: set) -> tuple:
        futures, ops_by_bar, unbounded = r = orig(self, others, T)
        blocked = set(self._settle_blocked)
        blocked2 = set(self._settle_blocked2)
        ns = natives.get(id(self.red))
        if ns is None:
            ns = natives[id(self.red)] = (self.red, NativeSettle(build(self.fp)))
        try:
            nb, nf, nu = ns[1].settle(self, others, T)
        except SettleUnavailable:
            seen[1] += 1
            return r
        where = (name, self.pcs, sorted(map(repr, T)))
        assert nb == blocked, where
        assert ns[1].blocked2 == blocked2, where
        assert nu == unbounded, where
        assert set(nf) == set(futures), where
        for v in others:
            f = futures[v]
            assert nf[v][0] == f[0], (where, v)
            assert nf[v][1] == f[1], (where, v)
            assert _ops(nf[v][2]) == _ops(f[2]), (where, v)
        seen[0] += 1
        return r

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")  # the Python closure runs
        m.setattr(por.Closure, "_settle_futures", settle)
        system = G.build_system((ROOT / "examples" / name).read_text(), params)
        check_explicit(system, max_states=states, timeout=600, por=True, confirm_timeout=0)
    return seen[0], seen[1]


@pytest.mark.parametrize("name,params,states", CASES)
def test_native_settle_equals_the_python_settle(name: str, params: dict, states: int,
                                                monkeypatch: Any) -> None:
    done, skipped = _compare(name, params, states, monkeypatch)
    assert done > 20 and skipped == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", others(CASES))
def test_native_settle_equals_the_python_settle_everywhere(name: str, monkeypatch: Any) -> None:
    done, skipped = _compare(name, {}, 300, monkeypatch)
    assert skipped == 0
