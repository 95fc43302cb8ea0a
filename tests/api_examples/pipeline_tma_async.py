"""examples/textbook/pipeline_tma_async.pipe with the Python API, in the style of a
CuTe DSL mainloop: PipelineProducer/PipelineConsumer from make_participants(), handles
from acquire_and_advance()/wait_and_advance()."""

import pipeproof as pp
from pipeproof import cute

PIPE = "textbook/pipeline_tma_async.pipe"


def dma_warp(ab, k_tiles, tile_bytes):
    producer, _ = ab.make_participants()
    for k in range(k_tiles):
        handle = producer.acquire_and_advance()
        pp.tma_load(ab, handle, bytes=tile_bytes)
    producer.tail()


def mma_warps(ab, k_tiles):
    _, consumer = ab.make_participants()
    for k in range(k_tiles):
        handle = consumer.wait_and_advance()
        pp.read(ab, handle)
        handle.release()


@cute.kernel
def pipeline_tma_async(stages: int = 2, k_tiles: int = 3):
    pp.launch(block=160, cluster=(1, 1, 1))
    tile_bytes = 8192

    ab = pp.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=pp.CooperativeGroup(pp.Agent.Thread, 1),
        consumer_group=pp.CooperativeGroup(pp.Agent.Thread, 4),
        tx_count=tile_bytes,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        defer_sync=True,
    )
    pp.pipeline_init_arrive()
    pp.pipeline_init_wait()

    with pp.role("dma", warps=[0]):
        dma_warp(ab, k_tiles, tile_bytes)

    with pp.role("mma", warps=[1, 2, 3, 4]):
        mma_warps(ab, k_tiles)


KERNEL = pipeline_tma_async
