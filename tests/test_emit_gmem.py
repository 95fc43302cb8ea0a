"""PTX emission, launch and replay of global-memory kernels across the clusters of a grid
(issue 22 item 4; ``impl/emit.py`` "global memory and several clusters",
spec/primitives.md 13 "Emission").

No GPU here: the emitted PTX is assembled with ptxas (skipped without it), the runner's
launch is checked on a fake driver that stands in for the GPU with executions of the
model (``impl/simulate.py``), and the replay judges simulated traces -- correct, racy,
stuck and impossible ones.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeproof.impl import events as E
from pipeproof.impl.conform import JobSpec, analyze_job, compiled_for, prepare_job
from pipeproof.impl.emit import EmitOptions, emit, emit_file
from pipeproof.impl.events import GpuEvent
from pipeproof.impl.mutants import mutant as make_mutant
from pipeproof.impl.replay import ACCEPTED, DEADLOCK, REJECTED, VIOLATION, Replayer
from pipeproof.impl.simulate import as_words, perturb, simulate
from pipeproof.model.compile import compile_kernel
from pipeproof.model.lang.parser import parse
from pipeproof.model.program import GmemAtomic, GmemWait

ROOT = Path(__file__).resolve().parent.parent
SPLIT_K = ROOT / "examples" / "textbook" / "split_k_serial.pipe"
STREAM_K = ROOT / "examples" / "textbook" / "stream_k_fixup.pipe"
GMEM_FILES = [SPLIT_K, STREAM_K] + sorted((ROOT / "examples" / "bugs").glob("g[0-9]-*.pipe"))

#: CUTLASS's GenericBarrier as written (cutlass/barrier.h): relaxed spin + fence.acq_rel,
#: fence.acq_rel + red.relaxed.add
FENCED = """
@cute.kernel
def fenced(splits: int = 2):
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
                fence_acq_rel_gpu()
        sync.arrive_and_wait()
        if k > 0:
            read(workspace, w)
        write(workspace, w)
        sync.arrive_and_wait()
        if w == 0:
            with elect_one():
                fence_acq_rel_gpu()
                lock.arrive_inc(0, sem="relaxed")
