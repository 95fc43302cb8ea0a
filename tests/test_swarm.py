"""``--engine swarm`` (``checker/swarm.py``): random runs of the unreduced model.

What it must never do: call a kernel correct (it answers UNKNOWN when it finds nothing), or
report a counterexample that is not a run of the model.  Checked against the explicit
engine on bundled bugs and on generated kernels and mutants (hypothesis); every run is
bounded by a number of runs and steps, never by time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

import generators as G
from helpers import NO_DEADLINE
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.swarm import check_swarm
from pipeproof.model.errors import ConfigError
from test_por import _is_counterexample
from test_reduction_hypothesis import SETTINGS

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name", ["bugs/p1-bug.pipe", "bugs/p4-bug.pipe", "bugs/p9-bug.pipe",
                                  "bugs/x1-bug.pipe"])
def test_finds_the_bundled_bugs_with_runs_of_the_model(name: str) -> None:
    system = G.build_system((EX / name).read_text())
    v = check_swarm(system, runs=50, timeout=NO_DEADLINE)
    ref = check_explicit(G.build_system((EX / name).read_text()), timeout=NO_DEADLINE)
    assert v.status == ref.status == "VIOLATED", v.headline()
    assert v.trace is not None and len(v.trace.steps) == v.depth
    assert _is_counterexample(system, v.trace.steps, v.prop)
    # the same bug: the property the shortest run violates, or another one that run
    # reaches on the way to a deeper one
    assert v.depth >= ref.depth
    assert v.stats.extra["shortest"] is False


def test_a_correct_kernel_is_unknown_never_proven() -> None:
    system = G.build_system((EX / "textbook/pipeline_tma_async.pipe").read_text())
    v = check_swarm(system, runs=30, timeout=NO_DEADLINE)
    assert v.status == "UNKNOWN"
    assert "30 random runs" in v.reason and "prove nothing" in v.reason
    assert v.stats.extra["runs"] == 30


def test_runs_are_reproducible_and_the_seed_varies_them() -> None:
    src = (EX / "bugs/p9-bug.pipe").read_text()
    a = check_swarm(G.build_system(src), runs=20, seed=3, timeout=NO_DEADLINE)
    b = check_swarm(G.build_system(src), runs=20, seed=3, timeout=NO_DEADLINE)
    assert a.trace.steps == b.trace.steps and a.stats.extra["run"] == b.stats.extra["run"]
    c = check_swarm(G.build_system(src), runs=20, seed=4, timeout=NO_DEADLINE)
    assert (c.stats.extra["run"], c.trace.steps) != (a.stats.extra["run"], a.trace.steps)


def test_the_depth_bound_ends_a_run() -> None:
    system = G.build_system((EX / "textbook/pipeline_tma_async.pipe").read_text())
    v = check_swarm(system, runs=3, depth=5, timeout=NO_DEADLINE)
    assert v.status == "UNKNOWN" and v.depth == 5
    assert v.stats.extra["runs_at_depth_bound"] == 3 and "bound of 5 steps" in v.reason


@settings(max_examples=20, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_what_it_finds_the_explicit_engine_finds(prog: G.Program) -> None:
    """Differential: a violation found by a random run is a run of the model, and the
    exhaustive search also finds the kernel violated; where the exhaustive search proves
    the kernel, no run finds anything."""
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    v = check_swarm(system, runs=20, depth=2_000, timeout=NO_DEADLINE)
    full = check_explicit(G.build_system(prog.source), max_states=300_000,
                          timeout=NO_DEADLINE)
    assert v.status in ("VIOLATED", "UNKNOWN"), prog.describe()
    if v.status == "VIOLATED":
        assert full.status == "VIOLATED", prog.describe()
        if v.prop != "starvation":
            assert _is_counterexample(system, v.trace.steps, v.prop), prog.describe()
    if full.status == "PROVEN":
        assert v.status == "UNKNOWN", prog.describe()


@settings(max_examples=10, **SETTINGS)
@given(G.programs())
def test_valid_programs_give_nothing(prog: G.Program) -> None:
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    v = check_swarm(system, runs=10, depth=2_000, timeout=NO_DEADLINE)
    assert v.status == "UNKNOWN", prog.describe() + "\n" + v.headline()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeproof.cli", "check", *args],
                          capture_output=True, text=True, timeout=600)


def test_command_line() -> None:
    bug = _cli(str(EX / "bugs/p4-bug.pipe"), "--engine", "swarm")
    assert bug.returncode == 1, bug.stdout + bug.stderr
    assert "engine swarm" in bug.stdout and "found by a random run" in bug.stdout
    assert "--engine explicit" in bug.stdout
    smt = _cli(str(EX / "bugs/p4-bug.pipe"), "--engine", "swarm", "--smt2", "/tmp/x.smt2")
    assert smt.returncode == 2 and "Traceback" not in smt.stderr


def test_the_seed_reaches_the_runs_from_the_api_and_the_command_line() -> None:
    import json

    from pipeproof.api import check_file

    path = EX / "bugs/p9-bug.pipe"
    want = {s: check_swarm(G.build_system(path.read_text()), seed=s, timeout=NO_DEADLINE)
            for s in (0, 5)}
    for s, w in want.items():
        v = check_file(str(path), engine="swarm", seed=s, timeout=NO_DEADLINE).verdict
        assert (v.stats.extra["run"], v.depth) == (w.stats.extra["run"], w.depth)
    out = _cli(str(path), "--engine", "swarm", "--seed", "5", "--json")
    assert out.returncode == 1, out.stderr
    got = json.loads(out.stdout)
    assert (got["stats"]["run"], got["depth"]) == (want[5].stats.extra["run"], want[5].depth)
    assert want[0].stats.extra["run"] != want[5].stats.extra["run"]  # the seed mattered
    bad = _cli(str(path), "--engine", "swarm", "--seed", "x")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
