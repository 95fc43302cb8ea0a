"""PipelineState in registers (impl/fold.py, issue 25): the copies of a structured loop
body that differ only in stage index and phase are emitted once.

Differential against the model: every folded copy's instruction is what the template
becomes with the operands the model's own ``PipelineState.advance`` gives that copy; the
PTX of the folded loop does not depend on the trip count nor on the stage count; where
folding is refused, the PTX is the one with copies, and the reason is reported.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeproof.impl import fold as F
from pipeproof.impl.emit import EmitOptions, emit, emit_file
from pipeproof.impl.layout import compute_layout
from pipeproof.impl.structured import compile_for_emission
from pipeproof.model.lang.parser import parse_file
from pipeproof.model.pipeline_state import PipelineStateVal, advance_rule
from pipeproof.model.values import CONCRETE

ROOT = Path(__file__).resolve().parent.parent
TB = ROOT / "examples" / "textbook"
BARE = EmitOptions("sm_90a", trace=False, jitter=False, checks=False)
CHECKS = EmitOptions("sm_90a", trace=False, jitter=False, checks=True)
TRACE = EmitOptions("sm_90a")
CASES = [
    (TB / "pipeline_async.pipe", {}),
    (TB / "pipeline_tma_async.pipe", {}),
    (TB / "pipeline_cp_async.pipe", {}),
    (TB / "pipeline_tma_async_multicast.pipe", {"k_tiles": 3}),
    (ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 1, "k_tiles": 5}),
    (ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 6, "k_tiles": 5}),
    (ROOT / "bench" / "bench_gpu_tma.pipe", {"stages": 3, "k_tiles": 5}),
]


def _value(ex, fold, j: int):
    """The operand explanation ``ex`` gives copy ``j``, from the model's concrete states."""
    if not isinstance(ex, F.Explain):
        return ex.value
    nst, start, phase = fold.classes[ex.cls]
    s = PipelineStateVal(nst, start, phase, None, tracked=fold.phases == 4)
    for _ in range(j + ex.shift):
        s = s.advance()
    if ex.kind == "stage":
        return s.index
    if ex.kind == "parity":
        return (s.ghost + ex.offset) % 2
    if ex.parity_tag:
        return F.PARITY_TAG + (s.ghost + ex.offset) % 2
    return (s.ghost + ex.offset) % fold.phases


@pytest.mark.parametrize("checks", [False, True], ids=["bare", "checks"])
@pytest.mark.parametrize("path,params", CASES, ids=lambda x: getattr(x, "stem", str(x)))
def test_every_folded_copy_is_the_template_with_the_models_state(path, params, checks):
    ck = compile_for_emission(parse_file(str(path)), params).kernel
    layout = compute_layout(ck, False)
    emitted = F.emitted_effects(checks)
    folded = 0
    for prog in ck.programs:
        fold, why = F.plan(prog, layout, checks, trace=False)
        if fold is None:
            continue
        folded += 1
        for p, slots in fold.slots.items():
            region = fold.body if p in fold.body.pcs else fold.exit
            for j in range(fold.copies):
                q = p + j * region.stride
                vals = [_value(ex, fold, j) for ex in slots]
                inst = F.instantiate(prog.code[p], vals, emitted)
                a, b = [], []
                assert F._walk(inst, a, emitted) == F._walk(prog.code[q], b, emitted)
                assert a == b, (prog.name, p, j)
                assert q not in fold.skip or j > 0
    assert folded, "nothing folded"


def test_the_rule_is_the_models():
    """``advance_rule`` on Python ints is ``PipelineState.advance`` (index wraps at
    ``stages``, the phase steps on the wrap): the emitter lowers that same function."""
    for stages in (1, 2, 5):
        s = PipelineStateVal(stages, 0, 3, 0)
        i, g = 0, 3
        for _ in range(3 * stages + 1):
            s = s.advance()
            i, g = advance_rule(CONCRETE, i, g, stages, 4)
            assert (s.index, s.ghost) == (i, g)


