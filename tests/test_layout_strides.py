"""Layouts with strides (issue 22 item 6): ``make_layout(shape, stride=...)`` is honoured
wherever a cluster layout feeds masks and signalling lanes.

Every expected value below was computed with the installed CuTe DSL (nvidia-cutlass-dsl,
``cute.compile`` of a ``@cute.jit`` function, no GPU): ``make_layout`` defaults, ``L(c)``,
``get_flat_coord``/``get_hier_coord``, the slices ``make_layout_image_mask`` ORs,
``tiled_divide`` and ``size(..., mode=[...])``.  The DSL's ``get_flat_coord`` inverts the
*layout* (per mode ``(idx // stride) % shape``), not the shape; the PTX of a dynamic
``get_flat_coord(%cluster_ctarank)`` on ``(1,2,2,1):(0,2,1,0)`` computes
``m = (rank >> 1) & 1, n = rank & 1``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeproof.api import check_file
from pipeproof.model.builtins import b_size
from pipeproof.model.cluster import (ClusterVMNK, Layout, MaskRangeError, idx2crd_hier,
                                     tiled_divide)
from pipeproof.model.errors import ConfigError, Unsupported

from helpers import check, NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"
ROW = Layout((1, 2, 2, 1), (0, 2, 1, 0))      # row-major 2x2 cluster
HAND = Layout((1, 2, 2, 1), (1, 1, 2, 4))     # "compact" strides written by hand
NEST = Layout(((2, 2), 2), ((1, 4), 2))


def _ranks(mask: int) -> set:
    return {r for r in range(32) if mask >> r & 1}


# --------------------------------------------------------------------------- CuTe facts


def test_default_strides_are_compact_column_major_with_size_one_modes_zero() -> None:
    assert Layout((1, 2, 2, 1)).stride == (0, 1, 2, 0)
    assert Layout((2, 2, 1)).stride == (1, 2, 0)
    assert Layout((2, 1, 2)).stride == (1, 0, 2)
    assert Layout(((2, 1), 2)).stride == ((1, 0), 2)
    assert Layout((2, (1, 2))).stride == (1, (0, 2))


def test_a_layout_is_sum_of_coord_times_stride_without_wrapping() -> None:
    assert [ROW((0, m, n, 0)) for n in range(2) for m in range(2)] == [0, 2, 1, 3]
    assert ROW((0, 2, 0, 0)) == 4                     # no modulo: CuTe does not wrap
    assert Layout((1, 2, 2, 1))((0, 3, 1, 0)) == 5
    assert NEST((3, 1)) == 7 and NEST(((1, 1), 1)) == 7


def test_flat_coord_inverts_the_layout_not_the_shape() -> None:
    assert [ROW.coord(i) for i in range(4)] == [(0, 0, 0, 0), (0, 0, 1, 0), (0, 1, 0, 0),
                                                 (0, 1, 1, 0)]
    assert [HAND.coord(i) for i in range(4)] == [(0, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0),
                                                  (0, 1, 1, 0)]
    assert [Layout((2, 2), (0, 1)).coord(i) for i in range(4)] == [(0, 0), (0, 1), (0, 0),
                                                                   (0, 1)]
    assert [Layout((2, 3), (3, 1)).coord(i) for i in range(6)] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert [Layout((2, 2, 2), (1, 1, 2)).coord(i) for i in range(4)] == [
        (0, 0, 0), (1, 1, 0), (0, 0, 1), (1, 1, 1)]
    # beyond the size the DSL keeps reducing each mode (the model refuses such ranks)
    assert [idx2crd_hier(i, (2, 2), (1, 4)) for i in range(4, 8)] == [(0, 1), (1, 1), (0, 1),
                                                                      (1, 1)]
    assert idx2crd_hier(5, (1, 2, 2, 1), (0, 2, 1, 0)) == (0, 0, 1, 0)
    with pytest.raises(ValueError):
        ROW.coord(4)


def test_nested_modes_flat_and_hierarchical_coordinates() -> None:
    assert [NEST.coord(i) for i in range(8)] == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0),
                                                 (3, 0), (2, 1), (3, 1)]
    assert [NEST.hier_coord(i) for i in range(8)] == [
        ((0, 0), 0), ((1, 0), 0), ((0, 0), 1), ((1, 0), 1), ((0, 1), 0), ((1, 1), 0),
        ((0, 1), 1), ((1, 1), 1)]


def test_image_masks_of_strided_layouts() -> None:
    # slice (offset + sliced(i)) as CuTe's slice_and_offset gives them
    assert _ranks(ROW.image_mask((0, 0, 1, 0), 1)) == {1, 3}      # ([0, 2], offset 1)
    assert _ranks(ROW.image_mask((0, 1, 0, 0), 2)) == {2, 3}      # ([0, 1], offset 2)
    assert _ranks(HAND.image_mask((1, 0, 0, 0), 1)) == {1, 2}     # peer coordinate v = 1
    assert _ranks(HAND.image_mask((1, 0, 0, 0), 2)) == {1, 3}
    assert _ranks(NEST.image_mask(((0, 0), 1), 0)) == {2, 3, 6, 7}  # ([0, 1, 4, 5], 2)
    assert _ranks(NEST.image_mask(((1, 1), 0), 1)) == {5, 7}        # ([0, 2], 5)


def test_masks_that_do_not_fit_sixteen_bits_are_refused() -> None:
    with pytest.raises(MaskRangeError):          # DSL: "the mask may not fit into a 16-bit"
        Layout((2, 2), (1, 16)).image_mask((0, 0), 0)
    with pytest.raises(MaskRangeError):          # a coordinate far outside: rank >= 16
        Layout((2, 2)).image_mask((0, 9), 0)


def test_tiled_divide_keeps_the_strides() -> None:
    def td(shape: tuple, stride, v: int) -> tuple:
        lay = tiled_divide(Layout(shape, stride), (v,))
        return lay.shape, lay.stride

    assert td((2, 2, 1), None, 2) == ((2, 1, 2, 1), (1, 0, 2, 0))
    assert td((4, 2, 1), (2, 1, 0), 2) == ((2, 2, 2, 1), (2, 4, 1, 0))
    assert td((2, 2, 1), (2, 1, 0), 2) == ((2, 1, 2, 1), (2, 0, 1, 0))
    assert td((2, 2, 1), None, 1) == ((1, 2, 2, 1), (0, 1, 2, 0))
    assert td((4, 2, 1), (2, 1, 0), 1) == ((1, 4, 2, 1), (0, 2, 1, 0))


class _Cx:
    def error(self, msg: str, hint: str = "", prop: str = "") -> None:
        raise ValueError(msg)

    def no_more_kwargs(self, kw: dict, what: str, known: object = ()) -> None:
        assert not kw


def test_size_mode_is_a_path_into_the_shape() -> None:
    """F11 was wrong for the installed DSL: ``size(layout, mode=[0])`` is mode 0's size."""
    t = tiled_divide(Layout((4, 2, 1)), (2,))
    assert b_size(_Cx(), (t,), {"mode": [0]}) == 2
    assert b_size(_Cx(), (t,), {}) == 8
    assert b_size(_Cx(), (NEST,), {"mode": [0]}) == 4
    assert b_size(_Cx(), (NEST,), {"mode": [0, 1]}) == 2
    assert b_size(_Cx(), (NEST,), {"mode": [1]}) == 2
    with pytest.raises(ValueError):
        b_size(_Cx(), (t,), {"mode": [1, 2]})     # DSL: "mode [1, 2] has invalid values"
    with pytest.raises(ValueError):
        b_size(_Cx(), (t,), {"mode": 0})          # DSL: mode is a list


