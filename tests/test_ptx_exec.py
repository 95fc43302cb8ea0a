"""The PTX evaluator of the executed reading (``impl/ptx_exec.py``): small kernels written
here, and pipeproof's own emitted PTX run both ways (a loop with the trip count as a
kernel argument against the unrolled copies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.impl.emit import EmitOptions, Unsupported, emit_file
from pipeproof.impl.ptx_exec import RANK_SHIFT, NotEvaluable, Run, run_lane, run_warp
from pipeproof.impl.ptx_sync import pipeproof_programs

ROOT = Path(__file__).resolve().parent.parent
TB = ROOT / "examples" / "textbook"


def _kernel(body: str, params: str = ".param .u32 k_param_0") -> str:
    return (".version 8.8\n.target sm_90a\n.address_size 64\n"
            ".extern .shared .align 1024 .b8 smem[];\n"
            f".visible .entry k(\n\t{params}\n)\n.reqntid 64, 1, 1\n{{\n"
            "\t.reg .pred %p<9>;\n\t.reg .b32 %r<40>;\n\t.reg .b64 %rd<9>;\n"
            f"{body}\n}}\n")


#: a consumer loop as CuTe DSL writes it: k from a kernel argument, the phase flipped on
#: every wrap of 2 stages, each wait an inline-asm block with its own labels
LOOP = _kernel("""
	ld.param.u32 %r1, [k_param_0];
	mov.b32 %r2, smem;
	mov.b32 %r3, 0;
	mov.b32 %r4, 0;
	mov.b32 %r5, 0;
	setp.lt.s32 %p1, %r1, 1;
	@%p1 bra $DONE;
$LOOP:
	shl.b32 %r6, %r4, 3;
	add.s32 %r7, %r2, %r6;
	{
	.reg .pred P1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r7], %r5, 10000000;
	@P1 bra.uni DONE;
	bra.uni LAB_WAIT;
	DONE:
	}
	mbarrier.arrive.shared.b64 %rd1, [%r7+16];
	add.s32 %r4, %r4, 1;
	setp.eq.s32 %p2, %r4, 2;
	selp.b32 %r4, 0, %r4, %p2;
	selp.b32 %r8, 1, 0, %p2;
	xor.b32 %r5, %r5, %r8;
	add.s32 %r3, %r3, 1;
	setp.ne.s32 %p3, %r3, %r1;
	@%p3 bra $LOOP;
$DONE:
	ret;""")


@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_a_run_time_loop_runs_its_trip_count(k):
    got = run_lane(LOOP, Run(0, params={0: k}))[0]
    waits = [i for i in got if "try_wait" in i.op.op]
    assert [i.op.arg for i in waits] == ["p%d" % ((j // 2) % 2) for j in range(k)]
    base = min((i.addr for i in got), default=0)
    assert [i.addr - base for i in waits] == [8 * (j % 2) for j in range(k)]
    assert len(got) == 2 * k
    # the parameter by name gives the same run
    assert run_lane(LOOP, Run(0, params={"k_param_0": k}))[0] == got


def test_a_failing_wait_has_no_effect_and_is_tried_again():
    want = run_lane(LOOP, Run(0, params={0: 3}))[0]
    for f in (1, 2, 5):
        assert [(i.op, i.addr) for i in run_lane(LOOP, Run(0, params={0: 3},
                                                           wait_failures=f))[0]] == \
            [(i.op, i.addr) for i in want]


def test_an_unknown_trip_count_is_not_evaluable():
    with pytest.raises(NotEvaluable, match="k_param_0|%p1|%r1"):
        run_lane(LOOP, Run(0))


def test_a_branch_on_loaded_data_is_not_evaluable():
    ptx = _kernel("""
	mov.b32 %r2, smem;
	ld.shared.u32 %r1, [%r2];
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra $X;
	mbarrier.arrive.shared.b64 %rd1, [%r2];
$X:
	ret;""")
    with pytest.raises(NotEvaluable, match="guard"):
        run_lane(ptx, Run(0))


def test_a_loop_that_does_not_end_is_not_evaluable():
    ptx = _kernel("""
