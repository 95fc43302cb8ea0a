"""The stubborn-set closure's cross-state memo and its incremental settle rounds are
caches, not theory: with them off (the walk memo emptied before every state, every
blocked barrier re-asked in every settle round) the reduction chooses the same stubborn
set in every state.  Differential, state by state, on kernels whose closure runs in
full (clusters of several CTAs, a 12-warp CTA), bounded by states."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import generators as G
from pipeproof.checker import por
from pipeproof.checker.explicit import check_explicit

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    # (K2 was here until its reduced search became a single run: every set one step)
    ("bugs/t3-fixed.pipe", {}, 450),
    ("kernels/k3_blackwell_persistent_gemm_clc.pipe", {}, 250),
    ("kernels/k5_hopper_fmha.pipe", {}, 250),
]


def _chosen_sets(name: str, params: dict, states: int, monkeypatch: Any,
                 cached: bool) -> list:
    chosen: list = []
    orig = por.Reducer.reduce

    def reduce(self: Any, state: tuple, enabled: list) -> list:
        if not cached:
            self._walk_memo.clear()
            self._later_memo.clear()
        r = orig(self, state, enabled)
        chosen.append(tuple(e[0] for e in r))
        return r

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")  # the Python closure runs
        m.setattr(por.Reducer, "reduce", reduce)
        m.setattr(por.futures, "INCREMENTAL_SETTLE", cached)
        system = G.build_system((ROOT / "examples" / name).read_text(), params)
        v = check_explicit(system, max_states=states, timeout=600, por=True,
                           confirm_timeout=0)
    return [v.status, v.stats.states, v.stats.transitions, chosen]


@pytest.mark.parametrize("name,params,states", CASES)
def test_caches_choose_the_same_stubborn_sets(name: str, params: dict, states: int,
                                               monkeypatch: Any) -> None:
    plain = _chosen_sets(name, params, states, monkeypatch, cached=False)
    fast = _chosen_sets(name, params, states, monkeypatch, cached=True)
    assert len(fast[3]) > 50  # the closure ran in many states
    assert any(len(s) > 1 for s in fast[3])  # and kept more than one step somewhere
    assert fast == plain


def _later_waits_reference(ctx: Any, a: int) -> dict:
    """``Closure._later_waits`` as first written: every wait barrier ahead, its phase read,
    no memo across states."""
    from pipeproof.model.mbarrier import PHASE_MOD
    from pipeproof.model.system import DONE
    r: dict = {}
    start = ctx.pcs[a]
    if start == DONE:
        return r
    reinit = frozenset().union(*(ctx.fp.inits_from(v, p) for v, p in enumerate(ctx.pcs)
                                 if p != DONE))
    cta = ctx.sys.agents[a].cta
    for b in ctx.fp.wait_bars_from(a, start):
        if b.cta != cta or b not in ctx.sys.bar or (b.cta, b.array) in reinit:
            continue
        phase = ctx.get(ctx.sys.bar[b]) % PHASE_MOD
        for pc, n in ctx.fp.wait_completions(a, start, b, phase).items():
            if n >= 2:
                r[pc] = b
    return r


@pytest.mark.parametrize("name,params,states", [
    ("kernels/k3_blackwell_persistent_gemm_clc.pipe", {}, 250),
    ("textbook/pipeline_tma_async_multicast.pipe", {"stages": 4, "k_tiles": 8}, 300)])
def test_later_waits_memo_answers_what_the_reads_give(name: str, params: dict,
                                                       states: int, monkeypatch: Any) -> None:
    """The waits a round ahead, memoized across states by the warp's pc and the phases it
    reads, equal the answer computed afresh in every state where the closure asks.  (The
    Python closure: the native one reads them in C, ``pw_later``, which
    ``test_por_marshal`` holds to this reading.)"""
    asked = {"n": 0, "nonempty": 0}
    orig = por.Closure._later_waits

    def later(self: Any, a: int) -> dict:
        r = orig(self, a)
        assert r == _later_waits_reference(self, a)
        asked["n"] += 1
        asked["nonempty"] += bool(r)
        return r

    with monkeypatch.context() as m:
        m.setenv("PIPEPROOF_POR_CLOSURE", "python")
        m.setattr(por.Closure, "_later_waits", later)
        system = G.build_system((ROOT / "examples" / name).read_text(), params)
        check_explicit(system, max_states=states, timeout=600, por=True, confirm_timeout=0)
    assert asked["n"] > 100 and asked["nonempty"] > 0


@pytest.mark.parametrize("name,params", [
    ("textbook/pipeline_tma_async_multicast.pipe", {"stages": 2, "k_tiles": 4}),
    ("textbook/pipeline_tma_async.pipe", {}),
    ("bugs/p9-bug.pipe", {}),
    ("kernels/k5_hopper_fmha.pipe", {})])
def test_wait_completions_bottom_up_equals_the_walk(name: str, params: dict) -> None:
    """In a program without loops, the fewest completions before each wait ahead are
    computed bottom-up and shared between starts (``_wait_completions_dag``); they equal
    the walk from each start (``_wait_completions_dfs``) for every warp, pc, barrier of
    its CTA and phase."""
    from pipeproof.checker.por import Footprints
    from pipeproof.model.mbarrier import PHASE_MOD

    system = G.build_system((ROOT / "examples" / name).read_text(), params)
    fp = Footprints(system)
    asked = nonempty = 0
    for a, ag in enumerate(system.agents):
        if not fp.acyclic[a]:
            continue
        bars = sorted({b for b in system.bar if b.cta == ag.cta}, key=str)
        for start in range(len(system.code(a))):
            for b in bars:
                for phase in range(PHASE_MOD):
                    got = fp._wait_completions_dag(a, start, b, phase)
                    assert got == fp._wait_completions_dfs(a, start, b, phase), (a, start, b)
                    asked += 1
                    nonempty += any(n >= 1 for n in got.values())
    assert asked > 100 and nonempty > 0


@pytest.mark.parametrize("name,params", [
    ("textbook/pipeline_tma_async_multicast.pipe", {"stages": 2, "k_tiles": 4}),
    ("bugs/p9-bug.pipe", {}),
    ("kernels/k1_hopper_persistent_gemm.pipe", {}),
    ("kernels/k5_hopper_fmha.pipe", {})])
def test_sets_ahead_bottom_up_equal_the_reachable_pcs(name: str, params: dict) -> None:
    """The barriers of the waits and the arrays of the inits a warp may reach from each
    pc, computed bottom-up (``Footprints._ahead``, programs without loops), equal the
    same sets taken over the reachable pcs (``_reach``)."""
    from pipeproof.checker.por import Footprints
    from pipeproof.model.program import MbarInit, TryWait, Wait

    system = G.build_system((ROOT / "examples" / name).read_text(), params)
    fp = Footprints(system)
    loop_free = 0
    for a in range(len(system.agents)):
        code = system.code(a)
        loop_free += fp.acyclic[a]
        for pc in reversed(range(len(code))):  # the later pcs first: most sharing
            reach = fp._reach(a, pc)
            assert fp.wait_bars_from(a, pc) == frozenset(
                code[p].bar for p in reach if type(code[p]) in (Wait, TryWait))
            assert fp.inits_from(a, pc) == frozenset(
                (code[p].cta, n) for p in reach if isinstance(code[p], MbarInit)
                for n, _ in code[p].arrays)
    assert loop_free > 0
