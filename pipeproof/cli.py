"""The ``pipeproof`` command.

    pipeproof check FILE [--param NAME=VALUE ...] [--engine explicit] [--json]

Exit codes (ARCHITECTURE.md): 0 safe or proven, 1 violated, 2 bad input or usage,
3 unknown.  Errors in the input are printed as ``file:line:column: error: ...``; the
command never ends in a traceback for a user mistake.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

from . import __version__
from .model.errors import ConfigError, Unsupported


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise ConfigError(f"--param {it!r}: expected NAME=VALUE (e.g. --param k_tiles=8)")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise ConfigError(f"--param {it!r}: {k!r} is not a parameter name")
        v = v.strip()
        try:
            if ".." in v:
                lo, hi = v.split("..", 1)
                out[k] = range(int(lo, 0), int(hi, 0) + 1)
            elif v in ("True", "False"):
                out[k] = v == "True"
            else:
                out[k] = int(v, 0)
        except ValueError:
            raise ConfigError(f"--param {it!r}: {v!r} is not an integer (or LO..HI range)") \
                from None
    return out


def _progress_printer(stream: Any):
    def report(states: int, depth: int, elapsed: float) -> None:
        stream.write(f"\r  explored {states:,} states, depth {depth}, {elapsed:.0f} s ")
        stream.flush()
    return report


def cmd_check(args: argparse.Namespace) -> int:
    from .api import check_file

    params = _parse_params(args.param or [])
    show_progress = not args.json and not args.quiet and sys.stderr.isatty()
    progress = _progress_printer(sys.stderr) if show_progress else None
    result = check_file(args.file, params, engine=args.engine, depth=args.depth,
                        timeout=args.timeout, max_states=args.max_states, progress=progress)
    if show_progress:
        sys.stderr.write("\r" + " " * 60 + "\r")
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.render_text(explain=args.explain))
    return result.exit_code


def cmd_properties(args: argparse.Namespace) -> int:
    from .checker.properties import CATALOGUE

    for p in CATALOGUE:
        print(f"{p.name:28s} {p.summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pipeproof",
        description="Model-check CUTLASS CuTe DSL pipeline configurations and kernel "
                    "skeletons (.pipe files).")
    ap.add_argument("--version", action="version", version=f"pipeproof {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("check", help="check a .pipe kernel skeleton for safety and deadlock")
    c.add_argument("file", help="the .pipe file")
    c.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                   help="override a kernel parameter (repeatable)")
    c.add_argument("--engine", choices=("explicit",), default="explicit",
                   help="verification engine (default: explicit)")
    c.add_argument("--depth", type=int, default=None, help="bound for bounded engines")
    c.add_argument("--timeout", type=float, default=600.0, help="seconds before UNKNOWN")
    c.add_argument("--max-states", type=int, default=3_000_000,
                   help="explicit engine: states before UNKNOWN (default 3,000,000)")
    c.add_argument("--json", action="store_true", help="machine-readable verdict")
    c.add_argument("--explain", action="store_true", help="add a paragraph in words")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    c.set_defaults(fn=cmd_check)

    pr = sub.add_parser("properties", help="list the properties pipeproof checks")
    pr.set_defaults(fn=cmd_properties)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0) if e.code in (0, None) else 2
    if not getattr(args, "fn", None):
        ap.print_help()
        return 2
    try:
        return args.fn(args)
    except ConfigError as e:
        print(e.render(), file=sys.stderr)
        return 2
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
