"""The native engine (``checker/native/``) against the Python explicit engine.

Differential: on bundled examples and on generated kernels (``tests/generators.py``) the
native engine must give the explicit engine's verdict without reductions, state count
for state count, transition for transition, with the same counterexample steps.  Both
searches are bounded by states, never by time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("cffi", reason="the native engine needs cffi (pip install .[native])")
if not any(shutil.which(c) for c in ("cc", "gcc")):  # pragma: no cover
    pytest.skip("the native engine needs a C compiler", allow_module_level=True)

from generators import build_system, mutants, programs  # noqa: E402

from pipeproof.checker.explicit import check_explicit  # noqa: E402
from pipeproof.checker.native import search  # noqa: E402
from pipeproof.checker.native.search import check_native  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.pipe"))
#: a few examples of every kind for the default run: a proof, a deadlock, safety
#: violations, asynchronous queues, a cluster, loops for ever with and without starvation
QUICK = ["examples/textbook/pipeline_async.pipe", "examples/bugs/p1-bug.pipe",
         "examples/bugs/p4-bug.pipe", "examples/textbook/cp_async_groups.pipe",
         "examples/textbook/pipeline_tma_store.pipe",
         "examples/liveness/persistent_consumer_stops_releasing.pipe"]
MAX_STATES = 20_000


def _same(system, max_states: int = MAX_STATES) -> None:
    v = check_native(system, max_states=max_states, timeout=1e6)
    w = check_explicit(system, max_states=max_states, timeout=1e6, reduce=False)
    got = (v.status, v.prop, v.stats.states, v.stats.transitions, v.depth)
    want = (w.status, w.prop, w.stats.states, w.stats.transitions, w.depth)
    assert got == want, (got, want, v.reason, w.reason)
    assert v.stats.engine == "native"
    if w.trace is not None:
        assert v.trace is not None
        assert v.trace.steps == w.trace.steps
        assert [e.what for e in v.trace.events] == [e.what for e in w.trace.events]
        assert v.trace.blocked == w.trace.blocked
    if w.status == "UNKNOWN":
        assert v.reason == w.reason


@pytest.mark.parametrize("path", QUICK)
def test_native_matches_explicit_quick(path: str) -> None:
    _same(build_system((ROOT / path).read_text()), max_states=5_000)


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES)
def test_native_matches_explicit_every_example(path: str) -> None:
    _same(build_system((ROOT / path).read_text()))


def test_state_limit_is_the_same_unknown() -> None:
    """Stopped by --max-states mid-layer: the same states seen, the same UNKNOWN."""
    _same(build_system((ROOT / "examples/bugs/p9-fixed.pipe").read_text()), max_states=3_000)


def test_overflow_restarts_with_a_wider_encoding(monkeypatch) -> None:
    """A one-state sample guesses ranges far too small (expect_tx of 8192 bytes on a tx-count seen only at 0):
    the engine must notice every overflow, widen and end with the explicit verdict."""
    monkeypatch.setattr(search, "SAMPLE_STATES", 1)
    sysm = build_system((ROOT / "examples/textbook/pipeline_tma_async.pipe").read_text())
    v = check_native(sysm, max_states=MAX_STATES, timeout=1e6)
    assert v.stats.extra["restarts"] >= 1
    w = check_explicit(sysm, max_states=MAX_STATES, timeout=1e6, reduce=False)
    assert (v.status, v.stats.states, v.stats.transitions, v.depth) == \
        (w.status, w.stats.states, w.stats.transitions, w.depth)


def _built(prog):
    """The mutant's system, or None where the compiler refuses the mutation (only the
    compiler's own refusals: any other exception is a bug and fails the test)."""
    from pipeproof.model.errors import ConfigError, Unsupported
    try:
        return build_system(prog.source)
    except (ConfigError, Unsupported):
        return None


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_native_matches_explicit_on_generated_kernels(prog) -> None:
    _same(build_system(prog.source), max_states=5_000)


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(mutants())
def test_native_matches_explicit_on_generated_bugs(prog) -> None:
    sysm = _built(prog)
    if sysm is None:
        return
    _same(sysm, max_states=5_000)


