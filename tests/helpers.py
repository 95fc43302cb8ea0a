"""Small helpers for tests: check a .pipe source string and get the verdict."""

from __future__ import annotations

from typing import Any, Optional

from pipeproof.api import CheckResult, check_source

#: The engine calls of the suite get no wall-clock limit: each is bounded by depth or
#: states instead, so a slow or loaded machine changes how long a test takes, never its
#: verdict (issue 23).  Tests of the timeout itself pass small timeouts of their own.
NO_DEADLINE = float("inf")


def check(src: str, params: Optional[dict[str, Any]] = None, **kw: Any) -> CheckResult:
    kw.setdefault("max_states", 500_000)
    kw.setdefault("timeout", NO_DEADLINE)
    kw.setdefault("engine", "explicit")
    return check_source(src, params, filename="<test>", **kw)
