"""Conformance testing: emit, run on the GPU, replay every trace through the model.

Two ways to use it:

* on a machine with a GPU and cuda-python: ``pipeproof conform FILE --runs N`` does all
  three steps (``conform_file``);
* split across machines: ``prepare_jobs`` writes PTX/cubins, manifests and an
  ``index.json`` into a folder; ``impl/gpu_runner.py`` runs that folder on the GPU
  machine (numpy + cuda-python only) and writes raw trace buffers; ``analyze`` replays
  them here.

A job's name identifies the kernel: the ``.pipe`` file, its parameters, the mutant
(``impl/mutants.py``) and whether its loops were emitted structured
(``impl/structured.py``; ``meta["structured"]``), so the replay recompiles exactly what
ran: the same programs, with the trip counts the launch passed.
"""

from __future__ import annotations

import json
import zlib
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..model.compile import CompiledKernel, compile_kernel
from ..model.lang.parser import parse_file
from . import events as E
from .emit import EmitOptions, emit
from .mutants import mutant as make_mutant
from .replay import ACCEPTED, DATA_ERROR, REJECTED, Replayer

RUNNER = Path(__file__).with_name("gpu_runner.py")


@dataclass
class JobSpec:
    name: str
    file: str
    params: dict[str, Any] = field(default_factory=dict)
    mutant: str = ""
    kind: str = "conform"
    runs: int = 200
    clusters: int = 4
    trace: bool = True
    jitter: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    #: loops bounded by parameters stay loops (``impl/structured.py``); the unrolled
    #: programs where that is not supported
    structured: bool = True
    #: watchdog and data stamps (``EmitOptions.checks``; off only for timing)
    checks: bool = True
    #: ``EmitOptions.arrivals``: ``thread`` (CUTLASS's count-1 arrivals) or ``warp`` (one
    #: count-n arrive whose pending count the trace records and the replay checks)
    arrivals: str = "thread"
    #: ``EmitOptions.fold``: the PipelineState in registers (``impl/fold.py``)
    fold: bool = True
    #: ``EmitOptions.stream``: without checks, loops read fresh source memory every turn
    stream: bool = True


def compiled_for(file: str, params: dict[str, Any], mutant: str = "",
                 structured: bool = False) -> CompiledKernel:
    """The programs a job runs (and its replay judges): unrolled, or ``structured``
    where supported (``impl/structured.compile_for_emission``); then the mutant."""
    if structured:
        from .structured import compile_for_emission

        ck = compile_for_emission(parse_file(file), dict(params)).kernel
    else:
        ck = compile_kernel(parse_file(file), dict(params))
    if mutant:
        m = make_mutant(ck, mutant)
        if m is None:
            raise ValueError(f"mutant {mutant} does not apply to {file}")
        ck = m.kernel
    return ck


def have_ptxas() -> bool:
    return shutil.which("ptxas") is not None


