"""``pipeproof emit`` and ``pipeproof conform`` (registered by ``pipeproof/cli.py``).

    pipeproof emit FILE [--arch sm_90a|sm_100a] [-o kernel.ptx] [--param N=V]
                   [--no-trace] [--no-jitter] [--no-checks] [--arrivals thread|warp]
                   [--manifest FILE] [--assemble] [--unrolled]
    pipeproof conform FILE [--runs N] [--clusters G] [--param N=V] [--mutant NAME]
                   [--timeout-ms T] [--json] [--unrolled]

``conform`` needs an NVIDIA Hopper GPU and cuda-python (``pip install 'pipeproof[gpu]'``);
without them it says so and exits with 3 (no verdict).  Its exit code is 0 when every
trace is ACCEPTED with no data error, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def cmd_emit(args: argparse.Namespace) -> int:
    from ..params import parse_params as _parse_params
    from .conform import assemble, have_ptxas
    from .emit import EmitOptions, emit_file

    params = _one_value_params(args.param, "PTX is emitted for one value")
    if args.assemble and (not args.output or args.output == "-"):
        # before emitting: the PTX is not dumped on stdout only to fail after it
        print("pipeproof: --assemble needs -o FILE (ptxas reads the PTX from a file)",
              file=sys.stderr)
        return 2
    em = emit_file(args.file, params, EmitOptions(args.arch, trace=not args.no_trace,
                                                  jitter=not args.no_jitter,
                                                  structured=not args.unrolled,
                                                  checks=not args.no_checks,
                                                  arrivals=args.arrivals,
                                                  fold=args.fold))
    if args.output and args.output != "-":
        with open(args.output, "w") as f:
            f.write(em.ptx)
        print(f"wrote {args.output} ({len(em.ptx.splitlines())} lines, {args.arch}, "
              f"{em.manifest.smem} B shared memory per CTA; {em.note})", file=sys.stderr)
    else:
        sys.stdout.write(em.ptx)
        print(f"pipeproof emit: {em.note}", file=sys.stderr)
    if args.manifest:
        with open(args.manifest, "w") as f:
            f.write(em.manifest.to_json())
    if args.assemble:
        if not have_ptxas():
            print("ptxas not found: cannot assemble (install the CUDA toolkit)", file=sys.stderr)
            return 3
        ok, err = assemble(args.output, args.arch, args.output + ".cubin")
        print(("assembled " if ok else "ptxas failed: ") + (args.output + ".cubin" if ok else err),
              file=sys.stderr)
        return 0 if ok else 1
    return 0


def _one_value_params(items: Any, why: str) -> dict[str, Any]:
    from ..params import parse_params as _parse_params
    from ..model.errors import ConfigError

    params = _parse_params(items or [])
    for k, v in params.items():
        if isinstance(v, range):
            raise ConfigError(f"--param {k}={v.start}..{v.stop - 1}: {why}; pass "
                              f"--param {k}=VALUE")
    return params


def _check_conform_args(args: argparse.Namespace, params: dict[str, Any]) -> None:
    """Everything ``conform`` can check without a GPU, checked before it looks for one:
    the counts, the watchdog, the kernel, its parameters and the mutant."""
    import math

    from ..model.errors import ConfigError
    from .conform import compiled_for

    if args.runs < 1:
        raise ConfigError(f"--runs must be at least 1, not {args.runs}")
    if args.clusters < 1:
        raise ConfigError(f"--clusters must be at least 1, not {args.clusters}")
    if not (args.timeout_ms > 0 and math.isfinite(args.timeout_ms)):
        raise ConfigError(f"--timeout-ms must be a finite positive number, not "
                          f"{args.timeout_ms:g}")
    from .mutants import OPERATORS

    if args.mutant and args.mutant not in OPERATORS:
        raise ConfigError(f"--mutant {args.mutant}: no such mutant (one of "
                          f"{', '.join(sorted(OPERATORS))})")
    try:
        compiled_for(args.file, params, args.mutant or "", not args.unrolled)
    except ValueError as e:  # a mutant that does not apply
        raise ConfigError(str(e)) from None


def is_cute_entry(file: str) -> bool:
    """``kernel.py::entry`` (or ``kernel.py``): a real CuTe DSL kernel."""
    return "::" in file or file.endswith(".py")


def cmd_conform(args: argparse.Namespace) -> int:
    from .conform import NoGpu, conform_file, exit_code, render_report

    if args.judge or (args.file and is_cute_entry(args.file)):
        from .cute_cli import cmd_conform_cute

        return cmd_conform_cute(args)
    if not args.file:
        from ..model.errors import ConfigError

        raise ConfigError("conform needs a kernel: FILE.pipe or KERNEL.py::entry "
                          "(or --judge DIR)")
    if args.timeout_ms is None:
        args.timeout_ms = 20.0
    params = _one_value_params(args.param, "a GPU run is for one value")
    _check_conform_args(args, params)
    try:
        rep = conform_file(args.file, params, args.runs, args.clusters, args.mutant or "",
                           timeout_ms=args.timeout_ms, structured=not args.unrolled)
    except NoGpu as e:
        msg = f"pipeproof conform: no GPU run possible here: {e}"
        if args.json:
            print(json.dumps({"status": "UNKNOWN", "reason": msg}))
        else:
            print(msg, file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(rep.to_json(), indent=2))
    else:
        print(render_report(rep))
    return exit_code(rep)


def add_commands(sub: Any) -> None:
    e_help = ("lower a .pipe kernel to PTX (sm_90a runs on Hopper; sm_100a uses the "
              "Blackwell instructions)")
    e = sub.add_parser("emit", help=e_help, description=e_help[0].upper() + e_help[1:] + ".",
                       usage="pipeproof emit FILE.pipe [-o FILE.ptx] [--param NAME=VALUE ...] "
                             "[options]",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="""examples:
  pipeproof emit examples/textbook/pipeline_tma_async.pipe -o k.ptx --assemble
  pipeproof emit K.pipe --arch sm_100a --no-jitter --manifest k.json -o k.ptx

