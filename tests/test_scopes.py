"""Memory scopes (``memory_model="strict"``, lesson 8): every engine interprets the same
scope rule of ``model/system.py`` -- full interleaving, symmetry + partial-order reduction,
and z3 BMC agree on verdict, property and counterexample length -- and the CLI takes the
option."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

import generators as G
from test_reduction_hypothesis import SETTINGS

from pipeproof.api import compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.explicit import check_explicit
from pipeproof.cli import main
from pipeproof.model.system import System

BUGS = Path(__file__).resolve().parent.parent / "examples" / "bugs"


def _system(name: str, mm: str = "strict") -> System:
    return System(compile_file(BUGS / name), memory_model=mm)


def test_engines_agree_on_the_scope_bug() -> None:
    full = check_explicit(_system("x3-bug.pipe"), reduce=False, timeout=120)
    red = check_explicit(_system("x3-bug.pipe"), reduce=True, por=True, timeout=120)
    bmc = check_bmc(_system("x3-bug.pipe"), depth=40, timeout=120)
    assert full.status == red.status == bmc.status == "VIOLATED"
    assert full.prop == red.prop == bmc.prop == "insufficient-scope"
    assert len(full.trace) == len(red.trace) == len(bmc.trace)
    # the last step is the leader's MMA reading the peer's stage
    assert "cta0.w1" in bmc.trace.events[-1].actor


def test_engines_agree_on_the_fix() -> None:
    full = check_explicit(_system("x3-fixed.pipe"), reduce=False, timeout=120)
    bmc = check_bmc(_system("x3-fixed.pipe"), depth=60, timeout=120)
    assert full.status == "PROVEN"
    assert bmc.status in ("PROVEN", "SAFE"), bmc.reason


def test_default_model_adds_no_state() -> None:
    """Without strict scopes the layout is unchanged (no cost for everyone else)."""
    a, b = _system("x3-bug.pipe", "cutlass"), _system("x3-bug.pipe", "strict")
    assert b.n - a.n == sum(len(v) for v in b.cta_only.values()) > 0
    assert not a.cta_only


@pytest.mark.parametrize("mm,code", [("strict", 1), ("cutlass", 0)])
def test_cli_memory_model(mm: str, code: int, capsys: pytest.CaptureFixture) -> None:
    rc = main(["check", str(BUGS / "x3-bug.pipe"), "--memory-model", mm, "-q"])
    assert rc == code
    out = capsys.readouterr().out
    assert ("insufficient-scope" in out) == (mm == "strict")
    assert ("memory model strict" in out) == (mm == "strict")
    import json

    rc = main(["check", str(BUGS / "x3-bug.pipe"), "--memory-model", mm, "--json"])
    assert json.loads(capsys.readouterr().out)["memory_model"] == mm


def test_cli_rejects_an_unknown_memory_model(capsys: pytest.CaptureFixture) -> None:
    assert main(["check", str(BUGS / "x3-bug.pipe"), "--memory-model", "sc"]) == 2


PAIR = """
@cute.kernel
def pair(stages: int = 1, iters: int = 1, scope0: int = 0, scope1: int = 0):
    launch(block=64, cluster=(2, 1, 1))
    cta_layout = cute.tiled_divide(cute.make_layout((2, 1, 1)), (2,))
    p = PipelineAsyncUmma.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 64),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        cta_layout_vmnk=cta_layout,
    )
    with role("softmax", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(iters):
            p.producer_acquire(state)
            write(p, state)
            fence_proxy_async()
            if block_idx_in_cluster() == 0:
                if scope0 == 1:
                    mbarrier_arrive(p.producer_get_barrier(state), 0, scope="cluster")
                else:
                    mbarrier_arrive(p.producer_get_barrier(state), 0)
            else:
                if scope1 == 1:
                    mbarrier_arrive(p.producer_get_barrier(state), 0, scope="cluster")
                else:
                    mbarrier_arrive(p.producer_get_barrier(state), 0)
            state.advance()
        p.producer_tail(state)
    with role("mma", warps=[1], ctas=[0]):
        _, consumer = p.make_participants()
        for k in range(iters):
            handle = consumer.wait_and_advance()
            tcgen05_mma(p, handle)
            handle.release()
"""


@pytest.mark.parametrize("stages,iters", [(1, 1), (1, 2), (2, 3)])
@pytest.mark.parametrize("scope0,scope1", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_only_the_peer_needs_cluster_scope(stages: int, iters: int, scope0: int,
                                           scope1: int) -> None:
    """The leader's MMA reads both CTAs' stages: the leader's own stores need no cluster
    scope, the peer's do -- in every stage and iteration; the cutlass model accepts all;
    the reduced search agrees with the full interleaving."""
    from pipeproof.api import check_source

    params = {"stages": stages, "iters": iters, "scope0": scope0, "scope1": scope1}
    strict = check_source(PAIR, params, memory_model="strict", timeout=120)
    if scope1 == 0:
        assert strict.status == "VIOLATED" and strict.prop == "insufficient-scope", \
            strict.verdict.headline()
        assert "@cta1" in strict.verdict.reason
    else:
        assert strict.status == "PROVEN", strict.verdict.headline()
    assert check_source(PAIR, params, timeout=120).status == "PROVEN"
    if stages * iters <= 2:
        full = check_source(PAIR, params, memory_model="strict", timeout=120, reduce=False)
        assert (full.status, full.prop) == (strict.status, strict.prop)
        if full.status == "VIOLATED":
            assert len(full.verdict.trace) == len(strict.verdict.trace)


@settings(max_examples=20, **SETTINGS)
@given(G.programs())
def test_valid_generated_programs_in_strict_mode(prog: G.Program) -> None:
    """The generated valid configurations of every class are PROVEN under strict scopes
    too -- their data is TMA-written or handed over within a CTA -- except the lesson-8
    pattern itself: PipelineAsyncUmma in 2-CTA pairs, whose thread producers in the peer
    CTA publish their stores with producer_commit's .cta-scoped remote arrive to the
    leader's MMA (which the default model, like CUTLASS, accepts)."""
    from pipeproof.model.errors import ConfigError

    try:
        system = G.build_system(prog.source, memory_model="strict")
    except ConfigError:
        return
    v = check_explicit(system, max_states=300_000, timeout=120)
    msg = f"{prog.describe()}: {v.headline()} {v.reason}"
    if v.status == "VIOLATED":
        assert v.prop == "insufficient-scope", msg
        assert prog.describe().startswith("PipelineAsyncUmma") and \
            system.info.cluster_size > 1, msg
        assert "@cta0" not in v.reason.split(" reads ")[1].split(",")[0], msg
        assert check_explicit(G.build_system(prog.source), max_states=300_000,
                              timeout=120).status == "PROVEN", msg
    else:
        assert v.status == "PROVEN", msg
