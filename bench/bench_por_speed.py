"""Per-state cost of the stubborn-set reduction, before and after the cost work.

For each kernel it runs ``check_explicit(por=True)`` to a fixed state bound twice in one
process: with the old reduction (``checker/por.py`` as of commit ``OLD_REV``, before the
cost work, loaded from git history and patched in for ``stubborn_sets``) and with
``checker/por.py``; records states,
transitions, verdict and seconds of each (the two must explore the same states: the
script fails otherwise).  Optionally (``--decide``) it also times
``pipeproof check --engine explicit`` on the 4-stage 2x2 kernels with a wall limit.
Results: ``bench/results/por_speed.json`` and ``.md``.

    python bench/bench_por_speed.py [--states 300] [--decide 60]

A benchmark, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
from typing import Any
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

CASES = [
    ("textbook/pipeline_tma_async_multicast.pipe", {"stages": 4, "k_tiles": 8}),
    ("kernels/k1_hopper_persistent_gemm.pipe", {"ab_stage": 4, "k_tiles": 8}),
    ("kernels/k1_hopper_persistent_gemm.pipe", {}),
    ("kernels/k5_hopper_fmha.pipe", {}),
]


#: ``checker/por.py`` before the per-state cost work (the reference of this benchmark)
OLD_REV = "6500725"


def _old_por() -> Any:
    """The old reduction, read from git history, its relative imports made absolute."""
    import subprocess
    import types

    src = subprocess.run(["git", "show", f"{OLD_REV}:checker/por.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    src = src.replace("from ..", "from pipeproof.").replace("from .", "from pipeproof.checker.")
    mod = types.ModuleType("por_old")
    exec(compile(src, f"{OLD_REV}:checker/por.py", "exec"), mod.__dict__)
    return mod


def _run(path: Path, params: dict, states: int, old: bool) -> dict:
    from pipeproof.checker import explicit as ex_mod
    from pipeproof.model.compile import compile_kernel
    from pipeproof.model.lang.parser import parse
    from pipeproof.model.system import System

    system = System(compile_kernel(parse(path.read_text(), str(path)), params))
    saved = ex_mod.stubborn_sets
    if old:
        ex_mod.stubborn_sets = _old_por().stubborn_sets
    try:
        t0 = time.perf_counter()
        v = ex_mod.check_explicit(system, max_states=states, timeout=3600, por=True,
                                  confirm_timeout=0)
        dt = time.perf_counter() - t0
    finally:
        ex_mod.stubborn_sets = saved
    return {"status": v.status, "states": v.stats.states,
            "transitions": v.stats.transitions, "seconds": round(dt, 2),
            "states_per_s": round(v.stats.states / dt, 1)}


def _decide(path: Path, params: dict, limit: float) -> dict:
    cmd = [str(Path(sys.executable).parent / "pipeproof"), "check", str(path), "--engine",
           "explicit", "--timeout", str(limit)]
    for k, x in params.items():
        cmd += ["--param", f"{k}={x}"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t0
    out = (p.stdout + p.stderr).strip().splitlines()
    return {"rc": p.returncode, "seconds": round(dt, 1), "head": out[:3]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=300)
    ap.add_argument("--decide", type=float, default=0.0,
                    help="also time `pipeproof check --engine explicit` with this limit")
    args = ap.parse_args()
    rows = []
    for rel, params in CASES:
        path = ROOT / "examples" / rel
        old = _run(path, params, args.states, old=True)
        new = _run(path, params, args.states, old=False)
        if (old["status"], old["states"], old["transitions"]) != \
                (new["status"], new["states"], new["transitions"]):
            print(f"{rel} {params}: the reductions differ: {old} {new}", file=sys.stderr)
            return 1
        row = {"kernel": rel, "params": params, "old": old, "new": new,
               "speedup": round(old["seconds"] / max(new["seconds"], 1e-9), 2)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    decided = []
    if args.decide:
        for rel, params in CASES[:2]:
            d = _decide(ROOT / "examples" / rel, params, args.decide)
            d.update(kernel=rel, params=params)
            print(json.dumps(d), flush=True)
            decided.append(d)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "states": args.states, "load": os.getloadavg()[0]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "por_speed.json").write_text(json.dumps(
        {"meta": meta, "rows": rows, "decide": decided}, indent=1) + "\n")
    md = [f"# Stubborn-set cost per state, before/after ({meta['date']}, state bound "
          f"{args.states}, load {meta['load']:.1f} on {meta['cpus']} CPUs)", "",
          "| kernel | params | states | transitions | old s | new s | old st/s | new st/s "
          "| speedup |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o, n = r["old"], r["new"]
        md.append(f"| {r['kernel']} | {r['params'] or 'defaults'} | {n['states']} | "
                  f"{n['transitions']} | {o['seconds']} | {n['seconds']} | "
                  f"{o['states_per_s']} | {n['states_per_s']} | {r['speedup']}x |")
    if decided:
        md += ["", f"`pipeproof check --engine explicit --timeout {args.decide:g}`:", ""]
        for d in decided:
            md.append(f"- {d['kernel']} {d['params']}: rc {d['rc']}, {d['seconds']} s: "
                      f"{' / '.join(d['head'])}")
    (RESULTS / "por_speed.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