def test_shape_and_stride_must_be_congruent() -> None:
    with pytest.raises(ValueError):
        Layout((2, 2), (1,))
    with pytest.raises(ValueError):
        Layout((2, 2), ((1, 2), 4))


# --------------------------------------------------------------------------- CUTLASS helpers


def test_mcast_arrival_mask_uses_the_peer_coordinate_through_the_strides() -> None:
    """V == 1: CUTLASS still ORs the images at (v ^ 1, m, n, l); CuTe's stride 0 makes
    that the CTA itself, a hand-written stride 1 a different CTA."""
    good = ClusterVMNK.of(Layout((1, 2, 1, 1), (0, 1, 2, 0)))
    bad = ClusterVMNK.of(Layout((1, 2, 1, 1), (1, 1, 2, 2)))
    assert [good.mcast_arrival_mask(r, (1, 1)) for r in range(2)] == [0b11, 0b11]
    assert [_ranks(bad.mcast_arrival_mask(r, (1, 1))) for r in range(2)] == [{0, 1, 2},
                                                                              {0, 1, 2}]
    assert bad.tma_empty_signal_targets(0, (1, 1)) == good.tma_empty_signal_targets(0, (1, 1))


def test_row_major_cluster_masks_and_signals_agree() -> None:
    """Every CTA's multicast targets are exactly the CTAs that signal its empty barrier."""
    c = ClusterVMNK.of(ROW)
    for r in range(4):
        targets = _ranks(c.row_mask(r) | c.col_mask(r))
        senders = {s for s in range(4) if r in c.tma_empty_signal_targets(s, (1, 1))}
        assert targets == senders == set(c.tma_empty_signal_targets(r, (1, 1)))
    assert _ranks(c.row_mask(1)) == {0, 1} and _ranks(c.col_mask(1)) == {1, 3}