The PTX is the model's per-warp programs with trace records (docs/gpu.md);
`pipeproof conform K.pipe` runs it.""")
    e.add_argument("file", metavar="FILE.pipe", help="a .pipe kernel")
    e.add_argument("--arch", choices=("sm_90a", "sm_100a"), default="sm_90a",
                   help="the target (default sm_90a): Hopper's instructions, or "
                        "Blackwell's (tcgen05)")
    e.add_argument("-o", "--output", default="-", help="PTX file (default: stdout)")
    e.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                   help="set a kernel parameter (repeatable), as for check")
    e.add_argument("--no-trace", action="store_true", help="no event recording")
    e.add_argument("--no-jitter", action="store_true", help="no nanosleep jitter")
    e.add_argument("--manifest", default="", help="write the launch manifest (JSON)")
    e.add_argument("--assemble", action="store_true", help="also run ptxas -arch=ARCH")
    e.add_argument("--no-checks", action="store_true",
                   help="no watchdog and no data stamps (with --no-trace --no-jitter: the "
                        "bare synchronisation, for timing)")
    e.add_argument("--arrivals", choices=("thread", "warp"), default="thread",
                   help="a warp's arrive of n lanes: n count-1 arrivals as CUTLASS's threads "
                        "make them (default), or one count-n arrive by lane 0")
    e.add_argument("--unrolled", action="store_true",
                   help="emit the fully unrolled programs (default: loops bounded by a "
                        "parameter stay loops, the parameter is a kernel argument)")
    e.add_argument("--fold", action="store_true", default=True,
                   help="one structured loop body with the PipelineState in registers, "
                        "computed at run time as CUTLASS does (default)")
    e.add_argument("--copies", dest="fold", action="store_false",
                   help="the loop body copied once per pipeline state (stage indices and "
                        "phases constant in each copy: a few ns a k-tile faster, 6x the PTX)")
    e.set_defaults(fn=cmd_emit)

    c_help = ("run a kernel on the GPU (jittered) and replay every trace through the model: "
              "the PTX pipeproof emits for FILE.pipe, or your real CuTe DSL kernel "
              "(KERNEL.py::entry)")
    c = sub.add_parser("conform", help=c_help, description=c_help[0].upper() + c_help[1:] + ".",
                       usage="pipeproof conform FILE.pipe | KERNEL.py::entry [--runs N] "
                             "[--param NAME=VALUE ...] [options]",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="""examples:
  pipeproof conform examples/textbook/pipeline_tma_async.pipe --runs 200
  pipeproof conform kernel.py::entry --param k_tiles=8 --runs 200
  pipeproof conform kernel.py::entry --prepare-only --workdir J   # no GPU here
  J/run.sh OUT                                                    # on the GPU machine
  pipeproof conform --judge J --results OUT

Exit code: 0 every trace ACCEPTED, 1 a trace not accepted (or a hang), 3 no GPU run
possible here, 2 bad input.  More: docs/gpu.md.""")
    c.add_argument("file", nargs="?", default="",
                   help="FILE.pipe, or KERNEL.py::entry (a function that calls cute.compile)")
    c.add_argument("--runs", type=int, default=200, help="launches (default 200)")
    c.add_argument("--clusters", type=int, default=4,
                   help="clusters per launch (default 4; .pipe only); a kernel with global "
                        "memory or several clusters runs that many copies of its grid")
    c.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                   help="set a kernel parameter (repeatable), as for check")
    c.add_argument("--mutant", default="", help="inject a fault (impl/mutants.py; .pipe only)")
    c.add_argument("--timeout-ms", type=float, default=None,
                   help="watchdog: per wait for .pipe (default 20), per launch for a CuTe "
                        "DSL kernel (default 5000)")
    c.add_argument("--json", action="store_true", help="machine-readable report")
    c.add_argument("--unrolled", action="store_true",
                   help="run the fully unrolled programs (default: structured; .pipe only)")
    g = c.add_argument_group("real CuTe DSL kernels (KERNEL.py::entry)")
    g.add_argument("--arch", choices=("sm_90a", "sm_100a"), default="sm_90a",
                   help="what cute.compile compiles for (default sm_90a)")
    g.add_argument("--no-jitter", action="store_true", help="no nanosleep before signals")
    g.add_argument("--workdir", default="", help="the job folder (default: a new temporary "
                                                 "folder)")
    g.add_argument("--prepare-only", action="store_true",
                   help="compile and export the job into --workdir and stop (then run "
                        "WORKDIR/run.sh OUT on a GPU machine and judge with --judge)")
    g.add_argument("--judge", default="", metavar="WORKDIR",
                   help="replay the traces of a job that ran elsewhere")
    g.add_argument("--results", default="", help="with --judge: the folder run.sh wrote "
                                                 "(default WORKDIR/results)")
    c.set_defaults(fn=cmd_conform)
