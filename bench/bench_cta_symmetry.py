"""Symmetry over identical CTAs, measured with and without (issue 26 item 2).

For each bundled example whose cluster has CTA automorphisms (``checker/cta_symmetry.py``)
and, with ``--cutlass DIR``, NVIDIA's Hopper persistent GEMM lifted at 2x1 and 2x2
clusters: the explicit engine without stubborn sets, the explicit engine with them, and
the native engine, each with CTA symmetry off and on (warp symmetry on in all).  Every
search is bounded by states (``--max-states``; the native engine by ten times that) and
by ``--timeout``.  Records verdict, states and seconds; ``agree``: equal verdicts (status,
property, counterexample length) wherever both runs of an engine decided.  Results:
``bench/results/cta_symmetry.json`` and ``.md``.  A benchmark, not a test.

    python bench/bench_cta_symmetry.py [--max-states 100000] [--timeout 120]
        [--cutlass /tmp/cutlass_src]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

#: (label, file, parameters)
EXAMPLES = [
    ("p4-bug", "examples/bugs/p4-bug.pipe", {}),
    ("p4-fixed", "examples/bugs/p4-fixed.pipe", {}),
    ("l1-fixed", "examples/bugs/l1-fixed.pipe", {}),
    ("cluster_layout_stride", "examples/textbook/cluster_layout_stride.pipe", {}),
    ("multicast 2x2", "examples/textbook/pipeline_tma_async_multicast.pipe", {}),
    ("multicast 2x2 s4 k8", "examples/textbook/pipeline_tma_async_multicast.pipe",
     {"stages": 4, "k_tiles": 8}),
    ("K1 2x2", "examples/kernels/k1_hopper_persistent_gemm.pipe", {}),
    ("K1 2x2 ab4 k8", "examples/kernels/k1_hopper_persistent_gemm.pipe",
     {"ab_stage": 4, "k_tiles": 8}),
]


def systems(cutlass: str | None) -> list[tuple[str, Callable[[], Any]]]:
    from pipeproof.api import compile_file
    from pipeproof.model.system import System

    out: list[tuple[str, Callable[[], Any]]] = [
        (label, lambda f=f, p=p: System(compile_file(ROOT / f, p))) for label, f, p in EXAMPLES]
    if cutlass:
        import bench_cute_examples as B
        from pipeproof.frontend.cute import lift_function

        def lifted(entry: Callable[[], Any], races: bool) -> Callable[[], Any]:
            return lambda: System(lift_function(entry, {}, "sm_90a", data_races=races).compiled)

        out += [
            ("NVIDIA Hopper GEMM 2x1, 6 stages, 4 k-tiles, 2 tiles, races on",
             lifted(B.hopper_persistent(cutlass, 2, 1, 4, 2, stages=6), True)),
            ("NVIDIA Hopper GEMM 2x2, 2 k-tiles, races off",
             lifted(B.hopper_persistent(cutlass, 2, 2, 2, 1), False)),
        ]
    return out


def _one(fn: Callable[..., Any], **kw: Any) -> dict:
    t0 = time.perf_counter()
    v = fn(**kw)
    return {"status": v.status, "property": v.prop, "depth": v.depth,
            "states": v.stats.states, "seconds": round(time.perf_counter() - t0, 2),
            "reason": v.reason}


def run(label: str, make: Callable[[], Any], max_states: int, timeout: float,
        lifted: bool) -> dict:
    from pipeproof.checker.cta_symmetry import cta_automorphisms
    from pipeproof.checker.explicit import check_explicit
    from pipeproof.checker.native.search import check_native

    system = make()
    out: dict = {"label": label, "group": len(cta_automorphisms(system)) + 1,
                 "ctas": system.info.num_ctas, "warps": len(system.agents)}
    engines: list[tuple[str, Callable[..., Any], dict]] = [
        ("explicit, stubborn sets", check_explicit,
         {"system": system, "max_states": max_states, "timeout": timeout, "por": True})]
    if not lifted:  # the lifted kernels are far out of reach without stubborn sets
        engines = [
            ("explicit", check_explicit,
             {"system": system, "max_states": max_states, "timeout": timeout, "por": False}),
            *engines,
            ("native", check_native,
             {"system": system, "max_states": 10 * max_states, "timeout": timeout,
              "symmetry": True})]
    for name, fn, kw in engines:
        off = _one(fn, cta_symmetry=False, **kw)
        on = _one(fn, cta_symmetry=True, **kw)
        decided = [r for r in (off, on) if r["status"] != "UNKNOWN"]
        out[name] = {"off": off, "on": on, "agree": len(
            {(r["status"], r["property"], r["depth"]) for r in decided}) <= 1}
        print(f"{label} / {name}: off {off['status']} {off['states']:,} states "
              f"{off['seconds']} s; on {on['status']} {on['states']:,} states "
              f"{on['seconds']} s", flush=True)
    return out


def _cell(r: dict) -> str:
    v = r["status"] + (f" {r['property']}" if r["property"] else "")
    if r["status"] == "UNKNOWN":
        v += f" (depth {r['depth']} reached)"
    return f"{v}, {r['states']:,} states, {r['seconds']} s"


def markdown(meta: dict, rows: list[dict]) -> str:
    out = ["# Symmetry over identical CTAs of a cluster, with and without", "",
           f"{meta['date']}, {meta['cpus']} CPUs (load average at start {meta['load']}), "
           f"Python {meta['python']}; explicit searches bounded by {meta['max_states']:,} "
           f"states, native by {10 * meta['max_states']:,}, each by {meta['timeout']:.0f} s. "
           "Produced by `python bench/bench_cta_symmetry.py`.  `group`: the automorphisms "
           "found, identity included.  Warp symmetry is on in every run.  `agree`: equal "
           "status, property and counterexample length wherever both runs decided.", "",
           "| kernel | group | engine | CTA symmetry off | CTA symmetry on | ratio | agree |",
           "|---|---:|---|---|---|---:|:-:|"]
    for r in rows:
        for name in ("explicit", "explicit, stubborn sets", "native"):
            if name not in r:
                continue
            e = r[name]
            ratio = (f"{e['off']['states'] / max(1, e['on']['states']):.1f}x"
                     if e["off"]["status"] != "UNKNOWN" and e["on"]["status"] != "UNKNOWN"
                     else "-")
            out.append(f"| {r['label']} | {r['group']} | {name} | {_cell(e['off'])} | "
                       f"{_cell(e['on'])} | {ratio} | {'yes' if e['agree'] else '**no**'} |")
    both = [(r[n]["off"]["states"] / max(1, r[n]["on"]["states"]), n)
            for r in rows for n in ("explicit", "explicit, stubborn sets", "native")
            if n in r and "UNKNOWN" not in (r[n]["off"]["status"], r[n]["on"]["status"])]
    agree = sum(r[n]["agree"] for r in rows for n in ("explicit", "explicit, stubborn sets",
                                                         "native") if n in r)
    runs = sum(n in r for r in rows for n in ("explicit", "explicit, stubborn sets", "native"))
    if both:
        out += ["", f"Decided both ways: {len(both)} pairs; states off/on "
                f"{min(x for x, _ in both):.1f}x-{max(x for x, _ in both):.1f}x.  Verdicts "
                f"agree in {agree} of {runs} pairs."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-states", type=int, default=100_000)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--cutlass", help="flat CuTe DSL example sources (bench/README.md)")
    a = ap.parse_args()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 2),
            "python": platform.python_version(), "max_states": a.max_states,
            "timeout": a.timeout}
    rows = [run(label, make, a.max_states, a.timeout, label.startswith("NVIDIA"))
            for label, make in systems(a.cutlass)]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cta_symmetry.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                          indent=1) + "\n")
    (RESULTS / "cta_symmetry.md").write_text(markdown(meta, rows))
    print(markdown(meta, rows))


if __name__ == "__main__":
    main()
