"""``kernel.py::entry``: import the user's file, call the entry under the capture hook.

``entry`` is a function of the user's that calls ``cute.compile(...)`` (with fake
tensors, as one compiles without a GPU); its keyword arguments are the configuration
``--param NAME=VALUE`` sets.  Everything that can go wrong before there is a module to
lift is the user's input: a ``ConfigError`` (exit 2) with the file and line.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ...model.errors import ConfigError, did_you_mean, param_setting
from ...model.ir import Loc
from .capture import Capture, capture, prepare_environment


@dataclass(frozen=True)
class EntrySpec:
    path: str
    function: str


def parse_spec(text: str) -> EntrySpec:
    """``path/to/kernel.py::entry`` (``::entry`` may be left out when the file has one
    function named like the file, or exactly one function called ``entry``)."""
    path, sep, fn = text.partition("::")
    if not path.endswith(".py"):
        raise ConfigError(f"{text}: expected a CuTe DSL file as path/to/kernel.py::entry")
    if sep and not fn.isidentifier():
        raise ConfigError(f"{text}: {fn!r} is not a function name")
    return EntrySpec(path, fn)


def load_module(path: str) -> Any:
    p = Path(path)
    if not p.exists():
        raise ConfigError(loc=Loc(path), message="no such file")
    if not p.is_file():
        raise ConfigError(loc=Loc(path), message="not a regular file")
    name = f"pipeproof_user_{abs(hash(str(p.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, str(p))
    if spec is None or spec.loader is None:
        raise ConfigError(loc=Loc(path), message="cannot be imported as a Python module")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(p.resolve().parent))  # its own imports of sibling modules
    try:
        spec.loader.exec_module(mod)
    except ConfigError:
        raise
    except SyntaxError as e:
        raise ConfigError(f"invalid Python: {e.msg}",
                          Loc(path, e.lineno or 0, e.offset or 0)) from None
    except Exception as e:
        raise user_error(e, path, f"importing {path} failed") from None
    finally:
        try:
            sys.path.remove(str(p.resolve().parent))
        except ValueError:
            pass
    return mod


def find_entry(mod: Any, spec: EntrySpec) -> Callable[..., Any]:
    if spec.function:
        fn = getattr(mod, spec.function, None)
        if fn is None or not callable(fn):
            funcs = sorted(n for n, v in vars(mod).items() if inspect.isfunction(v)
                           and v.__module__ == mod.__name__ and not n.startswith("_"))
            raise ConfigError(loc=Loc(spec.path), message=f"no function {spec.function!r}"
                              + (f" (functions: {', '.join(funcs)})" if funcs else ""),
                              hint="name the function that calls cute.compile: "
                                   f"{spec.path}::FUNCTION")
        return fn
    stem = Path(spec.path).stem
    for cand in (stem, "entry"):
        fn = getattr(mod, cand, None)
        if inspect.isfunction(fn):
            return fn
    raise ConfigError(loc=Loc(spec.path), message="which function compiles the kernel?",
                      hint=f"write {spec.path}::FUNCTION, where FUNCTION calls cute.compile")


def bind_params(fn: Callable[..., Any], params: dict[str, Any], where: str) -> dict:
    """The entry's keyword arguments from ``--param``; unknown names are errors."""
    sig = inspect.signature(fn)
    names = [n for n, p in sig.parameters.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for k in params:
        if k not in names:
            raise ConfigError(loc=Loc(where), message=f"the entry {fn.__name__}() has no parameter {k!r}"
                              + (f" (parameters: {', '.join(names)})" if names else
                                 " (it takes none)"), hint=did_you_mean(k, names))
    for n, p in sig.parameters.items():
        if p.default is p.empty and n not in params and \
                p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise ConfigError(loc=Loc(where), message=f"the entry {fn.__name__}() needs a value for {n!r}",
                              hint=param_setting(n))
    return dict(params)


def effective_params(fn: Callable[..., Any], params: dict[str, Any]) -> dict[str, Any]:
    """Defaults overridden by ``params``: what the check reports it checked."""
    out = {}
    for n, p in inspect.signature(fn).parameters.items():
        if n in params:
            out[n] = params[n]
        elif p.default is not p.empty:
            out[n] = p.default
    return out


def user_error(e: BaseException, path: str, what: str) -> ConfigError:
    """An exception from the user's code or the DSL, as a message at the user's line
    (the innermost frame in the user's file), with the DSL's own text."""
    loc = None
    tb = traceback.extract_tb(e.__traceback__)
    target = os.path.abspath(path)
    for fr in reversed(tb):
        if os.path.abspath(fr.filename) == target:
            loc = Loc(path, fr.lineno or 0, (fr.colno or 0) + 1 if hasattr(fr, "colno") else 0)
            break
    text = str(e).strip() or type(e).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 12:
        lines = lines[:12] + ["..."]
    return ConfigError(f"{what}: {type(e).__name__}: " + "\n  ".join(lines), loc)


def run_entry(spec: EntrySpec, params: dict[str, Any], arch: str
              ) -> tuple[Capture, dict[str, Any], Callable[..., Any]]:
    """Import the file, call the entry with ``params``; the captured module."""
    prepare_environment(arch)
    mod = load_module(spec.path)
    fn = find_entry(mod, spec)
    return (call_entry(fn, params, arch, spec.path), effective_params(fn, params), fn)


def call_entry(fn: Callable[..., Any], params: dict[str, Any], arch: str,
               path: Optional[str] = None) -> Capture:
    return compile_entry(fn, params, arch, path)[0]


def compile_entry(fn: Callable[..., Any], params: dict[str, Any], arch: str,
                  path: Optional[str] = None, instrument: Optional[Callable[..., Any]] = None
                  ) -> tuple[Capture, Any]:
    """Call the entry under the capture hook.  With ``instrument`` (conformance runs) the
    compile goes on to the end with the instrumented module and its result (the
    compiled function) comes back too."""
    path = path or inspect.getsourcefile(fn) or "<entry>"
    kwargs = bind_params(fn, params, path)
    try:
        caps, result = capture(lambda: fn(**kwargs), arch, finish_compile=instrument is not None,
                               instrument=instrument)
    except ConfigError:
        raise
    except Exception as e:
        raise user_error(e, path, f"{fn.__name__}() failed in cute.compile") from None
    if not caps:
        raise ConfigError(loc=Loc(path), message=f"{fn.__name__}() returned without calling cute.compile",
                          hint="the entry must compile the kernel: return "
                               "cute.compile(host_fn, *fake_args)")
    if len(caps) > 1:
        raise ConfigError(loc=Loc(path), message=f"{fn.__name__}() compiled {len(caps)} functions; pipeproof "
                          "checks one kernel per entry",
                          hint="write one entry per kernel configuration")
    return caps[0], result
