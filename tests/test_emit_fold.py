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
from pipeproof.impl.emit import EmitOptions, emit_file
from pipeproof.impl.layout import compute_layout
from pipeproof.impl.structured import compile_for_emission
from pipeproof.model.lang.parser import parse_file
from pipeproof.model.pipeline_state import PipelineStateVal, advance_rule
from pipeproof.model.values import CONCRETE

ROOT = Path(__file__).resolve().parent.parent
TB = ROOT / "examples" / "textbook"
BARE = EmitOptions("sm_90a", trace=False, jitter=False, checks=False, fold=True)
CHECKS = EmitOptions("sm_90a", trace=False, jitter=False, checks=True, fold=True)
TRACE = EmitOptions("sm_90a", fold=True)
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
                                  "pipeline_cp_async"])
def test_folded_kernels_assemble(tmp_path, name, opts):
    em = emit_file(str(TB / f"{name}.pipe"), {}, opts)
    assert any("folded" in v for v in em.folds.values())
    p = tmp_path / "k.ptx"
    p.write_text(em.ptx)
    r = subprocess.run(["ptxas", "-arch=sm_90a", str(p), "-o", str(p) + ".cubin"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:800]


# ---- the folded PTX executes the synchronisation the copies execute

_SYNC = ("mbarrier.", "cp.async", "bar.sync", "barrier.", "fence.", "tcgen05.")


def _run_warp(ptx: str, k: int, args: dict[str, int], limit: int = 400_000,
              events: bool = False) -> list[str]:
    """Lane 0 of program ``k`` of bare emitted PTX, executed by a small evaluator of the
    integer instructions the emitter uses (shared memory at 0, every wait succeeding):
    the synchronisation instructions it issues, operands evaluated, in order."""
    block = ptx.split(f"$P{k}:")[1]
    block = re.split(r"\n\$P\d+:|\n\$STUCK_EXIT:", block)[0]
    code, labels = [], {}
    for ln in block.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("//"):
            continue
        if ln.endswith(":") and " " not in ln:
            labels[ln[:-1]] = len(code)
            continue
        code.append(ln.rstrip(";"))
    regs: dict[str, int] = {"%smem": 0, "%k_lane": 0, "%pl0": 1, "%src": 0, "%dst": 0,
                            "%srcoff": 0, "%src_stride": 1 << 40, "%cap": 1 << 30,
                            "%timeout": 1 << 60, "%grace": 1 << 60}
    regs.update({f"%a_{n}": v for n, v in args.items()})

    def val(x: str) -> int:
        x = x.strip()
        if x.startswith("%"):
            return regs.get(x, 0)
        return int(x, 0)

    out, pc, steps = [], 0, 0
    while pc < len(code) and steps < limit:
        steps += 1
        ins = code[pc]
        pc += 1
        if ins.startswith("@"):
            pred, ins = ins.split(None, 1)
            neg = pred.startswith("@!")
            if bool(regs.get(pred.lstrip("@!"), 0)) == neg:
                continue
        op, _, rest = ins.partition(" ")
        ops = [o.strip() for o in re.split(r",(?![^\[{]*[\]}])", rest)] if rest else []
        base = op.split(".")[0]
        if op == "bra" or op.startswith("bra."):
            if ops[0] in ("$EXIT", "$STUCK_EXIT"):
                return out
            pc = labels[ops[0]]
        elif op == "st.global.v4.u32" and events:  # a trace record: header, pc, obs
            vals = [val(x) for x in ops[1].strip("{}").split(",")]
            out.append("event " + " ".join(map(str, vals)))
        elif op.startswith("elect.sync"):  # a full warp elects lane 0 (ptx_exec's rule)
            r, _, p = ops[0].partition("|")
            regs[r], regs[p] = 0, 1
        elif op.startswith(_SYNC):
            shown = [re.sub(r"%[\w]+", lambda m: str(regs.get(m.group(0), 0)), o)
                     for o in ops if not re.fullmatch(r"%(p|rd)\d+|_", o)]
            out.append(f"{op} {', '.join(shown)}")
            if "try_wait" in op or "test_wait" in op:
                regs[ops[0]] = 1
        elif base in ("mov", "cvt"):
            regs[ops[0]] = val(ops[1])
        elif base in ("add", "sub", "and", "or", "xor", "shl", "shr", "mul"):
            a, b = val(ops[1]), val(ops[2])
            regs[ops[0]] = {"add": a + b, "sub": a - b, "and": a & b, "or": a | b,
                            "xor": a ^ b, "shl": a << b, "shr": a >> b, "mul": a * b}[base]
        elif base == "mad":
            regs[ops[0]] = val(ops[1]) * val(ops[2]) + val(ops[3])
        elif base == "selp":
            regs[ops[0]] = val(ops[1]) if regs.get(ops[3], 0) else val(ops[2])
        elif base == "setp":
            cmp = op.split(".")[1]
            a, b = val(ops[1]), val(ops[2])
            regs[ops[0]] = int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
                                "gt": a > b, "ge": a >= b}[cmp])
        elif op == "or.pred":
            regs[ops[0]] = int(bool(regs.get(ops[1], 0)) or bool(regs.get(ops[2], 0)))
        elif op == "exit":
            return out
        # anything else (timers, warp syncs, stores of the timing block) leaves the
        # synchronisation alone
    raise AssertionError(f"program {k} did not finish within {limit} steps")


