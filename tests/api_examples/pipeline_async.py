"""examples/textbook/pipeline_async.pipe written with the Python API: the producer and
consumer roles are Python functions, called from the kernel (they are inlined)."""

from pipeproof import (Agent, CooperativeGroup, PipelineAsync, PipelineUserType, cute,
                       launch, make_pipeline_state, read, role, write)

PIPE = "textbook/pipeline_async.pipe"


def producer_role(pipe, stages, k_tiles):
    state = make_pipeline_state(PipelineUserType.Producer, stages)
    for k in range(k_tiles):
        pipe.producer_acquire(state)
        write(pipe, state)
        pipe.producer_commit(state)
        state.advance()
    pipe.producer_tail(state)


def consumer_role(pipe, stages, k_tiles):
    state = make_pipeline_state(PipelineUserType.Consumer, stages)
    for k in range(k_tiles):
        pipe.consumer_wait(state)
        read(pipe, state)
        pipe.consumer_release(state)
        state.advance()


@cute.kernel
def pipeline_async(stages: int = 2, k_tiles: int = 4):
    launch(block=64, cluster=(1, 1, 1))

    pipe = PipelineAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )

    with role("producer", warps=[0]):
        producer_role(pipe, stages, k_tiles)

    with role("consumer", warps=[1]):
        consumer_role(pipe, stages, k_tiles)


KERNEL = pipeline_async
