"""The ``pipeproof`` command.

    pipeproof check FILE [--param NAME=VALUE ...] [--engine auto|bmc|explicit|native] [--depth N]
                    [--timeout S] [--smt2 FILE] [--json]
                         [--format timeline|steps] [--explain]
                         [--perfetto FILE] [--html FILE] [--progress auto|always|never]

Exit codes (ARCHITECTURE.md): 0 safe or proven, 1 violated, 2 bad input or usage,
3 unknown.  Errors in the input are printed as ``file:line:column: error: ...``; the
command never ends in a traceback for a user mistake.
"""

from __future__ import annotations

import argparse
import functools
import os
import json
import sys
from typing import Any, Optional, Sequence

from .model.errors import ConfigError, Unsupported, command_line_wording
from .params import parse_params
from .version import __version__


_parse_params = parse_params


class ProgressLine:
    """Progress of a long check on one terminal line: depth reached, states explored,
    rate and elapsed time (the engine calls it about once a second).  ``close`` erases
    the line so that the verdict prints cleanly."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.width = 0

    def __call__(self, states: int, depth: int, elapsed: float,
                 confirm: Optional[int] = None) -> None:
        """``confirm``: the search proving that no counterexample is shorter than
        ``confirm`` steps (the counterexample is already on the screen)."""
        rate = states / elapsed if elapsed > 0 else 0.0
        done = f"{states:,} states explored ({rate:,.0f}/s), " if states else ""
        if confirm is not None:
            text = (f"  proving that no counterexample is shorter: depth {depth} of "
                    f"{confirm}, {done}{elapsed:.0f} s (--no-confirm skips this)")
        else:
            text = f"  checking: depth {depth}, {done}{elapsed:.0f} s elapsed"
        pad = max(0, self.width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _progress_printer(stream: Any) -> ProgressLine:
    return ProgressLine(stream)


def want_progress(mode: str, stream: Any, quiet: bool = False, json_out: bool = False) -> bool:
    """``auto``: only when ``stream`` is a terminal (quiet when piped or redirected)."""
    if mode == "never" or quiet:
        return False
    if mode == "always":
        return True
    if json_out:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def cmd_check(args: argparse.Namespace) -> int:
    from .api import check_file

    params = _parse_params(args.param or [])
    if args.jobs is not None and args.jobs < 1:
        return _usage_error(args, f"--jobs must be at least 1, not {args.jobs}")
    if args.jobs is not None and args.dask is not None:
        return _usage_error(args, "--jobs and --dask exclude each other (--dask: one task "
                                  "per worker)")
    if args.width is not None and args.width < 1:
        return _usage_error(args, f"--width must be at least 1, not {args.width}")
    # output files are checked before the search, not after minutes of it
    for flag, path in (("--smt2", args.smt2), ("--perfetto", args.perfetto),
                       ("--html", args.html)):
        why = _unwritable(path)
        if why:
            return _usage_error(args, f"{flag} {path}: {why}")
    show_progress = want_progress(args.progress, sys.stderr, args.quiet, args.json)
    progress = _progress_printer(sys.stderr) if show_progress else None
    cute = _is_cute_entry(args.file)
    if args.arch and not cute:
        return _usage_error(args, "--arch applies to CuTe DSL kernels (FILE.py::ENTRY), "
                                  "not to .pipe files")
    if args.data_races == "off" and not cute:
        return _usage_error(args, "--data-races applies to CuTe DSL kernels "
                                  "(FILE.py::ENTRY); a .pipe file says what it reads and "
                                  "writes")
    if args.cross_check and not cute:
        return _usage_error(args, "--cross-check applies to CuTe DSL kernels "
                                  "(FILE.py::ENTRY): a .pipe file's calls are the model's")
    if args.no_confirm:
        if args.confirm_timeout is not None:
            return _usage_error(args, "--no-confirm and --confirm-timeout exclude each "
                                      "other")
        args.confirm_timeout = 0.0
    first = FirstAnswer(args, progress)
    checker = check_file
    if cute:
        from .api import check_cute

        checker = functools.partial(check_cute, arch=args.arch or "sm_90a",
                                    data_races=args.data_races == "on",
                                    cross_check=args.cross_check)
    try:
        result = checker(args.file, params, engine=args.engine, depth=args.depth,
                            timeout=args.timeout, max_states=args.max_states,
                            progress=progress, por={"auto": None, "on": True,
                                                    "off": False}[args.por],
                            confirm_timeout=args.confirm_timeout,
                            memory_model=args.memory_model,
                            bmc_steps=args.bmc_steps,
                            bmc_certificate=args.bmc_certificate == "on",
                            jobs=args.jobs, symbolic_params=not args.param_values,
                            seed=args.seed,
                            on_found=None if args.json else first,
                            **({"smt2": args.smt2} if args.smt2 else {}),
                            **({"dask": args.dask} if args.dask else {}))
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        first.finish(result)
    _write_outputs(args, result)
    if args.smt2 and not result.verdict.stats.extra.get("smt2"):
        print(f"pipeproof: --smt2 {args.smt2}: no query written (the search ended before "
              "it had one)", file=sys.stderr)
    return result.exit_code


class FirstAnswer:
    """The counterexample printed as soon as an engine finds it (``on_found``), while
    a search still proves it shortest; ``finish`` then prints how that ended -- one line
    when the counterexample shown stands, the whole answer again when another replaced
    it (a shorter one, or one of a property first in the catalogue)."""

    def __init__(self, args: argparse.Namespace, progress: Optional[ProgressLine]):
        self.args = args
        self.progress = progress
        self.shown: Optional[str] = None

    def render(self, result: Any) -> str:
        a = self.args
        return result.render_text(explain=a.explain, fmt=a.format, width=a.width)

    def __call__(self, result: Any) -> None:
        if self.progress is not None:
            self.progress.close()
        print(self.render(result), flush=True)
        self.shown = _trace_key(result.verdict)

    def finish(self, result: Any) -> None:
        from .api import shortest_note

        v = result.verdict
        if self.shown is None:
            print(self.render(result))
        elif v.status == "VIOLATED" and _trace_key(v) == self.shown:
            note = shortest_note(v)
            secs = v.stats.extra.get("confirm_seconds")
            took = f" ({secs:.1f} s)" if isinstance(secs, (int, float)) else ""
            print(f"\n({note})" if note else
                  f"\nConfirmed{took}: no counterexample is shorter than these "
                  f"{len(v.trace)} steps.")
        elif v.status == "VIOLATED":
            print("\nWhile proving it shortest, another counterexample came first "
                  "(shorter, or of a property first in the catalogue); it replaces the "
                  "one above:\n")
            print(self.render(result))
        else:  # not expected: the counterexample above stands whatever the search says
            print(f"\nThe search proving it shortest ended without confirming it:\n")
            print(self.render(result))


def _trace_key(v: Any) -> Optional[str]:
    """A counterexample's identity (its property and events), to tell whether the final
    answer is the one already shown."""
    if v.trace is None:
        return None
    return json.dumps([v.prop, v.trace.to_json()], sort_keys=True, default=str)


def _is_cute_entry(path: str) -> bool:
    """``kernel.py::entry`` or ``kernel.py``: a CuTe DSL kernel (frontend/cute)."""
    return "::" in path or path.endswith(".py")


def _unwritable(path: Optional[str]) -> str:
    """Why ``path`` cannot be written as an output file ("" when it can, or is None)."""
    if not path:
        return ""
    p = os.path.abspath(path)
    if os.path.isdir(p):
        return "is a directory"
    d = os.path.dirname(p)
    if not os.path.isdir(d):
        return f"no directory {d}"
    if not os.access(d, os.W_OK) or (os.path.exists(p) and not os.access(p, os.W_OK)):
        return "not writable"
    return ""


def _write_outputs(args: argparse.Namespace, result: Any) -> None:
    """``--perfetto FILE`` and ``--html FILE``."""
    if not (args.perfetto or args.html):
        return
    v = result.verdict
    if args.perfetto:
        from .checker.render.perfetto import write_perfetto

        meta = {"file": str(result.file), "kernel": result.kernel,
                "verdict": v.headline(),
                "params": ", ".join(f"{k}={x}" for k, x in result.params.items()),
                "cluster": "x".join(map(str, result.cluster))}
        write_perfetto(v.trace, args.perfetto, meta)
        print(f"wrote {args.perfetto} (open it in ui.perfetto.dev)", file=sys.stderr)
    if args.html:
        from .checker.explain import explain
        from .checker.render.html import Report, write_html

        write_html(Report.from_result(result, explain(v)), args.html)
        print(f"wrote {args.html}", file=sys.stderr)


def cmd_recheck(args: argparse.Namespace) -> int:
    """Every file's answer as expected: 0; one contradicts its verdict: 1; a file that
    is not a pipeproof query: 2; undecided or a changed source: 3 (proofs/recheck.py)."""
    from .proofs.recheck import recheck

    if not 0 < args.timeout < float("inf"):
        print(f"pipeproof: --timeout must be a finite positive number of seconds, not "
              f"{args.timeout:g}", file=sys.stderr)
        return 2
    codes = []
    for path in args.files:
        try:
            r = recheck(path, args.timeout)
        except ValueError as e:
            print(f"pipeproof: {path}: {e}", file=sys.stderr)
            codes.append(2)
            continue
        print(r.render())
        codes.append(r.exit_code)
    # the worst: a broken proof (1) before bad input (2) before undecided (3)
    return next((c for c in (1, 2, 3) if c in codes), 0)


def cmd_properties(args: argparse.Namespace) -> int:
    from .checker.properties import CATALOGUE

    for p in CATALOGUE:
        print(f"{p.name:28s} {p.summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pipeproof",
        description="Model-check CUTLASS CuTe DSL pipeline configurations and kernel "
                    "skeletons (.pipe files).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  pipeproof check examples/bugs/p1-bug.pipe          # a counterexample, step by step
  pipeproof check kernel.py::entry -p k_tiles=8      # your CuTe DSL kernel
  pipeproof properties                               # what is checked
  pipeproof COMMAND --help                           # each command's options

Exit codes: 0 safe or proven, 1 violated, 2 bad input or usage, 3 unknown.""")
    ap.add_argument("--version", action="version", version=f"pipeproof {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    c_help = ("check a CuTe DSL kernel (kernel.py::entry) or a .pipe skeleton for safety "
              "and deadlock")
    c = sub.add_parser("check", help=c_help, description=c_help[0].upper() + c_help[1:] + ".",
                       usage="pipeproof check KERNEL [--param NAME=VALUE ...] [options]",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=CHECK_EXAMPLES, add_help=False)
    what = c.add_argument_group("what to check")
    out = c.add_argument_group("output")
    lim = c.add_argument_group("engine and limits")
    adv = c.add_argument_group("advanced engine tuning")
    # -h among the output options, not alone in a generic "options" group at the top
    out.add_argument("-h", "--help", action="help", help="show this help and exit")
    what.add_argument("file", metavar="KERNEL",
                   help="a .pipe skeleton, or a CuTe DSL kernel as path/to/kernel.py::entry "
                        "where entry() calls cute.compile(...) with fake tensors (needs "
                        "pipeproof[cute]); --param NAME=VALUE sets entry's keyword "
                        "arguments")
    what.add_argument("--arch", choices=("sm_90a", "sm_100a"), default=None,
                   help="CuTe DSL kernels: the target cute.compile compiles for "
                        "(default sm_90a)")
    what.add_argument("--data-races", choices=("on", "off"), default="on",
                   help="CuTe DSL kernels: on (default): also check the shared memory every "
                        "load, store, TMA copy and MMA touches (read-before-full, "
                        "overwrite-before-release, missing-proxy-fence); off: the barrier "
                        "protocol alone (far fewer states on large kernels)")
    what.add_argument("--cross-check", action="store_true",
                   help="CuTe DSL kernels: also compare every pipeline call the kernel "
                        "makes (as CUTLASS lowers it) with what pipeproof's reference "
                        "semantics (model/pipelines) makes for the same call, and print "
                        "each difference with your file:line; the verdict is unchanged")
    what.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                   help="override a kernel parameter (repeatable); NAME=LO..HI checks "
                        "every value: symbolically (one transition system for the whole "
                        "range; trip counts and stage counts), or value by value where "
                        "the launch depends on it")
    what.add_argument("--param-values", action="store_true",
                   help="check every value of a --param range on its own, never "
                        "symbolically")
    lim.add_argument("--engine", choices=("auto", "bmc", "explicit", "native", "swarm"),
                   default="auto",
                   help="verification engine: bmc (z3 bounded model checking with a "
                        "certified enumeration, starvation lassos), explicit (exhaustive "
                        "breadth-first search with reductions), native (the explicit "
                        "search without reductions, compiled to C; needs cffi and a C "
                        "compiler), swarm (1,000 random runs, each with its own warp "
                        "speeds: finds deep violations a search does not reach, proves "
                        "nothing) or auto (default): a quick explicit search in this "
                        "process (50,000 states, 2 s of CPU; not beside stubborn sets), "
                        "then BMC's certificate where it decides, else the explicit "
                        "engine (beside random runs where it uses stubborn sets), else "
                        "BMC's unrolling with the time left (plain bmc with --smt2)")
    adv.add_argument("--depth", type=int, default=None,
                   help="bmc: bound on the levels unrolled (default 60); a level is one "
                        "step with --bmc-steps single, a chain of steps otherwise, so depth "
                        "N covers at least every run of N steps")
    adv.add_argument("--bmc-steps", choices=("auto", "chain", "single"), default="auto",
                   help="bmc: chain: each level lets every warp and asynchronous agent "
                        "take a step, in a normal form of independent steps -- far fewer "
                        "levels to the end of every run; single: one step per level; auto "
                        "(default): chain unless some warp loops for ever (then no depth "
                        "ends every run, and starvation lassos are single-step runs)")
    adv.add_argument("--bmc-certificate", choices=("on", "off"), default="on",
                   help="bmc: on (default): enumerate the reachable states (one per "
                        "class of interchangeable warps) for a few seconds and, if that "
                        "finishes, certify them as an inductive invariant of the z3 "
                        "encoding (z3 checks the warps' symmetry) -- PROVEN at once when "
                        "none violates or deadlocks, else a constraint on every level; "
                        "where it does not finish and every warp ends, the states reached "
                        "following one warp alone at program points z3 proves safe "
                        "(PROVEN only); off: unrolling only")
    adv.add_argument("--smt2", metavar="FILE", default=None,
                   help="bmc: write the final query as an SMT-LIB 2 script (the "
                        "certificate's queries when a certificate decided safety)")
    lim.add_argument("--timeout", type=float, default=600.0, help="seconds before UNKNOWN")
    lim.add_argument("--max-states", type=int, default=3_000_000,
                   help="explicit engine: states before UNKNOWN (default 3,000,000); "
                        "auto: also bounds the enumeration behind BMC's certificate")
    adv.add_argument("--por", choices=("auto", "on", "off"), default="auto",
                   help="explicit and native engines: stubborn-set partial-order "
                        "reduction (fewer states, each costlier to expand); auto: on for "
                        "clusters of more than one CTA and for CTAs of 10 or more warps, "
                        "where interleavings multiply")
    what.add_argument("--memory-model", choices=("cutlass", "strict"), default="cutlass",
                   help="cutlass (default): releases reach whoever acquires them, as "
                        "CUTLASS's .cta-scoped remote arrives assume; strict: also report "
                        "insufficient-scope -- data visible only inside one CTA (stores or "
                        "forwarded TMA bytes released at .cta scope) read by another CTA "
                        "(PTX memory model)")
    lim.add_argument("--no-confirm", action="store_true",
                   help="report a counterexample found with a reduction without proving "
                        "that none is shorter (the output says it is not confirmed).  By "
                        "default such a counterexample is printed at once and the proof "
                        "follows, with a progress line on a terminal")
    adv.add_argument("--seed", type=int, default=0, metavar="N",
                     help="seed of the random runs (--engine swarm, and those of the "
                          "default engine): another seed makes other runs (default 0)")
    adv.add_argument("--confirm-timeout", type=float, default=None, metavar="S",
                   help="seconds to confirm that a counterexample found with a "
                        "reduction (explicit: partial-order reduction; bmc: chained steps) "
                        "is a shortest one (default 20; the output says when it was not "
                        "confirmed)")
    lim.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="processes (default: 2 where two CPUs are usable, else 1).  "
                        "auto engine: with 2, the explicit engine starts at once beside "
                        "BMC's certificate and is used if the certificate does not "
                        "decide; --param ranges: N values are checked at a time.  The "
                        "answer is the one --jobs 1 gives")
    lim.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="run on Dask (pip install 'pipeproof[dask]'): local (a local "
                        "cluster, one worker process per CPU), local:N (N workers) or a "
                        "scheduler address such as tcp://host:8786.  A --param range: one "
                        "task per value; one configuration: the explicit engine's search "
                        "partitioned by state hash over the workers.  Same verdicts as "
                        "one process")
    out.add_argument("--json", action="store_true", help="machine-readable verdict")
    out.add_argument("--explain", action="store_true", help="add a paragraph in words")
    out.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    out.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress line on stderr (auto: only on a terminal)")
    out.add_argument("--format", choices=("timeline", "steps"), default="timeline",
                   help="counterexample as a timeline with one column per agent "
                        "(default) or as numbered steps")
    out.add_argument("--width", type=int, default=None,
                   help="line width of the timeline (default: the terminal's)")
    out.add_argument("--perfetto", metavar="FILE",
                   help="also write the counterexample as Chrome/Perfetto trace-event JSON")
    out.add_argument("--html", metavar="FILE",
                   help="also write a self-contained HTML report with an SVG timeline")
    c.set_defaults(fn=cmd_check)

    r_help = ("solve the SMT-LIB files of check --smt2 again and compare with the verdicts "
              "they were made for")
    rc = sub.add_parser("recheck", help=r_help, description=r_help[0].upper() + r_help[1:] + ".",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="""examples:
  pipeproof check K.pipe --engine bmc --smt2 q.smt2
  pipeproof recheck q.smt2                   # 0: the same answer as the check's
  pipeproof recheck *.smt2 --timeout 60      # several files: the worst exit code

Each file records the verdict it was written for; recheck solves it again (z3) and
says whether the answer is the same (an independent check of the encoding's result).""")
    rc.add_argument("files", nargs="+", metavar="FILE.smt2",
                    help="files written by pipeproof check --smt2")
    rc.add_argument("--timeout", type=float, default=600.0,
                    help="seconds for z3 per file (default 600)")
    rc.set_defaults(fn=cmd_recheck)

    pr = sub.add_parser("properties", help="list the properties pipeproof checks",
                        description="List the properties pipeproof checks (each is "
                                    "explained in spec/properties.md).")
    pr.set_defaults(fn=cmd_properties)

    from .impl.cli import add_commands  # emit, conform (impl/)

    add_commands(sub)
    return ap


