"""Benchmark of the z3 BMC engine on every bundled example, next to the explicit engine.

For each .pipe file under examples/ it runs ``check_file(..., engine="bmc", depth=D)``
in a fresh subprocess (``bench_explicit.run_one``) and records the verdict, the depth
reached, the time to verdict and peak memory.  The issue's aims are also measured
directly: every textbook example to depth 60 within 10 s, and the K2 skeleton to depth
100 within 60 s.  If ``bench/results/explicit.json`` exists, its verdict and time for the
same file are put in the same row, so the table compares the two engines.

    python bench/bench_bmc.py [--depth 60] [--timeout 60] [FILES...]

Results: ``bench/results/bmc.json`` and ``bench/results/bmc.md``.  A benchmark, not a
test: UNKNOWN (timeout) results are recorded as they are.
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
    ap.add_argument("--out", default=str(RESULTS / "bmc"))
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the Markdown table from the JSON results (e.g. after a "
                         "new explicit run)")
    args = ap.parse_args()
    if args.render_only:
        data = json.loads(Path(args.out + ".json").read_text())
        render(data["meta"], data["results"], args.out)
        return 0
    files = [Path(f).resolve() for f in args.files] or sorted(
        p for d in ("textbook", "kernels", "bugs", "liveness")
        for p in (ROOT / "examples" / d).glob("*.pipe"))
    runs = [(f, args.depth) for f in files]
    if not args.files:
        runs.append((K2, 100))  # the K2 aim: depth 100 in under 60 s
    rows = []
    for f, depth in runs:
        r = run_one(f, args.timeout, 0, True, engine="bmc", depth=depth)
        r["requested_depth"] = depth
        rows.append(r)
        print(f"{r['file']:60s} depth {depth:3d}: {r.get('headline') or r.get('status'):40s} "
              f"reached {r.get('depth')} in {r.get('wall_seconds', 0):6.1f} s "
              f"{r.get('peak_mb', 0):6.0f} MB", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version.split()[0],
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "timeout_s": args.timeout, "depth": args.depth}
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2))
    render(meta, rows, args.out)
    return 0


def render(meta: dict, rows: list, out: str) -> None:
    """The Markdown table, next to the explicit engine's results when they exist."""
    explicit = {}
    ej = RESULTS / "explicit.json"
    if ej.exists():
        explicit = {r["file"]: r for r in json.loads(ej.read_text())["results"]
                    if not r.get("params")}
    lines = [f"# BMC engine benchmark ({meta['date']}, Python {meta['python']}, "
             f"{meta['cpus']} CPUs, timeout {meta['timeout_s']:.0f} s)", "",
             "`depth` is the bound asked for; `reached` is the deepest level finished "
             "(for PROVEN: the level at which every run had ended).", ""]
    if meta.get("note"):
        lines += [f"Partial rerun: {meta['note']}.", ""]
    lines += ["| example | depth | BMC verdict | reached | BMC time (s) | peak MB | "
              "explicit verdict | explicit time (s) |",
              "|---|---:|---|---:|---:|---:|---|---:|"]
    for r in rows:
        e = explicit.get(r["file"], {})
        lines.append(
            f"| {r['file']} | {r['requested_depth']} | {r.get('headline') or r.get('status')} | "
            f"{r.get('depth', '')} | {r.get('wall_seconds', 0):.1f} | {r.get('peak_mb', 0):.0f} | "
            f"{e.get('headline') or e.get('status') or ''} | "
            f"{'' if not e else format(e.get('wall_seconds', 0), '.1f')} |")
    Path(out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
