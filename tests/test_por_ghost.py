"""The reduced search where stage buffers carry ghost state (data races on) decides what
the unreduced one decides: the same verdict, a violation of the same property.

The reductions concerned (docs/engines.md, "Reductions and the stage buffers' ghost
state"): the stubborn sets' footprints of a wait on a counted named barrier (the
epilogue's ``bar.sync 1, 128`` around a TMA store), of a warpgroup's wgmma reads,
commits and waits, of a failed ``try_wait`` whose branch skips the blocking wait, and the
explicit engine forgetting dead locals (a ``try_wait`` token once its branch is passed).
Each case below runs the reduced search (``por=True``) and a reference that has none of
them, both bounded by states (never by time), and the reference must decide.  The
reference is the unreduced search; for the eight-warp wgmma kernel, whose unreduced
graph takes 10-20 s a case, it is the search with warp symmetry alone (a reduction older
than, and independent of, the ones above)."""

from __future__ import annotations

from pathlib import Path

import pytest

import generators as G
from pipeproof.checker.explicit import _bfs, check_explicit
from pipeproof.checker.statespace import Explorer
from pipeproof.model.program import Branch, TryWait, live_locals
from pipeproof.model.system import System
from helpers import NO_DEADLINE
from test_wgmma_warpgroup import KERNEL as WGMMA_KERNEL

ROOT = Path(__file__).resolve().parent.parent
MAX_STATES = 100_000

#: .pipe files with stage buffers; violated ones with the data-race properties among them
PIPES = [
    "examples/bugs/p6-bug.pipe", "examples/bugs/p6-fixed.pipe",
    "examples/bugs/s1-bug.pipe", "examples/bugs/s2-bug.pipe", "examples/bugs/s2-fixed.pipe",
    "examples/bugs/s3-bug.pipe", "examples/bugs/x2-bug.pipe", "examples/bugs/x2-fixed.pipe",
    "examples/bugs/x1-bug.pipe", "examples/bugs/x5-bug.pipe", "examples/bugs/g1-bug.pipe",
    "examples/textbook/pipeline_tma_store.pipe",
    "examples/textbook/pipeline_tma_multi_consumers_async.pipe",
    "examples/textbook/smem_alias.pipe",
    "tests/cute_kernels/pipeline_tma_store_bug1.pipe",
    "tests/cute_kernels/pipeline_tma_store_bug2.pipe",
    "tests/cute_kernels/pipeline_tma_store_bug3.pipe",
    "tests/cute_kernels/pipeline_tma_store_bug4.pipe",
    "tests/cute_kernels/named_barrier_bug1.pipe",
    "tests/cute_kernels/named_barrier_bug3.pipe",
    "tests/cute_kernels/pipeline_async_timed_wait_bug3.pipe",
]

#: consumers that poll with consumer_try_wait and wait only if the poll failed (the
#: lifted FMHA's timed wait): bug 1 reads a stage before its wait, bug 2 after its release
TRY_WAIT = """
@cute.kernel
def try_wait_consumers(bug: int = 0, tiles: int = 3):
    launch(block=96, cluster=(1, 1, 1))
    p = PipelineTmaAsync.create(
        num_stages=2,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 2),
        tx_count=1024,
    )
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, 2)
        for k in range(tiles):
            p.producer_acquire(state)
            tma_load(p, state, bytes=1024)
            state.advance()
        p.producer_tail(state)
    with role("consumer", warps=[1, 2]):
        state = make_pipeline_state(PipelineUserType.Consumer, 2)
        for k in range(tiles):
            ready = p.consumer_try_wait(state)
            if bug == 1 and warp_idx() == 2 and k == tiles - 1:
                read(p, state)
            p.consumer_wait(state, ready)
            read(p, state)
            p.consumer_release(state)
            if bug == 2 and warp_idx() == 1:
                read(p, state)
            state.advance()
"""

#: warp 1 reads a buffer warp 0 writes with no synchronisation between them, after a
#: counted named barrier with warp 2: a race whichever warp moves first.  A reduction
#: that took the barrier's wait as blocked while its other user may still arrive would
#: let the writer finish alone first, and miss it
UNSYNCHRONISED = """
@cute.kernel
def unsynchronised_reader():
    launch(block=96, cluster=(1, 1, 1))
    buf = smem_buffer()
    with role("writer", warps=[0]):
        write(buf, 0)
        barrier(barrier_id=2, number_of_threads=32)
    with role("pair", warps=[1, 2]):
        barrier(barrier_id=1, number_of_threads=64)
        if warp_idx() == 1:
            read(buf, 0)
"""

