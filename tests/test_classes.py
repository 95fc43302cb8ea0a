"""Every pipeline class: the barrier counts it derives and the instructions it emits.

The counts must come out the way CUTLASS derives them (``cutlass/pipeline/helpers.py``
``_get_thread_arrive_count``; ``sm90.py``; ``sm100.py``), and each method must lower to
the PTX-level effects of research note section 6: who waits on which barrier with which
parity, who arrives where with how many arrivals and bytes, which CTAs a
``tcgen05.commit`` or a TMA delivery targets.  Small configurations are compiled (not
checked) and their ``CompiledKernel.pipelines`` and agent programs inspected.
"""

from __future__ import annotations

import textwrap
from typing import Any, Optional

import pytest

from pipeproof.model.compile import CompiledKernel, compile_kernel
from pipeproof.model.errors import ConfigError
from pipeproof.model.lang.parser import parse
from pipeproof.model.pipelines.base import ArrayDecl
from pipeproof.model.program import (Arrive, BarRef, BulkCommit, BulkWaitRead, ClusterArrive,
                                     ClusterWait, CpAsyncArrive, FenceMbarInit, Instr, MbarInit,
                                     NamedBarrierOp, NamedWait, TmaLoad, UmmaCommit, Wait)

import generators as G
from helpers import check


def compiled(source: str, params: Optional[dict] = None) -> CompiledKernel:
    return compile_kernel(parse(textwrap.dedent(source).lstrip("\n"), "<classes>"), params or {})


def gen(cfg: G.Config, mutation: Optional[str] = None) -> CompiledKernel:
    return compiled(G.render(cfg, mutation))


def arrays(ck: CompiledKernel) -> dict[str, ArrayDecl]:
    return {f"{d.var}.{a.name}": a for d in ck.pipelines for a in d.arrays}


def code(ck: CompiledKernel, cta: int, warp: int, typ: Any = Instr) -> list:
    return [i for i in ck.program(cta, warp).code if isinstance(i, typ)]


def arrivals(ins: Arrive) -> list[tuple[str, int, int]]:
    return [(str(a.bar), a.count, a.tx) for a in ins.arrivals]


def bar(array: str, stage: int, cta: int = 0) -> BarRef:
    return BarRef(cta, array, stage)


# =========================================================================== PipelineAsync


@pytest.mark.parametrize("psig,pw,full", [("thread", 1, 32), ("thread", 2, 64), ("elect", 2, 2),
                                          ("fa", 1, 1)])
def test_pipeline_async_full_count_follows_producer_signalling(psig: str, pw: int,
                                                             full: int) -> None:
    ck = gen(G.Config("PipelineAsync", stages=2, k_tiles=1, pw=pw, psig=psig))
    a = arrays(ck)
    assert a["pipe.full"].count == full and a["pipe.full"].stages == 2
    assert a["pipe.empty"].count == 32
    commit = [i for i in code(ck, 0, 0, Arrive)]
    per_warp = 32 if psig == "thread" else 1
    assert [arrivals(i) for i in commit] == [[("pipe.full[0]@cta0", per_warp, 0)]]


@pytest.mark.parametrize("csig,cw,empty,per_warp", [("thread", 2, 64, 32), ("elect", 2, 2, 1),
                                                    ("fa", 1, 1, 1)])
def test_pipeline_async_empty_count_follows_consumer_signalling(csig: str, cw: int, empty: int,
                                                               per_warp: int) -> None:
    ck = gen(G.Config("PipelineAsync", stages=2, k_tiles=2, pw=1, cw=cw, csig=csig))
    assert arrays(ck)["pipe.empty"].count == empty
    for w in range(1, 1 + cw):
        rel = code(ck, 0, w, Arrive)
        assert [arrivals(i) for i in rel] == [[("pipe.empty[0]@cta0", per_warp, 0)],
                                              [("pipe.empty[1]@cta0", per_warp, 0)]]