def assemble(ptx_path: str, arch: str, out: str, opt: Optional[int] = None) -> tuple[bool, str]:
    """``ptxas -arch=ARCH`` (``opt``: ``-O`` level; 0 checks validity fastest)."""
    cmd = ["ptxas", f"-arch={arch}", ptx_path, "-o", out]
    if opt is not None:
        cmd.insert(1, f"-O{opt}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def prepare_job(jobs_dir: str, spec: JobSpec) -> dict:
    ck = compiled_for(spec.file, spec.params, spec.mutant, spec.structured)
    em = emit(ck, EmitOptions("sm_90a", trace=spec.trace, jitter=spec.jitter,
                              checks=spec.checks, arrivals=spec.arrivals, fold=spec.fold,
                              stream=spec.stream))
    ptx = os.path.join(jobs_dir, spec.name + ".ptx")
    Path(ptx).write_text(em.ptx)
    Path(jobs_dir, spec.name + ".manifest.json").write_text(em.manifest.to_json())
    binary = spec.name + ".ptx"
    if have_ptxas():
        ok, err = assemble(ptx, "sm_90a", os.path.join(jobs_dir, spec.name + ".cubin"))
        if not ok:
            raise RuntimeError(f"ptxas failed for {spec.name}: {err[:2000]}")
        binary = spec.name + ".cubin"
        os.remove(ptx)
    job = {"name": spec.name, "kind": spec.kind, "binary": binary,
           "manifest": spec.name + ".manifest.json", "runs": spec.runs,
           "clusters": spec.clusters, "seed": zlib.crc32(spec.name.encode()) % (1 << 30) + 1,
           "meta": {"file": spec.file, "params": spec.params, "mutant": spec.mutant,
                    "structured": spec.structured, "compiled": em.manifest.compiled,
                    "arrivals": spec.arrivals, "fold": spec.fold}}
    if em.manifest.cyclic:
        job["process_s"] = 300
    if em.manifest.grid_clusters > 1:
        # a grid of a few tiny clusters ends in milliseconds, or at the watchdog (20 ms);
        # a launch still running after 5 s is a hang (a bar.sync no watchdog covers)
        job["hang_s"] = 5.0
    job.update(spec.extra)
    return job


def write_index(jobs_dir: str, jobs: list[dict], **extra: Any) -> None:
    Path(jobs_dir, "index.json").write_text(json.dumps({"jobs": jobs, **extra}, indent=1))


# --------------------------------------------------------------------------- analysis


@dataclass
class JobReport:
    name: str
    file: str
    mutant: str
    params: dict[str, Any]
    runner_status: str
    traces: int = 0
    launches: int = 0
    counts: Counter = field(default_factory=Counter)
    props: Counter = field(default_factory=Counter)
    possible: Counter = field(default_factory=Counter)  # violations only a late
    # placement of an unobservable completion shows (see Replayer.judge)
    data_errors: int = 0              # traces with a stamp mismatch
    ctrl_errors: int = 0              # stamp mismatches counted by the kernels
    overflow: int = 0
    examples: list[str] = field(default_factory=list)
    inferred: int = 0
    reordered: int = 0
    device: str = ""
    notes: list[str] = field(default_factory=list)

    def outcome(self) -> str:
        """The strongest thing the GPU showed, for the fault-injection table."""
        if self.runner_status != "ok":
            return "fault/hang: " + self.runner_status
        parts = []
        for k in ("REJECTED", "DEADLOCK", "VIOLATION", "DATA_ERROR", "INCOMPLETE"):
            if self.counts.get(k):
                parts.append(f"{k} {self.counts[k]}/{self.traces}")
        if self.ctrl_errors and not self.counts.get("DATA_ERROR"):
            parts.append(f"{self.ctrl_errors} stamp errors")
        if not parts:
            parts.append(f"ACCEPTED {self.traces}/{self.traces}")
        if self.possible:
            parts.append("possible: " + ", ".join(f"{k} {v}" for k, v in self.possible.items()))
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "mutant": self.mutant,
                "params": self.params, "runner_status": self.runner_status,
                "traces": self.traces, "launches": self.launches, "counts": dict(self.counts),
                "props": dict(self.props), "possible": dict(self.possible),
                "data_error_traces": self.data_errors,
                "stamp_errors": self.ctrl_errors, "overflow": self.overflow,
                "inferred_env_steps": self.inferred, "reordered_events": self.reordered,
                "examples": self.examples, "device": self.device, "notes": self.notes,
                "outcome": self.outcome()}


def analyze_job(job: dict, results_dir: str, max_traces: Optional[int] = None,
                pending_rule: str = "before") -> JobReport:
    import numpy as np

    meta = job["meta"]
    rep = JobReport(job["name"], meta["file"], meta.get("mutant", ""), meta.get("params", {}),
                    "missing")
    st_path = os.path.join(results_dir, job["name"] + ".json")
    if os.path.exists(st_path):
        st = json.load(open(st_path))
        rep.runner_status = st.get("status", "?")
        rep.device = st.get("device", "")
    npz = os.path.join(results_dir, job["name"] + ".npz")
    if not os.path.exists(npz):
        return rep
    data = np.load(npz)
    ev, index, ctrl = data["events"], data["index"], data["ctrl"]
    ck = compiled_for(meta["file"], meta.get("params", {}), meta.get("mutant", ""),
                      meta.get("structured", False))
    R = Replayer(ck, pending_rule=pending_rule)
    rep.launches = int(ctrl.shape[0])
    rep.ctrl_errors = int(ctrl[:, :, E.C_ERRORS].sum())
    for i, (run, cl, start, count) in enumerate(index.tolist()):
        if max_traces is not None and i >= max_traces:
            break
        words = ev[4 * start: 4 * (start + count)]
        evs = E.decode_events(words, count)
        c = ctrl[run, cl]
        overflow = int(c[E.C_OVERFLOW])
        res = R.judge(evs, overflow=overflow)
        rep.traces += 1
        rep.counts[res.status] += 1
        rep.inferred += res.inferred
        rep.reordered += res.reordered
        if res.violation:
            rep.props[res.violation[0]] += 1
        if res.possible:
            rep.possible[res.possible[0]] += 1
        if res.data_errors:
            rep.data_errors += 1
        if overflow:
            rep.overflow += 1
        if res.status != ACCEPTED and len(rep.examples) < 3:
            txt = f"run {run} cluster {cl}: {res.headline()}"
            if res.status == REJECTED:
                txt += "\n" + res.state_text
            rep.examples.append(txt)
    return rep


