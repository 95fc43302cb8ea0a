"""PipelineTmaAsync, one CTA (Hopper mainloop shape): warp 0 loads one 64x64 fp16 tile
(8192 bytes) per stage with a real TMA load whose completion is the stage's full
barrier; a warpgroup of four consumer warps reads it with ordinary smem loads.  With a
cluster of one CTA, lane 0 of each consumer warp releases, so the consumer group is
CooperativeGroup(Agent.Thread, 4).  PipelineState API (producer_acquire /
producer_commit / producer_tail, consumer_wait / consumer_release).

Twin: tests/cute_kernels/pipeline_tma_async.pipe (the configuration of
examples/textbook/pipeline_tma_async.pipe written with PipelineState instead of
participants; pipeline_tma_async_participants.py is the participants form).
Config: block=160 (warp 0 TMA, warps 1-4 consumers), cluster 1x1x1, stages=2,
k_tiles=3, tx_count=8192, defer_sync=True + pipeline_init_arrive/wait.
pipeline_tma_async.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. tx_count is half the tile (4096 bytes) while the TMA delivers 8192: the full
     barrier's transaction count ends at -4096, never 0, so the phase never completes
     and the consumers wait for ever.
     Twin pipeline_tma_async_bug1.pipe: VIOLATED deadlock
  2. consumer warp 4 never calls consumer_release: the empty barrier (count 4) gets 3
     arrivals per phase and the producer blocks in producer_acquire at k = stages.
     Twin pipeline_tma_async_bug2.pipe: VIOLATED deadlock
  3. consumer_group is CooperativeGroup(Agent.Thread, 1) (one release per CTA assumed)
     while four warps release: the first warp's release completes the empty phase, the
     next warp's release is an arrive on the following phase before anyone waited on
     the first.
     Twin pipeline_tma_async_bug3.pipe: VIOLATED arrival-overflow (lifted: phase-overrun)
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineTmaAsync,
    PipelineUserType,
    make_pipeline_state,
    pipeline_init_arrive,
    pipeline_init_wait,
)

ARCH = "sm_90a"
BUGS = (1, 2, 3)

THREADS = 160
TILE_M, TILE_K = 64, 64  # fp16: 8192 bytes per stage
DTYPE = cutlass.Float16


def _storage(stages):
    @cute.struct
    class SharedStorage:
        ab_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        sA: cute.struct.Align[cute.struct.MemRange[DTYPE, TILE_M * TILE_K * stages], 1024]
        out: cute.struct.MemRange[cutlass.Float32, 128]

    return SharedStorage


def _smem_layout(stages):
    return cute.make_layout((TILE_M, TILE_K, stages))  # column-major, like the gmem tensor


@cute.kernel
def pipeline_tma_async_kernel(
    tma_atom: cute.CopyAtom,
    mA: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    if warp_idx == 0:
        cpasync.prefetch_descriptor(tma_atom)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sA = storage.sA.get_tensor(_smem_layout(stages))
    sout = storage.out.get_tensor(cute.make_layout(128))

    tile_bytes = cute.size_in_bytes(DTYPE, cute.slice_(_smem_layout(stages), (None, None, 0)))
    tx_count = tile_bytes
    if cutlass.const_expr(bug == 1):
        tx_count = tile_bytes // 2
    consumer_arrives = 4
    if cutlass.const_expr(bug == 3):
        consumer_arrives = 1
    ab = PipelineTmaAsync.create(
        barrier_storage=storage.ab_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_arrives),
        tx_count=tx_count,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        defer_sync=True,
    )
    pipeline_init_arrive()
    pipeline_init_wait()

    # (TILE_M, TILE_K, k_tiles) tiles of A, partitioned for the TMA unit
    gA = cute.local_tile(mA, (TILE_M, TILE_K), (0, None))
    tAsA, tAgA = cpasync.tma_partition(
        tma_atom,
        0,
        cute.make_layout(1),
        cute.group_modes(sA, 0, 2),
        cute.group_modes(gA, 0, 2),
    )

    if warp_idx == 0:  # TMA producer
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            ab.producer_acquire(state)
            cute.copy(
                tma_atom,
                tAgA[None, k],
                tAsA[None, state.index],
                tma_bar_ptr=ab.producer_get_barrier(state),
            )
            ab.producer_commit(state)
            state.advance()
        ab.producer_tail(state)

    if warp_idx >= 1:  # consumer warpgroup (warps 1-4)
        t = tidx - 32
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            ab.consumer_wait(state)
            acc += sA[t % TILE_M, t // TILE_M, state.index].to(cutlass.Float32)
            if cutlass.const_expr(bug == 2):
                if warp_idx != 4:
                    ab.consumer_release(state)
            else:
                ab.consumer_release(state)
            state.advance()
        sout[t] = acc


@cute.jit
def pipeline_tma_async_host(
    mA: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    smem_tile = cute.slice_(_smem_layout(stages), (None, None, 0))
    tma_atom, tma_tensor = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), mA, smem_tile, (TILE_M, TILE_K)
    )
    pipeline_tma_async_kernel(tma_atom, tma_tensor, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_tma_async(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    mA = make_fake_compact_tensor(DTYPE, (TILE_M, TILE_K * k_tiles), assumed_align=16)
    return cute.compile(pipeline_tma_async_host, mA, stages, k_tiles, bug)
