"""Benchmark of the explicit-state engine on every bundled example.

For each .pipe file under examples/ (textbook, kernels, bugs, liveness) it runs
``pipeproof.api.check_file(..., engine="explicit")`` in a fresh subprocess and records
the verdict, states explored, transitions, states per second, wall time and peak
resident memory (``ru_maxrss`` of the subprocess, or of the largest of its own
children).  Results go to
``bench/results/explicit.json`` and a Markdown table ``bench/results/explicit.md``.

    python bench/bench_explicit.py [--timeout 120] [--max-states 3000000] [FILES...]

This is a benchmark, not a test: it records what it measures, including UNKNOWN
(state limit / timeout) results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

CHILD = r"""
import json, resource, sys, time
from pipeproof.api import check_file
path, timeout, max_states, reduce = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
engine, depth = sys.argv[5], int(sys.argv[6])
params = json.loads(sys.argv[7])
memory_model = sys.argv[8]
bmc_steps = sys.argv[9]
bmc_certificate = sys.argv[10] == "1"
t0 = time.perf_counter()
try:
    kw = {"reduce": reduce} if engine == "explicit" else {"depth": depth, "bmc_steps": bmc_steps,
                                                          "bmc_certificate": bmc_certificate}
    kw["memory_model"] = memory_model
    r = check_file(path, params, engine=engine, timeout=timeout, max_states=max_states, **kw)
    v = r.verdict
    out = {"status": v.status, "property": v.prop, "headline": v.headline(),
           "states": v.stats.states, "transitions": v.stats.transitions,
           "depth": v.stats.depth, "engine_seconds": v.stats.seconds,
           "cex_steps": len(v.trace) if v.trace is not None else None,
           "extra": {}, "decided_by": v.stats.engine}
    ex = v.stats.extra
    if v.stats.engine == "bmc":
        cert = ex.get("certificate") or {}
        by_cert = cert.get("problem_free") or ex.get("counterexample_from") == "certificate"
        out["decided_by"] = "bmc certificate" if by_cert else "bmc unrolling"
    # scalar statistics; nested ones (BMC's invariants, dependence) as outer.inner
    for k, x in v.stats.extra.items():
        for kk, y in (x.items() if isinstance(x, dict) else [(None, x)]):
            if isinstance(y, (int, float, bool, str)):
                out["extra"][k if kk is None else f"{k}.{kk}"] = y
except Exception as e:  # a bad example is a result too
    out = {"status": "ERROR", "error": f"{type(e).__name__}: {e}"}
out["wall_seconds"] = time.perf_counter() - t0
# the largest of this process and its children (--engine auto races its stages in
# forked processes)
out["peak_mb"] = max(resource.getrusage(who).ru_maxrss
                     for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024.0
print(json.dumps(out))
"""


def memory_model_of(path: Path) -> str:
    """The ``# memory-model: strict`` header of a bug example (tests/test_bugs.py)."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = re.match(r"#\s*memory-model:\s*(\S+)\s*$", line)
        if m:
            return m.group(1)
    return "cutlass"


def run_one(path: Path, timeout: float, max_states: int, reduce: bool,
            engine: str = "explicit", depth: int = 0, params: dict | None = None,
            bmc_steps: str = "chain", bmc_certificate: bool = True) -> dict:
    """Check one file in a fresh interpreter (so peak memory is this check's own)."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(timeout),
                           str(max_states), "1" if reduce else "0", engine, str(depth),
                           json.dumps(params or {}), memory_model_of(path), bmc_steps,
                           "1" if bmc_certificate else "0"],
                          capture_output=True, text=True, timeout=timeout * 3 + 60)
    try:
        res = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        res = {"status": "ERROR", "error": proc.stderr.strip()[-500:]}
    res["file"] = str(path.relative_to(ROOT))
    if params:
        res["params"] = params
    st, sec = res.get("states"), res.get("engine_seconds")
    res["states_per_second"] = round(st / sec, 1) if st and sec else None
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--max-states", type=int, default=3_000_000)
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "explicit"))
    args = ap.parse_args()
    files = [Path(f).resolve() for f in args.files] or sorted(
        p for d in ("textbook", "kernels", "bugs", "liveness")
        for p in (ROOT / "examples" / d).glob("*.pipe"))
    rows = []
    for f in files:
        r = run_one(f, args.timeout, args.max_states, not args.no_reduce)
        rows.append(r)
        print(f"{r['file']:60s} {r.get('status', '?'):9s} {r.get('states') or '':>10} states "
              f"{r.get('states_per_second') or '':>9} st/s {r.get('wall_seconds', 0):7.1f} s "
              f"{r.get('peak_mb', 0):7.0f} MB", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version.split()[0],
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "timeout_s": args.timeout, "max_states": args.max_states,
            "reduce": not args.no_reduce}
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2))
    lines = [f"# Explicit engine benchmark ({meta['date']}, Python {meta['python']}, "
             f"{meta['cpus']} CPUs)", "",
             "`steps`: length of the counterexample; `*` where the search confirming it is "
             "a shortest one ran out of its 20 s budget (found with partial-order reduction, "
             "needless steps dropped, replayed through the unreduced model).  Files with a "
             "`# memory-model: strict` header (x3) are checked in that model.", "",
             "| example | verdict | steps | states | states/s | time (s) | peak MB |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        verdict = r.get("headline") or r.get("status")
        steps = r.get("cex_steps")
        mark = "*" if (r.get("extra") or {}).get("shortest") is False else ""
        lines.append(f"| {r['file']} | {verdict} | {'' if steps is None else steps}{mark} | "
                     f"{r.get('states', '')} | "
                     f"{r.get('states_per_second') or ''} | {r.get('wall_seconds', 0):.1f} | "
                     f"{r.get('peak_mb', 0):.0f} |")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