"""


def _ck(path: Path, **params):
    return compiled_for(str(path), params, structured=True)


# --------------------------------------------------------------------------- PTX


def test_flag_operations_are_lowered_with_their_semantics():
    """Every flag operation becomes the PTX instruction its model instruction names:
    a release store, an acquire spin, relaxed forms, an atomic add of lanes * value."""
    ptx = emit_file(str(SPLIT_K)).ptx
    assert "st.release.gpu.global.b32" in ptx
    assert re.search(r"ld\.acquire\.gpu\.global\.u32 %r\d+, \[%rd\d+\];\n\tsetp\.eq\.s32", ptx)
    assert "st.relaxed.gpu.global.b32" in emit_file(str(ROOT / "examples/bugs/g1-bug.pipe")).ptx
    # stream-K: one elected lane adds 1; G3 (every lane adds): one atomic of 32
    assert re.search(r"atom\.release\.gpu\.global\.add\.u32 %r\d+, \[%rd\d+\], 1;",
                     emit_file(str(STREAM_K)).ptx)
    g3 = emit_file(str(ROOT / "examples/bugs/g3-bug.pipe")).ptx
    assert re.search(r"atom\.release\.gpu\.global\.add\.u32 %r\d+, \[%rd\d+\], 32;", g3)
    assert re.search(r"ld\.acquire\.gpu\.global\.u32 %r\d+, \[%rd\d+\];\n\tsetp\.ge\.s32", g3)
    fenced = emit(compile_kernel(parse(FENCED), {})).ptx
    assert fenced.count("\tfence.acq_rel.gpu;") == 4  # two per cluster (warp 0)
    assert "ld.relaxed.gpu.global.u32" in fenced and "atom.relaxed.gpu.global.add.u32" in fenced


def test_a_spin_is_watched_and_traced():
    """A spin reads %globaltimer, sets the abort flag and records STUCK past the timeout
    (as an mbarrier wait does); the event after it records the flag value (F_FLAG)."""
    ptx = emit_file(str(STREAM_K)).ptx
    body = ptx[ptx.index("wait_ge(0, 2)"):]
    spin = body[:body.index("bra $STUCK_EXIT")]
    assert "ld.acquire.gpu.global.u32" in spin and "%globaltimer" in spin
    assert f"[%ctrl+{4 * E.C_ABORT}]" in spin and f"{E.VALID | E.K_STUCK << 24 | 2 << 8}" in spin
    assert re.search(rf"or\.b32 (%r\d+), \1, {E.F_FLAG};", spin)
    # the bare kernel (no checks): the spin alone, no watchdog
    bare = emit_file(str(STREAM_K), opts=EmitOptions(trace=False, jitter=False,
                                                     checks=False)).ptx
    b = bare[bare.index("wait_ge(0, 2)"):]
    b = b[:b.index("// [")]
    assert "ld.acquire.gpu.global.u32" in b and "%globaltimer" not in b


def test_instances_dispatch_on_the_cluster_index():
    """An instance is the grid the model checks: the cluster's index in it (the model's
    cluster_idx()) comes from %clusterid/%nclusterid, its CTA picks the program, and its
    trace tickets come from the instance's global counter."""
    em = emit_file(str(STREAM_K))
    ptx, man = em.ptx, em.manifest
    assert man.grid_clusters == 3 and man.gmem_bytes > 0
    assert ["gmem", "u64"] in [list(p) for p in man.params]
    assert "mov.u32" in ptx and "%clusterid.x" in ptx and "%nclusterid.x" in ptx
    assert "rem.u32 %k_cin, %k_clus, 3;" in ptx and "div.u32 %k_inst, %k_clus, 3;" in ptx
    assert "atom.relaxed.gpu.global.add.u32" in ptx and f"[%ctrl+{4 * E.C_GTICKET}]" in ptx
    # the three programs (one warp per cluster) are the dispatch targets 0, 1, 2
    for k in range(3):
        assert re.search(rf"setp\.eq\.u32 %p\d+, %key, {k};\n\t@%p\d+ bra \$P{k};", ptx)
    # a one-cluster kernel keeps its shared-memory ticket and no gmem parameters
    plain = emit_file(str(ROOT / "examples/textbook/pipeline_async.pipe"))
    assert plain.manifest.grid_clusters == 1 and plain.manifest.gmem_bytes == 0
    assert "gmem" not in [p[0] for p in plain.manifest.params]
    assert f"[%ctrl+{4 * E.C_GTICKET}]" not in plain.ptx


def test_region_stamps_are_weak_global_accesses():
    """A global region's stamps are plain st.global/ld.global (only the flags order
    them) in the instance's block, not shared memory."""
    em = emit_file(str(SPLIT_K))
    assert em.layout.gmem.buffers["workspace"][1] == 2
    assert all(bl.name != "workspace" for bl in em.layout.buffers.values())
    prog = em.ptx[em.ptx.index("---- cta 1 warp 0"):em.ptx.index("---- cta 1 warp 1")]
    assert re.search(r"add\.u64 (%rd\d+), %gm, \d+;\n\tld\.global\.u32 %r\d+, \[\1\];", prog)
    assert re.search(r"add\.u64 (%rd\d+), %gm, \d+;\n(\tmov\.u32 .*\n)+\tst\.global\.v4\.u32 "
                     r"\[\1\]", prog)


@pytest.mark.skipif(shutil.which("ptxas") is None,
                    reason="ptxas (CUDA toolkit) is not installed: PTX assembly not checked")
