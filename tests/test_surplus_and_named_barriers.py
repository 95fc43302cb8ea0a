"""Issue 22 items 7 and 5: surplus arrivals reported where they happen, named-barrier
forms and misuse.

Item 7 (spec/properties.md ``arrival-overflow``, condition 1): an arrive made through a
pipeline state carries the phase it belongs to (``Arrival.phase``); finding the barrier
already past that phase is a surplus arrival, reported at that arrive, by both engines.
Correct protocols -- including a release state that lags the wait state and consumers
that take turns -- never trip it.

Item 5 (spec/primitives.md section 2): thread-count mismatches in one generation in
either order; different code locations across warps are *not* a violation; the CuTe
lifter lifts ``barrier.cta.arrive`` (``arrive_unaligned``) and reports an aligned barrier
reached by part of a warp.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.api import check_file, check_source
from pipeproof.model import mbarrier as mb
from pipeproof.model.errors import Unsupported
from pipeproof.model.mbarrier import MBarrier
from pipeproof.model.pipeline_state import PipelineUserType, arrival_phase, make_pipeline_state
from pipeproof.model.program import Arrive
from pipeproof.model.properties import Prop
from pipeproof.model.values import CONCRETE as V
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
BUGS = ROOT / "examples" / "bugs"
ENGINES = ("explicit", "bmc")


def _fired(checks: list) -> list[str]:
    return [c.prop for c in checks if c.condition]


# ------------------------------------------------------------------ item 7: the rule


@pytest.mark.parametrize("barrier_phase,belongs,surplus", [
    (0, 0, False), (1, 0, True), (2, 0, True), (3, 0, False),  # 3: one phase early
    (0, 3, True), (1, 3, True), (3, 3, False), (2, 3, False),
])
def test_surplus_check_fires_when_the_barrier_is_past_the_arrivals_phase(
        barrier_phase: int, belongs: int, surplus: bool) -> None:
    b = MBarrier(barrier_phase, 1, 1, 0, 1)
    _, checks = mb.arrive(V, b, 1, 0, False, belongs)
    assert (_fired(checks)[:1] == [Prop.ARRIVAL_OVERFLOW]) == surplus


def test_surplus_check_comes_before_phase_overrun() -> None:
    """A surplus arrive into an unobserved phase is both; the mechanism is named."""
    b = MBarrier(1, 1, 1, 0, 0)  # phase 0 completed, nobody observed it yet
    _, checks = mb.arrive(V, b, 1, 0, False, 0)
    assert _fired(checks) == [Prop.ARRIVAL_OVERFLOW, Prop.PHASE_OVERRUN]


def test_no_phase_no_surplus_check() -> None:
    _, checks = mb.arrive(V, MBarrier(1, 1, 1, 0, 1), 1)
    assert Prop.ARRIVAL_OVERFLOW not in _fired(checks)


def test_arrival_phase_of_pipeline_states() -> None:
    cons = make_pipeline_state(PipelineUserType.Consumer, 2)
    prod = make_pipeline_state(PipelineUserType.Producer, 2)
    assert arrival_phase(cons, "consumer") == 0
    assert arrival_phase(prod, "producer") == 0  # ghost -1: the fill of phase 0
    assert arrival_phase(cons.advance().advance(), "consumer") == 1
    # the other side's state, ProducerConsumer states: nothing certain, no check
    assert arrival_phase(prod, "consumer") is None
    assert arrival_phase(cons, "producer") is None
    pc = make_pipeline_state(PipelineUserType.ProducerConsumer, 2)
    assert arrival_phase(pc, "producer") is None


# ------------------------------------------------------------------ item 7: examples

@pytest.mark.parametrize("engine", ENGINES)
def test_x4_surplus_release_is_reported_at_the_release(engine: str) -> None:
    r = check_file(BUGS / "x4-bug.pipe", engine=engine, timeout=NO_DEADLINE)
    v = r.verdict
    assert (v.status, v.prop) == ("VIOLATED", Prop.ARRIVAL_OVERFLOW), v.headline()
    assert "phase already completed without it" in v.reason
    last = v.trace.events[-1]
    # the surplus arrive is a consumer warp's consumer_release, at its source line
    assert last.role == "consumer" and "release" in last.what
    line = int(last.loc.split(":")[-2])
    assert "consumer_release" in (BUGS / "x4-bug.pipe").read_text().splitlines()[line - 1]
    assert len(v.trace) == 18


@pytest.mark.parametrize("engine", ENGINES)
def test_x4_fixed_is_proven(engine: str) -> None:
    r = check_file(BUGS / "x4-fixed.pipe", engine=engine, timeout=NO_DEADLINE)
    assert r.verdict.status == "PROVEN", r.verdict.headline()


def test_release_state_lagging_the_wait_state_is_not_a_surplus() -> None:
    """CUTLASS's sm90 mainloop keeps a release state that trails the read state by
    K_PIPE_MMAS tiles; every release still lands in the phase it belongs to."""
    src = """