def test_pipeline_async_waits_use_producer_phase1_and_consumer_phase0() -> None:
    ck = gen(G.Config("PipelineAsync", stages=2, k_tiles=4))
    pw = [(str(w.bar), w.parity) for w in code(ck, 0, 0, Wait)]
    cw = [(str(w.bar), w.parity) for w in code(ck, 0, 1, Wait)]
    assert pw == [("pipe.empty[0]@cta0", 1), ("pipe.empty[1]@cta0", 1),
                  ("pipe.empty[0]@cta0", 0), ("pipe.empty[1]@cta0", 0),
                  # producer_tail: one more wait on every stage
                  ("pipe.empty[0]@cta0", 1), ("pipe.empty[1]@cta0", 1)]
    assert cw == [("pipe.full[0]@cta0", 0), ("pipe.full[1]@cta0", 0),
                  ("pipe.full[0]@cta0", 1), ("pipe.full[1]@cta0", 1)]


def test_pipeline_async_create_inits_in_warp0_and_syncs_the_cta() -> None:
    ck = gen(G.Config("PipelineAsync", stages=3, k_tiles=1))
    inits = code(ck, 0, 0, MbarInit)
    assert len(inits) == 1 and dict(inits[0].arrays) == {"pipe.full": 32, "pipe.empty": 32}
    assert code(ck, 0, 1, MbarInit) == []
    for w in (0, 1):
        assert len(code(ck, 0, w, FenceMbarInit)) == 1
        syncs = code(ck, 0, w, NamedBarrierOp)
        assert len(syncs) == 1 and syncs[0].id == 0 and syncs[0].count is None


def test_pipeline_async_defer_sync_leaves_the_sync_to_the_kernel() -> None:
    ck = gen(G.Config("PipelineAsync", stages=1, k_tiles=1, defer_sync=True))
    assert len(code(ck, 0, 1, NamedBarrierOp)) == 1   # pipeline_init_wait() only


def test_pipeline_cp_async_commit_is_a_noinc_arrive_per_lane() -> None:
    ck = gen(G.Config("PipelineCpAsync", stages=2, k_tiles=1, pw=2))
    assert arrays(ck)["pipe.full"].count == 64
    for w in (0, 1):
        (arr,) = code(ck, 0, w, CpAsyncArrive)
        assert arr.noinc and arr.count == 32 and str(arr.bar) == "pipe.full[0]@cta0"


def test_pipeline_cp_async_has_no_remote_commit() -> None:
    with pytest.raises(ConfigError, match="producer_mask"):
        compiled("""
            @cute.kernel
            def k():
                launch(block=64, cluster=(2, 1, 1))
                pipe = PipelineCpAsync.create(num_stages=1,
                    producer_group=CooperativeGroup(Agent.Thread, 32),
                    consumer_group=CooperativeGroup(Agent.Thread, 32), producer_mask=1)
                with role("p", warps=[0]):
                    state = make_pipeline_state(PipelineUserType.Producer, 1)
                    pipe.producer_commit(state)
        """)


# =========================================================================== PipelineTmaAsync


def test_tma_async_single_cta_counts_and_signalling() -> None:
    """Cluster of one: full counts the one elected arrive.expect_tx and tx_count bytes;
    lane 0 of every consumer warp releases locally: empty counts consumer warps."""
    ck = gen(G.Config("PipelineTmaAsync", stages=2, k_tiles=1, cw=2, a_bytes=1024,
                      b_bytes=2048))
    a = arrays(ck)
    assert (a["ab.full"].count, a["ab.full"].tx_count) == (1, 3072)
    assert a["ab.empty"].count == 2
    (w,) = [i for i in code(ck, 0, 0, Wait) if "acquire" in i.label]
    assert (str(w.bar), w.parity) == ("ab.empty[0]@cta0", 1)
    (arm,) = code(ck, 0, 0, Arrive)
    assert arrivals(arm) == [("ab.full[0]@cta0", 1, 3072)]
    for warp in (1, 2):
        (rel,) = code(ck, 0, warp, Arrive)
        assert arrivals(rel) == [("ab.empty[0]@cta0", 1, 0)]


def test_tma_async_producer_commit_is_a_noop() -> None:
    ck = gen(G.Config("PipelineTmaAsync", stages=1, k_tiles=1))
    labels = [i.label for i in ck.program(0, 0).code]
    assert not any("producer_commit" in lbl for lbl in labels)


