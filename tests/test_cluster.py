"""Cluster layout math (model/cluster.py) against hand-computed values.

The expected numbers were worked out by hand from the CUTLASS CuTe DSL sources:
``cutlass/pipeline/sm90.py`` (``PipelineTmaAsync.init_empty_barrier_arrive_signal``:
lane l < cluster_size signals CTA l when it shares this CTA's (v, m, l) or (v, n, l)),
``cutlass/pipeline/sm100.py`` (``_compute_mcast_arrival_mask`` = a | b | a_peer | b_peer
with a = create_tma_multicast_mask(mode 2), b = mode 1, peer = v ^ 1;
``_compute_is_leader_cta`` = v == 0; ``_compute_peer_cta_rank`` = rank // 2 * 2;
``_compute_tmem_sync_mask`` = image mask of mode 0; ``_init_empty_barrier_arrive_signal_2sm``
= the sm90 rule without comparing v), and CuTe's compact column-major layouts in which a
size-1 mode has stride 0.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeproof.model.cluster import ClusterVMNK, Layout, mask_ranks, tiled_divide


def hopper(cm: int, cn: int) -> ClusterVMNK:
    """``make_layout((1, cm, cn, 1))`` (Hopper kernels)."""
    return ClusterVMNK.of(Layout((1, cm, cn, 1)))


def blackwell(cm: int, cn: int, v: int) -> ClusterVMNK:
    """``tiled_divide(make_layout((cm, cn, 1)), (v,))`` (Blackwell kernels)."""
    return ClusterVMNK.of(tiled_divide(Layout((cm, cn, 1)), (v,)))


# --------------------------------------------------------------------------- layouts


def test_rank_is_column_major() -> None:
    lay = Layout((2, 3))
    assert [lay.rank(c) for c in [(0, 0), (1, 0), (0, 1), (1, 2)]] == [0, 1, 2, 5]
    assert lay.coord(5) == (1, 2)


def test_size_one_modes_have_stride_zero() -> None:
    """A static size-1 mode gets stride 0: its coordinate does not move the rank."""
    lay = Layout((1, 2, 2, 1))
    assert lay.rank((0, 1, 1, 0)) == 3
    assert lay.rank((1, 1, 1, 0)) == 3   # v = 1 in a V = 1 layout is ignored


def test_rank_coord_roundtrip() -> None:
    lay = Layout((2, 2, 2, 1))
    for r in range(lay.size):
        assert lay.rank(lay.coord(r)) == r


def test_tiled_divide_splits_the_first_mode() -> None:
    assert tiled_divide(Layout((4, 1, 1)), (2,)).shape == (2, 2, 1, 1)
    assert tiled_divide(Layout((2, 2, 1)), (2,)).shape == (2, 1, 2, 1)
    with pytest.raises(ValueError):
        tiled_divide(Layout((3, 1, 1)), (2,))


def test_vmnk_must_have_four_modes_and_v_one_or_two() -> None:
    with pytest.raises(ValueError):
        ClusterVMNK.of(Layout((2, 2)))
    with pytest.raises(ValueError):
        ClusterVMNK.of(Layout((3, 1, 1, 1)))


def test_mask_ranks() -> None:
    assert mask_ranks(0b1010) == (1, 3)
    assert mask_ranks(0) == ()


# --------------------------------------------------------------------------- Hopper 2x2


def test_hopper_2x2_multicast_masks() -> None:
    """(1, 2, 2, 1): rank r has m = r % 2, n = r // 2.  A is multicast along N (mode 2),
    B along M (mode 1)."""
    c = hopper(2, 2)
    assert [c.coord(r) for r in range(4)] == [(0, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0),
                                               (0, 1, 1, 0)]
    assert c.layout.image_mask(c.coord(0), 2) == 0b0101   # ranks 0, 2
    assert c.layout.image_mask(c.coord(0), 1) == 0b0011   # ranks 0, 1
    assert c.layout.image_mask(c.coord(3), 2) == 0b1010   # ranks 1, 3
    assert c.layout.image_mask(c.coord(3), 1) == 0b1100   # ranks 2, 3
    assert c.row_mask(1) == 0b1010 and c.col_mask(1) == 0b0011


def test_hopper_2x2_empty_signal_targets() -> None:
    """Lane l < 4 of a consumer warp of CTA r signals CTA l iff l shares r's row or
    column: M + N - 1 = 3 destinations."""
    c = hopper(2, 2)
    assert c.tma_empty_signal_targets(0, (1, 1)) == (0, 1, 2)
    assert c.tma_empty_signal_targets(1, (1, 1)) == (0, 1, 3)
    assert c.tma_empty_signal_targets(2, (1, 1)) == (0, 2, 3)
    assert c.tma_empty_signal_targets(3, (1, 1)) == (1, 2, 3)
    # mcast_mode_mn = (1, 0): same m only; (0, 1): same n only
    assert c.tma_empty_signal_targets(0, (1, 0)) == (0, 2)
    assert c.tma_empty_signal_targets(0, (0, 1)) == (0, 1)


def test_cluster_of_one_signals_only_lane0_locally() -> None:
    c = hopper(1, 1)
    assert c.tma_empty_signal_targets(0, (1, 1)) == (0,)


def test_mcast_mode_00_is_rejected() -> None:
    with pytest.raises(ValueError):
        hopper(2, 1).tma_empty_signal_targets(0, (0, 0))
    with pytest.raises(ValueError):
        hopper(2, 1).mcast_arrival_mask(0, (0, 0))


# --------------------------------------------------------------------------- Blackwell 2-CTA


def test_blackwell_2x1_pair() -> None:
    """(2, 1, 1, 1): one CTA pair.  Leader = even rank; both CTAs receive the leader's
    tcgen05.commit multicast."""
    c = blackwell(2, 1, 2)
    assert c.layout.shape == (2, 1, 1, 1)
    assert [c.is_leader(r) for r in range(2)] == [True, False]
    assert [c.leader(r) for r in range(2)] == [0, 0]
    assert [c.peer(r) for r in range(2)] == [1, 0]
    assert c.pair_mask(0) == c.pair_mask(1) == 0b11
    assert c.mcast_arrival_mask(0, (1, 1)) == 0b11
    assert c.mcast_arrival_mask(1, (1, 1)) == 0b11


def test_blackwell_4x1_two_pairs() -> None:
    """(2, 2, 1, 1): rank r has v = r % 2, m = r // 2.  For rank 0: a = {0} (sweep N of
    size 1), b = {0, 2} (sweep M), a_peer = {1}, b_peer = {1, 3}."""
    c = blackwell(4, 1, 2)
    assert c.layout.shape == (2, 2, 1, 1)
    assert c.mcast_arrival_mask(0, (1, 1)) == 0b1111
    assert c.mcast_arrival_mask(0, (1, 0)) == 0b0011     # a | a_peer
    assert c.mcast_arrival_mask(0, (0, 1)) == 0b1111     # b | b_peer
    assert c.mcast_arrival_mask(2, (1, 0)) == 0b1100
    assert [c.leader(r) for r in range(4)] == [0, 0, 2, 2]
    assert [c.is_leader(r) for r in range(4)] == [True, False, True, False]
    assert c.pair_mask(3) == 0b1100


def test_blackwell_2x2_pairs_along_n() -> None:
    """(2, 1, 2, 1): rank r has v = r % 2, n = r // 2."""
    c = blackwell(2, 2, 2)
    assert c.layout.shape == (2, 1, 2, 1)
    assert c.mcast_arrival_mask(0, (1, 1)) == 0b1111
    assert c.mcast_arrival_mask(0, (0, 1)) == 0b0011     # b = {0}, b_peer = {1}
    assert c.mcast_arrival_mask(0, (1, 0)) == 0b1111     # a = {0, 2}, a_peer = {1, 3}


