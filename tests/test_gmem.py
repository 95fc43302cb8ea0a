"""Global memory between the clusters of a grid (issue 22 item 4): ``gmem_flags``,
``gmem_buffer``, ``cluster_idx()`` in ``.pipe`` (``model/pipelines/gmem.py``), the rules of
``GmemAtomic`` / ``GmemWait`` and of global data regions in ``model/system.py``
(``System._gmem_exec``, ``_gmem_ghost``, ``_gmem_barrier``), checked by both engines.
Every rule is in ``spec/primitives.md`` ("Global memory between clusters")."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import check
from pipeproof.api import check_file, compile_file
from pipeproof.model.errors import ConfigError, Unsupported
from pipeproof.model.program import GMEM_CTA, BarRef, GmemAtomic, GmemWait

ROOT = Path(__file__).resolve().parent.parent
TEXTBOOK = ROOT / "examples" / "textbook"
BUGS = ROOT / "examples" / "bugs"
ENGINES = ("explicit", "bmc")
OK = ("PROVEN", "SAFE")


def verdict(src: str, engine: str = "explicit", **kw) -> tuple[str, str]:
    r = check(src, engine=engine, **kw)
    return r.status, r.prop or ""


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name,params", [("split_k_serial", {"splits": 2}),
                                         ("split_k_serial", {"splits": 3}),
                                         ("stream_k_fixup", {"peers": 2})])
def test_textbook_is_proven(engine, name, params):
    r = check_file(str(TEXTBOOK / f"{name}.pipe"), params, engine=engine)
    assert r.status == "PROVEN", (name, params, r.status, r.prop)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bug,prop", [("g1", "gmem-race"), ("g2", "gmem-race"),
                                      ("g3", "gmem-race"), ("g4", "deadlock")])
def test_bug_pairs_both_engines(engine, bug, prop):
    bad = check_file(str(BUGS / f"{bug}-bug.pipe"), engine=engine)
    assert (bad.status, bad.prop) == ("VIOLATED", prop), (bug, bad.status, bad.prop)
    good = check_file(str(BUGS / f"{bug}-fixed.pipe"), engine=engine)
    assert good.status in OK, (bug, good.status, good.prop)


def test_every_cluster_of_the_grid_is_modelled():
    ck = compile_file(str(TEXTBOOK / "split_k_serial.pipe"), {"splits": 3})
    assert ck.info.clusters == 3 and ck.info.num_ctas == 3
    assert sorted({p.cta for p in ck.programs}) == [0, 1, 2]
    for p in ck.programs:
        waits = [i for i in p.code if isinstance(i, GmemWait)]
        # cluster k waits for its turn k: cluster_idx() is the program's cluster
        assert [w.value for w in waits] == [p.cta]


# --------------------------------------------------------------------------- rules

SERIAL = """
@cute.kernel
def serial(splits: int = 2):
    launch(block=64, grid=(splits, 1, 1), cluster=(1, 1, 1))
    workspace = gmem_buffer(stages=2)
    lock = gmem_flags(count=1)
    stored = NamedBarrier(barrier_id=1, num_threads=64)
    k = cute.arch.cluster_idx()
    w = cute.arch.warp_idx()
    with role("epilogue", warps=[0, 1]):
        WAIT
        if k > 0:
            read(workspace, w)
        write(workspace, w)
        stored.arrive_and_wait()
        if w == 0:
            ELECT
                lock.RELEASE
