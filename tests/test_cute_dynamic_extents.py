"""Loop bounds from a fake tensor's dynamic extent (``frontend/cute/shapes.py``).

``tests/cute_kernels/pipeline_async_dynamic_k.py`` compiles ``mA`` of shape
``(32, K)`` with ``K = cute.sym_int32(symbol="K")`` and loops over
``cute.size(cute.local_tile(mA, (32, 16), (0, None)), mode=[2])`` tiles.  ``--param
K=...`` names the extent: one value is lifted with it, a range is lifted once with
``K`` symbolic.  Differential: the answer per value equals the same module lifted
value by value, and the kernel compiled with a *static* extent (``static_k``: a
different module, no dynamic extent in it).  Skipped where the DSL is not installed.
"""

from __future__ import annotations

import os

import pytest

cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.api import check_cute  # noqa: E402
from pipeproof.checker.verdict import PROVEN, VIOLATED  # noqa: E402
from pipeproof.frontend.cute import lift_entry  # noqa: E402
from pipeproof.model.errors import ConfigError, Unsupported  # noqa: E402
from pipeproof.model.program import Wait  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "cute_kernels", "pipeline_async_dynamic_k.py")
LIMITS = dict(engine="explicit", jobs=1, max_states=200_000, timeout=3600.0)


def _values(text):
    out = set()
    for part in text.split("=", 1)[1].split(","):
        lo, _, hi = part.partition("..")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def by_value(r):
    """{K: (status, property)} of a symbolic answer's parameter groups."""
    return {v: (g["status"], g["property"])
            for g in r.verdict.stats.extra["parameter_groups"] for v in _values(g["values"])}


def _consumer_waits(lifted):
    prog = lifted.compiled.programs[1]
    return sum(isinstance(i, Wait) for i in prog.code)


def test_a_named_extent_takes_the_value_given_and_tiles_round_up():
    """local_tile of a 16-wide tile: ceil_div(K, 16) iterations of the k-loop."""
    got = {}
    for k in (16, 40, 48, 49):
        lifted = lift_entry(KERNEL, {"K": k})
        assert f"dynamic extent K = {k}" in lifted.notes
        assert not lifted.compiled.param_points
        got[k] = _consumer_waits(lifted)
    assert got == {16: 1, 40: 3, 48: 3, 49: 4}


def test_the_capture_records_which_extent_each_question_mark_is():
    from pipeproof.frontend.cute.capture import ShapeLeaf

    lifted = lift_entry(KERNEL, {"K": 16})
    assert lifted.capture.shapes == ((0, (ShapeLeaf("K", 1, "extent of mode 1 of mA"),)),)


def test_a_range_is_lifted_once_and_the_answer_names_the_failing_values():
    r = check_cute(KERNEL, {"K": range(1, 65), "bug": 1}, **LIMITS)
    assert (r.status, r.prop) == (VIOLATED, "deadlock")
    extra = r.verdict.stats.extra
    assert extra["symbolic_extents"] == ["K"]
    assert extra["parameter_values_checked"] == 64
    assert r.params["K"] == "1..64"
    answer = by_value(r)
    assert {k for k, (st, _) in answer.items() if st == VIOLATED} == \
        {k for k in range(1, 65) if k % 16}
    assert {k for k, (st, _) in answer.items() if st == PROVEN} == {16, 32, 48, 64}
    # the counterexample's split reads in the user's names: the consumer's trip count
    assert "n > 0: no (for K=" in r.render_text()


def test_the_correct_kernel_is_proven_for_every_extent_in_one_run():
    r = check_cute(KERNEL, {"K": range(1, 129)}, **LIMITS)
    assert r.status == PROVEN
    assert r.verdict.stats.extra["symbolic_runs"] == 1
    assert r.verdict.stats.extra["parameter_values_checked"] == 128


@pytest.mark.parametrize("bug,ks", [
    (1, range(14, 19)),
    pytest.param(2, range(47, 51), marks=pytest.mark.slow),
    pytest.param(3, range(31, 35), marks=pytest.mark.slow)])
