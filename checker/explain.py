"""One short paragraph in words about a violation (``--explain``)."""

from __future__ import annotations

from .properties import BY_NAME
from .verdict import Verdict


def explain(v: Verdict) -> str:
    info = BY_NAME.get(v.prop or "")
    if v.trace is None or info is None:
        return ""
    last = v.trace.events[-1] if v.trace.events else None
    text = f"What went wrong: {info.summary}."
    if v.prop == "deadlock" and v.trace.blocked:
        text += " At the end of the trace " + "; ".join(v.trace.blocked[:4]) + "."
    elif last is not None:
        text += f" In step {last.step}, {last.actor} ({last.role}) did '{last.what}'"
        text += f" at {last.loc}." if last.loc else "."
    text += f" Source of the rule: {info.source}."
    return text
