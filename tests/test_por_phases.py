"""The partial-order reduction's rule for waits that need a barrier's *next* phase
(``por.Footprints.wait_completions``, ``Closure._later_waits``, ``por.counts.may_complete``):
a warp outside the stubborn set that passes a wait on barrier b and later waits on b
again needs two completions of b, and stays blocked there when the operations the other
units may perform cannot complete b twice.

* ``may_complete`` against a brute force over every order of every subset of the
  operations, run through the model's own mbarrier rules (``model/mbarrier.py``): it may
  say yes when no order completes (it is a necessary condition), never no when one does;
* the C version (``porwalk.c`` ``pw_may_complete``) answers as the Python one;
* the reduced search against the full interleaving graph on multicast clusters whose
  producers run a round ahead (k-tiles > stages), correct and with planted bugs."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import generators as G
from helpers import NO_DEADLINE
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.native.build import unavailable
from pipeproof.checker.por.counts import may_complete
from pipeproof.model import mbarrier as mb
from pipeproof.model.values import CONCRETE as V
from test_por import _compare_por

ROOT = Path(__file__).resolve().parent.parent
MULTICAST = (ROOT / "examples" / "textbook" / "pipeline_tma_async_multicast.pipe").read_text()

OPS = st.lists(st.one_of(
    st.tuples(st.just("A"), st.integers(1, 2), st.sampled_from([0, 0, 1024, 2048])),
    st.tuples(st.just("X"), st.sampled_from([1024, 2048]), st.just(0))), max_size=5)


def _completions(pending: int, expected: int, tx: int, seq: tuple) -> int:
    """Phase completions of a barrier (pending, expected, tx) under the operations
    ``seq`` in that order, by the model's rules; -1 once an arrival overflows."""
    b = mb.MBarrier(0, pending, expected, tx, 1)
    done = 0
    for kind, count, dtx in seq:
        phase = b.phase
        if kind == "A":
            if b.pending - count < 0:
                return -1  # arrival-overflow: the run ends at the violation
            b, _ = mb.arrive(V, b, count, dtx)
        else:
            b, _ = mb.complete_tx(V, b, count)
        done += (b.phase - phase) % mb.PHASE_MOD
    return done


def _brute(pending: int, expected: int, tx: int, ops: list, twice: bool) -> bool:
    want = 2 if twice else 1
    for r in range(1, len(ops) + 1):
        for seq in itertools.permutations(ops, r):
            if _completions(pending, expected, tx, seq) >= want:
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2), st.integers(1, 2), st.sampled_from([0, 1024, 2048, 4096]), OPS,
       st.booleans())
def test_may_complete_is_a_necessary_condition(pending: int, expected: int, tx: int,
                                               ops: list, twice: bool) -> None:
    if pending == 0 and tx == 0:
        return  # such a phase has completed already
    if _brute(pending, expected, tx, ops, twice):
        assert may_complete(pending, expected, tx, tuple(ops), twice)


def test_may_complete_says_no_where_the_order_is_forced() -> None:
    # the multicast full barrier: tx 8192 outstanding, one expect_tx arrival per phase.
    # Three 2048 B deliveries and the next round's arrival cannot complete it: the
    # arrival finds no pending arrival (an overflow), the bytes fall short
    ops = (("X", 2048, 0),) * 3 + (("A", 1, 8192),)
    assert not may_complete(0, 1, 8192, ops, False)
    assert may_complete(0, 1, 8192, ops + (("X", 2048, 0),), False)
    # twice: the next round's bytes are needed as well
    ops2 = (("X", 2048, 0),) * 4 + (("A", 1, 8192),) + (("X", 2048, 0),) * 3
    assert not may_complete(0, 1, 8192, ops2, True)
    assert may_complete(0, 1, 8192, ops2 + (("X", 2048, 0),), True)
    # an unknown operation: yes
    assert may_complete(3, 3, 0, (("W", 0, 0),), True)


@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3), st.integers(1, 3), st.sampled_from([0, 1024, 2048, 4096, 8192]),
       st.lists(st.one_of(
           st.tuples(st.just("A"), st.integers(1, 3), st.sampled_from([0, 2048, 8192])),
           st.tuples(st.just("X"), st.sampled_from([1024, 2048]), st.just(0)),
           st.tuples(st.just("W"), st.just(0), st.just(0))), max_size=12),
       st.booleans())
