"""Coordinate tensors (``frontend/cute/coords.py``): the usual ``if row < M`` predication
on a coordinate that a tiled copy partitioned per thread is followed lane by lane.

The kernel is ``tests/cute_kernels/pipeline_async_predicated.py`` (its verdicts against
its ``.pipe`` twin run in test_cute_frontend.py): consumer thread ``t`` owns row
``t // 8`` of the tile, so the rows below M decide which lanes consume."""

from __future__ import annotations

import os

import pytest

from pipeproof.frontend.cute.coords import coord_offset

HERE = os.path.dirname(os.path.abspath(__file__))
ENTRY = os.path.join(HERE, "cute_kernels", "pipeline_async_predicated.py") + \
    "::pipeline_async_predicated"


def test_coord_offset_of_basis_strides():
    # (8,32):(1@0,1@1): the identity layout of an 8x32 tile
    assert coord_offset((3, 5), (8, 32), ("E1@0", "E1@1")) == {0: 3, 1: 5}
    # a nested mode indexed by one int (colexicographic), a rest mode of stride 4@0
    assert coord_offset(((1, 0), 0, 0, 1), ((8, 1), 1, 1, 2),
                        (("E1@1", 0), 0, 0, "E4@0")) == {1: 1, 0: 4}
    assert coord_offset(9, (8, 4), ("E1@1", "E1@0")) == {1: 1, 0: 1}
    # an underscore (a slice) adds nothing
    assert coord_offset((None, 2), (8, 32), ("E1@0", "E1@1")) == {1: 2}


cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.frontend.cute import lift_entry  # noqa: E402
from pipeproof.model.program import Arrive, Wait  # noqa: E402


def _consumer_arrivals(M):
    lifted = lift_entry(ENTRY, {"M": M})
    out = {}
    for p in lifted.compiled.programs:
        arr = [a.count for i in p.code if isinstance(i, Arrive) for a in i.arrivals
               if a.bar.array.endswith("empty")]
        waits = [i for i in p.code if isinstance(i, Wait) and i.bar.array.endswith("full")]
        out[p.warp] = (arr, len(waits))
    return out


def test_rows_below_m_decide_the_consuming_lanes():
    # M = 4: rows 0-3 are warp 1's (lanes 0-31 of consumer threads 0-31), warp 2 idles
    got = _consumer_arrivals(4)
    assert got[1] == ([32] * 4, 4)
    assert got[2] == ([], 0)
    # M = 6: rows 4 and 5 are lanes 0-15 of warp 2: 16 lanes wait and release
    got = _consumer_arrivals(6)
    assert got[1] == ([32] * 4, 4)
    assert got[2] == ([16] * 4, 4)
