"""GPU conformance of real CuTe DSL kernels: our own test kernels (every Hopper-runnable
one, each planted bug as a mutant) and, given their sources, NVIDIA's Hopper
persistent GEMM (not ours: pass the folder that holds it, see
``bench/bench_cute_examples.py``).

    python bench/bench_cute_conform.py prepare JOBS [--examples SRC] [--runs N]
    JOBS/run_all.sh OUT          # on the GPU machine (nvcc + GPU; no DSL, no pipeproof)
    python bench/bench_cute_conform.py judge JOBS OUT [--device TEXT]

``prepare`` compiles each kernel with trace sites and exports it (``impl/cute_conform.py``);
``judge`` replays every trace through the model lifted from the same compile, checks
the GEMM's output against a CPU product, runs the model checker on each mutant, and
writes ``bench/results/cute_conform.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(ROOT, "tests", "cute_kernels")
#: sm_100a kernels: compiled and exported here, their runs wait for a Blackwell GPU
BLACKWELL = ("pipeline_async_umma", "pipeline_clc_fetch_async",
             "pipeline_tma_multi_consumers_async", "pipeline_tma_umma", "pipeline_tma_umma_2cta",
             "pipeline_umma_async")
HOPPER = ("pipeline_async", "pipeline_cp_async", "pipeline_order", "pipeline_tma_async",
          "pipeline_tma_async_2x1", "pipeline_tma_async_multicast",
          "pipeline_tma_async_participants", "pipeline_tma_store", "named_barrier",
          "cp_async_groups")


def _bugs(name: str) -> tuple[int, ...]:
    import ast

    tree = ast.parse(open(os.path.join(KERNELS, name + ".py")).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "BUGS":
            return tuple(ast.literal_eval(node.value))
    return ()


def prepare_all(jobs: str, runs: int, mutant_runs: int, examples: str = "",
                only: tuple[str, ...] = ()) -> None:
    """``only``: the kernels to prepare (every one when empty)."""
    from pipeproof.impl.cute_conform import prepare

    os.makedirs(jobs, exist_ok=True)
    names = []
    todo: list[tuple[str, Any, dict, int, float]] = []
    for k in HOPPER:
        if only and k not in only:
            continue
        entry = os.path.join(KERNELS, f"{k}.py::{k}")
        todo.append((k, entry, {}, runs, 5000.0))
        for b in _bugs(k):
            todo.append((f"{k}_bug{b}", entry, {"bug": b}, mutant_runs, 1500.0))
    if examples:
        sys.path.insert(0, HERE)
        from bench_cute_examples import _stub_torch, hopper_persistent

        _stub_torch()
        for cm, kt, tn, ncl in ((1, 4, 2, 1), (2, 4, 2, 1), (2, 16, 4, 1), (2, 4, 6, 4)):
            fn = hopper_persistent(examples, cm, 1, kt, tn, clusters=ncl)
            fn.__name__ = f"hopper_persistent_gemm_{cm}x1" + ("_k16_n4" if kt == 16 else "") \
                + (f"_grid{ncl}" if ncl > 1 else "")
            todo.append((fn.__name__, fn, {}, runs, 5000.0))
    for k in BLACKWELL:
        if only and k not in only:
            continue
        todo.append((k, os.path.join(KERNELS, f"{k}.py::{k}"), {}, runs, 5000.0))
    for name, entry, params, n, tmo in todo:
        t0 = time.time()
        d = os.path.join(jobs, name)
        arch = "sm_100a" if name in BLACKWELL else "sm_90a"
        try:
            p = prepare(entry, params, d, arch=arch, runs=n, timeout_ms=tmo)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: FAILED {type(e).__name__}: {e}")
            continue
        meta = json.load(open(os.path.join(d, "job.json")))
        meta["bench"] = {"name": name, "bug": params.get("bug", 0),
                         "gemm": name.startswith("hopper_persistent_gemm")}
        json.dump(meta, open(os.path.join(d, "job.json"), "w"), indent=1)
        if arch == "sm_90a":
            names.append(name)
        print(f"{name}: {arch}, {p.sites} sites, {p.clusters} cluster(s), {time.time() - t0:.1f}s")
    with open(os.path.join(jobs, "run_all.sh"), "w") as f:
        f.write("#!/bin/sh\n# run every job; OUT/<job>/ gets its traces and logs\n"
                'here=$(cd "$(dirname "$0")" && pwd)\nout=${1:-$here/results}\n'
                '# build every harness first, in parallel\n'
                'ls -d "$here"/*/ | xargs -P 16 -I{} sh -c \'"{}run.sh" --build\'\n')
        for n in names:
            f.write(f'echo "== {n}"; "$here/{n}/run.sh" "$out/{n}"\n')
    os.chmod(os.path.join(jobs, "run_all.sh"), 0o755)


#: kernels whose global output is known: (tensor, the value of every element)
EXPECT = {"pipeline_async": ("mOut", 6.0), "named_barrier": ("mOut", 1.0),
          "pipeline_order": ("mOut", 2.0)}


def expect_check(name: str, out: str) -> str:
    base = name.split("_bug")[0]
    if base not in EXPECT:
        return ""
    import numpy as np

    tensor, value = EXPECT[base]
    path = os.path.join(out, f"out_{tensor}.bin")
    if not os.path.exists(path):
        return "no output"
    c = np.fromfile(path, np.float32)
    bad = int((c != value).sum())
    return "correct" if bad == 0 else f"{bad}/{c.size} wrong"


def gemm_check(job_dir: str, out: str) -> str:
    """C = A B^T (A: M x K, B: N x K, C: M x N, all K-/N-major fp16) against the CPU."""
    import numpy as np

    meta = json.load(open(os.path.join(job_dir, "job.json")))
    t = {x["name"]: x for x in meta["tensors"]}
    a = np.fromfile(os.path.join(job_dir, "in_a.bin"), np.float16).astype(np.float64)
    b = np.fromfile(os.path.join(job_dir, "in_b.bin"), np.float16).astype(np.float64)
    path = os.path.join(out, "out_c.bin")
    if not os.path.exists(path):
        return "no output"
    c = np.fromfile(path, np.float16).astype(np.float64)
    M, K, _ = t["a"]["shape"]
    N = t["b"]["shape"][0]
    ref = a.reshape(M, K) @ b.reshape(N, K).T
    bad = int((np.abs(c.reshape(M, N) - ref) > 0.5).sum())
    return "correct" if bad == 0 else f"{bad}/{M * N} wrong"


def overhead_table(folder: str) -> list[str]:
    """Per-launch times (median, min over 100 launches, ms) of the same kernel: compiled
    without trace sites, with trace sites and recording off, recording, recording with
    jitter (logs ``<job>_<mode>.log`` of the harness)."""
    modes = (("plain", "no trace sites (what the user ships)"),
             ("untraced", "trace sites, recording off"),
             ("traced_nojitter", "recording"), ("traced_jitter", "recording + jitter"))
    jobs = sorted(f[:-len("_plain.log")] for f in os.listdir(folder)
                  if f.endswith("_plain.log"))
    lines = ["| kernel | " + " | ".join(m[1] for m in modes) + " |",
             "|---|" + "---|" * len(modes)]
    for j in jobs:
        cells = []
        base = None
        for m, _ in modes:
            path = os.path.join(folder, f"{j}_{m}.log")
            ts = sorted(float(ln.split()[3]) for ln in open(path) if ln.startswith("RUN")) \
                if os.path.exists(path) else []
            if not ts:
                cells.append("-")
                continue
            med = ts[len(ts) // 2]
            base = base or med
            cells.append(f"{med * 1000:.1f} us (x{med / base:.1f})")
        lines.append(f"| {j} | " + " | ".join(cells) + " |")
    return lines


def judge_all(jobs: str, out: str, device: str, overhead: str = "") -> str:
    from pipeproof.api import check_compiled
    from pipeproof.frontend.cute import lift_text
    from pipeproof.impl.cute_conform import judge

    rows = []
    rejections: list[str] = []
    for name in sorted(os.listdir(jobs)):
        d = os.path.join(jobs, name)
        if not os.path.isfile(os.path.join(d, "job.json")):
            continue
        meta = json.load(open(os.path.join(d, "job.json")))
        b = meta.get("bench", {})
        res_dir = os.path.join(out, name)
        rep = judge(d, res_dir) if os.path.isdir(res_dir) else None
        model = ""
        if b.get("bug"):
            ck, _ = lift_text(open(os.path.join(d, "capture.mlir")).read(), meta["function"],
                              meta["params"], meta["source"], meta["dsl_version"])
            r = check_compiled(ck, timeout=120, max_states=400_000)
            model = r.status + (f" {r.prop}" if r.prop else "")
        gpu = "not run" if rep is None else rep.outcome()
        if meta.get("arch") == "sm_100a":
            gpu = "exported; waits for a Blackwell GPU"
        outp = ""
        if rep is not None:
            outp = gemm_check(d, res_dir) if b.get("gemm") else expect_check(name, res_dir)
        caught = ""
        if b.get("bug"):
            flagged = model.startswith("VIOLATED")
            seen = rep is not None and (rep.runner_status != "ok" or
                                        any(k != "ACCEPTED" for k in rep.counts) or
                                        "wrong" in outp)
            possible = rep is not None and model.split()[-1] in rep.possible
            caught = ("caught" if seen else "possible (not observable on the GPU)"
                      if possible else "MISSED") if flagged else \
                ("(model: no violation)" if not seen else "GPU flagged, model did not")
        if rep is not None and rep.counts.get("REJECTED"):
            first = next((x for x in rep.examples if "REJECTED" in x), "")
            rejections.append(f"* {name}: {first.splitlines()[0] if first else ''}")
        rows.append((name, meta["sites"] and len(meta["sites"]), meta["cluster"], gpu,
                     rep.reordered if rep else 0, outp, model, caught,
                     "; ".join(rep.notes) if rep else ""))
    lines = ["# GPU conformance of real CuTe DSL kernels",
             "",
             f"Device: {device}.  Written by `bench/bench_cute_conform.py` "
             "(`prepare`, `run_all.sh` on the GPU machine, `judge`).",
             "",
             "Each kernel is compiled once by `cute.compile` with trace sites "
             "(`impl/cute_trace.py`), exported with `export_to_c`, linked with a generated "
             "harness and launched with jitter; every cluster's trace is replayed through the "
             "model lifted from the same compile (`impl/cute_conform.py`).  Bugs are the "
             "planted one-line bugs of `tests/cute_kernels/` (the kernel's docstring says "
             "what each changes), compiled through the same path; `model` is the checker's "
             "verdict on the lifted mutant; a mutant is *caught* when the GPU run hangs "
             "(harness watchdog), a trace is rejected, or the output is wrong.",
             "",
             "| job | traced ops | cluster | GPU traces | reordered | output | model | mutant |",
             "|---|---|---|---|---|---|---|---|"]
    for name, sites, cl, gpu, reo, outp, model, caught, note in rows:
        lines.append(f"| {name} | {sites} | {'x'.join(map(str, cl))} | {gpu} | {reo} | "
                     f"{outp} | {model} | {caught} |")
    if overhead:
        lines += ["", "## Tracing overhead", "",
                  "Median time of one launch over 100 launches (CUDA events around the "
                  "exported launcher), the same GEMM problem in each column, one H100; the "
                  "ratio is to the kernel without trace sites.  Recording costs a global "
                  "atomic ticket per record and a 16-byte store to mapped host memory (so "
                  "that a hung launch's records can be read); with recording off a record "
                  "is one cached load and a uniform branch.", ""] + overhead_table(overhead)
    if rejections:
        lines += ["", "## Rejected traces", "",
                  "The first record the model could not take, per job with rejected traces "
                  "(for a planted bug this is where the GPU and the model of the buggy "
                  "kernel part; see spec/hardware.md for what a too-small tx_count does on "
                  "the GPU):", ""] + rejections
    notes = [f"* {n}: {note}" for n, *_r, note in rows if note]
    if notes:
        lines += ["", "Notes of the judge (records merged: the lanes of a warp met one op "
                  "at two times, each group recording it):", ""] + notes
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("jobs")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--mutant-runs", type=int, default=20)
    p.add_argument("--examples", default="")
    p.add_argument("--only", default="", help="comma-separated kernel names (default: all)")
    j = sub.add_parser("judge")
    j.add_argument("jobs")
    j.add_argument("out")
    j.add_argument("--device", default="(not recorded)")
    j.add_argument("--overhead", default="", help="folder of <job>_<mode>.log harness logs")
    j.add_argument("--write", default=os.path.join(HERE, "results", "cute_conform.md"))
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        prepare_all(a.jobs, a.runs, a.mutant_runs, a.examples,
                    tuple(x for x in a.only.split(",") if x))
        return 0
    md = judge_all(a.jobs, a.out, a.device, a.overhead)
    print(md)
    if a.write:
        with open(a.write, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
