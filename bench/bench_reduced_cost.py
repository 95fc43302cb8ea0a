"""CPU cost of the explicit engine with stubborn sets on NVIDIA's lifted CuTe DSL GEMMs.

Each configuration of ``bench_cute_examples.py`` named below is compiled and lifted (data
races on), then searched by ``check_explicit(por=True)`` alone -- no BMC stage, no
confirmation search -- in a fresh process, and the CPU seconds of the search, its states,
the seeds the native closure answered and those it left to the Python closure
(``fallbacks``) are recorded.  ``--before-python PY`` also runs each configuration, right
before, with another interpreter -- one whose ``pipeproof`` is another checkout (an
editable install in a second virtual environment) -- and puts the two side by side: the
same machine at the same moment, since timings on a shared machine drift by 30% and more
over minutes.  The state counts must agree where both finished.

    python bench/bench_reduced_cost.py SRC_DIR [--max-states N] [--timeout S]
        [--before-python PY --before-label TEXT] [--out NAME]

SRC_DIR: the example sources, as for ``bench_cute_examples.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIGS = [
    "hopper dense_gemm_persistent 2x1, 6 stages, 4 k-tiles, 2 tiles",
    "hopper dense_gemm_persistent 2x1, 8 stages, 8 k-tiles, 2 tiles",
    "hopper dense_gemm_persistent 2x2, 4 stages, 4 k-tiles, 2 tiles",
    "hopper dense_gemm_persistent 2x1, 6 stages, 8 k-tiles, 2 tiles",
    "hopper dense_gemm_persistent 2x2, 6 stages, 8 k-tiles, 2 tiles",
    "blackwell dense_gemm_persistent 2-CTA 2x1, 4 k-tiles, 2 tiles",
    "blackwell dense_gemm_persistent_dynamic (CLC) 2x1, 2 k-tiles, 3 tiles",
    "blackwell dense_gemm_persistent_dynamic (CLC) 2x1, 4 k-tiles, 2 tiles",
]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import bench_cute_examples as B
B._stub_torch()
from pipeproof.frontend.cute import lift_function
from pipeproof.model.system import System
from pipeproof.checker.explicit import check_explicit
name, arch, entry = next(c for c in B.configs({src!r}) if c[0].startswith({name!r}))
lifted = lift_function(entry, {{}}, arch, data_races=True)
t = time.process_time()
v = check_explicit(System(lifted.compiled), max_states={max_states}, timeout={timeout},
                   por=True, confirm_timeout=0)
cpu = time.process_time() - t
extra = v.stats.extra.get("por_native") or {{}}
print(json.dumps({{"verdict": v.status, "states": v.stats.states, "depth": v.stats.depth,
                  "cpu_s": round(cpu, 2), "seeds": extra.get("seeds"),
                  "fallbacks": extra.get("fallbacks")}}))
"""


def run(src: str, name: str, max_states: int, timeout: float,
        python: str = sys.executable) -> dict:
    code = CHILD.format(here=HERE, src=src, name=name, max_states=max_states,
                        timeout=timeout)
    p = subprocess.run([python, "-c", code], capture_output=True, text=True,
                       timeout=timeout + 600)
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"verdict": "ERROR", "detail": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def write_md(path: str, header: str, rows: dict, before: dict) -> None:
    """The table: one row per configuration, the earlier checkout's numbers beside.
    Speed-up: CPU seconds before / after where both decided; where both stopped at the
    time limit, the states reached per CPU second after / before.  The sections written
    by hand after the table ("## ...") are kept as they are."""
    old = open(path).read() if os.path.exists(path) else ""
    kept = old[old.index("\n## "):] if "\n## " in old else ""
    with open(path, "w") as f:
        f.write("# Explicit engine with stubborn sets on NVIDIA's lifted GEMMs: CPU cost\n\n")
        f.write(header + "  The search alone (`check_explicit(por=True, confirm_timeout=0)`, "
                "data races on), CPU seconds; `fallbacks`: seeds the native closure left to "
                "the Python one.\n\n")
        head = "| configuration | verdict | states | depth | CPU s | seeds | fallbacks |"
        if before:
            head += (" verdict before | states before | CPU s before | fallbacks before |"
                     " speed-up |")
        f.write(head + "\n|" + "---|" * (head.count("|") - 1) + "\n")
        for name, r in rows.items():
            if "states" not in r:
                f.write(f"| {name} | {r['verdict']} ({r.get('detail', '')}) |\n")
                continue
            line = (f"| {name} | {r['verdict']} | {r['states']:,} | {r['depth']} | "
                    f"{r['cpu_s']} | {r['seeds']} | {r['fallbacks']} |")
            b = before.get(name)
            if before and b and "states" in b:
                if b["verdict"] == r["verdict"] == "UNKNOWN":
                    up = f"{(r['states'] / r['cpu_s']) / (b['states'] / b['cpu_s']):.2f}x " \
                         "(states/s)"
                elif b["verdict"] == r["verdict"]:
                    up = f"{b['cpu_s'] / r['cpu_s']:.2f}x"
                else:
                    up = "-"
                line += (f" {b['verdict']} | {b['states']:,} | {b['cpu_s']} | "
                         f"{b['fallbacks']} | {up} |")
            elif before:
                line += " - | - | - | - | - |"
            f.write(line + "\n")
        f.write(kept)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--max-states", type=int, default=300_000)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--before-python", default="")
    ap.add_argument("--before-label", default="another checkout",
                    help="what --before-python runs, for the table's header")
    ap.add_argument("--out", default="reduced_cost")
    ap.add_argument("--table-from", default="",
                    help="only write the Markdown table again from a recorded JSON (replaces the "
             "file: text added below the table is lost)")
    args = ap.parse_args()
    src = os.path.abspath(args.src)
    sys.path.insert(0, HERE)
    from bench_cute_examples import SOURCES, missing_sources
    missing = missing_sources(src, SOURCES[:3])
    if missing and not args.table_from:
        print(f"bench_reduced_cost: {src} lacks {', '.join(missing)} (the example sources, "
              "named as bench_cute_examples.py reads them)", file=sys.stderr)
        return 2
    if args.table_from:
        rec = json.load(open(args.table_from))
        path = os.path.join(HERE, "results", args.out + ".md")
        head = open(path).read().split("\n")[2].split("  The search alone")[0] \
            if os.path.exists(path) else ""
        write_md(path, head, rec["after"], rec["before"])
        return 0
    before: dict = {}
    rows = {}
    for name in CONFIGS:
        if args.before_python:
            before[name] = run(src, name, args.max_states, args.timeout, args.before_python)
            print("before", name, before[name], flush=True)
        rows[name] = run(src, name, args.max_states, args.timeout)
        print(name, rows[name], flush=True)
    res = os.path.join(HERE, "results")
    with open(os.path.join(res, args.out + ".json"), "w") as f:
        json.dump({"after": rows, "before": before,
                   "before_python": args.before_python}, f, indent=1)
    header = (f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, Python "
              f"{sys.version.split()[0]}; `python bench/bench_reduced_cost.py SRC "
              f"--max-states {args.max_states} --timeout {args.timeout:g}"
              + (" --before-python PY" if args.before_python else "") + "`.  "
              + (f"`before`: {args.before_label}, run just before each row." if before
                 else ""))
    write_md(os.path.join(res, args.out + ".md"), header, rows, before)
    print(f"wrote {os.path.join(res, args.out + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
