"""pytest integration: assert pipeproof verdicts in a kernel project's own test suite.

Installed with pipeproof (entry point ``pytest11``), so nothing needs configuring::

    # test_pipelines.py
    from pipeproof import check
    from pipeproof.pytest_plugin import assert_safe, assert_violated

    from mykernels.mainloop import mainloop          # a @cute.kernel written with pipeproof

    def test_mainloop_is_safe(pipeproof_check):
        assert_safe(pipeproof_check(mainloop, {"stages": 4, "k_tiles": 6}))

    def test_mainloop_bug_is_caught():
        assert_violated("kernels/p1-bug.pipe", "deadlock")

* ``pipeproof_check`` -- a fixture: ``pipeproof_check(kernel, params=None, **engine_kw)``
  returns a ``CheckResult`` (a ``@cute.kernel``, a kernel IR or a ``.pipe`` path) with the
  session's limits (``--pipeproof-timeout``, ``--pipeproof-max-states``, or per test
  ``@pytest.mark.pipeproof(timeout=..., max_states=...)``); with ``--pipeproof-html DIR``
  every check that is not SAFE/PROVEN also writes ``DIR/<test name>.html``.
* ``assert_safe(result_or_kernel, params=None, allow_bounded=True)`` -- passes on SAFE or
  PROVEN; fails on VIOLATED with the counterexample as a timeline and the explanation in
  the assertion message, and on UNKNOWN (pipeproof never calls unsure results safe).
* ``assert_violated(result_or_kernel, prop, params=None)`` -- passes when the check finds
  exactly ``prop`` (a regression test for a known bug).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_STATES = 2_000_000


def _result(obj: Any, params: Optional[dict[str, Any]], **kw: Any) -> Any:
    """A CheckResult: ``obj`` is one already, a CuTe DSL kernel as ``"kernel.py::entry"``
    (``check_cute``; ``arch=`` and ``data_races=`` in ``kw``), or something
    ``pipeproof.check`` accepts."""
    if hasattr(obj, "verdict") and hasattr(obj, "render_text"):
        return obj
    if isinstance(obj, str) and ("::" in obj or obj.endswith(".py")):
        from .api import check_cute  # a CuTe DSL kernel: "kernel.py::entry"

        return check_cute(obj, params, **kw)
    from .dsl import check

    return check(obj, params, **kw)


def _describe(result: Any) -> str:
    from .checker.explain import explain

    text = result.render_text(fmt="timeline", width=160)
    words = explain(result.verdict)
    return text + ("\n\n" + words if words else "")


def assert_safe(result_or_kernel: Any, params: Optional[dict[str, Any]] = None, *,
                allow_bounded: bool = True, **kw: Any) -> Any:
    """Assert that a kernel is SAFE or PROVEN; return the ``CheckResult``."""
    __tracebackhide__ = True
    r = _result(result_or_kernel, params, **kw)
    status = r.verdict.status
    if status == "PROVEN" or (status == "SAFE" and allow_bounded):
        return r
    if status == "SAFE":
        pytest.fail(f"pipeproof: {r.verdict.headline()} -- only bounded; an unbounded "
                    "result was required (allow_bounded=False)", pytrace=False)
    pytest.fail(f"pipeproof: expected SAFE or PROVEN, got {r.verdict.headline()}\n\n"
                + _describe(r), pytrace=False)


def assert_violated(result_or_kernel: Any, prop: str,
                    params: Optional[dict[str, Any]] = None, **kw: Any) -> Any:
    """Assert that checking finds a violation of ``prop``; return the ``CheckResult``."""
    __tracebackhide__ = True
    r = _result(result_or_kernel, params, **kw)
    if r.verdict.status == "VIOLATED" and r.verdict.prop == prop:
        return r
    extra = "\n\n" + _describe(r) if r.verdict.status == "VIOLATED" else ""
    pytest.fail(f"pipeproof: expected VIOLATED {prop}, got {r.verdict.headline()}" + extra,
                pytrace=False)


# --------------------------------------------------------------------------- plugin hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("pipeproof", "pipeproof model checking")
    g.addoption("--pipeproof-timeout", type=float, default=None,
                help=f"seconds per pipeproof check before UNKNOWN (default {DEFAULT_TIMEOUT:.0f})")
    g.addoption("--pipeproof-max-states", type=int, default=None,
                help=f"states per check before UNKNOWN (default {DEFAULT_MAX_STATES:,})")
    g.addoption("--pipeproof-html", metavar="DIR", default=None,
                help="write an HTML report for every pipeproof check that is not safe")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "pipeproof(timeout=None, max_states=None): limits of the pipeproof "
                   "checks made through the pipeproof_check fixture in this test")


@pytest.fixture
def pipeproof_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``pipeproof_check(kernel, params=None, **engine_kw) -> CheckResult``; ``kernel``
    may be a CuTe DSL kernel as ``"kernel.py::entry"``."""
    cfg = request.config
    marker = request.node.get_closest_marker("pipeproof")
    defaults: dict[str, Any] = {
        "timeout": cfg.getoption("--pipeproof-timeout") or DEFAULT_TIMEOUT,
        "max_states": cfg.getoption("--pipeproof-max-states") or DEFAULT_MAX_STATES,
    }
    if marker is not None:
        defaults.update({k: v for k, v in marker.kwargs.items() if v is not None})
    html_dir = cfg.getoption("--pipeproof-html")
    count = [0]

    def run(kernel: Any, params: Optional[dict[str, Any]] = None, **kw: Any) -> Any:
        r = _result(kernel, params, **{**defaults, **kw})
        if html_dir and r.verdict.status not in ("SAFE", "PROVEN"):
            from .checker.explain import explain
            from .checker.render.html import Report, write_html

            count[0] += 1
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
            out = Path(html_dir)
            out.mkdir(parents=True, exist_ok=True)
            path = out / (f"{name}.html" if count[0] == 1 else f"{name}-{count[0]}.html")
            write_html(Report.from_result(r, explain(r.verdict)), str(path))
        return r

    return run