def test_native_may_complete_answers_as_python(pending: int, expected: int, tx: int,
                                               ops: list, twice: bool) -> None:
    from pipeproof.checker.native.porwalk import _library
    from pipeproof.checker.por.tables import KINDS

    ffi, lib = _library()
    flat = [x for k, c, d in ops for x in (0, KINDS.index(k), c, d)] or [0]
    got = lib.pw_may_complete(pending, expected, tx, ffi.new("int64_t[]", flat), len(ops), 4,
                              int(twice))
    assert bool(got) == may_complete(pending, expected, tx, tuple(ops), twice)
    # the memoized entry the settle rounds call: the same answer, asked again too (and
    # the bar id, which the search does not read, is not part of its key)
    other = [x for k, c, d in ops for x in (7, KINDS.index(k), c, d)] or [0]
    for buf in (flat, other):
        assert lib.pw_may_complete_memo(pending, expected, tx, ffi.new("int64_t[]", buf),
                                        len(ops), 4, int(twice)) == got


@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_native_may_complete_memo_survives_being_emptied() -> None:
    """More distinct questions than the memo holds: it empties itself and keeps answering
    as the search does, for the new questions and the old ones."""
    import random

    from pipeproof.checker.native.porwalk import _library

    ffi, lib = _library()
    rng = random.Random(5)
    asked = []
    for i in range(60_000):  # past 3/4 of its 65,536 slots
        ops = [(0, rng.randrange(2), rng.randrange(1, 4), 1024 * rng.randrange(3))
               for _ in range(rng.randrange(1, 5))]
        q = (i % 7, rng.randrange(1, 4), 1024 * rng.randrange(4),
             ffi.new("int64_t[]", [x for o in ops for x in o]), len(ops), 4, i % 2)
        want = lib.pw_may_complete(*q)
        assert lib.pw_may_complete_memo(*q) == want
        if i % 997 == 0:
            asked.append((q, want))
    for q, want in asked:
        assert lib.pw_may_complete_memo(*q) == want


def _multicast(stages: int, k_tiles: int, cm: int, cn: int, mutation: str = "") -> str:
    src = MULTICAST.replace(
        "(stages: int = 2, k_tiles: int = 2, cm: int = 2, cn: int = 2)",
        f"(stages: int = {stages}, k_tiles: int = {k_tiles}, cm: int = {cm}, cn: int = {cn})")
    old, new = MUTATIONS[mutation]
    assert old in src
    return src.replace(old, new)


MUTATIONS = {
    "": ("", ""),
    # the phase waits for bytes that never come: deadlock
    "tx-too-high": ("tx_count=a_bytes + b_bytes,", "tx_count=a_bytes + b_bytes + 1024,"),
    # it completes before the B half lands: the consumer reads early
    "tx-too-low": ("tx_count=a_bytes + b_bytes,", "tx_count=a_bytes + b_bytes // 2,"),
    # the empty barrier waits for a release nobody makes: deadlock
    "count-too-high": ("(cm + cn - 1) * consumer_warps", "(cm + cn) * consumer_warps"),
    # one release too many: the producer overwrites a stage still being read
    "count-too-low": ("(cm + cn - 1) * consumer_warps", "(cm + cn - 2) * consumer_warps"),
    # no release of the stage: the producer's next round never starts
    "no-release": ("            ab.consumer_release(state)\n", ""),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("shape", [(1, 3, 2, 1), (1, 4, 1, 2)], ids=["2x1-s1k3", "1x2-s1k4"])
def test_reduced_multicast_rounds_ahead_match_the_full_graph(shape: tuple,
                                                             mutation: str) -> None:
    src = _multicast(*shape, mutation)
    _compare_por(src, f"multicast {shape} mutation={mutation!r}")
    v = check_explicit(G.build_system(src), max_states=300_000, timeout=NO_DEADLINE, por=True,
                       confirm_timeout=0)
    assert v.status == ("VIOLATED" if mutation else "PROVEN"), (mutation, v.headline())
