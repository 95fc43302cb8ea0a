"""SPIN as the yardstick (issue 26 item 5): time to verdict, states and verdicts of SPIN and
pipeproof on the same models, on the same machine.

For every entry of the benchmark set (``BENCH``: a .pipe file at one size) it

1. prepares, untimed, the Promela (``bench/spin_promela.py``: printed from pipeproof's
   transition templates, so SPIN explores the state space of pipeproof's explicit engine
   without reductions) into ``bench/spin/<name>.pml``;
2. times SPIN from that file to its verdict: ``spin -a``, ``cc $SPIN_CFLAGS pan.c``,
   ``./pan $PAN_FLAGS`` (safety: assertions, which carry every pipeproof check, and the
   deadlock watcher; see ``spin_promela.py``), each step and their sum;
3. times ``pipeproof check FILE -p ... --json`` from the .pipe file to its verdict, as a
   user runs it, with ``--engine auto`` (the default), ``--engine explicit`` and
   ``--engine native`` (a fresh ``PIPEPROOF_NATIVE_CACHE`` per run, so its C compile is
   counted as SPIN's is);

and records verdicts, states and the ratios pipeproof time / SPIN time in
``bench/results/spin.md`` and ``spin.json``.  A benchmark, not a test: it records what it
measures.  SPIN and a C compiler are external tools, not pipeproof dependencies: without
them the script says so and exits 2 (Debian: ``apt-get install spin``).

    python bench/bench_spin.py [--timeout 300] [--only NAME,...] [--engines auto,explicit,native]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PML = ROOT / "bench" / "spin"
sys.path.insert(0, str(ROOT / "bench"))

#: the C flags of pan.c, two choices, SPIN's time being the better of the two: -O0
#: compiles fast (small models), -O2 searches fast (large ones; tried only where the
#: -O0 search took longer than 2 s and longer than its compile).  Both -DSAFETY (a safety
#: search: no cycle detection, which these checks do not need) and a memory limit of
#: 8 GB (the run stops with an error rather than swap).  No state compression
#: (-DCOLLAPSE, -DHC): these state spaces fit in memory uncompressed.
SPIN_CFLAGS = {"O0": ["-O0", "-DSAFETY", "-DMEMLIM=8000"],
               "O2": ["-O2", "-DSAFETY", "-DMEMLIM=8000"]}
#: pan: stop at the first error (the default -c1), search depth up to 100,000 steps (a
#: deeper run is reported as incomplete, never as a verdict), a hash table of 2^24 slots
#: (pan's default)
PAN_FLAGS = ["-m100000"]

#: (name, .pipe file, parameters): the benchmark set, each kernel at 2-3 sizes
BENCH: list[tuple[str, str, dict[str, int]]] = [
    ("pipeline_async-s2k4", "examples/textbook/pipeline_async.pipe", {"stages": 2, "k_tiles": 4}),
    ("pipeline_async-s3k8", "examples/textbook/pipeline_async.pipe", {"stages": 3, "k_tiles": 8}),
    ("pipeline_async-s4k16", "examples/textbook/pipeline_async.pipe",
     {"stages": 4, "k_tiles": 16}),
    ("pipeline_tma_async-s2k3", "examples/textbook/pipeline_tma_async.pipe",
     {"stages": 2, "k_tiles": 3}),
    ("pipeline_tma_async-s3k6", "examples/textbook/pipeline_tma_async.pipe",
     {"stages": 3, "k_tiles": 6}),
    ("pipeline_tma_async-s4k8", "examples/textbook/pipeline_tma_async.pipe",
     {"stages": 4, "k_tiles": 8}),
    ("multicast2x2-s2k2", "examples/textbook/pipeline_tma_async_multicast.pipe",
     {"stages": 2, "k_tiles": 2}),
    ("multicast2x2-s2k4", "examples/textbook/pipeline_tma_async_multicast.pipe",
     {"stages": 2, "k_tiles": 4}),
    ("multicast2x2-s4k4", "examples/textbook/pipeline_tma_async_multicast.pipe",
     {"stages": 4, "k_tiles": 4}),
    ("pipeline_tma_umma-s2k2", "examples/textbook/pipeline_tma_umma.pipe",
     {"stages": 2, "k_tiles": 2}),
    ("pipeline_tma_umma-s3k4", "examples/textbook/pipeline_tma_umma.pipe",
     {"stages": 3, "k_tiles": 4}),
    ("pipeline_tma_umma-s4k8", "examples/textbook/pipeline_tma_umma.pipe",
     {"stages": 4, "k_tiles": 8}),
    ("k2-k1", "examples/kernels/k2_blackwell_persistent_gemm.pipe", {"k_tiles": 1}),
    ("k2-k2", "examples/kernels/k2_blackwell_persistent_gemm.pipe", {"k_tiles": 2}),
    ("k2-k2t2", "examples/kernels/k2_blackwell_persistent_gemm.pipe",
     {"k_tiles": 2, "tiles": 2}),
    ("p1-bug-s2k2", "examples/bugs/p1-bug.pipe", {"stages": 2, "k_tiles": 2}),
    ("p1-bug-s3k4", "examples/bugs/p1-bug.pipe", {"stages": 3, "k_tiles": 4}),
    ("p1-bug-s4k8", "examples/bugs/p1-bug.pipe", {"stages": 4, "k_tiles": 8}),
    ("p2-bug-s2k2", "examples/bugs/p2-bug.pipe", {"stages": 2, "k_tiles": 2}),
    ("p2-bug-s3k4", "examples/bugs/p2-bug.pipe", {"stages": 3, "k_tiles": 4}),
    ("p2-bug-s4k8", "examples/bugs/p2-bug.pipe", {"stages": 4, "k_tiles": 8}),
]


def c_compiler() -> str | None:
    for c in (os.environ.get("CC"), "cc", "gcc"):
        if c and shutil.which(c):
            return c
    return None


def missing_tools() -> str | None:
    """Why SPIN cannot run here, or None."""
    if not shutil.which("spin"):
        return ("bench_spin: SPIN is not installed (it is the yardstick, not a pipeproof "
                "dependency): apt-get install spin")
    if not c_compiler():
        return "bench_spin: SPIN's pan.c needs a C compiler (cc or gcc, or set CC)"
    return None


def build_system(path: Path, params: dict[str, int]):
    from pipeproof.model.compile import compile_kernel
    from pipeproof.model.lang.parser import parse
    from pipeproof.model.system import System

    return System(compile_kernel(parse(path.read_text(), str(path)), params))


def prepare(name: str, path: Path, params: dict[str, int], out: Path) -> dict:
    """Write the Promela of ``path`` at ``params`` to ``out``; what SPIN must find."""
    from spin_promela import final_encoding, promela

    t0 = time.perf_counter()
    enc, ref = final_encoding(build_system(path, params))
    title = f"{path.relative_to(ROOT)} {' '.join(f'{k}={v}' for k, v in params.items())}"
    model = promela(enc, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.source)
    return {"keys": model.nkeys, "templates": model.transitions, "acyclic": model.acyclic,
            "unreduced_states": ref.states, "unreduced_complete": ref.complete,
            "prepare_s": round(time.perf_counter() - t0, 2),
            "pml_bytes": len(model.source)}


_ASSERT = re.compile(r"assertion violated (.*) \(at depth (\d+)\)")


def spin_verdict(out: str) -> tuple[str, str | None]:
    """(status, property) of pan's output."""
    m = _ASSERT.search(out)
    if m:
        text = m.group(1)
        if "encoding_overflow" in text:
            return "UNKNOWN", "encoding overflow"
        if "deadlock" in text:
            return "VIOLATED", "deadlock"
        p = re.search(r"\bp_(\w+)\)*\s*$", text)
        return "VIOLATED", (p.group(1).replace("_", "-") if p else "assertion")
    if "invalid end state" in out and "errors: 1" in out:
        return "VIOLATED", "invalid end state"
    if "max search depth too small" in out or "out of memory" in out.lower():
        return "UNKNOWN", "search incomplete"
    if re.search(r"errors: 0", out):
        return "PROVEN", None
    return "UNKNOWN", "no answer"


