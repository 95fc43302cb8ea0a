"""Time to the first counterexample on the bug catalogue (issue 24 item 4).

For each ``examples/bugs/*-bug.pipe`` it runs ``pipeproof check FILE`` as a user would
(default options; ``--memory-model strict`` where the file's header asks for it) in a
fresh subprocess with unbuffered output, and records

* ``first_seconds``: when the line ``VIOLATED ...`` reached stdout (the first answer);
* ``total_seconds``: when the command ended (after any search proving the
  counterexample shortest);
* the verdict line, the exit code, whether the output says the counterexample is a
  shortest one, and the load average (1 min) before and after the run -- the
  development machine is shared, so the load is part of the record.

Results go to ``bench/results/first_answer.json`` (one entry per label, so a run before a
change and one after it sit side by side) and ``bench/results/first_answer.md``.

    python bench/bench_first_answer.py --label after [--timeout 120] [EXTRA_ARGS ...]

Anything after ``--`` is passed to ``pipeproof check`` (e.g. ``-- --no-confirm``).  A
benchmark, not a test: it records what it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import selectors
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
BUGS = ROOT / "examples" / "bugs"


def memory_model_of(path: Path) -> str:
    """The ``# memory-model: strict`` header of a bug example (tests/test_bugs.py)."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = re.match(r"#\s*memory-model:\s*(\S+)\s*$", line)
        if m:
            return m.group(1)
    return "cutlass"


def run_one(path: Path, timeout: float, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "pipeproof.cli", "check", str(path.relative_to(ROOT)),
           "--memory-model", memory_model_of(path), *extra]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env, bufsize=0)
    first = None
    headline = ""
    out: list[str] = []
    pending = b""
    assert p.stdout is not None
    fd = p.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    # raw reads of the pipe: a buffered reader could hold a line that select() no
    # longer reports, and the first answer would be timed when later output comes
    while True:
        if time.perf_counter() - t0 > timeout:
            p.kill()
            break
        if not sel.select(timeout=0.5):
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            out.append(line + "\n")
            if first is None and re.match(r"(VIOLATED|PROVEN|SAFE|UNKNOWN)\b", line):
                first = time.perf_counter() - t0
                headline = line.strip()
    rc = p.wait()
    total = time.perf_counter() - t0
    text = "".join(out)
    shortest = ("not confirmed" not in text and "perhaps not" not in text
                and "not the shortest" not in text)
    return {"file": str(path.relative_to(ROOT)), "first_seconds": first,
            "total_seconds": total, "exit": rc, "headline": headline,
            "shortest_claimed": shortest and "shortest" in text,
            "load_before": load0, "load_after": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True, help="name of this run (before, after, ...)")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("files", nargs="*")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    extra = argv[cut + 1:]  # passed to pipeproof check
    files = [Path(f).resolve() for f in args.files] or sorted(BUGS.glob("*-bug.pipe"))
    rows = []
    for f in files:
        r = run_one(f, args.timeout, extra)
        rows.append(r)
        first = "-" if r["first_seconds"] is None else f"{r['first_seconds']:.1f}"
        print(f"{r['file']:32s} first {first:>6s} s  total {r['total_seconds']:6.1f} s  "
              f"load {r['load_before']:.2f}  {r['headline'][:60]}", flush=True)
    firsts = [r["first_seconds"] for r in rows if r["first_seconds"] is not None]
    run = {"label": args.label, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "machine": f"{platform.node()} {os.cpu_count()} CPUs, Python "
                      f"{platform.python_version()}",
           "extra_args": extra, "rows": rows,
           "median_first": statistics.median(firsts) if firsts else None,
           "max_first": max(firsts) if firsts else None,
           "median_total": statistics.median(r["total_seconds"] for r in rows),
           "mean_load": statistics.mean(r["load_before"] for r in rows)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    jpath = RESULTS / "first_answer.json"
    runs = json.loads(jpath.read_text()) if jpath.exists() else {}
    runs[args.label] = run
    jpath.write_text(json.dumps(runs, indent=1) + "\n")
    write_markdown(runs)
    print(f"median first answer {run['median_first']:.1f} s, max {run['max_first']:.1f} s, "
          f"median total {run['median_total']:.1f} s")
    return 0


def write_markdown(runs: dict) -> None:
    lines = ["# Time to the first counterexample (bug catalogue)", "",
             "`python bench/bench_first_answer.py --label NAME [-- CHECK_ARGS]`: "
             "`pipeproof check` on every `examples/bugs/*-bug.pipe` with default options, "
             "one fresh process each. *first*: seconds until the `VIOLATED` line reached "
             "stdout; *total*: until the command ended. *load*: the machine's 1-minute "
             "load average before the run (2 cores, shared with other work).", ""]
    if "before" in runs and "after" in runs:
        b = {r["file"]: r for r in runs["before"]["rows"]}
        lines += ["## before and after, per file", "",
                  "Before the change the counterexample was printed only when the command "
                  "ended, so *before* is the time to the first answer then; *after total* is "
                  "what the same work costs on the load of the *after* run (the search is "
                  "unchanged: the old first answer on that load).", "",
                  "| file | before (s) | after: first (s) | after: total (s) |",
                  "|---|---|---|---|"]
        for r in runs["after"]["rows"]:
            old = b.get(r["file"])
            bf = "-" if old is None or old["first_seconds"] is None \
                else f"{old['first_seconds']:.1f}"
            af = "-" if r["first_seconds"] is None else f"{r['first_seconds']:.1f}"
            lines.append(f"| {r['file']} | {bf} | {af} | {r['total_seconds']:.1f} |")
        lines.append("")
    for label, run in runs.items():
        lines += [f"## {label} ({run['date']}, {run['machine']})", "",
                  f"extra arguments: `{' '.join(run['extra_args']) or '(none)'}`; "
                  f"median first answer **{run['median_first']:.1f} s** "
                  f"(max {run['max_first']:.1f} s); median total "
                  f"{run['median_total']:.1f} s; mean load {run['mean_load']:.2f}", "",
                  "| file | first (s) | total (s) | load | verdict |", "|---|---|---|---|---|"]
        for r in run["rows"]:
            first = "-" if r["first_seconds"] is None else f"{r['first_seconds']:.1f}"
            lines.append(f"| {r['file']} | {first} | {r['total_seconds']:.1f} | "
                         f"{r['load_before']:.2f} | {r['headline']} |")
        lines.append("")
    (RESULTS / "first_answer.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