def analyze(jobs_dir: str, results_dir: str, only: str = "",
            max_traces: Optional[int] = None, pending_rule: str = "before",
            workers: int = 1) -> list[JobReport]:
    index = json.load(open(os.path.join(jobs_dir, "index.json")))
    jobs = [j for j in index["jobs"] if j["kind"] == "conform"
            and (not only or any(o in j["name"] for o in only.split(",")))]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as ex:
            futs = [ex.submit(analyze_job, j, results_dir, max_traces, pending_rule)
                    for j in jobs]
            return [f.result() for f in futs]
    return [analyze_job(j, results_dir, max_traces, pending_rule) for j in jobs]


# --------------------------------------------------------------------------- one file


class NoGpu(RuntimeError):
    pass


def gpu_available() -> str:
    """'' if a CUDA GPU is usable through cuda-python, else the reason it is not."""
    try:
        try:
            from cuda.bindings import driver  # type: ignore
        except ImportError:
            from cuda import cuda as driver  # type: ignore
    except ImportError:
        return ("cuda-python is not installed (pip install 'pipeproof[gpu]'); "
                "conformance runs need an NVIDIA Hopper GPU (sm_90a)")
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return f"no usable NVIDIA GPU (cuInit: error {int(err)})"
        err, n = driver.cuDeviceGetCount()
        if int(err) != 0 or n == 0:
            return "no NVIDIA GPU found"
        err, dev = driver.cuDeviceGet(0)
        err, major = driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        if int(major) < 9:
            return f"the GPU has compute capability {int(major)}.x; sm_90a (Hopper) is needed"
    except Exception as e:  # noqa: BLE001
        return f"CUDA is not usable here: {e}"
    return ""


def conform_file(file: str, params: dict[str, Any], runs: int, clusters: int = 4,
                 mutant: str = "", workdir: Optional[str] = None,
                 timeout_ms: float = 20.0, structured: bool = True) -> JobReport:
    why = gpu_available()
    if why:
        raise NoGpu(why)
    import tempfile

    work = workdir or tempfile.mkdtemp(prefix="pipeproof-conform-")
    jobs_dir, out = os.path.join(work, "jobs"), os.path.join(work, "results")
    os.makedirs(jobs_dir, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    spec = JobSpec("conform", file, params, mutant, runs=runs, clusters=clusters,
                   extra={"timeout_ns": int(timeout_ms * 1e6),
                          "grace_ns": int(timeout_ms * 1e5)}, structured=structured)
    job = prepare_job(jobs_dir, spec)
    write_index(jobs_dir, [job])
    subprocess.run([sys.executable, str(RUNNER), jobs_dir, out], check=False)
    return analyze_job(job, out)


def render_report(rep: JobReport) -> str:
    lines = [f"{rep.file}" + (f" [mutant {rep.mutant}]" if rep.mutant else "") +
             f": {rep.traces} traces from {rep.launches} launches on {rep.device or 'GPU'}",
             f"  runner: {rep.runner_status}"]
    for k, v in sorted(rep.counts.items()):
        lines.append(f"  {k:10s} {v}")
    if rep.props:
        lines.append("  properties violated in replay: " +
                     ", ".join(f"{k} x{v}" for k, v in rep.props.items()))
    if rep.possible:
        lines.append("  possible only if an unobservable completion came late: " +
                     ", ".join(f"{k} x{v}" for k, v in rep.possible.items()))
    lines.append(f"  stamp errors counted by the kernels: {rep.ctrl_errors}")
    lines.append(f"  inferred async completions: {rep.inferred}, events taken out of ticket "
                 f"order: {rep.reordered}")
    for note in rep.notes:
        lines.append(f"  note: {note}")
    for ex in rep.examples:
        lines.append("  " + ex.replace("\n", "\n    "))
    return "\n".join(lines)


def exit_code(rep: JobReport) -> int:
    if rep.runner_status != "ok" or rep.traces == 0:
        return 3
    bad = rep.counts.get(REJECTED, 0) + rep.counts.get(DATA_ERROR, 0)
    if bad or rep.ctrl_errors:
        return 1
    if any(k != ACCEPTED for k in rep.counts):
        return 1
    return 0
