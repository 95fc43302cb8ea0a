"""Time to verdict at a fixed budget: every bundled example with ``--engine auto`` and
``--engine native`` (issue 26's acceptance: every example, kernel skeleton and the two
4-stage 2x2 multicast kernels decided -- PROVEN or VIOLATED -- within 60 s each).

Each run is the command a user types, in a fresh process::

    pipeproof check FILE [--param ...] --engine ENGINE --timeout BUDGET --json -q

killed at ``BUDGET + GRACE`` wall seconds if it has not answered (recorded as
``KILLED``).  ``seconds`` is the wall time of the whole process (start-up, parsing,
compiling the native code or loading it from the cache, search, replay).  Native runs
use a fresh cache directory per run unless ``--warm-cache`` is given, so its compile
time is counted.

The two 4-stage 2x2 multicast kernels (``mcast_mode_mn`` its default ``(1, 1)``) are
bundled examples at other parameters (``EXTRA``): the 2x2 multicast textbook example
and the Hopper persistent GEMM skeleton K1, both with 4 stages and 8 k-tiles (each stage
used twice).

Results go to ``bench/results/scale.json`` and ``scale.md`` (rewritten after every
run, so an interrupted run keeps what it measured).  A benchmark, not a test.

    python bench/bench_scale.py [--budget 60] [--engines auto,native] [--only SUBSTR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
#: wall seconds past the budget before the process is killed
GRACE = 30.0
#: the two 4-stage 2x2 multicast kernels: (file, parameters)
EXTRA: list[tuple[str, dict[str, int]]] = [
    ("examples/textbook/pipeline_tma_async_multicast.pipe", {"stages": 4, "k_tiles": 8}),
    ("examples/kernels/k1_hopper_persistent_gemm.pipe", {"ab_stage": 4, "k_tiles": 8}),
]


def cases() -> list[tuple[str, dict[str, int]]]:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.pipe"))
    return [(f, {}) for f in files] + EXTRA


def label(f: str, params: dict[str, int]) -> str:
    return f + "".join(f" {k}={v}" for k, v in params.items())


def run(f: str, params: dict[str, int], engine: str, budget: float, warm: bool) -> dict:
    exe = Path(sys.executable).parent / "pipeproof"
    cmd = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else
           ["-m", "pipeproof.cli"]), "check", f, "--engine", engine, "--timeout",
           str(budget), "--json", "-q"]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    env = dict(os.environ)
    tmp = None
    if engine == "native" and not warm:
        tmp = tempfile.TemporaryDirectory(prefix="pp-native-")
        env["PIPEPROOF_NATIVE_CACHE"] = tmp.name
    t0 = time.perf_counter()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    row: dict = {"file": f, "params": params, "engine": engine, "budget_s": budget,
                 "load": round(os.getloadavg()[0], 2)}
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=budget + GRACE)
        row["seconds"] = round(time.perf_counter() - t0, 2)
        row["exit"] = p.returncode
        try:
            d = json.loads(p.stdout)
            st = d.get("stats", {})
            row.update(status=d.get("status"), property=d.get("property"),
                       reason=d.get("reason"), states=st.get("states"),
                       engine_seconds=st.get("seconds"),
                       decided_by=_decided_by(d), extra={k: st[k] for k in (
                           "encode_seconds", "compile_seconds", "search_seconds",
                           "restarts", "symmetric_groups", "safe_points", "auto")
                           if k in st})
        except (json.JSONDecodeError, AttributeError):
            row.update(status="ERROR", reason=(p.stderr or p.stdout)[-400:])
    except subprocess.TimeoutExpired:
        row.update(seconds=round(time.perf_counter() - t0, 2), status="KILLED",
                   reason=f"no answer within {budget + GRACE:.0f} s")
    finally:
        if tmp is not None:
            tmp.cleanup()
        # CPU seconds of the process and the processes it waited for (the engines it
        # raced): on a shared machine the wall seconds are mostly other jobs' share
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        row["cpu_seconds"] = round(ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime, 2)
    row["decided"] = row.get("status") in ("PROVEN", "VIOLATED") and \
        row["seconds"] <= budget
    return row


def _decided_by(d: dict) -> str:
    """Which engine answered: ``bmc certificate`` where BMC's certificate did."""
    st = d.get("stats", {})
    eng = st.get("engine") or d.get("engine") or ""
    if eng == "bmc" and (st.get("certificate") or st.get("counterexample_from") == "certificate"):
        return "bmc certificate"
    return eng


