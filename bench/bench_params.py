"""Benchmark of parameter ranges: one symbolic check against every value on its own.

For each (example, parameter, range) below it runs ``pipeproof check FILE --param
NAME=LO..HI`` in a fresh subprocess twice: symbolically (the default: one transition
system for the range, ``model.program.ParamSplit``; a violation is characterised value
by value by further runs) and with ``--param-values`` (every value compiled and checked
on its own, stopping at the first violation).  It records wall time, the verdict, the
symbolic runs and how many values each answer covers.  Results go to
``bench/results/params.json`` and ``bench/results/params.md``.

    python bench/bench_params.py [--timeout 120] [--engine auto]

A benchmark, not a test: UNKNOWN results are recorded as they come.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

#: (file, parameter, range) -- trip counts, then stage counts (each value compiled on its
#: own path after a split where the count is first needed), of textbook pipelines, bug
#: examples and a looping kernel
CASES = [
    ("examples/textbook/pipeline_async.pipe", "k_tiles", "1..64"),
    ("examples/textbook/pipeline_tma_async.pipe", "k_tiles", "1..32"),
    ("examples/textbook/pipeline_cp_async.pipe", "k_tiles", "1..32"),
    ("examples/textbook/pipeline_tma_umma.pipe", "k_tiles", "1..16"),
    ("examples/textbook/pipeline_tma_store.pipe", "subtiles", "1..16"),
    ("examples/textbook/named_barrier.pipe", "rounds", "1..16"),
    ("examples/textbook/flash_attention_extensions.pipe", "k_tiles", "1..8"),
    ("examples/bugs/p1-fixed.pipe", "k_tiles", "1..16"),
    ("examples/bugs/p1-bug.pipe", "k_tiles", "1..16"),
    ("examples/bugs/p6-bug.pipe", "k_iters", "1..16"),
    ("examples/bugs/p7-bug.pipe", "k_tiles", "1..6"),
    ("examples/bugs/x2-bug.pipe", "iters", "1..8"),
    ("examples/textbook/pipeline_async.pipe", "stages", "1..8"),
    ("examples/textbook/pipeline_tma_async.pipe", "stages", "1..8"),
    ("examples/textbook/flash_attention_extensions.pipe", "stages", "1..4"),
    ("examples/bugs/p1-fixed.pipe", "stages", "1..6"),
    ("examples/bugs/p6-bug.pipe", "num_stages", "1..6"),
    ("examples/bugs/p7-bug.pipe", "num_stages", "1..4"),
    ("examples/liveness/persistent_consumer_stops_releasing.pipe", "stages", "1..4"),
    ("examples/kernels/k2_blackwell_persistent_gemm.pipe", "num_acc_stage", "1..3"),
]

CHILD = r"""
import json, sys, time
from pipeproof.api import check_file
path, name, lo, hi, engine, timeout, symbolic = sys.argv[1:8]
t0 = time.perf_counter()
r = check_file(path, {name: range(int(lo), int(hi) + 1)}, engine=engine,
               timeout=float(timeout), symbolic_params=symbolic == "1")
extra = r.verdict.stats.extra
print(json.dumps({"seconds": time.perf_counter() - t0, "status": r.status, "prop": r.prop,
                  "headline": r.verdict.headline(), "params": {k: str(v) for k, v in r.params.items()},
                  "symbolic": extra.get("symbolic_parameters", []),
                  "runs": extra.get("symbolic_runs"),
                  "values": extra.get("parameter_values_checked"),
                  "groups": [(g["values"], g["headline"]) for g in extra.get("parameter_groups", [])],
                  "by_value": extra.get("parameters_by_value", {})}))
"""


def run(path: str, name: str, rng: str, engine: str, timeout: float, symbolic: bool) -> dict:
    lo, hi = rng.split("..")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, path, name, lo, hi, engine, str(timeout),
                        "1" if symbolic else "0"], capture_output=True, text=True, cwd=ROOT,
                       timeout=timeout * 3 + 60)
    if p.returncode != 0 or not p.stdout.strip():
        return {"status": "ERROR", "error": p.stderr[-400:], "seconds": time.perf_counter() - t0}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--engine", default="auto")
    args = ap.parse_args()
    rows = []
    for path, name, rng in CASES:
        sym = run(path, name, rng, args.engine, args.timeout, True)
        val = run(path, name, rng, args.engine, args.timeout, False)
        rows.append({"file": path, "param": name, "range": rng, "symbolic": sym, "values": val})
        print(f"{path} {name}={rng}: symbolic {sym['status']} {sym['seconds']:.1f} s "
              f"({sym.get('runs')} runs); by value {val['status']} {val['seconds']:.1f} s",
              flush=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(),
            "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(), "engine": args.engine, "timeout": args.timeout}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "params.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    md = [f"# Parameter ranges: symbolic against value by value (Python {meta['python']}, "
          f"{meta['cpus']} CPUs, engine {args.engine}, timeout {args.timeout:.0f} s per "
          f"check, run {meta['when']})", "",
          "`symbolic`: `--param NAME=LO..HI` (default): one transition system for the range; "
          "after a violation the values its counterexample holds for are taken out and the "
          "rest checked again, so the answer says which values violate.  `by value`: "
          "`--param-values`: each value compiled and checked on its own, in order, stopping "
          "at the first violation.", "",
          "| example | range | symbolic | time (s) | runs | values: verdict | by value | "
          "time (s) | values checked |",
          "|---|---|---|---:|---:|---|---|---:|---:|"]
    for r in rows:
        s, v = r["symbolic"], r["values"]
        groups = "; ".join(f"{g}: {h}" for g, h in s.get("groups", [])) or \
            ("" if not s.get("symbolic") else "all: " + s.get("headline", ""))
        if s.get("by_value"):
            groups = "not symbolic: " + "; ".join(s["by_value"].values())
        md.append(f"| {r['file']} | {r['param']}={r['range']} | {s.get('headline', s['status'])} "
                  f"| {s['seconds']:.1f} | {s.get('runs') or ''} | {groups} | "
                  f"{v.get('headline', v['status'])} | {v['seconds']:.1f} | "
                  f"{v.get('values') or ''} |")
    (RESULTS / "params.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