def timed(cmd: list[str], timeout: float,
          **kw: object) -> tuple[float, float, Optional[subprocess.CompletedProcess]]:
    """Run ``cmd``: (wall seconds, CPU seconds of it and its children, result; None when
    it ran out of time and was killed).  CPU time is the measure that the load of a
    shared machine disturbs least."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        r: Optional[subprocess.CompletedProcess] = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        r = None  # subprocess.run killed and reaped it: its CPU time is counted below
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return round(wall, 3), round(cpu, 3), r


def run_spin(pml: Path, timeout: float) -> dict:
    """SPIN from ``pml`` to its verdict, once per ``SPIN_CFLAGS`` choice; the row of the
    faster one (wall clock) with the other's times under ``others``."""
    cc = c_compiler()
    runs = []
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(pml, Path(d) / "model.pml")
        a_wall, a_cpu, r = timed(["spin", "-a", "model.pml"], timeout, cwd=d)
        if r is None:
            return {"status": "UNKNOWN", "property": "spin -a timed out", "total_s": a_wall}
        if r.returncode != 0:
            return {"status": "UNKNOWN", "property": f"spin -a failed: {r.stdout[-300:]}"}
        for opt, flags in SPIN_CFLAGS.items():
            runs.append(_cc_pan(d, cc, opt, flags, a_wall, a_cpu, timeout))
            # -O2 only pays where the search, not the compile, takes the time; where
            # -O0 ran out of time it is not tried either (time: see spin.md)
            last = runs[-1]
            if last["status"] == "UNKNOWN" or last.get("pan_s", 0) < max(2.0, last.get("cc_s", 0)):
                break
    best = min(runs, key=lambda x: x.get("total_s", float("inf")))
    others = [{k: x.get(k) for k in ("cflags", "total_s", "total_cpu_s", "pan_s", "status")}
              for x in runs if x is not best]
    return dict(best, others=others)