@pytest.mark.parametrize("path", GMEM_FILES, ids=lambda p: p.stem)
def test_gmem_kernels_assemble_for_sm_90a(path, tmp_path):
    for opts in (EmitOptions("sm_90a"), EmitOptions("sm_90a", trace=False, jitter=False,
                                                    checks=False)):
        p = tmp_path / f"{path.stem}.ptx"
        p.write_text(emit_file(str(path), opts=opts).ptx)
        r = subprocess.run(["ptxas", "-O0", "-arch=sm_90a", str(p), "-o", str(p) + ".cubin"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]


# --------------------------------------------------------------------------- replay


@pytest.mark.parametrize("path", [SPLIT_K, STREAM_K], ids=lambda p: p.stem)
def test_replay_accepts_simulated_correct_traces(path):
    ck = _ck(path)
    R = Replayer(ck)
    for seed in range(12):
        evs = perturb(ck, simulate(ck, seed), seed)
        assert any(e.flags & E.F_FLAG for e in evs)
        r = R.judge(evs)
        assert r.status == ACCEPTED, (seed, r.headline(), r.state_text)


def test_replay_reports_the_race_of_a_relaxed_hand_off():
    """G1: the lock is stored relaxed; every trace in which the next split reads is a
    gmem-race in the model that replays it."""
    ck = _ck(ROOT / "examples/bugs/g1-bug.pipe")
    R = Replayer(ck)
    for seed in range(6):
        r = R.judge(simulate(ck, seed))
        assert r.status == VIOLATION and r.violation[0] == "gmem-race", r.headline()


def test_replay_rejects_a_spin_that_passed_too_early():
    """A trace in which split 1 passes its wait_eq(0, 1) before split 0 stored the lock
    cannot come from the kernel: REJECTED at that event."""
    ck = _ck(SPLIT_K)
    good = simulate(ck, 3)
    store = next(e for e in good if e.cta == 0 and e.warp == 0 and
                 isinstance(ck.programs[0].code[e.pc], GmemAtomic))
    waits = [e for e in good if e.cta == 1 and e.pc == 0]
    assert waits and all(w.ticket > store.ticket for w in waits)
    # move split 1's spins to the front (beyond any reordering window)
    order = waits + [e for e in good if e not in waits]
    bad = [GpuEvent(t, e.kind, e.cta, e.warp, e.pc, e.obs0, e.obs1)
           for t, e in enumerate(order)]
    R = Replayer(ck, window=2)
    r = R.judge(bad)
    assert r.status == REJECTED and r.event is not None and r.event.cta == 1, r.headline()
    assert "not enabled" in r.detail


def test_replay_of_a_spin_nobody_satisfies_is_a_deadlock():
    """G4: the reducer's spin ends at the watchdog (STUCK); the model agrees no warp can
    move."""
    ck = _ck(ROOT / "examples/bugs/g4-bug.pipe")
    evs = simulate(ck, 0)
    assert [(e.cta, e.kind) for e in evs if e.kind == E.K_STUCK] == [(2, E.K_STUCK)]
    r = Replayer(ck).judge(evs)
    assert r.status == DEADLOCK, r.headline()


# --------------------------------------------------------------------------- runner


class _FakeGpu:
    """The runner's ``Gpu`` on the CPU: memory is a dict of bytearrays; a launch checks
    its grid and cluster dimensions, then writes, for each instance, what an emitted
    kernel records -- an execution of the model (``simulate``) -- into that instance's
    trace buffer and control block."""

    name, sms = "FAKE GPU", 132

    def __init__(self, ck, man):
        self.ck, self.man = ck, man
        self.mem: dict[int, bytearray] = {}
        self.launches: list[dict] = []
        self.zeroed: list[int] = []
        self.seed = 0

    def alloc(self, n):
        p = 0x1000_0000 + len(self.mem) * 0x100_0000
        self.mem[p] = bytearray(max(n, 256))
        return p

    def _at(self, ptr):
        base = max(b for b in self.mem if b <= ptr)
        return self.mem[base], ptr - base

    def zero(self, ptr, n):
        buf, off = self._at(ptr)
        buf[off:off + n] = bytes(n)
        self.zeroed.append(ptr)

    def h2d(self, ptr, arr):
        buf, off = self._at(ptr)
        buf[off:off + arr.nbytes] = arr.tobytes()

    def d2h(self, arr, ptr):
        import numpy as np

        buf, off = self._at(ptr)
        arr[...] = np.frombuffer(bytes(buf[off:off + arr.nbytes]),
                                 dtype=arr.dtype).reshape(arr.shape)

    def launch(self, fn, grid, block, smem, cluster, args):
        import numpy as np

        vals = {n: v for (n, _), (_, v) in zip(self.man["params"], args)}
        self.launches.append({"grid": grid, "cluster": cluster, "vals": vals})
        nclus = self.man["grid_clusters"]
        G = grid[0] // (nclus * cluster[0])
        assert G * nclus * cluster[0] == grid[0]
        for inst in range(G):
            gm, _ = self._at(vals["gmem"] + inst * vals["gmem_stride"])
            assert not any(gm[:self.man["gmem_bytes"]]), "the flags must be zero at launch"
            self.seed += 1
            evs = simulate(self.ck, self.seed)
            words = np.array(as_words(evs), dtype=np.uint32)
            tr, off = self._at(vals["trace"] + inst * vals["cap"] * E.EVENT_BYTES)
            tr[off:off + words.nbytes] = words.tobytes()
            ctrl, coff = self._at(vals["ctrl"] + inst * E.CTRL_WORDS * 4)
            c = np.zeros(E.CTRL_WORDS, dtype=np.uint32)
            c[E.C_TICKET] = len(evs)
            ctrl[coff:coff + c.nbytes] = c.tobytes()

    def wait(self, limit_s):
        return True


@pytest.mark.parametrize("path,mutant,expect", [
    (STREAM_K, "", {ACCEPTED}), (SPLIT_K, "", {ACCEPTED}),
    (SPLIT_K, "relaxed-flag", {VIOLATION}),
    (STREAM_K, "missing-flag-update", {DEADLOCK}),
], ids=["stream_k", "split_k", "split_k-relaxed", "stream_k-missing-update"])
def test_runner_launches_instances_and_the_analysis_replays_them(path, mutant, expect,
                                                                 tmp_path):
    """prepare_job -> gpu_runner.run_conform (fake driver) -> analyze_job: the launch is a
    grid of instances * grid_clusters clusters with the kernel's cluster dimensions, the
    global block is a zeroed kernel parameter, and every instance's trace is replayed."""
    pytest.importorskip("numpy")
    from pipeproof.impl import gpu_runner as R

    spec = JobSpec("j", str(path), mutant=mutant, runs=3, clusters=4)
    job = prepare_job(str(tmp_path), spec)
    man = json.loads((tmp_path / job["manifest"]).read_text())
    gpu = _FakeGpu(compiled_for(str(path), {}, mutant, True), man)
    gpu.load = lambda *a: "fn"
    out = tmp_path / "out"
    out.mkdir()
    res = R.run_conform(gpu, str(tmp_path), job, str(out))
    assert res["status"] == "ok" and res["runs_done"] == 3 and res["clusters"] == 4
    n = man["grid_clusters"]
    assert [l["grid"] for l in gpu.launches] == [(4 * n, 1, 1)] * 3
    assert all(l["cluster"] == (1, 1, 1) for l in gpu.launches)
    gm = gpu.launches[0]["vals"]
    assert gm["gmem"] in gpu.zeroed and gm["gmem_stride"] >= man["gmem_bytes"]
    (out / "j.json").write_text(json.dumps(res))
    rep = analyze_job(job, str(out))
    assert rep.traces == 12 and set(rep.counts) == expect, rep.examples


def test_resident_instances_keep_every_cta_of_a_launch_on_its_own_sm():
    from pipeproof.impl.gpu_runner import resident_instances

    man = {"grid_clusters": 4, "cluster_size": 1}
    assert resident_instances(man, 4, 132) == 4
    assert resident_instances(man, 64, 132) == 33
    assert resident_instances(man, 4, 2) == 1
    assert resident_instances({"grid_clusters": 1, "cluster_size": 2}, 64, 8) == 64


def test_gmem_mutants_apply_only_to_global_memory():
    ck = _ck(SPLIT_K)
    m = make_mutant(ck, "relaxed-flag")
    assert m is not None and all(i.sem == "relaxed" for p in m.kernel.programs
                                 for i in p.code if isinstance(i, GmemAtomic))
    w = make_mutant(ck, "flag-wait+1")
    assert [i.value for p in w.kernel.programs for i in p.code
            if isinstance(i, GmemWait)][:1] == [1]
    plain = compiled_for(str(ROOT / "examples/textbook/pipeline_async.pipe"), {})
    for name in ("relaxed-flag", "flag-wait+1", "missing-flag-update"):
        assert make_mutant(plain, name) is None
