"""Pipeline roles (``model/roles.py``, property ``role-misuse``).

CUTLASS fixes each thread's role on a pipeline when it is built (``Params::role``, a
``ThreadCategory``) and traps in debug builds when a producer calls a consumer-side
method or the other way round (``pipeline_check_is_producer`` /
``pipeline_check_is_consumer``, include/cutlass/pipeline/sm90_pipeline.hpp).  The model
infers the role from the warp's first role-checked call on the pipeline; a
``PipelineUserType.ProducerConsumer`` state declares a warp that may use both sides (the
CLC scheduler).  Bug P10 (NVIDIA/cutlass issue 2126) is the example.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from helpers import check, NO_DEADLINE
from pipeproof.api import check_file, compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.concrete import ConcreteRunner
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.compile import compile_kernel
from pipeproof.model.lang.parser import parse
from pipeproof.model.program import Fail
from pipeproof.model.roles import CONSUMER, PRODUCER, method_side
from pipeproof.model.system import System

EX = Path(__file__).resolve().parent.parent / "examples"
P10_QUICK = {"consumer_warp_groups": 1}


def src(body: str) -> str:
    return textwrap.dedent(body).lstrip("\n")


def role_fails(ck: Any) -> list[tuple[str, Fail]]:
    """Role-misuse failures of the compiled programs, without the guards of a bounded
    grid's static "no more work" CLC reads (tests/test_clc_grid.py), which every
    warp that reads CLC responses carries."""
    return [(p.name, i) for p in ck.programs for i in p.code
            if isinstance(i, Fail) and i.prop == "role-misuse"
            and not i.guard]


def assert_proven(r: Any) -> None:
    assert r.status in ("SAFE", "PROVEN"), (r.status, r.prop, r.verdict.reason)


def assert_role_misuse(r: Any) -> str:
    assert r.status == "VIOLATED" and r.prop == "role-misuse", (r.status, r.prop,
                                                                r.verdict.reason)
    return r.verdict.trace.detail


# --------------------------------------------------------------------------- classification


def test_method_sides_follow_cutlass() -> None:
    for m in ("producer_acquire", "producer_try_acquire", "producer_commit", "producer_tail",
              "producer_acquire_w_index_phase", "producer_commit_w_index"):
        assert method_side(m) == PRODUCER, m
    for m in ("consumer_wait", "consumer_try_wait", "consumer_test_wait", "consumer_release",
              "consumer_wait_w_index_phase", "consumer_release_w_index"):
        assert method_side(m) == CONSUMER, m
    # barrier accessors and constructors of participants are not role-checked
    for m in ("producer_get_barrier", "consumer_get_barrier", "make_participants",
              "make_producer", "make_consumer", "wait", "arrive"):
        assert method_side(m) is None, m


# --------------------------------------------------------------------------- P10


def test_p10_is_reported_where_the_producer_calls_consumer_wait() -> None:
    path = EX / "bugs/p10-bug.pipe"
    lines = path.read_text().splitlines()
    wait_line = 1 + next(i for i, t in enumerate(lines) if "mainloop.consumer_wait(state)" in t
                         and "misuse" in lines[i - 1])
    acquire_line = 1 + next(i for i, t in enumerate(lines)
                            if "mainloop.producer_acquire(state)" in t)
    r = check_file(path, P10_QUICK, engine="explicit")
    detail = assert_role_misuse(r)
    last = r.verdict.trace.events[-1]
    assert last.actor == "cta0.w0" and last.role == "producer" and last.violation
    assert f"p10-bug.pipe:{wait_line}:" in last.loc, (last.loc, wait_line)
    for words in ("calls consumer_wait on pipeline 'mainloop'", "which it produces into",
                  f"producer_acquire at line {acquire_line}", "pipeline_check_is_consumer"):
        assert words in detail, detail
    # the warp did produce before it misused the pipeline: the trace shows it getting there
    ops = [e.what for e in r.verdict.trace.events if e.actor == "cta0.w0"]
    assert any("producer_acquire" in w for w in ops)


def test_p10_fixed_has_no_role_failure() -> None:
    assert role_fails(compile_file(EX / "bugs/p10-bug.pipe", P10_QUICK))
    assert not role_fails(compile_file(EX / "bugs/p10-fixed.pipe", P10_QUICK))


def test_p10_bmc_and_explicit_agree() -> None:
    """BMC sees the same violation at the same step as the explicit engine.  The full
    skeleton's counterexample (22 steps, 8 warps) is beyond a small BMC budget, so the
    symbolic transition relation is evaluated at the state before the violating step, and
    a miniature of the same bug (one producer warp, one consumer warp) is checked end to
    end by both engines."""
    import z3

    from pipeproof.checker.symbolic import Encoding, sample_ranges

    system = System(compile_file(EX / "bugs/p10-bug.pipe", P10_QUICK))
    runner = ConcreteRunner(system)
    flat, bad = runner.initial, None
    for _ in range(200):  # first-enabled schedule until a successor violates
        succ = list(runner.successors(flat))
        bad = next(((st, v) for st, _n, v in succ if v is not None), None)
        if bad is not None:
            break
        flat = succ[0][1]
    assert bad is not None and bad[1][0] == "role-misuse"
    step = bad[0]
    enc = Encoding(system, sample=sample_ranges(system, max_states=50))
    vals, long = enc.encode_concrete(flat)
    assert not long
    pairs = [(x, z3.BitVecVal(v, w)) for x, v, w in zip(enc.X, vals, enc.width)]

    def ev(t: Any) -> bool:
        return z3.is_true(z3.simplify(z3.substitute(t, *pairs)))

    hits = [t for t in enc.transitions if t.step == step and ev(t.guard)]
    assert len(hits) == 1
    assert next(p for c, p in hits[0].checks if ev(c)) == "role-misuse"

    mini = System(compile_kernel(parse(MINI_P10, "<mini-p10>"), {}))
    e = check_explicit(mini, reduce=False, timeout=NO_DEADLINE)
    b = check_bmc(mini, depth=20, timeout=NO_DEADLINE)
    assert (e.status, e.prop) == (b.status, b.prop) == ("VIOLATED", "role-misuse")
    assert len(b.trace) == len(e.trace)


MINI_P10 = src("""
    @cute.kernel
    def mini_p10(groups: int = 2):
        launch(block=64, cluster=(1, 1, 1))
        p = PipelineTmaAsync.create(
            num_stages=1,
            producer_group=CooperativeGroup(Agent.Thread, 1),
            consumer_group=CooperativeGroup(Agent.Thread, 1),
            tx_count=128,
        )
        with role("producer", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, 1)
            for g in range(groups):
                if g > 0:
                    p.consumer_wait(state)
                p.producer_acquire(state)
                tma_load(p, state, bytes=128)
                state.advance()
            p.producer_tail(state)
        with role("consumer", warps=[1]):
            state = make_pipeline_state(PipelineUserType.Consumer, 1)
            for g in range(groups):
                p.consumer_wait(state)
                read(p, state)
                p.consumer_release(state)
                state.advance()
