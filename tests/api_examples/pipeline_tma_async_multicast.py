"""examples/textbook/pipeline_tma_async_multicast.pipe with the Python API: the
multicast masks come from the cluster layout exactly as in a Hopper GEMM
(cpasync.create_tma_multicast_mask)."""

from pipeproof import (Agent, CooperativeGroup, PipelineTmaAsync, PipelineUserType, cpasync,
                       cute, launch, make_pipeline_state, pipeline_init_arrive,
                       pipeline_init_wait, read, role, tma_load)

PIPE = "textbook/pipeline_tma_async_multicast.pipe"


def load_ab(ab, state, a_bytes, b_bytes, cm, cn, a_mask, b_mask):
    ab.producer_acquire(state)
    tma_load(ab, state, bytes=a_bytes // cn, mcast_mask=a_mask)
    tma_load(ab, state, bytes=b_bytes // cm, mcast_mask=b_mask)
    state.advance()


@cute.kernel
def pipeline_tma_async_multicast(stages: int = 2, k_tiles: int = 2, cm: int = 2,
                                 cn: int = 2):
    launch(block=64, cluster=(cm, cn, 1))
    a_bytes = 4096
    b_bytes = 4096
    consumer_warps = 1

    cta_layout = cute.make_layout((1, cm, cn, 1))
    ab = PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, (cm + cn - 1) * consumer_warps),
        tx_count=a_bytes + b_bytes,
        cta_layout_vmnk=cta_layout,
        defer_sync=True,
    )
    pipeline_init_arrive(cluster_shape_mn=(cm, cn))
    pipeline_init_wait(cluster_shape_mn=(cm, cn))

    rank = cute.arch.block_idx_in_cluster()
    coord = cta_layout.get_flat_coord(rank)
    a_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=2)
    b_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=1)

    with role("dma", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            load_ab(ab, state, a_bytes, b_bytes, cm, cn, a_mask, b_mask)
        ab.producer_tail(state)

    with role("mma", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for k in range(k_tiles):
            ab.consumer_wait(state)
            read(ab, state)
            ab.consumer_release(state)
            state.advance()


KERNEL = pipeline_tma_async_multicast
