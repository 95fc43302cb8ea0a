"""Tensor-memory allocation protocol (issue 22 item 2): ``TmemAllocator`` in ``.pipe``
(``model/pipelines/tmem_allocator.py``) and the rules of ``TmemAlloc`` / ``TmemDealloc``
/ ``TmemRelinquish`` / ``TmemWait`` in ``model/system.py`` (``System._tmem_exec``),
checked by both engines.  Every rule is in ``spec/primitives.md`` ("Tensor memory
allocation") with its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import check
from pipeproof.api import check_file
from pipeproof.model.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("explicit", "bmc")
TEXTBOOK = ROOT / "examples" / "textbook" / "tmem_allocator.pipe"
BUGS = ROOT / "examples" / "bugs"
OK = ("PROVEN", "SAFE")


def verdict(src: str, engine: str, **params: int) -> tuple[str, str]:
    r = check(src, params or None, engine=engine)
    return r.status, r.prop or ""


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("pair", [0, 1])
def test_textbook_is_proven(engine, pair):
    r = check_file(str(TEXTBOOK), {"pair": pair}, engine=engine)
    assert r.status == "PROVEN", (pair, r.status, r.prop)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bug", ["t1", "t2", "t3", "t4"])
def test_bug_pairs_both_engines(engine, bug):
    bad = check_file(str(BUGS / f"{bug}-bug.pipe"), engine=engine)
    assert (bad.status, bad.prop) == ("VIOLATED", "tmem-misuse"), (bug, bad.status, bad.prop)
    good = check_file(str(BUGS / f"{bug}-fixed.pipe"), engine=engine)
    assert good.status in OK, (bug, good.status, good.prop)


# --------------------------------------------------------------------------- 1-CTA rules

ONE = """
@cute.kernel
def one(alloc: int = 1, mma_waits: int = 1, frees: int = 1, relinquish_first: int = 0,
        sync_before_free: int = 1, mma_early: int = 0):
    launch(block=64, cluster=(1, 1, 1))
    acc = PipelineUmmaAsync.create(
        num_stages=1,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        defer_sync=True,
    )
    tmem = TmemAllocator(barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=64),
                         allocator_warp_id=0)
    pipeline_init_arrive()
    pipeline_init_wait()
    with role("epilogue", warps=[0]):
        if relinquish_first:
            tmem.relinquish_alloc_permit()
        if alloc:
            tmem.allocate(64)
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr()
        state = make_pipeline_state(PipelineUserType.Consumer, 1)
        acc.consumer_wait(state)
        read(acc, state)
        with elect_one():
            acc.consumer_release(state)
        tmem.relinquish_alloc_permit()
        if sync_before_free:
            barrier(barrier_id=2, number_of_threads=64)
        for i in range(frees):
            tmem.free(ptr)
    with role("mma", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Producer, 1)
        if mma_early:
            acc.producer_acquire(state)
            acc.producer_commit(state)
        if mma_waits:
            tmem.wait_for_alloc()
            ptr = tmem.retrieve_ptr()
        if not mma_early:
            acc.producer_acquire(state)
            acc.producer_commit(state)
        state.advance()
        acc.producer_tail(state)
        if sync_before_free:
            barrier(barrier_id=2, number_of_threads=64)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_one_cta_protocol_is_proven(engine):
    assert verdict(ONE, engine)[0] == "PROVEN"