def _loop_body(ptx: str) -> list[str]:
    """The folded loops' PTX (from each ``$_fold`` label to its back edge), registers and
    labels renumbered."""
    out = []
    for m in re.finditer(r"\n(\$_fold\d+):\n(.*?)\n\tbra \1;", ptx, re.S):
        txt = re.sub(r"%(r|rd|p|h)\d+", r"%\1", m.group(2))
        txt = re.sub(r"\$\w+", "$L", txt)
        # the pcs and copy counts of the model's program are immediates
        out.append(re.sub(r"(?<![%\w])-?\d+", "N", txt))
    return out


@pytest.mark.parametrize("opts", [BARE, CHECKS, TRACE], ids=["bare", "checks", "trace"])
@pytest.mark.parametrize("name", ["bench_gpu_async", "bench_gpu_tma"])
def test_ptx_size_does_not_depend_on_k_tiles_or_stages(name, opts):
    f = str(ROOT / "bench" / f"{name}.pipe")
    ptx = {(st, k): emit_file(f, {"stages": st, "k_tiles": k}, opts).ptx
           for st in (2, 6) for k in (1, 1000)}
    for st in (2, 6):
        assert ptx[(st, 1)].splitlines()[4:] == ptx[(st, 1000)].splitlines()[4:]
    loops = {st: _loop_body(ptx[(st, 1)]) for st in (2, 6)}
    assert len(loops[2]) == 2 and loops[2] == loops[6]
    assert len(ptx[(2, 1)].splitlines()) == len(ptx[(6, 1)].splitlines())


def test_the_barrier_address_and_parity_come_from_the_state_registers():
    em = emit_file(str(ROOT / "bench" / "bench_gpu_async.pipe"), {"stages": 4, "k_tiles": 9},
                   BARE)
    loop = _loop_body(em.ptx)[0]
    # base + index * 8 and the phase register as the parity operand (CUTLASS's form)
    assert "mad.lo.u32 %r, %r, N, N;" in loop
    assert "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p, [%r], %r, N;" in loop
    assert all("copies" in v and "folded" in v for v in em.folds.values())
    assert em.manifest.folded == em.folds


def test_refused_folding_keeps_the_copies_and_says_why():
    """A body with a branch (try_wait) keeps today's copies: the warps' PTX is the one
    emitted without folding."""
    f = str(ROOT / "examples" / "bugs" / "p2-fixed.pipe")
    on = emit_file(f, {}, BARE)
    assert on.folds and all(v.startswith("copies kept: ") for v in on.folds.values())
    off = emit_file(f, {}, EmitOptions("sm_90a", trace=False, jitter=False, checks=False,
                                       fold=False))
    assert not off.folds

    def warps(ptx: str) -> str:  # the warps' code (the prologue's barrier init is a loop)
        txt = ptx.split("$P1:")[1]
        return re.sub(r"%(r|rd|p|h)\d+", r"%\1", re.sub(r"\$_\w+", "$L", txt))
    assert warps(on.ptx) == warps(off.ptx)


@pytest.mark.skipif(not shutil.which("ptxas"), reason="ptxas not installed")
@pytest.mark.parametrize("opts", [BARE, TRACE], ids=["bare", "trace"])
@pytest.mark.parametrize("name", ["pipeline_async", "pipeline_tma_async",
                                  "pipeline_tma_async_multicast"])
def test_folded_kernels_assemble(tmp_path, name, opts):
    em = emit_file(str(TB / f"{name}.pipe"), {}, opts)
    assert any("folded" in v for v in em.folds.values())
    p = tmp_path / "k.ptx"
    p.write_text(em.ptx)
    r = subprocess.run(["ptxas", "-arch=sm_90a", str(p), "-o", str(p) + ".cubin"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:800]