def test_tma_async_2x2_multicast_release_targets_and_deliveries() -> None:
    """The textbook 2x2 multicast mainloop: CTA r's consumer lanes release to the CTAs
    of its row and column; each TMA load lands in every CTA of its mask."""
    ck = compile_kernel(parse(open(G_EXAMPLE).read(), "multicast"), {"k_tiles": 1})
    assert arrays(ck)["ab.empty"].count == 3
    assert arrays(ck)["ab.full"].tx_count == 8192
    expect = {0: [0, 1, 2], 1: [0, 1, 3], 2: [0, 2, 3], 3: [1, 2, 3]}
    for cta, dsts in expect.items():
        (rel,) = code(ck, cta, 1, Arrive)
        assert [a.bar.cta for a in rel.arrivals] == dsts
        assert all(a.count == 1 for a in rel.arrivals)
        loads = code(ck, cta, 0, TmaLoad)
        assert len(loads) == 2
        for ld in loads:
            assert len(ld.deliveries) == 2 and all(d.bytes == 2048 for d in ld.deliveries)
            assert all(d.bar.cta == d.buf.cta for d in ld.deliveries)
    # every CTA receives A/2 + A/2 + B/2 + B/2 = tx_count bytes per stage
    got: dict[int, int] = {}
    for p in ck.programs:
        for ld in code(ck, p.cta, p.warp, TmaLoad):
            for d in ld.deliveries:
                got[d.bar.cta] = got.get(d.bar.cta, 0) + d.bytes
    assert got == {0: 8192, 1: 8192, 2: 8192, 3: 8192}


G_EXAMPLE = str(__import__("pathlib").Path(__file__).resolve().parent.parent
                / "examples" / "textbook" / "pipeline_tma_async_multicast.pipe")


def test_tma_async_cluster_create_syncs_the_cluster() -> None:
    ck = gen(G.Config("PipelineTmaAsync", stages=1, k_tiles=1, cluster=(2, 1)))
    for cta in (0, 1):
        for w in (0, 1):
            ca = code(ck, cta, w, ClusterArrive)
            assert len(ca) == 1 and ca[0].relaxed
            assert len(code(ck, cta, w, ClusterWait)) == 1


def test_tma_async_enable_multicast_signaling_counts_partners_per_warp() -> None:
    ck = compiled("""
        @cute.kernel
        def k():
            launch(block=96, cluster=(2, 2, 1))
            ab = PipelineTmaAsync.create(num_stages=1,
                producer_group=CooperativeGroup(Agent.Thread, 1),
                consumer_group=CooperativeGroup(Agent.Thread, 64),
                tx_count=1024, cta_layout_vmnk=cute.make_layout((1, 2, 2, 1)),
                enable_multicast_signaling=True)
    """)
    assert arrays(ck)["ab.empty"].count == 3 * 2


def test_tma_async_extra_tx_count_adds_to_the_arm() -> None:
    ck = gen(G.Config("PipelineTmaAsync", stages=1, k_tiles=1, extra_tx=1024))
    (arm,) = code(ck, 0, 0, Arrive)
    assert arrivals(arm) == [("ab.full[0]@cta0", 1, 4096 + 1024)]


# =========================================================================== PipelineTmaUmma


def test_tma_umma_2cta_leader_arms_peer_does_not() -> None:
    ck = gen(G.Config("PipelineTmaUmma", stages=1, k_tiles=1, cluster=(2, 1), v=2))
    a = arrays(ck)
    assert (a["ab.full"].count, a["ab.full"].tx_count) == (1, 4096)
    assert a["ab.empty"].count == 1
    (arm,) = code(ck, 0, 0, Arrive)
    assert arrivals(arm) == [("ab.full[0]@cta0", 1, 4096)]
    assert code(ck, 1, 0, Arrive) == []
    # both TMA warps wait on their own empty barrier
    assert [str(w.bar) for w in code(ck, 1, 0, Wait)][0] == "ab.empty[0]@cta1"
    # the peer's bytes land in its own buffer and complete on the leader's barrier
    (ld,) = code(ck, 1, 0, TmaLoad)
    (d,) = ld.deliveries
    assert (d.bar.cta, d.buf.cta, d.bytes) == (0, 1, 2048)
    # the leader's MMA releases with one tcgen05.commit multicast to both CTAs
    (commit,) = code(ck, 0, 1, UmmaCommit)
    assert sorted(str(b) for b in commit.bars) == ["ab.empty[0]@cta0", "ab.empty[0]@cta1"]
    assert code(ck, 1, 1, UmmaCommit) == []


