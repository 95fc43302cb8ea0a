"""PTX lowering of the tensor-memory allocation steps (``impl/emit_tmem.py``; PTX ISA
9.7.16.7.1 tcgen05.alloc / tcgen05.dealloc / tcgen05.relinquish_alloc_permit).

Every kernel that uses ``TmemAllocator`` (the textbook example, 1-CTA and 2-CTA, and the
T1-T4 bug/fixed pairs) emits for sm_100a with one PTX instruction per model step, the
right ``cta_group`` and column count, assembles with ``ptxas -arch sm_100a``, and its
model executions written as GPU traces replay; sm_90a is refused with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeproof.api import compile_file
from pipeproof.impl import events as E
from pipeproof.impl.emit import EmitOptions, emit
from pipeproof.impl.replay import ACCEPTED, Replayer
from pipeproof.impl.simulate import as_words, perturb, simulate
from pipeproof.model.errors import Unsupported
from pipeproof.model.program import TmemAlloc, TmemDealloc, TmemRelinquish

ROOT = Path(__file__).resolve().parent.parent
TEXTBOOK = ROOT / "examples" / "textbook" / "tmem_allocator.pipe"
CASES = [(TEXTBOOK, {"pair": 0}), (TEXTBOOK, {"pair": 1})] + \
    [(p, {}) for p in sorted((ROOT / "examples" / "bugs").glob("t[1-4]-*.pipe"))]
IDS = [f"{p.stem}{''.join(f'-{k}{v}' for k, v in d.items())}" for p, d in CASES]


def _code(ptx: str) -> list[str]:
    return [ln.strip() for ln in ptx.splitlines() if not ln.lstrip().startswith("//")]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_tmem_step_is_one_tcgen05_instruction(case):
    path, params = case
    ck = compile_file(path, params)
    code = _code(emit(ck, EmitOptions("sm_100a")).ptx)
    steps = [i for p in ck.programs for i in p.code]
    for kind, pat in ((TmemAlloc, r"tcgen05\.alloc\.cta_group::(\d)\.sync\.aligned\."
                       r"shared::cta\.b32 \[%r\d+\], (\d+);"),
                      (TmemDealloc, r"tcgen05\.dealloc\.cta_group::(\d)\.sync\.aligned\.b32 "
                       r"%r\d+, (\d+);"),
                      (TmemRelinquish, r"tcgen05\.relinquish_alloc_permit\.cta_group::(\d)"
                       r"\.sync\.aligned;()")):
        want = sorted((i.cta_group, i.columns if kind is not TmemRelinquish else None)
                      for i in steps if isinstance(i, kind))
        got = sorted((int(m.group(1)), int(m.group(2)) if m.group(2) else None)
                     for ln in code for m in [re.fullmatch(pat, ln)] if m)
        if kind is TmemDealloc:  # free(ptr) with num_columns=0 frees what was allocated
            allocs = {i.columns for i in steps if isinstance(i, TmemAlloc)}
            want = sorted((g, c or next(iter(allocs))) for g, c in want)
        assert got == want, (kind.__name__, got, want)
    assert any(isinstance(i, TmemAlloc) for i in steps)


def test_two_cta_allocation_is_cta_group_2():
    code = _code(emit(compile_file(TEXTBOOK, {"pair": 1}), EmitOptions("sm_100a")).ptx)
    assert any(ln.startswith("tcgen05.alloc.cta_group::2.") for ln in code)
    assert not any(ln.startswith("tcgen05.alloc.cta_group::1.") for ln in code)


@pytest.mark.parametrize("params", [{"pair": 0}, {"pair": 1}], ids=["1cta", "2cta"])
def test_sm_90a_is_refused_with_the_reason(params):
    with pytest.raises(Unsupported, match="tcgen05 needs sm_100a"):
        emit(compile_file(TEXTBOOK, params), EmitOptions("sm_90a"))


def test_cli_sm_90a_says_why(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pipeproof.cli", "emit", str(TEXTBOOK),
                        "--arch", "sm_90a", "-o", str(tmp_path / "k.ptx")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3 and "tcgen05 needs sm_100a" in r.stdout + r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(shutil.which("ptxas") is None,
                    reason="ptxas (CUDA toolkit) is not installed: PTX assembly not checked")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_assembles_for_sm_100a(case, tmp_path):
    path, params = case
    p = tmp_path / "k.ptx"
    p.write_text(emit(compile_file(path, params), EmitOptions("sm_100a")).ptx)
    r = subprocess.run(["ptxas", "-O0", "-arch=sm_100a", str(p), "-o", str(p) + ".cubin"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]


@pytest.mark.parametrize("params", [{"pair": 0}, {"pair": 1}], ids=["1cta", "2cta"])
def test_replay_accepts_model_executions_with_tmem_steps(params):
    """The events the emitted TMEM steps record (signals: ticket before the issue;
    ``TmemWait``: after the collective returned) replay through the model."""
    ck = compile_file(TEXTBOOK, params)
    R = Replayer(ck)
    for seed in range(6):
        evs = simulate(ck, seed)
        if seed % 2:
            evs = perturb(ck, evs, seed)
        evs = E.decode_events(as_words(evs), len(evs))
        r = R.replay(evs)
        assert r.status == ACCEPTED, (seed, r.headline(), r.state_text)
