"""``impl/ptx_onepath.py``: which synchronisation ops of a one-code-path kernel each
warp runs, from the warp-index and CTA-rank predicates of its branches (no DSL needed)."""

from __future__ import annotations

from pipeproof.impl.ptx_onepath import role_regions, runs
from pipeproof.impl.ptx_sync import sync_ops

PTX = """
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tshfl.sync.idx.b32 %r3, %r2, 0, 31, -1;
\tmov.u32 %r4, %cluster_ctarank;
\tshr.u32 %r10, %r4, 31;
\tadd.s32 %r11, %r4, %r10;
\tand.b32 %r12, %r11, -2;
\tsub.s32 %r5, %r4, %r12;
\tsetp.ne.b32 %p1, %r3, 0;
\t@%p1 bra $L1;
\tmbarrier.try_wait.parity.shared.b64 P1, [%r9], 0;
\tsetp.ne.b32 %p2, %r5, 0;
\t@%p2 bra $L2;
\tmbarrier.arrive.shared.b64 %rd1, [%r9], 2;
$L2:
$L1:
\telect.sync %r6|%p3, -1;
\tnot.pred %p4, %p3;
\t@%p4 bra $L3;
\tmbarrier.arrive.shared.b64 %rd2, [%r9], 3;
$L3:
\tand.b32 %r7, %r1, 31;
\tsetp.lt.u32 %p5, %r7, 2;
\t@!%p5 bra $L4;
\tbar.sync 1, 64;
$L4:
\tsetp.eq.b32 %p6, %r3, 1;
\tsetp.eq.b32 %p7, %r5, 1;
\tand.pred %p8, %p6, %p7;
\t@!%p8 bra $L5;
\tbar.sync 2, 64;
$L5:
"""


def _ran(warp: int, cta: int) -> list[str]:
    seg = [(ln, str(o)) for ln, o in sync_ops(PTX) if o.op != "elect.sync"]
    return [o.split(" ")[0].split(".")[1] + o.split(" ")[-1][-1]
            for o in runs(seg, (warp, cta), role_regions(PTX))]


def test_warp_and_rank_predicates_select_ops() -> None:
    # try_wait: warp 0; arrive n=2: warp 0 of the even CTA; arrive n=3 (elected) and
    # bar.sync 1 (lanes 0, 1): every warp; bar.sync 2: warp 1 of the odd CTA
    assert _ran(0, 0) == ["try_wait0", "arrive2", "arrive3", "sync4"]
    assert _ran(0, 1) == ["try_wait0", "arrive3", "sync4"]
    assert _ran(1, 0) == ["arrive3", "sync4"]
    assert _ran(1, 1) == ["arrive3", "sync4", "sync4"]


def test_lane_and_elect_predicates_are_not_role_predicates() -> None:
    regions = role_regions(PTX)
    lines = PTX.splitlines()
    starts = sorted(lines[r.start].split()[0] for r in regions)
    assert starts == ["@!%p8", "@%p1", "@%p2"]