def _cc_pan(d: str, cc: str, opt: str, flags: list[str], a_wall: float, a_cpu: float,
            timeout: float) -> dict:
    row: dict = {"cflags": opt, "spin_a_s": a_wall, "spin_a_cpu_s": a_cpu}
    left = timeout - a_wall
    exe = f"pan_{opt}"
    out = ""
    for key, cmd in (("cc_s", [cc, *flags, "-o", exe, "pan.c"]),
                     ("pan_s", [f"./{exe}", *PAN_FLAGS])):
        row[key], row[key.replace("_s", "_cpu_s")], r = timed(cmd, max(left, 1), cwd=d)
        if r is None:
            row.update(status="UNKNOWN", property=f"timeout after {timeout:.0f} s",
                       total_s=round(a_wall + row.get("cc_s", 0) + row.get("pan_s", 0), 3),
                       total_cpu_s=round(a_cpu + row.get("cc_cpu_s", 0)
                                         + row.get("pan_cpu_s", 0), 3))
            return row
        left -= row[key]
        if r.returncode != 0 and key == "cc_s":
            row.update(status="UNKNOWN", property=f"cc failed: {r.stderr[-300:]}")
            return row
        out = r.stdout + r.stderr
    row["total_s"] = round(a_wall + row["cc_s"] + row["pan_s"], 3)
    row["total_cpu_s"] = round(a_cpu + row["cc_cpu_s"] + row["pan_cpu_s"], 3)
    row["status"], row["property"] = spin_verdict(out)
    m = re.search(r"(\d+) states, stored", out)
    row["states"] = int(m.group(1)) if m else None
    m = re.search(r"depth reached (\d+)", out)
    row["depth"] = int(m.group(1)) if m else None
    m = re.search(r"State-vector (\d+) byte", out)
    row["state_vector_bytes"] = int(m.group(1)) if m else None
    m = re.search(r"pan: elapsed time ([0-9.e+-]+) seconds", out)
    row["pan_search_s"] = float(m.group(1)) if m else None
    return row


