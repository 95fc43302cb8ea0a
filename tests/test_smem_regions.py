"""Plain shared-memory regions, aliasing and cp.async commit groups (issue 22, items 1
and 3): the rules of ``model/pipelines/smem_buffer.py`` and of ``CpAsyncCommit`` /
``CpAsyncWaitGroup`` in ``model/system.py``, checked by both engines.

The wait_group rule is checked exactly: with ``G`` groups committed (group ``i`` fills
stage ``i``), ``cp.async.wait_group n`` makes stage ``i`` safe to read iff ``i < G - n``
(PTX ISA, "cp.async.wait_group": every group but the ``n`` most recent is complete)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import check
from pipeproof.model.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("explicit", "bmc")


def verdict(src: str, engine: str, **params: int) -> tuple[str, str]:
    r = check(src, params or None, engine=engine)
    return r.status, r.prop or ""


# --------------------------------------------------------------------------- wait_group

GROUPS = """
@cute.kernel
def groups(g: int = 2, n: int = 0, i: int = 0):
    launch(block=64, cluster=(1, 1, 1))
    smem = smem_buffer(stages=4)
    with role("copy", warps=[0, 1]):
        for s in range(g):
            cp_async(smem, s)
            cp_async_commit_group()
        cp_async_wait_group(n)
        sync_threads()
        read(smem, i)
        sync_threads()
        cp_async_wait_all()
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("g,n,i", [(g, n, i) for g in (1, 2, 3) for n in range(g + 1)
                                   for i in range(g)])
def test_wait_group_completes_all_but_the_n_most_recent(engine, g, n, i):
    status, prop = verdict(GROUPS, engine, g=g, n=n, i=i)
    if i < g - n:
        assert status in ("PROVEN", "SAFE"), (g, n, i, status, prop)
    else:
        assert (status, prop) == ("VIOLATED", "read-before-full"), (g, n, i)


UNCOMMITTED = """
@cute.kernel
def uncommitted(commit: int = 0):
    launch(block=32, cluster=(1, 1, 1))
    smem = smem_buffer()
    with role("copy", warps=[0]):
        cp_async(smem)
        if commit:
            cp_async_commit_group()
        cp_async_wait_group(0)
        read(smem)
        cp_async_wait_all()
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_copies_not_yet_committed_are_not_waited_for(engine):
    assert verdict(UNCOMMITTED, engine, commit=0) == ("VIOLATED", "read-before-full")
    assert verdict(UNCOMMITTED, engine, commit=1)[0] == "PROVEN"


EMPTY_GROUPS = """
@cute.kernel
def empty_groups():
    launch(block=32, cluster=(1, 1, 1))
    smem = smem_buffer()
    with role("copy", warps=[0]):
        cp_async(smem)
        cp_async_commit_group()
        cp_async_commit_group()
        cp_async_commit_group()
        cp_async_wait_group(2)
        read(smem)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_groups_count_as_groups(engine):
    # the copy's group is the oldest of three: wait_group 2 completes it
    assert verdict(EMPTY_GROUPS, engine)[0] == "PROVEN"
    bad = EMPTY_GROUPS.replace("cp_async_wait_group(2)", "cp_async_wait_group(3)")
    assert verdict(bad, engine) == ("VIOLATED", "read-before-full")


def test_wait_group_with_a_negative_count_is_bad_input():
    with pytest.raises(ConfigError, match="at least 0"):
        check(GROUPS.replace("cp_async_wait_group(n)", "cp_async_wait_group(-1)"))


# --------------------------------------------------------------------------- regions

HANDOFF = """
@cute.kernel
def handoff(first_sync: int = 1, second_sync: int = 1):
    launch(block=64, cluster=(1, 1, 1))
    scratch = smem_buffer()
    with role("writer", warps=[0]):
        for it in range(2):
            write(scratch)
            if first_sync:
                barrier(barrier_id=1, number_of_threads=64)
            if second_sync:
                barrier(barrier_id=2, number_of_threads=64)
    with role("reader", warps=[1]):
        for it in range(2):
            if first_sync:
                barrier(barrier_id=1, number_of_threads=64)
            read(scratch)
            if second_sync:
                barrier(barrier_id=2, number_of_threads=64)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_scratch_handoff_needs_both_barriers(engine):
    assert verdict(HANDOFF, engine)[0] == "PROVEN"
    # no barrier before the read: it may come before the stores (nothing written yet)
    # or while they are in flight
    assert verdict(HANDOFF, engine, first_sync=0) == ("VIOLATED", "read-before-full")
    assert verdict(HANDOFF, engine, second_sync=0)[0] == "VIOLATED"


READ_HOLDS = """
@cute.kernel
def read_holds(release_first: int = 1):
    launch(block=64, cluster=(1, 1, 1))
    scratch = smem_buffer()
    done = smem_mbarrier()
    with role("reader", warps=[0]):
        with elect_one():
            mbarrier_init(done, 32)
        mbarrier_init_fence()
        write(scratch)
        sync_threads()
        read(scratch)
        if release_first:
            mbarrier_arrive(done)
    with role("writer", warps=[1]):
        mbarrier_init_fence()
        sync_threads()
        if release_first:
            mbarrier_wait(done, 0)
        write(scratch)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_read_holds_the_region_until_the_readers_next_release(engine):
    # the writer waits for the reader's arrive (a release) before storing: safe
    assert verdict(READ_HOLDS, engine)[0] == "PROVEN"
    # nothing orders the writer after the read: its stores may come first (the read
    # sees them in flight) or after the read started (the region is held)
    assert verdict(READ_HOLDS, engine, release_first=0)[0] == "VIOLATED"


