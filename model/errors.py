"""Errors meant for people: where, and what was expected.

``ConfigError`` is any problem with the user's input: a parse error, an unknown name, an
impossible configuration (zero stages, a mask outside the cluster, tx_count beyond
2^20-1, a role on a warp that does not exist).  The command line prints it as
``file:line:column: error: message`` and exits with code 2, never with a traceback.

``Unsupported`` is a construct the model does not cover; it ends a check with the verdict
UNKNOWN (exit code 3), saying what was not supported.
"""

from __future__ import annotations

from typing import Iterable, Optional

from .ir import Loc


def did_you_mean(name: str, options: "Iterable[str]") -> str:
    """``did you mean X?`` for the options closest to a misspelt ``name`` ('' if none)."""
    import difflib

    close = difflib.get_close_matches(name, sorted(set(options)), n=3, cutoff=0.7)
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


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
                         "are unrolled; smaller trip counts, or a longer --timeout)", loc)
        self.seconds = seconds