def test_symbolic_answer_equals_value_by_value_and_the_static_compile(bug, ks):
    """Each bug's boundary: ceil vs floor at a multiple of 16 (bug 1), the fourth tile
    (bug 2: K > 48), more tiles than stages (bug 3: K > 32)."""
    sym = by_value(check_cute(KERNEL, {"K": ks, "bug": bug}, **LIMITS))
    same_module = {k: check_cute(KERNEL, {"K": k, "bug": bug}, **LIMITS) for k in ks}
    static = {k: check_cute(KERNEL, {"static_k": k, "bug": bug}, **LIMITS) for k in ks}
    assert sym == {k: (r.status, r.prop) for k, r in same_module.items()}
    assert sym == {k: (r.status, r.prop) for k, r in static.items()}
    assert {st for st, _ in sym.values()} == {PROVEN, VIOLATED}


def test_param_values_flag_checks_the_extent_value_by_value():
    r = check_cute(KERNEL, {"K": range(16, 19), "bug": 1}, symbolic_params=False, **LIMITS)
    assert (r.status, r.prop, r.params["K"]) == (VIOLATED, "deadlock", 17)


def test_a_declared_divisibility_leaves_out_values_that_are_no_launch_and_says_so():
    """``cute.sym_int32(divisibility=16)``: the floor/ceil bug cannot happen; the
    values that are not multiples of 16 are not checked, and the answer says so."""
    r = check_cute(KERNEL, {"K": range(1, 65), "bug": 1, "div": 16}, **LIMITS)
    assert r.status == PROVEN
    assert r.verdict.stats.extra["parameter_values_checked"] == 4
    assert any("4 of 64 values checked" in n for n in r.verdict.stats.extra["lift_notes"])
    with pytest.raises(ConfigError, match="multiple of 16"):
        lift_entry(KERNEL, {"K": 20, "div": 16})


def test_an_extent_without_a_value_stays_unknown_at_the_users_line():
    """(``pipeproof check`` prints the message as UNKNOWN, exit 3.)"""
    with pytest.raises(Unsupported) as e:
        check_cute(KERNEL, {}, **LIMITS)
    assert e.value.loc.file.endswith("pipeline_async_dynamic_k.py")
    assert "for k in range(k_tiles)" in str(e.value)
    assert "dynamic extents without a value (K)" in str(e.value)
    with pytest.raises(Unsupported, match="without a name"):
        check_cute(KERNEL, {"named": False}, **LIMITS)


def test_the_command_line_says_unknown_and_names_the_failing_values(capsys):
    from pipeproof.cli import main

    assert main(["check", KERNEL]) == 3
    assert main(["check", KERNEL, "--param", "K=1..64", "--param", "bug=2"]) == 1
    out = capsys.readouterr().out
    assert "K=49..64  VIOLATED deadlock" in out and "K=1..48   PROVEN" in out


def test_a_name_that_is_neither_a_parameter_nor_an_extent_is_a_usage_error():
    with pytest.raises(ConfigError, match="no fake tensor has a dynamic extent named 'M'"):
        lift_entry(KERNEL, {"M": 4})


def test_a_count_the_host_computes_from_the_extent_is_followed():
    """``host_k=True``: the ``@cute.jit`` function computes ``ceil_div(size(mA, 1),
    16)`` and passes it as a ``cutlass.Int32``; the lifter follows the host's ops
    from the extent to the launch, and the answer per value is the kernel-side one."""
    assert [_consumer_waits(lift_entry(KERNEL, {"K": k, "host_k": True}))
            for k in (16, 40, 49)] == [1, 3, 4]
    ks = range(44, 53)
    host = by_value(check_cute(KERNEL, {"K": ks, "bug": 2, "host_k": True}, **LIMITS))
    kernel = by_value(check_cute(KERNEL, {"K": ks, "bug": 2}, **LIMITS))
    assert host == kernel
    assert {k for k, (st, _) in host.items() if st == VIOLATED} == set(range(49, 53))
