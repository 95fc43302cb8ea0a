"""PipelineUmmaAsync (Blackwell accumulator pipeline, 2-CTA pair): the leader CTA's MMA
warp (warp 4) acquires an accumulator stage, fills it with 2-CTA tcgen05 MMAs
(``cute.gemm`` on a 256x64x16 f16 tiled MMA with CtaGroup.TWO, accumulator in the tensor
memory of both CTAs) and commits it with one elected tcgen05.commit multicast to both
CTAs of the pair; the epilogue warpgroup (warps 0-3) of each CTA waits, reads its half
of the accumulator (tcgen05.ld, ``tcgen05.make_tmem_copy``) and releases from one
elected lane per warp to the leader's empty barrier (counts 4 warps x 2 CTAs).  The
operands are smem tiles that nobody writes (the kernel computes nothing meaningful).
PipelineState API.

Tensor memory is allocated by epilogue warp 0 (as CUTLASS's persistent GEMMs do) with a
2-CTA ``TmemAllocator``: its dealloc mbarrier is initialised by warp 0 before
pipeline_init_arrive, retrieval is published with named barrier 1 over the CTA, and the
free is preceded by named barrier 2 over the epilogue warps and by the allocator's
handshake with the peer CTA (every lane of warp 0 arrives on the peer's dealloc mbarrier,
then waits on its own).

Twin: tests/cute_kernels/pipeline_umma_async.pipe (examples/textbook/
pipeline_umma_async.pipe plus the 2-CTA TMEM allocator's named barriers and dealloc
mbarrier).
Config: block=160 (warps 0-3 epilogue, warp 4 MMA), cluster 2x1x1, stages=1, tiles=2,
producer group 1, consumer group 4*2, cta_layout_vmnk=(2,1,1,1), defer_sync=True +
pipeline_init_arrive/wait(cluster_shape_mn=(2, 1)).
pipeline_umma_async.pipe verdict: PROVEN (unbounded)
Lifted (bug=0): PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. consumer_group is CooperativeGroup(Agent.Thread, 4), not scaled by the 2 CTAs of
     the pair whose epilogues release to the leader: the first four releases complete
     the empty phase, the next ones arrive on the following phase (and the MMA warp may
     rewrite an accumulator the peer's epilogue still reads).
     Lifted: VIOLATED phase-overrun (cta1.w0 arrive on acc.empty[0]@cta0)
     Twin pipeline_umma_async_bug1.pipe: VIOLATED overwrite-before-release (cta0.w4
     starts writing acc.acc[0]@cta1 while a consumer still owns it).  Same bug, another
     first symptom: the lifted kernel has no ghost accesses to tensor memory
     (tcgen05.mma / tcgen05.ld are opaque to the front end), so only the barrier
     misuse can show there.
  2. the epilogue releases from every lane (no elect_one): 32 arrivals per warp on a
     barrier that expects one per warp.
     Lifted: VIOLATED arrival-overflow
     Twin pipeline_umma_async_bug2.pipe: VIOLATED arrival-overflow
  3. the epilogue releases its own CTA's empty barrier (a raw local mbarrier_arrive on
     consumer_get_barrier) instead of the leader's: the leader's empty barrier gets only
     its own 4 arrivals per phase and the MMA warp never reacquires the stage.
     Lifted: VIOLATED deadlock
     Twin pipeline_umma_async_bug3.pipe: VIOLATED deadlock
  4. no named barrier 2 among the epilogue warps before the free: allocator warp 0 frees
     the tensor memory (tcgen05.dealloc, after the peer's handshake) as soon as its own
     loop ends, while epilogue warps 1-3 may still read the last accumulator.
     Lifted: VIOLATED tmem-misuse (a tcgen05.ld after the dealloc)
     Twin pipeline_umma_async_bug4.pipe: VIOLATED tmem-misuse
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import tcgen05
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    NamedBarrier,
    PipelineUmmaAsync,
    PipelineUserType,
    make_pipeline_state,
    pipeline_init_arrive,
    pipeline_init_wait,
)

ARCH = "sm_100a"
BUGS = (1, 2, 3, 4)

THREADS = 160
MMA_WARP = 4
EPI_WARPS = 4
MMA_TILER = (256, 64, 64)  # M (both CTAs), N, K
AB_DTYPE = cutlass.Float16
ACC_DTYPE = cutlass.Float32
CLUSTER = (2, 1, 1)


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
        acc_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        tmem_dealloc_mbar: cutlass.Int64
        tmem_holding_buf: cutlass.Int32

    return SharedStorage


@cute.kernel
def pipeline_umma_async_kernel(
    tiled_mma: cute.TiledMma,
    a_smem_layout: cute.ComposedLayout,
    b_smem_layout: cute.ComposedLayout,
    cta_layout_vmnk: cute.Layout,
    stages: cutlass.Constexpr,
    tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    is_leader_cta = cta_rank % 2 == 0

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sA = smem.allocate_tensor(
        AB_DTYPE, a_smem_layout.outer, byte_alignment=128, swizzle=a_smem_layout.inner
    )
    sB = smem.allocate_tensor(
        AB_DTYPE, b_smem_layout.outer, byte_alignment=128, swizzle=b_smem_layout.inner
    )

    # before pipeline_init_arrive: the allocator's dealloc mbarrier init is published by
    # the same cluster barrier as the pipeline's
    tmem = cutlass.utils.TmemAllocator(
        storage.tmem_holding_buf,
        barrier_for_retrieve=NamedBarrier(barrier_id=1, num_threads=THREADS),
        allocator_warp_id=0,
        is_two_cta=True,
        two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_mbar,
    )

    consumer_arrives = EPI_WARPS * cute.size(cta_layout_vmnk, mode=[0])
    if cutlass.const_expr(bug == 1):
        consumer_arrives = EPI_WARPS
    acc = PipelineUmmaAsync.create(
        barrier_storage=storage.acc_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_arrives),
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=True,
    )
    pipeline_init_arrive(cluster_shape_mn=CLUSTER[:2])
    pipeline_init_wait(cluster_shape_mn=CLUSTER[:2])

    acc_shape = tiled_mma.partition_shape_C(MMA_TILER[:2])
    tmem_cols = 64 * stages
    tmem.allocate(tmem_cols)
    tmem.wait_for_alloc()
    tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
    # (MMA, MMA_M, MMA_N, STAGE): one accumulator per stage
    tCtAcc = cute.make_tensor(
        tmem_ptr, tiled_mma.make_fragment_C(cute.append(acc_shape, stages)).layout
    )

    if warp_idx == MMA_WARP:  # tcgen05 MMA issuer (leader CTA only)
        tCrA = tiled_mma.make_fragment_A(sA)  # (MMA, MMA_M, MMA_K, 1)
        tCrB = tiled_mma.make_fragment_B(sB)  # (MMA, MMA_N, MMA_K, 1)
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for t in range(tiles):
            if is_leader_cta:
                acc.producer_acquire(state)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                    cute.gemm(
                        tiled_mma,
                        tCtAcc[None, None, None, state.index],
                        tCrA[None, None, kb, 0],
                        tCrB[None, None, kb, 0],
                        tCtAcc[None, None, None, state.index],
                    )
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                acc.producer_commit(state)
            state.advance()
        acc.producer_tail(state)

    if warp_idx < MMA_WARP:  # epilogue warpgroup: TMEM -> registers
        copy_atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x16), ACC_DTYPE)
        tiled_t2r = tcgen05.make_tmem_copy(copy_atom, tCtAcc[(None, None), 0, 0, 0])
        thr_t2r = tiled_t2r.get_slice(tidx)
        tTR_tAcc = thr_t2r.partition_S(tCtAcc[(None, None), 0, 0, None])  # (T2R, M, N, STAGE)
        # registers shaped like the destination partition (a tmem-side shape here
        # segfaults the DSL's backend)
        tTR_cAcc = thr_t2r.partition_D(cute.make_identity_tensor(acc_shape[0]))
        tTR_rAcc = cute.make_rmem_tensor(tTR_cAcc.shape, ACC_DTYPE)
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for t in range(tiles):
            acc.consumer_wait(state)
            cute.copy(tiled_t2r, tTR_tAcc[None, None, None, state.index], tTR_rAcc)
            if cutlass.const_expr(bug == 2):
                acc.consumer_release(state)
            elif cutlass.const_expr(bug == 3):
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(acc.consumer_get_barrier(state))
            else:
                with cute.arch.elect_one():
                    acc.consumer_release(state)
            state.advance()
        # every epilogue warp has read its last accumulator before warp 0 frees TMEM
        if cutlass.const_expr(bug != 4):
            NamedBarrier(barrier_id=2, num_threads=EPI_WARPS * 32).arrive_and_wait()
        tmem.relinquish_alloc_permit()
        tmem.free(tmem_ptr)


@cute.jit
def pipeline_umma_async_host(
    stages: cutlass.Constexpr, tiles: cutlass.Constexpr, bug: cutlass.Constexpr
):
    tiled_mma = _tiled_mma()
    a_smem_layout = sm100_utils.make_smem_layout_a(tiled_mma, MMA_TILER, AB_DTYPE, 1)
    b_smem_layout = sm100_utils.make_smem_layout_b(tiled_mma, MMA_TILER, AB_DTYPE, 1)
    cta_layout_vmnk = cute.tiled_divide(cute.make_layout(CLUSTER), (tiled_mma.thr_id,))
    smem_bytes = (
        _storage(stages).size_in_bytes()
        + cute.size_in_bytes(AB_DTYPE, a_smem_layout)
        + cute.size_in_bytes(AB_DTYPE, b_smem_layout)
        + 256
    )
    pipeline_umma_async_kernel(
        tiled_mma, a_smem_layout, b_smem_layout, cta_layout_vmnk, stages, tiles, bug
    ).launch(grid=CLUSTER, block=(THREADS, 1, 1), cluster=CLUSTER, smem=smem_bytes)


def pipeline_umma_async(stages: int = 1, tiles: int = 2, bug: int = 0):
    return cute.compile(pipeline_umma_async_host, stages, tiles, bug)
