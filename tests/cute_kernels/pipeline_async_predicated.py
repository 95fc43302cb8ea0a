"""PipelineAsync behind the usual coordinate predication: the consumers are the threads
whose row of the output tile is inside the problem (``if row < M``), where ``row`` is
read from an identity tensor (``cute.make_identity_tensor``) that a tiled copy
partitioned per thread -- the pattern of quack-kernels' RMSNorm.  The lifter evaluates
the coordinate lane by lane (``frontend/cute/coords.py``): with the tiled copy's
thread-value layout ``((8,8),4):((32,1),8)`` consumer thread ``t`` owns row ``t // 8``,
so with M = 4 rows warp 1 (rows 0-3) consumes and warp 2 (rows 4-7) does not.

Twin: tests/cute_kernels/pipeline_async_predicated.pipe
Config: block=96 (warp 0 producer, warps 1-2 consumer candidates), cluster 1x1x1,
stages=2, k_tiles=4, M=4 rows of an 8x32 tile.
pipeline_async_predicated.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. consumer_group counts both candidate warps (CooperativeGroup(Agent.Thread, 64)),
     but the predicate lets only warp 1 through: the empty barrier never completes
     its phase and the producer blocks in producer_acquire at k = stages.
     Twin pipeline_async_predicated_bug1.pipe: VIOLATED deadlock
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
BUGS = (1,)

THREADS = 96
ELEMS = 32  # one Float32 per producer lane per stage
TILE = (8, 32)  # the output tile whose rows the consumers own


def _storage(stages):
    @cute.struct
    class SharedStorage:
        pipe_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, ELEMS * stages], 128]

    return SharedStorage


@cute.kernel
def pipeline_async_predicated_kernel(
    mOut: cute.Tensor,
    tiled_copy: cute.TiledCopy,
    M: cutlass.Constexpr,
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
            pipe.producer_acquire(state)
            sbuf[lane, state.index] = cutlass.Float32(k)
            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)

    if warp_idx >= 1:  # consumer candidates: the threads whose row is inside the problem
        cOut = cute.make_identity_tensor(mOut.shape)
        cTile = cute.local_tile(cOut, TILE, (0, 0))
        thr_copy = tiled_copy.get_slice(tidx - 32)
        tCcOut = thr_copy.partition_S(cTile)
        row = tCcOut[(0, 0), 0, 0][0]
        if row < M:
            state = make_pipeline_state(PipelineUserType.Consumer, stages)
            acc = cutlass.Float32(0.0)
            for k in range(k_tiles):
                pipe.consumer_wait(state)
                acc += sbuf[lane, state.index]
                pipe.consumer_release(state)
                state.advance()
            mOut[row, lane] = acc


@cute.jit
def pipeline_async_predicated_host(mOut: cute.Tensor, M: cutlass.Constexpr,
                                   stages: cutlass.Constexpr, k_tiles: cutlass.Constexpr,
                                   bug: cutlass.Constexpr):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32,
                               num_bits_per_copy=128)
    # 64 threads, 8 per row, 4 consecutive columns each
    tiled_copy = cute.make_tiled_copy_tv(atom, cute.make_layout((8, 8), stride=(8, 1)),
                                         cute.make_layout((1, 4)))
    pipeline_async_predicated_kernel(mOut, tiled_copy, M, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_async_predicated(M: int = 4, stages: int = 2, k_tiles: int = 4, bug: int = 0):
    mOut = make_fake_compact_tensor(cutlass.Float32, TILE, stride_order=(1, 0),
                                    assumed_align=16)
    return cute.compile(pipeline_async_predicated_host, mOut, M, stages, k_tiles, bug)
