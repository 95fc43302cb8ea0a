"""A warpgroup's wgmma completes as one collective operation (``model/wgmma.py``).

PTX ISA 9.7.15.7.2-3: ``wgmma.commit_group`` makes one wgmma-group per warpgroup, and
a warp's ``wgmma.wait_group`` returns once the group is complete, which needs every
warp of the warpgroup to have issued its share.  So after one warp's wait, *every*
warp's share has finished reading shared memory.  Following each warp's share on its
own (the model before) reported a race when one warp wrote a wgmma operand right after
its wait -- NVIDIA's non-persistent Hopper FMHA writes O over Q that way.

Planted bugs, explicit engine and BMC side by side (the same verdict from both):
bug 0 is that pattern (safe); 1 writes the operand before the wait (a race with the
warp's own and its siblings' MMA); 2 releases the stage before any warp waited (the
producer's next TMA load races the MMA); 3 waits with one group left in flight, the one
reading the operand; 4 has one warp skip the last wgmma (not ``.aligned``: the others'
wait never returns)."""

from __future__ import annotations

import os

import pytest

from pipeproof.api import check_source

KERNEL = """
@cute.kernel
def wg_reuse(bug: int = 0, tiles: int = 2):
    launch(block=256, cluster=(1, 1, 1))
    q = smem_buffer()
    p = PipelineTmaAsync.create(
        num_stages=1,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 4),
        tx_count=1024,
    )
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, 1)
        for k in range(tiles):
            p.producer_acquire(state)
            tma_load(p, state, bytes=1024)
            state.advance()
        p.producer_tail(state)
    with role("consumer", warps=range(4, 8)):
        state = make_pipeline_state(PipelineUserType.Consumer, 1)
        if warp_idx() == 4:
            write(q, 0)
            fence_proxy_async()
        barrier(barrier_id=1, number_of_threads=128)
        for k in range(tiles):
            p.consumer_wait(state)
            if bug != 4 or warp_idx() != 7 or k != tiles - 1:
                wgmma(q, 0)
                wgmma(p, state)
            if bug == 1 and k == tiles - 1:
                if warp_idx() == 4:
                    write(q, 0)
            if bug == 2:
                p.consumer_release(state)
            wgmma_wait_group(0)
            if bug != 2:
                p.consumer_release(state)
            state.advance()
        if bug == 3:
            wgmma(q, 0)
            wgmma_wait_group(1)
        if warp_idx() == 4:
            write(q, 0)
"""


CASES = [
    (0, None),
    (1, "overwrite-before-release"),
    (2, "overwrite-before-release"),
    (3, "overwrite-before-release"),
    (4, "deadlock"),
]


def _check(engine: str, bug: int, expect):
    r = check_source(KERNEL, params={"bug": bug}, engine=engine, jobs=1, timeout=3600.0,
                     depth=120)
    if expect is None:
        assert r.status == "PROVEN", r.verdict.headline()
        return
    assert r.status == "VIOLATED" and r.prop == expect, r.verdict.headline()
    if expect == "deadlock":  # the report names the wait and the warp it waits for
        text = r.render_text()
        assert "wgmma.wait_group 0" in text and "w7" in text, text


@pytest.mark.parametrize("bug, expect", CASES)
def test_warpgroup_wgmma_explicit(bug, expect):
    _check("explicit", bug, expect)


@pytest.mark.parametrize("bug, expect", [
    c if c[0] in (0, 2) else pytest.param(*c, marks=pytest.mark.slow) for c in CASES])
def test_warpgroup_wgmma_bmc(bug, expect):
    """The same verdicts from BMC (the slower cases only in the slow run)."""
    _check("bmc", bug, expect)


# ------------------------------------------------------------------ the lifted kernel

KERNEL_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cute_kernels",
                         "wgmma_warpgroup.py") + "::wgmma_warpgroup"
LIFTED = [(0, None), (1, "overwrite-before-release"), (2, "overwrite-before-release")]


def _cute():
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed "
                        "(pip install 'pipeproof[cute]')")
    from pipeproof.api import check_cute
    return check_cute


def test_lifted_wgmma_is_a_commit_and_a_wait_step():
    """The lifter turns ``warpgroup.commit_group()`` into a ``wgmma_commit`` effect with
    the reads it closes, and ``warpgroup.wait_group(0)`` into a ``WgmmaWait`` step."""
    _cute()
    from pipeproof.frontend.cute import lift_entry
    from pipeproof.model.program import WgmmaWait

    ck = lift_entry(KERNEL_PY, {}, "sm_90a").compiled
    for warp in range(4):
        code = next(p for p in ck.programs if p.warp == warp).code
        assert sum(isinstance(i, WgmmaWait) for i in code) == 3  # one per k-tile
        kinds = [e.kind for i in code for e in i.pre + i.post]
        assert kinds.count("wgmma_commit") == 3 and "wgmma_read" in kinds


@pytest.mark.parametrize("engine", ["explicit", "bmc"])
@pytest.mark.parametrize("bug, expect", LIFTED)
def test_lifted_warpgroup_wgmma(engine, bug, expect):
    r = _cute()(KERNEL_PY, {"bug": bug}, arch="sm_90a", engine=engine, jobs=1,
                timeout=3600.0, max_states=400_000)
    if expect is None:
        assert r.status == "PROVEN", r.verdict.headline()
    else:
        assert r.status == "VIOLATED" and r.prop == expect, r.verdict.headline()


def test_wgmma_warps_are_interchangeable_within_their_warpgroup_only():
    """p10-fixed's eight consumer warps run one program, but a ``wait_group`` waits for
    the warps of its own warpgroup: swapping warp 4 with warp 8 changes whose commits
    it waits for, so the symmetry groups are the two warpgroups (BMC's certificate
    checks the symmetry it is given with z3: with one group of eight it ended UNKNOWN)."""
    from pathlib import Path

    from pipeproof.api import compile_file
    from pipeproof.checker.statespace import symmetric_groups
    from pipeproof.model.system import System

    ex = Path(__file__).resolve().parent.parent / "examples" / "bugs" / "p10-fixed.pipe"
    sysm = System(compile_file(ex))
    groups = [[sysm.agents[a].warp for a in g] for g in symmetric_groups(sysm)]
    assert sorted(groups) == [[1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
