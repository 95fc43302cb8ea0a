"""Symmetry over identical CTAs of a cluster (``checker/cta_symmetry.py``, issue 26 item 2).

* The automorphisms found on the bundled cluster examples are the expected ones: the
  row and column swaps of a 2x2 multicast cluster, none where a leader CTA differs.
* The oracle: on the unreduced reachable graph (bounded by states), every automorphism
  maps each state's steps onto the steps of the renamed state -- same successors, renamed,
  same violated properties.  A renaming that is not an automorphism fails it, so the
  oracle can fail; so does the finder on a kernel with one CTA changed.
* The explicit engine with CTA symmetry gives the verdict, property and counterexample
  length of the engine without it, on the examples and on generated cluster kernels
  (hypothesis), in no more states; a counterexample replays on the unreduced model.
* A step that violates two properties reports the catalogue-first, whatever order the
  instruction lists its destinations in (``model.properties.ranked``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pipeproof.api import compile_file
from pipeproof.checker.cta_symmetry import (CtaPermutation, cta_automorphisms, renaming,
                                            why_no_cta_symmetry)
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.shorten import counterexample_end
from pipeproof.checker.statespace import Explorer
from pipeproof.model.program import Arrive
from pipeproof.model.properties import Check, Prop, ranked
from pipeproof.model.system import Outcome, System
from pipeproof.model.errors import ConfigError, Unsupported

import generators as G
from helpers import NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"
SWAPS_2X2 = {(1, 0, 3, 2), (2, 3, 0, 1), (3, 2, 1, 0)}


def _system(rel: str, params: Any = None) -> System:
    return System(compile_file(EX / rel, params or {}))


@pytest.mark.parametrize("rel, sigmas", [
    ("textbook/pipeline_tma_async_multicast.pipe", SWAPS_2X2),
    ("textbook/cluster_layout_stride.pipe", SWAPS_2X2),
    ("kernels/k1_hopper_persistent_gemm.pipe", SWAPS_2X2),
    ("bugs/p4-bug.pipe", {(2, 3, 0, 1)}),
    ("bugs/l1-fixed.pipe", {(1, 0)}),
    ("bugs/l1-bug.pipe", set()),  # its bug is in one CTA only
    # a 2-CTA pair whose leader issues the MMAs, a CLC scheduler in one CTA
    ("textbook/pipeline_tma_umma.pipe", set()),
    ("kernels/k2_blackwell_persistent_gemm.pipe", set()),
    ("kernels/k3_blackwell_persistent_gemm_clc.pipe", set()),
    ("textbook/pipeline_clc_fetch_async.pipe", set()),
])
def test_automorphisms_of_the_examples(rel: str, sigmas: set) -> None:
    assert {g.sigma for g in cta_automorphisms(_system(rel))} == sigmas


def test_no_renaming_where_state_names_a_cta() -> None:
    s = _system("textbook/split_k_serial.pipe")
    assert cta_automorphisms(s) == []
    assert "global memory" in (why_no_cta_symmetry(s) or "")
    assert why_no_cta_symmetry(_system("textbook/pipeline_async.pipe")) == "one CTA"


def _renamed(ex: Explorer, g: CtaPermutation, st: tuple) -> tuple:
    return ex.packer.pack(g.apply_flat(ex.sys, ex.packer.unpack_list(st)))


def _steps(ex: Explorer, st: tuple) -> set:
    return {(step, nxt, None if v is None else v[0]) for step, nxt, v in ex._all_successors(st)}


def renaming_mismatch(system: System, perms: list[CtaPermutation], max_states: int,
                      width: int = 40):
    """The first (state, renaming) of the unreduced graph whose steps the renaming does
    not map onto the renamed state's steps; None when there is none.  Breadth-first, at
    most ``max_states`` states, each level cut to its first ``width`` new states so that
    the search also reaches the main loops (a level of the full graph grows fast)."""
    ex = Explorer(system, symmetry=False)
    seen = {ex.initial}
    frontier = [ex.initial]
    while frontier and len(seen) < max_states:
        nxt_level = []
        for s in frontier:
            steps = _steps(ex, s)
            for g in perms:
                want = {(g.step(step), _renamed(ex, g, n), p) for step, n, p in steps}
                if _steps(ex, _renamed(ex, g, s)) != want:
                    return s, g
            for _step, n, p in steps:
                if p is None and n not in seen and len(nxt_level) < width:
                    seen.add(n)
                    nxt_level.append(n)
        frontier = nxt_level
    return None


@pytest.mark.parametrize("rel, params, bound", [
    ("textbook/pipeline_tma_async_multicast.pipe", {}, 1_500),
    ("kernels/k1_hopper_persistent_gemm.pipe", {}, 800),
    ("bugs/p4-bug.pipe", {}, 2_000),
    ("bugs/p4-fixed.pipe", {}, 1_500),
    ("bugs/l1-fixed.pipe", {}, 1_500),
])
def test_renamings_map_the_graph_onto_itself(rel: str, params: dict, bound: int) -> None:
    s = _system(rel, params)
    perms = cta_automorphisms(s)
    assert perms
    assert renaming_mismatch(s, perms, bound) is None


@pytest.mark.parametrize("rel, sigma, bound", [
    # p4's 2x2 cluster: the row swap is an automorphism, the column swap is not
    ("bugs/p4-fixed.pipe", (1, 0, 3, 2), 3_000),
    ("bugs/l1-bug.pipe", (1, 0), 3_000),  # its bug is in one CTA only
])
def test_the_oracle_rejects_a_renaming_that_is_no_automorphism(rel: str, sigma: tuple,
                                                              bound: int) -> None:
    s = _system(rel)
    assert sigma not in {g.sigma for g in cta_automorphisms(s)}
    bad = renaming(s, sigma)
    assert bad is not None
    assert renaming_mismatch(s, [bad], bound) is not None


def test_a_kernel_with_one_cta_changed_has_no_automorphism() -> None:
    """CTA 1 of l1-fixed (a 2x1 cluster) with one arrive count changed: the swap is
    found on the kernel, and not on the changed one."""
    ck = compile_file(EX / "bugs/l1-fixed.pipe")
    assert cta_automorphisms(System(ck))
    progs = list(ck.programs)
    for i, p in enumerate(progs):
        at = next((pc for pc, ins in enumerate(p.code) if isinstance(ins, Arrive)), None)
        if p.cta == 1 and at is not None:
            ins = p.code[at]
            arr = replace(ins.arrivals[0], count=ins.arrivals[0].count + 1)
            code = p.code[:at] + (replace(ins, arrivals=(arr,) + ins.arrivals[1:]),) + \
                p.code[at + 1:]
            progs[i] = replace(p, code=code)
            break
    else:
        pytest.fail("l1-fixed has no arrive in CTA 1")
    assert cta_automorphisms(System(replace(ck, programs=tuple(progs)))) == []


def _same_verdict(rel: str, params: Any = None, por: bool = False) -> tuple[int, int]:
    s = _system(rel, params)
    kw = dict(max_states=300_000, timeout=NO_DEADLINE, por=por)
    without = check_explicit(s, cta_symmetry=False, **kw)
    with_ = check_explicit(s, cta_symmetry=True, **kw)
    assert (with_.status, with_.prop, with_.depth) == \
        (without.status, without.prop, without.depth)
    assert with_.stats.extra.get("cta_automorphisms", 1) > 1
    assert with_.stats.states <= without.stats.states
    if with_.trace is not None:
        prop = with_.prop
        end = counterexample_end(Explorer(s, symmetry=False), with_.trace.steps, prop)
        assert end is not None, "the counterexample does not replay on the unreduced model"
    return with_.stats.states, without.stats.states


@pytest.mark.parametrize("rel", ["bugs/p4-bug.pipe", "bugs/p4-fixed.pipe",
                                 "bugs/l1-fixed.pipe"])
def test_same_verdicts_fewer_states(rel: str) -> None:
    with_, without = _same_verdict(rel)
    assert with_ < without


@pytest.mark.parametrize("rel, params", [
    ("textbook/pipeline_tma_async_multicast.pipe", {}),
    ("kernels/k1_hopper_persistent_gemm.pipe", {}),
    ("bugs/p4-bug.pipe", {}),
])
def test_same_verdicts_with_stubborn_sets(rel: str, params: dict) -> None:
    _same_verdict(rel, params, por=True)


_CLUSTER = st.sampled_from(["PipelineTmaAsync", "PipelineTmaUmma", "PipelineClcFetchAsync"])


@settings(max_examples=40, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prog=_CLUSTER.flatmap(lambda c: st.one_of(G.programs(c), G.mutants(c))))
def test_generated_cluster_kernels(prog: Any) -> None:
    """Generated kernels of the cluster classes, valid and mutated: each automorphism maps
    the bounded unreduced graph onto itself, and the verdicts agree."""
    try:
        s = G.build_system(prog.source)
    except (ConfigError, Unsupported):
        return
    perms = cta_automorphisms(s)
    if not perms:
        return
    assert renaming_mismatch(s, perms, 300) is None, prog.describe()
    kw = dict(max_states=60_000, timeout=NO_DEADLINE, por=False)
    without = check_explicit(s, cta_symmetry=False, **kw)
    if without.status == "UNKNOWN":
        return
    with_ = check_explicit(G.build_system(prog.source), cta_symmetry=True, **kw)
    assert (with_.status, with_.prop, with_.depth) == \
        (without.status, without.prop, without.depth), prog.describe()


def test_a_step_reports_its_catalogue_first_property() -> None:
    late = Check(True, Prop.MISSING_PROXY_FENCE, "late")
    early = Check(True, Prop.OVERWRITE_BEFORE_RELEASE, "early")
    assert Outcome(True, [late, early]).checks == [early, late]
    assert ranked([early, late]) == [early, late]
    other = Check(True, Prop.MISSING_PROXY_FENCE, "other")
    assert ranked([late, other]) == [late, other]  # stable within a property


def test_only_commuting_items_may_come_in_another_order() -> None:
    """Multicast destinations (distinct barriers and buffers) may be listed in another
    order; a wgmma read and the commit that closes its group may not, nor may two items
    acting on one barrier."""
    from pipeproof.checker.cta_symmetry import _match
    from pipeproof.model.program import (Arrival, BarRef, BufRef, Delivery, GhostEffect,
                                         Nop, TmaLoad)

    b = [BarRef(c, "ab.full", 0) for c in range(2)]
    f = [BufRef(c, "ab.buf", 0) for c in range(2)]
    dl = [Delivery(b[c], 1024, f[c], 0) for c in range(2)]
    x = TmaLoad(deliveries=(dl[0], dl[1]), kind="tma")
    y = TmaLoad(deliveries=(dl[1], dl[0]), kind="tma")
    assert _match(x, y) == {"deliveries": (1, 0)}
    read = GhostEffect("wgmma_read", f[0], 0)
    commit = GhostEffect("wgmma_commit", f[1], 0)
    assert _match(Nop(pre=(read, commit)), Nop(pre=(commit, read))) is None
    w0, w1 = GhostEffect("write_begin", f[0], 0), GhostEffect("write_begin", f[1], 0)
    assert _match(Nop(pre=(w0, w1)), Nop(pre=(w1, w0))) == {"pre": (1, 0)}
    a1, a2 = Arrival(b[0], 1, 0, None), Arrival(b[0], 1, 512, None)
    from pipeproof.model.program import Arrive
    assert _match(Arrive(arrivals=(a1, a2)), Arrive(arrivals=(a2, a1))) is None


@pytest.mark.parametrize("rel", ["bugs/p4-bug.pipe", "bugs/l1-fixed.pipe"])
def test_partitions_keep_one_state_per_orbit(rel: str) -> None:
    """The hash-partitioned search (3 partitions in this process) owns each orbit in one
    partition (by its process-free key): the explicit engine's verdict and state count."""
    from pipeproof.checker.distributed import check_distributed

    s = _system(rel)
    want = check_explicit(s, max_states=300_000, timeout=NO_DEADLINE, por=False)
    got = check_distributed(s, partitions=3, por=False)
    assert want.stats.extra.get("cta_automorphisms", 1) > 1
    assert got.stats.extra.get("cta_automorphisms", 1) > 1
    assert (got.status, got.prop, got.depth, got.stats.states) == \
        (want.status, want.prop, want.depth, want.stats.states)