$X:
	bra $X;""")
    with pytest.raises(NotEvaluable, match="did not finish"):
        run_lane(ptx, Run(0, max_steps=1000))


#: lane 0 elected; the warp index broadcast from lane 0 as make_warp_uniform does
ELECT = _kernel("""
	mov.b32 %r2, smem;
	mov.u32 %r1, %tid.x;
	shr.u32 %r3, %r1, 5;
	shfl.sync.idx.b32 %r4, %r3, 0, 31, -1;
	mov.u32 %r9, %laneid;
	shfl.sync.idx.b32 %r10, %r9, 0, 31, -1;
	setp.ne.u32 %p5, %r10, 0;
	@%p5 bra $X;
	setp.ne.u32 %p1, %r4, 1;
	@%p1 bra $X;
	elect.sync %r5|%p2, -1;
	@!%p2 bra $Y;
	mbarrier.arrive.expect_tx.shared.b64 %rd1, [%r2], 128;
$Y:
	setp.gt.u32 %p3, %r9, 1;
	@%p3 bra $X;
	mapa.shared::cluster.u32 %r6, %r2, %r9;
	mbarrier.arrive.shared::cluster.b64 _, [%r6];
	and.b32 %r7, %r6, -16777217;
	mbarrier.arrive.shared::cluster.b64 _, [%r7+8];
