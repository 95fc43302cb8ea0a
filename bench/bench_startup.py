"""pipeproof's start-up floor: wall and CPU time of ``pipeproof check FILE`` on a small
example, per engine, as a user runs it -- with Python's bytecode cache (as after
``pip install``) and without (``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__``, as
in a fresh source checkout whose bytecode cannot be written).

Each configuration runs ``--runs`` times, interleaved, after one untimed run (which
fills the bytecode and parser caches); the minimum and the median are recorded (the
minimum is the floor, the median what a loaded machine gives).  One JSON line per
configuration is appended to ``bench/results/startup.jsonl`` with ``--label`` (for
example the commit measured), so that runs before and after a change sit side by side.

    python bench/bench_startup.py --label after [--runs 7] [--file examples/...pipe]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_spin import timed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--file", default="examples/textbook/pipeline_async.pipe")
    ap.add_argument("--engines", default="auto,explicit")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "startup.jsonl"))
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    pyc = tempfile.mkdtemp(prefix="pp_pyc_")
    envs = {}
    base = {k: v for k, v in os.environ.items()
            if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    envs["bytecode"] = dict(base, PYTHONPYCACHEPREFIX=pyc)
    envs["no-bytecode"] = dict(base, PYTHONDONTWRITEBYTECODE="1",
                               PYTHONPYCACHEPREFIX=tempfile.mkdtemp(prefix="pp_nopyc_"))
    configs = [(e, b) for e in args.engines.split(",") for b in envs]
    cmd0 = [sys.executable, "-c", "import sys; from pipeproof.cli import main; "
            "sys.exit(main())", "check", str(ROOT / args.file), "-q", "--json"]
    times: dict[tuple[str, str], list[tuple[float, float]]] = {c: [] for c in configs}
    verdicts: dict[tuple[str, str], set[str]] = {c: set() for c in configs}
    for e, b in configs:  # untimed: fills the caches
        timed(cmd0 + ["--engine", e], 300, env=envs[b])
    load = os.getloadavg()
    for _ in range(args.runs):
        for e, b in configs:
            wall, cpu, r = timed(cmd0 + ["--engine", e], 300, env=envs[b])
            times[(e, b)].append((wall, cpu))
            try:
                d = json.loads(r.stdout) if r is not None else {}
            except json.JSONDecodeError:
                d = {}
            verdicts[(e, b)].add(f"{d.get('status')} by {d.get('stats', {}).get('engine')}")
    with open(args.out, "a") as f:
        for c in configs:
            walls = [w for w, _ in times[c]]
            cpus = [u for _, u in times[c]]
            row = {"label": args.label, "commit": commit, "file": args.file,
                   "engine": c[0], "python": c[1], "runs": args.runs,
                   "wall_min": min(walls), "wall_median": statistics.median(walls),
                   "cpu_min": min(cpus), "cpu_median": statistics.median(cpus),
                   "verdicts": sorted(verdicts[c]), "load_before": [round(x, 1) for x in load],
                   "load_after": [round(x, 1) for x in os.getloadavg()],
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