def test_pair_masks_follow_the_v_stride() -> None:
    """A 2-CTA layout built row-major puts V on stride 2: the layout's "pair" is {0, 2}
    while the hardware pair (cta_group::2) stays {0, 1}."""
    c = ClusterVMNK.of(tiled_divide(Layout((2, 2, 1), (2, 1, 0)), (2,)))
    assert _ranks(c.pair_mask(0)) == {0, 2} and _ranks(c.peer_cta_mask(0)) == {0, 2}
    assert c.peer(0) == 1 and c.leader(1) == 0 and c.is_leader(0) and not c.is_leader(1)


# --------------------------------------------------------------------------- compact = old


def _old_rank(shape: tuple, coord: tuple) -> int:
    r, stride = 0, 1
    for c, s in zip(coord, shape):
        if s != 1:
            r += (c % s) * stride
        stride *= s
    return r


def _old_coord(shape: tuple, rank: int) -> tuple:
    out = []
    for s in shape:
        out.append(rank % s)
        rank //= s
    return tuple(out)


def _old_image(shape: tuple, coord: tuple, mode: int) -> int:
    mask = 0
    for c in range(shape[mode]):
        cc = list(coord)
        cc[mode] = c
        mask |= 1 << _old_rank(shape, tuple(cc))
    return mask


@st.composite
def _compact_shapes(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(1, 4))
    shape = tuple(draw(st.sampled_from([1, 1, 2, 2, 3, 4])) for _ in range(n))
    return shape if Layout(shape).size <= 16 else (2, 2)


@settings(max_examples=200, deadline=None)
@given(_compact_shapes())
def test_compact_layouts_give_the_old_formulas(shape: tuple) -> None:
    lay = Layout(shape)
    for r in range(lay.size):
        c = lay.coord(r)
        assert c == _old_coord(shape, r) == lay.hier_coord(r)
        assert lay.rank(c) == _old_rank(shape, c) == r
        for mode in range(len(shape)):
            assert lay.image_mask(c, mode) == _old_image(shape, c, mode)


def _old_vmnk(shape: tuple) -> dict:
    """The derived quantities as model/cluster.py computed them before strides."""
    V = shape[0]
    out = {}
    for r in range(Layout(shape).size):
        v, m, n, l = _old_coord(shape, r)
        peer = _old_rank(shape, ((v + 1) % V, m, n, l))
        pair = _old_image(shape, (v, m, n, l), 0)
        pc = _old_coord(shape, peer)
        masks = {}
        for mm in ((1, 1), (1, 0), (0, 1)):
            k = 0
            for cc in ((v, m, n, l), pc):
                if mm[0]:
                    k |= _old_image(shape, cc, 2)
                if mm[1]:
                    k |= _old_image(shape, cc, 1)
            masks[mm] = k
        out[r] = (v == 0, r // V * V, peer, pair, pair | _old_image(shape, pc, 0), masks)
    return out


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([1, 2]), st.integers(1, 4), st.integers(1, 4), st.sampled_from([1, 2]))
def test_compact_vmnk_gives_the_old_quantities(v: int, m: int, n: int, l: int) -> None:
    shape = (v, m, n, l)
    if v * m * n * l > 16:
        return
    for c in (ClusterVMNK.of(Layout(shape)), ClusterVMNK.of(tiled_divide(Layout((v * m, n, l)),
                                                                           (v,)))):
        old = _old_vmnk(shape)
        for r in range(c.size):
            leader, lead, peer, pair, pcm, masks = old[r]
            assert (c.is_leader(r), c.leader(r), c.peer(r)) == (leader, lead, peer)
            assert c.pair_mask(r) == pair and c.peer_cta_mask(r) == pcm
            for mm, k in masks.items():
                assert c.mcast_arrival_mask(r, mm) == k


@settings(max_examples=100, deadline=None)
@given(st.permutations([0, 1, 2]), st.tuples(st.integers(1, 3), st.integers(1, 2),
                                             st.integers(1, 2)))