""")


def test_mini_p10_is_fine_with_one_group() -> None:
    """The misused call is never reached with one group: no violation (and no Fail
    is on the path), the same kernel with two groups is role-misuse."""
    assert_proven(check(MINI_P10, {"groups": 1}))
    assert_role_misuse(check(MINI_P10, {"groups": 2}))


# --------------------------------------------------------------------------- other shapes


ONE_WARP = src("""
    @cute.kernel
    def one_warp(k_tiles: int = 3):
        launch(block=32, cluster=(1, 1, 1))
        p = PipelineAsync.create(
            num_stages=2,
            producer_group=CooperativeGroup(Agent.Thread, 32),
            consumer_group=CooperativeGroup(Agent.Thread, 32),
        )
        with role("both", warps=[0]):
            pstate = make_pipeline_state(PipelineUserType.USER, 2)
            cstate = make_pipeline_state(PipelineUserType.Consumer, 2)
            for k in range(k_tiles):
                p.producer_acquire(pstate)
                write(p, pstate)
                p.producer_commit(pstate)
                pstate.advance()
                p.consumer_wait(cstate)
                read(p, cstate)
                p.consumer_release(cstate)
                cstate.advance()
            p.producer_tail(pstate)
""")


def test_a_declared_producer_consumer_warp_may_use_both_sides() -> None:
    """One warp that produces and consumes (CUTLASS's ThreadCategory::ProducerConsumer,
    e.g. the CLC scheduler) is legitimate when its state says so."""
    assert_proven(check(ONE_WARP.replace("USER", "ProducerConsumer")))
    detail = assert_role_misuse(check(ONE_WARP.replace("USER", "Producer")))
    assert "calls consumer_wait on pipeline 'p', which it produces into" in detail


def test_a_consumer_calling_a_producer_method() -> None:
    s = src("""
        @cute.kernel
        def consumer_commits(k_tiles: int = 2):
            launch(block=64, cluster=(1, 1, 1))
            p = PipelineAsync.create(
                num_stages=2,
                producer_group=CooperativeGroup(Agent.Thread, 32),
                consumer_group=CooperativeGroup(Agent.Thread, 32),
            )
            with role("producer", warps=[0]):
                producer, _ = p.make_participants()
                for k in range(k_tiles):
                    handle = producer.acquire_and_advance()
                    write(p, handle)
                    handle.commit()
                producer.tail()
            with role("consumer", warps=[1]):
                _, consumer = p.make_participants()
                for k in range(k_tiles):
                    handle = consumer.wait_and_advance()
                    read(p, handle)
                    handle.release()
                p.producer_commit(consumer.state)
    """)
    r = check(s)
    detail = assert_role_misuse(r)
    assert r.verdict.trace.events[-1].actor == "cta0.w1"
    assert "calls producer_commit on pipeline 'p', which it consumes from" in detail
    assert "consumer_wait at line" in detail and "pipeline_check_is_producer" in detail


def test_participants_are_classified_by_the_method_they_lower_to() -> None:
    """``make_participants`` hands every warp both participants (CuTe DSL); only their
    use counts, and the failure names the user's call."""
    s = src("""
        @cute.kernel
        def both_participants(k_tiles: int = 2):
            launch(block=32, cluster=(1, 1, 1))
            p = PipelineAsync.create(
                num_stages=2,
                producer_group=CooperativeGroup(Agent.Thread, 32),
                consumer_group=CooperativeGroup(Agent.Thread, 32),
            )
            producer, consumer = p.make_participants()
            for k in range(k_tiles):
                handle = producer.acquire_and_advance()
                write(p, handle)
                handle.commit()
                handle = consumer.wait_and_advance()
                read(p, handle)
                handle.release()
            producer.tail()
    """)
    detail = assert_role_misuse(check(s))
    assert "calls consumer_wait (through consumer.wait_and_advance()) on pipeline 'p'" \
        in detail


