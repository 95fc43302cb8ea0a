"""Time to a counterexample: ``--engine swarm`` (random runs) against the explicit engine,
and the default engine (which runs both on kernels with stubborn sets).

Two sets, each row in a fresh process, CPU seconds:

* every bundled ``examples/**/*-bug.pipe``: ``check_explicit`` as the default engine's
  explicit stage runs it (reductions on, the confirming search off) against
  ``check_swarm`` (1,000 runs, seed 0), and ``check_auto`` (two racing processes,
  wall-clock seconds);
* with SRC_DIR (the example sources, as ``bench_cute_examples.py`` reads them): NVIDIA's
  Hopper persistent GEMM with a planted exit race -- its mainloop ``producer_tail``
  removed (a CTA may exit while its peers still release into its empty barriers), or the
  TMA store pipeline's (a CTA may exit while a store still reads its shared memory) --
  copied into a temporary folder with that one line commented out (nothing of CUTLASS is
  kept here), lifted and checked the same three ways, each bounded by
  ``--timeout``.

    python bench/bench_swarm.py [SRC_DIR] [--timeout 300] [--out swarm]

Results: ``bench/results/swarm.{md,json}``.  A benchmark: it records what it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

GEMM = "hopper_kernel_dense_gemm_dense_gemm_persistent.py"
#: (name, line to comment out, cluster (m, n), k-tiles, tiles, stages)
MUTANTS = [
    ("no mainloop producer_tail, 2x1, 6 stages, 4 k-tiles, 2 tiles",
     "mainloop_pipeline.producer_tail(mainloop_producer_state)", (2, 1), 4, 2, 6),
    ("no TMA-store producer_tail, 2x1, 6 stages, 4 k-tiles, 2 tiles",
     "tma_store_pipeline.producer_tail()", (2, 1), 4, 2, 6),
    ("no mainloop producer_tail, 2x2, 2 stages, 2 k-tiles, 1 tile",
     "mainloop_pipeline.producer_tail(mainloop_producer_state)", (2, 2), 2, 1, 2),
    ("no mainloop producer_tail, 2x2, 4 stages, 4 k-tiles, 2 tiles",
     "mainloop_pipeline.producer_tail(mainloop_producer_state)", (2, 2), 4, 2, 4),
]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {tests!r}); sys.path.insert(0, {here!r})
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.swarm import check_swarm
from pipeproof.model.system import System
if {pipe!r}:
    import generators as G
    make = lambda: G.build_system(open({pipe!r}).read())
else:
    import bench_cute_examples as B
    B._stub_torch()
    from pipeproof.frontend.cute import lift_function
    cm, cn, k, t, st = {shape!r}
    compiled = lift_function(B.hopper_persistent({src!r}, cm, cn, k, t, stages=st), {{}},
                             "sm_90a", data_races=True).compiled
    make = lambda: System(compiled)
from pipeproof.checker.portfolio import check_auto
out = {{}}
for engine in ("explicit", "swarm", "auto"):
    t0, w0 = time.process_time(), time.perf_counter()
    if engine == "explicit":
        v = check_explicit(make(), timeout={timeout}, confirm_timeout=0)
    elif engine == "swarm":
        v = check_swarm(make(), timeout={timeout})
    else:
        v = check_auto(make(), depth=None, timeout={timeout}, jobs=2)
    out[engine] = {{"status": v.status, "prop": v.prop, "depth": v.depth,
                   "states": v.stats.states, "cpu_s": round(time.process_time() - t0, 2),
                   "wall_s": round(time.perf_counter() - w0, 2), "by": v.stats.engine,
                   "run": v.stats.extra.get("run"), "reason": v.reason or ""}}
print(json.dumps(out))
"""


def run_row(timeout: float, pipe: str = "", src: str = "", shape: tuple = ()) -> dict:
    code = CHILD.format(tests=str(ROOT / "tests"), here=str(HERE), pipe=pipe, src=src,
                        shape=shape, timeout=timeout)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=3 * timeout + 600)
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def _cell(r: dict, seconds: str = "cpu_s") -> str:
    v = r["status"] + (f" {r['prop']}" if r["prop"] else "")
    if r["status"] == "VIOLATED":
        v += f", {r['depth']} steps"
    return f"{v} | {r[seconds]}"


def write_md(path: Path, meta: dict, rows: list, kept: str = "") -> None:
    """The table; ``kept``: the sections written by hand after it ("## ..."), as they
    were."""
    lines = ["# Random runs (`--engine swarm`) against the explicit engine: time to a "
             "counterexample", "",
             f"{meta['date']}, {meta['cpus']} CPUs, Python {meta['python']}; `python "
             "bench/bench_swarm.py`.  CPU seconds, each row in a fresh process.  explicit: "
             "`check_explicit` with its reductions and no confirming search (a shortest "
             "counterexample where it used none); swarm: `check_swarm`, 1,000 runs at most, "
             f"seed 0 (`run`: the run that found it, from 0); both bounded by "
             f"{meta['timeout']:g} s.  Steps: the counterexample's length after needless "
             "steps are dropped.  auto: the default engine (`check_auto`, two processes "
             "racing, the same bound), wall-clock seconds, and which engine decided.", "",
             "| kernel | explicit | CPU s | swarm | CPU s | run | auto | wall s | by |",
             "|---|---|---:|---|---:|---:|---|---:|---|"]
    for name, r in rows:
        if "error" in r:
            lines.append(f"| {name} | error: {r['error'][:150]} | | | | | | | |")
            continue
        run = r["swarm"]["run"]
        lines.append(f"| {name} | {_cell(r['explicit'])} | {_cell(r['swarm'])} | "
                     f"{'-' if run is None else run} | {_cell(r['auto'], 'wall_s')} | "
                     f"{r['auto']['by']} |")
    path.write_text("\n".join(lines) + "\n" + kept)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", default="")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default="swarm")
    args = ap.parse_args()
    src = os.path.abspath(args.src) if args.src else ""
    if src and not os.path.exists(os.path.join(src, GEMM)):
        print(f"bench_swarm: {src} has no {GEMM}", file=sys.stderr)
        return 2
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "timeout": args.timeout}
    rows: list = []
    res = HERE / "results"
    md = res / f"{args.out}.md"
    old = md.read_text() if md.exists() else ""
    kept = old[old.index("\n## "):] if "\n## " in old else ""

    def record(name: str, r: dict) -> None:
        rows.append((name, r))
        print(name, json.dumps(r), flush=True)
        (res / f"{args.out}.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                         indent=1) + "\n")
        write_md(md, meta, rows, kept)

    for p in sorted((ROOT / "examples").rglob("*-bug.pipe")):
        record(str(p.relative_to(ROOT)), run_row(args.timeout, pipe=str(p)))
    if src:
        for name, line, (cm, cn), k, t, st in MUTANTS:
            with tempfile.TemporaryDirectory() as tmp:
                for f in os.listdir(src):
                    s = os.path.join(src, f)
                    if os.path.isfile(s):
                        shutil.copy(s, tmp)
                    else:
                        shutil.copytree(s, os.path.join(tmp, f))
                text = Path(tmp, GEMM).read_text()
                if text.count(line) != 1:
                    record(f"NVIDIA Hopper GEMM, {name}", {"error": f"{line!r} not found once"})
                    continue
                Path(tmp, GEMM).write_text(text.replace(line, "pass  # " + line))
                record(f"NVIDIA Hopper GEMM, {name}",
                       run_row(args.timeout, src=tmp, shape=(cm, cn, k, t, st)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
