"""PipelineTmaMultiConsumersAsync (Blackwell, one CTA): warp 0 loads the A (128x64 f16)
and B (64x64 f16) tiles of each stage with real TMA loads (``make_tiled_tma_atom_A/B``,
completing on the stage's full barrier); two kinds of consumers share one empty
barrier: warp 1 issues the stage's tcgen05 MMAs (``cute.gemm``, accumulator in tensor
memory) and releases with an elected tcgen05.commit (``PipelineOp.TCGen05Mma``), and a
helper warp (warp 2) reads the A tile with ordinary smem loads and releases from its
signalling lane (``PipelineOp.AsyncThread``: lane 0, the only lane whose destination
rank is in a cluster of one).  Empty counts 1 + 1.  PipelineState API for the consumers,
participants for the producer.

Tensor memory is allocated by the MMA warp through ``cutlass.utils.TmemAllocator``
(named barrier 1 over the CTA before the roles and again before the free, which the TMA
warp reaches after producer.tail()).

The textbook skeleton (examples/textbook/pipeline_tma_multi_consumers_async.pipe) has
the same roles, stages and groups but k_tiles=2 (no stage is reused: bugs 1 and 3
cannot show, the lifted kernel is PROVEN with k_tiles=2), one 4096-byte load per stage
and no tensor memory allocator; the twin is that skeleton with k_tiles=3, this kernel's
two loads and the allocator's named barrier.
Twin: tests/cute_kernels/pipeline_tma_multi_consumers_async.pipe
Config: block=96 (warp 0 TMA, warp 1 MMA, warp 2 helper), cluster 1x1x1, stages=2,
k_tiles=3, tx_count=16384+8192=24576, producer group 1, consumer_group_umma 1,
consumer_group_async 1, defer_sync=True + pipeline_init_arrive/wait.
pipeline_tma_multi_consumers_async.pipe verdict: PROVEN (unbounded)
Lifted (bug=0): PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. the MMA warp releases with PipelineOp.AsyncThread (a thread arrive as soon as the
     MMAs are issued) instead of TCGen05Mma (a commit that arrives when they complete):
     the TMA may reload the stage while the MMAs still read it.
     Lifted: VIOLATED overwrite-before-release (cta0.w0 starts writing sA[0]@cta0 while
     a consumer still owns it)
     Twin pipeline_tma_multi_consumers_async_bug1.pipe: VIOLATED overwrite-before-release
     (cta0.w0 starts writing p.buf[0]@cta0 while a consumer still owns it)
  2. the helper warp never releases: the empty barrier (count 2) gets one arrival per
     phase and the TMA warp blocks at k = stages.
     Lifted: VIOLATED deadlock
     Twin pipeline_tma_multi_consumers_async_bug2.pipe: VIOLATED deadlock
  3. the helper warp releases before it reads the stage: the TMA may reload the stage
     under its read.
     Lifted: VIOLATED overwrite-before-release (cta0.w0 starts writing sA[0]@cta0 while
     a consumer still owns it)
     Twin pipeline_tma_multi_consumers_async_bug3.pipe: VIOLATED read-before-full (it
     was PROVEN until model/compile.py ``attach`` stopped merging a read that follows
     a release into the release's atomic step); lifted: overwrite-before-release.
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    NamedBarrier,
    PipelineOp,
    PipelineTmaMultiConsumersAsync,
    PipelineUserType,
    make_pipeline_state,
    pipeline_init_arrive,
    pipeline_init_wait,
)

ARCH = "sm_100a"
BUGS = (1, 2, 3)

THREADS = 96
MMA_WARP = 1
HELPER_WARP = 2
MMA_TILER = (128, 64, 64)  # M, N, K per stage
AB_DTYPE = cutlass.Float16
ACC_DTYPE = cutlass.Float32
TMEM_COLS = 64


def _tiled_mma():
    return sm100_utils.make_trivial_tiled_mma(
        AB_DTYPE,
        AB_DTYPE,
        tcgen05.OperandMajorMode.K,
        tcgen05.OperandMajorMode.K,
        ACC_DTYPE,
        tcgen05.CtaGroup.ONE,
        MMA_TILER[:2],
    )


def _storage(stages):
    @cute.struct
    class SharedStorage:
        p_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        tmem_holding_buf: cutlass.Int32
        out: cute.struct.MemRange[cutlass.Float32, 32]

    return SharedStorage


@cute.kernel
def pipeline_tma_multi_consumers_async_kernel(
    tiled_mma: cute.TiledMma,
    tma_atom_a: cute.CopyAtom,
    mA: cute.Tensor,
    tma_atom_b: cute.CopyAtom,
    mB: cute.Tensor,
    a_smem_layout: cute.ComposedLayout,
    b_smem_layout: cute.ComposedLayout,
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
    sA = smem.allocate_tensor(
        AB_DTYPE, a_smem_layout.outer, byte_alignment=128, swizzle=a_smem_layout.inner
    )
    sB = smem.allocate_tensor(
        AB_DTYPE, b_smem_layout.outer, byte_alignment=128, swizzle=b_smem_layout.inner
    )
    sout = storage.out.get_tensor(cute.make_layout(32))

    tx_bytes = cute.size_in_bytes(AB_DTYPE, cute.select(a_smem_layout, mode=[0, 1, 2]))
    tx_bytes += cute.size_in_bytes(AB_DTYPE, cute.select(b_smem_layout, mode=[0, 1, 2]))
    p = PipelineTmaMultiConsumersAsync.create(
        barrier_storage=storage.p_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group_umma=CooperativeGroup(Agent.Thread, 1),
        consumer_group_async=CooperativeGroup(Agent.Thread, 1),
        tx_count=tx_bytes,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        defer_sync=True,
    )
    pipeline_init_arrive()
    pipeline_init_wait()

    thr_mma = tiled_mma.get_slice(0)
    gA = cute.local_tile(mA, MMA_TILER, (0, 0, None), proj=(1, None, 1))  # (bM, bK, k)
    gB = cute.local_tile(mB, MMA_TILER, (0, 0, None), proj=(None, 1, 1))  # (bN, bK, k)
    tAsA, tAgA = cpasync.tma_partition(
        tma_atom_a, 0, cute.make_layout(1),
        cute.group_modes(sA, 0, 3), cute.group_modes(thr_mma.partition_A(gA), 0, 3),
    )
    tBsB, tBgB = cpasync.tma_partition(
        tma_atom_b, 0, cute.make_layout(1),
        cute.group_modes(sB, 0, 3), cute.group_modes(thr_mma.partition_B(gB), 0, 3),
    )

    cta_bar = NamedBarrier(barrier_id=1, num_threads=THREADS)
    tmem = cutlass.utils.TmemAllocator(
        storage.tmem_holding_buf, barrier_for_retrieve=cta_bar, allocator_warp_id=MMA_WARP
    )
    tmem.allocate(TMEM_COLS)
    tmem.wait_for_alloc()

    if warp_idx == 0:  # TMA producer
        producer, _, _ = p.make_participants()
        for k in range(k_tiles):
            handle = producer.acquire_and_advance()
            cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, handle.index], tma_bar_ptr=handle.barrier)
            cute.copy(tma_atom_b, tBgB[None, k], tBsB[None, handle.index], tma_bar_ptr=handle.barrier)
        producer.tail()

    if warp_idx == MMA_WARP:  # tcgen05 MMA consumer
        tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
        acc_shape = tiled_mma.partition_shape_C(MMA_TILER[:2])
        tCtAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(acc_shape).layout)
        tCrA = tiled_mma.make_fragment_A(sA)  # (MMA, MMA_M, MMA_K, STAGE)
        tCrB = tiled_mma.make_fragment_B(sB)  # (MMA, MMA_N, MMA_K, STAGE)
        release_op = PipelineOp.TCGen05Mma
        if cutlass.const_expr(bug == 1):
            release_op = PipelineOp.AsyncThread
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for k in range(k_tiles):
            p.consumer_wait(state)
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(
                    tiled_mma,
                    tCtAcc,
                    tCrA[None, None, kb, state.index],
                    tCrB[None, None, kb, state.index],
                    tCtAcc,
                )
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            p.consumer_release(state, release_op)
            state.advance()

    if warp_idx == HELPER_WARP:  # helper: reads A with ordinary loads
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            p.consumer_wait(state)
            if cutlass.const_expr(bug == 3):
                p.consumer_release(state, PipelineOp.AsyncThread)
            sA_stage = sA[None, None, None, state.index]
            acc += sA_stage[lane].to(cutlass.Float32)
            if cutlass.const_expr(bug == 0 or bug == 1):
                p.consumer_release(state, PipelineOp.AsyncThread)
            state.advance()
        sout[lane] = acc

    tmem.relinquish_alloc_permit()
    cta_bar.arrive_and_wait()  # the TMA warp passes this after producer.tail()
    if warp_idx == MMA_WARP:
        tmem.free(tmem.retrieve_ptr(ACC_DTYPE))


@cute.jit
def pipeline_tma_multi_consumers_async_host(
    mA: cute.Tensor,
    mB: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tiled_mma = _tiled_mma()
    a_smem_layout = sm100_utils.make_smem_layout_a(tiled_mma, MMA_TILER, AB_DTYPE, stages)
    b_smem_layout = sm100_utils.make_smem_layout_b(tiled_mma, MMA_TILER, AB_DTYPE, stages)
    op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    tma_atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(
        op, mA, cute.select(a_smem_layout, mode=[0, 1, 2]), MMA_TILER, tiled_mma
    )
    tma_atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(
        op, mB, cute.select(b_smem_layout, mode=[0, 1, 2]), MMA_TILER, tiled_mma
    )
    smem_bytes = (
        _storage(stages).size_in_bytes()
        + cute.size_in_bytes(AB_DTYPE, a_smem_layout)
        + cute.size_in_bytes(AB_DTYPE, b_smem_layout)
        + 256
    )
    pipeline_tma_multi_consumers_async_kernel(
        tiled_mma, tma_atom_a, tma_a, tma_atom_b, tma_b, a_smem_layout, b_smem_layout,
        stages, k_tiles, bug,
    ).launch(grid=(1, 1, 1), block=(THREADS, 1, 1), smem=smem_bytes)


def pipeline_tma_multi_consumers_async(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    # K-major A (M, K) and B (N, K): stride 1 along K
    mA = make_fake_compact_tensor(
        AB_DTYPE, (MMA_TILER[0], MMA_TILER[2] * k_tiles), stride_order=(1, 0), assumed_align=16
    )
    mB = make_fake_compact_tensor(
        AB_DTYPE, (MMA_TILER[1], MMA_TILER[2] * k_tiles), stride_order=(1, 0), assumed_align=16
    )
    return cute.compile(pipeline_tma_multi_consumers_async_host, mA, mB, stages, k_tiles, bug)
