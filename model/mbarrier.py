"""The mbarrier state machine (PTX ISA, 'Parallel Synchronization and Communication Instructions: mbarrier', layout v0).

Contents of one barrier (PTX ISA mbarrier, 'Contents of the mbarrier object'): the current phase, the pending arrival
count, the expected arrival count and the signed tx-count.  The hardware only exposes
the phase parity; the model keeps the phase modulo ``PHASE_MOD`` (4) so that a waiter
two or more phases behind can be told apart from one that is up to date (the ABA misuse
of ``try_wait.parity``), while the state space stays finite.  Every rule below uses the
phase only through its parity and through differences modulo 4, so reducing it is exact.

``observed`` is ghost state for the usage rule of the PTX ISA's mbarrier.test_wait/try_wait text ("for each phase
k, some test_wait/try_wait must return True for phase k before any arrive-on in phase
k+1"): it is 1 while the most recently completed phase (or the fresh barrier's
"phase -1") has been observed by a successful wait.

All functions are written against the value interface (``model/values.py``) and return
``(new_barrier, [Check, ...])``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .properties import Check, Prop

#: Largest arrival count and largest tx-count magnitude (PTX ISA mbarrier, 'Contents of the mbarrier object', layout v0).
MAXC = (1 << 20) - 1
#: Phases are kept modulo this (see module docstring).
PHASE_MOD = 4


class MBarrier(NamedTuple):
    """One mbarrier.  Field values are ints (concrete) or z3 terms (symbolic)."""

    phase: Any
    pending: Any
    expected: Any
    tx: Any
    observed: Any

    @property
    def parity(self) -> Any:  # concrete use only (rendering)
        return self.phase % 2


FIELDS = MBarrier._fields
UNINITIALISED = MBarrier(0, 0, 0, 0, 1)


def init(count: Any) -> MBarrier:
    """``mbarrier.init [b], count``: phase 0, pending = expected = count, tx 0."""
    return MBarrier(0, count, count, 0, 1)


def init_checks(V: Any, count: Any) -> list[Check]:
    """Undefined behaviour of ``mbarrier.init`` (count outside [1, 2^20-1])."""
    return [
        Check(
            V.or_(V.lt(count, 1), V.lt(MAXC, count)),
            Prop.COUNT_OUT_OF_RANGE,
            "mbarrier.init with an arrival count outside [1, 2^20-1]",
        )
    ]


def _settle(V: Any, b: MBarrier, pending: Any, tx: Any, expected: Any) -> tuple[MBarrier, Any]:
    """Phase-completion rule (PTX ISA mbarrier, 'Phase Completion of the mbarrier object'): pending == 0 and tx == 0 completes it.

    On completion the phase advances, pending is reloaded from the expected count and the
    new phase is not yet observed.  Returns the new barrier and the completion flag.
    """
    done = V.and_(V.eq(pending, 0), V.eq(tx, 0))
    return (
        MBarrier(
            V.ite(done, V.mod(b.phase + 1, PHASE_MOD), b.phase),
            V.ite(done, expected, pending),
            expected,
            tx,
            V.ite(done, 0, b.observed),
        ),
        done,
    )


def _tx_range(V: Any, tx: Any, what: str) -> Check:
    return Check(
        V.or_(V.lt(MAXC, tx), V.lt(tx, -MAXC)),
        Prop.TX_OVERFLOW,
        f"{what} takes the tx-count outside [-(2^20-1), 2^20-1]",
    )


def surplus_check(V: Any, b: MBarrier, phase: Any) -> Check:
    """An arrival that belongs to phase ``phase`` (mod 4) finds the barrier past it.

    In every CUTLASS pipeline protocol an arrival made with a pipeline state that names
    phase k of a barrier lands in phase k: the arriving warp's own wait (a consumer's on
    ``full`` phase k, a producer's on ``empty`` phase k-1) orders it after phase k
    began, and phase k cannot complete without it (each party is counted once per phase).
    Finding the barrier one phase (or two) further means phase k completed without this
    arrival: it got more arrivals than it expects, and this one is the surplus.  The PTX
    ISA defines the pending count only in [0, 2^20-1] ('Contents of the mbarrier
    object'), so the hardware neither rejects nor remembers the surplus: it decrements
    the *next* phase's pending count (PTX ISA mbarrier.arrive), completing that phase
    early -- which the model would otherwise only see later, as a stale parity, a data
    race or a deadlock.  A barrier one phase *behind* (an early arrival) is not
    reported here.
    """
    d = V.mod(b.phase - phase + PHASE_MOD, PHASE_MOD)
    return Check(
        V.or_(V.eq(d, 1), V.eq(d, 2)),
        Prop.ARRIVAL_OVERFLOW,
        f"the arrival belongs to phase {phase} (mod {PHASE_MOD}) of the barrier, by the "
        "arriving warp's pipeline state, but that phase already completed without it: "
        "the phase got more arrivals than it expects and this surplus one lands in the "
        "next phase (a group counted once whose warps each arrive, or a double release)",
    )


def arrive(
    V: Any, b: MBarrier, count: Any = 1, tx: Any = 0, drop: bool = False,
    phase: Any = None,
) -> tuple[MBarrier, list[Check]]:
    """``mbarrier.arrive{.expect_tx}{_drop}`` with an arrival count.

    PTX ISA mbarrier.arrive / mbarrier.arrive_drop: with ``.expect_tx`` the tx-count is first increased by ``tx``;
    then ``pending -= count`` (``arrive_drop`` also lowers the expected count of this and
    every later phase) and the completion rule runs.  ``count`` may stand for several
    threads of one warp arriving at once (the model's warps execute an instruction for
    all their active lanes in one step).  ``phase``: the phase the arrival belongs to,
    when known (``surplus_check``; it comes first, so a surplus arrival is reported as
    ``arrival-overflow`` rather than as the ``phase-overrun`` it may also be).
    """
    checks: list[Check] = []
    if phase is not None:
        checks.append(surplus_check(V, b, phase))
    if not isinstance(tx, int) or tx != 0:
        tx1 = b.tx + tx
        checks.append(_tx_range(V, tx1, "arrive.expect_tx"))
    else:
        tx1 = b.tx
    expected = b.expected
    if drop:
        expected = b.expected - count
        checks.append(
            Check(V.le(expected, 0), Prop.ARRIVE_DROP_TO_ZERO,
                  "arrive_drop lowers the expected arrival count to zero")
        )
    pending = b.pending - count
    checks.append(
        Check(
            V.lt(pending, 0),
            Prop.ARRIVAL_OVERFLOW,
            "more arrivals than the phase expects (pending count would go below zero)",
        )
    )
    checks.append(
        Check(
            V.eq(b.observed, 0),
            Prop.PHASE_OVERRUN,
            "arrive-on in phase k+1 before any wait returned True for phase k "
            "(PTX ISA mbarrier usage rule)",
        )
    )
    nb, _ = _settle(V, b, pending, tx1, expected)
    return nb, checks


def increment_pending(V: Any, b: MBarrier) -> tuple[MBarrier, list[Check]]:
    """Issue of ``cp.async.mbarrier.arrive`` without ``.noinc``: pending += 1 at once.

    PTX ISA cp.async.mbarrier.arrive: the later asynchronous arrive takes the increment back, so the
    net effect on the phase is zero; going above 2^20-1 is undefined.
    """
    pending = b.pending + 1
    return (
        MBarrier(b.phase, pending, b.expected, b.tx, b.observed),
        [Check(V.lt(MAXC, pending), Prop.COUNT_OUT_OF_RANGE,
               "cp.async.mbarrier.arrive takes the pending count above 2^20-1")],
    )


def expect_tx(V: Any, b: MBarrier, tx: Any) -> tuple[MBarrier, list[Check]]:
    """Bare ``mbarrier.expect_tx`` (PTX ISA mbarrier.expect_tx): tx += n, no arrival.

    The spec lists no completion step for a bare expect-tx; when it brings the tx-count
    to exactly zero with no arrivals pending, what happens is unspecified, and the model
    reports it (``unspecified-expect-tx``) rather than guessing.
    """
    tx1 = b.tx + tx
    return (
        MBarrier(b.phase, b.pending, b.expected, tx1, b.observed),
        [
            _tx_range(V, tx1, "expect_tx"),
            Check(
                V.and_(V.eq(tx1, 0), V.eq(b.pending, 0)),
                Prop.UNSPECIFIED_EXPECT_TX,
                "a bare expect_tx brings the tx-count to 0 with no arrivals pending; "
                "the PTX ISA does not say whether the phase completes",
            ),
        ],
    )


def complete_tx(V: Any, b: MBarrier, tx: Any) -> tuple[MBarrier, list[Check]]:
    """``complete_tx`` of an asynchronous copy (PTX ISA mbarrier.complete_tx): tx -= n, then settle.

    The tx-count may go negative inside a phase: bytes may land before the matching
    expect_tx (PTX ISA mbarrier, 'Contents of the mbarrier object': the tx-count range is signed).
    """
    tx1 = b.tx - tx
    nb, _ = _settle(V, b, b.pending, tx1, b.expected)
    return nb, [_tx_range(V, tx1, "complete_tx")]


def wait_done(V: Any, b: MBarrier, parity: Any) -> Any:
    """``try_wait.parity``/``test_wait.parity`` result: the phase of that parity is complete.

    PTX ISA mbarrier.test_wait/try_wait: parity names the current (incomplete) phase, which gives False,
    or the immediately preceding (complete) one, which gives True; operationally
    ``parity != phase mod 2``.  A fresh barrier (phase 0) answers True to parity 1.
    """
    return V.ne(parity, V.mod(b.phase, 2))


def stale_check(V: Any, b: MBarrier, ghost_phase: Any) -> Check:
    """A waiter that means phase ``k`` (ghost) must find the barrier in phase k or k+1.

    Anything else (two or more phases behind, or waiting for a phase that has not begun)
    breaks the precondition of ``try_wait.parity`` and parity aliasing gives the wrong
    answer (PTX ISA mbarrier.test_wait/try_wait).
    """
    d = V.mod(b.phase - ghost_phase + 2 * PHASE_MOD, PHASE_MOD)
    return Check(
        V.and_(V.ne(d, 0), V.ne(d, 1)),
        Prop.STALE_PARITY,
        "the waiter's phase is not the barrier's current or preceding phase "
        "(parity aliasing: it lags two or more phases, or waits for a future phase)",
    )


def observe(V: Any, b: MBarrier, done: Any) -> MBarrier:
    """A wait that returned True marks the completed phase as observed."""
    return MBarrier(b.phase, b.pending, b.expected, b.tx, V.ite(done, 1, b.observed))
