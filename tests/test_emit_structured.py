"""Structured emission (impl/structured.py, issue 25): loops bounded by a parameter stay
loops, the trip count is a kernel argument, and the programs mean what the unrolled ones do.

Differential: each warp of a structured program executes, step for step, the instructions
the unrolled program of the same trip count executes (the same barriers, parities, ghost
effects); the model gives both the same verdict; GPU-format traces of structured runs
replay through the model.  No GPU needed.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pipeproof.checker.explicit import check_explicit
from pipeproof.impl import events as E
from pipeproof.impl.emit import EmitOptions, emit_file
from pipeproof.impl.mutants import mutants
from pipeproof.impl.replay import ACCEPTED, REJECTED, Replayer
from pipeproof.impl.simulate import as_words, perturb, simulate
from pipeproof.impl.structured import compile_for_emission
from pipeproof.model.compile import compile_kernel
from pipeproof.model.lang.parser import parse_file
from pipeproof.model.program import Branch, Jump, SetLocal, TryWait
from pipeproof.model.system import System
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
TB = ROOT / "examples" / "textbook"
BUGS = ROOT / "examples" / "bugs"
#: (file, params): single-CTA textbook pipelines, a cluster one, and bug/fix pairs
CASES = [
    (TB / "pipeline_async.pipe", {}),
    (TB / "pipeline_tma_async.pipe", {}),
    (TB / "pipeline_cp_async.pipe", {}),
    (TB / "pipeline_tma_umma.pipe", {}),
    (TB / "pipeline_tma_async_multicast.pipe", {"k_tiles": 3}),
    (BUGS / "p1-bug.pipe", {}),
    (BUGS / "p2-bug.pipe", {}),
    (BUGS / "x4-bug.pipe", {}),
    (ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 2, "k_tiles": 11}),
    (ROOT / "bench" / "bench_gpu_tma.pipe", {"stages": 2, "k_tiles": 5}),
    # warpgroup wgmma (WgmmaWait), a prologue and a drain bounded by min(1, k_tiles)
    # (bounded run-time loops), two tiles (the mainloop state live, then dead)
    *[(ROOT / "examples" / "kernels" / "k1_hopper_persistent_gemm.pipe",
       {"cluster_m": 1, "cluster_n": 1, "k_tiles": k, "tiles": t})
      for k, t in ((0, 1), (1, 1), (3, 2))],
]


def _both(path: Path, params: dict):
    k = parse_file(str(path))
    c = compile_for_emission(k, params)
    assert c.structured, c.describe()
    return compile_kernel(k, params), c.kernel


def _steps(ck) -> dict[str, list]:
    """Per warp, the synchronisation instructions a simulated execution recorded."""
    out: dict[str, list] = {}
    for seed in (0, 1):
        evs = simulate(ck, seed)
        per: dict[str, list] = {}
        for ev in evs:
            if ev.kind != E.K_STEP:
                continue
            prog = ck.program(ev.cta, ev.warp)
            ins = prog.code[ev.pc]
            per.setdefault(prog.name, []).append(replace(ins, site=-1))
        if seed == 0:
            out = per
        else:
            assert per == out, "one warp's step sequence depends on the schedule"
    return out


@pytest.mark.parametrize("path,params", CASES, ids=lambda x: getattr(x, "stem", ""))
def test_structured_warps_execute_the_unrolled_steps(path, params):
    unrolled, structured = _both(path, params)
    if any(isinstance(i, TryWait) for p in unrolled.programs for i in p.code):
        pytest.skip("try_wait branches make a warp's steps depend on the schedule")
    assert _steps(structured) == _steps(unrolled)


@pytest.mark.parametrize("path,params", [c for c in CASES[:8] if "multicast" not in c[0].stem],
                         ids=lambda x: getattr(x, "stem", ""))
def test_structured_and_unrolled_verdicts_agree(path, params):
    """(The cluster example is left out: its unrolled check alone takes minutes.)"""
    unrolled, structured = _both(path, params)
    vu = check_explicit(System(unrolled), max_states=100_000, timeout=NO_DEADLINE)
    vs = check_explicit(System(structured), max_states=100_000, timeout=NO_DEADLINE)
    assert vu.status not in ("UNKNOWN",) and vs.status not in ("UNKNOWN",), (vu, vs)
    assert (vs.status, vs.prop) == (vu.status, vu.prop)


@pytest.mark.parametrize("path,params", CASES, ids=lambda x: getattr(x, "stem", ""))
def test_structured_traces_replay(path, params):
    _, ck = _both(path, params)
    R = Replayer(ck)
    for seed in range(4):
        evs = simulate(ck, seed)
        if seed % 2:
            evs = perturb(ck, evs, seed)
        evs = E.decode_events(as_words(evs), len(evs))
        r = R.replay(evs)
        if "bug" in path.stem:  # the run may end in the bug (DEADLOCK, VIOLATION)
            assert r.status != REJECTED, (seed, r.headline(), r.state_text)
        else:
            assert r.status == ACCEPTED, (seed, r.headline(), r.state_text)


def test_structured_mutants_replay_like_the_model():
    _, ck = _both(TB / "pipeline_tma_async.pipe", {})
    ms = mutants(ck)
    assert ms
    for m in ms:
        R = Replayer(m.kernel)
        for seed in range(2):
            r = R.replay(simulate(m.kernel, seed))
            assert r.status != REJECTED, (m.name, r.headline())


@pytest.mark.parametrize("file", ["bench/bench_gpu_async.pipe", "bench/bench_gpu_tma.pipe",
                                  "examples/textbook/pipeline_tma_async.pipe"])
def test_ptx_does_not_depend_on_the_trip_count(file):
    ptx = set()
    for k in (1, 1000, 10**6):
        em = emit_file(str(ROOT / file), {"k_tiles": k}, EmitOptions("sm_90a"))
        assert em.manifest.compiled == "structured" and em.manifest.args == {"k_tiles": k}
        assert ".param .u32 p_a_k_tiles" in em.ptx
        ptx.add(em.ptx)
    assert len(ptx) == 1


def test_the_loop_is_a_loop():
    _, ck = _both(TB / "pipeline_async.pipe", {"k_tiles": 100})
    for p in ck.programs:
        if p.role:
            assert any(isinstance(i, Jump) and i.target <= pc for pc, i in enumerate(p.code))
            assert any(isinstance(i, Branch) for i in p.code)
            assert any(isinstance(i, SetLocal) for i in p.code)
            assert len(p.code) < 200


def test_unsupported_structure_falls_back_with_a_reason():
    c = compile_for_emission(parse_file(str(TB / "pipeline_tma_store.pipe")), {})
    assert not c.structured and "structured emission not supported here" in c.fallback
    em = emit_file(str(TB / "pipeline_tma_store.pipe"), {}, EmitOptions("sm_90a"))
    assert em.manifest.compiled == "unrolled" and "unrolled" in em.note
    u = emit_file(str(TB / "pipeline_async.pipe"), {}, EmitOptions("sm_90a", structured=False))
    assert u.manifest.compiled == "unrolled" and u.manifest.args == {}


def test_model_runs_the_structured_program_with_the_compiled_trip_count():
    """The model's run of a structured program makes exactly k_tiles iterations."""
    for k in (0, 1, 5, 9):
        _, ck = _both(ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 2, "k_tiles": k})
        evs = simulate(ck, 0)
        waits = [e for e in evs if e.kind == E.K_STEP and e.warp == 1
                 and "consumer_wait" in ck.program(0, 1).code[e.pc].label]
        assert len(waits) == k


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_structured_ptx_assembles(tmp_path, arch):
    for f in ("pipeline_async", "pipeline_tma_async", "pipeline_tma_umma"):
        em = emit_file(str(TB / f"{f}.pipe"), {"k_tiles": 10**6}, EmitOptions(arch))
        assert em.manifest.compiled == "structured"
        p = tmp_path / f"{f}.ptx"
        p.write_text(em.ptx)
        r = subprocess.run(["ptxas", "-O0", f"-arch={arch}", str(p), "-o", str(p) + ".cubin"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:800]


def test_a_structured_job_is_judged_against_the_programs_that_ran(tmp_path, monkeypatch):
    """prepare_job records ``structured`` in the job; analyze_job recompiles the same
    programs: a GPU-format result file of model runs (impl/simulate.py) is ACCEPTED."""
    import json

    import numpy as np

    from pipeproof.impl import conform

    monkeypatch.setattr(conform, "have_ptxas", lambda: False)  # keep the PTX, skip ptxas
    f = str(TB / "pipeline_tma_async.pipe")
    job = conform.prepare_job(str(tmp_path), conform.JobSpec("j", f, {"k_tiles": 6}, runs=2,
                                                             clusters=2))
    assert job["meta"]["structured"] and job["meta"]["compiled"] == "structured"
    man = json.loads((tmp_path / job["manifest"]).read_text())
    assert man["args"] == {"k_tiles": 6} and ["a_k_tiles", "u32"] in man["params"]
    ck = conform.compiled_for(f, {"k_tiles": 6}, structured=True)
    words, index, pos = [], [], 0
    for run in range(2):
        for cl in range(2):
            evs = simulate(ck, 10 * run + cl)
            w = np.array(as_words(evs), dtype=np.uint32)
            words.append(w)
            index.append((run, cl, pos, len(evs)))
            pos += len(evs)
    ctrl = np.zeros((2, 2, E.CTRL_WORDS), dtype=np.uint32)
    out = tmp_path / "out"
    out.mkdir()
    np.savez_compressed(out / "j.npz", events=np.concatenate(words).astype(np.uint32),
                        index=np.array(index, dtype=np.int64), ctrl=ctrl)
    (out / "j.json").write_text(json.dumps({"status": "ok"}))
    rep = conform.analyze_job(job, str(out))
    assert rep.traces == 4 and rep.counts == {ACCEPTED: 4}, rep.counts


def test_cli_bare_emission(tmp_path):
    """``--no-trace --no-jitter --no-checks``: waits without watchdog (with CUTLASS's
    suspend hint), no stamps; the message says how the loops were compiled."""
    import sys

    out = tmp_path / "k.ptx"
    r = subprocess.run([sys.executable, "-m", "pipeproof.cli", "emit",
                        str(ROOT / "bench" / "bench_gpu_async.pipe"), "--no-trace",
                        "--no-jitter", "--no-checks", "-p", "k_tiles=100000", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "structured: k_tiles passed at launch" in r.stderr
    ptx = out.read_text()
    assert ", 10000000;" in ptx and "st.shared.v4.u32" not in ptx
    # the consumer's release: one count-1 arrive per lane, no count operand
    assert "mbarrier.arrive.release.cta.shared::cta.b64" in ptx
    r = subprocess.run([sys.executable, "-m", "pipeproof.cli", "emit",
                        str(ROOT / "bench" / "bench_gpu_async.pipe"), "--unrolled",
                        "--arrivals", "warp", "-p", "k_tiles=3", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "unrolled" in r.stderr, r.stderr
    assert "p_a_k_tiles" not in out.read_text()


# ---- issue 25 regression: an emulated tcgen05.commit must still land after the exit


def _blocks(ptx: str, k: int) -> dict[int, str]:
    """The PTX of program ``k``, per pc (``$Lk_pc:`` labels)."""
    import re

    body = ptx.split(f"$P{k}:")[1].split(f"$P{k + 1}:")[0].split("$STUCK_EXIT:")[0]
    parts = re.split(r"\n\$L%d_(\d+):" % k, body)
    return {int(pc): txt for pc, txt in zip(parts[1::2], parts[2::2])}


def _exit_fires(ck) -> dict[str, bool]:
    """Per warp: does any of its exits fire an emulated commit after the exit's event
    (an ``mbarrier.arrive`` in the Exit step's block: the exit itself arrives nowhere)?"""
    from pipeproof.impl.emit import emit
    from pipeproof.model.program import Exit

    ptx = emit(ck, EmitOptions("sm_90a")).ptx
    out = {}
    for k, p in enumerate(ck.programs):
        bl = _blocks(ptx, k)
        # (a folded loop, impl/fold.py, emits the exit of one copy only)
        out[p.name] = any("mbarrier.arrive" in bl[pc] for pc, i in enumerate(p.code)
                          if isinstance(i, Exit) and pc in bl)
    return out


UMMA = ["pipeline_tma_multi_consumers_async", "pipeline_tma_umma", "pipeline_async_umma"]


@pytest.mark.parametrize("name", UMMA)
def test_structured_commits_land_after_the_exit_as_unrolled_ones_do(name):
    """sm_90a emulates tcgen05.commit's late completion by firing it after the warp's next
    step when that step cannot wait; the loop's ``k += 1; if k < k_tiles`` between the
    release and the exit must not make it fire early (GPU: the multi-consumer
    ``skipped-tail`` mutant's dangling arrive was never seen, 160/160 ACCEPTED)."""
    k = parse_file(str(TB / f"{name}.pipe"))
    unrolled = compile_kernel(k, {})
    structured = compile_for_emission(k, {}).kernel
    for u, s in [(unrolled, structured)] + [
            (mu.kernel, ms.kernel) for mu, ms in zip(mutants(unrolled), mutants(structured))
            if mu.name == "skipped-tail"]:
        eu, es = _exit_fires(u), _exit_fires(s)
        assert eu == es
    assert any(eu.values())


def test_multi_consumer_skipped_tail_is_observable_in_the_structured_trace():
    """The emitted order (MMA warp's exit event, then its commit's env event) replays as
    the model's dangling-arrive-at-exit on the structured programs."""
    from pipeproof.impl.mutants import mutant
    from pipeproof.impl.replay import VIOLATION

    ck = compile_for_emission(parse_file(str(TB / "pipeline_tma_multi_consumers_async.pipe")),
                              {}).kernel
    assert _exit_fires(ck)["cta0.w1"]
    m = mutant(ck, "skipped-tail")
    assert m is not None and _exit_fires(m.kernel)["cta0.w1"]
    R = Replayer(m.kernel)
    seen = set()
    for seed in range(40):
        evs = simulate(m.kernel, seed)
        exits = [i for i, e in enumerate(evs) if e.kind == E.K_STEP and
                 type(m.kernel.program(e.cta, e.warp).code[e.pc]).__name__ == "Exit"]
        last_env = max((i for i, e in enumerate(evs) if e.kind == E.K_ENV), default=-1)
        r = R.replay(evs)
        assert r.status != REJECTED, (seed, r.headline())
        if len(exits) == 3 and last_env > exits[-1]:  # every warp gone, then the commit
            assert r.status == VIOLATION and r.violation[0] == "dangling-arrive-at-exit", \
                (seed, r.headline())
            seen.add(seed)
    assert seen, "no simulated schedule lands the commit after the CTA exited"


def test_bare_structured_tma_streams_through_fresh_memory(tmp_path):
    """Without checks a structured TMA loop advances its sources by one period's
    ``src_bytes`` at the back edge (the unrolled kernel's loads each read their own
    region; repeating the regions would measure L2), wrapping inside the room the
    runner gives (``%src_stride``): the PTX stays independent of the trip count, the
    manifest asks for room in proportion to it.  With checks (data stamps) nothing
    changes."""
    f = str(ROOT / "bench" / "bench_gpu_tma.pipe")
    bare = EmitOptions("sm_90a", trace=False, jitter=False, checks=False)
    ems = {k: emit_file(f, {"stages": 4, "k_tiles": k, "tile_bytes": 16384}, bare)
           for k in (16, 128, 1000)}
    body = {k: "\n".join(ln for ln in e.ptx.splitlines() if not ln.startswith("//"))
            for k, e in ems.items()}
    assert len(set(body.values())) == 1
    ptx = ems[128].ptx
    assert "%srcoff" in ptx and "%src_stride;" in ptx
    base = emit_file(f, {"stages": 4, "k_tiles": 128, "tile_bytes": 16384},
                     EmitOptions("sm_90a", trace=False, jitter=False)).manifest.src_bytes
    # 16 loads per period (4 * stages iterations, one load each)
    assert ems[16].manifest.src_bytes == 2 * base
    assert ems[128].manifest.src_bytes == (128 // 16 + 1) * base
    assert ems[1000].manifest.src_bytes == (-(-1000 // 16) + 1) * base
    checked = emit_file(f, {"stages": 4, "k_tiles": 128, "tile_bytes": 16384},
                        EmitOptions("sm_90a"))
    assert "add.u64 %srcoff" not in checked.ptx and "selp.u64 %srcoff" not in checked.ptx
    if shutil.which("ptxas"):
        p = tmp_path / "bw.ptx"
        p.write_text(ptx)
        r = subprocess.run(["ptxas", "-arch=sm_90a", str(p), "-o", str(p) + ".cubin"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:800]


def test_a_commit_pending_at_exit_waits_for_the_other_warps():
    """With checks, the emulated commit that lands after the MMA warp's exit first waits
    (bounded) for the CTA's other warps to exit, so the skipped-tail mutant's dangling
    arrive does not depend on which warp is faster; the bare kernel does not wait."""
    from pipeproof.impl.emit import EXIT_LINGER_NS, emit
    from pipeproof.impl.mutants import mutant
    from pipeproof.model.program import Exit

    ck = compile_for_emission(parse_file(str(TB / "pipeline_tma_multi_consumers_async.pipe")),
                              {}).kernel
    m = mutant(ck, "skipped-tail").kernel
    k = next(i for i, p in enumerate(m.programs) if p.role == "mma")
    for opts, waits in ((EmitOptions("sm_90a"), True),
                        (EmitOptions("sm_90a", trace=False, jitter=False, checks=False), False)):
        bl = _blocks(emit(m, opts).ptx, k)
        exits = [bl[pc] for pc, i in enumerate(m.programs[k].code) if isinstance(i, Exit)]
        assert exits and all("mbarrier.arrive" in b for b in exits)
        for b in exits:
            lingers = "ld.relaxed.cta.shared.u32" in b and str(EXIT_LINGER_NS) in b
            assert lingers == waits
            if waits:
                assert b.index("ld.relaxed.cta.shared.u32") < b.index("mbarrier.arrive")