DEALLOC_EARLY = """
@cute.kernel
def dealloc_early(wait_epilogue: int = 0):
    launch(block=64, cluster=(1, 1, 1))
    acc = PipelineUmmaAsync.create(
        num_stages=1,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        defer_sync=True,
    )
    tmem = TmemAllocator(barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=64),
                         allocator_warp_id=1)
    pipeline_init_arrive()
    pipeline_init_wait()
    with role("epilogue", warps=[0]):
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr()
        state = make_pipeline_state(PipelineUserType.Consumer, 1)
        acc.consumer_wait(state)
        read(acc, state)
        with elect_one():
            acc.consumer_release(state)
        if wait_epilogue:
            barrier(barrier_id=2, number_of_threads=64)
    with role("mma", warps=[1]):
        tmem.allocate(32)
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr()
        state = make_pipeline_state(PipelineUserType.Producer, 1)
        acc.producer_acquire(state)
        acc.producer_commit(state)
        if wait_epilogue:
            barrier(barrier_id=2, number_of_threads=64)
        tmem.free(ptr)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_dealloc_while_the_mma_or_a_reader_uses_the_accumulator(engine):
    # rule 2: the MMA warp frees right after its commit: the MMA may still be writing
    # (its commit has not fired) or the epilogue may still read the stage
    assert verdict(DEALLOC_EARLY, engine) == ("VIOLATED", "tmem-misuse")
    assert verdict(DEALLOC_EARLY, engine, wait_epilogue=1)[0] == "PROVEN"


def test_dealloc_while_an_mma_writes_names_the_mechanism():
    reason = check(DEALLOC_EARLY, engine="explicit").to_json()["reason"]
    assert "issues tcgen05.dealloc.cta_group::1 while an MMA still writes the " \
           "accumulator" in reason, reason


ALLOCATOR_OWN_READ = """
@cute.kernel
def own_read():
    launch(block=32, cluster=(1, 1, 1))
    tmem = TmemAllocator(barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=32),
                         allocator_warp_id=0)
    with role("solo", warps=[0]):
        tmem.allocate(32)
        ptr = tmem.retrieve_ptr()
        tmem.relinquish_alloc_permit()
        tmem.free(ptr)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_allocator_warp_reads_its_own_address_in_program_order(engine):
    assert verdict(ALLOCATOR_OWN_READ, engine)[0] == "PROVEN"


def test_alloc_inside_elect_one_is_tmem_misuse():
    src = ALLOCATOR_OWN_READ.replace("        tmem.allocate(32)\n",
                                     "        with elect_one():\n"
                                     "            tmem.allocate(32)\n")
    assert verdict(src, "explicit") == ("VIOLATED", "tmem-misuse")


@pytest.mark.parametrize("cols", [16, 48, 1024])
def test_column_count_must_be_a_power_of_two_in_range(cols):
    with pytest.raises(ConfigError, match="num_columns"):
        check(ALLOCATOR_OWN_READ.replace("allocate(32)", f"allocate({cols})"))


def test_barrier_for_retrieve_is_required():
    with pytest.raises(ConfigError, match="barrier_for_retrieve"):
        check(ALLOCATOR_OWN_READ.replace(
            "barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=32),", ""))


def test_kernels_without_tmem_allocation_get_no_tmem_state():
    from pipeproof.api import compile_file
    from pipeproof.model.system import System

    umma = ROOT / "examples" / "textbook" / "pipeline_umma_async.pipe"
    sysm = System(compile_file(umma))
    assert sysm.tmem == {} and not any(n.startswith("tmem@") for n in sysm.layout.names)
    sysm = System(compile_file(TEXTBOOK, {"pair": 1}))
    assert sorted(sysm.tmem) == [0, 1] and sysm.tmem_paired


# --------------------------------------------------------------------------- 2-CTA rules

