"""PipelineTmaUmma, one CTA (Blackwell mainloop with cta_group::1): warp 0 loads the
A (128x64 f16) and B (64x64 f16) tiles of each stage with real TMA loads
(``make_tiled_tma_atom_A/B``, completing on ``handle.barrier``); warp 1 waits, issues the
stage's tcgen05 MMAs (``cute.gemm``, accumulator in tensor memory) and releases the stage
with one elected tcgen05.commit.  Participants API; TMEM allocated by the MMA warp
through ``cutlass.utils.TmemAllocator`` (named barrier 1 over the CTA before the roles
and before the free); the lifted kernel has the allocation protocol (tcgen05.alloc,
relinquish_alloc_permit, dealloc) and the MMAs' tensor-memory accesses, the twin the
same allocator.

The textbook skeleton is the 2-CTA form (cta_group::2, a CTA pair); this kernel is the
1-CTA form, so its twin is a new file.
Twin: tests/cute_kernels/pipeline_tma_umma.pipe
Config: block=64 (warp 0 TMA, warp 1 MMA), cluster 1x1x1, stages=2, k_tiles=3,
tx_count=16384+8192=24576, producer and consumer groups of 1, defer_sync=True +
pipeline_init_arrive/wait.
pipeline_tma_umma.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. tx_count is 16 bytes short of what the two TMA loads deliver: the full barrier's
     transaction count ends at -16, the phase never completes.
     Twin pipeline_tma_umma_bug1.pipe: VIOLATED deadlock
  2. the MMA warp skips the release of its last stage: producer.tail() waits for ever.
     Twin pipeline_tma_umma_bug2.pipe: VIOLATED deadlock
  3. the MMA warp (the allocator) frees the tensor memory before its MMAs (right after
     wait_for_alloc) instead of at the end: every tcgen05.mma writes deallocated columns.
     Lifted: VIOLATED tmem-misuse (the tcgen05.mma after the dealloc)
     Twin pipeline_tma_umma_bug3.pipe: PROVEN -- the twin's tcgen05_mma has no tensor-
     memory access (in .pipe only PipelineUmmaAsync accumulator stages are tensor memory,
     spec/primitives.md 12 C-T6); tests/cute_helpers.LIFTED_DIFFERS says why
  4. relinquish_alloc_permit() before allocate(): tcgen05.alloc after the CTA gave up
     its allocation permit.
     Lifted: VIOLATED tmem-misuse
     Twin pipeline_tma_umma_bug4.pipe: VIOLATED tmem-misuse
  5. no free(): the CTA exits with its columns allocated (PTX ISA: all tensor memory
     must be deallocated before the kernel exits).
     Lifted: VIOLATED tmem-misuse
     Twin pipeline_tma_umma_bug5.pipe: VIOLATED tmem-misuse
  6. allocate() inside elect_one(): tcgen05.alloc is .sync.aligned, one lane of the
     allocator warp issues it.
     Lifted: VIOLATED tmem-misuse
     Twin pipeline_tma_umma_bug6.pipe: VIOLATED tmem-misuse
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import tcgen05
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    NamedBarrier,
    PipelineTmaUmma,
    pipeline_init_arrive,
    pipeline_init_wait,
)

ARCH = "sm_100a"
BUGS = (1, 2, 3, 4, 5, 6)

THREADS = 64
MMA_WARP = 1
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

    return SharedStorage


@cute.kernel
def pipeline_tma_umma_kernel(
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

    tx_bytes = cute.size_in_bytes(AB_DTYPE, cute.select(a_smem_layout, mode=[0, 1, 2]))
    tx_bytes += cute.size_in_bytes(AB_DTYPE, cute.select(b_smem_layout, mode=[0, 1, 2]))
    if cutlass.const_expr(bug == 1):
        tx_bytes = tx_bytes - 16
    ab = PipelineTmaUmma.create(
        barrier_storage=storage.p_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
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
    if cutlass.const_expr(bug == 4):
        tmem.relinquish_alloc_permit()
    if cutlass.const_expr(bug == 6):
        with cute.arch.elect_one():
            tmem.allocate(TMEM_COLS)
    else:
        tmem.allocate(TMEM_COLS)
    tmem.wait_for_alloc()

    if warp_idx == 0:  # TMA producer
        producer, _ = ab.make_participants()
        for k in range(k_tiles):
            handle = producer.acquire_and_advance()
            cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, handle.index], tma_bar_ptr=handle.barrier)
            cute.copy(tma_atom_b, tBgB[None, k], tBsB[None, handle.index], tma_bar_ptr=handle.barrier)
        producer.tail()

    if warp_idx == MMA_WARP:  # tcgen05 MMA issuer
        tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
        if cutlass.const_expr(bug == 3):
            tmem.free(tmem_ptr)
        acc_shape = tiled_mma.partition_shape_C(MMA_TILER[:2])
        tCtAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(acc_shape).layout)
        tCrA = tiled_mma.make_fragment_A(sA)  # (MMA, MMA_M, MMA_K, STAGE)
        tCrB = tiled_mma.make_fragment_B(sB)  # (MMA, MMA_N, MMA_K, STAGE)
        _, consumer = ab.make_participants()
        for k in range(k_tiles):
            handle = consumer.wait_and_advance()
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(
                    tiled_mma,
                    tCtAcc,
                    tCrA[None, None, kb, handle.index],
                    tCrB[None, None, kb, handle.index],
                    tCtAcc,
                )
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            if cutlass.const_expr(bug == 2):
                if k < k_tiles - 1:
                    handle.release()
            else:
                handle.release()

    if cutlass.const_expr(bug != 4):
        tmem.relinquish_alloc_permit()
    cta_bar.arrive_and_wait()  # producers pass this after producer.tail(): MMAs are done
    if cutlass.const_expr(bug != 3 and bug != 5):
        if warp_idx == MMA_WARP:
            tmem.free(tmem.retrieve_ptr(ACC_DTYPE))


@cute.jit
def pipeline_tma_umma_host(
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
    pipeline_tma_umma_kernel(
        tiled_mma, tma_atom_a, tma_a, tma_atom_b, tma_b, a_smem_layout, b_smem_layout,
        stages, k_tiles, bug,
    ).launch(grid=(1, 1, 1), block=(THREADS, 1, 1), smem=smem_bytes)


def pipeline_tma_umma(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    # K-major A (M, K) and B (N, K): stride 1 along K
    mA = make_fake_compact_tensor(
        AB_DTYPE, (MMA_TILER[0], MMA_TILER[2] * k_tiles), stride_order=(1, 0), assumed_align=16
    )
    mB = make_fake_compact_tensor(
        AB_DTYPE, (MMA_TILER[1], MMA_TILER[2] * k_tiles), stride_order=(1, 0), assumed_align=16
    )
    return cute.compile(pipeline_tma_umma_host, mA, mB, stages, k_tiles, bug)
