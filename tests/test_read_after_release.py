"""A stage touched after its release races the other side's next use of it.

``model/compile.py`` ``Compiler.attach`` runs a ghost effect atomically with the warp's
previous instruction when nothing can come in between -- but never with a release:
after a consumer_release the producer may already be writing the stage, so a read
placed after the release is a step of its own (it used to be merged into the release
and the race was PROVEN safe; found by checking the lifted CuTe DSL kernel
tests/cute_kernels/pipeline_tma_async_participants.py, bug 3)."""

from __future__ import annotations

import pytest

from pipeproof.api import check_source
from helpers import NO_DEADLINE

KERNEL = """
@cute.kernel
def k(stages: int = 2, k_tiles: int = 4):
    launch(block=64, cluster=(1, 1, 1))
    pipe = PipelineAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for i in range(k_tiles):
            pipe.producer_acquire(state)
{producer}
            state.advance()
        pipe.producer_tail(state)
    with role("consumer", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for i in range(k_tiles):
            pipe.consumer_wait(state)
{consumer}
            state.advance()
"""
WRITE_COMMIT = "            write(pipe, state)\n            pipe.producer_commit(state)"
COMMIT_WRITE = "            pipe.producer_commit(state)\n            write(pipe, state)"
READ_RELEASE = "            read(pipe, state)\n            pipe.consumer_release(state)"
RELEASE_READ = "            pipe.consumer_release(state)\n            read(pipe, state)"


@pytest.mark.parametrize("engine", ["explicit", "bmc"])
@pytest.mark.parametrize("producer, consumer, expect", [
    (WRITE_COMMIT, READ_RELEASE, None),
    (WRITE_COMMIT, RELEASE_READ, "read-before-full"),
    (COMMIT_WRITE, READ_RELEASE, "read-before-full"),
])
def test_access_after_release(engine, producer, consumer, expect):
    r = check_source(KERNEL.format(producer=producer, consumer=consumer),
                     engine=engine, jobs=1, timeout=NO_DEADLINE, depth=80)
    if expect is None:
        assert r.status == "PROVEN", r.verdict.headline()
    else:
        assert r.status == "VIOLATED" and r.prop == expect, r.verdict.headline()
