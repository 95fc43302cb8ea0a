"""The native engine's stubborn sets, measured with and without (issue 26 item 2).

For each bundled example where ``--por auto`` turns stubborn sets on (clusters of more
than one CTA, CTAs of 10 or more warps; every warp ends), and the 2x2 multicast example
at 4 stages: ``check_native`` with warp and CTA symmetry (``symmetry=True``), then with
stubborn sets too (``por=True``), and the explicit engine with its stubborn sets, each in
this process and bounded by ``--max-states`` and ``--timeout``.  Records verdict,
states, the search's seconds (``search_seconds``: the C search with, under ``por``, the
stubborn-set callback, whose own seconds are given too) and the whole call's (encoding
and compiling included; a compiled program is cached, so a second run of the same
kernel compiles nothing).  ``agree``: equal verdicts where decided.  Results:
``bench/results/native_por.json`` and ``.md``; text written by hand after the table
("## ...") is kept.  A benchmark, not a test.

    python bench/bench_native_por.py [--max-states 2000000] [--timeout 300] [FILES...]
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

MULTICAST_4 = ("examples/textbook/pipeline_tma_async_multicast.pipe",
               {"stages": 4, "k_tiles": 8})


def _verdict(v: object) -> dict:
    ex = v.stats.extra  # type: ignore[attr-defined]
    # a counterexample's states: the reduced search's (the confirming search's follow)
    return {"status": v.status, "property": v.prop,  # type: ignore[attr-defined]
            "states": ex.get("reduced_states", v.stats.states),  # type: ignore
            "depth": v.depth, "all_states": v.stats.states,  # type: ignore[attr-defined]
            "search_s": ex.get("search_seconds"), "callback_s": (ex.get("por") or {}).get(
                "seconds"), "encode_s": ex.get("encode_seconds"),
            "compile_s": ex.get("compile_seconds"), "reason": v.reason}  # type: ignore


def run(path: Path, params: dict, max_states: int, timeout: float) -> dict:
    from generators import build_system

    from pipeproof.checker.explicit import check_explicit
    from pipeproof.checker.native.search import check_native

    system = build_system(path.read_text(), params)
    label = str(path.relative_to(ROOT)) + "".join(f" {k}={v}" for k, v in params.items())
    out: dict = {"file": label}
    for name, por in (("sym", False), ("sym+por", True)):
        t0 = time.perf_counter()
        v = check_native(system, max_states=max_states, timeout=timeout, symmetry=True,
                         por=por)
        out[name] = {**_verdict(v), "seconds": round(time.perf_counter() - t0, 2)}
    t0 = time.perf_counter()
    w = check_explicit(system, max_states=max_states, timeout=timeout, por=True)
    out["explicit"] = {"status": w.status, "property": w.prop,
                       "states": w.stats.extra.get("reduced_states", w.stats.states),
                       "all_states": w.stats.states,
                       "seconds": round(time.perf_counter() - t0, 2)}
    decided = [out[k] for k in ("sym", "sym+por", "explicit") if out[k]["status"] != "UNKNOWN"]
    out["agree"] = len({(d["status"], d["property"]) for d in decided}) <= 1
    return out


def markdown(meta: dict, rows: list[dict], kept: str) -> str:
    out = ["# Native engine: symmetry alone vs symmetry + stubborn sets", "",
           f"{meta['date']}, {meta['cpus']} CPUs shared with other jobs (load average at "
           f"start {meta['load']}), Python {meta['python']}; every search bounded by "
           f"{meta['max_states']:,} states and {meta['timeout']:.0f} s.  Produced by "
           "`python bench/bench_native_por.py`.  `search s`: the search's wall seconds "
           "(with stubborn sets: the C search and the Python callback that asks the "
           "explicit engine's `Reducer`, whose share is in brackets); `total s`: the whole "
           "call (sampling, encoding, compiling or the cache, search, counterexample "
           "replay, and for a counterexample its shortening and the unreduced search that "
           "confirms it is shortest); `explicit`: the Python explicit engine with its "
           "stubborn sets.  States of a counterexample: the reduced search's (without the "
           "confirming search's).  `agree`: equal verdicts where decided.", "",
           "| example | verdict | states sym | states sym+por | ratio | search s sym | "
           "search s sym+por (callback) | total s sym | total s sym+por | explicit "
           "states | explicit s | agree |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:-:|"]
    for r in rows:
        a, b, e = r["sym"], r["sym+por"], r["explicit"]

        def verdict(x: dict) -> str:
            return x["status"] + (f" {x['property']}" if x["property"] else "")

        v = verdict(b) if verdict(a) == verdict(b) else f"{verdict(a)} / {verdict(b)}"
        ratio = (f"{a['states'] / b['states']:.0f}x" + ("+" if a["status"] == "UNKNOWN"
                                                         else "")) if b["states"] else "-"
        out.append(f"| {r['file']} | {v} | {a['states']:,} | {b['states']:,} | {ratio} | "
                   f"{a['search_s']} | {b['search_s']} ({b['callback_s']}) | {a['seconds']} "
                   f"| {b['seconds']} | {e['states']:,} | {e['seconds']} | "
                   f"{'yes' if r['agree'] else 'NO'} |")
    return "\n".join(out) + "\n" + kept


def default_files() -> list[tuple[Path, dict]]:
    """The bundled examples ``--por auto`` reduces, and the 4-stage 2x2 multicast one."""
    from generators import build_system

    from pipeproof.checker.explicit import por_auto
    from pipeproof.model.program import is_acyclic

    out = []
    for f in sorted((ROOT / "examples").rglob("*.pipe")):
        s = build_system(f.read_text())
        if por_auto(s) and all(is_acyclic(ag.program.code) for ag in s.agents):
            out.append((f, {}))
    out.append((ROOT / MULTICAST_4[0], dict(MULTICAST_4[1])))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--max-states", type=int, default=2_000_000)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default="native_por")
    args = ap.parse_args()
    files = [(Path(f).resolve(), {}) for f in args.files] or default_files()
    meta = {"python": platform.python_version(), "cpus": os.cpu_count(),
            "load": round(os.getloadavg()[0], 2), "max_states": args.max_states,
            "timeout": args.timeout, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    md = RESULTS / f"{args.out}.md"
    old = md.read_text() if md.exists() else ""
    kept = old[old.index("\n## "):] if "\n## " in old else ""
    rows = []
    for f, params in files:
        r = run(f, params, args.max_states, args.timeout)
        rows.append(r)
        print(json.dumps({k: r[k] for k in ("file", "agree")}), flush=True)
        (RESULTS / f"{args.out}.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                             indent=1) + "\n")
        md.write_text(markdown(meta, rows, kept))
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
