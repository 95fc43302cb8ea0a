"""PipelineTmaAsync in a 2x1 cluster (Hopper GEMM mainloop with multicast along one mode
only): CTA m of the cluster needs the 32x64 fp16 tile of A for row block m and the
32x64 fp16 tile of B for column block 0, 4096 + 4096 bytes per stage.  A is not shared
(the cluster's N mode has size 1): each TMA warp loads its own A tile with a plain TMA
load.  B is shared by both CTAs: each TMA warp loads half of it (tma_partition over the
cluster's M mode) and multicasts it along that mode (``create_tma_multicast_mask(...,
mcast_mode=1)``), so every CTA receives the full 8192 bytes per stage from 2 producers.
The consumer warp's lanes 0 and 1 release to CTA 0 and CTA 1 (both share the column),
so the empty barrier counts (cm + cn - 1) * consumer_warps = 2.  PipelineState API.

The textbook multicast skeleton (examples/textbook/pipeline_tma_async_multicast.pipe)
is the 2x2 form with both operands multicast; this kernel's twin is a new file.
Twin: tests/cute_kernels/pipeline_tma_async_2x1.pipe
Config: block=64 (warp 0 TMA, warp 1 consumer), cluster 2x1x1, stages=2, k_tiles=2,
tx_count=8192, cta_layout_vmnk=(1, 2, 1, 1), defer_sync=True +
pipeline_init_arrive/wait(cluster_shape_mn=(2, 1)).
pipeline_tma_async_2x1.pipe verdict: PROVEN (unbounded)
Lifted (bug=0): PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. B's multicast mask uses mcast_mode=2 (the cluster's N mode, where this CTA is
     alone) while B is still split over the M mode: each CTA receives only its own half
     of B, the full barrier's transaction count stays at 2048 and the consumers wait for
     ever.
     Lifted: VIOLATED deadlock
     Twin pipeline_tma_async_2x1_bug1.pipe: VIOLATED deadlock
  2. consumer_group is CooperativeGroup(Agent.Thread, 1): not scaled by the 2 CTAs whose
     consumers release to it.
     Lifted: VIOLATED phase-overrun (cta1.w1 arrive on ab.empty[0]@cta0)
     Twin pipeline_tma_async_2x1_bug2.pipe: VIOLATED arrival-overflow (cta1.w1 arrive on
     ab.empty[0]@cta0)
  3. the TMA warp does not call producer_tail: a CTA can exit while its peer's consumer
     still arrives remotely on its empty barrier.
     Lifted: VIOLATED remote-op-to-exited-cta (cta1.w1 arrive targets ab.empty[0]@cta0
     after CTA 0 exited)
     Twin pipeline_tma_async_2x1_bug3.pipe: VIOLATED remote-op-to-exited-cta (cta1.w1
     arrive targets ab.empty[0]@cta0 after CTA 0 exited)
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

THREADS = 64
CM, CN = 2, 1
TILE_M, TILE_N, TILE_K = 32, 32, 64  # fp16: A and B tiles of 4096 bytes each
DTYPE = cutlass.Float16


def _storage(stages):
    @cute.struct
    class SharedStorage:
        ab_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        sA: cute.struct.Align[cute.struct.MemRange[DTYPE, TILE_M * TILE_K * stages], 1024]
        sB: cute.struct.Align[cute.struct.MemRange[DTYPE, TILE_N * TILE_K * stages], 1024]
        out: cute.struct.MemRange[cutlass.Float32, 32]

    return SharedStorage


@cute.kernel
def pipeline_tma_async_2x1_kernel(
    tma_atom_a: cute.CopyAtom,
    mA: cute.Tensor,
    tma_atom_b: cute.CopyAtom,
    mB: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    lane = tidx % 32
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    if warp_idx == 0:
        cpasync.prefetch_descriptor(tma_atom_a)
        cpasync.prefetch_descriptor(tma_atom_b)

    cta_layout_vmnk = cute.make_layout((1, CM, CN, 1))
    cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cta_coord = cta_layout_vmnk.get_flat_coord(cta_rank)  # (0, m, 0, 0)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sA = storage.sA.get_tensor(cute.make_layout((TILE_M, TILE_K, stages)))
    sB = storage.sB.get_tensor(cute.make_layout((TILE_N, TILE_K, stages)))
    sout = storage.out.get_tensor(cute.make_layout(32))

    a_bytes = cute.size_in_bytes(DTYPE, cute.make_layout((TILE_M, TILE_K)))
    b_bytes = cute.size_in_bytes(DTYPE, cute.make_layout((TILE_N, TILE_K)))
    consumer_arrives = CM + CN - 1
    if cutlass.const_expr(bug == 2):
        consumer_arrives = 1
    ab = PipelineTmaAsync.create(
        barrier_storage=storage.ab_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_arrives),
        tx_count=a_bytes + b_bytes,
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=True,
    )
    pipeline_init_arrive(cluster_shape_mn=(CM, CN))
    pipeline_init_wait(cluster_shape_mn=(CM, CN))

    # A: this CTA's own row block, whole (no CTA shares it)
    gA = cute.local_tile(mA, (TILE_M, TILE_K), (cta_coord[1], None))
    tAsA, tAgA = cpasync.tma_partition(
        tma_atom_a, 0, cute.make_layout(1),
        cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2),
    )
    # B: column block 0, split between the CM CTAs of the column, multicast along M
    gB = cute.local_tile(mB, (TILE_N, TILE_K), (cta_coord[2], None))
    tBsB, tBgB = cpasync.tma_partition(
        tma_atom_b, cta_coord[1], cute.make_layout(CM),
        cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2),
    )
    b_mode = 1
    if cutlass.const_expr(bug == 1):
        b_mode = 2
    b_mask = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord, mcast_mode=b_mode)

    if warp_idx == 0:  # TMA producer
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            ab.producer_acquire(state)
            bar = ab.producer_get_barrier(state)
            cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, state.index], tma_bar_ptr=bar)
            cute.copy(
                tma_atom_b, tBgB[None, k], tBsB[None, state.index],
                tma_bar_ptr=bar, mcast_mask=b_mask,
            )
            ab.producer_commit(state)
            state.advance()
        if cutlass.const_expr(bug != 3):
            ab.producer_tail(state)

    if warp_idx == 1:  # consumer
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            ab.consumer_wait(state)
            acc += sA[lane, lane, state.index].to(cutlass.Float32)
            acc += sB[lane, lane, state.index].to(cutlass.Float32)
            ab.consumer_release(state)
            state.advance()
        sout[lane] = acc


@cute.jit
def pipeline_tma_async_2x1_host(
    mA: cute.Tensor,
    mB: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tma_atom_a, tma_a = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), mA, cute.make_layout((TILE_M, TILE_K)),
        (TILE_M, TILE_K),
    )
    tma_atom_b, tma_b = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SMulticastOp(), mB, cute.make_layout((TILE_N, TILE_K)),
        (TILE_N, TILE_K), num_multicast=CM,
    )
    pipeline_tma_async_2x1_kernel(tma_atom_a, tma_a, tma_atom_b, tma_b, stages, k_tiles, bug).launch(
        grid=(CM, CN, 1),
        block=(THREADS, 1, 1),
        cluster=(CM, CN, 1),
        smem=_storage(stages).size_in_bytes(),
    )


def pipeline_tma_async_2x1(stages: int = 2, k_tiles: int = 2, bug: int = 0):
    mA = make_fake_compact_tensor(DTYPE, (TILE_M * CM, TILE_K * k_tiles), assumed_align=16)
    mB = make_fake_compact_tensor(DTYPE, (TILE_N * CN, TILE_K * k_tiles), assumed_align=16)
    return cute.compile(pipeline_tma_async_2x1_host, mA, mB, stages, k_tiles, bug)
