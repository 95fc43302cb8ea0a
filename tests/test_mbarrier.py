"""The mbarrier state machine (model/mbarrier.py) against the PTX ISA rules.

Each test names the rule it pins: PTX ISA 'Parallel Synchronization and Communication
Instructions: mbarrier' (contents of the object, phase completion, arrive, expect_tx,
complete_tx, test_wait/try_wait, arrive_drop, cp.async.mbarrier.arrive) and the lessons
of shared/research/bug-lessons.md.  A hypothesis test replays random operation sequences
through the model and through an independent reference written from the transition
table of shared/research/ptx-sync-semantics.md (phase kept unbounded there).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeproof.model import mbarrier as mb
from pipeproof.model.mbarrier import MAXC, PHASE_MOD, MBarrier
from pipeproof.model.properties import Prop
from pipeproof.model.values import CONCRETE as V


def fired(checks: list) -> set[str]:
    """The properties whose condition is true."""
    return {c.prop for c in checks if c.condition}


def arrive(b: MBarrier, count: int = 1, tx: int = 0, drop: bool = False) -> tuple[MBarrier, set]:
    nb, checks = mb.arrive(V, b, count, tx, drop)
    return nb, fired(checks)


def waited(b: MBarrier, parity: int) -> MBarrier:
    """A successful wait (as a consumer would do between phases)."""
    assert mb.wait_done(V, b, parity)
    return mb.observe(V, b, True)


# --------------------------------------------------------------------------- init


def test_init_sets_phase0_pending_expected_and_tx0() -> None:
    b = mb.init(3)
    assert (b.phase, b.pending, b.expected, b.tx) == (0, 3, 3, 0)


@pytest.mark.parametrize("count,bad", [(0, True), (1, False), (MAXC, False), (MAXC + 1, True)])
def test_init_count_range(count: int, bad: bool) -> None:
    """mbarrier.init: the count must lie in [1, 2^20-1]."""
    assert (Prop.COUNT_OUT_OF_RANGE in fired(mb.init_checks(V, count))) is bad


# --------------------------------------------------------------------------- lesson 1


def test_lesson1_fresh_barrier_parity1_wait_returns_at_once() -> None:
    """Lesson 1: a fresh barrier is in phase 0; a wait on parity 1 (the 'preceding'
    phase) returns True at once -- which is why producers start at phase 1."""
    b = mb.init(1)
    assert mb.wait_done(V, b, 1) is True


def test_lesson1_fresh_barrier_parity0_wait_blocks() -> None:
    b = mb.init(1)
    assert mb.wait_done(V, b, 0) is False


def test_wait_result_is_parity_differs_from_current_phase() -> None:
    """try_wait.parity returns True iff parity != current phase mod 2."""
    b = mb.init(1)
    for k in range(2 * PHASE_MOD + 1):
        assert mb.wait_done(V, b, k % 2) is False          # current phase: incomplete
        assert mb.wait_done(V, b, (k + 1) % 2) is True     # preceding phase: complete
        b = mb.observe(V, b, True)
        b, f = arrive(b)
        assert not f


# --------------------------------------------------------------------------- lesson 2


def test_lesson2_phase_completes_only_with_pending0_and_tx0() -> None:
    """Phase completion: pending == 0 AND tx-count == 0 (both)."""
    b = mb.init(1)
    b, f = arrive(b, 1, tx=1024)          # arrive.expect_tx: pending 0, tx 1024
    assert not f
    assert (b.phase, b.pending, b.tx) == (0, 0, 1024)
    b, c = mb.complete_tx(V, b, 512)
    assert not fired(c) and (b.phase, b.tx) == (0, 512)
    b, c = mb.complete_tx(V, b, 512)
    assert not fired(c)
    assert (b.phase, b.pending, b.tx) == (1, 1, 0)      # completed: pending reloaded


def test_lesson2_arrivals_alone_do_not_complete_while_bytes_are_expected() -> None:
    b = mb.init(2)
    b, _ = arrive(b, 1, tx=64)
    b, _ = arrive(b, 1)
    assert b.phase == 0 and b.pending == 0 and b.tx == 64


def test_lesson2_expect_tx_without_arrive_never_completes() -> None:
    """P5: a bare expect_tx (no arrival) on a count-1 barrier: the bytes alone cannot
    complete the phase -- it also needs its one arrival."""
    b = mb.init(1)
    b, c = mb.expect_tx(V, b, 4096)
    assert not fired(c)
    assert (b.phase, b.pending, b.tx) == (0, 1, 4096)
    b, c = mb.complete_tx(V, b, 4096)
    assert not fired(c)
    assert (b.phase, b.pending, b.tx) == (0, 1, 0)      # still waiting for the arrival
    assert mb.wait_done(V, b, 0) is False


def test_lesson2_expect_tx_is_not_an_arrival() -> None:
    """A sanitizer that counted expect_tx as an arrival got several copies on one
    barrier wrong: two copies, one arrive.expect_tx for both, count 1."""
    b = mb.init(1)
    b, _ = arrive(b, 1, tx=1024 + 2048)
    b, _ = mb.complete_tx(V, b, 1024)
    assert b.phase == 0
    b, _ = mb.complete_tx(V, b, 2048)
    assert b.phase == 1


def test_lesson2_tx_may_go_negative_within_a_phase() -> None:
    """Bytes may land before the matching expect_tx: tx goes negative, no violation,
    and the later arrive.expect_tx completes the phase."""
    b = mb.init(1)
    b, c = mb.complete_tx(V, b, 2048)
    assert not fired(c)
    assert (b.phase, b.tx) == (0, -2048)
    b, f = arrive(b, 1, tx=2048)
    assert not f
    assert (b.phase, b.tx, b.pending) == (1, 0, 1)


def test_lesson2_negative_tx_with_pending0_does_not_complete() -> None:
    b = mb.init(1)
    b, _ = mb.complete_tx(V, b, 16)
    b, _ = arrive(b, 1)
    assert (b.phase, b.pending, b.tx) == (0, 0, -16)


@pytest.mark.parametrize("tx,bad", [(MAXC, False), (MAXC + 1, True)])
def test_tx_count_magnitude_limit_on_expect(tx: int, bad: bool) -> None:
    """tx-count range [-(2^20-1), 2^20-1] (layout v0)."""
    b = mb.init(1)
    _, f = arrive(b, 1, tx=tx)
    assert (Prop.TX_OVERFLOW in f) is bad


@pytest.mark.parametrize("n,bad", [(MAXC, False), (MAXC + 1, True)])
def test_tx_count_magnitude_limit_on_negative_side(n: int, bad: bool) -> None:
    b = mb.init(1)
    _, c = mb.complete_tx(V, b, n)
    assert (Prop.TX_OVERFLOW in fired(c)) is bad


def test_bare_expect_tx_reaching_zero_with_no_pending_is_unspecified() -> None:
    """The PTX ISA lists no completion step for a bare expect_tx; the model reports it
    rather than guessing (open question 1 of the research note)."""
    b = mb.init(1)
    b, _ = mb.complete_tx(V, b, 32)
    b, _ = arrive(b, 1)                  # pending 0, tx -32
    _, c = mb.expect_tx(V, b, 32)
    assert Prop.UNSPECIFIED_EXPECT_TX in fired(c)


def test_bare_expect_tx_with_pending_arrivals_is_fine() -> None:
    b = mb.init(1)
    b, _ = mb.complete_tx(V, b, 32)
    nb, c = mb.expect_tx(V, b, 32)
    assert not fired(c) and nb.tx == 0 and nb.phase == 0


# --------------------------------------------------------------------------- arrivals


def test_arrive_with_count_larger_than_pending_overflows() -> None:
    b = mb.init(32)
    _, f = arrive(b, 33)
    assert Prop.ARRIVAL_OVERFLOW in f


def test_arrive_with_exact_count_completes() -> None:
    b = mb.init(32)
    b, f = arrive(b, 32)
    assert not f and b.phase == 1 and b.pending == 32


def test_arrive_in_next_phase_before_any_wait_is_phase_overrun() -> None:
    """Usage rule of try_wait: some wait must return True for phase k before any
    arrive-on in phase k+1."""
    b = mb.init(1)
    b, f = arrive(b)
    assert not f and b.phase == 1
    _, f = arrive(b)
    assert Prop.PHASE_OVERRUN in f
    b = waited(b, 0)
    _, f = arrive(b)
    assert not f


def test_failed_wait_does_not_observe() -> None:
    b = mb.init(1)
    b, _ = arrive(b)
    b = mb.observe(V, b, mb.wait_done(V, b, 1))   # parity 1 = current phase: False
    _, f = arrive(b)
    assert Prop.PHASE_OVERRUN in f


def test_arrive_drop_lowers_expected_for_later_phases() -> None:
    """arrive_drop: expected -= count (permanent), then an arrival; the next phase
    reloads pending with the decremented count."""
    b = mb.init(3)
    b, f = arrive(b, 1, drop=True)
    assert not f and (b.pending, b.expected) == (2, 2)
    b, f = arrive(b, 2)
    assert not f and b.phase == 1 and b.pending == 2


def test_arrive_drop_to_zero_is_undefined() -> None:
    b = mb.init(1)
    _, f = arrive(b, 1, drop=True)
    assert Prop.ARRIVE_DROP_TO_ZERO in f


def test_cp_async_arrive_without_noinc_increments_pending() -> None:
    """cp.async.mbarrier.arrive without .noinc: pending += 1 at issue, taken back by the
    asynchronous arrive -- net zero for the phase."""
    b = mb.init(1)
    b, c = mb.increment_pending(V, b)
    assert not fired(c) and b.pending == 2
    b, f = arrive(b)                     # the deferred arrive fires
    assert not f and b.phase == 0 and b.pending == 1
    b, f = arrive(b)                     # the thread's own arrival
    assert b.phase == 1


def test_cp_async_increment_above_limit_is_undefined() -> None:
    b = MBarrier(0, MAXC, MAXC, 0, 1)
    _, c = mb.increment_pending(V, b)
    assert Prop.COUNT_OUT_OF_RANGE in fired(c)


# --------------------------------------------------------------------------- stale parity


@pytest.mark.parametrize("lag,stale", [(0, False), (1, False), (2, True), (3, True)])
def test_stale_parity_when_waiter_lags_two_or_more_phases(lag: int, stale: bool) -> None:
    """try_wait.parity is valid only for the current or the immediately preceding
    phase; a waiter two phases behind aliases (ABA)."""
    barrier_phase = 2
    b = MBarrier(barrier_phase, 1, 1, 0, 1)
    c = mb.stale_check(V, b, (barrier_phase - lag) % PHASE_MOD)
    assert bool(c.condition) is stale and c.prop == Prop.STALE_PARITY


def test_stale_parity_when_waiting_for_a_future_phase() -> None:
    b = MBarrier(1, 1, 1, 0, 1)
    assert mb.stale_check(V, b, 2).condition


def test_phase_is_kept_mod_4() -> None:
    b = mb.init(1)
    for i in range(PHASE_MOD):
        b = mb.observe(V, b, True)
        b, _ = arrive(b)
    assert b.phase == 0
    assert mb.wait_done(V, b, 1) is True


# --------------------------------------------------------------------------- reference


@dataclass
class Ref:
    """An independent reference from the research note's transition table (T3-T6),
    with an unbounded phase."""

    ph: int
    pend: int
    exp: int
    tx: int
    observed: bool = True

    def settle(self) -> None:
        if self.pend == 0 and self.tx == 0:
            self.ph += 1
            self.pend = self.exp
            self.observed = False

    def arrive(self, count: int, xtx: int) -> set[str]:
        bad = set()
        self.tx += xtx
        if abs(self.tx) > MAXC:
            bad.add(Prop.TX_OVERFLOW)
        if not self.observed:
            bad.add(Prop.PHASE_OVERRUN)
        self.pend -= count
        if self.pend < 0:
            bad.add(Prop.ARRIVAL_OVERFLOW)
        self.settle()
        return bad

    def complete_tx(self, n: int) -> set[str]:
        self.tx -= n
        bad = {Prop.TX_OVERFLOW} if abs(self.tx) > MAXC else set()
        self.settle()
        return bad

    def expect_tx(self, n: int) -> set[str]:
        self.tx += n
        bad = {Prop.TX_OVERFLOW} if abs(self.tx) > MAXC else set()
        if self.tx == 0 and self.pend == 0:
            bad.add(Prop.UNSPECIFIED_EXPECT_TX)
        return bad

    def wait(self, parity: int) -> bool:
        done = parity != self.ph % 2
        if done:
            self.observed = True
        return done


ops = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), st.integers(1, 3), st.sampled_from([0, 0, 16, 64])),
        st.tuples(st.just("complete_tx"), st.sampled_from([16, 48, 64]), st.just(0)),
        st.tuples(st.just("expect_tx"), st.sampled_from([16, 64]), st.just(0)),
        st.tuples(st.just("wait"), st.integers(0, 1), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4), ops)
def test_model_agrees_with_reference_transition_table(count: int, seq: list) -> None:
    """Random operation sequences: same phase (mod 4), counts, wait results and the
    same undefined-behaviour flags, up to the first violation."""
    b = mb.init(count)
    ref = Ref(0, count, count, 0)
    for op, x, y in seq:
        if op == "arrive":
            b, f = arrive(b, x, y)
            g = ref.arrive(x, y)
        elif op == "complete_tx":
            b, c = mb.complete_tx(V, b, x)
            f, g = fired(c), ref.complete_tx(x)
        elif op == "expect_tx":
            b, c = mb.expect_tx(V, b, x)
            f, g = fired(c), ref.expect_tx(x)
        else:
            done = mb.wait_done(V, b, x)
            assert done == ref.wait(x)
            b = mb.observe(V, b, done)
            f = g = set()
        assert f == g, (op, x, y)
        if f:
            return
        assert b.phase == ref.ph % PHASE_MOD
        assert (b.pending, b.expected, b.tx) == (ref.pend, ref.exp, ref.tx)