def test_tma_umma_single_cta_commit_is_local() -> None:
    ck = gen(G.Config("PipelineTmaUmma", stages=2, k_tiles=2))
    commits = code(ck, 0, 1, UmmaCommit)
    assert [[str(b) for b in c.bars] for c in commits] == [["ab.empty[0]@cta0"],
                                                          ["ab.empty[1]@cta0"]]


def test_tma_umma_v1_cluster_commit_goes_to_the_column() -> None:
    ck = gen(G.Config("PipelineTmaUmma", stages=1, k_tiles=1, cluster=(2, 1), v=1))
    assert arrays(ck)["ab.empty"].count == 2
    for cta in (0, 1):
        (commit,) = code(ck, cta, 1, UmmaCommit)
        assert sorted(b.cta for b in commit.bars) == [0, 1]
        (arm,) = code(ck, cta, 0, Arrive)        # every CTA is a leader with V == 1
        assert arrivals(arm) == [(f"ab.full[0]@cta{cta}", 1, 4096)]


# =========================================================================== PipelineAsyncUmma


def test_async_umma_2cta_producers_arrive_on_the_leader() -> None:
    ck = gen(G.Config("PipelineAsyncUmma", stages=1, k_tiles=1, cluster=(2, 1), v=2))
    assert arrays(ck)["pipe.full"].count == 64
    for cta in (0, 1):
        (commit,) = code(ck, cta, 0, Arrive)
        assert arrivals(commit) == [("pipe.full[0]@cta0", 32, 0)]
    (rel,) = code(ck, 0, 1, UmmaCommit)
    assert sorted(str(b) for b in rel.bars) == ["pipe.empty[0]@cta0", "pipe.empty[0]@cta1"]


def test_async_umma_single_cta() -> None:
    ck = gen(G.Config("PipelineAsyncUmma", stages=1, k_tiles=1))
    (commit,) = code(ck, 0, 0, Arrive)
    assert arrivals(commit) == [("pipe.full[0]@cta0", 32, 0)]
    (rel,) = code(ck, 0, 1, UmmaCommit)
    assert [str(b) for b in rel.bars] == ["pipe.empty[0]@cta0"]


# =========================================================================== PipelineUmmaAsync


def test_umma_async_2cta_commit_to_both_and_releases_to_the_leader() -> None:
    ck = gen(G.Config("PipelineUmmaAsync", stages=2, k_tiles=1, cluster=(2, 1), v=2))
    a = arrays(ck)
    assert (a["acc.full"].count, a["acc.empty"].count) == (1, 64)
    (commit,) = code(ck, 0, 0, UmmaCommit)
    assert sorted(str(b) for b in commit.bars) == ["acc.full[0]@cta0", "acc.full[0]@cta1"]
    for cta in (0, 1):
        (rel,) = code(ck, cta, 1, Arrive)
        assert arrivals(rel) == [("acc.empty[0]@cta0", 32, 0)]


def test_umma_async_tail_waits_once_for_the_last_release() -> None:
    """producer_tail: advance S - 1 times, then one wait (even ranks only)."""
    ck = gen(G.Config("PipelineUmmaAsync", stages=3, k_tiles=2))
    waits = [(str(w.bar), w.parity) for w in code(ck, 0, 0, Wait)]
    # acquires of stages 0, 1 (phase 1); tail: state (2, 1) -> advance twice -> (1, 0)
    assert waits == [("acc.empty[0]@cta0", 1), ("acc.empty[1]@cta0", 1),
                     ("acc.empty[1]@cta0", 0)]


def test_umma_async_elected_release_counts_warps() -> None:
    ck = gen(G.Config("PipelineUmmaAsync", stages=1, k_tiles=1, cw=2, csig="elect"))
    assert arrays(ck)["acc.empty"].count == 2
    for w in (1, 2):
        (rel,) = code(ck, 0, w, Arrive)
        assert arrivals(rel) == [("acc.empty[0]@cta0", 1, 0)]


