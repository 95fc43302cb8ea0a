"""Benchmark of the z3 BMC engine on every bundled example, next to the explicit engine.

For each .pipe file under examples/ it runs ``check_file(..., engine="bmc", depth=D)``
in a fresh subprocess (``bench_explicit.run_one``) and records the verdict, the depth
reached, the time to verdict and peak memory.  The issue's aims are also measured
directly: every textbook example to depth 60 within 10 s, and the K2 skeleton to depth
100 within 60 s.  If ``bench/results/explicit.json`` exists, its verdict and time for the
same file are put in the same row, so the table compares the two engines.

    python bench/bench_bmc.py [--depth 60] [--timeout 60] [--engine bmc|auto]
                               [--bmc-steps auto|chain|single]
                               [--merge] [FILES...]

Results: ``bench/results/bmc.json`` (default ``auto`` steps, or ``chain``) or
``bmc_single.json`` (``--bmc-steps single``) or ``auto.json`` (``--engine auto``, the
default engine), and ``bench/results/bmc.md``, which puts them and the explicit engine
side by side.  A benchmark, not a test: UNKNOWN (timeout) results
are recorded as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_explicit import RESULTS, ROOT, run_one  # noqa: E402

K2 = ROOT / "examples" / "kernels" / "k2_blackwell_persistent_gemm.pipe"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--depth", type=int, default=60)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--engine", choices=("bmc", "auto"), default="bmc",
                    help="auto: the default engine (checker/portfolio.py), results in "
                         "auto.json")
    ap.add_argument("--bmc-steps", choices=("auto", "chain", "single"), default="auto")
    ap.add_argument("--bmc-certificate", choices=("on", "off"), default="on",
                    help="off: the unrolling alone (results in bmc_unrolling.json)")
    ap.add_argument("--merge", action="store_true",
                    help="replace only the rows of FILES in the existing results")
    ap.add_argument("--out", default=None,
                    help="results file stem (default bench/results/bmc, or bmc_single)")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the Markdown table from the JSON results (e.g. after a "
                         "new explicit run)")
    args = ap.parse_args()
    if args.out is None:
        args.out = str(RESULTS / ("auto" if args.engine == "auto" else
                                  "bmc_single" if args.bmc_steps == "single" else
                                  "bmc_unrolling" if args.bmc_certificate == "off" else "bmc"))
    if args.render_only:
        render()
        return 0
    files = [Path(f).resolve() for f in args.files] or sorted(
        p for d in ("textbook", "kernels", "bugs", "liveness")
        for p in (ROOT / "examples" / d).glob("*.pipe"))
    runs = [(f, args.depth, args.timeout) for f in files]
    if not args.files:
        # the K2 aim, with its own time: depth 100 in under 60 s
        runs.append((K2, 100, max(args.timeout, 60.0)))
    rows = []
    for f, depth, timeout in runs:
        r = run_one(f, timeout, 3_000_000, True,  # the CLI default; bmc ignores it
                    engine=args.engine, depth=depth,
                    bmc_steps=args.bmc_steps, bmc_certificate=args.bmc_certificate == "on")
        r["requested_depth"] = depth
        r["timeout_s"] = timeout
        rows.append(r)
        print(f"{r['file']:60s} depth {depth:3d}: {r.get('headline') or r.get('status'):40s} "
              f"reached {r.get('depth')} in {r.get('wall_seconds', 0):6.1f} s "
              f"{r.get('peak_mb', 0):6.0f} MB", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version.split()[0],
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "timeout_s": args.timeout, "depth": args.depth, "bmc_steps": args.bmc_steps,
            "bmc_certificate": args.bmc_certificate, "engine": args.engine}
    if args.engine == "auto":
        from pipeproof.checker.portfolio import default_jobs

        meta["jobs"] = default_jobs()  # 2: the explicit engine races the certificate
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.merge and Path(args.out + ".json").exists():
        old = json.loads(Path(args.out + ".json").read_text())
        new = {(r["file"], r["requested_depth"]): r for r in rows}
        rows = [new.pop((r["file"], r["requested_depth"]), r) for r in old["results"]]
        rows += list(new.values())
        meta = dict(old["meta"], note=(old["meta"].get("note", "") + "; " if
                                       old["meta"].get("note") else "") +
                    f"rows for {', '.join(Path(f).name for f in args.files)} rerun "
                    f"{meta['date']} with --bmc-steps {args.bmc_steps}")
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2))
    render()
    return 0


def _load(stem: str) -> tuple[dict, dict]:
    p = RESULTS / f"{stem}.json"
    if not p.exists():
        return {}, {}
    data = json.loads(p.read_text())
    return data["meta"], {(r["file"], r.get("requested_depth")): r for r in data["results"]
                          if not r.get("params")}


def _cell(r: dict) -> list[str]:
    if not r:
        return ["", "", ""]
    mark = "*" if (r.get("extra") or {}).get("shortest") is False else ""
    return [f"{r.get('headline') or r.get('status')}{mark}", str(r.get("depth", "")),
            f"{r.get('wall_seconds', 0):.1f}"]


def _auto_cell(r: dict) -> list[str]:
    if not r:
        return ["", "", ""]
    mark = "*" if (r.get("extra") or {}).get("shortest") is False else ""
    return [f"{r.get('headline') or r.get('status')}{mark}",
            f"{r.get('wall_seconds', 0):.1f}", r.get("decided_by", "")]


def _cert(r: dict) -> str:
    ex = r.get("extra") or {}
    n = ex.get("certificate.states")
    return "" if not n else f"{n:,}" + ("+" if ex.get("certificate.problem_free") else "")


def render() -> None:
    """bench/results/bmc.md: chained and single BMC steps and the explicit engine, one row
    per example (from bmc.json, bmc_single.json and explicit.json, whichever exist)."""
    meta, chain = _load("bmc")
    umeta, unrolled = _load("bmc_unrolling")
    smeta, single = _load("bmc_single")
    ameta, auto = _load("auto")
    _, explicit_all = _load("explicit")
    explicit = {f: r for (f, _), r in explicit_all.items()}
    m = meta or smeta
    lines = [f"# BMC engine benchmark (Python {m.get('python')}, {m.get('cpus')} CPUs, "
             f"timeout {m.get('timeout_s', 0):.0f} s per run; the K2 row of depth 100, "
             "the issue's aim, with at least 60 s)", ""]
    for name, mt in (("`--engine auto` (the default engine: BMC's certificate, else the "
                      "explicit engine, else BMC's unrolling)", ameta),
                     ("bmc (certificate on, auto steps)", meta),
                     ("unrolling only (--bmc-certificate off, auto steps: chains unless a "
                      "warp loops for ever)", umeta),
                     ("single steps (unrolling only)", smeta)):
        if mt:
            jobs = (f" with --jobs {mt['jobs']}" + (" (the explicit engine racing the "
                                                     "certificate)" if mt["jobs"] > 1 else "")
                    if mt.get("jobs") else "")
            lines.append(f"* {name}: run {mt['date']}{jobs}" +
                         (f"; {mt['note']}" if mt.get("note") else ""))
    lines += ["",
              "`depth` is the bound asked for, in levels; `reached` is the deepest level "
              "finished (for PROVEN: the level at which every run had ended).  A level is "
              "one step with single steps and a chain of steps in normal form with chained "
              "steps (`checker/chain.py`): `reached` levels cover at least every run of "
              "that many steps.  Counterexample lengths are in steps; `*`: found with "
              "chained steps and not confirmed shortest within the confirmation budget.  "
              "The default (`--bmc-steps auto`) takes chains for every example except "
              "those where some warp loops for ever (p3, pipeline_clc_fetch_async, the "
              "two liveness examples), which take single steps.  `cert`: the states of the "
              "certified reachable set (`checker/certificate.py`; one state per class of "
              "interchangeable warps where there are any), `+` when it has no "
              "problem state (PROVEN, or for a looping kernel safety at every depth, without "
              "unrolling); empty: no certificate (the enumeration, unreduced but for warp "
              "symmetry, did not finish in its 6 s, found more than 100,000 states, or the "
              "closure check ran out of its budget), and the default run is the unrolling "
              "with Houdini invariants.",
              "",
              "`auto`: the default engine's verdict, time and which stage decided "
              "(`bmc certificate`: PROVEN from the certificate or the shortest "
              "counterexample from the certified states; `explicit`: the explicit "
              "engine -- with --jobs 1 after the certificate did not decide; with --jobs 2 "
              "it races the certificate from the start and wins when it decides first "
              "after the certificate's 2 s head start).",
              "",
              "| example | depth | auto verdict | time (s) | decided by | bmc verdict | "
              "reached | time (s) | cert | unrolling-only "
              "verdict | reached | time (s) | single-step verdict | reached | time (s) "
              "| explicit verdict | explicit time (s) |",
              "|---|---:|---|---:|---|---|---:|---:|---:|---|---:|---:|---|---:|---:|---|---:|"]
    keys = list(chain) + [k for k in list(unrolled) + list(single) if k not in chain]
    keys = list(dict.fromkeys(keys))
    for key in keys:
        f, depth = key
        e = explicit.get(f, {})
        lines.append("| " + " | ".join(
            [f, str(depth), *_auto_cell(auto.get(key, {})),
             *_cell(chain.get(key, {})), _cert(chain.get(key, {})),
             *_cell(unrolled.get(key, {})), *_cell(single.get(key, {})),
             e.get("headline") or e.get("status") or "",
             "" if not e else format(e.get("wall_seconds", 0), ".1f")]) + " |")
    (RESULTS / "bmc.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
