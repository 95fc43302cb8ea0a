"""The emitter lowers the model's memory scopes and arrivals as CUTLASS does (issue 25
item 2): every wait is ``.acquire.cta`` except on a barrier that a remote
``.release.cluster`` arrive publishes through (``model/scopes.py``); a warp's arrivals on
one barrier of several CTAs are one ``mapa`` + ``shared::cluster`` arrive whose target
each lane computes from its lane index; and the trace/watchdog/jitter instrumentation
changes none of it."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from test_scopes import FORWARD

from pipeproof.api import compile_file
from pipeproof.impl.emit import EmitOptions, emit_file
from pipeproof.impl.ptx_exec import RANK_SHIFT, Run, run_warp
from pipeproof.impl.ptx_sync import pipeproof_programs
from pipeproof.model.program import Arrive
from pipeproof.model.scopes import acquire_scope, cluster_acquired

ROOT = Path(__file__).resolve().parent.parent
TWO_BY_ONE = ROOT / "tests/cute_kernels/pipeline_tma_async_2x1.pipe"
MULTICAST = ROOT / "examples/textbook/pipeline_tma_async_multicast.pipe"
CLUSTER = [TWO_BY_ONE, MULTICAST]


def _opts(arch: str = "sm_90a", bare: bool = True, structured: bool = False) -> EmitOptions:
    return EmitOptions(arch, trace=not bare, jitter=not bare, checks=not bare,
                       structured=structured)


def _waits(ptx: str) -> list[str]:
    return [o.op for p in pipeproof_programs(ptx)[1] for o in p.ops
            if o.op.startswith(("mbarrier.try_wait", "mbarrier.test_wait"))]


@pytest.mark.parametrize("path", CLUSTER, ids=lambda p: p.stem)
@pytest.mark.parametrize("bare", [True, False], ids=["bare", "instrumented"])
def test_cluster_kernels_wait_at_cta_scope(path: Path, bare: bool) -> None:
    """CUTLASS's ``ClusterBarrier::wait`` (default ``.acquire.cta``): the full barriers
    get TMA bytes in their own CTA, the empty barriers ``.release.cta`` arrives."""
    waits = _waits(emit_file(str(path), {}, _opts(bare=bare)).ptx)
    assert waits and all(w.startswith("mbarrier.try_wait.acquire.cta.")
                         and ".cluster" not in w for w in waits), waits


@pytest.mark.parametrize("relay_cluster", [0, 1])
def test_a_remote_cluster_release_makes_its_waits_cluster_scoped(
        tmp_path: Path, relay_cluster: int) -> None:
    """The strict model lets a ``.release.cluster`` arrive of another CTA publish the
    stores it ends (``System._publish``); PTX 8.7 (morally strong) then needs the waits
    on that barrier to acquire at ``.cluster`` scope, and only those."""
    src = tmp_path / "forward.pipe"
    src.write_text(FORWARD)
    params = {"relay_cluster": relay_cluster}
    ck = compile_file(src, params)
    cl = cluster_acquired(ck.programs)
    # only CTA 0's ``go`` (CTA 1's relay arrives there with .release.cluster)
    assert cl == ({(0, "go.mbar")} if relay_cluster else frozenset())
    for bare in (True, False):
        em = emit_file(str(src), params, _opts("sm_100a", bare))
        got = Counter(re.sub(r"\.parity|\.shared::cta", "", w) for w in _waits(em.ptx))
        # relay warps wait for their TMA bytes, the MMA warp for them and for ``go``
        n_cluster = 1 if relay_cluster else 0
        assert got == Counter({"mbarrier.try_wait.acquire.cta": 4 - n_cluster,
                               "mbarrier.try_wait.acquire.cluster": n_cluster}), got
        mma = next(p for p in ck.programs if p.role == "mma")
        scopes = [acquire_scope(i.bar, cl) for i in mma.code if type(i).__name__ == "Wait"]
        assert scopes.count("cluster") == n_cluster


#: the two lane selections of ``arrive_ranked``: lane r signals CTA r (one arrival per
#: destination, CUTLASS's signalling lanes), or ``count`` consecutive lanes per
#: destination (a rank chosen by lane ranges)
_BY_LANE = re.compile(
    r"mov\.u32 (%r\d+), (\d+);\n\tshr\.b32 \1, \1, %k_lane;\n\tand\.b32 \1, \1, 1;\n"
    r"\tsetp\.eq\.u32 %p\d+, \1, 0;\n\t@%p\d+ bra \$_ta\d+;\n"
    r"\tmapa\.shared::cluster\.u32 %r\d+, %r\d+, %k_lane;\n"
    r"\tmbarrier\.arrive\.release\.(\w+)\.shared::cluster\.b64 _, \[%r\d+\];")
_BY_RANGE = re.compile(
    r"mov\.u32 (%r\d+), (\d+);\n((?:\tsetp\.ge\.u32 %p\d+, %k_lane, \d+;\n"
    r"\t@%p\d+ mov\.u32 %r\d+, \d+;\n)*)\tmapa\.shared::cluster\.u32 %r\d+, %r\d+, \1;\n"
    r"\tsetp\.ge\.u32 %p\d+, %k_lane, (\d+);\n\t@%p\d+ bra \$_ta\d+;\n"
    r"\tmbarrier\.arrive\.release\.(\w+)\.shared::cluster\.b64 _, \[%r\d+\];")


def _selections(ptx: str) -> list[tuple[int, Counter, str]]:
    """(text position, the CTA each arriving lane of 0..31 targets, scope) of every
    lane selection in ``ptx``, in text order."""
    out = []
    for m in _BY_LANE.finditer(ptx):
        mask = int(m.group(2))
        out.append((m.start(), Counter({r: 1 for r in range(32) if mask >> r & 1}),
                    m.group(3)))
    for m in _BY_RANGE.finditer(ptx):
        first = int(m.group(2))
        steps = [(int(lo), int(c)) for lo, c in re.findall(
            r"setp\.ge\.u32 %p\d+, %k_lane, (\d+);\n\t@%p\d+ mov\.u32 %r\d+, (\d+);",
            m.group(3))]
        got: Counter = Counter()
        for lane in range(int(m.group(4))):
            cta = first
            for lo, c in steps:
                if lane >= lo:
                    cta = c
            got[cta] += 1
        out.append((m.start(), got, m.group(5)))
    return sorted(out, key=lambda x: x[0])


@pytest.mark.parametrize("path", CLUSTER, ids=lambda p: p.stem)
@pytest.mark.parametrize("bare", [True, False], ids=["bare", "instrumented"])
def test_remote_arrivals_are_one_run_time_rank_arrive(path: Path, bare: bool) -> None:
    """Every consumer release of the model (arrivals on one empty barrier of several
    CTAs) is one ``shared::cluster`` arrive in the PTX, and running its lane selection
    gives each CTA as many arriving lanes as the model's ``Arrival`` counts."""
    ck = compile_file(path, {})
    em = emit_file(str(path), {}, _opts(bare=bare))
    blocks = _selections(em.ptx)
    want = [Counter({a.bar.cta: a.count for a in i.arrivals})
            for p in ck.programs for i in p.code
            if isinstance(i, Arrive) and any(a.bar.cta != p.cta for a in i.arrivals)]
    assert want and [b[1] for b in blocks] == want
    assert {b[2] for b in blocks} == {"cta"}  # the model's (CUTLASS's) scope
    progs = pipeproof_programs(em.ptx)[1]
    consumers = {p.ops for p in progs if p.role != "dma"}
    assert len(consumers) == 1  # one code path for every CTA, as the DSL's
    assert not any(o.op.startswith("mbarrier.arrive") and "shared::cta" in o.op
                   for o in next(iter(consumers)))
    if bare:
        # run every lane of every consumer warp: the lane that arrives on a CTA's
        # barrier is the lane whose index is that CTA's rank (CUTLASS's signalling lane)
        seen = 0
        for p in progs:
            if p.role == "dma":
                continue
            lanes = run_warp(em.ptx, Run(p.warp, p.cta, stop_at=("$EXIT", "$STUCK_EXIT")))
            for lane, seq in enumerate(lanes):
                remote = [i for i in seq if i.op.op.startswith("mbarrier.arrive")
                          and "shared::cluster" in i.op.op]
                seen += len(remote)
                assert all(i.addr >> RANK_SHIFT == lane for i in remote), (p, lane)
        assert seen == sum(sum(c.values()) for c in want)  # own CTA's through mapa too