def test_a_permuted_compact_layout_is_inverted_by_its_flat_coord(order: list,
                                                                 shape: tuple) -> None:
    """Any mode order (row-major, ...) of a compact layout is a bijection; get_flat_coord
    is its inverse and every image stays inside [0, size)."""
    stride = [0, 0, 0]
    acc = 1
    for i in order:
        stride[i] = 0 if shape[i] == 1 else acc
        acc *= shape[i]
    lay = Layout(shape, tuple(stride))
    assert sorted(lay.rank(lay.coord(r)) for r in range(lay.size)) == list(range(lay.size))
    for r in range(lay.size):
        assert lay.rank(lay.coord(r)) == r
        for mode in range(3):
            assert lay.image_mask(lay.coord(r), mode) >> lay.size == 0


# --------------------------------------------------------------------------- .pipe front end

MCAST = (EX / "textbook" / "cluster_layout_stride.pipe").read_text()


def test_a_user_coordinate_outside_the_mode_is_not_wrapped() -> None:
    """(0, 2, 0, 0) on the row-major layout is rank 4: outside a 4-CTA cluster."""
    src = MCAST.replace("coord = cta_layout.get_flat_coord(rank)", "coord = (0, 2, 0, 0)")
    with pytest.raises(ConfigError) as ei:
        check(src)
    assert "mask-outside-cluster" in str(ei.value) and "4" in str(ei.value)


def test_a_stride_whose_image_leaves_sixteen_bits_is_an_input_error() -> None:
    src = MCAST.replace("stride=(0, cn, 1, 0)", "stride=(0, 16, 1, 0)")
    with pytest.raises(ConfigError) as ei:
        check(src)
    assert "mask-outside-cluster" in str(ei.value)


def test_a_negative_stride_is_unsupported() -> None:
    src = MCAST.replace("stride=(0, cn, 1, 0)", "stride=(0, -1, 1, 0)")
    with pytest.raises(Unsupported):
        check(src)


def test_layout_stride_attribute_and_hier_coord() -> None:
    src = MCAST.replace("coord = cta_layout.get_flat_coord(rank)",
                        "coord = cta_layout.get_hier_coord(rank)\n"
                        "    lay2 = cute.make_layout(cta_layout.shape, stride=cta_layout.stride)\n"
                        "    b_mask2 = cpasync.create_tma_multicast_mask(lay2, coord, mcast_mode=1)")
    assert check(src).status == "PROVEN"


def test_the_lifter_inverts_the_layout_like_the_dsl() -> None:
    from pipeproof.frontend.cute.values import flat_coord

    assert [flat_coord(i, (1, 2, 2, 1), (0, 2, 1, 0)) for i in range(4)] == [
        (0, 0, 0, 0), (0, 0, 1, 0), (0, 1, 0, 0), (0, 1, 1, 0)]
    assert flat_coord(4, ((2, 2), 2), ((1, 4), 2)) == (2, 0)
    assert flat_coord(4, ((2, 2), 2), ((1, 4), 2), hier=True) == ((0, 1), 0)
    assert flat_coord(1, ((2,), 2, 2, 1), ((1,), 2, 4, 0), hier=True) == ((1,), 0, 0, 0)
    assert flat_coord(3, (1, 2, 2, 1)) == (0, 1, 1, 0)          # default: compact


# --------------------------------------------------------------------------- examples, both engines


@pytest.mark.parametrize("name,status,prop", [
    ("bugs/l1-bug", "VIOLATED", "mask-outside-cluster"),
    ("bugs/l1-fixed", "PROVEN", None),
])
def test_l1_both_engines_agree(name: str, status: str, prop) -> None:
    params = {"k_tiles": 1, "stages": 1}
    e = check_file(EX / f"{name}.pipe", params, engine="explicit").verdict
    b = check_file(EX / f"{name}.pipe", params, engine="bmc", timeout=NO_DEADLINE).verdict
    assert (e.status, e.prop) == (b.status, b.prop) == (status, prop), \
        f"explicit {e.headline()}, bmc {b.headline()}"
    if status == "VIOLATED":
        assert len(e.trace) == len(b.trace)


def test_cluster_layout_stride_textbook_is_proven() -> None:
    v = check_file(EX / "textbook" / "cluster_layout_stride.pipe", engine="explicit").verdict
    assert v.status == "PROVEN"


@pytest.mark.slow
def test_cluster_layout_stride_textbook_bmc_never_contradicts() -> None:
    """4 CTAs x 2 warps: BMC does not decide it within a minute (like
    pipeline_tma_async_multicast); any verdict it gives must be the explicit one."""
    b = check_file(EX / "textbook" / "cluster_layout_stride.pipe", engine="bmc",
                   timeout=NO_DEADLINE).verdict
    assert b.status in ("PROVEN", "SAFE") or (b.status == "UNKNOWN" and "timeout" in b.headline())