PAIR = """
@cute.kernel
def pair(peer_allocs: int = 1, peer_frees: int = 1, peer_relinquish_first: int = 0):
    launch(block=64, cluster=(2, 1, 1))
    cta_layout = cute.tiled_divide(cute.make_layout((2, 1, 1)), (2,))
    acc = PipelineUmmaAsync.create(
        num_stages=1,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 2),
        cta_layout_vmnk=cta_layout,
        defer_sync=True,
    )
    tmem = TmemAllocator(barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=64),
                         allocator_warp_id=0, is_two_cta=True)
    pipeline_init_arrive(cluster_shape_mn=(2, 1))
    pipeline_init_wait(cluster_shape_mn=(2, 1))
    leader = cute.arch.block_idx_in_cluster() % 2 == 0
    with role("epilogue", warps=[0]):
        if peer_relinquish_first and not leader:
            tmem.relinquish_alloc_permit()
        if leader or peer_allocs:
            tmem.allocate(64)
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr()
        state = make_pipeline_state(PipelineUserType.Consumer, 1)
        acc.consumer_wait(state)
        read(acc, state)
        with elect_one():
            acc.consumer_release(state)
        if leader or peer_frees:
            tmem.free(ptr)
    with role("mma", warps=[1]):
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr()
        state = make_pipeline_state(PipelineUserType.Producer, 1)
        if leader:
            acc.producer_acquire(state)
            acc.producer_commit(state)
        state.advance()
        acc.producer_tail(state)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_pair_protocol_is_proven(engine):
    assert verdict(PAIR, engine)[0] == "PROVEN"


def test_pair_dealloc_mbarrier_init_must_be_visible_cluster_wide():
    # TmemAllocator.free's remote arrive on the peer's dealloc mbarrier needs the init
    # published cluster-wide (the kernel's pipeline_init_arrive/wait)
    src = PAIR.replace("    pipeline_init_arrive(cluster_shape_mn=(2, 1))\n", "") \
              .replace("    pipeline_init_wait(cluster_shape_mn=(2, 1))\n", "")
    status, prop = verdict(src, "explicit")
    assert status == "VIOLATED" and prop == "use-before-init", (status, prop)


def test_two_cta_allocator_needs_a_pair():
    src = ALLOCATOR_OWN_READ.replace("allocator_warp_id=0)", "allocator_warp_id=0, "
                                     "is_two_cta=True)")
    with pytest.raises(ConfigError, match="pair"):
        check(src)


#: one-parameter misuses of the protocol, each tmem-misuse: (kernel, parameters, id)
MISUSES = [
    # rule 1: the MMA writes the accumulator before tcgen05.alloc
    (ONE, {"mma_early": 1}, "mma_before_the_allocation"),
    # no tcgen05.alloc at all (free would also find nothing to free)
    (ONE, {"alloc": 0}, "accumulator_without_any_allocation"),
    # rule 3: every allocation is freed before the CTA exits; and only once
    (ONE, {"frees": 0}, "exit_with_tmem_allocated"),
    (ONE, {"frees": 2}, "double_dealloc"),
    # rule 4 (PTX ISA: no tcgen05.alloc after relinquish_alloc_permit; relinquishing
    # after the allocation, the default, is fine)
    (ONE, {"relinquish_first": 1}, "alloc_after_relinquish"),
    # rule 5: the peer's allocator never issues tcgen05.alloc/dealloc.cta_group::2 (the
    # leader waits for it until the peer exits), or it relinquished first
    (PAIR, {"peer_allocs": 0}, "pair_alloc_needs_both_ctas"),
    (PAIR, {"peer_frees": 0}, "pair_dealloc_needs_both_ctas"),
    (PAIR, {"peer_relinquish_first": 1}, "pair_alloc_after_the_peer_relinquished"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kernel,params", [(k, p) for k, p, _ in MISUSES],
                         ids=[i for _, _, i in MISUSES])
def test_protocol_misuse_is_tmem_misuse(engine, kernel, params):
    assert verdict(kernel, engine, **params) == ("VIOLATED", "tmem-misuse")


@pytest.mark.parametrize("name", ["t1-bug", "t1-fixed", "t2-bug", "t3-bug", "t3-fixed",
                                  "t4-bug", "textbook"])
def test_reduced_search_agrees_with_the_full_graph(name):
    """The partial-order reduction's tensor-memory footprints (``por.Footprints``: a
    relinquish writes only its CTA's permit, which only an alloc reads) lose no
    violation: verdict and property equal to the unreduced search's."""
    from test_por import _compare_por

    path = TEXTBOOK if name == "textbook" else BUGS / f"{name}.pipe"
    _compare_por(path.read_text(), name)
