"""PipelineTmaAsync in a cm x cn cluster with multicast TMA (Hopper persistent GEMM
mainloop shape).  Each CTA (m, n) needs a 32x64 fp16 tile of A (row block m) and a
32x64 fp16 tile of B (row block n) per stage, 4096 + 4096 bytes.  Its TMA warp loads
1/cn of A and multicasts it to the cn CTAs of its cluster row (mcast_mode=2), and 1/cm
of B multicast to the cm CTAs of its column (mcast_mode=1): every CTA receives the
full 8192 bytes per stage from cm + cn - 1 producers.  The consumer warp's lanes
l < cm*cn release to CTA l when it shares the row or the column (init_empty_barrier_
arrive_signal), so the empty barrier counts (cm + cn - 1) * consumer_warps.

Twin: examples/textbook/pipeline_tma_async_multicast.pipe
Config: block=64 (warp 0 TMA, warp 1 consumer), cluster (cm, cn, 1) = 2x2, grid = the
cluster, stages=2, k_tiles=2, tx_count=8192, cta_layout_vmnk=(1, cm, cn, 1),
defer_sync=True + pipeline_init_arrive/wait(cluster_shape_mn=(cm, cn)).
pipeline_tma_async_multicast.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. consumer_group is CooperativeGroup(Agent.Thread, 1 * consumer_warps), not scaled
     by the cm + cn - 1 CTAs whose consumers release to it: the first release
     completes the phase, the next one arrives on the following phase.
     Twin pipeline_tma_async_multicast_bug1.pipe: VIOLATED arrival-overflow (lifted: phase-overrun)
  2. the TMA warp does not call producer_tail: a CTA can exit while the consumers of
     its row and column still arrive remotely on its empty barriers.
     Twin pipeline_tma_async_multicast_bug2.pipe: VIOLATED remote-op-to-exited-cta
  3. pipeline_init_arrive() / pipeline_init_wait() without cluster_shape_mn: the init
     is published by a CTA barrier only, so a peer CTA can multicast into (or arrive
     on) a barrier whose init it cannot see yet.
     Twin pipeline_tma_async_multicast_bug3.pipe: VIOLATED use-before-init
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
CONSUMER_WARPS = 1
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
def pipeline_tma_async_multicast_kernel(
    tma_atom_a: cute.CopyAtom,
    mA: cute.Tensor,
    tma_atom_b: cute.CopyAtom,
    mB: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    cm: cutlass.Constexpr,
    cn: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    lane = tidx % 32
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    if warp_idx == 0:
        cpasync.prefetch_descriptor(tma_atom_a)
        cpasync.prefetch_descriptor(tma_atom_b)

    cta_layout_vmnk = cute.make_layout((1, cm, cn, 1))
    cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cta_coord = cta_layout_vmnk.get_flat_coord(cta_rank)  # (0, m, n, 0)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sA = storage.sA.get_tensor(cute.make_layout((TILE_M, TILE_K, stages)))
    sB = storage.sB.get_tensor(cute.make_layout((TILE_N, TILE_K, stages)))
    sout = storage.out.get_tensor(cute.make_layout(32))

    a_bytes = cute.size_in_bytes(DTYPE, cute.make_layout((TILE_M, TILE_K)))
    b_bytes = cute.size_in_bytes(DTYPE, cute.make_layout((TILE_N, TILE_K)))
    consumer_arrives = (cm + cn - 1) * CONSUMER_WARPS
    if cutlass.const_expr(bug == 1):
        consumer_arrives = CONSUMER_WARPS
    ab = PipelineTmaAsync.create(
        barrier_storage=storage.ab_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_arrives),
        tx_count=a_bytes + b_bytes,
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=True,
    )
    if cutlass.const_expr(bug == 3):
        pipeline_init_arrive()
        pipeline_init_wait()
    else:
        pipeline_init_arrive(cluster_shape_mn=(cm, cn))
        pipeline_init_wait(cluster_shape_mn=(cm, cn))

    # A: this CTA's row block, split among the cn CTAs of its row (multicast along N)
    gA = cute.local_tile(mA, (TILE_M, TILE_K), (cta_coord[1], None))
    tAsA, tAgA = cpasync.tma_partition(
        tma_atom_a,
        cta_coord[2],
        cute.make_layout(cn),
        cute.group_modes(sA, 0, 2),
        cute.group_modes(gA, 0, 2),
    )
    # B: this CTA's column block, split among the cm CTAs of its column (along M)
    gB = cute.local_tile(mB, (TILE_N, TILE_K), (cta_coord[2], None))
    tBsB, tBgB = cpasync.tma_partition(
        tma_atom_b,
        cta_coord[1],
        cute.make_layout(cm),
        cute.group_modes(sB, 0, 2),
        cute.group_modes(gB, 0, 2),
    )
    a_mask = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord, mcast_mode=2)
    b_mask = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord, mcast_mode=1)

    if warp_idx == 0:  # TMA producer
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            ab.producer_acquire(state)
            bar = ab.producer_get_barrier(state)
            cute.copy(
                tma_atom_a, tAgA[None, k], tAsA[None, state.index],
                tma_bar_ptr=bar, mcast_mask=a_mask,
            )
            cute.copy(
                tma_atom_b, tBgB[None, k], tBsB[None, state.index],
                tma_bar_ptr=bar, mcast_mask=b_mask,
            )
            ab.producer_commit(state)
            state.advance()
        if cutlass.const_expr(bug != 2):
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
def pipeline_tma_async_multicast_host(
    mA: cute.Tensor,
    mB: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    cm: cutlass.Constexpr,
    cn: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    op = cpasync.CopyBulkTensorTileG2SMulticastOp()
    tma_atom_a, tma_a = cpasync.make_tiled_tma_atom(
        op, mA, cute.make_layout((TILE_M, TILE_K)), (TILE_M, TILE_K), num_multicast=cn
    )
    tma_atom_b, tma_b = cpasync.make_tiled_tma_atom(
        op, mB, cute.make_layout((TILE_N, TILE_K)), (TILE_N, TILE_K), num_multicast=cm
    )
    pipeline_tma_async_multicast_kernel(
        tma_atom_a, tma_a, tma_atom_b, tma_b, stages, k_tiles, cm, cn, bug
    ).launch(
        grid=(cm, cn, 1),
        block=(THREADS, 1, 1),
        cluster=(cm, cn, 1),
        smem=_storage(stages).size_in_bytes(),
    )


def pipeline_tma_async_multicast(
    stages: int = 2, k_tiles: int = 2, cm: int = 2, cn: int = 2, bug: int = 0
):
    mA = make_fake_compact_tensor(DTYPE, (TILE_M * cm, TILE_K * k_tiles), assumed_align=16)
    mB = make_fake_compact_tensor(DTYPE, (TILE_N * cn, TILE_K * k_tiles), assumed_align=16)
    return cute.compile(pipeline_tma_async_multicast_host, mA, mB, stages, k_tiles, cm, cn, bug)
