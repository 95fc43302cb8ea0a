"""GPU conformance of real CuTe DSL kernels (``impl/cute_trace.py``, ``cute_harness.py``,
``cute_conform.py``), everything that runs without a GPU:

* the conformance compile of our test kernels: trace sites on every synchronisation
  step of the model lifted from the same compile, the exported objects, the harness
  (built with ``nvcc`` where it is installed), sm_100a kernels exported too;
* the judge, differentially: traces the model itself produces (``impl/simulate.py``,
  sited), written in the harness's binary format and judged end to end, are ACCEPTED;
  the same traces with one record removed, two records of a warp swapped, or cut short
  as if the launch hung, are not; a deadlocking kernel's hung trace is a DEADLOCK the
  model agrees with;
* the command line: ``--prepare-only``, no GPU, ``--judge``.

The runs on an H100 are recorded in ``bench/results/cute_conform.md``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess

import pytest

from cute_helpers import KERNELS

cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.cli import main  # noqa: E402
from pipeproof.frontend.cute import lift_text  # noqa: E402
from pipeproof.impl import events as E  # noqa: E402
from pipeproof.impl.cute_conform import (TRACE_MAGIC, judge, prepare, read_traces,  # noqa: E402
                                         sited_events)
from pipeproof.impl.replay import ACCEPTED, DEADLOCK, REJECTED, Replayer  # noqa: E402
from pipeproof.impl.simulate import simulate  # noqa: E402
from pipeproof.model.program import (Arrive, MbarInit, NamedBarrierOp, NamedWait,  # noqa: E402
                                     TmaLoad, TryWait, Wait)

SYNC_STEPS = (Wait, TryWait, Arrive, TmaLoad, MbarInit, NamedBarrierOp, NamedWait)
#: (kernel, params) prepared once for the module: 1 CTA with TMA, a 2-CTA cluster,
#: named barriers, cp.async, and a deadlocking bug
JOBS = {"tma": ("pipeline_tma_async", {}), "2x1": ("pipeline_tma_async_2x1", {}),
        "named": ("named_barrier", {}), "cp": ("pipeline_cp_async", {}),
        "dead": ("pipeline_async", {"bug": 2})}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cute_jobs")
    out = {}
    for key, (name, params) in JOBS.items():
        d = str(root / key)
        prepare(os.path.join(KERNELS, f"{name}.py::{name}"), params, d, runs=3)
        out[key] = d
    return out


def _lifted(job_dir):
    job = json.load(open(os.path.join(job_dir, "job.json")))
    ck, _ = lift_text(open(os.path.join(job_dir, "capture.mlir")).read(), job["function"],
                      job["params"], job["source"], job["dsl_version"])
    return job, ck


def _records(ck, seed):
    """A simulated run as the GPU records it: ``obs0`` the try_wait result, the last
    word the active mask."""
    return [E.GpuEvent(e.ticket, e.kind, e.cta, e.warp, e.pc, e.obs0, 0xFFFFFFFF)
            for e in simulate(ck, seed, sited=True)]


def _write(results, runs, clusters=1, cap=4096):
    """``traces.bin`` in the harness's format; ``runs``: [(events, hung)]."""
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "traces.bin"), "wb") as f:
        for r, (evs, hung) in enumerate(runs):
            f.write(struct.pack("<8I", TRACE_MAGIC, r, clusters, cap, int(hung), 0, 0, 0))
            ctrl = [0] * (clusters * E.CTRL_WORDS)
            ctrl[E.C_TICKET] = len(evs)
            f.write(struct.pack(f"<{len(ctrl)}I", *ctrl))
            for t, e in enumerate(evs):
                f.write(struct.pack("<4I", *E.encode_event(e.kind, e.cta, e.warp, e.pc,
                                                           e.obs0, e.obs1)))
    with open(os.path.join(results, "harness_traced.log"), "w") as f:
        f.write(f"DONE {len(runs)} runs\nrc 0\n")


# ---------------------------------------------------------------- the compile


@pytest.mark.parametrize("key", sorted(JOBS))
def test_every_sync_step_answers_to_a_trace_site(jobs, key):
    job, ck = _lifted(jobs[key])
    sites = {i.site for p in ck.programs for i in p.code if i.site >= 0}
    assert sites, "no step carries a trace site"
    for p in ck.programs:
        for pc, ins in enumerate(p.code):
            if isinstance(ins, SYNC_STEPS):
                assert ins.site >= 0 or (pc and p.code[pc - 1].site >= 0), (
                    f"cta{p.cta}.w{p.warp} pc {pc} {ins.label}: no trace record stands "
                    "for it")
    # the exit answers to the record before the kernel's return (a remote arrive after a
    # CTA's warps left is then seen in the trace)
    assert all(p.code[-1].site >= 0 for p in ck.programs)
    for s in sites:  # every site names an op the instrumentation numbered
        assert s // 2 < len(job["sites"])
    for f in ("kernel.o", "kernel.h", "plain.o", "plain.h", "harness.cpp",
              "harness_plain.cpp", "run.sh", "libcuda_dialect_runtime_static.a"):
        assert os.path.getsize(os.path.join(jobs[key], f)) > 0, f


