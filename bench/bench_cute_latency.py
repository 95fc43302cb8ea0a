"""Hand-off latency of pipeproof's emitted pipelines against CuTe DSL twins (issue 25 item 3).

The CuTe DSL kernels (``bench/cute_latency_kernels.py``: PipelineAsync and PipelineTmaAsync
with 1 KB bulk copies, one producer and one consumer warp, 1 and 4 stages, ``k_tiles`` a
run-time argument) are compiled here by
``cute.compile`` (sm_90a, no GPU needed); their PTX, assembled by ``ptxas`` when it is on
the machine, becomes ``raw_bench`` jobs of ``impl/gpu_runner.py`` (cuda-python; dynamic
shared memory set at launch).  pipeproof's own jobs are the ``bare`` and ``bare64k``
latency variants of ``bench/bench_gpu.py`` (structured, no instrumentation).  Both are
launched with 256 and 65536 k-tiles, every launch timed with CUDA events, and the cost
of one k-tile is the marginal one, (t(65536) - t(256)) / 65280: launch overhead and
set-up cancel.  One runner command runs every job in one process on one GPU.

    python bench/bench_cute_latency.py prepare DIR       # here (adds to DIR/index.json)
    python3 impl/gpu_runner.py DIR OUT                   # on the GPU machine
    python bench/bench_cute_latency.py report DIR OUT [OUT ...]   # bench/results/cute_latency.*

Acceptance (issue 25): pipeproof's per-k-tile time within 1.1x of the CuTe DSL kernel's.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
#: the two trip counts of every kernel: the marginal cost of a k-tile is their difference
K_SHORT, K_LONG = 256, 65536
STAGES = (1, 4)
#: the benchmark kernels: PipelineAsync and PipelineTmaAsync (1 KB bulk copies)
KINDS = ("async", "tma")
REPS = 20
#: acceptance bound of issue 25 (pipeproof / CuTe DSL, per k-tile)
BOUND = 1.1


def cute_ptx(kind: str, stages: int) -> tuple[str, int]:
    """The PTX ``cute.compile`` makes for the twin of ``kind`` with ``stages`` stages, and
    the dynamic shared memory its launch asks for."""
    from pipeproof.frontend.cute.capture import compiled_ptx, prepare_environment

    prepare_environment("sm_90a")
    sys.path.insert(0, str(HERE))
    try:
        import cute_latency_kernels as K  # type: ignore
    finally:
        sys.path.pop(0)
    make: Callable[[int], Any] = getattr(K, f"{kind}_latency")
    _cap, ptx = compiled_ptx(lambda: make(stages), "sm_90a")
    return ptx, int(K.smem_bytes(kind, stages))


def entry_name(ptx: str) -> str:
    m = re.search(r"\.visible\s+\.entry\s+(\w+)\s*\(", ptx)
    if not m:
        raise RuntimeError("the DSL's PTX has no .entry")
    return m.group(1)


def param_types(ptx: str, entry: str) -> list[str]:
    """The kernel's parameters, in order, as the runner passes them: ``u32``, ``u64``
    (a pointer: a ``.u64`` or an 8-byte ``.b8`` array, the DSL's tensor), ``bN`` (an
    N-byte ``.b8`` array passed by value, e.g. a copy atom)."""
    m = re.search(re.escape(entry) + r"\s*\(([^)]*)\)", ptx)
    out = []
    for p in (m.group(1).split(",") if m and m.group(1).strip() else []):
        arr = re.search(r"\.b8\s+\w+\[(\d+)\]", p)
        scalar = re.search(r"\.param\s+\.[bsu](32|64)\s", p + " ")
        if arr:
            n = int(arr.group(1))
            out.append("u64" if n == 8 else f"b{n}")
        elif scalar:
            out.append("u" + scalar.group(1))
        else:
            raise RuntimeError(f"kernel parameter the runner cannot pass: {p.strip()}")
    return out


#: bytes of the zeroed global buffer a pointer parameter gets (the TMA twin's source)
PTR_BYTES = 1 << 16


def launch_args(types: list[str], k_tiles: int) -> list[list]:
    """The first parameter is ``k_tiles`` (u32); a pointer gets a zeroed buffer
    (``ptr:N``, the runner allocates it); a by-value struct zeros (the DSL kernels here
    read none)."""
    if not types or types[0] != "u32":
        raise RuntimeError(f"expected k_tiles (u32) as the first parameter, got {types}")
    rest = [[t, f"ptr:{PTR_BYTES}" if t == "u64" else 0] for t in types[1:]]
    return [["u32", k_tiles]] + rest


def cute_jobs(jobs_dir: str, kinds: tuple[str, ...] = KINDS,
              log: Callable[..., None] = print) -> list[dict]:
    """``raw_bench`` jobs for the CuTe DSL twins: one binary per (kind, stages), launched
    with ``K_SHORT`` and ``K_LONG`` k-tiles (its first parameter)."""
    from pipeproof.impl.conform import assemble, have_ptxas

    jobs = []
    for kind in kinds:
        for s in STAGES:
            ptx, smem = cute_ptx(kind, s)
            base = f"cute__lat_{kind}_s{s}"
            path = os.path.join(jobs_dir, base + ".ptx")
            Path(path).write_text(ptx)
            binary = base + ".ptx"
            if have_ptxas():
                ok, err = assemble(path, "sm_90a", os.path.join(jobs_dir, base + ".cubin"))
                if not ok:
                    raise RuntimeError(f"ptxas failed for {base}: {err[:2000]}")
                binary = base + ".cubin"
            entry = entry_name(ptx)
            types = param_types(ptx, entry)
            # the block the DSL's launch asked for (it writes it into the PTX: .reqntid)
            m = re.search(r"\.reqntid\s+(\d+)\s*,\s*1\s*,\s*1", ptx)
            block = int(m.group(1)) if m else 64
            for k in (K_SHORT, K_LONG):
                args = launch_args(types, k)
                jobs.append({"name": f"{base}_k{k}", "kind": "raw_bench", "binary": binary,
                             "entry": entry, "args": args, "grid": [1, 1, 1], "block": block,
                             "cluster": [1, 1, 1], "smem": smem, "reps": REPS, "warmup": 2,
                             "hang_s": 20.0, "process_s": 120,
                             "meta": {"kind": kind, "stages": s, "k_tiles": k,
                                      "source": "bench/cute_latency_kernels.py"}})
            log(f"{base}: {entry}, params {types}, smem {smem} B, {binary}")
    return jobs


def pipeproof_jobs(jobs_dir: str, kinds: tuple[str, ...] = KINDS) -> list[dict]:
    """pipeproof's ``bare`` (256 k-tiles) and ``bare64k`` (65536) latency jobs, as
    ``bench/bench_gpu.py`` prepares them."""
    from pipeproof.impl.conform import JobSpec, prepare_job
    from pipeproof.impl.gpu_batch import bench_specs

    jobs = []
    for name, f, params, trace, extra in bench_specs():
        if not any(name == f"bench__lat_{k}_s{s}_{v}" for k in kinds for s in STAGES
                   for v in ("bare", "bare64k")):
            continue
        extra = dict(extra)
        checks, structured = extra.pop("checks", True), extra.pop("structured", True)
        stream = extra.pop("stream", True)
        extra["reps"] = REPS
        # the default emission folds the loops (the PipelineState in registers); beside it
        # the same kernel with the loop body copied per pipeline state (``--copies``)
        for suffix, fold in (("", True), ("copies", False)):
            spec = JobSpec(name.replace("_bare", "_bare" + suffix, 1) if suffix else name,
                           str(ROOT / f), params, kind="bench", runs=1, trace=trace,
                           jitter=False, clusters=1, extra=dict(extra),
                           structured=structured, checks=checks, fold=fold,
                           stream=stream)
            job = prepare_job(jobs_dir, spec)
            job["process_s"] = 120
            jobs.append(job)
    return jobs


def prepare(jobs_dir: str, kinds: tuple[str, ...] = KINDS) -> list[str]:
    """Write both sets of jobs into ``jobs_dir``; jobs already in its index (e.g. from
    ``bench/bench_gpu.py prepare``) stay, ones of the same name are replaced."""
    from pipeproof.impl.conform import write_index

    os.makedirs(jobs_dir, exist_ok=True)
    new = pipeproof_jobs(jobs_dir, kinds) + cute_jobs(jobs_dir, kinds)
    idx_path = Path(jobs_dir, "index.json")
    old: dict = json.loads(idx_path.read_text()) if idx_path.exists() else {}
    names = {j["name"] for j in new}
    jobs = [j for j in old.get("jobs", []) if j["name"] not in names] + new
    extra = {k: v for k, v in old.items() if k != "jobs"}
    extra["budget_s"] = max(int(extra.get("budget_s", 0)), 300)
    write_index(jobs_dir, jobs, **extra)
    return [j["name"] for j in new]


# --------------------------------------------------------------------------- report


def _load(out_dir: str, name: str) -> Optional[dict]:
    p = Path(out_dir, name + ".json")
    return json.loads(p.read_text()) if p.exists() else None


def _kernel_ns(timing: list) -> int:
    st = [timing[i] for i in range(0, len(timing), 2) if timing[i]]
    en = [timing[i + 1] for i in range(0, len(timing), 2) if timing[i + 1]]
    return (max(en) - min(st)) if st and en else 0


def marginal_ns(short: dict, long: dict, key: str = "ms") -> float:
    """Per-k-tile ns from the median event times of the two trip counts."""
    return (statistics.median(long[key]) - statistics.median(short[key])) * 1e6 \
        / (K_LONG - K_SHORT)


def report(jobs_dir: str, out_dir: str, kinds: tuple[str, ...] = KINDS) -> dict:
    res: dict = {"rows": [], "errors": {}, "bound": BOUND,
                 "k_tiles": [K_SHORT, K_LONG], "reps": REPS}
    devices = set()
    for kind in kinds:
        for s in STAGES:
            got = {"pp_s": _load(out_dir, f"bench__lat_{kind}_s{s}_bare"),
                   "pp_l": _load(out_dir, f"bench__lat_{kind}_s{s}_bare64k"),
                   "cu_s": _load(out_dir, f"cute__lat_{kind}_s{s}_k{K_SHORT}"),
                   "cu_l": _load(out_dir, f"cute__lat_{kind}_s{s}_k{K_LONG}")}
            bad = {k: (v or {}).get("status", "missing") for k, v in got.items()
                   if not v or v.get("status") != "ok"}
            for v in got.values():
                if v and v.get("device"):
                    devices.add(v["device"])
            if bad:
                res["errors"][f"{kind}_s{s}"] = bad
                continue
            fs = _load(out_dir, f"bench__lat_{kind}_s{s}_barecopies")
            fl = _load(out_dir, f"bench__lat_{kind}_s{s}_barecopies64k")
            copies = (marginal_ns(fs, fl) if fs and fl and fs.get("status") == "ok"
                      and fl.get("status") == "ok" else None)
            pp = marginal_ns(got["pp_s"], got["pp_l"])
            cu = marginal_ns(got["cu_s"], got["cu_l"])
            gt = (_kernel_ns(got["pp_l"]["timing"]) - _kernel_ns(got["pp_s"]["timing"])) \
                / (K_LONG - K_SHORT)
            res["rows"].append({
                "kernel": kind, "stages": s, "pipeproof_ns": pp, "cute_ns": cu,
                "ratio": pp / cu if cu > 0 else None,
                "within_bound": cu > 0 and pp / cu <= BOUND,
                "pipeproof_globaltimer_ns": gt, "pipeproof_copies_ns": copies,
                "ms_median": {k: statistics.median(v["ms"]) for k, v in got.items()}})
    res["device"] = ", ".join(sorted(devices)) or "?"
    res["same_device_call"] = len(devices) <= 1
    return res


def report_runs(jobs_dir: str, out_dirs: list[str], kinds: tuple[str, ...] = KINDS) -> dict:
    """Several runner commands of the same jobs (back to back, one device call): each
    figure is the median over the runs, and the spread of the per-run ratios is kept."""
    runs = [report(jobs_dir, o, kinds) for o in out_dirs]
    if len(runs) == 1:
        return runs[0]
    res = dict(runs[0])
    res["runs"] = len(runs)
    res["device"] = ", ".join(sorted({r["device"] for r in runs}))
    res["same_device_call"] = all(r["same_device_call"] for r in runs) and \
        len({r["device"] for r in runs}) == 1
    rows = []
    for first in runs[0]["rows"]:
        same = [r for run in runs for r in run["rows"]
                if (r["kernel"], r["stages"]) == (first["kernel"], first["stages"])]
        med = {k: statistics.median(r[k] for r in same)
               for k in ("pipeproof_ns", "cute_ns", "pipeproof_globaltimer_ns")}
        copies = [r["pipeproof_copies_ns"] for r in same
                  if r.get("pipeproof_copies_ns") is not None]
        ratios = [r["ratio"] for r in same if r["ratio"] is not None]
        ratio = med["pipeproof_ns"] / med["cute_ns"] if med["cute_ns"] > 0 else None
        rows.append({"kernel": first["kernel"], "stages": first["stages"], **med,
                     "pipeproof_copies_ns": statistics.median(copies) if copies else None,
                     "ratio": ratio, "within_bound": ratio is not None and ratio <= BOUND,
                     "ratio_per_run": ratios, "runs": len(same)})
    res["rows"] = rows
    return res


def markdown(res: dict) -> str:
    lines = ["# Hand-off latency: pipeproof's emitted PTX against the CuTe DSL kernel", "",
             f"GPU: {res['device']}; every job in one `impl/gpu_runner.py` command (one "
             "process, one GPU, the same run).  Written by `bench/bench_cute_latency.py`.",
             "",
             "Same configuration on both sides: one CTA, warp 0 producer, warp 1 consumer, "
             "no data work besides the TMA loads, `k_tiles` a run-time kernel argument.  "
             "async: PipelineAsync, groups of 32 threads (every lane arrives).  tma: "
             "PipelineTmaAsync, producer and consumer groups of one thread, 1 KB per stage "
             "by `cp.async.bulk` from one global region.  pipeproof: "
             "`bench/bench_gpu_async.pipe`, `bench/bench_gpu_tma.pipe`, structured "
             "emission without instrumentation (`bare`, `bare64k`: loops folded, the "
             "PipelineState in registers as CUTLASS keeps it; the `--copies` column: the "
             "same kernels with the loop body copied per pipeline state).  CuTe DSL: "
             "`bench/cute_latency_kernels.py`, `cute.compile` for sm_90a, PTX assembled "
             "by ptxas, launched through cuda-python.  Per k-tile: "
             f"(t({K_LONG}) - t({K_SHORT})) / {K_LONG - K_SHORT}, t the median of "
             f"{res['reps']} launches timed with CUDA events (launch overhead cancels)"
             + (f"; every figure the median of {res['runs']} runner commands back to back, "
                "the last column the ratio of each" if res.get("runs") else "") + ".  "
             "With 1 stage a k-tile is a round trip (two hand-offs).  Bound (issue 25): "
             f"ratio <= {res['bound']}.", "",
             "| kernel | stages | pipeproof ns/k-tile | CuTe DSL ns/k-tile | ratio | "
             f"<= {res['bound']} | pipeproof %globaltimer ns/k-tile | pipeproof --copies "
             "ns/k-tile |" + (" ratio per run |" if res.get("runs") else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|" if res.get("runs") else "")]
    for r in res["rows"]:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        lines.append(f"| {r['kernel']} | {r['stages']} | {r['pipeproof_ns']:.1f} | "
                     f"{r['cute_ns']:.1f} | {ratio} | {'yes' if r['within_bound'] else 'NO'} "
                     f"| {r['pipeproof_globaltimer_ns']:.1f} | "
                     + (f"{r['pipeproof_copies_ns']:.1f} |"
                        if r.get("pipeproof_copies_ns") is not None else "- |")
                     + (" " + ", ".join(f"{x:.3f}" for x in r["ratio_per_run"]) + " |"
                        if res.get("runs") else ""))
    if res["errors"]:
        lines += ["", "Not measured:", ""] + [f"* {k}: {v}" for k, v in res["errors"].items()]
    if not res["same_device_call"]:
        lines += ["", "WARNING: the results name more than one device."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "prepare":
        for n in prepare(argv[1]):
            print(n)
        return 0
    if len(argv) >= 3 and argv[0] == "report":
        res = report_runs(argv[1], argv[2:])
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "cute_latency.json").write_text(json.dumps(res, indent=1) + "\n")
        md = markdown(res)
        (RESULTS / "cute_latency.md").write_text(md)
        print(md)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
