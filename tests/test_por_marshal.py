"""The native closure's reading of a state in C (``porwalk.c`` ``pw_marshal``) against the
reading through the ``Closure`` helpers in Python (``NativeClosure._read_py``): in every
state of bounded reduced searches, every array the closure reads -- the units' pcs, tokens
known 0, current footprints and operations, exit and cluster flags, the barrier words,
named-barrier needs, counts and flags, the wgmma owner counts held and their readers, the
arrays' visibility, the waits a round ahead -- is the same.  (A current footprint is compared as a set: the Python
reading of a wgmma wait's builds a new frozenset, whose order is its own.)  And the
enabled units the reducer hands the closure (those the explorer found a step for) are
those ``Futures._enabled`` derives from the state.  Skipped without cffi or a C
compiler."""

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

CASES = cases({"textbook/pipeline_tma_async_multicast.pipe": 200,
               "kernels/k1_hopper_persistent_gemm.pipe": 300,
               "kernels/k2_blackwell_persistent_gemm.pipe": 200,
               "kernels/k3_blackwell_persistent_gemm_clc.pipe": 200,
               "kernels/k5_hopper_fmha.pipe": 200,
               "textbook/named_barrier.pipe": 200, "bugs/p9-bug.pipe": 200})


def _read(nc: Any, ctx: Any) -> dict:
    """Every array ``pw_stubborn`` reads of the state, in Python terms."""
    nc._state(ctx)
    c, st = nc._c, nc._st
    n, w = len(nc.units), nc.words
    na = len(nc._agent_ids)
    nb, nk = len(nc.t.bars), len(nc._keys)

    def take(p: Any, k: int) -> list:
        return [p[i] for i in range(k)]

    fps = [sorted(c.cur_fp[k] for k in range(c.cur_fp_off[i], c.cur_fp_off[i + 1]))
           for i in range(n)]
    ops = [take(c.cur_ops, c.cur_ops_off[n])[c.cur_ops_off[i]:c.cur_ops_off[i + 1]]
           for i in range(n)]
    out = {"units": list(nc.units), "fp": fps, "ops": ops, "pc": take(st.pc, n),
           "zero0": take(st.zero0, n), "agent_unit": take(st.agent_unit, len(ctx.sys.agents)),
           "enabled": take(c.enabled, n), "wg_cm": take(st.wg_cm, len(ctx.sys.agents)),
           "nb_need": take(c.nb_need, nk), "nb_count": take(c.nb_count, nk),
           "arrived": take(c.arrived, nk * n), "saturated": take(c.saturated, len(nc._arrays)),
           "hg_held": take(c.hg_held, len(nc._hg)),
           "hg_readers": take(c.hg_readers, len(nc._hg) * w),
           "observed": take(c.observed, nb)}
    for name in ("phase", "pending", "expected", "tx"):
        out[name] = take(getattr(st, name), nb)
    # the waits a round ahead: per unit the barriers (a set), per row the barrier
    out["lw"] = [sorted(st.lw[k] for k in range(st.lw_off[i], st.lw_off[i + 1]))
                 for i in range(n)]
    out["lw_row"] = take(st.lw_row, nc.rows)
    for name in ("exit_pair", "ucta", "cl_cand", "carr0", "carr_not1", "exit_sync",
                 "exit_nbkey", "sync_nbkey"):
        out[name] = take(getattr(c, name), n)
    assert na == sum(1 for u in nc.units if u[0] == "a")
    return out


def _compare(source: str, params: dict, states: int, monkeypatch: Any) -> int:
    from pipeproof.checker.native import porwalk

    pairs: dict = {}
    seen = [0]
    orig = por.Closure.stubborn

    def stubborn(self: Any, seed: tuple, best_size: Any) -> Any:
        got = pairs.get(id(self.red))
        if got is None:
            tables = build(self.fp)
            readers = []
            for flag in (True, False):
                monkeypatch.setattr(porwalk, "NATIVE_MARSHAL", flag)
                readers.append(porwalk.NativeClosure(tables))
            got = pairs[id(self.red)] = (self.red, readers)
        in_c, in_py = got[1]
        assert in_c._c_reads and not in_py._c_reads
        if getattr(self, "_marshal_seen", False) is False:
            self._marshal_seen = True
            assert _read(in_c, self) == _read(in_py, self), self.pcs
            seen[0] += 1
        return orig(self, seed, best_size)

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")
        m.setattr(por.Closure, "stubborn", stubborn)
        system = G.build_system(source, params)
        check_explicit(system, max_states=states, timeout=600, por=True, confirm_timeout=0)
    return seen[0]


@pytest.mark.parametrize("name,params,states", CASES)
def test_marshal_in_c_equals_python(name: str, params: dict, states: int,
                                    monkeypatch: Any) -> None:
    assert _compare((ROOT / "examples" / name).read_text(), params, states, monkeypatch) > 20


@pytest.mark.slow
@pytest.mark.parametrize("name", others(CASES))
def test_marshal_in_c_equals_python_everywhere(name: str, monkeypatch: Any) -> None:
    _compare((ROOT / "examples" / name).read_text(), {}, 200, monkeypatch)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(prog=G.mutants(include_config_errors=False))
def test_marshal_in_c_equals_python_on_generated_kernels(prog: Any) -> None:
    _on_generated(_compare, prog)


def _on_generated(check: Any, prog: Any) -> None:
    """``check`` on a generated kernel, 300 states, with a monkeypatch of its own (a
    hypothesis test runs many examples in one pytest call)."""
    from _pytest.monkeypatch import MonkeyPatch

    mp = MonkeyPatch()
    try:
        check(prog.source, {}, 300, mp)
    finally:
        mp.undo()


def _enabled_agree(source: str, params: dict, states: int, monkeypatch: Any) -> int:
    """In every state the reduction asks about: the units the explorer found a step for
    (what ``Reducer.reduce`` tells the closure) are the units ``Futures._enabled`` derives
    from the state."""
    from pipeproof.checker.por import reducer

    seen = [0]

    class Checked(reducer.Closure):
        def stubborn(self, seed: tuple, best_size: Any) -> Any:
            if not getattr(self, "_checked", False):
                self._checked = True
                told = {u for u in self._units if self._en_cache[u]}
                assert told == {u for u in self._units if self._enabled_uncached(u)}
                seen[0] += 1
            return super().stubborn(seed, best_size)

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")
        m.setattr(reducer, "Closure", Checked)
        system = G.build_system(source, params)
        check_explicit(system, max_states=states, timeout=600, por=True, confirm_timeout=0)
    return seen[0]


@pytest.mark.parametrize("name,params,states", CASES)
def test_enabled_units_are_the_explorers(name: str, params: dict, states: int,
                                         monkeypatch: Any) -> None:
    assert _enabled_agree((ROOT / "examples" / name).read_text(), params, states,
                          monkeypatch) > 20


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(prog=G.mutants(include_config_errors=False))
def test_enabled_units_are_the_explorers_on_generated_kernels(prog: Any) -> None:
    _on_generated(_enabled_agree, prog)