# =========================================================================== CLC


def test_clc_counts_and_signalling() -> None:
    """full: one arrive.expect_tx(16) per CTA; empty (used in CTA 0 only): every
    consumer thread of the cluster; lanes < cluster_size arm every CTA, unelected."""
    ck = gen(G.Config("PipelineClcFetchAsync", stages=1, k_tiles=1, cluster=(2, 1)))
    a = arrays(ck)
    assert (a["clc.full"].count, a["clc.full"].tx_count) == (1, 16)
    assert a["clc.empty"].count == 96
    prog = code(ck, 0, 0)
    first_wait = next(i for i in prog if isinstance(i, Wait))
    assert (str(first_wait.bar), first_wait.parity) == ("clc.empty[0]@cta0", 1)
    arm = next(i for i in prog if isinstance(i, Arrive))
    assert arrivals(arm) == [("clc.full[0]@cta0", 1, 16), ("clc.full[0]@cta1", 1, 16)]
    query = next(i for i in prog if isinstance(i, TmaLoad))
    assert query.kind == "clc"
    assert sorted((d.bar.cta, d.bytes) for d in query.deliveries) == [(0, 16), (1, 16)]
    rel = [i for i in code(ck, 1, 1, Arrive)]
    assert rel and all(arrivals(r) == [("clc.empty[0]@cta0", 32, 0)] for r in rel)


def test_clc_response_is_16_bytes_whatever_tx_count_says() -> None:
    """The try_cancel response is 16 bytes; a pipeline that expects more hangs."""
    cfg = G.Config("PipelineClcFetchAsync", stages=1, k_tiles=1)
    ck = gen(cfg, "tx_plus")
    query = next(i for i in code(ck, 0, 0) if isinstance(i, TmaLoad))
    assert all(d.bytes == 16 for d in query.deliveries)
    assert check(G.render(cfg, "tx_plus")).prop == "deadlock"


# =========================================================================== multi consumers


def test_multi_consumers_empty_counts_both_groups() -> None:
    ck = gen(G.Config("PipelineTmaMultiConsumersAsync", stages=1, k_tiles=1, csig="elect"))
    assert arrays(ck)["ab.empty"].count == 1 + 1
    (commit,) = code(ck, 0, 1, UmmaCommit)
    assert [str(b) for b in commit.bars] == ["ab.empty[0]@cta0"]
    (rel,) = code(ck, 0, 2, Arrive)
    assert arrivals(rel) == [("ab.empty[0]@cta0", 1, 0)]


def test_multi_consumers_legacy_per_lane_signalling() -> None:
    """A Thread group whose size is a multiple of 32 selects the deprecated per-lane
    path: every lane arrives locally."""
    ck = gen(G.Config("PipelineTmaMultiConsumersAsync", stages=1, k_tiles=1, csig="thread"))
    assert arrays(ck)["ab.empty"].count == 1 + 32
    (rel,) = code(ck, 0, 2, Arrive)
    assert arrivals(rel) == [("ab.empty[0]@cta0", 32, 0)]


def test_multi_consumers_legacy_path_rejects_clusters() -> None:
    with pytest.raises(ConfigError, match="clusters > 1"):
        compiled("""
            @cute.kernel
            def k():
                launch(block=96, cluster=(2, 1, 1))
                ab = PipelineTmaMultiConsumersAsync.create(num_stages=1,
                    producer_group=CooperativeGroup(Agent.Thread, 1),
                    consumer_group_umma=CooperativeGroup(Agent.Thread, 1),
                    consumer_group_async=CooperativeGroup(Agent.Thread, 32),
                    tx_count=1024, cta_layout_vmnk=cute.make_layout((1, 2, 1, 1)))
        """)


# =========================================================================== TMA store


@pytest.mark.parametrize("cls", ["PipelineTmaStore", "TmaStoreFence"])
def test_tma_store_groups(cls: str) -> None:
    """producer_commit = commit_group; producer_acquire = wait_group.read(stages - 1);
    producer_tail = wait_group.read(0); no mbarriers at all."""
    ck = gen(G.Config(cls, stages=3, k_tiles=2, cw=1))
    assert arrays(ck) == {}
    waits = [i.n for i in code(ck, 0, 0, BulkWaitRead)]
    assert waits == [2, 2, 0]
    assert len(code(ck, 0, 0, BulkCommit)) == 2


