"""examples/bugs/p1-bug.pipe (NVIDIA/cutlass issue 2404) with the Python API: the
producer group is sized in threads (32) although only one elected lane arrives on the
full barrier with TMA -- the consumers wait for ever."""

from pipeproof import (Agent, CooperativeGroup, PipelineTmaAsync, PipelineUserType, cute,
                       launch, make_pipeline_state, read, role, tma_load)

PIPE = "bugs/p1-bug.pipe"


def producer_loop(ab, stages, k_tiles, tile_bytes):
    state = make_pipeline_state(PipelineUserType.Producer, stages)
    for k in range(k_tiles):
        ab.producer_acquire(state)
        tma_load(ab, state, bytes=tile_bytes)
        ab.producer_commit(state)
        state.advance()


def consumer_loop(ab, stages, k_tiles):
    state = make_pipeline_state(PipelineUserType.Consumer, stages)
    for k in range(k_tiles):
        ab.consumer_wait(state)
        read(ab, state)
        ab.consumer_release(state)
        state.advance()


@cute.kernel
def p1_toy_tma_pipeline(stages: int = 2, k_tiles: int = 2):
    launch(block=160, cluster=(1, 1, 1))
    consumer_warps = [0, 1, 2, 3]
    producer_warp = 4
    tile_bytes = 8192

    ab = PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 128),
        tx_count=tile_bytes,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
    )

    with role("producer", warps=[producer_warp]):
        producer_loop(ab, stages, k_tiles, tile_bytes)

    with role("consumer", warps=consumer_warps):
        consumer_loop(ab, stages, k_tiles)


KERNEL = p1_toy_tma_pipeline