@pytest.mark.parametrize("path,params", [
    (ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 3, "k_tiles": 29}),
    (ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 1, "k_tiles": 7}),
    (ROOT / "bench" / "bench_gpu_tma.pipe", {"stages": 4, "k_tiles": 37}),
    (TB / "pipeline_tma_async.pipe", {"k_tiles": 11}),
    (TB / "pipeline_cp_async.pipe", {"k_tiles": 9}),
], ids=lambda x: getattr(x, "stem", str(x)))
def test_folded_ptx_issues_the_copies_synchronisation(path, params):
    """Differential: each warp of the folded kernel issues, operand for operand (barrier
    addresses, parities, buffer addresses, byte counts), the synchronisation the kernel
    with today's copies issues, for trip counts that wrap the copies several times and
    stop mid-period."""
    _same_sync(path, params, "sm_90a")


def test_folded_sm100a_commits_issue_the_copies_synchronisation():
    """sm_100a: the real ``tcgen05.commit`` (no emulated deferral) folds with the MMA
    warp's loop; its barrier comes from the state registers."""
    em = _same_sync(TB / "pipeline_tma_umma.pipe", {"k_tiles": 13}, "sm_100a")
    assert sum("folded" in v for v in em.folds.values()) == len(em.folds)


def _same_sync(path: Path, params: dict, arch: str):
    folded = emit_file(str(path), params, EmitOptions(arch, trace=False, jitter=False,
                                                      checks=False, fold=True))
    copies = emit_file(str(path), params, EmitOptions(arch, trace=False, jitter=False,
                                                      checks=False, fold=False))
    assert any("folded" in v for v in folded.folds.values())
    args = folded.manifest.args
    for k in range(folded.manifest.num_warps):
        a, b = _run_warp(folded.ptx, k, args), _run_warp(copies.ptx, k, args)
        assert a == b, k
        assert any("try_wait" in x for x in a)
    return folded


@pytest.mark.parametrize("path,params", [
    (ROOT / "bench" / "bench_gpu_async.pipe", {"stages": 3, "k_tiles": 29}),
    (TB / "pipeline_tma_async.pipe", {"k_tiles": 11}),
], ids=lambda x: getattr(x, "stem", str(x)))
def test_folded_trace_records_name_the_copies_pcs(path, params):
    """Traced and checked: the folded kernel writes the records (header, the model's pc
    of the copy that ran, observations) the kernel with copies writes, so GPU traces map
    to the same program instructions (``impl/replay.py``)."""
    opts = dict(trace=True, jitter=False, checks=True)
    folded = emit_file(str(path), params, EmitOptions("sm_90a", fold=True, **opts))
    copies = emit_file(str(path), params, EmitOptions("sm_90a", fold=False, **opts))
    assert any("folded" in v for v in folded.folds.values())
    args = folded.manifest.args
    for k in range(folded.manifest.num_warps):
        a = _run_warp(folded.ptx, k, args, events=True)
        b = _run_warp(copies.ptx, k, args, events=True)
        assert a == b, k
        assert sum(x.startswith("event") for x in a) > params["k_tiles"]


def test_folded_tma_loads_of_one_fill_keep_their_slots():
    """Two TMA loads that fill one stage together (the A and B slices of the multicast
    example) land in different slots.  Folded, both once landed in the first slot (the
    slot was looked up with the register-indexed instruction, so the walk back to the
    fill's earlier loads matched nothing), and on an H100 the readers saw the second
    slot unfilled.  The destinations of the folded loads (base + index * stride) are the
    copies' stage-0 destinations (the fixed emitter's folded multicast kernels conform on
    the H100, bench/results/conformance_gpu_i25.md)."""
    path = str(TB / "pipeline_tma_async_multicast.pipe")
    folded = emit_file(path, {}, BARE).ptx
    copies = emit_file(path, {}, EmitOptions("sm_90a", trace=False, jitter=False,
                                             checks=False, fold=False)).ptx

    def producer(ptx: str) -> str:
        return ptx.split("---- cta 3 warp 0")[1].split("---- cta 3 warp 1")[0]

    def dsts(code: str, op: str) -> list[str]:
        """The constant part of each bulk copy's destination: ``mad.lo.u32 d, index,
        stride, BASE`` folded, ``add.u32 d, %smem, OFFSET`` in the copies."""
        lines = code.splitlines()
        out = []
        for i, ln in enumerate(lines):
            m = re.search(r"cp\.async\.bulk\S* \[(%r\d+)\]", ln)
            if m:
                d = next(x for x in reversed(lines[:i])
                         if re.match(rf"\s*{op} {re.escape(m.group(1))},", x))
                out.append(d.split(",")[-1].strip(" ;"))
        return out

    got = dsts(producer(folded), r"mad\.lo\.u32")
    want = dsts(producer(copies), r"add\.u32")[:len(got)]
    assert len(got) == 2 and got == want, (got, want)