def test_tma_store_has_no_consumer_side() -> None:
    with pytest.raises(ConfigError, match="no consumer side"):
        compiled("""
            @cute.kernel
            def k():
                launch(block=32, cluster=(1, 1, 1))
                store = PipelineTmaStore.create(num_stages=2,
                    producer_group=CooperativeGroup(Agent.Thread, 32))
                store.consumer_wait(0)
        """)


# =========================================================================== PipelineOrder


def test_pipeline_order_barriers_and_turns() -> None:
    """depth * length barriers counting the producer group; group g waits on its own
    barrier (group 0 starts holding the token: phase 1) and arrives on the next group's."""
    ck = gen(G.Config("PipelineOrder", stages=2, k_tiles=2, length=2))
    a = arrays(ck)
    assert (a["order.bar"].stages, a["order.bar"].count) == (4, 32)
    g0 = [(str(w.bar), w.parity) for w in code(ck, 0, 0, Wait)]
    g1 = [(str(w.bar), w.parity) for w in code(ck, 0, 1, Wait)]
    assert g0 == [("order.bar[0]@cta0", 1), ("order.bar[2]@cta0", 1)]
    assert g1 == [("order.bar[1]@cta0", 0), ("order.bar[3]@cta0", 0)]
    assert [arrivals(x) for x in code(ck, 0, 0, Arrive)] == [[("order.bar[1]@cta0", 32, 0)],
                                                            [("order.bar[3]@cta0", 32, 0)]]
    assert [arrivals(x) for x in code(ck, 0, 1, Arrive)] == [[("order.bar[0]@cta0", 32, 0)],
                                                            [("order.bar[2]@cta0", 32, 0)]]


def test_pipeline_order_group_id_must_be_below_length() -> None:
    with pytest.raises(ConfigError, match="group_id"):
        compiled("""
            @cute.kernel
            def k():
                launch(block=32, cluster=(1, 1, 1))
                order = PipelineOrder.create(depth=1, length=2, group_id=2,
                    producer_group=CooperativeGroup(Agent.Thread, 32))
        """)


# =========================================================================== NamedBarrier


def test_named_barrier_ops() -> None:
    ck = compiled("""
        @cute.kernel
        def k():
            launch(block=64, cluster=(1, 1, 1))
            bar = NamedBarrier(barrier_id=3, num_threads=64)
            with role("a", warps=[0]):
                bar.arrive()
                bar.arrive_and_wait()
                bar.arrive_w_index(2)
                bar.arrive_unaligned()
    """)
    ops = code(ck, 0, 0, NamedBarrierOp)
    assert [(o.id, o.count, o.sync, o.aligned) for o in ops] == [
        (3, 64, False, True), (3, 64, True, True), (5, 64, False, True), (3, 64, False, False)]
    assert [w.id for w in code(ck, 0, 0, NamedWait)] == [3]
    assert ck.named_barrier_ids == (3, 5)


# =========================================================================== common errors


@pytest.mark.parametrize("cls", ["PipelineTmaAsync", "PipelineTmaUmma"])
def test_cta_layout_must_match_the_launch_cluster(cls: str) -> None:
    with pytest.raises(ConfigError, match="cluster"):
        compiled(f"""
            @cute.kernel
            def k():
                launch(block=64, cluster=(2, 1, 1))
                ab = {cls}.create(num_stages=1,
                    producer_group=CooperativeGroup(Agent.Thread, 1),
                    consumer_group=CooperativeGroup(Agent.Thread, 1),
                    tx_count=1024, cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))
        """)


def test_mcast_mode_00_is_rejected() -> None:
    with pytest.raises(ConfigError, match="mcast_mode_mn"):
        compiled("""
            @cute.kernel
            def k():
                launch(block=64, cluster=(1, 1, 1))
                ab = PipelineTmaAsync.create(num_stages=1,
                    producer_group=CooperativeGroup(Agent.Thread, 1),
                    consumer_group=CooperativeGroup(Agent.Thread, 1),
                    tx_count=1024, mcast_mode_mn=(0, 0))
        """)


