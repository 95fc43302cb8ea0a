"""PipelineCpAsync (Ampere-style cp.async mainloop): every lane of producer warp 0
copies 16 bytes of the stage from global memory with cp.async (a tiled copy of
CopyG2SOp atoms), and producer_commit is cp.async.mbarrier.arrive.noinc by each of the
32 lanes, deferred until that lane's copies land; consumer warp 1 reads the stage with
ordinary smem loads and releases it (all 32 lanes arrive).

Twin: examples/textbook/pipeline_cp_async.pipe
Config: block=64 (warp 0 copies, warp 1 computes), cluster 1x1x1, stages=2,
k_tiles=3, producer and consumer groups of 32 threads, barrier init synced inside
create (defer_sync=False).
pipeline_cp_async.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. the producer commits with a plain ``cute.arch.mbarrier_arrive`` on the full
     barrier instead of producer_commit (cp.async.mbarrier.arrive.noinc): the phase
     completes while the copies are still in flight.
     Twin pipeline_cp_async_bug1.pipe: VIOLATED read-before-full
  2. the consumer reads the stage before consumer_wait.
     Twin pipeline_cp_async_bug2.pipe: VIOLATED read-before-full
  3. producer_group is CooperativeGroup(Agent.Thread, 1) while 32 lanes commit.
     Twin pipeline_cp_async_bug3.pipe: VIOLATED arrival-overflow
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineCpAsync,
    PipelineUserType,
    make_pipeline_state,
)

ARCH = "sm_90a"
BUGS = (1, 2, 3)

THREADS = 64
VEC = 4  # Float32 per lane per stage: one 16-byte cp.async
TILE = 32 * VEC


def _storage(stages):
    @cute.struct
    class SharedStorage:
        pipe_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE * stages], 128]
        out: cute.struct.MemRange[cutlass.Float32, 32]

    return SharedStorage


@cute.kernel
def pipeline_cp_async_kernel(
    mA: cute.Tensor,
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
    sA = storage.buf.get_tensor(cute.make_layout((TILE, stages)))
    sout = storage.out.get_tensor(cute.make_layout(32))

    producer_threads = 32
    if cutlass.const_expr(bug == 3):
        producer_threads = 1
    pipe = PipelineCpAsync.create(
        barrier_storage=storage.pipe_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, producer_threads),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )

    if warp_idx == 0:  # cp.async producer
        atom = cute.make_copy_atom(
            cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32 * VEC
        )
        tiled_copy = cute.make_tiled_copy_tv(
            atom, cute.make_layout(32), cute.make_layout(VEC)
        )
        thr_copy = tiled_copy.get_slice(lane)
        tAgA = thr_copy.partition_S(mA)  # (CPY, 1, k_tiles)
        tAsA = thr_copy.partition_D(sA)  # (CPY, 1, stages)
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            pipe.producer_acquire(state)
            cute.copy(tiled_copy, tAgA[None, None, k], tAsA[None, None, state.index])
            if cutlass.const_expr(bug == 1):
                cute.arch.mbarrier_arrive(pipe.producer_get_barrier(state))
            else:
                pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)

    if warp_idx == 1:  # consumer
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            if cutlass.const_expr(bug == 2):
                acc += sA[lane * VEC, state.index]
                pipe.consumer_wait(state)
            else:
                pipe.consumer_wait(state)
                acc += sA[lane * VEC, state.index]
            pipe.consumer_release(state)
            state.advance()
        sout[lane] = acc


@cute.jit
def pipeline_cp_async_host(
    mA: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    pipeline_cp_async_kernel(mA, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_cp_async(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    mA = make_fake_compact_tensor(cutlass.Float32, (TILE, k_tiles), assumed_align=16)
    return cute.compile(pipeline_cp_async_host, mA, stages, k_tiles, bug)
