"""PipelineTmaAsync through the participants API, one CTA: the kernel of
examples/textbook/pipeline_tma_async.pipe, statement for statement.  Warp 0 loads one
64x64 fp16 tile (8192 bytes) per stage with a real TMA load completing on
``handle.barrier``; four consumer warps read it with ordinary smem loads and release it
(lane 0 of each warp arrives: CooperativeGroup(Agent.Thread, 4)).
``make_participants()``, ``acquire_and_advance()``, ``wait_and_advance()``,
``handle.release()``, ``producer.tail()``.

Twin: examples/textbook/pipeline_tma_async.pipe
Config: block=160 (warp 0 TMA, warps 1-4 consumers), cluster 1x1x1, stages=2,
k_tiles=3, tx_count=8192, defer_sync=True + pipeline_init_arrive/wait.
pipeline_tma_async.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. the consumers call ``consumer.wait()`` instead of ``wait_and_advance()``: they
     wait on stage 0, phase 0 every iteration (it stays complete), and release stage 0
     again and again: the second release is an arrive on the next phase of empty[0]
     before the producer waited on the first.
     Twin pipeline_tma_async_participants_bug1.pipe: VIOLATED arrival-overflow
  2. each consumer warp calls ``handle.release()`` twice: the empty barrier (count 4)
     completes its phase after two warps, and the extra arrivals run into the next
     phase.
     Twin pipeline_tma_async_participants_bug2.pipe: VIOLATED arrival-overflow
  3. ``handle.release()`` *before* the stage is read: once all four warps released,
     the producer's next TMA load (k + stages) may overwrite the stage while a warp
     still reads it (a use-after-release race: expected read-before-full).
     Twin pipeline_tma_async_participants_bug3.pipe: VIOLATED read-before-full (it
     was PROVEN until model/compile.py ``attach`` stopped merging a read that follows
     a release into the release's atomic step); lifted: overwrite-before-release.
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
def pipeline_tma_async_participants_kernel(
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
    ab = PipelineTmaAsync.create(
        barrier_storage=storage.ab_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 4),
        tx_count=tile_bytes,
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
        producer, _ = ab.make_participants()
        for k in range(k_tiles):
            handle = producer.acquire_and_advance()
            cute.copy(
                tma_atom,
                tAgA[None, k],
                tAsA[None, handle.index],
                tma_bar_ptr=handle.barrier,
            )
        producer.tail()

    if warp_idx >= 1:  # consumer warpgroup (warps 1-4)
        t = tidx - 32
        _, consumer = ab.make_participants()
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            if cutlass.const_expr(bug == 1):
                handle = consumer.wait()
            else:
                handle = consumer.wait_and_advance()
            if cutlass.const_expr(bug == 3):
                handle.release()
            acc += sA[t % TILE_M, t // TILE_M, handle.index].to(cutlass.Float32)
            if cutlass.const_expr(bug != 3):
                handle.release()
            if cutlass.const_expr(bug == 2):
                handle.release()
        sout[t] = acc


@cute.jit
def pipeline_tma_async_participants_host(
    mA: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    smem_tile = cute.slice_(_smem_layout(stages), (None, None, 0))
    tma_atom, tma_tensor = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), mA, smem_tile, (TILE_M, TILE_K)
    )
    pipeline_tma_async_participants_kernel(tma_atom, tma_tensor, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_tma_async_participants(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    mA = make_fake_compact_tensor(DTYPE, (TILE_M, TILE_K * k_tiles), assumed_align=16)
    return cute.compile(pipeline_tma_async_participants_host, mA, stages, k_tiles, bug)
