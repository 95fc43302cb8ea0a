"""Property tests over random programs of every pipeline class (tests/generators.py).

* A random valid configuration with correct role programs is SAFE/PROVEN.
* A random single mutation of a correct program is found: VIOLATED with one of the
  properties that mutation can plausibly produce, or an input error (exit code 2)
  whose message names the problem.

The explicit engine runs without reductions (``reduce=False``), so these tests pin the
semantics, not the engine's optimisations (tests/test_reduction_hypothesis.py compares
the two).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.model.errors import ConfigError

import generators as G
from helpers import NO_DEADLINE

SETTINGS = dict(deadline=None, derandomize=False, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _explain(prog: G.Program, got: str) -> str:
    return f"{prog.describe()}\n  got: {got}\n--- source ---\n{prog.source}"


def _check(prog: G.Program) -> None:
    try:
        v = G.check_program(prog.source, reduce=False, max_states=300_000, timeout=NO_DEADLINE)
    except ConfigError as e:
        assert G.outcome_matches(prog, error=e), _explain(prog, f"ConfigError: {e}")
        assert e.loc is not None and e.loc.line > 0, _explain(prog, f"no location: {e}")
        return
    got = f"{v.status} {v.prop or ''} {v.reason}"
    assert v.status != "UNKNOWN", _explain(prog, got)
    assert G.outcome_matches(prog, v), _explain(prog, got)
    if v.status == "VIOLATED":
        # a readable counterexample that ends in the violation (deadlocks: a stuck state)
        assert v.trace is not None, _explain(prog, got)
        if v.prop != "deadlock":
            assert v.trace.events and v.trace.events[-1].violation, _explain(prog, got)
        else:
            assert v.trace.blocked, _explain(prog, got)


@pytest.mark.parametrize("cls", G.CLASSES)
@settings(max_examples=4, **SETTINGS)
@given(data=st.data())
def test_random_valid_configuration_is_safe(cls: str, data: st.DataObject) -> None:
    prog = data.draw(G.programs(cls), label="program")
    _check(prog)


@pytest.mark.parametrize("cls", G.CLASSES)
@settings(max_examples=6, **SETTINGS)
@given(data=st.data())
def test_random_single_mutation_is_found(cls: str, data: st.DataObject) -> None:
    prog = data.draw(G.mutants(cls), label="mutant")
    _check(prog)


@settings(max_examples=15, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_random_behavioural_mutation_of_any_class_is_found(prog: G.Program) -> None:
    _check(prog)


def test_every_class_has_mutations_of_both_kinds() -> None:
    """Each class can be broken behaviourally (a VIOLATED verdict) and as input."""
    import itertools

    for cls in G.CLASSES:
        cfgs = [G.Config(cls, stages=s, k_tiles=k, tiles=t, cw=2 if cls in (
            "PipelineTmaStore", "TmaStoreFence") else 1)
            for s, k, t in itertools.product([1, 2], [1, 3], [1, 2])]
        kinds = {e.kind for c in cfgs for _n, e in G.mutations(c)}
        assert kinds == {"violated", "config_error"}, cls