#: the environment of pipeproof's runs (``python_env``)
PY_ENV: dict[str, str] = {}


def python_env(bytecode: bool) -> dict[str, str]:
    """pipeproof's environment: with ``bytecode`` Python reads and writes its bytecode
    cache (in a folder of this run's, as an installed package has it after ``pip
    install``), else it compiles every module from source at each start
    (``PYTHONDONTWRITEBYTECODE=1`` and no cache, as in the session this bench was first
    run in)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="bench_spin_pyc_")
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_pipeproof(path: Path, params: dict[str, int], engine: str, timeout: float) -> dict:
    cmd = [sys.executable, "-c", "import sys; from pipeproof.cli import main; sys.exit(main())",
           "check", str(path), "--json", "-q",
           "--engine", engine, "--timeout", str(int(timeout))]
    for k, v in params.items():
        cmd += ["-p", f"{k}={v}"]
    env = dict(PY_ENV or os.environ)
    with tempfile.TemporaryDirectory() as cache:
        env["PIPEPROOF_NATIVE_CACHE"] = cache  # compile counted, as SPIN's cc is
        total, cpu, r = timed(cmd, timeout + 60, env=env)
        if r is None:
            return {"status": "UNKNOWN", "property": "killed", "total_s": total, "cpu_s": cpu}
    try:
        d = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"status": "ERROR", "property": (r.stderr or r.stdout)[-300:], "total_s": total}
    st = d.get("stats", {})
    return {"status": d.get("status"), "property": d.get("property") or d.get("reason"),
            "total_s": total, "cpu_s": cpu, "states": st.get("states"),
            "engine_used": st.get("engine"),
            "exit": r.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--only", default="", help="comma-separated names (prefixes) of entries")
    ap.add_argument("--engines", default="auto,explicit,native")
    ap.add_argument("--out", default="spin")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite results/OUT.md from results/OUT.json")
    ap.add_argument("--before", default=None, metavar="JSON",
                    help="an earlier run's results (e.g. bench/results/spin_before.json): "
                         "its ratios go beside the new ones")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="pipeproof without Python's bytecode cache (python_env)")
    args = ap.parse_args()
    before = json.loads(Path(args.before).read_text())["rows"] if args.before else None
    if args.render:
        d = json.loads((RESULTS / f"{args.out}.json").read_text())
        md = RESULTS / f"{args.out}.md"
        # the analysis written by hand below the table stays
        old = md.read_text() if md.exists() else ""
        tail = old[old.index(ANALYSIS):] if ANALYSIS in old else ""
        md.write_text(render(d["meta"], d["rows"], engines_of(d), before)
                      + ("\n" + tail if tail else ""))
        return 0
    why = missing_tools()
    if why:
        print(why, file=sys.stderr)
        return 2
    engines = [e for e in args.engines.split(",") if e]
    only = [o for o in args.only.split(",") if o]
    entries = [b for b in BENCH if not only or any(b[0].startswith(o) for o in only)]
    spin_version = subprocess.run(["spin", "-V"], capture_output=True, text=True).stdout.strip()
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "timeout": args.timeout, "spin": spin_version,
            "cc": c_compiler(), "spin_cflags": SPIN_CFLAGS, "pan_flags": PAN_FLAGS,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "uptime_start": uptime(), "python_bytecode": not args.no_bytecode}
    PY_ENV.update(python_env(not args.no_bytecode))
    # untimed: fills Python's bytecode cache and the parser's tables (both kept across
    # runs on a user's machine; the native engine's C is compiled afresh in every run)
    subprocess.run([sys.executable, "-c", "import sys; from pipeproof.cli import main; "
                    "sys.exit(main())", "check", str(ROOT / BENCH[0][1]), "-q",
                    "--engine", "explicit"], env=PY_ENV, capture_output=True)
    rows = []
    for name, rel, params in entries:
        path = ROOT / rel
        pml = PML / f"{name}.pml"
        row = {"name": name, "file": rel, "params": params,
               "load": round(os.getloadavg()[0], 1)}
        row.update(prepare(name, path, params, pml))
        row["spin"] = run_spin(pml, args.timeout)
        for e in engines:
            row[e] = run_pipeproof(path, params, e, args.timeout)
            s = row["spin"].get("total_s")
            row[e]["ratio"] = round(row[e]["total_s"] / s, 2) if s else None
            c = row["spin"].get("total_cpu_s")
            row[e]["cpu_ratio"] = (round(row[e]["cpu_s"] / c, 2)
                                   if c and row[e].get("cpu_s") is not None else None)
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta["uptime_end"] = uptime()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                         indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(render(meta, rows, engines, before))
    return 0


def uptime() -> str:
    """``uptime``'s line (the load of the shared machine), or the load averages."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def engines_of(d: dict) -> list[str]:
    return [e for e in ("auto", "explicit", "native") if d["rows"] and e in d["rows"][0]]


