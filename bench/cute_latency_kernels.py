"""CuTe DSL twins of the hand-off latency benchmarks (``bench/bench_gpu_async.pipe``,
``bench/bench_gpu_tma.pipe``), for ``bench/bench_cute_latency.py`` (issue 25 item 3).

Written for pipeproof (not taken from CUTLASS examples).  The same shape as the .pipe
kernels: one CTA of 64 threads, warp 0 the producer, warp 1 the consumer, ``stages``
stages, a loop of ``k_tiles`` hand-offs with no data work; ``k_tiles`` is a run-time
kernel argument (a real loop, as pipeproof's structured emission), ``stages`` a
compile-time constant.

* ``async_latency``: ``PipelineAsync`` (cutlass/pipeline/sm90.py), producer and consumer
  groups of 32 threads: every lane of the producer warp acquires and commits, every lane
  of the consumer warp waits and releases.
* ``tma_latency``: ``PipelineTmaAsync`` with ``tile_bytes`` per stage: one elected lane
  of the producer warp acquires (arrive with expect_tx) and issues a 1-D bulk copy
  (``cp.async.bulk``) of ``tile_bytes`` from global memory into the stage; the consumer
  warp waits and releases (its group: one warp).
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineAsync,
    PipelineUserType,
    make_pipeline_state,
)

THREADS = 64


def _async_storage(stages):
    @cute.struct
    class Storage:
        mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]

    return Storage


@cute.kernel
def async_latency_kernel(k_tiles: cutlass.Int32, stages: cutlass.Constexpr):
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_async_storage(stages))
    pipe = PipelineAsync.create(
        barrier_storage=storage.mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )
    if warp == 0:
        st = make_pipeline_state(PipelineUserType.Producer, stages)
        for _k in cutlass.range(k_tiles, unroll=1):
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
            st.advance()
        pipe.producer_tail(st)
    if warp == 1:
        st = make_pipeline_state(PipelineUserType.Consumer, stages)
        for _k in cutlass.range(k_tiles, unroll=1):
            pipe.consumer_wait(st)
            pipe.consumer_release(st)
            st.advance()


@cute.jit
def async_latency_host(k_tiles: cutlass.Int32, stages: cutlass.Constexpr):
    async_latency_kernel(k_tiles, stages).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_async_storage(stages).size_in_bytes())


def async_latency(stages: int = 1):
    return cute.compile(async_latency_host, cutlass.Int32(256), stages)


def smem_bytes(kind: str, stages: int) -> int:
    """The dynamic shared memory the host function's launch asks for."""
    if kind == "async":
        return _async_storage(stages).size_in_bytes()
    raise ValueError(kind)
