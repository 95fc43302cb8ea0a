"""What slicing away idle warps could still save under the explicit engine's reductions
(issue 26 item 2: "slicing away warps that do nothing after setup").

A warp *idle after setup* runs nothing but set-up and exit: barrier inits and their
fences, the cluster barrier, local control flow, its exit (``IDLE_KINDS``).  Such a warp
cannot simply be dropped -- its cluster arrival is counted, its exit is part of its CTA's
-- so the question measured here is what it costs the reduced search: the explicit
engine's search (symmetry, CTA symmetry, stubborn sets) is run to its end, and its states
are counted with and without the idle warps' components (``projections``: states that
differ only in idle warps count once), and how many states have an idle warp not yet
exited.  ``states - projections`` is what a slicing that removed the idle warps could at
most merge in that search.

For the bundled examples where ``--por auto`` turns stubborn sets on, and, given the
CUTLASS example sources (as ``bench_cute_examples.py`` reads them), NVIDIA's lifted GEMMs.
Results: ``bench/results/slicing.md`` (text written by hand after the table, "## ...", is
kept).  A benchmark, not a test.

    python bench/bench_slicing.py [--src SRC_DIR] [--max-states 200000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))

LIFTED = ["hopper dense_gemm_persistent 2x1, 6 stages, 4 k-tiles, 2 tiles",
          "hopper dense_gemm_persistent 2x2, 4 stages, 4 k-tiles, 2 tiles",
          "blackwell dense_gemm_persistent 2-CTA 2x1, 4 k-tiles, 2 tiles",
          "blackwell dense_gemm_persistent_dynamic (CLC) 2x1, 4 k-tiles, 2 tiles"]


def idle_warps(system: Any) -> list[int]:
    from pipeproof.model import program as P

    kinds = (P.FenceMbarInit, P.MbarInit, P.ClusterArrive, P.ClusterWait, P.Exit, P.Nop,
             P.Jump, P.Branch, P.SetLocal)
    return [ag.index for ag in system.agents
            if all(isinstance(i, kinds) for i in ag.program.code)]


def measure(system: Any, max_states: int) -> dict:
    from pipeproof.checker.native.porwalk import closure_factory
    from pipeproof.checker.por import stubborn_sets
    from pipeproof.checker.statespace import Explorer
    from pipeproof.model.system import DONE

    idle = idle_warps(system)
    t0 = time.process_time()
    ex = Explorer(system, symmetry=True, cta_symmetry=True,
                  reduction=stubborn_sets(full=True, native=closure_factory()))
    seen = {ex.orbit_key(ex.initial)}
    todo, states = deque([ex.initial]), [ex.initial]
    while todo and len(states) < max_states:
        for _, nxt, viol in ex.successors(todo.popleft()):
            k = ex.orbit_key(nxt)
            if viol is None and k not in seen:
                seen.add(k)
                todo.append(nxt)
                states.append(nxt)
    comps = {ex.agent_comp[a] for a in idle}
    keep = [i for i in range(len(ex.initial)) if i not in comps]
    proj = len({tuple(st[i] for i in keep) for st in states})
    live = sum(1 for st in states if any(ex.pc(st, a) != DONE for a in idle))
    return {"warps": len(system.agents), "idle": len(idle), "states": len(states),
            "finished": not todo, "projections": proj, "idle_live": live,
            "cpu_s": round(time.process_time() - t0, 2)}


def rows(src: str, max_states: int) -> list[tuple[str, dict]]:
    from generators import build_system

    from pipeproof.checker.explicit import por_auto
    from pipeproof.model.program import is_acyclic

    out = []
    for f in sorted((ROOT / "examples").rglob("*.pipe")):
        s = build_system(f.read_text())
        if por_auto(s) and all(is_acyclic(ag.program.code) for ag in s.agents):
            out.append((str(f.relative_to(ROOT)), measure(s, max_states)))
            print(out[-1], flush=True)
    if src:
        sys.path.insert(0, str(HERE))
        import bench_cute_examples as B

        B._stub_torch()
        from pipeproof.frontend.cute import lift_function
        from pipeproof.model.system import System

        for name, arch, entry in B.configs(src):
            if name in LIFTED:
                lifted = lift_function(entry, {}, arch, data_races=True)
                out.append((f"lifted: {name}", measure(System(lifted.compiled), max_states)))
                print(out[-1], flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default="", help="the CUTLASS example sources (optional)")
    ap.add_argument("--max-states", type=int, default=200_000)
    args = ap.parse_args()
    got = rows(os.path.abspath(args.src) if args.src else "", args.max_states)
    lines = ["# Slicing idle warps: what is left to merge under the reductions", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, produced by "
             "`python bench/bench_slicing.py` (module docstring: what *idle* and "
             "*projections* mean).  The explicit engine's reduced search (symmetry, CTA "
             f"symmetry, stubborn sets), at most {args.max_states:,} states.", "",
             "| kernel | warps | idle warps | states | projections without them | "
             "mergeable | states with an idle warp live | CPU s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in got:
        merge = 1 - r["projections"] / r["states"]
        lines.append(f"| {name} | {r['warps']} | {r['idle']} | {r['states']:,}"
                     f"{'' if r['finished'] else '+'} | {r['projections']:,} | "
                     f"{merge:.1%} | {r['idle_live']:,} | {r['cpu_s']} |")
    md = HERE / "results" / "slicing.md"
    old = md.read_text() if md.exists() else ""
    kept = old[old.index("\n## "):] if "\n## " in old else ""  # written by hand
    md.write_text("\n".join(lines) + "\n" + kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
