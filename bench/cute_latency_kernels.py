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
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineAsync,
    PipelineTmaAsync,
    PipelineUserType,
    make_pipeline_state,
    pipeline_init_arrive,
    pipeline_init_wait,
)

THREADS = 64
#: bytes of one stage of the TMA twin (bench_gpu.py's latency jobs: 1 KB)
TILE_BYTES = 1024


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


def _tma_storage(stages, tile_bytes):
    @cute.struct
    class Storage:
        mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, tile_bytes // 4 * stages],
                               128]

    return Storage


@cute.kernel
def tma_latency_kernel(k_tiles: cutlass.Int32, mSrc: cute.Tensor, atom: cute.CopyAtom,
                       stages: cutlass.Constexpr, tile_bytes: cutlass.Constexpr):
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    words = tile_bytes // 4
    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_tma_storage(stages, tile_bytes))
    sbuf = storage.buf.get_tensor(cute.make_layout((words, stages)))
    ab = PipelineTmaAsync.create(
        barrier_storage=storage.mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        tx_count=tile_bytes,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        defer_sync=True,
    )
    pipeline_init_arrive()
    pipeline_init_wait()
    if warp == 0:
        st = make_pipeline_state(PipelineUserType.Producer, stages)
        for _k in cutlass.range(k_tiles, unroll=1):
            ab.producer_acquire(st)
            # a bulk copy is issued by one thread (no election by the compiler)
            with cute.arch.elect_one():
                cute.copy(atom, mSrc, sbuf[None, st.index],
                          mbar_ptr=ab.producer_get_barrier(st))
            ab.producer_commit(st)
            st.advance()
        ab.producer_tail(st)
    if warp == 1:
        st = make_pipeline_state(PipelineUserType.Consumer, stages)
        for _k in cutlass.range(k_tiles, unroll=1):
            ab.consumer_wait(st)
            ab.consumer_release(st)
            st.advance()


@cute.jit
def tma_latency_host(k_tiles: cutlass.Int32, mSrc: cute.Tensor, stages: cutlass.Constexpr,
                     tile_bytes: cutlass.Constexpr):
    atom = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Int32,
                               num_bits_per_copy=tile_bytes * 8)
    tma_latency_kernel(k_tiles, mSrc, atom, stages, tile_bytes).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1),
        smem=_tma_storage(stages, tile_bytes).size_in_bytes())


def tma_latency(stages: int = 1, tile_bytes: int = TILE_BYTES):
    src = make_fake_compact_tensor(cutlass.Int32, (tile_bytes // 4,), assumed_align=16)
    return cute.compile(tma_latency_host, cutlass.Int32(256), src, stages, tile_bytes)


def smem_bytes(kind: str, stages: int) -> int:
    """The dynamic shared memory the host function's launch asks for."""
    if kind == "async":
        return _async_storage(stages).size_in_bytes()
    if kind == "tma":
        return _tma_storage(stages, TILE_BYTES).size_in_bytes()
    raise ValueError(kind)
