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
    python bench/bench_gpu.py report DIR OUT [OUT ...]   # here: bench/results/gpu_bench.*

Several OUT folders (runner commands back to back in one device call): every figure is the
median over them.
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
            if d.get("copy_match_ms"):
                # the copy of the same size: same launch and ramp-up costs
                cm = statistics.median(d["copy_match_ms"])
                same = 2 * d["copy_match_bytes"] / (cm * 1e-3) / 1e12
                res["bandwidth"][short].update(copy_same_ms_median=cm, copy_same_tb_s=same,
                                               ratio_same=bw / same)
    _marginal(res)
    for kind in ("async", "tma"):
        for s in (1, 4):
            off = res["latency"].get(f"lat_{kind}_s{s}_off")
            on = res["latency"].get(f"lat_{kind}_s{s}_on")
            if off and on:
                on["tracing_overhead"] = on["ns_per_ktile"] / off["ns_per_ktile"]
    res["device"] = device
    return res


def report_runs(jobs_dir: str, out_dirs: list[str]) -> dict:
    """The median of every figure over several runs of the same jobs."""
    runs = [report(jobs_dir, o) for o in out_dirs]
    if len(runs) == 1:
        return runs[0]
    res: dict = {"runs": len(runs), "device": ", ".join(sorted({r["device"] for r in runs})),
                 "latency": {}, "bandwidth": {}}
    for part in ("latency", "bandwidth"):
        for name, first in runs[0][part].items():
            same = [r[part][name] for r in runs if name in r[part]]
            row = dict(first)
            for k, v in first.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and \
                        all(isinstance(s.get(k), (int, float)) for s in same):
                    row[k] = statistics.median(s[k] for s in same)
            if part == "bandwidth":
                row["ratio_per_run"] = [s["ratio"] for s in same]
            res[part][name] = row
    _marginal(res)
    per_run = [r["streaming_marginal"]["ratio"] for r in runs if "streaming_marginal" in r]
    if "streaming_marginal" in res:
        res["streaming_marginal"]["ratio_per_run"] = per_run
    return res


def _marginal(res: dict) -> None:
    """Sustained streaming of the 4-stage 16 KB pipeline: the extra bytes of 512 over 128
    k-tiles by the extra time (launch, ramp-up and tail cancel, as in the latency figures),
    against the 1 GiB copy's bandwidth."""
    bw = res["bandwidth"]
    a, b = bw.get("bw_tma_s4_t16k"), bw.get("bw_tma_s4_t16k_k512")
    if not (a and b) or a["clusters"] != b["clusters"] or b["ms_median"] <= a["ms_median"]:
        return
    tb = (b["bytes"] - a["bytes"]) / ((b["ms_median"] - a["ms_median"]) * 1e-3) / 1e12
    copy = (a["copy_tb_s"] + b["copy_tb_s"]) / 2
    res["streaming_marginal"] = {"of": ["bw_tma_s4_t16k", "bw_tma_s4_t16k_k512"],
                                 "tb_s": tb, "copy_tb_s": copy, "ratio": tb / copy}


def markdown(res: dict) -> str:
    lines = [f"GPU: {res.get('device', '?')}" + (f"; every figure the median of {res['runs']} "
                                                 "runner commands back to back"
                                                 if res.get("runs") else ""), "",
             "variant: off/on = structured, watchdog and stamps, tracing off/on; bare = "
             "structured, no instrumentation; bareu = bare unrolled; bare64k = bare, 65536 "
             "k-tiles", "",
             "| kernel | stages | variant | ns per k-tile | x untraced |", "|---|---|---|---|---|"]
    for k, v in sorted(res["latency"].items()):
        kind, s, t = k.split("_")[1:]
        lines.append(f"| {kind} | {s[1:]} | {t} | {v['ns_per_ktile']:.0f} | "
                     f"{v.get('tracing_overhead', 1.0):.2f} |")
    lines += ["", "copy TB/s: `cuMemcpyDtoD` of 1 GiB (bytes read + written); same-size copy: "
              "as many bytes read + written as the pipeline loads, so it pays the same launch "
              "and ramp-up", "",
              "| TMA pipeline | clusters | GB loaded | ms | TB/s | copy TB/s (r+w) | ratio | "
              "same-size copy TB/s | ratio to it |" + (" ratio per run |" if res.get("runs")
                                                      else ""),
              "|---|---|---|---|---|---|---|---|---|" + ("---|" if res.get("runs") else "")]
    for k, v in sorted(res["bandwidth"].items()):
        same = (f"{v['copy_same_tb_s']:.2f} | {100 * v['ratio_same']:.1f}%"
                if "ratio_same" in v else "- | -")
        lines.append(f"| {k} | {int(v['clusters'])} | {v['bytes'] / 1e9:.2f} | {v['ms_median']:.3f} | "
                     f"{v['tb_s']:.2f} | {v['copy_tb_s']:.2f} | {100 * v['ratio']:.1f}% | "
                     f"{same} |" + (" " + ", ".join(f"{100 * x:.1f}%" for x in
                                                   v.get("ratio_per_run", [])) + " |"
                                    if res.get("runs") else ""))
    m = res.get("streaming_marginal")
    if m:
        lines += ["", f"Sustained streaming, 4 stages of 16 KB ({m['of'][1]} minus {m['of'][0]}: "
                  f"extra bytes / extra time): {m['tb_s']:.2f} TB/s, {100 * m['ratio']:.1f}% "
                  f"of the 1 GiB copy's {m['copy_tb_s']:.2f} TB/s"
                  + (" (per run: " + ", ".join(f"{100 * x:.1f}%" for x in m["ratio_per_run"])
                     + ")" if m.get("ratio_per_run") else "") + "."]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "prepare":
        prepare(argv[1])
        return 0
    if len(argv) >= 3 and argv[0] == "report":
        res = report_runs(argv[1], argv[2:])
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