@cute.kernel
def lagging_release(stages: int = 3, k_tiles: int = 5):
    launch(block=64, cluster=(1, 1, 1))
    ab = PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        tx_count=1024,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
    )
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            ab.producer_acquire(state)
            tma_load(ab, state, bytes=1024)
            ab.producer_commit(state)
            state.advance()
        ab.producer_tail(state)
    with role("consumer", warps=[1]):
        read_state = make_pipeline_state(PipelineUserType.Consumer, stages)
        release_state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for k in range(k_tiles):
            ab.consumer_wait(read_state)
            read(ab, read_state)
            read_state.advance()
            if k >= 1:
                ab.consumer_release(release_state)
                release_state.advance()
        ab.consumer_release(release_state)
"""
    r = check_source(src, engine="explicit")
    assert r.verdict.status == "PROVEN", r.verdict.headline() + " " + r.verdict.reason
    arrives = [a for p in r.compiled.programs for ins in p.code if isinstance(ins, Arrive)
               for a in ins.arrivals]
    assert arrives and all(a.phase is not None for a in arrives)  # the check was on


def test_interchangeable_consumers_are_not_a_surplus() -> None:
    """Two consumer warps taking turns (each advances twice per turn, group of 1)."""
    r = check_file(ROOT / "examples" / "liveness" / "interchangeable_consumers_release.pipe",
                   engine="explicit")
    assert r.verdict.status == "PROVEN", r.verdict.headline()


# ------------------------------------------------------------------ item 5

def test_count_less_arrival_after_a_smaller_count_is_misuse() -> None:
    """Warp 0 arrives at barrier 3 with a count of 64 and only then (ordered by barrier
    4) warp 1 arrives with no count (all 128 threads): the generation mixes thread counts.
    This order was missed before (only count-less first, counted second was checked)."""
    src = """
@cute.kernel
def k():
    launch(block=128, cluster=(1, 1, 1))
    counted = NamedBarrier(barrier_id=3, num_threads=64)
    gate = NamedBarrier(barrier_id=4, num_threads=64)
    with role("a", warps=[0]):
        counted.arrive()
        gate.arrive_and_wait()
    with role("b", warps=[1]):
        gate.arrive_and_wait()
        barrier(barrier_id=3)
"""
    for engine in ENGINES:
        v = check_source(src, engine=engine, timeout=NO_DEADLINE).verdict
        assert (v.status, v.prop) == ("VIOLATED", Prop.NAMED_BARRIER_MISUSE), v.headline()
        assert "no thread count" in v.reason


def test_count_of_the_block_size_matches_no_count() -> None:
    """NamedBarrier(3, 128) in a 128-thread block and barrier(3) (all threads): the same
    participants, in whichever order they arrive (before, a count-less first arrival
    followed by the counted one was reported)."""
    src = """