#: a read on the success side of a try_wait only, racing a store of another warp
READ_ON_SUCCESS = """
@cute.kernel
def read_on_success():
    launch(block=96, cluster=(1, 1, 1))
    p = PipelineAsync.create(
        num_stages=1,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )
    buf = smem_buffer()
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, 1)
        p.producer_acquire(state)
        p.producer_commit(state)
    with role("consumer", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Consumer, 1)
        ready = p.consumer_try_wait(state)
        if ready:
            read(buf, 0)
        p.consumer_wait(state, ready)
        p.consumer_release(state)
    with role("writer", warps=[2]):
        write(buf, 0)
        barrier(barrier_id=2, number_of_threads=32)
"""


def _verdict(v):
    return (v.status, v.prop)


def _agree(system_of, reference: str = "unreduced") -> None:
    reduced = check_explicit(system_of(), max_states=MAX_STATES, timeout=NO_DEADLINE,
                             por=True, confirm_timeout=0)
    if reference == "unreduced":
        ref = check_explicit(system_of(), max_states=MAX_STATES, timeout=NO_DEADLINE,
                             reduce=False)
    else:  # warp symmetry alone: no stubborn sets, no safe steps, no dead locals
        ex = Explorer(system_of(), symmetry=True)
        ex.dead = []
        ref = _bfs(ex, MAX_STATES, NO_DEADLINE, None, None, 0.0)
    assert ref.status in ("PROVEN", "VIOLATED"), ref.headline()
    assert _verdict(reduced) == _verdict(ref), (reduced.headline(), ref.headline())


@pytest.mark.parametrize("path", PIPES)
def test_pipe_examples(path: str) -> None:
    _agree(lambda: G.build_system((ROOT / path).read_text()))


@pytest.mark.parametrize("source", [UNSYNCHRONISED, READ_ON_SUCCESS],
                         ids=["named-barrier", "try-wait"])
def test_races_behind_waits(source: str) -> None:
    reduced = check_explicit(G.build_system(source), max_states=MAX_STATES,
                             timeout=NO_DEADLINE, por=True, confirm_timeout=0)
    assert _verdict(reduced) == ("VIOLATED", "read-before-full"), reduced.headline()
    _agree(lambda: G.build_system(source))


@pytest.mark.parametrize("bug", [0, 1, 2])
def test_polling_consumers(bug: int) -> None:
    _agree(lambda: G.build_system(TRY_WAIT, {"bug": bug}))


@pytest.mark.parametrize("bug", [0, 1, 2, 3, 4])
def test_warpgroup_wgmma(bug: int) -> None:
    _agree(lambda: G.build_system(WGMMA_KERNEL, {"bug": bug}), reference="symmetry")


LIFTED = [("wgmma_warpgroup", 0), ("wgmma_warpgroup", 1), ("wgmma_warpgroup", 2),
          ("pipeline_tma_store", 0), ("pipeline_tma_store", 1), ("pipeline_tma_store", 2),
          ("pipeline_tma_store", 4)]


@pytest.mark.parametrize("name, bug", LIFTED)
def test_lifted_kernels(name: str, bug: int) -> None:
    """Real CuTe DSL kernels (``tests/cute_kernels``), lifted with their ghost effects."""
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed "
                        "(pip install 'pipeproof[cute]')")
    from pipeproof.frontend.cute import lift_entry

    spec = f"{ROOT / 'tests' / 'cute_kernels' / name}.py::{name}"
    compiled = lift_entry(spec, {"bug": bug}, "sm_90a").compiled
    _agree(lambda: System(compiled))


def test_try_wait_token_is_dead_after_its_branch() -> None:
    """``live_locals``: the token a try_wait writes is live up to the branch on it, and
    dead from the wait it guards on (so ``Explorer.forget`` sets it to 0 there)."""
    system = G.build_system(TRY_WAIT, {"bug": 0})
    code = system.agents[1].program.code
    live = live_locals(code)
    tw = next(pc for pc, i in enumerate(code) if isinstance(i, TryWait))
    br = next(pc for pc, i in enumerate(code) if isinstance(i, Branch) and pc > tw)
    tok = code[tw].dest
    assert tok not in live[tw] and tok in live[br]
    assert tok not in live[code[br].then] and tok not in live[code[br].orelse]


def test_forgetting_merges_states() -> None:
    """Forgetting dead tokens leaves the verdict and explores no more states (with the
    same reduction otherwise)."""
    def run(forget: bool):
        ex = Explorer(G.build_system(TRY_WAIT, {"bug": 0}), symmetry=True)
        if not forget:
            ex.dead = []
        return _bfs(ex, MAX_STATES, NO_DEADLINE, None, None, 0.0)
    with_, without = run(True), run(False)
    assert _verdict(with_) == _verdict(without) == ("PROVEN", None)
    assert with_.stats.states < without.stats.states
