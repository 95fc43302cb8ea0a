"""Build one batch of GPU work (conformance, mutants, litmus, benchmark) and judge it.

Device time is scarce, so everything a GPU session needs goes into one folder that a
single command runs (``impl/gpu_runner.py``), and everything that needs the model
(compiling, model checking, replay) happens on this side::

    python -m pipeproof.impl.gpu_batch prepare gpu_jobs [--runs 200] [--mutant-runs 50]
    # on the GPU machine:  python3 impl/gpu_runner.py gpu_jobs OUT
    python -m pipeproof.impl.gpu_batch analyze gpu_jobs OUT [--md report.md]

Kernels: every ``.pipe`` under ``examples/`` (textbook, kernels, bugs), plus coverage
configurations of every pipeline class rendered by ``tests/generators.py`` when that
file is present (a development checkout).  Mutants (``impl/mutants.py``) are made from
every configuration the model proves correct; the model's verdict on each mutant is
computed here and stored next to the job, so the table compares the two.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

from ..checker.explicit import check_explicit
from ..model.errors import ConfigError, Unsupported
from ..model.system import System
from .conform import JobSpec, analyze, compiled_for, prepare_job, write_index
from .emit import EmitOptions, emit
from .mutants import OPERATORS

ROOT = Path(__file__).resolve().parent.parent


def model_verdict(ck: Any, timeout: float = 60.0, max_states: int = 400_000) -> dict:
    v = check_explicit(System(ck), max_states=max_states, timeout=timeout)
    return {"status": v.status, "prop": v.prop or "", "reason": v.reason or ""}


def example_files() -> list[str]:
    out = []
    for sub in ("textbook", "kernels", "bugs"):
        out += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / sub).glob("*.pipe"))
    return out


COVERAGE_VARIANTS: list[dict] = [{}, {"try_wait": True}, {"cluster": (2, 1)}, {"v": 2},
                                  {"tiles": 2, "api": "participants"}]


def coverage_cases(dest: str, variants: Optional[list[dict]] = None) -> list[str]:
    """Render coverage configurations of every class (needs tests/generators.py)."""
    gen = ROOT / "tests" / "generators.py"
    if not gen.exists():
        return []
    sys.path.insert(0, str(gen.parent))
    try:
        import generators as G  # type: ignore
    finally:
        sys.path.pop(0)
    variants = COVERAGE_VARIANTS if variants is None else variants
    os.makedirs(dest, exist_ok=True)
    files, seen = [], set()
    for cls in G.CLASSES:
        for var in variants:
            try:
                cfg = G.Config(cls, **var)
                src = G.render(cfg)
            except Exception:  # noqa: BLE001 - a combination the generator does not make
                continue
            if src in seen:
                continue
            seen.add(src)
            name = cls.lower() + "".join(f"_{k}{_short(v)}" for k, v in var.items())
            p = os.path.join(dest, name + ".pipe")
            Path(p).write_text(src)
            files.append(p)
    return files


def _short(v: Any) -> str:
    if isinstance(v, tuple):
        return "x".join(map(str, v))
    return str(v).lower()


def _safe_name(path: str, mutant: str = "") -> str:
    stem = Path(path).stem
    grp = Path(path).parent.name
    return f"{grp}__{stem}" + (f"__{mutant}" if mutant else "")


def prepare(jobs_dir: str, runs: int = 200, mutant_runs: int = 40, clusters: int = 4,
            with_coverage: bool = True, with_litmus: bool = True, with_bench: bool = True,
            only: str = "", log: Any = None, coverage_variants: Optional[list[dict]] = None,
            mutate_coverage: bool = False, model_timeout: float = 20.0,
            structured: bool = True, arrivals: str = "thread", fold: bool = True) -> dict:
    """``structured``: conformance and mutant jobs run the structured programs where the
    kernel allows (``impl/structured.py``; the table says which), the model's verdicts
    are on the programs that run; ``fold``: with the PipelineState in registers."""
    os.makedirs(jobs_dir, exist_ok=True)
    if log is None:
        def log(*a: Any) -> None:
            print(*a, flush=True)
    jobs: list[dict] = []
    table: dict[str, Any] = {"kernels": {}, "mutants": {}}
    files = example_files()
    if with_coverage:
        files += [os.path.relpath(p, ROOT) for p in
                  coverage_cases(os.path.join(jobs_dir, "cases"), coverage_variants)]
    for f in files:
        if only and not any(o in f for o in only.split(",")):
            continue
        t0 = time.time()
        try:
            # the checker judges the unrolled programs (structured ones are equivalent:
            # tests/test_emit_structured.py); the GPU runs ``ck``
            unrolled = compiled_for(str(ROOT / f), {})
            ck = compiled_for(str(ROOT / f), {}, structured=structured) if structured \
                else unrolled
        except (ConfigError, Unsupported) as e:
            table["kernels"][f] = {"model": {"status": "ERROR", "reason": str(e)[:200]}}
            continue
        mv = model_verdict(unrolled, model_timeout)
        entry = {"model": mv, "compiled": "structured" if ck.structured else "unrolled"}
        table["kernels"][f] = entry
        try:
            for arch in ("sm_90a", "sm_100a"):
                emit(ck, EmitOptions(arch))
        except Unsupported as e:
            entry["emit"] = f"unsupported: {e}"
            log(f"  {f}: emitter: {e}")
            continue
        # bug variants get the mutant budget; fixed twins the full one
        is_bug = f.endswith("-bug.pipe") or mv["status"] == "VIOLATED"
        spec = JobSpec(_safe_name(f), str(ROOT / f), runs=mutant_runs if is_bug else runs,
                       clusters=clusters, structured=structured, arrivals=arrivals,
                       fold=fold)
        try:
            jobs.append(prepare_job(jobs_dir, spec))
        except Exception as e:  # noqa: BLE001
            entry["emit"] = f"failed: {e}"[:300]
            log(f"  {f}: {entry['emit']}")
            continue
        entry["job"] = spec.name
        log(f"{f}: model {mv['status']} {mv['prop']} ({time.time() - t0:.1f} s)")
        if is_bug or "/bugs/" in f or mv["status"] not in ("PROVEN", "SAFE"):
            continue
        if "/cases/" in f and not (mutate_coverage and "_" not in Path(f).stem):
            continue
        for mname, op in OPERATORS.items():
            m = op(ck)
            if m is None:
                continue
            mmv = model_verdict(m.kernel, model_timeout)
            key = f"{f}::{mname}"
            table["mutants"][key] = {"file": f, "mutant": mname, "description": m.description,
                                     "model": mmv}
            mspec = JobSpec(_safe_name(f, mname), str(ROOT / f), mutant=mname,
                            runs=mutant_runs, clusters=clusters,
                            extra={"process_s": 240}, structured=structured,
                            arrivals=arrivals, fold=fold)
            try:
                jobs.append(prepare_job(jobs_dir, mspec))
                table["mutants"][key]["job"] = mspec.name
            except Exception as e:  # noqa: BLE001
                table["mutants"][key]["emit"] = f"failed: {e}"[:300]
            log(f"   mutant {mname}: model {mmv['status']} {mmv['prop']}")
    if with_litmus:
        jobs += litmus_jobs(jobs_dir)
    if with_bench:
        jobs += bench_jobs(jobs_dir)
    write_index(jobs_dir, jobs, budget_s=480)
    Path(jobs_dir, "table.json").write_text(json.dumps(table, indent=1))
    return table


def litmus_jobs(jobs_dir: str) -> list[dict]:
    from .conform import assemble, have_ptxas
    from .litmus import LITMUS, WORDS

    jobs, risky = [], []
    for lit in LITMUS:
        name = "litmus__" + lit.name
        ptx = os.path.join(jobs_dir, name + ".ptx")
        Path(ptx).write_text(lit.build())
        binary = name + ".ptx"
        if have_ptxas():
            ok, err = assemble(ptx, "sm_90a", os.path.join(jobs_dir, name + ".cubin"))
            if not ok:
                raise RuntimeError(err)
            binary = name + ".cubin"
        cs = lit.cluster[0] * lit.cluster[1] * lit.cluster[2]
        job = {"name": name, "kind": "litmus", "binary": binary,
               "entry": "lit_" + lit.name, "words": WORDS, "reps": 20,
               "cluster": list(lit.cluster),
               "grid": [lit.cluster[0] * lit.clusters, lit.cluster[1], lit.cluster[2]],
               "block": lit.block,
               "cluster_size": cs, "process_s": 30 if lit.risky else 60, "hang_s": 5.0,
               "isolate": lit.risky,
               "meta": {"question": lit.question}}
        (risky if lit.risky else jobs).append(job)
    return jobs + risky


BENCH_ASYNC = "bench/bench_gpu_async.pipe"
BENCH_TMA = "bench/bench_gpu_tma.pipe"


#: latency variants: (suffix, trace, watchdog and stamps, structured, k_tiles).  ``off``
#: and ``on`` as before (now structured); ``bare``: no trace, no watchdog, no stamps --
#: the synchronisation alone, CUTLASS-shaped (every lane waits, every lane arrives with
#: count 1), to compare with the CuTe DSL kernel; ``bareu``: the same, unrolled;
#: ``bare64k``: structured with 65536 k-tiles (the same PTX as ``bare``)
LATENCY_VARIANTS = (("off", False, True, True, 256), ("on", True, True, True, 256),
                    ("bare", False, False, True, 256), ("bareu", False, False, False, 256),
                    ("bare64k", False, False, True, 65536))


def bench_specs() -> list[tuple[str, str, dict, bool, dict]]:
    """(name, file, params, trace, runner options) of the benchmark kernels; runner
    options ``checks``/``structured`` are emitter options (``bench_jobs``)."""
    out = []
    for stages in (1, 4):
        for t, trace, checks, structured, k in LATENCY_VARIANTS:
            # a hand-off figure: every turn re-reads the first period's L2-resident tiles,
            # as the CuTe DSL twin re-reads its one tile (bench/cute_latency_kernels.py)
            opts = {"clusters": 1, "reps": 20, "checks": checks, "structured": structured,
                    "stream": False}
            out.append((f"bench__lat_async_s{stages}_{t}", BENCH_ASYNC,
                        {"stages": stages, "k_tiles": k}, trace, dict(opts)))
            out.append((f"bench__lat_tma_s{stages}_{t}", BENCH_TMA,
                        {"stages": stages, "k_tiles": k, "tile_bytes": 1024}, trace,
                        dict(opts)))
    # bandwidth: structured and bare (no watchdog, no stamps), as a kernel author would
    # run it; without checks the loop's TMA loads advance through fresh global memory
    # every period as the unrolled ones do (impl/emit.py ``streams``: no L2 reuse).
    # ``_u``: the configuration measured before (unrolled, with checks), same run
    for stages, tile in ((4, 16384), (6, 16384), (4, 32768), (2, 32768)):
        out.append((f"bench__bw_tma_s{stages}_t{tile // 1024}k", BENCH_TMA,
                    {"stages": stages, "k_tiles": 128, "tile_bytes": tile}, False,
                    {"clusters": 0, "reps": 10, "copy_bytes": 1 << 30, "structured": True,
                     "checks": False, "copy_match_per_cluster": 128 * tile // 2}))
    # the same, 4x the trip count (the launch amortised over 4x the bytes)
    out.append(("bench__bw_tma_s4_t16k_k512", BENCH_TMA,
                {"stages": 4, "k_tiles": 512, "tile_bytes": 16384}, False,
                {"clusters": 0, "reps": 10, "copy_bytes": 1 << 30, "structured": True,
                 "checks": False, "copy_match_per_cluster": 512 * 16384 // 2}))
    out.append(("bench__bw_tma_s4_t16k_u", BENCH_TMA,
                {"stages": 4, "k_tiles": 128, "tile_bytes": 16384}, False,
                {"clusters": 0, "reps": 10, "copy_bytes": 1 << 30, "structured": False}))
    return out


def bench_jobs(jobs_dir: str) -> list[dict]:
    jobs = []
    for name, f, params, trace, extra in bench_specs():
        extra = dict(extra)
        checks, structured = extra.pop("checks", True), extra.pop("structured", True)
        spec = JobSpec(name, str(ROOT / f), params, kind="bench", runs=1, trace=trace,
                       jitter=False, clusters=extra.get("clusters", 1), extra=extra,
                       structured=structured, checks=checks,
                       stream=extra.pop("stream", True))
        job = prepare_job(jobs_dir, spec)
        job["process_s"] = 120
        jobs.append(job)
    return jobs


def reemit(jobs_dir: str, log: Any = print, fold: Optional[bool] = None) -> None:
    """Regenerate every job's binary with the current emitter, keeping the model verdicts
    (table.json) and the job list; litmus and benchmark jobs are rebuilt where the folder
    had them.  ``fold``: emit folded (True) or with copies (False); None keeps each job's."""
    index = json.load(open(os.path.join(jobs_dir, "index.json")))
    kinds = {j["kind"] for j in index["jobs"]}
    jobs = []
    for j in index["jobs"]:
        if j["kind"] != "conform":
            continue
        m = j["meta"]
        spec = JobSpec(j["name"], m["file"], m.get("params", {}), m.get("mutant", ""),
                       runs=j["runs"], clusters=j["clusters"],
                       structured=m.get("structured", False),
                       arrivals=m.get("arrivals", "warp"),
                       fold=m.get("fold", False) if fold is None else fold)
        if j["name"].startswith("bugs__"):
            spec.extra["hang_s"] = 3.0
        if m.get("mutant"):
            spec.extra["process_s"] = 240
        jobs.append(prepare_job(jobs_dir, spec))
        log(f"re-emitted {j['name']}")
    if "litmus" in kinds:
        jobs += litmus_jobs(jobs_dir)
    if "bench" in kinds:
        jobs += bench_jobs(jobs_dir)
    write_index(jobs_dir, jobs, budget_s=480)