def _print_json_error(args: argparse.Namespace, message: str, loc: Any) -> None:
    """With ``--json``, bad input is still a JSON object on stdout (exit code 2):
    ``{"status": "ERROR", "error": {"message", "file", "line", "column"}}``."""
    if not getattr(args, "json", False):
        return
    err = {"message": message,
           "file": getattr(loc, "file", None) if loc is not None else None,
           "line": (getattr(loc, "line", 0) or None) if loc is not None else None,
           "column": (getattr(loc, "column", 0) or None) if loc is not None else None}
    print(json.dumps({"status": "ERROR", "error": err}, indent=2))


def _usage_error(args: argparse.Namespace, message: str) -> int:
    """A usage error found by a command itself: ``pipeproof: MESSAGE`` (and the JSON
    error object with ``--json``); exit code 2."""
    _print_json_error(args, message, None)
    print(f"pipeproof: {message}", file=sys.stderr)
    return 2


CHECK_EXAMPLES = """examples:
  pipeproof check examples/bugs/p1-bug.pipe                    # a .pipe skeleton
  pipeproof check kernel.py::entry --param k_tiles=8          # your CuTe DSL kernel
  pipeproof check kernel.py::entry --param k_tiles=1..16      # every value of a range
  pipeproof check FILE --json | --html report.html | --perfetto trace.json
  pipeproof check FILE --no-confirm          # the first counterexample, not proven shortest

Exit codes: 0 SAFE or PROVEN, 1 VIOLATED, 2 bad input or usage, 3 UNKNOWN.
"""


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        if e.code in (0, None):
            return 0
        if "--json" in (sys.argv[1:] if argv is None else list(argv)):
            _print_json_error(argparse.Namespace(json=True),
                              "invalid command line (argparse's message is on stderr)",
                              None)
        return 2
    if not getattr(args, "fn", None):
        ap.print_help()
        return 2
    try:
        with command_line_wording():  # errors name flags, not keyword arguments
            return args.fn(args)
    except ConfigError as e:
        _print_json_error(args, e.message, e.loc)
        print(e.render(), file=sys.stderr)
        return 2
    except RecursionError:
        # a backstop: the parser refuses deep nesting first (spec/language.md "Limits")
        msg = "the input nests too deeply for pipeproof (Python's recursion limit)"
        _print_json_error(args, msg, None)
        print(f"pipeproof: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        msg = "out of memory (the input is too large for pipeproof)"
        _print_json_error(args, msg, None)
        print(f"pipeproof: {msg}", file=sys.stderr)
        return 3
    except Unsupported as e:
        msg = {"status": "UNKNOWN", "reason": e.render()}
        if getattr(args, "json", False):
            print(json.dumps(msg, indent=2))
        else:
            print(f"UNKNOWN {e.render()}")
        return 3
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 3
    except BrokenPipeError:  # output piped into a command that stopped reading (head);
        # before OSError, of which it is a subclass
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except OSError as e:
        # a file that could not be read or written after all (disk full, removed folder)
        if not e.filename:
            raise
        print(f"pipeproof: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        from .checker.errors import InternalError

        if not isinstance(e, InternalError):
            raise
        # an engine disagreed with the concrete model: a bug in pipeproof, never a verdict
        msg = {"status": "UNKNOWN", "reason": f"internal error: {e}"}
        if getattr(args, "json", False):
            print(json.dumps(msg, indent=2))
        else:
            print(f"UNKNOWN internal error, no verdict: {e}")
        print("pipeproof: internal error (a bug in pipeproof, not a verdict on the kernel); "
              "please report it with the .pipe file", file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