def test_cli_engine_native(capsys) -> None:
    from test_json_schema import SCHEMA, validate

    from pipeproof.cli import main

    rc = main(["check", str(ROOT / "examples/textbook/pipeline_async.pipe"), "--engine",
               "native", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "PROVEN"
    assert out["stats"]["engine"] == "native" and out["stats"]["states"] == 56
    validate(out, SCHEMA)
    rc = main(["check", str(ROOT / "examples/bugs/p1-bug.pipe"), "--engine", "native",
               "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["property"] == "deadlock" and out["trace"]["events"]
    validate(out, SCHEMA)


def test_cli_engine_native_takes_por(capsys) -> None:
    """``--por`` reaches the native engine: ``auto`` reduces a cluster kernel, ``off``
    does not (the same verdict)."""
    from pipeproof.cli import main

    path = str(ROOT / "examples/textbook/pipeline_tma_async_multicast.pipe")
    rc = main(["check", path, "--engine", "native", "--json"])
    on = json.loads(capsys.readouterr().out)
    rc2 = main(["check", path, "--engine", "native", "--json", "--por", "off",
                "--max-states", "20000"])
    off = json.loads(capsys.readouterr().out)
    assert rc == 0 and on["status"] == "PROVEN" and on["stats"]["states"] == 125
    assert on["stats"]["por"]["states"] > 0 and "por" not in off["stats"]
    assert rc2 == 3 and off["status"] == "UNKNOWN" and off["stats"]["states"] > 20000


def test_without_cffi_it_is_a_usage_error(monkeypatch, capsys) -> None:
    import sys

    from pipeproof.cli import main

    monkeypatch.setitem(sys.modules, "cffi", None)
    rc = main(["check", str(ROOT / "examples/textbook/pipeline_async.pipe"), "--engine",
               "native"])
    assert rc == 2
    assert "cffi" in capsys.readouterr().err


@pytest.mark.parametrize("path", ["examples/bugs/p1-bug.pipe", "examples/bugs/p7-bug.pipe",
                                  "examples/textbook/named_barrier.pipe"])
def test_native_symmetry_matches_explicit_symmetry(path: str) -> None:
    """Warp symmetry alone (no partial-order reduction) in both engines: the same
    verdict and depth; the same states and transitions wherever the search ends at a
    complete breadth-first layer (exhausted, or stopped at a violating step).  The two
    engines choose different representatives of a class, so a search that stops in the
    middle of a layer (a deadlock, a state limit) may have met other classes first."""
    import time

    from pipeproof.checker.explicit import _bfs
    from pipeproof.checker.statespace import Explorer

    sysm = build_system((ROOT / path).read_text())
    v = check_native(sysm, max_states=MAX_STATES, timeout=1e6, symmetry=True)
    ex = Explorer(sysm, symmetry=True)
    assert ex.groups and not ex.cyclic
    w = _bfs(ex, MAX_STATES, 1e6, None, None, time.perf_counter())
    assert (v.status, v.prop, v.depth) == (w.status, w.prop, w.depth)
    assert v.stats.extra["symmetric_groups"] == [len(g) for g in ex.groups]
    if w.status == "PROVEN" or (w.status == "VIOLATED" and w.prop != "deadlock"):
        assert (v.stats.states, v.stats.transitions) == (w.stats.states, w.stats.transitions)
    if w.trace is not None:  # the steps name real warps: valid in the unreduced model
        from pipeproof.checker.concrete import ConcreteRunner

        _states, viol = ConcreteRunner(sysm).run(v.trace.steps)
        assert (viol[0] if viol else "deadlock") == w.prop


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(mutants())
def test_native_matches_explicit_on_many_generated_bugs(prog) -> None:
    sysm = _built(prog)
    if sysm is None:
        return
    _same(sysm, max_states=20_000)