@pytest.mark.parametrize("path", CLUSTER, ids=lambda p: p.stem)
@pytest.mark.parametrize("structured", [True, False], ids=["structured", "unrolled"])
def test_instrumentation_keeps_the_synchronisation(path: Path, structured: bool) -> None:
    bare = pipeproof_programs(emit_file(str(path), {}, _opts(bare=True,
                                                             structured=structured)).ptx)
    full = pipeproof_programs(emit_file(str(path), {}, _opts(bare=False,
                                                             structured=structured)).ptx)
    assert [p.ops for p in bare[1]] == [p.ops for p in full[1]]


@pytest.mark.skipif(shutil.which("ptxas") is None,
                    reason="ptxas (CUDA toolkit) is not installed: PTX assembly not checked")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_2x1_twin_assembles(arch: str, tmp_path: Path) -> None:
    """The twin of pipeline_tma_async_2x1 is not among examples/ (test_emit_assemble)."""
    for bare in (True, False):
        p = tmp_path / f"k{bare}.ptx"
        p.write_text(emit_file(str(TWO_BY_ONE), {}, _opts(arch, bare, True)).ptx)
        r = subprocess.run(["ptxas", "-O0", f"-arch={arch}", str(p), "-o",
                            str(p) + ".cubin"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:800]
