"""examples/textbook/pipeline_tma_umma.pipe with the Python API: a 2-CTA Blackwell
mainloop; the MMA role branches on ``ab.is_leader_cta`` like the CuTe DSL kernel does
(recorded as an ``if`` and decided per CTA by the model)."""

from pipeproof import (Agent, CooperativeGroup, PipelineTmaUmma, cute, launch,
                       pipeline_init_arrive, pipeline_init_wait, role, tcgen05_mma,
                       tma_load)

PIPE = "textbook/pipeline_tma_umma.pipe"


@cute.kernel
def pipeline_tma_umma(stages: int = 2, k_tiles: int = 2):
    launch(block=64, cluster=(2, 1, 1))
    half_bytes = 4096
    cta_layout = cute.tiled_divide(cute.make_layout((2, 1, 1)), (2,))

    ab = PipelineTmaUmma.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        tx_count=half_bytes * 2,
        cta_layout_vmnk=cta_layout,
        defer_sync=True,
    )
    pipeline_init_arrive(cluster_shape_mn=(2, 1))
    pipeline_init_wait(cluster_shape_mn=(2, 1))

    with role("tma", warps=[0]):
        producer, _ = ab.make_participants()
        for k in range(k_tiles):
            handle = producer.acquire_and_advance()
            tma_load(ab, handle, bytes=half_bytes)
        producer.tail()

    with role("mma", warps=[1]):
        if ab.is_leader_cta:
            _, consumer = ab.make_participants()
            for k in range(k_tiles):
                handle = consumer.wait_and_advance()
                tcgen05_mma(ab, handle)
                handle.release()


KERNEL = pipeline_tma_umma