# --------------------------------------------------------------------------- analysis


def analyze_batch(jobs_dir: str, results_dir: str, workers: int = 2,
                  max_traces: Optional[int] = None, only: str = "") -> dict:
    table = json.load(open(os.path.join(jobs_dir, "table.json")))
    reports = {r.name: r for r in analyze(jobs_dir, results_dir, only=only,
                                          max_traces=max_traces, workers=workers)}
    out: dict[str, Any] = {"kernels": {}, "mutants": {}, "litmus": {}}
    for f, entry in table["kernels"].items():
        r = reports.get(entry.get("job", ""))
        out["kernels"][f] = dict(entry, gpu=r.to_json() if r else None)
    for k, entry in table["mutants"].items():
        r = reports.get(entry.get("job", ""))
        out["mutants"][k] = dict(entry, gpu=r.to_json() if r else None)
    for p in sorted(Path(results_dir).glob("litmus__*.json")):
        out["litmus"][p.stem.split("__", 1)[1]] = json.load(open(p))
    return out


def render_markdown(res: dict) -> str:
    lines = ["## Conformance (sm_90a, jittered runs)", "",
             "| kernel | model | traces | GPU outcome | stamp errors | inferred / reordered |",
             "|---|---|---|---|---|---|"]
    for f, e in res["kernels"].items():
        g = e.get("gpu") or {}
        mv = e["model"]
        lines.append(f"| {f} | {mv['status']} {mv.get('prop', '')} | {g.get('traces', '-')} | "
                     f"{g.get('outcome', e.get('emit', 'not run'))} | "
                     f"{g.get('stamp_errors', '-')} | {g.get('inferred_env_steps', '-')} / "
                     f"{g.get('reordered_events', '-')} |")
    lines += ["", "## Fault injection", "",
              "| kernel | mutant | model | GPU outcome | caught |", "|---|---|---|---|---|"]
    for k, e in res["mutants"].items():
        g = e.get("gpu") or {}
        mv = e["model"]
        out = g.get("outcome", e.get("emit", "not run"))
        caught = _caught(mv, g)
        lines.append(f"| {e['file']} | {e['mutant']} | {mv['status']} {mv.get('prop', '')} | "
                     f"{out} | {caught} |")
    return "\n".join(lines)