$X:
	ret;""")


def test_lanes_elect_broadcast_and_map():
    assert all(not seq for seq in run_warp(ELECT, Run(0, cta=1)))  # warp 0: nothing
    lanes = run_warp(ELECT, Run(1, cta=1))
    assert [str(i.op) for i in lanes[0]][0].startswith("mbarrier.arrive.cta.expect_tx")
    for lane, seq in enumerate(lanes):
        ranks = [i.addr >> RANK_SHIFT for i in seq]
        if lane == 0:
            assert ranks == [1, 0, 0]  # own CTA, then mapa to rank 0, bit 24 cleared
        elif lane == 1:
            assert ranks == [1, 0]     # mapa to rank 1, then its even peer (rank 0)
        else:
            assert ranks == []
    # the broadcast laneid is lane 0's in every lane: none of them took the early exit
    assert lanes[1]


def test_an_elect_of_part_of_the_warp_is_not_evaluable():
    ptx = _kernel("""
	elect.sync %r5|%p2, 3;
	ret;""")
    with pytest.raises(NotEvaluable, match="part of the warp"):
        run_lane(ptx, Run(0))


# ---- pipeproof's own PTX: the structured loop runs as the unrolled copies do

@pytest.mark.parametrize("path,params", [
    (TB / "pipeline_async.pipe", {"k_tiles": 5}),
    (TB / "pipeline_tma_async.pipe", {"k_tiles": 7}),
    (TB / "pipeline_tma_async_multicast.pipe", {"k_tiles": 3}),
    (TB / "pipeline_cp_async.pipe", {"k_tiles": 4}),
], ids=lambda x: getattr(x, "stem", str(x)))
@pytest.mark.parametrize("fold", [False, True], ids=["copies", "folded"])
def test_structured_and_unrolled_emission_synchronise_alike(path, params, fold):
    """Every lane of every program: the same synchronisation, barrier for barrier and
    address for address (a copy's destination slot included), from the loop with
    ``k_tiles`` as a kernel argument (its body copied per pipeline state, or folded with
    the state in registers) as from the unrolled copies; and a different argument value
    makes them differ (the comparison sees the trip count)."""
    opts = dict(trace=False, jitter=False, checks=False)
    loop = emit_file(str(path), params, EmitOptions("sm_90a", structured=True, fold=fold,
                                                    **opts))
    flat = emit_file(str(path), params, EmitOptions("sm_90a", structured=False, **opts))
    assert loop.manifest.args  # the trip count is an argument of the structured kernel
    stop = ("$EXIT", "$STUCK_EXIT")

    want = _runs(flat, flat.manifest.args)
    assert _runs(loop, loop.manifest.args) == want
    assert sum(len(seq) for prog in want for seq in prog) > 20
    more = {k: v + 1 for k, v in loop.manifest.args.items()}
    assert _runs(loop, more) != want


def _runs(em, args: dict) -> list:
    """Every lane of every program of pipeproof's PTX ``em``: (op, barrier, addresses)."""
    m = em.manifest
    n = m.cluster_size
    p = {f"p_a_{k}": v for k, v in args.items()}
    return [[[(str(i.op), i.addr, i.operands) for i in seq]
             for seq in run_warp(em.ptx, Run(g.warp, g.cta % n, cluster=g.cta // n,
                                             clusters=m.grid_clusters, cluster_size=n,
                                             params=p, stop_at=("$EXIT", "$STUCK_EXIT"),
                                             spin_exits=True))]
            for g in pipeproof_programs(em.ptx)[1]]


#: examples the run cannot follow, and why (a strict list: one that starts to run leaves it)
NOT_RUN = {
    **{f"liveness/{n}.pipe": "a persistent loop that never ends" for n in (
        "interchangeable_consumers_release", "interchangeable_consumers_stop_releasing",
        "persistent_consumer_releases", "persistent_consumer_stops_releasing")},
}
#: run on sm_100a: tcgen05 (sm_90a refuses it) or CLC (sm_90a emulates the response in
#: shared memory, a loaded value)
SM100 = ("bugs/t", "textbook/tmem_allocator", "bugs/p3-", "kernels/k3_",
         "textbook/pipeline_clc_fetch_async")
EXAMPLES = sorted(str(p.relative_to(ROOT / "examples")) for p in
                  (ROOT / "examples").glob("*/*.pipe"))


@pytest.mark.slow
@pytest.mark.parametrize("rel", EXAMPLES)
def test_every_example_runs_alike_structured_and_unrolled(rel):
    """Every bundled example (that emits), every lane: the structured kernel, with its
    loop bodies copied and folded, issues what the unrolled one does, address for
    address (acquire loads and release stores included: flags in global memory, the
    warpgroup's wgmma counters, their spins taken to end: ``Run.spin_exits``); the
    examples the run cannot follow are exactly ``NOT_RUN``."""
    arch = "sm_100a" if rel.startswith(SM100) else "sm_90a"
    opts = dict(trace=False, jitter=False, checks=False)
    path = str(ROOT / "examples" / rel)
    try:
        flat = emit_file(path, {}, EmitOptions(arch, structured=False, **opts))
    except Unsupported as e:
        pytest.skip(f"no PTX for {rel} on {arch}: {e}")
    try:
        want = _runs(flat, flat.manifest.args)
    except NotEvaluable as e:
        assert rel in NOT_RUN, f"{rel}: {e}"
        return
    assert rel not in NOT_RUN, f"{rel} runs now: take it out of NOT_RUN"
    for fold in (False, True):
        loop = emit_file(path, {}, EmitOptions(arch, structured=True, fold=fold, **opts))
        assert _runs(loop, loop.manifest.args) == want, (rel, fold)


def test_a_spin_on_a_loaded_flag_ends_only_where_asked():
    """A spin on an acquire load: the load is listed with its address; the spin is not
    evaluable unless the run takes awaited values to have arrived (``spin_exits``), and
    a forward branch on the loaded value stays not evaluable either way."""
    spin = _kernel("""
	mov.b32 %r2, smem;
$S:
	ld.acquire.cta.shared.u32 %r1, [%r2+8];
	setp.lt.u32 %p1, %r1, 3;
	@%p1 bra $S;
	st.release.cta.shared.u32 [%r2+12], 1;
	ret;""")
    with pytest.raises(NotEvaluable, match="guard"):
        run_lane(spin, Run(0))
    got = run_lane(spin, Run(0, spin_exits=True))[0]
    assert [i.op.op for i in got] == ["ld.acquire.cta.shared.u32", "st.release.cta.shared.u32"]
    assert got[1].operands[0] - got[0].operands[0] == 4
    forward = spin.replace("@%p1 bra $S;", "@%p1 bra $T;\n$T:")
    with pytest.raises(NotEvaluable, match="guard"):
        run_lane(forward, Run(0, spin_exits=True))
