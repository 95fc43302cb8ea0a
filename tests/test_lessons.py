"""The lessons of shared/research/bug-lessons.md, pinned on the full model.

Every test checks a small kernel skeleton end to end (parse, compile, transition system,
explicit engine) and asserts the verdict and the property.  Lesson 8 (memory scope) is
checked with ``memory_model="strict"`` (the release side of ordinary stores handed to
another CTA; see examples/bugs/README.md for what it does not cover).
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable

import pytest

from helpers import check
from pipeproof.checker.statespace import Explorer
from pipeproof.model.compile import compile_kernel
from pipeproof.model.errors import ConfigError
from pipeproof.model.lang.parser import parse
from pipeproof.model.program import TmaLoad
from pipeproof.model.system import System

import generators as G


def src(body: str) -> str:
    return textwrap.dedent(body).lstrip("\n")


def assert_proven(r: Any) -> None:
    assert r.status in ("SAFE", "PROVEN"), (r.status, r.prop, r.verdict.reason)


def assert_violated(r: Any, *props: str) -> None:
    assert r.status == "VIOLATED", (r.status, r.verdict.reason)
    assert r.prop in props, (r.prop, r.verdict.reason)


def reachable(source: str) -> tuple[System, list[tuple]]:
    """Every reachable state (flat slot tuples) of a small kernel, without reductions."""
    system = System(compile_kernel(parse(source, "<lesson>"), {}))
    ex = Explorer(system)
    seen = {ex.initial}
    todo = [ex.initial]
    while todo:
        s = todo.pop()
        for _step, nxt, viol in ex.successors(s):
            assert viol is None, viol
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
        assert len(seen) < 200_000
    return system, [ex.packer.unpack(s) for s in seen]


def some_state(system: System, states: list[tuple], pred: Callable[[Any], bool]) -> bool:
    """Does some reachable state have a barrier whose (phase, pending, expected, tx)
    satisfies ``pred``?"""
    for flat in states:
        for ref, b in system.bar.items():
            if pred((ref, flat[b], flat[b + 1], flat[b + 2], flat[b + 3])):
                return True
    return False


# =========================================================================== lesson 1

FRESH = src("""
    @cute.kernel
    def fresh(parity: int = 1, acquires: int = 1):
        launch(block=32, cluster=(1, 1, 1))
        pipe = PipelineAsync.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 32),
            consumer_group=CooperativeGroup(Agent.Thread, 32),
        )
        with role("w", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            mbarrier_wait(pipe.producer_get_barrier(state), parity)
""")


def test_lesson1_fresh_barrier_parity1_wait_returns_at_once() -> None:
    assert_proven(check(FRESH, {"parity": 1}))


def test_lesson1_fresh_barrier_parity0_wait_blocks() -> None:
    assert_violated(check(FRESH, {"parity": 0}), "deadlock")


PRODUCER_ALONE = src("""
    @cute.kernel
    def producer_alone(stages: int = 2, acquires: int = 2):
        launch(block=32, cluster=(1, 1, 1))
        pipe = PipelineAsync.create(
            num_stages=stages,
            producer_group=CooperativeGroup(Agent.Thread, 32),
            consumer_group=CooperativeGroup(Agent.Thread, 32),
        )
        with role("producer", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, stages)
            for k in range(acquires):
                pipe.producer_acquire(state)
                state.advance()
""")


def test_lesson1_producer_first_pass_over_the_stages_needs_no_consumer() -> None:
    """Producers start at phase 1: their first ``stages`` acquires return at once."""
    assert_proven(check(PRODUCER_ALONE, {"stages": 3, "acquires": 3}))


def test_lesson1_producer_blocks_on_the_second_pass() -> None:
    assert_violated(check(PRODUCER_ALONE, {"stages": 3, "acquires": 4}), "deadlock")


# =========================================================================== lesson 2

RAW_TX = src("""
    @cute.kernel
    def raw_tx(mode: int = 0):
        launch(block=64, cluster=(1, 1, 1))
        ab = PipelineTmaAsync.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 1),
            consumer_group=CooperativeGroup(Agent.Thread, 1),
            tx_count=1024,
        )
        with role("dma", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            bar = ab.producer_get_barrier(state)
            with elect_one():
                if mode == 0:
                    mbarrier_arrive_and_expect_tx(bar, 1024)
                else:
                    mbarrier_expect_tx(bar, 1024)
            tma_load(ab, state, bytes=1024)
        with role("mma", warps=[1]):
            state = make_pipeline_state(PipelineUserType.Consumer, 1)
            ab.consumer_wait(state)
            read(ab, state)
""")


def test_lesson2_arrive_expect_tx_plus_bytes_completes() -> None:
    assert_proven(check(RAW_TX, {"mode": 0}))


def test_lesson2_P5_expect_tx_without_its_arrive_hangs() -> None:
    """P5: a bare expect_tx on a count-1 barrier: the bytes land, the phase still needs
    its one arrival."""
    r = check(RAW_TX, {"mode": 1})
    assert_violated(r, "deadlock")
    assert any("arrival" in b for b in r.verdict.trace.blocked)


NEG_TX = src("""
    @cute.kernel
    def neg_tx():
        launch(block=96, cluster=(1, 1, 1))
        ab = PipelineTmaAsync.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 1),
            consumer_group=CooperativeGroup(Agent.Thread, 1),
            tx_count=1024,
        )
        with role("arm", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            with elect_one():
                mbarrier_arrive_and_expect_tx(ab.producer_get_barrier(state), 1024)
        with role("bytes", warps=[1]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            with elect_one():
                mbarrier_complete_tx(ab.producer_get_barrier(state), 1024)
        with role("waiter", warps=[2]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            mbarrier_wait(ab.producer_get_barrier(state), 0)
""")


def test_lesson2_tx_may_go_negative_within_a_phase() -> None:
    """Bytes may land before the matching expect_tx: a reachable state has a negative
    tx-count, and no property is violated."""
    assert_proven(check(NEG_TX))
    system, states = reachable(NEG_TX)
    assert some_state(system, states, lambda b: b[4] < 0 and b[1] == 0)


def test_lesson2_multicast_bytes_from_a_peer_can_precede_the_local_expect_tx() -> None:
    """The same in a real 2x1 multicast mainloop: the peer's half of B may complete
    on this CTA's full barrier before its own producer armed it."""
    cfg = G.Config("PipelineTmaAsync", stages=1, k_tiles=1, cluster=(2, 1))
    source = G.render(cfg)
    assert_proven(check(source))
    system, states = reachable(source)
    assert some_state(system, states, lambda b: b[0].array.endswith("full") and b[4] < 0)


def test_lesson2_P2_skipped_tma_load_after_acquire_hangs() -> None:
    """P2: producer_acquire already did arrive.expect_tx(bytes); skipping the copy
    leaves tx pending forever."""
    cfg = G.Config("PipelineTmaAsync", stages=2, k_tiles=3)
    assert_violated(check(G.render(cfg, "skip_load")), "deadlock")


# =========================================================================== lesson 3

MCAST = src("""
    @cute.kernel
    def mcast(delta1: int = 0, consumers: int = 2):
        launch(block=64, cluster=(2, 1, 1))
        cta_layout = cute.make_layout((1, 2, 1, 1))
        ab = PipelineTmaAsync.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 1),
            consumer_group=CooperativeGroup(Agent.Thread, consumers),
            tx_count=4096,
            cta_layout_vmnk=cta_layout,
        )
        rank = cute.arch.block_idx_in_cluster()
        coord = cta_layout.get_flat_coord(rank)
        a_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=2)
        b_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=1)
        with role("dma", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            ab.producer_acquire(state, extra_tx_count=delta1 if rank == 1 else 0)
            tma_load(ab, state, bytes=2048, mcast_mask=a_mask)
            tma_load(ab, state, bytes=1024, mcast_mask=b_mask)
            state.advance()
            ab.producer_tail(state)
        with role("mma", warps=[1]):
            state = make_pipeline_state(PipelineUserType.Consumer, 1)
            ab.consumer_wait(state)
            read(ab, state)
            ab.consumer_release(state)
""")


def test_lesson3_every_multicast_destination_expects_its_own_bytes() -> None:
    """Each CTA receives its own A (2048 B) plus a 1024 B half of B from itself and
    from its peer: both full barriers expect 4096 B."""
    assert_proven(check(MCAST))


def test_lesson3_under_expecting_destination_completes_early() -> None:
    """CTA 1 expects 1024 B too few: its phase completes before the peer's bytes land
    and the consumer reads a stage still being written."""
    assert_violated(check(MCAST, {"delta1": -1024}), "read-before-full")


def test_lesson3_over_expecting_destination_hangs() -> None:
    assert_violated(check(MCAST, {"delta1": 1024}), "deadlock")


def test_lesson3_empty_side_must_gather_releases_from_every_reader() -> None:
    """The empty barrier of each CTA receives one release from each CTA that read its
    multicast data (M + N - 1 = 2); counting only the local consumer over-arrives."""
    r = check(MCAST, {"consumers": 1})
    assert_violated(r, "arrival-overflow", "phase-overrun", "overwrite-before-release")


def test_lesson3_P3_clc_multicast_needs_an_expect_tx_in_every_cta() -> None:
    """P3: try_cancel multicast completes 16 B on every CTA's full barrier.  The CLC
    pipeline arms every CTA (lanes < cluster_size); arming only CTA 0 hangs CTA 1."""
    cfg = G.Config("PipelineClcFetchAsync", stages=1, k_tiles=1, cluster=(2, 1))
    ok = G.render(cfg)
    assert_proven(check(ok))
    bug = src("""
        @cute.kernel
        def p3():
            launch(block=64, cluster=(2, 1, 1))
            clc = PipelineClcFetchAsync.create(
                num_stages=1,
                producer_group=CooperativeGroup(Agent.Thread, 1),
                consumer_group=CooperativeGroup(Agent.Thread, 96),
                tx_count=16,
                cta_layout_vmnk=cute.make_layout((1, 2, 1, 1)),
            )
            with role("sched", warps=[0], ctas=[0]):
                pstate = make_pipeline_state(PipelineUserType.ProducerConsumer, 1)
                cstate = make_pipeline_state(PipelineUserType.Consumer, 1)
                bar = clc.producer_get_barrier(pstate)
                with elect_one():
                    mbarrier_arrive_and_expect_tx(bar, 16)
                clc_query(clc, pstate)
                clc.consumer_wait(cstate)
                clc.consumer_release(cstate)
            with role("worker", warps=[1]):
                state = make_pipeline_state(PipelineUserType.Consumer, 1)
                clc.consumer_wait(state)
                clc.consumer_release(state)
    """)
    assert_violated(check(bug), "deadlock")


# =========================================================================== lesson 4

PAIR = src("""
    @cute.kernel
    def pair(tx_halves: int = 2):
        launch(block=64, cluster=(2, 1, 1))
        half = 2048
        cta_layout = cute.tiled_divide(cute.make_layout((2, 1, 1)), (2,))
        ab = PipelineTmaUmma.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 1),
            consumer_group=CooperativeGroup(Agent.Thread, 1),
            tx_count=half * tx_halves,
            cta_layout_vmnk=cta_layout,
        )
        with role("tma", warps=[0]):
            producer, _ = ab.make_participants()
            handle = producer.acquire_and_advance()
            tma_load(ab, handle, bytes=half)
            producer.tail()
        with role("mma", warps=[1]):
            if ab.is_leader_cta:
                _, consumer = ab.make_participants()
                handle = consumer.wait_and_advance()
                tcgen05_mma(ab, handle)
                handle.release()
""")


def test_lesson4_2cta_bytes_are_counted_per_pair() -> None:
    """cta_group::2: both CTAs' halves complete on the leader's full barrier, which
    expects the bytes of the pair."""
    assert_proven(check(PAIR, {"tx_halves": 2}))


def test_lesson4_counting_one_cta_completes_before_the_peer_half() -> None:
    assert_violated(check(PAIR, {"tx_halves": 1}), "read-before-full")


def test_lesson4_P4_over_expecting_beyond_the_pair_hangs() -> None:
    """P4 (tilelang): expect_tx multiplied by more CTAs than the pair -- the leader's
    barrier waits for bytes nobody sends."""
    assert_violated(check(PAIR, {"tx_halves": 4}), "deadlock")


def test_lesson4_4x1_cluster_routes_bytes_to_the_pair_leader_not_the_cluster() -> None:
    """In a (4, 1) cluster with V = 2 the TMA bytes of CTA r complete on CTA r & ~1,
    so each leader's full barrier gets exactly two deliveries per stage (the pair)."""
    source = PAIR.replace("cluster=(2, 1, 1)", "cluster=(4, 1, 1)").replace(
        "make_layout((2, 1, 1))", "make_layout((4, 1, 1))").replace(
        "CooperativeGroup(Agent.Thread, 1),\n        tx_count",
        "CooperativeGroup(Agent.Thread, 2),\n        tx_count")
    ck = compile_kernel(parse(source, "<p4>"), {})
    targets: dict[int, int] = {}
    for prog in ck.programs:
        for ins in prog.code:
            if isinstance(ins, TmaLoad):
                for d in ins.deliveries:
                    assert d.bar.cta == prog.cta & ~1
                    assert d.buf.cta == prog.cta
                    targets[d.bar.cta] = targets.get(d.bar.cta, 0) + d.bytes
    assert targets == {0: 4096, 2: 4096}
    full = [a for d in ck.pipelines for a in d.arrays if a.name == "full"][0]
    assert full.tx_count == 4096


def test_lesson4_mask_outside_the_cluster_is_an_input_error() -> None:
    source = MCAST.replace("mcast_mask=b_mask", "mcast_mask=b_mask | 4")
    with pytest.raises(ConfigError) as ei:
        check(source)
    assert "mask-outside-cluster" in str(ei.value)
    assert ei.value.loc is not None and ei.value.loc.line > 0


# =========================================================================== lesson 5


def test_lesson5_remote_release_into_an_exited_cta() -> None:
    """Without producer_tail, a CTA of a multicast cluster may exit while its peer's
    consumer still releases into its empty barrier."""
    cfg = G.Config("PipelineTmaAsync", stages=1, k_tiles=1, cluster=(2, 1))
    assert_proven(check(G.render(cfg)))
    assert_violated(check(G.render(cfg, "no_tail")), "remote-op-to-exited-cta")


def test_lesson5_tcgen05_commit_after_the_cta_exited() -> None:
    """One CTA, no producer_tail: the MMA warp's last tcgen05.commit may fire after
    every warp of the CTA exited."""
    cfg = G.Config("PipelineTmaUmma", stages=2, k_tiles=2)
    assert_proven(check(G.render(cfg)))
    assert_violated(check(G.render(cfg, "no_tail")), "dangling-arrive-at-exit")


def test_lesson5_tma_store_still_reading_at_exit() -> None:
    cfg = G.Config("PipelineTmaStore", stages=2, k_tiles=3, cw=1)
    assert_proven(check(G.render(cfg)))
    assert_violated(check(G.render(cfg, "no_tail")), "dangling-arrive-at-exit")


def test_lesson5_clc_response_into_an_exited_cta() -> None:
    """try_cancel multicast is undefined if a CTA of the cluster has exited: a worker
    that leaves after its first tile while the scheduler keeps querying."""
    cfg = G.Config("PipelineClcFetchAsync", stages=1, k_tiles=1, cluster=(2, 1))
    ok = G.render(cfg)
    bug = ok.replace("""            state.advance()
            if not valid:
                break""", """            state.advance()
            break""")
    assert bug != ok
    assert_violated(check(bug), "remote-op-to-exited-cta", "deadlock")


# =========================================================================== lesson 6


def _persistent(api: str, tiles: int, k_tiles: int, stages: int) -> G.Config:
    return G.Config("PipelineAsync", stages=stages, k_tiles=k_tiles, tiles=tiles, api=api)


def test_lesson6_state_carried_across_tiles_is_safe() -> None:
    assert_proven(check(G.render(_persistent("state", 3, 3, 2))))


@pytest.mark.parametrize("k_tiles,stages", [(1, 1), (3, 2), (2, 2), (4, 3)])
def test_lesson6_P7_fresh_state_per_tile(k_tiles: int, stages: int) -> None:
    """P7: a fresh pipeline state per persistent tile is wrong unless the k-trip count
    is a multiple of 2 * stages."""
    r = check(G.render(_persistent("state", 2, k_tiles, stages), "per_tile_state"))
    assert_violated(r, *G.PHASE_CONFUSION)


@pytest.mark.parametrize("k_tiles,stages", [(1, 1), (3, 2), (2, 2)])
def test_lesson6_parity_from_a_tile_local_counter(k_tiles: int, stages: int) -> None:
    r = check(G.render(_persistent("index_phase", 2, k_tiles, stages),
                       "parity_from_tile_counter"))
    assert_violated(r, *G.PHASE_CONFUSION)


@pytest.mark.parametrize("k_tiles,stages", [(2, 1), (4, 2)])
def test_lesson6_tile_local_counter_is_right_when_k_is_a_multiple_of_2_stages(
        k_tiles: int, stages: int) -> None:
    r = check(G.render(_persistent("index_phase", 2, k_tiles, stages),
                       "parity_from_tile_counter"))
    assert_proven(r)


@pytest.mark.parametrize("k_tiles,stages", [(2, 1), (4, 2)])
def test_lesson6_fresh_state_per_tile_is_right_when_k_is_a_multiple_of_2_stages(
        k_tiles: int, stages: int) -> None:
    r = check(G.render(_persistent("state", 2, k_tiles, stages), "per_tile_state"))
    assert_proven(r)


def test_lesson6_P8_wrong_initial_wait_parity_on_a_reused_barrier() -> None:
    """P8: a consumer that starts at the producer's phase reads before the data."""
    cfg = G.Config("PipelineAsync", stages=2, k_tiles=3)
    assert_violated(check(G.render(cfg, "wrong_phase_consumer")), "read-before-full")
    assert_violated(check(G.render(cfg, "wrong_phase_producer")), "deadlock")


# =========================================================================== lesson 7

NAMED = src("""
    @cute.kernel
    def named(bid: int = 1, n: int = 64, n2: int = 64, k_tiles: int = 2,
              producer_sync: int = 1, elect: int = 0):
        launch(block=96, cluster=(1, 1, 1))
        full = NamedBarrier(barrier_id=bid, num_threads=n)
        empty = NamedBarrier(barrier_id=2, num_threads=64)
        other = NamedBarrier(barrier_id=bid, num_threads=n2)
        with role("producer", warps=[0]):
            for k in range(k_tiles):
                if elect == 1:
                    with elect_one():
                        full.arrive()
                else:
                    full.arrive()
                if producer_sync == 1:
                    empty.arrive_and_wait()
                else:
                    empty.arrive()
        with role("consumer", warps=[1]):
            for k in range(k_tiles):
                other.arrive_and_wait()
                empty.arrive()
""")


def test_lesson7_arrive_sync_handoff_is_safe() -> None:
    assert_proven(check(NAMED))


def test_lesson7_id_above_15() -> None:
    assert_violated(check(NAMED, {"bid": 16}), "named-barrier-misuse")


def test_lesson7_count_not_a_multiple_of_32() -> None:
    assert_violated(check(NAMED, {"n": 48, "n2": 48}), "named-barrier-misuse")


def test_lesson7_count_above_the_block() -> None:
    assert_violated(check(NAMED, {"n": 128, "n2": 128}), "named-barrier-misuse")


def test_lesson7_ids_colliding_between_groups_with_different_counts() -> None:
    assert_violated(check(NAMED, {"n2": 96}), "named-barrier-misuse")


def test_lesson7_arrive_instead_of_sync_double_arrives_in_one_generation() -> None:
    """arrive versus sync matters for generation reuse: a producer that only arrives
    can arrive twice before the generation completes."""
    assert_violated(check(NAMED, {"producer_sync": 0}), "named-barrier-misuse")


def test_lesson7_aligned_barrier_inside_elect_one() -> None:
    assert_violated(check(NAMED, {"elect": 1}), "named-barrier-misuse")


def test_lesson7_sync_threads_is_counted_over_live_warps() -> None:
    """bar.sync 0 without a count waits for every non-exited warp of the CTA."""
    s = src("""
        @cute.kernel
        def st(early: int = 1):
            launch(block=64, cluster=(1, 1, 1))
            with role("a", warps=[0]):
                if early == 0:
                    sync_threads()
            with role("b", warps=[1]):
                sync_threads()
    """)
    assert_proven(check(s, {"early": 1}))
    assert_proven(check(s, {"early": 0}))


# =========================================================================== lesson 8

SCOPE = src("""
    @cute.kernel
    def scope():
        launch(block=64, cluster=(2, 1, 1))
        cta_layout = cute.tiled_divide(cute.make_layout((2, 1, 1)), (2,))
        pipe = PipelineAsyncUmma.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 64),
            consumer_group=CooperativeGroup(Agent.Thread, 1),
            cta_layout_vmnk=cta_layout,
        )
        with role("softmax", warps=[0]):
            producer, _ = pipe.make_participants()
            handle = producer.acquire_and_advance()
            write(pipe, handle)
            fence_proxy_async()
            handle.commit()
            producer.tail()
        with role("mma", warps=[1], ctas=[0]):
            _, consumer = pipe.make_participants()
            handle = consumer.wait_and_advance()
            tcgen05_mma(pipe, handle)
            handle.release()
""")


SCOPE_FIXED = SCOPE.replace("""        producer, _ = pipe.make_participants()
        handle = producer.acquire_and_advance()
        write(pipe, handle)
        fence_proxy_async()
        handle.commit()
        producer.tail()""", """        state = make_pipeline_state(PipelineUserType.Producer, 1)
        pipe.producer_acquire(state)
        write(pipe, state)
        fence_proxy_async()
        mbarrier_arrive(pipe.producer_get_barrier(state), 0, scope="cluster")
        state.advance()
        pipe.producer_tail(state)""")


def test_lesson8_cta_scoped_remote_release_does_not_publish_to_the_peer() -> None:
    """The peer CTA's producers write their smem stage and arrive on the leader's full
    barrier with the default .release.cta remote arrive; the leader's MMA then reads the
    peer's smem.  A .cta-scoped release does not synchronize with a thread of another
    CTA (PTX memory model: morally strong operations), so the strict model reports the
    read; the default model follows CUTLASS, which relies on this hand-off, and accepts
    it."""
    assert SCOPE_FIXED != SCOPE
    r = check(SCOPE, memory_model="strict")
    assert_violated(r, "insufficient-scope")
    assert "pipe.buf[0]@cta1" in r.verdict.reason and "CTA 0" in r.verdict.reason
    assert_proven(check(SCOPE))  # memory_model="cutlass"


def test_lesson8_cluster_scoped_release_publishes() -> None:
    assert_proven(check(SCOPE_FIXED, memory_model="strict"))


def test_lesson8_scope_only_matters_across_ctas() -> None:
    """Stores handed to warps of the same CTA need no cluster scope, and TMA-written
    data (complete_tx) is not marked: every bundled example stays PROVEN in strict mode
    (here the 2-CTA pair with multicast TMA and a CTA-local generic hand-off)."""
    one_cta = src("""
        @cute.kernel
        def local():
            launch(block=64)
            pipe = PipelineAsync.create(
                num_stages=2,
                producer_group=CooperativeGroup(Agent.Thread, 32),
                consumer_group=CooperativeGroup(Agent.Thread, 32),
            )
            with role("p", warps=[0]):
                producer, _ = pipe.make_participants()
                for k in range(3):
                    h = producer.acquire_and_advance()
                    write(pipe, h)
                    h.commit()
                producer.tail()
            with role("c", warps=[1]):
                _, consumer = pipe.make_participants()
                for k in range(3):
                    h = consumer.wait_and_advance()
                    read(pipe, h)
                    h.release()
    """)
    assert_proven(check(one_cta, memory_model="strict"))
    from pathlib import Path

    ex = Path(__file__).resolve().parent.parent / "examples"
    for f in ("textbook/pipeline_tma_async_multicast.pipe",
              "kernels/k2_blackwell_persistent_gemm.pipe"):
        assert_proven(check(ex.joinpath(f).read_text(), memory_model="strict"))


def test_lesson8_scope_argument_is_checked() -> None:
    bad = SCOPE_FIXED.replace('scope="cluster"', 'scope="gpu"')
    with pytest.raises(ConfigError, match="scope must be"):
        check(bad)
    with pytest.raises(ConfigError, match="unknown memory model"):
        check(SCOPE, memory_model="sc")


# =========================================================================== PTX facts
# (shared/research/ptx-sync-semantics.md, on the full model)


def test_ptx_remote_use_needs_the_init_visible_to_the_cluster() -> None:
    """fence.mbarrier_init + a cluster barrier publish the init to other CTAs; a CTA
    barrier (bar.sync) is not enough for a remote arrive."""
    s = src("""
        @cute.kernel
        def init_vis(cluster_sync: int = 1):
            launch(block=32, cluster=(2, 1, 1))
            pipe = PipelineAsync.create(
                num_stages=1,
                producer_group=CooperativeGroup(Agent.Thread, 64),
                consumer_group=CooperativeGroup(Agent.Thread, 32),
                producer_mask=0,
                defer_sync=True,
            )
            if cluster_sync == 1:
                pipeline_init_arrive(cluster_shape_mn=(2, 1))
                pipeline_init_wait(cluster_shape_mn=(2, 1))
            else:
                pipeline_init_arrive()
                pipeline_init_wait()
            with role("p", warps=[0]):
                state = make_pipeline_state(PipelineUserType.Producer, 1)
                pipe.producer_commit(state)
                if block_idx_in_cluster() == 0:
                    mbarrier_wait(pipe.producer_get_barrier(state), 0)
    """)
    assert_proven(check(s, {"cluster_sync": 1}))
    assert_violated(check(s, {"cluster_sync": 0}), "use-before-init")


def test_ptx_cluster_barrier_arrive_once_per_generation() -> None:
    s = src("""
        @cute.kernel
        def cb(twice: int = 0, arrive: int = 1):
            launch(block=32, cluster=(2, 1, 1))
            if arrive == 1:
                cluster_arrive()
            if twice == 1:
                cluster_arrive()
            cluster_wait()
    """)
    assert_proven(check(s))
    assert_violated(check(s, {"twice": 1}), "cluster-barrier-misuse")
    assert_violated(check(s, {"arrive": 0}), "cluster-barrier-misuse")


def test_ptx_elect_sync_inside_elect_one() -> None:
    """elect.sync with a full member mask from one lane: the other lanes never come."""
    s = src("""
        @cute.kernel
        def el():
            launch(block=32, cluster=(1, 1, 1))
            with role("w", warps=[0]):
                with elect_one():
                    with elect_one():
                        pass
    """)
    assert_violated(check(s), "elect-misuse")


def test_ptx_clc_query_after_a_failed_response_is_undefined() -> None:
    """Issuing another try_cancel after the CTA observed a failed response is UB."""
    s = src("""
        @cute.kernel
        def clc_again(rounds: int = 2):
            launch(block=32, cluster=(1, 1, 1))
            clc = PipelineClcFetchAsync.create(
                num_stages=1,
                producer_group=CooperativeGroup(Agent.Thread, 1),
                consumer_group=CooperativeGroup(Agent.Thread, 32),
                tx_count=16,
            )
            with role("sched", warps=[0]):
                pstate = make_pipeline_state(PipelineUserType.ProducerConsumer, 1)
                cstate = make_pipeline_state(PipelineUserType.Consumer, 1)
                for i in range(rounds):
                    clc.producer_acquire(pstate)
                    clc_query(clc, pstate)
                    pstate.advance()
                    clc.consumer_wait(cstate)
                    valid = clc_response_valid(clc, cstate)
                    clc.consumer_release(cstate)
                    cstate.advance()
                clc.producer_tail(pstate)
    """)
    assert_proven(check(s, {"rounds": 1}))
    assert_violated(check(s, {"rounds": 2}), "role-misuse")
