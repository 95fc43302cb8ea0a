"""PipelineAsync whose k-loop bound comes from a tensor's dynamic extent, as in a GEMM:
``mA`` is a fake tensor of shape ``(32, K)`` with ``K = cute.sym_int32(symbol="K")``,
the kernel tiles it with ``cute.local_tile`` into ``(32, TILE_K, k_tiles)`` and loops
``k_tiles = cute.size(gA, mode=[2])`` times (``ceil_div(K, TILE_K)``).  One producer
warp copies each tile's first column into a stage with ordinary loads and smem stores,
one consumer warp reads it.

``pipeproof check pipeline_async_dynamic_k.py --param K=1..64`` lifts the module once
with ``K`` symbolic (docs/cute-frontend.md, dynamic extents).  ``static_k=N`` compiles
the same kernel with a static extent instead (the differential tests' reference:
a different module, lifted without any dynamic extent).  ``div=D`` declares the
extent a multiple of ``D`` (``cute.sym_int32(divisibility=D)``); ``named=False``
leaves it without a symbol.  ``host_k=True``: the host function computes the count,
``cute.ceil_div(cute.size(mA, mode=[1]), TILE_K)``, and passes it to the kernel as a
``cutlass.Int32`` (the lifter follows the host's arithmetic from the extent).

Config: block=64 (warp 0 producer, warp 1 consumer), cluster 1x1x1, stages=2,
TILE_K=16.  Correct kernel: PROVEN for every K.

Planted bugs (``bug=N``):
  1. the consumer counts its tiles with floor division, ``cute.size(mA, mode=[1]) //
     TILE_K``, while the producer's ``local_tile`` rounds up: for K not a multiple of
     TILE_K the last tile is never released and the producer blocks in producer_tail
     (deadlock); for multiples of TILE_K nothing is wrong.
  2. the consumer skips consumer_release at k == 3: deadlock once k_tiles >= 4
     (K > 48), nothing wrong below.
  3. the producer stores into the stage before producer_acquire: read-before-full /
     overwrite-before-release once k_tiles > stages (K > 32).
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
ROWS = 32     # one Float32 per producer lane per stage
TILE_K = 16


def _storage(stages):
    @cute.struct
    class SharedStorage:
        pipe_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, ROWS * stages], 128]

    return SharedStorage


@cute.kernel
def pipeline_async_dynamic_k_kernel(
    mA: cute.Tensor,
    mOut: cute.Tensor,
    host_k_tiles: cutlass.Int32,
    stages: cutlass.Constexpr,
    bug: cutlass.Constexpr,
    host_k: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    lane = tidx % 32
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sbuf = storage.buf.get_tensor(cute.make_layout((ROWS, stages)))

    # (ROWS, TILE_K, k_tiles): the k-th tile of A along K
    gA = cute.local_tile(mA, (ROWS, TILE_K), (0, None))
    k_tiles = cute.size(gA, mode=[2])
    if cutlass.const_expr(host_k):
        k_tiles = host_k_tiles  # the host's count: ceil_div(K, TILE_K)

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
                sbuf[lane, state.index] = gA[lane, 0, k]
            pipe.producer_acquire(state)
            if cutlass.const_expr(bug != 3):
                sbuf[lane, state.index] = gA[lane, 0, k]
            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)

    if warp_idx == 1:  # consumer
        n = k_tiles
        if cutlass.const_expr(bug == 1):
            n = cute.size(mA, mode=[1]) // TILE_K
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(n):
            pipe.consumer_wait(state)
            acc += sbuf[lane, state.index]
            if cutlass.const_expr(bug == 2):
                if k != 3:
                    pipe.consumer_release(state)
            else:
                pipe.consumer_release(state)
            state.advance()
        mOut[lane] = acc  # global memory: the kernel's checkable output


@cute.jit
def pipeline_async_dynamic_k_host(mA: cute.Tensor, mOut: cute.Tensor,
                                  stages: cutlass.Constexpr, bug: cutlass.Constexpr,
                                  host_k: cutlass.Constexpr):
    k_tiles = cute.ceil_div(cute.size(mA, mode=[1]), TILE_K)
    pipeline_async_dynamic_k_kernel(mA, mOut, k_tiles, stages, bug, host_k).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_async_dynamic_k(stages: int = 2, bug: int = 0, static_k: int = 0,
                             div: int = 1, named: bool = True, host_k: bool = False):
    if static_k:
        k = static_k
    else:
        k = cute.sym_int32(divisibility=div, symbol="K" if named else None)
    mA = make_fake_compact_tensor(cutlass.Float32, (ROWS, k), assumed_align=16)
    mOut = make_fake_compact_tensor(cutlass.Float32, (ROWS,), assumed_align=16)
    return cute.compile(pipeline_async_dynamic_k_host, mA, mOut, stages, bug, host_k)