#: the heading of the analysis written by hand below the generated table
ANALYSIS = "## What the run shows"

METHOD = """\
# SPIN as the yardstick (issue 26 item 5)

Recorded by `python bench/bench_spin.py --timeout {timeout:.0f}` ({date}, {cpus} CPUs shared
with other work: the 1-minute load average at the start of each row is in its first cell;
`uptime` at the start: `{up0}`, at the end: `{up1}`).

* **Same model.** The Promela (`bench/spin/*.pml`) is printed by `bench/spin_promela.py` from
  the transition templates of pipeproof's one semantics (the ones the native engine compiles
  to C), so SPIN explores exactly the state space of pipeproof's explicit engine *without
  reductions*: "unreduced states" is that count (the native engine's breadth-first search,
  stopped at 1,000,000 states or at the shortest violation's depth), and where SPIN searches to the end it stores the same number of states
  (checked by `tests/test_spin_bench.py`).  Every pipeproof check is an `assert`, deadlock a
  `timeout` watcher.  No second rendering of the PTX rules is involved.
* **SPIN's time to verdict** = `spin -a` + `cc` + `./pan` from the .pml ({spin}; pan
  `{pan}`).  `cc` is the better of {cfl}
  (-O2 is tried only where the -O0 search took over 2 s and longer than its compile, and
  not where -O0 ran out of time).  Preparing the Promela is not counted.  SPIN's partial-order reduction is on (its default) but finds nothing to
  reduce: every statement reads or writes global variables.
* **pipeproof's time to verdict** = `pipeproof check FILE -p ... --json` as a user runs it,
  from the .pipe file (parsing, compiling, engine start-up and search), per engine; the
  native engine with an empty compile cache.  Python's bytecode cache: {bytecode}.  The
  parser's LALR tables come from their cache (`~/.cache/pipeproof/parser`, filled by an
  untimed run before the first row, as by a user's first check).  auto and explicit use pipeproof's reductions
  (partial-order, warp symmetry); native uses warp symmetry only.  auto's "0 states": its BMC
  engine answered first (no explicit states counted).
* **Ratio** = pipeproof seconds / SPIN seconds (wall clock; below 1: pipeproof answered
  first).  CPU ratios (the process and its children, less disturbed by the load) are in
  `spin.json`.  A row where SPIN gives no verdict within the timeout counts as pipeproof no
  worse when pipeproof gives one.
"""


def _v(r: dict) -> str:
    s = r.get("status") or "?"
    p = r.get("property")
    return f"{s} {p}" if p and s == "VIOLATED" else s


