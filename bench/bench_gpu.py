"""GPU benchmark of emitted pipelines (issue 4): hand-off latency and streaming bandwidth.

* **Hand-off latency**: ``bench_gpu_async.pipe`` (PipelineAsync) and ``bench_gpu_tma.pipe``
  (PipelineTmaAsync, 1 KB tiles), one cluster of one CTA, 256 k-tiles, 1 or 4 stages,
  tracing off and on (no jitter), structured emission (``impl/structured.py``); ``bare``:
  no trace, watchdog or stamps (CUTLASS-shaped waits and arrivals: the number to compare
  with a CuTe DSL kernel), ``bareu`` the same unrolled, ``bare64k`` with 65536 k-tiles
  (``impl/gpu_batch.py`` ``LATENCY_VARIANTS``).  Per k-tile time = (last warp end - first warp start)
  / 256, from ``%globaltimer`` in the kernel; with 1 stage every k-tile is a full round
  trip (producer -> consumer -> producer: two hand-offs).
* **Streaming bandwidth**: ``bench_gpu_tma.pipe`` with 16/32 KB tiles and 2-6 stages on as
  many clusters as fit (occupancy), every TMA load reading its own global region; timed
  with CUDA events (median of 10 launches), against ``cuMemcpyDtoD`` of 1 GiB in the same
  process (counted as bytes read + bytes written, the usual convention; the pipeline
  counts the bytes it loads).

    python bench/bench_gpu.py prepare DIR        # here: emit, assemble, write jobs
    python3 impl/gpu_runner.py DIR OUT           # on the GPU machine
    python bench/bench_gpu.py report DIR OUT     # here: bench/results/gpu_bench.{json,md}
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def prepare(jobs_dir: str) -> None:
    from pipeproof.impl.conform import write_index
    from pipeproof.impl.gpu_batch import bench_jobs

    Path(jobs_dir).mkdir(parents=True, exist_ok=True)
    write_index(jobs_dir, bench_jobs(jobs_dir), budget_s=300)


def _kernel_ns(timing: list) -> int:
    st = [timing[i] for i in range(0, len(timing), 2) if timing[i]]
    en = [timing[i + 1] for i in range(0, len(timing), 2) if timing[i + 1]]
    return (max(en) - min(st)) if st and en else 0


def report(jobs_dir: str, out_dir: str) -> dict:
    from pipeproof.impl.gpu_batch import bench_specs

    specs = {name: (f, params) for name, f, params, _t, _e in bench_specs()}
    res: dict = {"latency": {}, "bandwidth": {}}
    device = ""
    for name, (f, params) in specs.items():
        p = Path(out_dir, name + ".json")
        if not p.exists():
            continue
        d = json.loads(p.read_text())
        device = d.get("device", device)
        if d.get("status") != "ok":
            res.setdefault("errors", {})[name] = d.get("status")
            continue
        ms = statistics.median(d["ms"])
        short = name.split("__", 1)[1]
        if short.startswith("lat_"):
            ns = _kernel_ns(d["timing"])
            res["latency"][short] = {"file": f, "params": params,
                                     "ns_per_ktile": ns / params["k_tiles"],
                                     "kernel_us": ns / 1000, "event_ms_median": ms,
                                     "events": d.get("events"),
                                     "stamp_errors": d.get("ctrl_errors")}
        else:
            nbytes = d["clusters"] * params["k_tiles"] * params["tile_bytes"]
            copy_ms = statistics.median(d["copy_ms"])
            copy_bw = 2 * d["copy_bytes"] / (copy_ms * 1e-3) / 1e12
            bw = nbytes / (ms * 1e-3) / 1e12
            res["bandwidth"][short] = {"file": f, "params": params, "clusters": d["clusters"],
                                       "bytes": nbytes, "ms_median": ms, "tb_s": bw,
                                       "copy_ms_median": copy_ms, "copy_tb_s": copy_bw,
                                       "ratio": bw / copy_bw,
                                       "kernel_us": _kernel_ns(d["timing"]) / 1000,
                                       "stamp_errors": d.get("ctrl_errors")}
    for kind in ("async", "tma"):
        for s in (1, 4):
            off = res["latency"].get(f"lat_{kind}_s{s}_off")
            on = res["latency"].get(f"lat_{kind}_s{s}_on")
            if off and on:
                on["tracing_overhead"] = on["ns_per_ktile"] / off["ns_per_ktile"]
    res["device"] = device
    return res


def markdown(res: dict) -> str:
    lines = [f"GPU: {res.get('device', '?')}", "",
             "variant: off/on = structured, watchdog and stamps, tracing off/on; bare = "
             "structured, no instrumentation; bareu = bare unrolled; bare64k = bare, 65536 "
             "k-tiles", "",
             "| kernel | stages | variant | ns per k-tile | x untraced |", "|---|---|---|---|---|"]
    for k, v in sorted(res["latency"].items()):
        kind, s, t = k.split("_")[1:]
        lines.append(f"| {kind} | {s[1:]} | {t} | {v['ns_per_ktile']:.0f} | "
                     f"{v.get('tracing_overhead', 1.0):.2f} |")
    lines += ["", "| TMA pipeline | clusters | GB loaded | ms | TB/s | copy TB/s (r+w) | ratio |",
              "|---|---|---|---|---|---|---|"]
    for k, v in sorted(res["bandwidth"].items()):
        lines.append(f"| {k} | {v['clusters']} | {v['bytes'] / 1e9:.2f} | {v['ms_median']:.3f} | "
                     f"{v['tb_s']:.2f} | {v['copy_tb_s']:.2f} | {100 * v['ratio']:.1f}% |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "prepare":
        prepare(argv[1])
        return 0
    if len(argv) >= 3 and argv[0] == "report":
        res = report(argv[1], argv[2])
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "gpu_bench.json").write_text(json.dumps(res, indent=1))
        md = markdown(res)
        (RESULTS / "gpu_bench.md").write_text(md + "\n")
        print(md)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
