"""The CuTe DSL lifter's tensor-memory allocation ops (``frontend/cute/tmem_ops.py``):
what ``cute.compile`` prints for ``cutlass.utils.TmemAllocator`` becomes the model's
``TmemAlloc``/``TmemDealloc``/``TmemRelinquish`` (+ ``TmemWait`` for ``cta_group::2``) at
the user's lines, tcgen05 MMAs a ``tmem_use`` step, and an unknown op stays UNKNOWN.
The verdicts of the kernels and their planted TMEM bugs against their ``.pipe`` twins are
in ``tests/test_cute_frontend.py`` (``pipeline_tma_umma`` bugs 3-5,
``pipeline_tma_umma_2cta`` bug 4)."""

from __future__ import annotations

import os
import re

import pytest

from cute_helpers import cases
from pipeproof.model.errors import Unsupported
from pipeproof.model.program import Nop, TmemAlloc, TmemDealloc, TmemRelinquish, TmemWait

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed (pipeproof[cute])")

_LIFTED: dict = {}
CASES = cases()


def _lift(name: str, bug: int = 0):
    from pipeproof.frontend.cute import lift_entry

    if (name, bug) not in _LIFTED:
        c = next(c for c in CASES if c.name == name and c.bug == 0)
        _LIFTED[(name, bug)] = (c, lift_entry(c.entry, {"bug": bug}, arch=c.arch))
    return _LIFTED[(name, bug)]


def _line(path: str, pattern: str) -> int:
    """The 1-based line of the kernel source matching ``pattern`` (the last match: the
    correct kernel's call comes after the planted bugs' variants)."""
    hits = [i for i, ln in enumerate(open(path), 1) if re.search(pattern, ln)]
    assert hits, f"{pattern!r} not in {path}"
    return hits[-1]


def _tmem_steps(prog):
    return [i for i in prog.code if isinstance(i, (TmemAlloc, TmemDealloc, TmemRelinquish,
                                                   TmemWait))]


def test_one_cta_allocator_is_lifted_at_the_users_lines():
    c, lifted = _lift("pipeline_tma_umma")
    progs = {(p.cta, p.warp): p for p in lifted.compiled.programs}
    mma = progs[(0, 1)]  # the allocator warp (MMA_WARP)
    steps = _tmem_steps(mma)
    assert [type(i).__name__ for i in steps] == ["TmemAlloc", "TmemRelinquish", "TmemDealloc"]
    assert all(i.cta_group == 1 for i in steps)
    assert steps[0].columns == 64 and steps[2].columns == 64
    base = os.path.basename(c.path)
    for ins, pat in zip(steps, (r"tmem\.allocate\(TMEM_COLS\)",
                                r"^\s+tmem\.relinquish_alloc_permit\(\)$",
                                r"tmem\.free\(tmem\.retrieve_ptr")):
        assert os.path.basename(ins.loc.file) == base and ins.loc.line == _line(c.path, pat), \
            (ins, pat)
    # only the allocator warp issues them (TmemAllocator guards by warp id)
    assert not _tmem_steps(progs[(0, 0)])
    # the MMAs access tensor memory, after the alloc and before the dealloc
    uses = [k for k, i in enumerate(mma.code) if isinstance(i, Nop) and
            any(e.kind == "tmem_use" for e in i.pre)]
    assert uses
    pos = {type(i).__name__: mma.code.index(i) for i in steps}
    assert pos["TmemAlloc"] < min(uses) and max(uses) < pos["TmemDealloc"]
    assert all(mma.code[k].loc.line == _line(c.path, r"cute\.gemm\(") for k in uses)


def test_two_cta_allocator_is_cta_group_2_with_the_rendezvous():
    _, lifted = _lift("pipeline_tma_umma_2cta")
    for cta in (0, 1):
        prog = next(p for p in lifted.compiled.programs if (p.cta, p.warp) == (cta, 1))
        names = [type(i).__name__ for i in _tmem_steps(prog)]
        assert names == ["TmemAlloc", "TmemWait", "TmemRelinquish", "TmemDealloc",
                         "TmemWait"], (cta, names)
        assert all(i.cta_group == 2 for i in _tmem_steps(prog) if not isinstance(i, TmemWait))


def test_an_unknown_tmem_op_stays_unknown():
    """Strict: a tcgen05 allocation op the lifter does not know is refused, naming it."""
    from pipeproof.frontend.cute import lift_text
    from pipeproof.frontend.cute.entry import parse_spec, run_entry

    c = next(c for c in CASES if c.name == "pipeline_tma_umma" and c.bug == 0)
    cap, _, _ = run_entry(parse_spec(c.entry), {}, c.arch)
    old = '"cute_nvgpu.arch.sm100.dealloc_tmem"('
    assert old in cap.text
    text = cap.text.replace(old, '"cute_nvgpu.arch.sm100.dealloc_tmem_newfangled"(', 1)
    with pytest.raises(Unsupported) as e:
        lift_text(text, "k", {}, c.path, cap.dsl_version)
    assert "unsupported op cute_nvgpu.arch.sm100.dealloc_tmem_newfangled" in str(e.value)
    assert "pipeline_tma_umma.py:" in str(e.value)


@pytest.mark.parametrize("bug,says", [
    (3, "accesses tensor memory of CTA 0 while none is allocated"),
    (4, "after CTA 0 relinquished"),
    (5, "exits with tensor memory still allocated"),
    (6, "executed by 1 of the warp's 32 lanes")])
def test_planted_tmem_bugs_are_tmem_misuse(bug, says):
    from pipeproof.api import check_compiled

    _, lifted = _lift("pipeline_tma_umma", bug)
    r = check_compiled(lifted.compiled, engine="explicit")
    assert (r.status, r.prop) == ("VIOLATED", "tmem-misuse"), r.verdict.headline()
    t = r.verdict.trace
    assert t is not None and says in t.detail, t.detail if t else None
    if bug != 5:  # the violating step is at the user's line (5: the warp's exit)
        assert "pipeline_tma_umma.py" in str(t.events[-1].loc), t.events[-1]


@pytest.mark.parametrize("bug", [0, 3, 4, 5, 6])
def test_engines_agree_on_the_lifted_tmem_protocol(bug):
    """The z3 BMC engine and the explicit-state engine give the same verdict."""
    from pipeproof.api import check_compiled

    _, lifted = _lift("pipeline_tma_umma", bug)
    ex = check_compiled(lifted.compiled, engine="explicit")
    bmc = check_compiled(lifted.compiled, engine="bmc")
    assert bmc.status != "UNKNOWN", bmc.verdict.headline()
    ok = ("PROVEN", "SAFE")
    assert (ex.status in ok, ex.prop) == (bmc.status in ok, bmc.prop), \
        (ex.verdict.headline(), bmc.verdict.headline())