def test_blackwell_v1_peer_is_self() -> None:
    """With V == 1 the peer coordinate v ^ 1 falls on a stride-0 mode: the peer is the
    CTA itself, so the arrival mask is just a | b."""
    c = blackwell(2, 1, 1)
    assert c.layout.shape == (1, 2, 1, 1)
    assert c.peer(1) == 1
    assert c.mcast_arrival_mask(0, (1, 1)) == 0b11
    assert all(c.is_leader(r) for r in range(2))


def test_2sm_async_signalling_does_not_compare_v() -> None:
    """PipelineTmaMultiConsumersAsync._init_empty_barrier_arrive_signal_2sm signals the
    other CTA of the pair too; PipelineTmaAsync's rule (sm90) does not."""
    c = blackwell(2, 1, 2)
    assert c.tma_empty_signal_targets(0, (1, 1)) == (0,)
    assert c.tma_empty_signal_targets(0, (1, 1), compare_v=False) == (0, 1)
    assert c.tma_empty_signal_targets(1, (1, 1), compare_v=False) == (0, 1)


# --------------------------------------------------------------------------- properties


def _vmnk_shapes() -> st.SearchStrategy:
    def ok(s: tuple) -> bool:
        v, m, n, l = s
        return v * m * n * l <= 16

    return st.tuples(st.sampled_from([1, 2]), st.integers(1, 4), st.integers(1, 4),
                     st.sampled_from([1, 1, 2])).filter(ok)


