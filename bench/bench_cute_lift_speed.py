"""How long lifting takes after the DSL's own compile, and how long deciding takes, on
NVIDIA's public CuTe DSL examples (issue 21's speed acceptance: a lift under 10 s; a 1x1
and a 2x1 Hopper persistent GEMM decided under 60 s each on the 2-core machine).

    python bench/bench_cute_lift_speed.py SRC_DIR [--timeout S]

``SRC_DIR`` as for ``bench_cute_examples.py``.  Each configuration is compiled and
captured once (``compile``), then lifted (``lift``: reading the module, interpreting
every warp, emitting the programs) and checked with the default engine, with and
without data races.  Wall-clock and CPU seconds of this process are both given: on a
shared machine the CPU time is the steadier number.  Writes
``bench/results/cute_lift_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_cute_examples as examples  # noqa: E402


def measure(name: str, entry, arch: str, timeout: float) -> list[tuple]:
    from pipeproof.api import check_compiled
    from pipeproof.frontend.cute import lift_text
    from pipeproof.frontend.cute.capture import prepare_environment
    from pipeproof.frontend.cute.entry import call_entry

    prepare_environment(arch)
    w0, c0 = time.perf_counter(), time.process_time()
    cap = call_entry(entry, {}, arch, "<bench>")
    compile_s = (time.perf_counter() - w0, time.process_time() - c0)
    rows = []
    for races in (True, False):
        w0, c0 = time.perf_counter(), time.process_time()
        ck, _ = lift_text(cap.text, name, {}, "<bench>", cap.dsl_version,
                          data_races=races, scalars=cap.scalars)
        lift_s = (time.perf_counter() - w0, time.process_time() - c0)
        w0, c0 = time.perf_counter(), time.process_time()
        r = check_compiled(ck, jobs=1, timeout=timeout)
        check_s = (time.perf_counter() - w0, time.process_time() - c0)
        rows.append((name + ("" if races else ", --data-races off"), compile_s, lift_s,
                     r.verdict.headline(), check_s, r.verdict.stats.states))
        print(rows[-1], flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "cute_lift_speed.md"))
    args = ap.parse_args()
    examples._stub_torch()
    src = os.path.abspath(args.src)
    import cutlass

    from pipeproof import __version__

    configs = [
        ("hopper dense_gemm_persistent 1x1, 2 k-tiles, 1 tile", "sm_90a",
         examples.hopper_persistent(src, 1, 1, 2, 1)),
        ("hopper dense_gemm_persistent 2x1, 2 k-tiles, 1 tile", "sm_90a",
         examples.hopper_persistent(src, 2, 1, 2, 1)),
        ("hopper fmha, s_q 128, s_k 256, d 64", "sm_90a", examples.hopper_fmha(src, 128, 256)),
    ]
    rows = [row for name, arch, entry in configs
            for row in measure(name, entry, arch, args.timeout)]
    fmt = lambda ws: f"{ws[0]:.1f} ({ws[1]:.1f})"  # noqa: E731
    with open(args.out, "w") as f:
        f.write("# Lift and decide times, NVIDIA's CuTe DSL examples\n\n")
        f.write(f"pipeproof {__version__}, nvidia-cutlass-dsl {cutlass.__version__}, "
                f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs (shared with other "
                f"jobs), default engine, --timeout {args.timeout:g}; "
                "`bench/bench_cute_lift_speed.py`. Seconds as wall clock (CPU time of this "
                "process).\n\n")
        f.write("| configuration | compile (s) | lift (s) | verdict | check (s) | states |\n")
        f.write("|---|---|---|---|---|---|\n")
        for name, cs, ls, verdict, ks, states in rows:
            f.write(f"| {name} | {fmt(cs)} | {fmt(ls)} | {verdict} | {fmt(ks)} | "
                    f"{states:,} |\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
