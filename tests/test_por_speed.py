"""The per-state cost work on ``checker/por.py`` changes no stubborn set: in every state the
explicit engine expands, the optimised ``Reducer.reduce`` returns exactly the steps the
frozen reference copy (``tests/por_reference.py``, the code before that work) returns.
Checked state by state on every bundled example (bounded search) and on random generated
configurations and mutants; the search's state and transition counts and verdict must be
equal too."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given, settings

import generators as G
import por_reference as ref
from pipeproof.checker import explicit as explicit_mod
from pipeproof.checker import por as new
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.errors import ConfigError
from test_reduction_hypothesis import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.pipe"))


class _Both:
    """Run the optimised and the reference reducer side by side; fail on any difference."""

    def __init__(self, explorer: Any, full: bool):
        self.new = new.Reducer(explorer.sys, explorer, full=full)
        self.ref = ref.Reducer(explorer.sys, explorer, full=full)
        self.states = 0

    def reduce(self, state: tuple, enabled: list[tuple]) -> list[tuple]:
        got = self.new.reduce(state, list(enabled))
        want = self.ref.reduce(state, list(enabled))
        self.states += 1
        assert got == want, f"stubborn sets differ in state {state!r}:\n {got}\n {want}"
        return got


def _run(system_of: Any, max_states: int) -> None:
    """Search with both reducers compared state by state, then the optimised one alone and
    the reference alone: equal verdicts, states and transitions."""
    made: list[_Both] = []

    def both(full: bool, deadline: Optional[float] = None) -> Any:
        def mk(ex: Any) -> _Both:
            made.append(_Both(ex, full))
            return made[-1]
        return mk

    kw = dict(max_states=max_states, timeout=600, por=True, confirm_timeout=0)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(explicit_mod, "stubborn_sets", both)
        v_both = check_explicit(system_of(), **kw)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(explicit_mod, "stubborn_sets", ref.stubborn_sets)
        v_ref = check_explicit(system_of(), **kw)
    v_new = check_explicit(system_of(), **kw)
    for v in (v_both, v_new):
        assert (v.status, v.prop, v.stats.states, v.stats.transitions) == \
            (v_ref.status, v_ref.prop, v_ref.stats.states, v_ref.stats.transitions)


def _example_system(path: Path) -> Any:
    try:
        return G.build_system(path.read_text())
    except Exception:  # examples needing parameters or another front end: not ours
        return None


def _check_example(path: Path, max_states: int) -> None:
    if _example_system(path) is None:
        pytest.skip("does not compile with default parameters")
    _run(lambda: _example_system(path), max_states)


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT / "examples"))
                                                 for p in EXAMPLES])
def test_same_stubborn_sets_on_examples_quick(path: Path) -> None:
    _check_example(path, 40)


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT / "examples"))
                                                 for p in EXAMPLES])
def test_same_stubborn_sets_on_examples(path: Path) -> None:
    _check_example(path, 2000)


@pytest.mark.slow
@pytest.mark.parametrize("path,params", [
    ("textbook/pipeline_tma_async_multicast.pipe", {"stages": 4, "k_tiles": 8}),
    ("kernels/k1_hopper_persistent_gemm.pipe", {"ab_stage": 4, "k_tiles": 8}),
])
def test_same_stubborn_sets_on_4_stage_2x2(path: str, params: dict) -> None:
    src = (ROOT / "examples" / path).read_text()
    _run(lambda: G.build_system(src, params), 150)


def _check_program(prog: G.Program) -> None:
    try:
        G.build_system(prog.source)
    except ConfigError:
        return
    _run(lambda: G.build_system(prog.source), 3000)


@settings(max_examples=8, **SETTINGS)
@given(G.programs())
def test_same_stubborn_sets_on_generated_programs(prog: G.Program) -> None:
    _check_program(prog)


@settings(max_examples=8, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_same_stubborn_sets_on_generated_mutants(prog: G.Program) -> None:
    _check_program(prog)
