"""Small helpers for tests: check a .pipe source string and get the verdict."""

from __future__ import annotations

from typing import Any, Optional

from pipeproof.api import CheckResult, check_source


def check(src: str, params: Optional[dict[str, Any]] = None, **kw: Any) -> CheckResult:
    kw.setdefault("max_states", 500_000)
    kw.setdefault("timeout", 120.0)
    kw.setdefault("engine", "explicit")
    return check_source(src, params, filename="<test>", **kw)