OWN_DATA = """
@cute.kernel
def own_data():
    launch(block=32, cluster=(1, 1, 1))
    scratch = smem_buffer()
    with role("w", warps=[0]):
        write(scratch)
        read(scratch)
        write(scratch)
        read(scratch)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_warp_reads_back_and_overwrites_its_own_data(engine):
    # program order orders a warp's own loads and stores: no race with itself
    assert verdict(OWN_DATA, engine)[0] == "PROVEN"


TMA_VS_STORES = """
@cute.kernel
def tma_vs_stores(order: int = 0):
    launch(block=64, cluster=(1, 1, 1))
    buf = smem_buffer()
    bar = smem_mbarrier()
    with role("dma", warps=[0]):
        with elect_one():
            mbarrier_init(bar, 1)
        mbarrier_init_fence()
        sync_threads()
        if order >= 1 and order != 2:
            write(buf)
        if order == 3:
            fence_proxy_async()
        with elect_one():
            mbarrier_arrive_and_expect_tx(bar, 1024)
        tma_load(buf, 0, bytes=1024, tma_bar_ptr=bar)
        mbarrier_wait(bar, 0)
        read(buf)
    with role("other", warps=[1]):
        mbarrier_init_fence()
        sync_threads()
        if order == 2:
            write(buf)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_thread_stores_and_a_tma_write_to_the_same_region_race(engine):
    assert verdict(TMA_VS_STORES, engine)[0] == "PROVEN"
    # the warp's own stores (released by its arrive), then a TMA load into the same
    # bytes with no proxy fence between the generic and the async proxy's writes
    assert verdict(TMA_VS_STORES, engine, order=1) == ("VIOLATED", "missing-proxy-fence")
    assert verdict(TMA_VS_STORES, engine, order=3)[0] == "PROVEN"
    # another warp stores while the TMA bytes are landing (or before, or while read)
    assert verdict(TMA_VS_STORES, engine, order=2)[0] == "VIOLATED"


ALIAS = """
@cute.kernel
def alias(sync: int = 1):
    launch(block=64, cluster=(1, 1, 1))
    a = smem_buffer(stages=2)
    b = smem_buffer(alias=a)
    with role("w", warps=[0]):
        write(a, 0)
        if sync:
            barrier(barrier_id=1, number_of_threads=64)
    with role("r", warps=[1]):
        if sync:
            barrier(barrier_id=1, number_of_threads=64)
        read(b, 0)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_an_alias_is_the_same_memory(engine):
    assert verdict(ALIAS, engine)[0] == "PROVEN"
    assert verdict(ALIAS, engine, sync=0) == ("VIOLATED", "read-before-full")
    # stage 1 of `a` is not stage 0 of the alias: a separate buffer, never written
    other = ALIAS.replace("write(a, 0)", "write(a, 1)")
    assert verdict(other, engine) == ("VIOLATED", "read-before-full")


@pytest.mark.parametrize("src,words", [
    ("x = smem_buffer(stages=0)", "at least one stage"),
    ("a = smem_buffer()\n    b = smem_buffer(stages=2, alias=a)", "only 1 stages"),
    ("a = smem_buffer(alias=3)", "expected a region or a pipeline"),
    ("a = smem_buffer()\n    a.wait()", "has no methods"),
    ("a = smem_buffer()\n    tma_load(a, 0, bytes=1024)", "tma_bar_ptr"),
])
def test_region_misuse_is_bad_input(src, words):
    with pytest.raises(ConfigError) as err:
        check(f"@cute.kernel\ndef k():\n    launch(block=32, cluster=(1, 1, 1))\n    {src}\n")
    assert words in str(err.value)


# --------------------------------------------------------------------------- examples

PAIRS = ("s1", "s2", "s3")


@pytest.mark.parametrize("pair", PAIRS)
def test_bug_pairs_agree_between_engines(pair):
    bugs = ROOT / "examples" / "bugs"
    for kind in ("bug", "fixed"):
        src = (bugs / f"{pair}-{kind}.pipe").read_text()
        got = {e: verdict(src, e) for e in ENGINES}
        assert got["explicit"] == got["bmc"], (pair, kind, got)
        assert (got["explicit"][0] == "VIOLATED") == (kind == "bug")


def test_tma_store_inside_elect_one_is_one_store():
    # the DSL does not elect for a TMA store; elect_one() around it is legal
    src = (ROOT / "examples" / "textbook" / "smem_alias.pipe").read_text()
    assert "with elect_one():\n            tma_store(" in src
    assert verdict(src, "explicit")[0] == "PROVEN"