def test_the_plain_kernel_has_no_trace_global(jobs):
    d = jobs["tma"]
    h = open(os.path.join(d, "harness.cpp")).read()
    assert "cute_dsl_ppk_wrapper" in h and "pipeproof_trace" in h
    assert "cute_dsl_ppku_wrapper" in open(os.path.join(d, "harness_plain.cpp")).read()
    # the symbol of the global the harness fills (in the embedded cubin)
    assert b"pipeproof_trace" in open(os.path.join(d, "kernel.o"), "rb").read()
    assert b"pipeproof_trace" not in open(os.path.join(d, "plain.o"), "rb").read()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_harness_builds_with_nvcc(jobs):
    d = jobs["2x1"]
    r = subprocess.run([os.path.join(d, "run.sh"), "--build"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.access(os.path.join(d, "harness"), os.X_OK)
    assert os.access(os.path.join(d, "harness_plain"), os.X_OK)


def test_sm100a_kernel_exports(tmp_path):
    """Blackwell kernels are compiled and exported here; their runs wait for a
    Blackwell GPU."""
    name = "pipeline_tma_umma"
    d = str(tmp_path / name)
    p = prepare(os.path.join(KERNELS, f"{name}.py::{name}"), {}, d, arch="sm_100a", runs=1)
    assert p.sites > 0
    assert os.path.getsize(os.path.join(d, "kernel.o")) > 0
    if shutil.which("nvcc"):
        r = subprocess.run([os.path.join(d, "run.sh"), "--build"], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------- the judge


@pytest.mark.parametrize("key", ["tma", "2x1", "named", "cp"])
def test_simulated_runs_are_accepted_end_to_end(jobs, key, tmp_path):
    _, ck = _lifted(jobs[key])
    results = str(tmp_path / "res")
    _write(results, [(_records(ck, seed), False) for seed in range(12)])
    rep = judge(jobs[key], results)
    assert rep.traces == 12 and rep.counts == {ACCEPTED: 12}, rep.examples


def test_a_missing_or_misordered_record_is_rejected(jobs):
    _, ck = _lifted(jobs["tma"])
    job = json.load(open(os.path.join(jobs["tma"], "job.json")))
    R = Replayer(ck, pending_rule="ignore", sited=True)
    known, observed = R.sites_of, frozenset(job["observed_sites"])
    rng = random.Random(7)
    for seed in range(8):
        recs = _records(ck, seed)
        evs, _ = sited_events(recs, known, R.agent_of, observed)
        assert R.judge(evs).status == ACCEPTED
        # one release (an arrive of a consumer warp) never recorded: its producer's
        # later wait cannot have returned
        arrives = [i for i, e in enumerate(evs) if e.warp >= 1 and
                   isinstance(_step(ck, e), Arrive)]
        i = rng.choice(arrives)
        assert R.judge(evs[:i] + evs[i + 1:]).status == REJECTED
        # two records of one warp in the other order
        w0 = [i for i, e in enumerate(evs) if e.warp == 0]
        a, b = w0[3], w0[4]
        swapped = list(evs)
        swapped[a], swapped[b] = evs[b], evs[a]
        swapped = [E.GpuEvent(t, e.kind, e.cta, e.warp, e.pc, e.obs0, e.obs1)
                   for t, e in enumerate(swapped)]
        assert R.judge(swapped).status == REJECTED


def _step(ck, e):
    p = ck.program(e.cta, e.warp)
    return next(i for i in p.code if i.site == e.pc)


def test_records_of_diverged_lanes_are_merged(jobs):
    _, ck = _lifted(jobs["tma"])
    job = json.load(open(os.path.join(jobs["tma"], "job.json")))
    R = Replayer(ck, pending_rule="ignore", sited=True)
    recs = _records(ck, 3)
    # the warp met one op in two lane groups: the second record, lanes 16-31
    i = next(k for k, e in enumerate(recs) if e.warp == 1)
    e = recs[i]
    first = E.GpuEvent(e.ticket, e.kind, e.cta, e.warp, e.pc, e.obs0, 0x0000FFFF)
    second = E.GpuEvent(e.ticket, e.kind, e.cta, e.warp, e.pc, e.obs0, 0xFFFF0000)
    split = recs[:i] + [first, second] + recs[i + 1:]
    split = [E.GpuEvent(t, x.kind, x.cta, x.warp, x.pc, x.obs0, x.obs1)
             for t, x in enumerate(split)]
    evs, merged = sited_events(split, R.sites_of, R.agent_of,
                               frozenset(job["observed_sites"]))
    assert merged == 1 and R.judge(evs).status == ACCEPTED
    # the same lanes twice is the op met twice: not merged, and the model disagrees
    twice = [x if x is not split[i + 1] else
             E.GpuEvent(x.ticket, x.kind, x.cta, x.warp, x.pc, x.obs0, 0x0000FFFF)
             for x in split]
    evs, merged = sited_events(twice, R.sites_of, R.agent_of,
                               frozenset(job["observed_sites"]))
    assert merged == 0 and R.judge(evs).status == REJECTED


def test_a_hung_launch(jobs, tmp_path):
    # the deadlocking bug: the model's own run ends stuck; as a hung GPU trace the
    # model agrees that no warp can move
    _, dead = _lifted(jobs["dead"])
    # a correct kernel's run cut short: the model can still move, so a hang there is
    # a disagreement
    _, ok = _lifted(jobs["tma"])
    cut = _records(ok, 1)
    cut = cut[:len(cut) // 2]
    results = str(tmp_path / "res")
    _write(results, [(_records(dead, s), True) for s in range(4)])
    rep = judge(jobs["dead"], results)
    assert rep.counts == {DEADLOCK: 4}, rep.examples
    results2 = str(tmp_path / "res2")
    _write(results2, [(cut, True)])
    rep2 = judge(jobs["tma"], results2)
    assert rep2.counts == {REJECTED: 1}
    assert "can still move" in rep2.examples[0]


def test_trace_file_round_trip(tmp_path):
    evs = [E.GpuEvent(t, E.K_STEP, 0, t % 3, 2 * t, t & 1, 0xFFFFFFFF) for t in range(10)]
    _write(str(tmp_path), [(evs, False), (evs[:4], True)])
    got = list(read_traces(str(tmp_path / "traces.bin")))
    assert [(r, h, len(c[0][3])) for r, h, c in got] == [(0, False, 10), (1, True, 4)]
    assert got[0][2][0][3] == evs


# ---------------------------------------------------------------- the command line


def test_cli_prepare_only_and_judge(jobs, tmp_path, capsys):
    d = str(tmp_path / "job")
    k = os.path.join(KERNELS, "pipeline_tma_async.py::pipeline_tma_async")
    assert main(["conform", k, "--prepare-only", "--workdir", d, "--runs", "4"]) == 0
    assert "run.sh OUT" in capsys.readouterr().out
    _, ck = _lifted(d)
    res = str(tmp_path / "out")
    _write(res, [(_records(ck, s), False) for s in range(3)])
    assert main(["conform", "--judge", d, "--results", res]) == 0
    assert "ACCEPTED   3" in capsys.readouterr().out
    assert main(["conform", "--judge", str(tmp_path / "nothing")]) == 2


def test_cli_without_a_gpu_prepares_and_says_so(tmp_path, capsys):
    from pipeproof.impl.cute_cli import _gpu_reason

    if not _gpu_reason():
        pytest.skip("this machine has nvcc and a GPU")
    d = str(tmp_path / "job")
    k = os.path.join(KERNELS, "named_barrier.py::named_barrier")
    assert main(["conform", k, "--workdir", d, "--runs", "2"]) == 3
    err = capsys.readouterr().err
    assert "no GPU run possible here" in err and "--judge" in err
    assert os.path.exists(os.path.join(d, "run.sh"))


def test_each_cluster_is_lifted_with_its_own_ids(jobs):
    """The judge lifts each cluster with its ``%clusterid`` (a persistent scheduler gives
    clusters different tiles; bench/results/cute_conform.md shows a 4-cluster GEMM whose
    clusters 2 and 3 the model of cluster 0 rejects); a cluster outside the grid is an
    error."""
    from pipeproof.frontend.cute import LiftError

    job = json.load(open(os.path.join(jobs["2x1"], "job.json")))
    text = open(os.path.join(jobs["2x1"], "capture.mlir")).read()
    ck, lf = lift_text(text, job["function"], job["params"], job["source"],
                       job["dsl_version"], cluster_index=0)
    assert lf.cluster_coord == (0, 0, 0)
    with pytest.raises(LiftError, match="the grid has 1 clusters"):
        lift_text(text, job["function"], job["params"], job["source"], job["dsl_version"],
                  cluster_index=1)
