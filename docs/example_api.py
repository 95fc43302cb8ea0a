"""The README's Python API example: a Hopper TMA mainloop written with cutlass.pipeline's
names, checked twice -- as written, and with the consumer group sized in threads instead
of warps (a real mistake: PipelineTmaAsync releases once per consumer warp).

    python docs/example_api.py
"""

from pipeproof import (Agent, CooperativeGroup, PipelineTmaAsync, check, cute, launch,
                       pipeline_init_arrive, pipeline_init_wait, read, role, tma_load)

TILE_BYTES = 8192


def load_warp(ab, k_tiles):                       # the kernel's own producer code
    producer, _ = ab.make_participants()
    for k in range(k_tiles):
        handle = producer.acquire_and_advance()
        tma_load(ab, handle, bytes=TILE_BYTES)    # stands for cute.copy(tma_atom, ...)
    producer.tail()


def mma_warps(ab, k_tiles):                       # the kernel's own consumer code
    _, consumer = ab.make_participants()
    for k in range(k_tiles):
        handle = consumer.wait_and_advance()
        read(ab, handle)                          # stands for the wgmma on the stage
        handle.release()


def make_mainloop(consumer_arrivals):
    @cute.kernel
    def mainloop(stages: int = 2, k_tiles: int = 4):
        launch(block=160, cluster=(1, 1, 1))
        ab = PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=CooperativeGroup(Agent.Thread, 1),
            consumer_group=CooperativeGroup(Agent.Thread, consumer_arrivals),
            tx_count=TILE_BYTES,
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
            defer_sync=True,
        )
        pipeline_init_arrive()
        pipeline_init_wait()
        with role("dma", warps=[0]):
            load_warp(ab, k_tiles)
        with role("mma", warps=[1, 2, 3, 4]):
            mma_warps(ab, k_tiles)

    return mainloop


if __name__ == "__main__":
    good = check(make_mainloop(4), {"stages": 2, "k_tiles": 4})     # one arrive per warp
    print(good.verdict.headline())
    bad = check(make_mainloop(128), {"stages": 2, "k_tiles": 4})    # sized in threads
    print(bad.render_text(explain=True, fmt="timeline", width=100))
