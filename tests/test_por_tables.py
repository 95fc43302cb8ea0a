"""``checker/por/tables.py`` re-codes the partial-order reduction's static tables as
integers for native code: decoding every entry gives ``por.Footprints``' own entry back,
and the conflict matrix is ``por.conflicts`` on every mode pair, on every bundled example
(about 6 s in all: the tables need no search)."""

from __future__ import annotations

from pathlib import Path

import pytest

import generators as G
from pipeproof.checker import por
from pipeproof.checker.por.tables import KINDS, build, tabled_tokens
from pipeproof.model.program import (ClusterWait, NamedWait, TryWait, Wait, WgmmaWait,
                                     control_successors)

ROOT = Path(__file__).resolve().parent.parent
ALL = sorted(str(p.relative_to(ROOT / "examples")) for p in (ROOT / "examples").rglob("*.pipe"))


def _round_trip(name: str) -> None:
    fp = por.Footprints(G.build_system((ROOT / "examples" / name).read_text()))
    t = build(fp)
    nm = t.n_modes
    assert len(t.conflict) == nm * nm
    for i, m1 in enumerate(t.modes):
        for j, m2 in enumerate(t.modes):
            assert t.conflict[i * nm + j] == por.conflicts(m1, m2)
    for a in range(len(fp.sys.agents)):
        assert t.acyclic[a] == fp.acyclic[a]
        for pc in range(len(fp.sys.code(a))):
            for name_ in ("step", "future_env", "seg_fp", "seg_fp_nc", "noncompleting"):
                assert t.decode_fp(getattr(t, name_)[a][pc]) == getattr(fp, name_)[a][pc], \
                    (name, name_, a, pc)
            assert t.blocking[a][pc] == fp.blocking[a][pc]
            assert t.seg_next[a][pc] == tuple(fp.seg_next[a][pc])
            assert t.decode_ops(t.seg_ops[a][pc]) == fp.seg_ops[a][pc]
            assert t.decode_arr(t.seg_arr[a][pc]) == fp.seg_arr[a][pc]
            assert {t.objects[o] for o in t.writers_from[a][pc]} == fp.writers_from[a][pc]
            assert {t.bars[b] for b in t.arrivers_from[a][pc]} == fp.arrivers_from[a][pc]
            ins = fp.sys.code(a)[pc]
            assert (t.bars[t.wait_bar[a][pc]] if t.wait_bar[a][pc] >= 0 else None) == \
                (ins.bar if isinstance(ins, Wait) else None)
            assert t.succ[a][pc] == tuple(control_successors(fp.sys.code(a), pc))
            assert t.block_kind[a][pc] == (1 if isinstance(ins, Wait) else
                                           2 if isinstance(ins, ClusterWait) else
                                           3 if isinstance(ins, (NamedWait, WgmmaWait)) else 0)
            assert (t.bars[t.try_bar[a][pc]] if t.try_bar[a][pc] >= 0 else None) == \
                (ins.bar if isinstance(ins, TryWait) else None)
            if isinstance(ins, TryWait) and t.n_tok[a] > 0:
                assert t.tokens[a][t.try_tok[a][pc]] == ins.dest
            else:
                assert t.try_tok[a][pc] == -1
            if isinstance(ins, (Wait, TryWait)):
                assert t.wait_parity[a][pc] == ins.parity
                assert t.wait_ghost[a][pc] == (-1 if ins.ghost is None else ins.ghost)
                assert t.wait_own[a][pc] == int(ins.bar.cta == fp.sys.agents[a].cta
                                                and ins.bar in fp.sys.bar)
        # the known segments: every pc, every non-empty mask of the warp's tokens
        toks = t.tokens[a]
        assert set(toks) == fp.tokens[a]
        assert t.n_tok[a] == (len(toks) if tabled_tokens(len(toks), len(fp.sys.code(a)))
                              else -1)
        m = 1 << t.n_tok[a] if t.n_tok[a] > 0 else 0
        assert len(t.known_fp[a]) == len(fp.sys.code(a)) * m
        for pc in range(len(fp.sys.code(a))):
            for mask in range(1, m):
                zero = frozenset(x for i, x in enumerate(toks) if mask >> i & 1)
                r = pc * m + mask
                kf, karr, kops, nxt = fp.known_segment(a, pc, zero, False)
                assert t.decode_fp(t.known_fp[a][r]) == kf
                assert t.decode_fp(t.known_fp_nc[a][r]) == fp.known_segment(a, pc, zero, True)[0]
                assert t.decode_arr(t.known_arr[a][r]) == karr
                assert t.decode_ops(t.known_ops[a][r]) == kops
                assert tuple((q, frozenset(x for i, x in enumerate(toks) if z >> i & 1))
                             for q, z in t.known_next[a][r]) == nxt
    flat = t.flat()
    rows = flat["pc_base"][-1]
    assert rows == sum(len(fp.sys.code(a)) for a in range(len(fp.sys.agents)))
    for key in ("step", "seg_next", "seg_ops", "seg_arr"):
        assert len(flat[key + "_off"]) == rows + 1
    assert all(k in KINDS for ops in fp.seg_ops for o in ops if o for _b, k, _c, _x in o)


@pytest.mark.parametrize("name", ALL)
def test_tables_decode_to_the_footprints(name: str) -> None:
    _round_trip(name)
