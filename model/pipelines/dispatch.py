"""Calling a method of a pipeline object from ``.pipe`` code: ``pipe.NAME(args)`` runs
``m_NAME(cx, *args, **kwargs)``, after checking that the arguments fit its signature,
so that a missing, extra or unknown argument is a ConfigError naming what the method
takes (never a Python TypeError)."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable

from ..errors import did_you_mean


def signature_text(owner: str, name: str, fn: Callable[..., Any]) -> str:
    """``pipe.producer_acquire(state, try_acquire_token=None)`` in the author's words."""
    parts = []
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if i == 0 and p.name == "cx":
            continue
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={p.default!r}" if p.default is None or
                         isinstance(p.default, (int, str)) else f"{p.name}=...")
    return f"{owner}.{name}({', '.join(parts)})"


def check_arguments(cx: Any, owner: str, name: str, fn: Callable[..., Any], args: tuple,
                    kwargs: dict) -> None:
    """``cx.error`` where ``fn(cx, *args, **kwargs)`` would not bind."""
    try:
        inspect.signature(fn).bind(cx, *args, **kwargs)
    except TypeError as e:
        why = str(e).replace("positional argument", "argument")
        m = re.search(r"unexpected keyword argument '(\w+)'", why)
        hint = did_you_mean(m.group(1), list(inspect.signature(fn).parameters)[1:]) if m else ""
        cx.error(f"{signature_text(owner, name, fn)}: {why}", hint)


def call_method(cx: Any, owner: str, name: str, fn: Callable[..., Any], args: tuple,
                kwargs: dict) -> Any:
    check_arguments(cx, owner, name, fn, args, kwargs)
    return fn(cx, *args, **kwargs)
