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


def undecided_certificate(monkeypatch: Any, seconds: float = 0.0) -> None:
    """The default engine's BMC certificate stage, replaced by one that takes ``seconds``
    and decides nothing (for tests of the stages racing after it); BMC's unrolling stays
    the real one."""
    import time

    from pipeproof.checker import bmc
    from pipeproof.checker.verdict import UNKNOWN, Verdict

    real = bmc.check_bmc

    def slow(system: Any, **kw: Any) -> Verdict:
        assert kw.get("certificate_only") or not kw.get("certificate", True)
        if kw.get("certificate_only"):
            time.sleep(seconds)
            return Verdict(UNKNOWN, reason="no certificate: (test)")
        return real(system, **kw)

    monkeypatch.setattr(bmc, "check_bmc", slow)
