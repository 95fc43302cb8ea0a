"""``pipeproof conform KERNEL.py::entry``: GPU conformance of a real CuTe DSL kernel
(``impl/cute_conform.py``), on one machine or split across two:

    pipeproof conform kernel.py::entry --runs 200            # here: DSL, nvcc and a GPU
    pipeproof conform kernel.py::entry --workdir J --prepare-only   # the DSL's machine
    J/run.sh OUT                                              # the GPU machine
    pipeproof conform --judge J --results OUT                # anywhere with pipeproof
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile

from ..model.errors import ConfigError


def _gpu_reason() -> str:
    """'' when this machine can build and run a job, else why not."""
    if shutil.which("nvcc") is None:
        return "nvcc is not on PATH (the harness is built with it)"
    from .conform import gpu_available

    return gpu_available()


def cmd_conform_cute(args: argparse.Namespace) -> int:
    from .conform import exit_code, render_report
    from .cute_conform import judge, prepare, run_local

    if args.mutant:
        raise ConfigError("--mutant applies to .pipe kernels; plant the fault in your "
                          "CuTe DSL source (or an entry parameter) instead")
    if args.judge:
        results = args.results or os.path.join(args.judge, "results")
        if not os.path.isfile(os.path.join(args.judge, "job.json")):
            raise ConfigError(f"--judge {args.judge}: no job.json there (not a folder "
                              "written by --prepare-only)")
        if not os.path.isdir(results):
            raise ConfigError(f"--judge: no results folder {results}",
                              hint=f"run {os.path.join(args.judge, 'run.sh')} OUT on the GPU "
                                   "machine and pass --results OUT")
        return _report(judge(args.judge, results), args, render_report, exit_code)
    from ..params import parse_params as _parse_params

    if args.runs < 1:
        raise ConfigError(f"--runs must be at least 1, not {args.runs}")
    timeout = 5000.0 if args.timeout_ms is None else args.timeout_ms
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ConfigError(f"--timeout-ms must be a finite positive number, not {timeout:g}")
    params = _parse_params(args.param or [])
    for k, v in params.items():
        if isinstance(v, range):
            raise ConfigError(f"--param {k}: a GPU run is for one value")
    why = "" if args.prepare_only else _gpu_reason()
    if not why and not args.prepare_only and args.arch != "sm_90a":
        why = f"--arch {args.arch} kernels wait for a Blackwell GPU (sm_100a)"
    work = args.workdir or tempfile.mkdtemp(prefix="pipeproof-conform-")
    p = prepare(args.file, params, work, arch=args.arch, runs=args.runs,
                jitter=0 if args.no_jitter else 0x3FF0040, timeout_ms=timeout)
    where = os.path.join(work, "run.sh")
    if args.prepare_only or why:
        msg = (f"prepared {work}: {p.sites} traced ops, {p.clusters} cluster(s); "
               f"run `{where} OUT` on a GPU machine (nvcc and an NVIDIA GPU; no DSL "
               f"needed), then `pipeproof conform --judge {work} --results OUT`")
        if why:
            msg = f"pipeproof conform: no GPU run possible here: {why}\n{msg}"
        if args.json:
            print(json.dumps({"status": "UNKNOWN" if why else "PREPARED", "reason": msg,
                              "workdir": work}))
        else:
            print(msg, file=sys.stderr if why else sys.stdout)
        return 3 if why else 0
    out = os.path.join(work, "results")
    run_local(work, out, args.runs)
    return _report(judge(work, out), args, render_report, exit_code)


def _report(rep, args, render_report, exit_code) -> int:  # type: ignore[no-untyped-def]
    if args.json:
        print(json.dumps(rep.to_json(), indent=2))
    else:
        print(render_report(rep))
    if rep.runner_status.startswith("HANG") and rep.traces:
        return 1  # the kernel hung: a finding, judged like any trace
    return exit_code(rep)
