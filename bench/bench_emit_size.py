"""Code size and ``ptxas`` time of emitted kernels against the trip count (issue 25).

For each benchmark kernel (``bench_gpu_async.pipe``: PipelineAsync, ``bench_gpu_tma.pipe``:
PipelineTmaAsync) and ``k_tiles`` in 1 .. 10**6: emit time, PTX lines, ``ptxas
-arch=sm_90a`` (default -O3) time and cubin size, for the structured emitter (the
default: ``for k in range(k_tiles)`` stays a loop, ``k_tiles`` a kernel argument) and,
for small trip counts only, the unrolled one (``--unrolled``; its size grows with
``k_tiles`` and ptxas time with it, so large values are left out).

    python bench/bench_emit_size.py [--quick] [--unrolled-max=K]   # bench/results/emit_size.*

Needs ``ptxas`` (CUDA toolkit); exits 2 without it.  Timings depend on the machine and
its load; the sizes do not.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
KERNELS = {"async": ("bench/bench_gpu_async.pipe", {"stages": 4}),
           "tma": ("bench/bench_gpu_tma.pipe", {"stages": 4, "tile_bytes": 1024})}
STRUCTURED_K = (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)
UNROLLED_K = (1, 16, 64, 256)
#: (name, trace and jitter, watchdog and stamps, largest unrolled k_tiles): ``bare`` is the
#: benchmark kernel (synchronisation only), ``checks`` adds the watchdog and data stamps,
#: ``trace`` the trace records and jitter too (unrolled 256 k-tiles: minutes of ptxas)
MODES = (("bare", False, False, 256), ("checks", False, True, 256), ("trace", True, True, 64))
#: the stage sweep (structured, ``k_tiles`` 1000): with the PipelineState in registers
#: (``impl/fold.py``) the PTX does not grow with the stage count either
STAGES = (1, 2, 8, 32)


def measure(file: str, params: dict, structured: bool, trace: bool, checks: bool,
            tmp: str) -> dict:
    from pipeproof.impl.emit import EmitOptions, emit_file

    t0 = time.perf_counter()
    em = emit_file(str(ROOT / file), params,
                   EmitOptions("sm_90a", trace=trace, jitter=trace, checks=checks,
                               structured=structured, fold=True))
    t_emit = time.perf_counter() - t0
    ptx = os.path.join(tmp, "k.ptx")
    cubin = ptx + ".cubin"
    Path(ptx).write_text(em.ptx)
    t0 = time.perf_counter()
    r = subprocess.run(["ptxas", "-arch=sm_90a", ptx, "-o", cubin], capture_output=True,
                       text=True)
    t_ptxas = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(r.stderr[:1000])
    return {"k_tiles": params["k_tiles"], "compiled": em.manifest.compiled,
            "note": em.note, "trace": trace, "checks": checks,
            "stages": params["stages"],
            "folded": sum(1 for v in em.folds.values() if not v.startswith("copies kept")),
            "looping": len(em.folds),
            "ptx_lines": len(em.ptx.splitlines()),
            "ptx_sha1": hashlib.sha1(em.ptx.encode()).hexdigest()[:12],
            "emit_s": round(t_emit, 3), "ptxas_s": round(t_ptxas, 3),
            "cubin_bytes": os.path.getsize(cubin)}


def run(quick: bool = False, unrolled_max: int = UNROLLED_K[-1]) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (file, base) in KERNELS.items():
            for mode, trace, checks, umax in MODES:
                for structured, ks in ((True, STRUCTURED_K), (False, UNROLLED_K)):
                    for k in (ks[:3] if quick else ks):
                        if not structured and k > min(umax, unrolled_max):
                            continue
                        row = measure(file, dict(base, k_tiles=k), structured, trace, checks,
                                      tmp)
                        row["kernel"] = name
                        row["mode"] = mode
                        row["emitter"] = "structured" if structured else "unrolled"
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                        _write(rows)  # a long ptxas run must not lose the rows before it
            for mode, trace, checks, _ in MODES:
                for st in STAGES[:2] if quick else STAGES:
                    if st == base["stages"]:
                        continue
                    row = measure(file, dict(base, stages=st, k_tiles=1000), True, trace,
                                  checks, tmp)
                    row.update(kernel=name, mode=mode, emitter="structured")
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    _write(rows)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["ptxas -arch=sm_90a (-O3), on the shared 2-core development machine "
             "(times vary with its load; sizes do not). Modes: `bare` = synchronisation only "
             "(`--no-trace --no-jitter --no-checks`), `checks` = + watchdog and data stamps, "
             "`trace` = + trace records and jitter. `folded`: looping warps whose loop keeps "
             "the PipelineState in registers (`impl/fold.py`) / looping warps.", "",
             "| kernel | emitter | mode | stages | k_tiles | folded | PTX lines | PTX sha1 | "
             "ptxas s | cubin B |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['emitter']} ({r['compiled']}) | "
                     f"{r['mode']} | {r.get('stages', 4)} | {r['k_tiles']:,} | "
                     f"{r.get('folded', 0)}/{r.get('looping', 0)} | {r['ptx_lines']:,} | "
                     f"{r['ptx_sha1']} | {r['ptxas_s']:.2f} | {r['cubin_bytes']:,} |")
    return "\n".join(lines)


def _write(rows: list[dict]) -> str:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "emit_size.json").write_text(json.dumps(rows, indent=1))
    md = markdown(rows)
    (RESULTS / "emit_size.md").write_text(md + "\n")
    return md


def main(argv: list[str]) -> int:
    if shutil.which("ptxas") is None:
        print("bench_emit_size: ptxas (CUDA toolkit) not found", file=sys.stderr)
        return 2
    umax = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--unrolled-max=")),
                UNROLLED_K[-1])
    print(_write(run("--quick" in argv, umax)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