"""


def serial(wait: str = "lock.wait_eq(0, k)", release: str = "store(0, k + 1)",
           elect: str = "with elect_one():") -> str:
    return SERIAL.replace("WAIT", wait).replace("RELEASE", release).replace("ELECT", elect)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case,expect", [
    # the textbook hand-off, with the increment form of the release
    ((serial(), ), ("PROVEN", "")),
    ((serial(release="arrive_inc(0)"), ), ("PROVEN", "")),
    # every lane stores the same value: still correct (one store wins)
    ((serial(elect="if True:"), ), ("PROVEN", "")),
    # a relaxed spin acquires nothing
    ((serial(wait='lock.wait_eq(0, k, sem="relaxed")'), ), ("VIOLATED", "gmem-race")),
    # no spin at all: reads a partial no one has stored yet
    ((serial(wait="pass"), ), ("VIOLATED", "gmem-race")),
    # a relaxed add releases nothing
    ((serial(release='arrive_inc(0, sem="relaxed")'), ), ("VIOLATED", "gmem-race")),
    # waiting for a turn that never comes
    ((serial(wait="lock.wait_eq(0, k + 1)"), ), ("VIOLATED", "deadlock")),
    # every lane adds 1: the lock jumps to 32 and the next turn is skipped
    ((serial(release="arrive_inc(0)", elect="if True:"), ), ("VIOLATED", "deadlock")),
], ids=["store", "arrive_inc", "every-lane-store", "relaxed-spin", "no-spin",
        "relaxed-add", "wrong-turn", "every-lane-add"])
def test_serial_hand_off_rules(engine, case, expect):
    assert verdict(case[0], engine) == expect


def test_deadlock_names_the_flag_and_the_value():
    r = check(serial(wait="lock.wait_eq(0, k + 1)"))
    text = " ".join(r.verdict.trace.blocked)
    assert "spins on lock[0]@gmem until it is == 1" in text, text
    assert "it holds 0" in text, text


@pytest.mark.parametrize("por", [True, False])
@pytest.mark.parametrize("case,expect", [
    (serial(), "PROVEN"),
    (serial(wait='lock.wait_eq(0, k, sem="relaxed")'), "VIOLATED"),
    (serial(wait="lock.wait_eq(0, k + 1)"), "VIOLATED"),
], ids=["ok", "race", "deadlock"])
def test_partial_order_reduction_keeps_the_verdict(por, case, expect):
    """The reduction knows the flags' and global regions' conflicts (checker/por/)."""
    assert check(case, engine="explicit", por=por, params={"splits": 3}).status == expect


CHAIN = """
@cute.kernel
def chain(relay_acquires: int = 1):
    launch(block=32, grid=(3, 1, 1), cluster=(1, 1, 1))
    data = gmem_buffer()
    a = gmem_flags(count=1)
    b = gmem_flags(count=1)
    k = cute.arch.cluster_idx()
    with role("w", warps=[0]):
        if k == 0:
            write(data)
            with elect_one():
                a.store(0, 1)
        elif k == 1:
            if relay_acquires == 1:
                a.wait_eq(0, 1)
            else:
                a.wait_eq(0, 1, sem="relaxed")
            with elect_one():
                b.store(0, 1)
        else:
            b.wait_eq(0, 1)
            read(data)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_release_is_cumulative_through_an_acquire(engine):
    """CTA 1 acquires flag a (CTA 0's release) and releases flag b: CTA 2's acquire of b
    sees CTA 0's data (PTX cumulativity).  With a relaxed spin in CTA 1 it does not."""
    assert verdict(CHAIN, engine, params={"relay_acquires": 1}) == ("PROVEN", "")
    assert verdict(CHAIN, engine, params={"relay_acquires": 0}) == ("VIOLATED", "gmem-race")


CONCURRENT = """
@cute.kernel
def concurrent():
    launch(block=32, grid=(2, 1, 1), cluster=(1, 1, 1))
    out = gmem_buffer()
    with role("w", warps=[0]):
        write(out)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_unordered_stores_of_two_ctas_race(engine):
    assert verdict(CONCURRENT, engine) == ("VIOLATED", "gmem-race")


PIPELINE = """
@cute.kernel
def pg(splits: int = 2, stages: int = 2, tiles: int = 2):
    launch(block=64, grid=(splits, 1, 1), cluster=(1, 1, 1))
    ab = PipelineAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )
    workspace = gmem_buffer()
    lock = gmem_flags(count=1)
    k = cute.arch.cluster_idx()
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for t in range(tiles):
            ab.producer_acquire(state)
            write(ab, state)
            ab.producer_commit(state)
            state.advance()
        ab.producer_tail(state)
    with role("consumer", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for t in range(tiles):
            ab.consumer_wait(state)
            read(ab, state)
            ab.consumer_release(state)
            state.advance()
        lock.wait_eq(0, k)
        if k > 0:
            read(workspace)
        write(workspace)
        with elect_one():
            lock.store(0, k + 1)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_in_every_cluster(engine):
    """Each cluster's barriers and stage buffers are its own (programs compiled for
    cluster 0 are moved to the other clusters' CTAs: compile._relocate)."""
    assert verdict(PIPELINE, engine) == ("PROVEN", "")
    ck = compile_file_text(PIPELINE)
    bars = {ins.bar for p in ck.programs for ins in p.code if hasattr(ins, "bar")
            and isinstance(ins.bar, BarRef)}
    assert {b.cta for b in bars} == {0, 1}
    for p in ck.programs:
        assert all(b.cta == p.cta for b in bars if b in
                   {getattr(i, "bar", None) for i in p.code})
        for i in p.code:
            for e in i.pre + i.post:
                if e.buf.buffer == "workspace":
                    assert e.buf.cta == GMEM_CTA


def compile_file_text(src: str):
    from pipeproof.model.compile import compile_kernel
    from pipeproof.model.lang.parser import parse

    return compile_kernel(parse(src, "<test>"))


def test_atomic_adds_count_lanes():
    ck = compile_file_text(serial(release="arrive_inc(0, 2)", elect="if True:"))
    adds = [i for p in ck.programs for i in p.code if isinstance(i, GmemAtomic)]
    assert adds and all(a.value == 2 and a.lanes == 32 for a in adds)


# --------------------------------------------------------------------------- misuse

@pytest.mark.parametrize("edit,message", [
    (("grid=(splits, 1, 1), ", ""), "needs launch(grid=...)"),
    (("lock.RELEASE", "lock.store(0, k + 1, sem='acquire')"), "sem='acquire'"),
    (("lock.RELEASE", "lock.store(1, k + 1)"), "index 1 is outside the flag array"),
    (("lock.RELEASE", "lock.reset(0)"), "has no attribute 'reset' (methods: arrive_inc"),
    (("WAIT", "lock.wait_eq(0, k, sem='release')"), "sem='release'"),
    (("WAIT", "tma_load(workspace, 0, 16)"), "gmem_buffer workspace is global memory"),
])
def test_misuse_is_an_input_error(edit, message):
    src = SERIAL.replace(*edit).replace("WAIT", "lock.wait_eq(0, k)") \
        .replace("ELECT", "with elect_one():").replace("RELEASE", "store(0, k + 1)")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) \
            as e:
        check(src)
    assert e.value.loc is not None and e.value.loc.line > 0