@cute.kernel
def k():
    launch(block=128, cluster=(1, 1, 1))
    counted = NamedBarrier(barrier_id=3, num_threads=128)
    with role("a", warps=[0]):
        counted.arrive_and_wait()
    with role("b", warps=[1, 2, 3]):
        barrier(barrier_id=3)
"""
    for engine in ENGINES:
        v = check_source(src, engine=engine, timeout=NO_DEADLINE).verdict
        assert v.status == "PROVEN", v.headline() + " " + v.reason


def test_one_barrier_from_different_lines_across_warps_is_not_misuse() -> None:
    """Producer and consumer warps sync one generation of barrier 2 from their own
    lines (the textbook pattern): allowed across warps (PTX ISA bar, barrier)."""
    r = check_file(ROOT / "examples" / "textbook" / "named_barrier.pipe", engine="explicit")
    assert r.verdict.status == "PROVEN"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("which,status", [("bug", "VIOLATED"), ("fixed", "PROVEN")])
def test_x5_barrier_id_shared_with_sync_threads(engine: str, which: str, status: str) -> None:
    v = check_file(BUGS / f"x5-{which}.pipe", engine=engine, timeout=NO_DEADLINE).verdict
    assert v.status == status, v.headline()
    if status == "VIOLATED":
        assert v.prop == Prop.NAMED_BARRIER_MISUSE
        last = v.trace.events[-1]
        # the message names the warp of the violating step (symmetry renaming)
        assert last.actor in v.reason


def test_unaligned_barrier_by_part_of_a_warp_is_not_modelled() -> None:
    src = """
@cute.kernel
def k():
    launch(block=64, cluster=(1, 1, 1))
    bar = NamedBarrier(barrier_id=3, num_threads=64)
    with role("a", warps=[0]):
        with elect_one():
            bar.arrive_unaligned()
    with role("b", warps=[1]):
        bar.arrive_and_wait()
"""
    with pytest.raises(Unsupported, match="unaligned barrier.arrive 3 executed by part"):
        check_source(src, engine="explicit")


def test_aligned_barrier_inside_elect_one_is_misuse() -> None:
    src = """
@cute.kernel
def k():
    launch(block=64, cluster=(1, 1, 1))
    bar = NamedBarrier(barrier_id=3, num_threads=64)
    with role("a", warps=[0]):
        with elect_one():
            bar.arrive()
    with role("b", warps=[1]):
        bar.arrive_and_wait()
"""
    v = check_source(src, engine="explicit").verdict
    assert (v.status, v.prop) == ("VIOLATED", Prop.NAMED_BARRIER_MISUSE)


# ------------------------------------------------------------------ item 5: the CuTe lifter

FORMS = str(ROOT / "tests" / "cute_extra" / "named_barrier_forms.py") + "::named_barrier_forms"


@pytest.mark.parametrize("variant,expect", [
    ("aligned", ("PROVEN", None)),
    ("unaligned", ("PROVEN", None)),
    ("elected", ("VIOLATED", Prop.NAMED_BARRIER_MISUSE)),
    ("elected_unaligned", ("UNKNOWN", None)),
])
def test_lifted_named_barrier_forms(variant: str, expect: tuple) -> None:
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from pipeproof.api import check_cute

    if expect[0] == "UNKNOWN":
        with pytest.raises(Unsupported, match="unaligned barrier.arrive 1, 256 executed by 1"):
            check_cute(FORMS, {"variant": variant}, engine="explicit", jobs=1)
        return
    r = check_cute(FORMS, {"variant": variant}, engine="explicit", jobs=1)
    assert (r.verdict.status, r.verdict.prop) == expect, r.verdict.headline()
    if variant == "unaligned":
        ops = [ins for p in r.compiled.programs for ins in p.code
               if type(ins).__name__ == "NamedBarrierOp" and ins.id == 1 and not ins.sync]
        assert ops and all(not o.aligned for o in ops)