def render(meta: dict, rows: list[dict], engines: list[str],
           before: Optional[list[dict]] = None) -> str:
    """The Markdown table (the analysis text around it is kept by hand in spin.md);
    ``before``: an earlier run's rows, whose ratios get a column beside the new ones."""
    prev = {r["name"]: r for r in before or []}
    head = ["entry", "unreduced states", "SPIN states", "SPIN verdict", "SPIN s (a+cc+pan)"]
    for e in engines:
        head += [f"{e} verdict", f"{e} states", f"{e} s", f"{e}/SPIN"]
        if before is not None:
            head += [f"{e}/SPIN before"]
    cfl = " or ".join(f"`{' '.join(f)}`" for f in meta["spin_cflags"].values())
    bc = meta.get("python_bytecode")
    bytecode = ("on (modules compiled once, as after `pip install`)" if bc else
                "off (`PYTHONDONTWRITEBYTECODE=1`: every module compiled at each start)"
                if bc is False else "off (PYTHONDONTWRITEBYTECODE=1 in the session's "
                "environment)")
    lines = [METHOD.format(timeout=meta["timeout"], date=meta["date"], cpus=meta["cpus"],
                           spin=meta["spin"], pan=" ".join(meta["pan_flags"]), cfl=cfl,
                           bytecode=bytecode, up0=meta.get("uptime_start", "-"),
                           up1=meta.get("uptime_end", "-"))
             + (f"\n{meta['note']}\n" if meta.get("note") else ""),
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s = r["spin"]
        stop = ("" if r["unreduced_complete"] else " (to a violation)"
                if s.get("status") == "VIOLATED" else " (stopped)")
        cells = [f"{r['name']} (load {r['load']})", f"{r['unreduced_states']:,}" + stop,
                 f"{s.get('states') or 0:,}", _v(s),
                 f"{s.get('total_s', 0):.2f} ({s.get('spin_a_s', 0):.2f}+{s.get('cc_s', 0):.2f}"
                 f"+{s.get('pan_s', 0):.2f}, {s.get('cflags', '-')})"]
        for e in engines:
            x = r[e]
            cells += [_v(x), f"{x.get('states') or 0:,}", f"{x.get('total_s', 0):.2f}",
                      f"{x['ratio']:.2f}" if x.get("ratio") is not None else "-"]
            if before is not None:
                y = prev.get(r["name"], {}).get(e, {})
                cells += [f"{y['ratio']:.2f}" if y.get("ratio") is not None else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Time to verdict no worse than SPIN's (the acceptance asks for 80% of the set):")
    lines.append("")
    for e in engines:
        for key, what in (("total_s", "wall clock"), ("cpu_s", "CPU time")):
            ok = [r for r in rows if no_worse(r, e, key)]
            was = ""
            if before is not None:
                old = [r for r in before if e in r and no_worse(r, e, key)]
                was = (f"; before: {len(old)} of {len(before)} "
                       f"({100 * len(old) / max(len(before), 1):.0f}%)")
            lines.append(f"* `--engine {e}`, {what}: {len(ok)} of {len(rows)} entries "
                         f"({100 * len(ok) / max(len(rows), 1):.0f}%){was}")
    return "\n".join(lines) + "\n"


def no_worse(r: dict, e: str, key: str) -> bool:
    """pipeproof's engine ``e`` gave a verdict no later than SPIN did (``key``: total_s
    for wall clock, cpu_s for CPU time); SPIN without a verdict loses to one."""
    x, s = r[e], r["spin"]
    if x.get("status") not in ("PROVEN", "SAFE", "VIOLATED"):
        return False
    if s.get("status") not in ("PROVEN", "SAFE", "VIOLATED"):
        return True
    skey = "total_s" if key == "total_s" else "total_cpu_s"
    return x.get(key) is not None and s.get(skey) is not None and x[key] <= s[skey]


if __name__ == "__main__":
    sys.exit(main())