@pytest.mark.parametrize("edit,message", [
    (("grid=(splits, 1, 1), cluster=(1, 1, 1)", "grid=(4, 1, 1), cluster=(2, 1, 1)"),
     "one CTA per cluster"),
    (("grid=(splits, 1, 1)", "grid=(5, 1, 1)"), "at most 4 are modelled"),
])
def test_unsupported_grids_are_unknown(edit, message):
    """Refused as unsupported (the command line's UNKNOWN, exit 3), never checked
    with fewer clusters than the grid has."""
    with pytest.raises(Unsupported, match=message):
        check(serial().replace(*edit))


def test_num_clusters_needs_a_grid():
    src = CONCURRENT.replace("grid=(2, 1, 1), ", "").replace("write(out)",
                                                             "x = num_clusters()")
    with pytest.raises(ConfigError, match="no grid="):
        check(src)


CUTLASS_PATTERN = """
@cute.kernel
def cp(splits: int = 2, fence: int = 1, rel_fence: int = 1):
    launch(block=64, grid=(splits, 1, 1), cluster=(1, 1, 1))
    workspace = gmem_buffer(stages=2)
    lock = gmem_flags(count=1)
    sync = NamedBarrier(barrier_id=1, num_threads=64)
    k = cute.arch.cluster_idx()
    w = cute.arch.warp_idx()
    with role("epilogue", warps=[0, 1]):
        if w == 0:
            with elect_one():
                lock.wait_ge(0, k, sem="relaxed")
                if fence == 1:
                    fence_acq_rel_gpu()
        sync.arrive_and_wait()
        if k > 0:
            read(workspace, w)
        write(workspace, w)
        sync.arrive_and_wait()
        if w == 0:
            with elect_one():
                if rel_fence == 1:
                    fence_acq_rel_gpu()
                lock.arrive_inc(0, sem="relaxed")
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("params,expect", [
    ({}, ("PROVEN", "")),
    ({"fence": 0}, ("VIOLATED", "gmem-race")),
    ({"rel_fence": 0}, ("VIOLATED", "gmem-race")),
], ids=["fences", "no-acquire-fence", "no-release-fence"])
def test_cutlass_barrier_pattern(engine, params, expect):
    """cutlass/barrier.h as written: thread 0 spins (here relaxed, then
    fence.acq_rel.gpu), a CTA barrier hands the acquire to every warp; the release is
    a CTA barrier, then fence.acq_rel.gpu and red.relaxed.gpu.add by thread 0."""
    assert verdict(CUTLASS_PATTERN, engine, params=params) == expect


TWO_WARPS = """
@cute.kernel
def two(peers: int = 2, sync: int = 1, per_peer: int = 2):
    launch(block=64, grid=(peers + 1, 1, 1), cluster=(1, 1, 1))
    partials = gmem_buffer(stages=peers)
    flag = gmem_flags(count=peers)
    done = NamedBarrier(barrier_id=1, num_threads=64)
    k = cute.arch.cluster_idx()
    with role("epilogue", warps=[0, 1]):
        if k < peers:
            write(partials, k)
            if sync == 1:
                done.arrive_and_wait()
            with elect_one():
                flag.arrive_inc(k)
        else:
            for i in range(peers):
                flag.wait_ge(i, per_peer)
                read(partials, i)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_identical_warps_of_a_cta(engine):
    """Two warps of one CTA with one program store one stage (a fill several warps
    stored to: published after a barrier that counts every thread of the CTA); the
    warps are not renamed by the symmetry reduction (their per-warp bits live with the
    region)."""
    assert verdict(TWO_WARPS, engine, params={"peers": 1}) == ("PROVEN", "")
    # after the barrier either warp's release covers both warps' stores
    assert verdict(TWO_WARPS, engine, params={"peers": 1, "per_peer": 1}) == ("PROVEN", "")
    # without it, one warp's release does not cover the other's stores
    assert verdict(TWO_WARPS, engine, params={"peers": 1, "sync": 0, "per_peer": 1}) == \
        ("VIOLATED", "gmem-race")