def markdown(meta: dict, rows: list[dict]) -> str:
    engines = meta["engines"]
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(label(r["file"], r["params"]), {})[r["engine"]] = r
    out = [f"# Time to verdict at a {meta['budget_s']:.0f} s budget (issue 26 acceptance)", "",
           f"{meta['date']}, {meta['cpus']} CPUs shared with other jobs (load average at "
           f"start {meta['load']}), Python {meta['python']}.  Produced by `python "
           f"bench/bench_scale.py {meta['argv']}`.  Each cell: verdict and wall seconds of "
           "one `pipeproof check --json -q` process (start-up and, for native, compiling "
           "into an empty cache included), the engine that decided, the CPU seconds of "
           "that process and the ones it waited for, and the 1-minute load average when "
           "it started; **bold** = decided (PROVEN or VIOLATED) "
           f"within {meta['budget_s']:.0f} s wall.", ""]
    if meta.get("subset"):
        out += [f"Subset: {meta['subset']}", ""]
    out += ["| example | " + " | ".join(engines) + " |",
            "|---|" + "---|" * len(engines)]
    for name, es in by.items():
        cells = []
        for e in engines:
            r = es.get(e)
            if r is None:
                cells.append("-")
                continue
            v = r.get("status", "?") + (f" {r['property']}" if r.get("property") else "")
            c = f"{v} {r['seconds']:.1f} s"
            notes = []
            if r.get("decided_by") and e == "auto":
                notes.append(r["decided_by"])
            if r.get("cpu_seconds") is not None:
                notes.append(f"cpu {r['cpu_seconds']:.1f} s")
            if r.get("load") is not None:
                notes.append(f"load {r['load']:.1f}")
            if notes:
                c += f" ({'; '.join(notes)})"
            cells.append(f"**{c}**" if r["decided"] else c)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += ["", "Not decided within the budget:", ""]
    for r in rows:
        if not r["decided"]:
            out.append(f"* {label(r['file'], r['params'])} ({r['engine']}): "
                       f"{r.get('status')} -- {(r.get('reason') or '').strip()[:300]}")
    n = {e: sum(1 for r in rows if r["engine"] == e) for e in engines}
    d = {e: sum(1 for r in rows if r["engine"] == e and r["decided"]) for e in engines}
    out += ["", "Decided: " + ", ".join(f"{e} {d[e]} of {n[e]}" for e in engines), ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--engines", default="auto,native")
    ap.add_argument("--only", action="append", default=[],
                    help="run only cases whose file name contains this (repeatable)")
    ap.add_argument("--warm-cache", action="store_true",
                    help="native: keep the user's compile cache (compile time not counted)")
    ap.add_argument("--out", default="scale")
    args = ap.parse_args()
    engines = args.engines.split(",")
    todo = [c for c in cases() if not args.only or any(s in label(*c) for s in args.only)]
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "budget_s": args.budget, "engines": engines,
            "load": round(os.getloadavg()[0], 2),
            "argv": " ".join(sys.argv[1:]),
            "subset": (f"{len(todo)} of {len(cases())} cases (--only "
                       f"{' '.join(args.only)})" if args.only else ""),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for f, params in todo:
        for e in engines:
            r = run(f, params, e, args.budget, args.warm_cache)
            rows.append(r)
            print(json.dumps({k: r.get(k) for k in ("file", "params", "engine", "status",
                                                     "seconds", "decided")}), flush=True)
            (RESULTS / f"{args.out}.json").write_text(
                json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
            (RESULTS / f"{args.out}.md").write_text(markdown(meta, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