def test_legitimate_cross_side_uses_have_no_role_failure() -> None:
    """Raw barrier accessors (p5, p9: a producer waits on the empty barrier it gets
    with consumer_get_barrier), the CLC scheduler (ProducerConsumer), PipelineOrder and
    the producer-only TMA store pipeline: no warp of a bundled example other than P10's
    producer is a role misuse."""
    for f in sorted(EX.rglob("*.pipe")):
        fails = role_fails(compile_file(f))
        if f.name == "p10-bug.pipe":
            assert [n for n, _ in fails] == ["cta0.w0"]
        else:
            assert not fails, (f.name, fails)


def test_a_wrong_side_call_that_lowers_to_nothing_is_still_reported() -> None:
    """``PipelineTmaAsync.producer_commit`` is a no-op (the TMA completes the bytes), but
    CUTLASS still checks the caller's role; the ghost read after it stays a step of its
    own, so the violation is role-misuse and not whatever the read would find."""
    s = src("""
        @cute.kernel
        def consumer_commits_tma(k_tiles: int = 1):
            launch(block=64, cluster=(1, 1, 1))
            p = PipelineTmaAsync.create(
                num_stages=1,
                producer_group=CooperativeGroup(Agent.Thread, 1),
                consumer_group=CooperativeGroup(Agent.Thread, 1),
                tx_count=128,
            )
            with role("producer", warps=[0]):
                state = make_pipeline_state(PipelineUserType.Producer, 1)
                for k in range(k_tiles):
                    p.producer_acquire(state)
                    tma_load(p, state, bytes=128)
                    state.advance()
                p.producer_tail(state)
            with role("consumer", warps=[1]):
                state = make_pipeline_state(PipelineUserType.Consumer, 1)
                for k in range(k_tiles):
                    p.consumer_wait(state)
                    p.producer_commit(state)
                    read(p, state)
                    p.consumer_release(state)
                    state.advance()
    """)
    detail = assert_role_misuse(check(s))
    assert "calls producer_commit on pipeline 'p', which it consumes from" in detail
    ck = compile_kernel(parse(s, "<t>"), {})
    [(name, fail)] = role_fails(ck)
    assert name == "cta0.w1" and not fail.post