REUSE = """
@cute.kernel
def reuse():
    launch(block=32, grid=(2, 1, 1), cluster=(1, 1, 1))
    slot = gmem_buffer()
    flag = gmem_flags(count=2)
    k = cute.arch.cluster_idx()
    with role("w", warps=[0]):
        if k == 0:
            write(slot)
            with elect_one():
                flag.store(0, 1)
            flag.wait_eq(1, 1)
            write(slot)
        else:
            flag.wait_eq(0, 1)
            read(slot)
            with elect_one():
                flag.store(1, 1)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_write_after_read_between_ctas_is_reported(engine):
    """Reusing a slot another CTA read is reported even after a flag hand-off that
    orders it (spec/primitives.md 13, C-G6: conservative, never silent)."""
    assert verdict(REUSE, engine) == ("VIOLATED", "gmem-race")
    r = check(REUSE, engine="explicit")
    assert "write-after-read between CTAs" in r.verdict.reason


@pytest.mark.parametrize("engine", ENGINES)
def test_strict_memory_model_leaves_global_regions_to_gpu_scope(engine):
    """--memory-model strict's .cta/.cluster marks are for shared memory; a global
    region's hand-off is judged by its gpu-scope release/acquire alone."""
    ok = check_file(str(TEXTBOOK / "split_k_serial.pipe"), engine=engine,
                    memory_model="strict")
    assert ok.status == "PROVEN", (ok.status, ok.prop)
    bad = check_file(str(BUGS / "g1-bug.pipe"), engine=engine, memory_model="strict")
    assert (bad.status, bad.prop) == ("VIOLATED", "gmem-race")


BRANCH_ON_CLUSTER = """
@cute.kernel
def b(hang_in: int = 1):
    launch(block=64, grid=(2, 1, 1), cluster=(1, 1, 1))
    bar = NamedBarrier(barrier_id=1, num_threads=64)
    with role("w", warps=[0]):
        if cute.arch.cluster_idx() == hang_in:
            bar.arrive_and_wait()
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_every_cluster_path_is_checked(engine):
    """A kernel that branches on cluster_idx() is checked with every cluster of its
    grid (no global memory needed): a hang in cluster 1 only is found."""
    assert verdict(BRANCH_ON_CLUSTER, engine, params={"hang_in": 1}) == \
        ("VIOLATED", "deadlock")
    assert verdict(BRANCH_ON_CLUSTER, engine, params={"hang_in": 5}) == ("PROVEN", "")
    with pytest.raises(ConfigError, match="needs launch"):
        check(BRANCH_ON_CLUSTER.replace("grid=(2, 1, 1), ", ""))


def test_explain_a_spin_deadlock():
    from pipeproof.checker.explain import explain

    v = check_file(str(BUGS / "g4-bug.pipe"), engine="explicit").verdict
    text = explain(v)
    assert "spins on flag[0]@gmem until it is >= 3" in text and "arrive_inc" in text, text


ARRIVE_THEN_STORE = """@cute.kernel
def cg4(late: int = 1):
    launch(block=96, grid=(2, 1, 1), cluster=(1, 1, 1))
    ws = gmem_buffer(stages=1)
    lock = gmem_flags(count=1)
    sync = NamedBarrier(barrier_id=1, num_threads=96)
    k = cute.arch.cluster_idx()
    with role("a", warps=[0]):
        if k == 0:
            write(ws, 0)
            sync.arrive()
            if late == 1:
                write(ws, 0)
        else:
            lock.wait_eq(0, 1)
            read(ws, 0)
    with role("b", warps=[1]):
        if k == 0:
            write(ws, 0)
            sync.arrive()
    with role("w", warps=[2]):
        if k == 0:
            sync.arrive_and_wait()
            with elect_one():
                lock.store(0, 1)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_stores_after_an_arrive_are_not_ordered_by_the_generation(engine):
    """C-G4: a warp that bar.arrive()s and stores to the stage again is not ordered
    before the barrier's waiters, so the waiter's release publishes nothing and the
    other cluster's read races; without the late stores the hand-off is PROVEN."""
    assert verdict(ARRIVE_THEN_STORE, engine, params={"late": 1}) == ("VIOLATED", "gmem-race")
    assert verdict(ARRIVE_THEN_STORE, engine, params={"late": 0}) == ("PROVEN", "")
