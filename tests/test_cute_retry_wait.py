"""Retried and timed mbarrier waits on lifted CuTe DSL kernels (``frontend/cute/
sync_ops.py``: ``retry_of``, ``spin_of``, ``wait_or_spin``) and run-time branches whose
results are booleans (``ops._dynamic_if``, ``ops._program_loop``).

``tests/cute_kernels/pipeline_async_timed_wait.py`` is ``pipeline_async.py`` with every
wait the idiom of NVIDIA's Hopper FMHA example: a timed try_wait, retried once, then a
spin.  A failed try_wait has no effect, so its lifted programs must be exactly those of
``pipeline_async.py`` (a differential test), bug for bug.  Skipped where the DSL is not
installed.
"""

from __future__ import annotations

import os

import pytest

cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.frontend.cute import lift_entry  # noqa: E402
from pipeproof.model.program import Branch, Jump, SetLocal, TryWait, Wait  # noqa: E402
from helpers import NO_DEADLINE

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cute_kernels")
TIMED = os.path.join(HERE, "pipeline_async_timed_wait.py")
PLAIN = os.path.join(HERE, "pipeline_async.py")


@pytest.mark.parametrize("bug", [0, 1, 2, 3])
def test_retried_timed_waits_lift_to_the_plain_waits(bug):
    timed = lift_entry(TIMED, {"bug": bug}).compiled
    plain = lift_entry(PLAIN, {"bug": bug}).compiled
    assert timed.pipelines == plain.pipelines
    for t, p in zip(timed.programs, plain.programs, strict=True):
        assert t.code == p.code  # instructions and ghost effects, not labels or lines
        assert not any(isinstance(i, (TryWait, Branch, Jump, SetLocal)) for i in t.code)
    assert any(isinstance(i, Wait) and i.loc.file.endswith("pipeline_async_timed_wait.py")
               for p in timed.programs for i in p.code)


def _module_text(entry):
    from pipeproof.frontend.cute.entry import parse_spec, run_entry

    cap, _, _ = run_entry(parse_spec(entry), {}, "sm_90a")
    return cap


def _lift(text, cap):
    from pipeproof.frontend.cute import lift_text

    return lift_text(text, "k", {}, TIMED, cap.dsl_version)[0]


def _unshare_retries(text: str) -> str:
    """Every try_wait that repeats an earlier one's operands gets another time-hint
    operand (the parity): no longer syntactically a retry of the first attempt."""
    seen, out = set(), []
    for ln in text.splitlines():
        if '"nvvm.mbarrier.try_wait.parity.timelimit"(' in ln:
            head, _, rest = ln.partition("(")
            args, _, tail = rest.partition(")")
            a = tuple(x.strip() for x in args.split(","))
            if a in seen:
                ln = f"{head}({a[0]}, {a[1]}, {a[1]}){tail}"
            seen.add(a)
        out.append(ln)
    return "\n".join(out)


@pytest.mark.parametrize("bug", [0, 1])
def test_retries_that_differ_stay_branches_with_the_same_verdict(bug):
    """Not collapsed, the retries are run-time branches whose boolean results are joined
    in locals (``ops._dynamic_if``): the check gives the plain kernel's verdict."""
    from pipeproof.api import check_compiled
    from pipeproof.frontend.cute import lift_text
    from pipeproof.frontend.cute.entry import parse_spec, run_entry

    cap, _, _ = run_entry(parse_spec(TIMED), {"bug": bug}, "sm_90a")
    mutated = _unshare_retries(cap.text)
    assert mutated != cap.text
    ck = lift_text(mutated, "k", {}, TIMED, cap.dsl_version)[0]
    kinds = {type(i) for p in ck.programs for i in p.code}
    assert {TryWait, Branch, SetLocal} <= kinds
    plain = lift_entry(PLAIN, {"bug": bug}).compiled
    opts = dict(engine="explicit", jobs=1, max_states=400_000, timeout=NO_DEADLINE)
    got, want = check_compiled(ck, **opts), check_compiled(plain, **opts)
    assert (got.status, got.prop) == (want.status, want.prop)
