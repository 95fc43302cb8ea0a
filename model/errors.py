"""Errors meant for people: where, and what was expected.

``ConfigError`` is any problem with the user's input: a parse error, an unknown name, an
impossible configuration (zero stages, a mask outside the cluster, tx_count beyond
2^20-1, a role on a warp that does not exist).  The command line prints it as
``file:line:column: error: message`` and exits with code 2, never with a traceback.

``Unsupported`` is a construct the model does not cover; it ends a check with the verdict
UNKNOWN (exit code 3), saying what was not supported.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterable, Iterator, Optional

from .ir import Loc

#: True while the ``pipeproof`` command runs: errors name its flags (``--depth``,
#: ``--param k=8``); otherwise they name the Python API's arguments (``depth=``,
#: ``params={'k': 8}``)
_COMMAND_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("pipeproof_cli",
                                                                     default=False)


@contextlib.contextmanager
def command_line_wording() -> Iterator[None]:
    """Inside it, ``option`` and ``param_setting`` speak flags (the CLI wraps each
    command in it)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def option(name: str, value: Any = None) -> str:
    """An option as the caller writes it: ``--confirm-timeout`` on the command line,
    ``confirm_timeout`` in Python (``name`` is the keyword argument); with a ``value``,
    ``--engine bmc`` or ``engine='bmc'``."""
    if _COMMAND_LINE.get():
        flag = "--" + name.replace("_", "-")
        return flag if value is None else f"{flag} {value}"
    return name if value is None else f"{name}={value!r}"


def param_setting(name: str, value: Any = "VALUE") -> str:
    """Setting one kernel parameter: ``--param k=8`` on the command line,
    ``params={'k': 8}`` in Python."""
    if _COMMAND_LINE.get():
        return f"--param {name}={value}"
    return f"params={{{name!r}: {value}}}"


def param_named(name: str) -> str:
    """A kernel parameter the caller named: ``--param k`` or ``params['k']``."""
    return f"--param {name}" if _COMMAND_LINE.get() else f"params[{name!r}]"


def did_you_mean(name: str, options: "Iterable[str]") -> str:
    """``did you mean X?`` for the options closest to a misspelt ``name`` ('' if none)."""
    import difflib

    close = difflib.get_close_matches(name, sorted(set(options)), n=3, cutoff=0.7)
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


def misspelt_keyword(key: str, given: "Iterable[str]") -> str:
    """For a missing keyword argument ``key``: ``num_stage= is no argument here; did you
    mean num_stages=?`` when one of the ``given`` keywords is close to it ('' if none)."""
    import difflib

    close = difflib.get_close_matches(key, sorted(set(given)), n=1, cutoff=0.7)
    if not close:
        return ""
    return f"{close[0]}= is no argument here; did you mean {key}=?"


def methods_of(obj: object) -> list[str]:
    """The ``.pipe`` methods of an object that dispatches ``obj.name(...)`` to
    ``m_name`` (for did-you-mean hints)."""
    return [a[2:] for a in dir(obj) if a.startswith("m_")]


class ConfigError(Exception):
    def __init__(self, message: str, loc: Optional[Loc] = None, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.hint = hint

    def render(self) -> str:
        where = f"{self.loc}: " if self.loc is not None and self.loc.line else (
            f"{self.loc.file}: " if self.loc is not None else "")
        out = f"{where}error: {self.message}"
        if self.hint:
            out += f"\n  hint: {self.hint}"
        return out

    def __str__(self) -> str:
        return self.render()


class Unsupported(Exception):
    def __init__(self, message: str, loc: Optional[Loc] = None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    def render(self) -> str:
        where = f" at {self.loc}" if self.loc is not None and self.loc.line else ""
        return f"{self.message}{where}"

    def __str__(self) -> str:
        return self.render()


class CompileTimeout(Unsupported):
    """The command's ``--timeout`` ran out while the kernel was being compiled (loops are
    unrolled: a trip count of thousands takes seconds): UNKNOWN, as a search timeout."""

    def __init__(self, seconds: float, loc: Optional[Loc] = None):
        super().__init__(f"timeout after {seconds:.3g} s while compiling the kernel (its loops "
                         f"are unrolled; smaller trip counts, or a longer {option('timeout')})",
                         loc)
        self.seconds = seconds
