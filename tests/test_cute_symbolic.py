"""Run-time trip counts on lifted CuTe DSL kernels (``frontend/cute/symbolic.py``).

``tests/cute_kernels/pipeline_async_runtime_k.py`` passes ``k_tiles`` to the kernel as a
``cutlass.Int32``: the loop bound is an SSA value of the captured module.  A single value
is bound to the value the entry compiled with; a range stays symbolic (one capture, one
lift, ``ParamSplit`` steps where the loop bound is compared).  Differential: the answer
per value equals the ``.pipe`` twin's symbolic answer and the lifted kernel's value-by-
value answers.  Skipped where the DSL is not installed.
"""

from __future__ import annotations

import os

import pytest

cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.api import check_cute, check_file  # noqa: E402
from pipeproof.checker.verdict import PROVEN, VIOLATED  # noqa: E402
from pipeproof.frontend.cute import lift_entry  # noqa: E402
from helpers import NO_DEADLINE

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "cute_kernels", "pipeline_async_runtime_k.py")
TWIN_BUG1 = os.path.join(HERE, "cute_kernels", "pipeline_async_runtime_k_bug1.pipe")
CONSTEXPR = os.path.join(HERE, "cute_kernels", "pipeline_async.py")
LIMITS = dict(engine="explicit", jobs=1, max_states=200_000, timeout=NO_DEADLINE)


def _groups(r):
    return [(g["values"], g["status"], g["property"])
            for g in r.verdict.stats.extra["parameter_groups"]]


def test_a_single_value_is_the_one_the_entry_compiled_with():
    lifted = lift_entry(KERNEL, {"k_tiles": 3})
    assert any("run-time argument k_tiles = 3" in n for n in lifted.notes)
    assert not lifted.compiled.param_points
    assert check_cute(KERNEL, {"k_tiles": 3, "bug": 1}, **LIMITS).status == PROVEN
    r = check_cute(KERNEL, {"k_tiles": 4, "bug": 1}, **LIMITS)
    assert (r.status, r.prop) == (VIOLATED, "deadlock")


def test_a_range_stays_symbolic_and_names_the_failing_values():
    r = check_cute(KERNEL, {"k_tiles": range(1, 9), "bug": 1}, **LIMITS)
    assert (r.status, r.prop) == (VIOLATED, "deadlock")
    extra = r.verdict.stats.extra
    assert extra["symbolic_parameters"] == ["k_tiles"]
    assert extra["symbolic_arguments"] == {"k_tiles": ["k_tiles"]}
    assert r.params["k_tiles"] == "1..8"
    groups = _groups(r)
    assert ("k_tiles=1..3", PROVEN, None) in groups
    bad = [g for g in groups if g[1] == VIOLATED]
    assert {v for g in bad for v in _values(g[0])} == set(range(4, 9))
    # the counterexample shows the splits on the parameter, in the user's name
    assert "k_tiles > 3" in r.render_text()


def _values(text):
    out = set()
    for part in text.split(", "):
        k, _, v = part.partition("=")
        lo, _, hi = v.partition("..")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def test_symbolic_answer_agrees_with_the_twin_and_with_each_value():
    lifted = check_cute(KERNEL, {"k_tiles": range(1, 7), "bug": 1}, **LIMITS)
    twin = check_file(TWIN_BUG1, {"k_tiles": range(1, 7)}, **LIMITS)
    per_value = {k: check_cute(KERNEL, {"k_tiles": k, "bug": 1}, **LIMITS)
                 for k in range(1, 7)}

    def by_value(r):
        return {v: (g[1], g[2]) for g in _groups(r) for v in _values(g[0])}

    assert by_value(lifted) == by_value(twin)
    assert by_value(lifted) == {k: (r.status, r.prop) for k, r in per_value.items()}


@pytest.mark.parametrize("bug", [2, 3])
def test_symbolic_answer_agrees_with_the_twin(bug):
    """bug 2 branches on ``k < k_tiles - 1`` (arithmetic on the run-time argument, point
    by point); bug 3 is a race only once k_tiles > stages."""
    lifted = check_cute(KERNEL, {"k_tiles": range(1, 6), "bug": bug}, **LIMITS)
    twin = check_file(TWIN_BUG1.replace("bug1", f"bug{bug}"), {"k_tiles": range(1, 6)},
                      **LIMITS)

    def by_value(r):
        return {v: (g[1], g[2]) for g in _groups(r) for v in _values(g[0])}

    assert by_value(lifted) == by_value(twin)
    assert VIOLATED in {st for st, _ in by_value(lifted).values()}


def test_correct_kernel_is_proven_for_the_whole_range_in_one_run():
    r = check_cute(KERNEL, {"k_tiles": range(1, 17)}, **LIMITS)
    assert r.status == PROVEN
    assert r.verdict.stats.extra["symbolic_runs"] == 1
    assert r.verdict.stats.extra["parameter_values_checked"] == 16


def test_param_values_flag_checks_value_by_value():
    r = check_cute(KERNEL, {"k_tiles": range(3, 5), "bug": 1}, symbolic_params=False,
                   **LIMITS)
    assert (r.status, r.params["k_tiles"]) == (VIOLATED, 4)
    assert "symbolic_parameters" not in r.verdict.stats.extra


def test_a_constexpr_trip_count_is_checked_value_by_value_saying_why():
    r = check_cute(CONSTEXPR, {"k_tiles": range(1, 3)}, **LIMITS)
    assert r.status == PROVEN
    why = r.verdict.stats.extra["parameters_by_value"]["k_tiles"]
    assert "no run-time integer argument" in why


def test_a_run_time_bound_without_a_value_stays_unknown_at_the_users_line():
    from pipeproof.frontend.cute import lift_text
    from pipeproof.frontend.cute.entry import parse_spec, run_entry
    from pipeproof.model.errors import Unsupported

    cap, _, _ = run_entry(parse_spec(KERNEL), {}, "sm_90a")
    with pytest.raises(Unsupported) as e:  # no Capture.scalars: the value is not known
        lift_text(cap.text, "k", {}, KERNEL, cap.dsl_version)
    assert "known only at run time (kernel argument" in str(e.value)
    assert "pipeline_async_runtime_k.py:" in str(e.value)


def test_runtime_scalars_count_the_host_functions_arguments():
    """``Capture.scalars``: a Constexpr is no IR argument, a number the DSL casts to its
    annotation is one, an integer's value is kept; counts that do not add up give
    nothing (no value rather than a wrong one)."""
    import inspect

    from cutlass._mlir import ir

    from pipeproof.frontend.cute.capture import runtime_scalars

    def host(a: cutlass.Int32, b: cutlass.Constexpr, c: cutlass.Float32, d: cutlass.Int32):
        pass

    sig = inspect.signature(host, eval_str=True)  # this file has postponed annotations
    args = (4, 2, 1.5, cutlass.Int32(7))
    with ir.Context(), ir.Location.unknown():
        assert runtime_scalars(args, sig, 3) == (
            ("a", 1, 4), ("b", 0, None), ("c", 1, None), ("d", 1, 7))
        assert runtime_scalars(args, sig, 4) == ()