def _caught(mv: dict, g: dict) -> str:
    if not g:
        return "-"
    bad = any(g.get("counts", {}).get(k) for k in ("DEADLOCK", "VIOLATION", "DATA_ERROR",
                                                  "REJECTED")) or g.get("stamp_errors") \
        or g.get("runner_status", "ok") != "ok"
    if mv["status"] == "VIOLATED":
        return "yes" if bad else "NO"
    # an UNKNOWN model verdict (the checker ran out of time on the mutant) says nothing
    # about the mutant being correct
    said = "correct" if mv["status"] in ("PROVEN", "SAFE") else mv["status"]
    return f"n/a (model: {said})" + (" but GPU flagged" if bad else "")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeproof.impl.gpu_batch")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("jobs_dir")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--mutant-runs", type=int, default=40)
    p.add_argument("--clusters", type=int, default=4)
    p.add_argument("--no-coverage", action="store_true")
    p.add_argument("--no-litmus", action="store_true")
    p.add_argument("--no-bench", action="store_true")
    p.add_argument("--only", default="",
                   help="comma-separated substrings: only the files that contain one")
    p.add_argument("--variants", default="all", help="coverage variants: all | default")
    p.add_argument("--mutate-coverage", action="store_true",
                   help="also mutate the default coverage configuration of every class")
    p.add_argument("--arrivals", choices=("thread", "warp"), default="thread",
                   help="thread: each lane arrives with count 1 as CUTLASS does (default); "
                        "warp: lane 0 arrives with count n and the replay checks the pending "
                        "count it saw")
    p.add_argument("--unrolled", action="store_true",
                   help="run the fully unrolled programs (default: structured where the "
                        "kernel allows, impl/structured.py)")
    p.add_argument("--copies", dest="fold", action="store_false",
                   help="emit the loop bodies copied per pipeline state (default: folded, "
                        "the PipelineState in registers, impl/fold.py)")
    r = sub.add_parser("reemit")
    r.add_argument("jobs_dir")
    r.add_argument("--fold", choices=("keep", "on", "off"), default="keep")
    a = sub.add_parser("analyze")
    a.add_argument("jobs_dir")
    a.add_argument("results_dir")
    a.add_argument("--json", default="")
    a.add_argument("--md", default="")
    a.add_argument("--workers", type=int, default=2)
    a.add_argument("--max-traces", type=int, default=None)
    a.add_argument("--only", default="")
    args = ap.parse_args(argv)
    if args.cmd == "reemit":
        reemit(args.jobs_dir, fold={"keep": None, "on": True, "off": False}[args.fold])
        return 0
    if args.cmd == "prepare":
        variants = [{}] if args.variants == "default" else None
        prepare(args.jobs_dir, args.runs, args.mutant_runs, args.clusters,
                not args.no_coverage, not args.no_litmus, not args.no_bench, args.only,
                coverage_variants=variants, mutate_coverage=args.mutate_coverage,
                structured=not args.unrolled, arrivals=args.arrivals, fold=args.fold)
        return 0
    res = analyze_batch(args.jobs_dir, args.results_dir, args.workers, args.max_traces,
                        args.only)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    md = render_markdown(res)
    if args.md:
        Path(args.md).write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
