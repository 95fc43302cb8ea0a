"""PipelineTmaUmma, 2-CTA pair (Blackwell mainloop with cta_group::2): a cluster (2,1,1)
whose two CTAs share one 256x64x64 f16 tcgen05 MMA (CtaGroup.TWO, each CTA holds its
128-row half of A and its 32-row half of B, 16384 + 4096 bytes per stage).  Warp 0 of
each CTA acquires its own empty barrier and loads its halves with 2-CTA TMA atoms
(``CopyBulkTensorTileG2SOp(CtaGroup.TWO)`` through ``make_tiled_tma_atom_A/B``); the
loads complete on the *leader's* full barrier, whose expect_tx (by the leader only)
counts both halves.  Warp 1 of the leader (``is_leader_cta``) waits, issues the MMAs
(``cute.gemm``, accumulator in the tensor memory of both CTAs) and releases the stage
with one elected tcgen05.commit multicast to both CTAs' empty barriers.  Participants
API.

Tensor memory is allocated by warp 1 of each CTA with a 2-CTA ``TmemAllocator`` (its
dealloc mbarrier initialised by warp 1 before pipeline_init_arrive), retrieval published
by named barrier 1 over the CTA, and freed after a second CTA-wide arrive_and_wait on
barrier 1 (the TMA warp reaches it after producer.tail(): every MMA of the pair has
completed) and the allocator's handshake with the peer (every lane of warp 1 arrives on
the peer's dealloc mbarrier, then waits on its own).

The textbook skeleton (examples/textbook/pipeline_tma_umma.pipe) has the same roles,
cluster, stages, k_tiles and groups, but no tensor memory allocator and 4096-byte halves;
the twin is that skeleton with this kernel's bytes and the allocator's barriers.
Twin: tests/cute_kernels/pipeline_tma_umma_2cta.pipe
Config: block=64 (warp 0 TMA, warp 1 MMA), cluster 2x1x1, stages=2, k_tiles=2,
tx_count=(16384+4096)*2=40960, producer and consumer groups of 1,
cta_layout_vmnk=(2,1,1,1), defer_sync=True + pipeline_init_arrive/wait(cluster_shape_mn=
(2, 1)).
pipeline_tma_umma_2cta.pipe verdict: PROVEN (unbounded)
Lifted (bug=0): PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. tx_count counts one CTA's halves (20480), not both CTAs': the leader's full phase
     completes when the first 20480 bytes of the pair land, before the other CTA's
     halves; those land in the following phase.
     Lifted: VIOLATED read-before-full (cta0.w1 reads sA[0]@cta0 before anything was
     written to it)
     Twin pipeline_tma_umma_2cta_bug1.pipe: VIOLATED read-before-full (cta0.w1 reads
     ab.buf[0]@cta1 expecting fill 0, but it holds another fill or nothing)
  2. the MMA block is not guarded by ``is_leader_cta``: the peer's MMA warp waits on its
     own full barrier, which nobody arrives on (the TMA completions and the expect_tx go
     to the leader's).
     Lifted: VIOLATED deadlock
     Twin pipeline_tma_umma_2cta_bug2.pipe: VIOLATED deadlock
  3. pipeline_init_arrive() / pipeline_init_wait() without cluster_shape_mn: the inits
     are published to the CTA only, so the peer's TMA may complete on the leader's full
     barrier (and the leader's commit arrive on the peer's empty barrier) before that
     CTA's init is visible to it.
     Lifted: VIOLATED use-before-init (complete_tx on ab.full[0]@cta0)
     Twin pipeline_tma_umma_2cta_bug3.pipe: VIOLATED use-before-init (complete_tx on
     ab.full[0]@cta0)
  4. only the leader CTA frees the pair's cta_group::2 allocation (the MMA runs there):
     a 2-CTA dealloc needs one warp of each CTA, and the peer exits with its columns
     allocated (the leader's free waits for the peer's arrival for ever).
     Lifted: VIOLATED tmem-misuse
     Twin pipeline_tma_umma_2cta_bug4.pipe: VIOLATED tmem-misuse
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
    PipelineTmaUmma,
    pipeline_init_arrive,
    pipeline_init_wait,
)

ARCH = "sm_100a"
BUGS = (1, 2, 3, 4)

THREADS = 64
MMA_WARP = 1
MMA_TILER = (256, 64, 64)  # M (both CTAs), N, K per stage
AB_DTYPE = cutlass.Float16
ACC_DTYPE = cutlass.Float32
CLUSTER = (2, 1, 1)
TMEM_COLS = 64


def _tiled_mma():
    return sm100_utils.make_trivial_tiled_mma(
        AB_DTYPE,
        AB_DTYPE,
        tcgen05.OperandMajorMode.K,
        tcgen05.OperandMajorMode.K,
        ACC_DTYPE,
        tcgen05.CtaGroup.TWO,
        MMA_TILER[:2],
    )


def _storage(stages):
    @cute.struct
    class SharedStorage:
        ab_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        tmem_dealloc_mbar: cutlass.Int64
        tmem_holding_buf: cutlass.Int32

    return SharedStorage


@cute.kernel
def pipeline_tma_umma_2cta_kernel(
    tiled_mma: cute.TiledMma,
    tma_atom_a: cute.CopyAtom,
    mA: cute.Tensor,
    tma_atom_b: cute.CopyAtom,
    mB: cute.Tensor,
    a_smem_layout: cute.ComposedLayout,
    b_smem_layout: cute.ComposedLayout,
    cta_layout_vmnk: cute.Layout,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cta_coord = cta_layout_vmnk.get_flat_coord(cta_rank)  # (v, 0, 0, 0)
    if warp_idx == 0:
        cpasync.prefetch_descriptor(tma_atom_a)
        cpasync.prefetch_descriptor(tma_atom_b)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sA = smem.allocate_tensor(
        AB_DTYPE, a_smem_layout.outer, byte_alignment=128, swizzle=a_smem_layout.inner
    )
    sB = smem.allocate_tensor(
        AB_DTYPE, b_smem_layout.outer, byte_alignment=128, swizzle=b_smem_layout.inner
    )

    tmem = cutlass.utils.TmemAllocator(
        storage.tmem_holding_buf,
        barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=THREADS),
        allocator_warp_id=MMA_WARP,
        is_two_cta=True,
        two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_mbar,
    )

    cta_bytes = cute.size_in_bytes(AB_DTYPE, cute.select(a_smem_layout, mode=[0, 1, 2]))
    cta_bytes += cute.size_in_bytes(AB_DTYPE, cute.select(b_smem_layout, mode=[0, 1, 2]))
    tx_bytes = cta_bytes * cute.size(cta_layout_vmnk, mode=[0])
    if cutlass.const_expr(bug == 1):
        tx_bytes = cta_bytes
    ab = PipelineTmaUmma.create(
        barrier_storage=storage.ab_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 1),
        tx_count=tx_bytes,
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=True,
    )
    if cutlass.const_expr(bug == 3):
        pipeline_init_arrive()
        pipeline_init_wait()
    else:
        pipeline_init_arrive(cluster_shape_mn=CLUSTER[:2])
        pipeline_init_wait(cluster_shape_mn=CLUSTER[:2])

    # this CTA's half of the pair's MMA
    thr_mma = tiled_mma.get_slice(cta_coord[0])
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

    tmem.allocate(TMEM_COLS)
    tmem.wait_for_alloc()
    tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)

    if warp_idx == 0:  # TMA producer, both CTAs
        producer, _ = ab.make_participants()
        for k in range(k_tiles):
            handle = producer.acquire_and_advance()
            cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, handle.index], tma_bar_ptr=handle.barrier)
            cute.copy(tma_atom_b, tBgB[None, k], tBsB[None, handle.index], tma_bar_ptr=handle.barrier)
        producer.tail()

    if warp_idx == MMA_WARP:  # tcgen05 MMA issuer, leader CTA only
        is_mma_cta = ab.is_leader_cta
        if cutlass.const_expr(bug == 2):
            is_mma_cta = True
        if is_mma_cta:
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
                handle.release()

    tmem.relinquish_alloc_permit()
    NamedBarrier(barrier_id=1, num_threads=THREADS).arrive_and_wait()  # after producer.tail()
    if cutlass.const_expr(bug == 4):
        if ab.is_leader_cta:
            tmem.free(tmem_ptr)
    else:
        tmem.free(tmem_ptr)


@cute.jit
def pipeline_tma_umma_2cta_host(
    mA: cute.Tensor,
    mB: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tiled_mma = _tiled_mma()
    a_smem_layout = sm100_utils.make_smem_layout_a(tiled_mma, MMA_TILER, AB_DTYPE, stages)
    b_smem_layout = sm100_utils.make_smem_layout_b(tiled_mma, MMA_TILER, AB_DTYPE, stages)
    cta_layout_vmnk = cute.tiled_divide(cute.make_layout(CLUSTER), (tiled_mma.thr_id,))
    op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.TWO)
    tma_atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(
        op, mA, cute.select(a_smem_layout, mode=[0, 1, 2]), MMA_TILER, tiled_mma,
        cta_layout_vmnk.shape,
    )
    tma_atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(
        op, mB, cute.select(b_smem_layout, mode=[0, 1, 2]), MMA_TILER, tiled_mma,
        cta_layout_vmnk.shape,
    )
    smem_bytes = (
        _storage(stages).size_in_bytes()
        + cute.size_in_bytes(AB_DTYPE, a_smem_layout)
        + cute.size_in_bytes(AB_DTYPE, b_smem_layout)
        + 256
    )
    pipeline_tma_umma_2cta_kernel(
        tiled_mma, tma_atom_a, tma_a, tma_atom_b, tma_b, a_smem_layout, b_smem_layout,
        cta_layout_vmnk, stages, k_tiles, bug,
    ).launch(grid=CLUSTER, block=(THREADS, 1, 1), cluster=CLUSTER, smem=smem_bytes)


def pipeline_tma_umma_2cta(stages: int = 2, k_tiles: int = 2, bug: int = 0):
    # K-major A (M, K) and B (N, K): stride 1 along K
    mA = make_fake_compact_tensor(
        AB_DTYPE, (MMA_TILER[0], MMA_TILER[2] * k_tiles), stride_order=(1, 0), assumed_align=16
    )
    mB = make_fake_compact_tensor(
        AB_DTYPE, (MMA_TILER[1], MMA_TILER[2] * k_tiles), stride_order=(1, 0), assumed_align=16
    )
    return cute.compile(pipeline_tma_umma_2cta_host, mA, mB, stages, k_tiles, bug)
