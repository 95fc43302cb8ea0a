"""``PipelineState`` (model/pipeline_state.py) against ``cutlass/pipeline/helpers.py``.

CUTLASS: ``advance`` does index += 1, count += 1 and, when index reaches ``stages``,
index = 0 and phase ^= 1; ``reverse`` undoes it; ``make_pipeline_state`` starts producers
(and ProducerConsumer) at phase 1 and consumers at phase 0 (lesson 1).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeproof.model.mbarrier import PHASE_MOD
from pipeproof.model.pipeline_state import (PipelineUserType, fill_tag_for_acquire,
                                            fill_tag_for_wait, make_pipeline_state,
                                            state_from_index_phase)


def test_producer_starts_at_phase1_consumer_at_phase0() -> None:
    p = make_pipeline_state(PipelineUserType.Producer, 4)
    c = make_pipeline_state(PipelineUserType.Consumer, 4)
    pc = make_pipeline_state(PipelineUserType.ProducerConsumer, 4)
    assert (p.index, p.phase, p.count) == (0, 1, 0)
    assert (c.index, c.phase, c.count) == (0, 0, 0)
    assert (pc.index, pc.phase) == (0, 1)


def test_ghost_phases_of_fresh_states() -> None:
    """The producer waits for the fresh barrier's 'phase -1' (3 mod 4), the consumer
    for phase 0."""
    assert make_pipeline_state(PipelineUserType.Producer, 2).ghost == PHASE_MOD - 1
    assert make_pipeline_state(PipelineUserType.Consumer, 2).ghost == 0


def test_zero_stages_rejected() -> None:
    with pytest.raises(ValueError):
        make_pipeline_state(PipelineUserType.Producer, 0)


def test_unknown_user_type_rejected() -> None:
    with pytest.raises(ValueError):
        make_pipeline_state("Sideways", 2)


def test_advance_wraps_and_flips_phase() -> None:
    s = make_pipeline_state(PipelineUserType.Producer, 3)
    seen = []
    for _ in range(7):
        seen.append((s.index, s.phase, s.count))
        s = s.advance()
    assert seen == [(0, 1, 0), (1, 1, 1), (2, 1, 2), (0, 0, 3), (1, 0, 4), (2, 0, 5),
                    (0, 1, 6)]


def test_single_stage_flips_every_advance() -> None:
    s = make_pipeline_state(PipelineUserType.Consumer, 1)
    phases = []
    for _ in range(4):
        phases.append(s.phase)
        s = s.advance()
    assert phases == [0, 1, 0, 1]
    assert s.index == 0


def test_reverse_undoes_advance_across_a_wrap() -> None:
    s = make_pipeline_state(PipelineUserType.Consumer, 2)
    t = s.advance().advance().reverse()
    assert (t.index, t.phase, t.count, t.ghost) == (1, 0, 1, 0)
    u = s.reverse()
    assert (u.index, u.phase, u.count) == (1, 1, -1)


def test_reset_count_keeps_index_and_phase() -> None:
    s = make_pipeline_state(PipelineUserType.Producer, 2).advance().advance().advance()
    r = s.reset_count()
    assert (r.index, r.phase, r.count) == (s.index, s.phase, 0)


def test_state_from_index_phase_is_untracked_and_flips_parity() -> None:
    s = state_from_index_phase(2, 1, 1)
    assert not s.tracked and (s.index, s.phase) == (1, 1)
    t = s.advance()
    assert (t.index, t.phase) == (0, 0)


def test_fill_tags_match_between_producer_and_consumer() -> None:
    """The fill a producer writes after its n-th acquire is the fill the consumer's n-th
    wait entitles it to read (the same full-barrier phase)."""
    p = make_pipeline_state(PipelineUserType.Producer, 3)
    c = make_pipeline_state(PipelineUserType.Consumer, 3)
    for _ in range(20):
        assert fill_tag_for_acquire(p) == fill_tag_for_wait(c)
        p, c = p.advance(), c.advance()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.sampled_from([PipelineUserType.Producer, PipelineUserType.Consumer]),
       st.lists(st.booleans(), max_size=40))
def test_matches_cutlass_reference(stages: int, utype: str, moves: list) -> None:
    """Any sequence of advance/reverse: index = count mod stages and the phase bit is
    the start phase flipped once per wrap (CUTLASS helpers.py semantics); the ghost is
    the wrap count mod 4 from the start ghost."""
    s = make_pipeline_state(utype, stages)
    start = s.phase
    count = 0
    for adv in moves:
        s = s.advance() if adv else s.reverse()
        count += 1 if adv else -1
        wraps = count // stages
        assert s.count == count
        assert s.index == count % stages
        assert s.phase == start ^ (wraps % 2)
        assert s.ghost == (make_pipeline_state(utype, stages).ghost + wraps) % PHASE_MOD