def test_pipelines_created_differently_by_different_warps_are_rejected() -> None:
    with pytest.raises(ConfigError, match="different parameters"):
        compiled("""
            @cute.kernel
            def k():
                launch(block=64, cluster=(1, 1, 1))
                pipe = PipelineAsync.create(num_stages=warp_idx() + 1,
                    producer_group=CooperativeGroup(Agent.Thread, 32),
                    consumer_group=CooperativeGroup(Agent.Thread, 32))
        """)


def test_fa_index_phase_loop_reading_by_stage_index_is_safe() -> None:
    r = check("""
@cute.kernel
def k(stages: int = 2, k_tiles: int = 4):
    launch(block=64, cluster=(1, 1, 1))
    pipe = PipelineAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )
    with role("producer", warps=[0]):
        for k in range(k_tiles):
            idx = k % stages
            pipe.producer_acquire_w_index_phase(idx, (k // stages) % 2 ^ 1)
            write(pipe, idx)
            pipe.producer_commit_w_index(idx)
    with role("consumer", warps=[1]):
        for k in range(k_tiles):
            idx = k % stages
            pipe.consumer_wait_w_index_phase(idx, (k // stages) % 2)
            read(pipe, idx)
            pipe.consumer_release_w_index(idx)
""")
    assert r.status == "PROVEN", (r.status, r.prop)


# =========================================================================== participants


PARTICIPANTS = """
    @cute.kernel
    def k(handle_commit: int = 1):
        launch(block=64, cluster=(1, 1, 1))
        pipe = PipelineAsync.create(num_stages=2,
            producer_group=CooperativeGroup(Agent.Thread, 32),
            consumer_group=CooperativeGroup(Agent.Thread, 32),
            syncwarp_before_commit=True, syncwarp_before_release=True)
        with role("producer", warps=[0]):
            producer, _ = pipe.make_participants()
            handle = producer.acquire_and_advance()
            if handle_commit == 1:
                handle.commit()
            else:
                producer.commit()
        with role("consumer", warps=[1]):
            _, consumer = pipe.make_participants()
            handle = consumer.wait_and_advance()
            consumer.release(handle)
"""


def test_handle_commit_acts_on_the_acquired_stage() -> None:
    ck = compiled(PARTICIPANTS, {"handle_commit": 1})
    (commit,) = code(ck, 0, 0, Arrive)
    assert arrivals(commit) == [("pipe.full[0]@cta0", 32, 0)]
    (rel,) = code(ck, 0, 1, Arrive)
    assert arrivals(rel) == [("pipe.empty[0]@cta0", 32, 0)]


def test_producer_commit_without_handle_acts_on_the_current_state() -> None:
    """``producer.commit()`` after ``acquire_and_advance()`` commits the *next* stage
    (research note 7): the consumer of stage 0 waits forever."""
    ck = compiled(PARTICIPANTS, {"handle_commit": 0})
    (commit,) = code(ck, 0, 0, Arrive)
    assert arrivals(commit) == [("pipe.full[1]@cta0", 32, 0)]
    r = check(textwrap.dedent(PARTICIPANTS).lstrip("\n"), {"handle_commit": 0})
    assert r.prop == "deadlock"


def test_handle_attributes_and_barrier_pointers() -> None:
    ck = compiled("""
        @cute.kernel
        def k():
            launch(block=32, cluster=(1, 1, 1))
            pipe = PipelineAsync.create(num_stages=3,
                producer_group=CooperativeGroup(Agent.Thread, 32),
                consumer_group=CooperativeGroup(Agent.Thread, 32))
            with role("p", warps=[0]):
                producer, _ = pipe.make_participants()
                h0 = producer.acquire_and_advance()
                h1 = producer.acquire_and_advance()
                if h1.index == 1 and h1.phase == 1 and h1.count == 1:
                    mbarrier_arrive(h1.barrier)
    """)
    (arr,) = code(ck, 0, 0, Arrive)
    assert arrivals(arr) == [("pipe.full[1]@cta0", 32, 0)]
