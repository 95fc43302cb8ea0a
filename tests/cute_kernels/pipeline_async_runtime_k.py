"""PipelineAsync with a run-time trip count: ``k_tiles`` is a kernel argument
(``cutlass.Int32``), not a ``Constexpr``, so the compiled loop's bound is an SSA value
the IR keeps.  Otherwise the kernel of ``pipeline_async.py``: one producer warp writes
each stage with ordinary smem stores, one consumer warp reads it.

Twin: examples/textbook/pipeline_async.pipe (with ``--param k_tiles=...``)
Config: block=64 (warp 0 producer, warp 1 consumer), cluster 1x1x1, stages=2, k_tiles=4.
pipeline_async.pipe verdict: PROVEN (unbounded) for every k_tiles

``pipeproof check pipeline_async_runtime_k.py --param k_tiles=1..16`` lifts the module
once and keeps ``k_tiles`` symbolic (docs/cute-frontend.md, run-time trip counts).

Planted bugs (``bug=N``):
  1. the consumer skips consumer_release at k == 3: with k_tiles <= 3 nothing is
     wrong; with k_tiles >= 4 the producer blocks in producer_tail (k_tiles = 4, 5)
     or producer_acquire (k_tiles >= 6) on the stage that is never released.
     Twin pipeline_async_runtime_k_bug1.pipe: PROVEN for k_tiles 1..3, VIOLATED
     deadlock for k_tiles >= 4
  2. the consumer skips consumer_release on its last iteration (``k < k_tiles - 1``: a
     condition on the run-time argument, evaluated per value): the producer blocks in
     producer_tail, for every k_tiles.
     Twin pipeline_async_runtime_k_bug2.pipe: VIOLATED deadlock
  3. the producer stores into the stage *before* producer_acquire: a race once
     k_tiles > stages.
     Twin pipeline_async_runtime_k_bug3.pipe: VIOLATED read-before-full
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
def pipeline_async_runtime_k_kernel(
    mOut: cute.Tensor,
    k_tiles: cutlass.Int32,
    stages: cutlass.Constexpr,
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

    pipe = PipelineAsync.create(
        barrier_storage=storage.pipe_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
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
            if cutlass.const_expr(bug == 1):
                if k != 3:
                    pipe.consumer_release(state)
            elif cutlass.const_expr(bug == 2):
                if k < k_tiles - 1:
                    pipe.consumer_release(state)
            else:
                pipe.consumer_release(state)
            state.advance()
        sout[lane] = acc
        mOut[lane] = acc  # global memory: the exported kernel's checkable output


@cute.jit
def pipeline_async_runtime_k_host(mOut: cute.Tensor, k_tiles: cutlass.Int32,
                                  stages: cutlass.Constexpr, bug: cutlass.Constexpr):
    pipeline_async_runtime_k_kernel(mOut, k_tiles, stages, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_async_runtime_k(stages: int = 2, k_tiles: int = 4, bug: int = 0):
    mOut = make_fake_compact_tensor(cutlass.Float32, (ELEMS,), assumed_align=16)
    return cute.compile(pipeline_async_runtime_k_host, mOut, cutlass.Int32(k_tiles),
                        stages, bug)