@settings(max_examples=150, deadline=None)
@given(_vmnk_shapes())
def test_every_mask_stays_inside_the_cluster(shape: tuple) -> None:
    """Lesson 4: masks must stay inside the cluster for every layout."""
    c = ClusterVMNK.of(Layout(shape))
    full = (1 << c.size) - 1
    for r in range(c.size):
        for mode in range(4):
            m = c.layout.image_mask(c.coord(r), mode)
            assert m & ~full == 0
            assert bin(m).count("1") == shape[mode]
            assert (m >> r) & 1
        for mm in ((1, 1), (1, 0), (0, 1)):
            assert c.mcast_arrival_mask(r, mm) & ~full == 0
            assert set(c.tma_empty_signal_targets(r, mm)) <= set(range(c.size))


@settings(max_examples=150, deadline=None)
@given(_vmnk_shapes())
def test_empty_fan_in_matches_the_count_formulas(shape: tuple) -> None:
    """The arrivals each CTA's empty barrier receives equal what CUTLASS counts.

    sm90 PipelineTmaAsync: one signal per consumer warp from every CTA of the same row
    or column and the same v -- M + N - 1 per warp (cluster examples), and the relation
    is symmetric.  sm100 PipelineTmaUmma: only leaders commit, each to
    ``mcast_arrival_mask``; every CTA receives M + N - 1 commits."""
    c = ClusterVMNK.of(Layout(shape))
    for s in range(c.size):
        senders = [r for r in range(c.size) if s in c.tma_empty_signal_targets(r, (1, 1))]
        assert len(senders) == c.M + c.N - 1
        assert sorted(senders) == sorted(c.tma_empty_signal_targets(s, (1, 1)))
        commits = [r for r in range(c.size)
                   if c.is_leader(r) and (c.mcast_arrival_mask(r, (1, 1)) >> s) & 1]
        assert len(commits) == c.M + c.N - 1


@settings(max_examples=100, deadline=None)
@given(_vmnk_shapes())
def test_leader_and_peer_are_consistent(shape: tuple) -> None:
    c = ClusterVMNK.of(Layout(shape))
    for r in range(c.size):
        assert c.peer(c.peer(r)) == r
        assert c.is_leader(c.leader(r))
        assert c.leader(r) in (r, c.peer(r))
        assert c.pair_mask(r) == (1 << r) | (1 << c.peer(r))
