"""The emitted kernel's wgmma-groups (impl/emit.py ``wgmma_commit``/``wgmma_wait``).

The emitted kernels issue no MMA; a warpgroup's wgmma-groups are emulated by one commit
counter per warp in the shared-memory header.  What the model means
(``model/wgmma.py``): a warp's ``wait_group n`` waits until every *other warp of its
warpgroup* has committed its own count less ``n``.  Read from the PTX, per warp: every
wait spins on exactly its siblings' counters (never its own, never another
warpgroup's), every commit writes the warp's own counter with a release after the
step's ticket, and the counters start at zero.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeproof.impl.emit import WGMMA_OFF, EmitOptions, emit_file
from pipeproof.impl.structured import compile_for_emission
from pipeproof.model.lang.parser import parse_file
from pipeproof.model.program import NamedBarrierOp, Wait

ROOT = Path(__file__).resolve().parent.parent
#: p10-fixed: two consumer warpgroups (warps 4-7 and 8-11) that wgmma and wait_group(0)
P10 = ROOT / "examples" / "bugs" / "p10-fixed.pipe"
K1 = ROOT / "examples" / "kernels" / "k1_hopper_persistent_gemm.pipe"


def _programs(ptx: str) -> dict[tuple[int, int], str]:
    parts = re.split(r"\t// ---- cta (\d+) warp (\d+) role \S+\n", ptx)
    return {(int(parts[i]), int(parts[i + 1])): parts[i + 2]
            for i in range(1, len(parts), 3)}


def _steps(body: str) -> list[tuple[str, str]]:
    """(instruction kind, its PTX) per model step of one warp's program."""
    parts = re.split(r"\t// \[\d+\] (\w+):[^\n]*\n", body)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def _offsets(text: str, op: str) -> list[int]:
    return [int(m) for m in re.findall(op + r" \[%smem\+(\d+)\]", text)]


@pytest.mark.parametrize("checks", [True, False], ids=["checks", "bare"])
def test_waits_spin_on_their_warpgroups_commit_counters(checks):
    em = emit_file(str(P10), {}, EmitOptions("sm_90a", trace=checks, jitter=checks,
                                              checks=checks))
    progs = _programs(em.ptx)
    consumers = [w for (c, w) in progs if c == 0 and w >= 4]
    assert consumers == list(range(4, 12))
    counter = {w: WGMMA_OFF + 4 * w for w in consumers}
    for w in consumers:
        siblings = {counter[s] for s in consumers if s // 4 == w // 4 and s != w}
        steps = _steps(progs[(0, w)])
        waits = [t for k, t in steps if k == "WgmmaWait"]
        assert waits, w
        for text in waits:
            assert set(_offsets(text, r"ld\.acquire\.cta\.shared\.u32 %r\d+,")) == siblings
        commits = [t for _k, t in steps if "st.release.cta.shared" in t]
        assert len(commits) == len(waits)  # wgmma (one group), then wait_group(0)
        for text in commits:
            assert _offsets(text, r"st\.release\.cta\.shared\.u32") == [counter[w]]
            if checks:  # after the step's ticket: a wait that sees it is recorded later
                assert text.index("[%tka]") < text.index("st.release.cta.shared")
    # the producer takes no part: no counter, no spin
    assert "st.release.cta.shared" not in progs[(0, 0)]
    zeroed = set(_offsets(em.ptx.split("$P0:")[0], r"st\.shared\.u32"))
    assert set(counter.values()) <= zeroed


def test_k1_structured_loops_bounded_by_min_stay_small():
    """k1's prologue and drain loops run ``min(k_pipe_mmas, k_tiles)`` times: unrolled up
    to that bound (one prologue wait), and the mainloop's exits share one epilogue once
    the mainloop states are dead (before: 10 prologue waits, 32 epilogues)."""
    c = compile_for_emission(parse_file(str(K1)), {})
    assert c.structured and c.runtime == ("k_tiles",), c.describe()
    prog = c.kernel.program(0, 5)
    prologue = [i for i in prog.code if isinstance(i, Wait) and i.loc.line == 115]
    assert len(prologue) == 1
    assert sum(isinstance(i, NamedBarrierOp) for i in prog.code) == 2  # one epilogue
