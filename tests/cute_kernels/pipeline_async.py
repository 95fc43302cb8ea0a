"""PipelineAsync: one producer warp writes each stage with ordinary smem stores, one
consumer warp reads it.  Every thread of each warp arrives (groups of 32 threads).

Twin: examples/textbook/pipeline_async.pipe
Config: block=64 (warp 0 producer, warp 1 consumer), cluster 1x1x1, stages=2, k_tiles=4.
pipeline_async.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. consumer_group is CooperativeGroup(Agent.Thread, 64) but one warp (32 threads)
     releases: the empty barrier never completes its phase, the producer blocks in
     producer_acquire at k = stages.
     Twin pipeline_async_bug1.pipe: VIOLATED deadlock
  2. the consumer skips consumer_release on its last iteration: the producer blocks
     in producer_tail waiting for that stage to be empty.
     Twin pipeline_async_bug2.pipe: VIOLATED deadlock
  3. the producer stores into the stage *before* producer_acquire: at k >= stages it
     overwrites a stage the consumer may still be reading (a write/read race on the
     stage; the shortest counterexample has the consumer read while the write is in
     flight).
     Twin pipeline_async_bug3.pipe: VIOLATED read-before-full
"""
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
import cutlass.utils
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineAsync,
    PipelineUserType,
    make_pipeline_state,
)

ARCH = "sm_90a"
BUGS = (1, 2, 3)

THREADS = 64
ELEMS = 32  # one Float32 per producer lane per stage


def _storage(stages):
    @cute.struct
    class SharedStorage:
        pipe_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, ELEMS * stages], 128]
        out: cute.struct.MemRange[cutlass.Float32, ELEMS]

    return SharedStorage


@cute.kernel
def pipeline_async_kernel(
    mOut: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    lane = tidx % 32
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sbuf = storage.buf.get_tensor(cute.make_layout((ELEMS, stages)))
    sout = storage.out.get_tensor(cute.make_layout(ELEMS))

    consumer_threads = 32
    if cutlass.const_expr(bug == 1):
        consumer_threads = 64
    pipe = PipelineAsync.create(
        barrier_storage=storage.pipe_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_threads),
    )

    if warp_idx == 0:  # producer
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            if cutlass.const_expr(bug == 3):
                sbuf[lane, state.index] = cutlass.Float32(k)
            pipe.producer_acquire(state)
            if cutlass.const_expr(bug != 3):
                sbuf[lane, state.index] = cutlass.Float32(k)
            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)

    if warp_idx == 1:  # consumer
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            pipe.consumer_wait(state)
            acc += sbuf[lane, state.index]
            if cutlass.const_expr(bug == 2):
                if k < k_tiles - 1:
                    pipe.consumer_release(state)
            else:
                pipe.consumer_release(state)
            state.advance()
        sout[lane] = acc
        mOut[lane] = acc  # global memory: the exported kernel's checkable output


@cute.jit
def pipeline_async_host(mOut: cute.Tensor, stages: cutlass.Constexpr,
                        k_tiles: cutlass.Constexpr, bug: cutlass.Constexpr):
    pipeline_async_kernel(mOut, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_async(stages: int = 2, k_tiles: int = 4, bug: int = 0):
    mOut = make_fake_compact_tensor(cutlass.Float32, (ELEMS,), assumed_align=16)
    return cute.compile(pipeline_async_host, mOut, stages, k_tiles, bug)
