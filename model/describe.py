"""Values as a .pipe author writes them, for messages: never a Python repr with an
address.  A leaf module (it imports nothing of ours; values are recognised by their
class names), so that the model's modules can use it without importing the compiler."""

from __future__ import annotations

from typing import Any


def describe(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return str(v) if v.bit_length() <= 80 else f"an integer of {v.bit_length()} bits"
    if isinstance(v, str):
        return repr(v) if len(v) <= 60 else repr(v[:57] + "...")
    if isinstance(v, (tuple, list)):
        inner = ", ".join(describe(x) for x in v[:8]) + (", ..." if len(v) > 8 else "")
        return f"({inner}{',' if len(v) == 1 else ''})"
    kind = type(v).__name__
    if kind == "Builtin":
        return f"the builtin {v.name}"
    if kind == "PipelineClassRef":
        return f"the class {v.name}"
    if _is_pipeline(v):
        return f"the pipeline {v.decl.var}"
    if kind == "PipelineStateVal":
        return "a PipelineState"
    if kind == "Module":
        return f"the module {v.path}"
    if kind == "DynExpr":
        return "a run-time value"
    if kind == "Layout":
        return f"a layout of shape {describe(v.shape)}"
    name = getattr(v, "name", None)
    return f"{kind} {name}" if isinstance(name, str) else kind


def _is_pipeline(v: Any) -> bool:
    """An instance of ``model.pipelines.base.PipelineBase`` (by its class hierarchy)."""
    return any(c.__name__ == "PipelineBase" for c in type(v).__mro__)
