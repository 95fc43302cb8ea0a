"""The native engine's reductions, each measured with and without (issue 26 item 2).

For each example (or those given), in this process: ``check_native`` with warp symmetry
only (``symmetry=True``), and with symmetry and the safe-step reduction
(``safe_steps=True``: z3-proven safe points, ``checker/native/search.py``), both bounded
by ``--max-states`` and ``--timeout``; and, for the verdict, the explicit engine with
its own reductions.  Records verdict, states, the seconds spent proving safe points and
the whole call's seconds.  ``agree``: the three verdicts (status, property) are equal
where all three decided.  Results: ``bench/results/native_reduce.json`` and ``.md``.
A benchmark, not a test.

    python bench/bench_native_reduce.py [--max-states 300000] [--timeout 120] [FILES...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "tests"))


def run(path: Path, max_states: int, timeout: float) -> dict:
    from generators import build_system

    from pipeproof.checker.explicit import check_explicit
    from pipeproof.checker.native.search import check_native

    system = build_system(path.read_text())
    out: dict = {"file": str(path.relative_to(ROOT))}
    for name, kw in (("sym", {}), ("sym+safe", {"safe_steps": True})):
        t0 = time.perf_counter()
        v = check_native(system, max_states=max_states, timeout=timeout, symmetry=True, **kw)
        out[name] = {"status": v.status, "property": v.prop, "states": v.stats.states,
                     "depth": v.depth, "seconds": round(time.perf_counter() - t0, 2),
                     "safe_points": v.stats.extra.get("safe_points"),
                     "safe_seconds": v.stats.extra.get("safe_seconds"),
                     "search_seconds": v.stats.extra.get("search_seconds"),
                     "reason": v.reason}
    t0 = time.perf_counter()
    w = check_explicit(system, max_states=max_states, timeout=timeout)
    out["explicit"] = {"status": w.status, "property": w.prop, "states": w.stats.states,
                       "depth": w.depth, "seconds": round(time.perf_counter() - t0, 2)}
    decided = [out[k] for k in ("sym", "sym+safe", "explicit")
               if out[k]["status"] != "UNKNOWN"]
    out["agree"] = len({(d["status"], d["property"]) for d in decided}) <= 1
    return out


def markdown(meta: dict, rows: list[dict]) -> str:
    out = ["# Native engine: warp symmetry alone vs symmetry + safe-step reduction", "",
           f"{meta['date']}, {meta['cpus']} CPUs shared with other jobs (load average at "
           f"start {meta['load']}), Python {meta['python']}; every search bounded by "
           f"{meta['max_states']:,} states and {meta['timeout']:.0f} s.  Produced by "
           "`python bench/bench_native_reduce.py`.  `safe pts`: safe points z3 proved "
           "(`checker/safesteps.py`) and the seconds it took (inside the total); "
           "`explicit`: the Python explicit engine with its own reductions (symmetry, "
           "safe steps, stubborn sets), for the verdict.  `agree`: equal verdicts where "
           "decided.", "",
           "| example | verdict | states sym | states sym+safe | ratio | safe pts (s) | "
           "total s sym | total s sym+safe | explicit | agree |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|:-:|"]
    for r in rows:
        a, b, e = r["sym"], r["sym+safe"], r["explicit"]

        def verdict(x: dict) -> str:
            return x["status"] + (f" {x['property']}" if x["property"] else "")

        v = verdict(b) if verdict(a) == verdict(b) else f"{verdict(a)} / {verdict(b)}"
        ratio = f"{a['states'] / b['states']:.1f}x" if b["states"] else "-"
        sp = "-" if b["safe_points"] is None else f"{b['safe_points']} ({b['safe_seconds']})"
        out.append(f"| {r['file']} | {v} | {a['states']:,} | {b['states']:,} | {ratio} | "
                   f"{sp} | {a['seconds']} | {b['seconds']} | {verdict(e)} | "
                   f"{'yes' if r['agree'] else 'NO'} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--max-states", type=int, default=300_000)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--out", default="native_reduce")
    args = ap.parse_args()
    files = [Path(f).resolve() for f in args.files] or sorted((ROOT / "examples").rglob("*.pipe"))
    meta = {"python": platform.python_version(), "cpus": os.cpu_count(),
            "load": round(os.getloadavg()[0], 2), "max_states": args.max_states,
            "timeout": args.timeout, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    rows = []
    for f in files:
        r = run(f, args.max_states, args.timeout)
        rows.append(r)
        print(json.dumps({k: r[k] for k in ("file", "agree")}), flush=True)
        (RESULTS / f"{args.out}.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                             indent=1) + "\n")
        (RESULTS / f"{args.out}.md").write_text(markdown(meta, rows))
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
