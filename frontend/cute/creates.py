"""The configuration of every pipeline ``create(...)`` the user's kernel calls, recorded
while ``cute.compile`` traces it (``capture.py``).

The captured IR has folded a pipeline's configuration into barrier counts, byte counts
and masks; the cross-check (``crosscheck.py``) needs the configuration itself, to build
the same pipeline in ``model/pipelines/``.  A wrapper on each ``cutlass.pipeline``
class's ``create`` (a static method, ``cutlass/pipeline/sm90.py``, ``sm100.py``) records
its keyword arguments, rendered as the ``.pipe`` expressions that build the same values
(the ``.pipe`` language spells them as CuTe DSL does), and the user's line.  Only the
outermost ``create`` is recorded: one class's ``create`` may call another's.
"""

from __future__ import annotations

import enum
import os
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

#: arguments that do not describe the protocol (storage, names, the thread index CUTLASS
#: reads itself) or that the cross-check sets itself (``defer_sync``: the probe checks
#: one method call, not the synchronisation ``create`` runs)
IGNORED = frozenset({"barrier_storage", "name", "tidx", "defer_sync", "loc", "ip"})


@dataclass(frozen=True)
class CreateCall:
    """One ``Class.create(...)`` call: class, arguments as ``.pipe`` text, user line."""

    cls: str
    kwargs: tuple[tuple[str, str], ...]
    #: arguments with a value that has no ``.pipe`` spelling (name: why)
    unrendered: tuple[str, ...]
    file: str
    line: int


class Unrenderable(ValueError):
    pass


def render(v: Any) -> str:
    """A DSL value as ``.pipe`` text; ``Unrenderable`` for a run-time value."""
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(int(v))
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if isinstance(v, (tuple, list)):
        inner = ", ".join(render(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    tname = type(v).__name__
    if tname == "CooperativeGroup":
        return f"CooperativeGroup({render(v.agent)}, {render(v.size)})"
    if hasattr(v, "shape") and hasattr(v, "stride") and "Layout" in tname:
        try:
            shape, stride = v.shape, v.stride
            return f"cute.make_layout({render(shape)}, stride={render(stride)})"
        except Unrenderable:
            raise
        except Exception as e:  # a layout with run-time extents
            raise Unrenderable(f"a layout the DSL cannot give statically ({e})") from None
    raise Unrenderable(f"a {tname} value known only at run time")


def _user_line(roots: tuple[str, ...]) -> tuple[str, int]:
    for fr in reversed(traceback.extract_stack()):
        p = os.path.abspath(fr.filename)
        if fr.filename.startswith("<") or any(p.startswith(r + os.sep) for r in roots):
            continue
        return fr.filename, fr.lineno or 0
    return "<kernel>", 0


def pipeline_classes() -> list[type]:
    try:
        import cutlass.pipeline as P
    except ImportError:
        return []
    out = []
    for name in dir(P):
        c = getattr(P, name)
        if isinstance(c, type) and "create" in c.__dict__ and name.startswith("Pipeline"):
            out.append(c)
    return out


#: method arguments that are run-time values the probe leaves out (a try_wait token
#: only decides at run time whether the wait is skipped) or DSL plumbing
METHOD_IGNORED = frozenset({"try_acquire_token", "try_wait_token", "loc", "ip"})


@dataclass(frozen=True)
class MethodArgs:
    """The arguments after the state of the pipeline method ``method`` called (perhaps
    through a participant) from the user's ``file:line``, as ``.pipe`` text; ``None``
    where one has no ``.pipe`` spelling."""

    file: str
    line: int
    method: str
    args: Optional[tuple[str, ...]]


class CreateRecorder:
    """``with CreateRecorder(roots) as rec:`` records every outermost ``create`` call and
    the extra arguments of every pipeline method call (``PipelineOp`` of
    ``consumer_release``, ``extra_tx_count``, ...)."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = tuple(os.path.abspath(r) for r in roots)
        self.calls: list[CreateCall] = []
        self.methods: dict[tuple[str, int, str], set] = {}
        self._saved: list[tuple[type, str, Any]] = []
        self._depth = 0

    def _wrap_method(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        rec = self

        def method(*args: Any, **kwargs: Any) -> Any:
            try:
                extra = [render(a) for a in args[2:]]  # self, state, ...
                extra += [f"{k}={render(v)}" for k, v in kwargs.items()
                          if k not in METHOD_IGNORED and v is not None]
                got: Optional[tuple[str, ...]] = tuple(extra)
            except Unrenderable:
                got = None
            f, line = _user_line(rec.roots)
            rec.methods.setdefault((os.path.abspath(f), line, name), set()).add(got)
            return fn(*args, **kwargs)
        method.__wrapped__ = fn  # type: ignore[attr-defined]
        return method

    def method_args(self) -> tuple[MethodArgs, ...]:
        out = []
        for (f, line, name), seen in sorted(self.methods.items()):
            out.append(MethodArgs(f, line, name, seen.pop() if len(seen) == 1 else None))
        return tuple(out)

    def _wrap(self, cls: type, fn: Callable[..., Any]) -> Callable[..., Any]:
        rec = self

        def create(*args: Any, **kwargs: Any) -> Any:
            if rec._depth == 0:
                rec._record(cls.__name__, kwargs)
            rec._depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                rec._depth -= 1
        return create

    def _record(self, cls: str, kwargs: dict) -> None:
        out, bad = [], []
        for k, v in kwargs.items():
            if k in IGNORED:
                continue
            try:
                out.append((k, render(v)))
            except Unrenderable as e:
                bad.append(f"{k}: {e}")
        f, line = _user_line(self.roots)
        self.calls.append(CreateCall(cls, tuple(out), tuple(bad), f, line))

    def __enter__(self) -> "CreateRecorder":
        import inspect

        for c in pipeline_classes():
            raw = c.__dict__["create"]
            fn = getattr(c, "create")
            self._saved.append((c, "create", raw))
            setattr(c, "create", staticmethod(self._wrap(c, fn)))
            for name, f in list(c.__dict__.items()):
                if name.startswith(("producer_", "consumer_")) and inspect.isfunction(f):
                    self._saved.append((c, name, f))
                    setattr(c, name, self._wrap_method(name, f))
        return self

    def __exit__(self, *exc: Any) -> Optional[bool]:
        for c, name, raw in reversed(self._saved):
            setattr(c, name, raw)
        self._saved.clear()
        return None
