"""The native walk of a warp's future (``checker/native/porwalk.c``) against the Python
closure's (``por.Closure._future``): in every state of bounded searches with the
partial-order reduction, every future of a warp the closure computes is walked again
in C with the same answers to "does this blocking instruction stay blocked while T is
frozen?" (``Closure._blocked_frozen``; for a try_wait: does its phase stay incomplete) and
the same try_wait tokens known to be 0, and gives the same footprint, arrival counts,
barrier operations and loop flag.  Skipped without cffi or a C compiler."""

from __future__ import annotations

from typing import Any

import pytest

import generators as G
from por_cases import ROOT, cases, others
from pipeproof.checker import por
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.native.build import unavailable
from pipeproof.checker.por.tables import build
from pipeproof.model.system import DONE


pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

CASES = cases({"textbook/pipeline_tma_async_multicast.pipe": 250,
                "kernels/k3_blackwell_persistent_gemm_clc.pipe": 200,
                "kernels/k5_hopper_fmha.pipe": 150, "kernels/k1_hopper_persistent_gemm.pipe": 100,
                "textbook/named_barrier.pipe": 200, "bugs/p9-bug.pipe": 200})


def _compare(name: str, params: dict, states: int, monkeypatch: Any) -> int:
    from pipeproof.checker.native.porwalk import NativeWalk

    orig = por.Closure._future
    walkers: dict = {}
    checked = [0]

    def future(self: Any, u: tuple, T: set) -> tuple:
        r = orig(self, u, T)
        if u[0] != "a" or self.pcs[u[1]] == DONE:
            return r
        a = u[1]
        nw = walkers.get(id(self.red))
        if nw is None:
            nw = walkers[id(self.red)] = (self.red, NativeWalk(build(self.fp)))
        nw = nw[1]
        frozen_cl = self._cluster_frozen(T)
        saved, self._stopped_by = self._stopped_by, None  # answer without collecting
        blocked = {pc: self._blocked_frozen(a, pc, T)
                   for pc, b in enumerate(self.fp.blocking[a]) if b}
        self._stopped_by = saved
        # the try_wait tokens that are 0 now: the walk takes the failing side of a
        # branch on them (``Closure._future``)
        loc = self.sys.agents[a].locals
        zero = {x for x in self.fp.tokens[a] if self.get(loc[x]) == 0}
        got = nw.walk(a, self.pcs[a], frozen_cl, blocked, zero)
        assert got is not None
        fp, counts, ops, _looped = got
        assert fp == r[0], (name, a, self.pcs[a])
        assert counts == r[1], (name, a, self.pcs[a])
        # the same operations; Python's walk memo is keyed by the set of pcs entered,
        # so its order is that of the first walk over the set (``_walk_result``)
        assert (ops is None) == (r[2] is None), (name, a, self.pcs[a])
        if ops is not None:
            assert sorted(ops, key=repr) == sorted(r[2], key=repr), (name, a, self.pcs[a])
        checked[0] += 1
        return r

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")  # the Python closure runs
        m.setattr(por.Closure, "_future", future)
        system = G.build_system((ROOT / "examples" / name).read_text(), params)
        check_explicit(system, max_states=states, timeout=600, por=True, confirm_timeout=0)
    return checked[0]


@pytest.mark.parametrize("name,params,states", CASES)
def test_native_walk_equals_the_python_walk(name: str, params: dict, states: int,
                                            monkeypatch: Any) -> None:
    assert _compare(name, params, states, monkeypatch) > 20


@pytest.mark.slow
@pytest.mark.parametrize("name", others(CASES))
def test_native_walk_equals_the_python_walk_everywhere(name: str, monkeypatch: Any) -> None:
    _compare(name, {}, 300, monkeypatch)
