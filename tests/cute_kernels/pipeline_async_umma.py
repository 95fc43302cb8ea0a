"""PipelineAsyncUmma (Blackwell, one CTA): a softmax-like warpgroup (warps 0-3) writes
operand A of a tcgen05 MMA into the stage with ordinary smem stores, fences the generic
proxy and commits (every one of the 128 threads arrives: full counts 128); the MMA warp
(warp 4) waits, issues the stage's tcgen05 MMAs (``cute.gemm`` on a 128x64x16 f16 tiled
MMA, accumulator in tensor memory) and releases the stage with one elected
tcgen05.commit (empty counts 1).  Participants API.

Tensor memory is allocated by the MMA warp through ``cutlass.utils.TmemAllocator``,
published with named barrier 1 over the whole CTA (``wait_for_alloc``), and freed after
a second CTA-wide arrive_and_wait on barrier 1 that the producers reach only after
producer.tail() (so every MMA has completed).  Operand B is one smem tile that nobody
writes (the kernel computes nothing meaningful).

Twin: tests/cute_kernels/pipeline_async_umma.pipe (examples/textbook/
pipeline_async_umma.pipe with k_tiles=3 -- with 2 no stage is reused and bug 2 cannot
show -- plus the two CTA-wide named barriers of the TMEM allocator).
Config: block=160 (warps 0-3 producers, warp 4 MMA), cluster 1x1x1, stages=2,
k_tiles=3, producer group 128 threads, consumer group 1, defer_sync=False.
pipeline_async_umma.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. no fence_proxy("async.shared") between the producers' stores and the commit:
     the MMA (async proxy) reads generic-proxy stores.
     Twin pipeline_async_umma_bug1.pipe: VIOLATED missing-proxy-fence
  2. the MMA warp releases the stage (tcgen05.commit) *before* issuing its MMAs: the
     commit tracks only the previous stage's MMAs, so the producers may rewrite the
     stage (at k + stages) while its MMA still reads it.
     Twin pipeline_async_umma_bug2.pipe: VIOLATED overwrite-before-release
  3. consumer_group is CooperativeGroup(Agent.Thread, 128) (like a thread consumer)
     while one elected tcgen05.commit releases: the empty barrier never completes.
     Twin pipeline_async_umma_bug3.pipe: VIOLATED deadlock
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import tcgen05
from cutlass.pipeline import Agent, CooperativeGroup, NamedBarrier, PipelineAsyncUmma

ARCH = "sm_100a"
BUGS = (1, 2, 3)

THREADS = 160
MMA_WARP = 4
PRODUCER_THREADS = 128
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
def pipeline_async_umma_kernel(
    tiled_mma: cute.TiledMma,
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

    consumer_arrives = 1
    if cutlass.const_expr(bug == 3):
        consumer_arrives = PRODUCER_THREADS
    p = PipelineAsyncUmma.create(
        barrier_storage=storage.p_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, PRODUCER_THREADS),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_arrives),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
    )

    cta_bar = NamedBarrier(barrier_id=1, num_threads=THREADS)
    tmem = cutlass.utils.TmemAllocator(
        storage.tmem_holding_buf, barrier_for_retrieve=cta_bar, allocator_warp_id=MMA_WARP
    )
    tmem.allocate(TMEM_COLS)
    tmem.wait_for_alloc()

    if warp_idx < MMA_WARP:  # producers: write operand A of the stage
        producer, _ = p.make_participants()
        for k in range(k_tiles):
            handle = producer.acquire_and_advance()
            sA_stage = sA[None, None, None, handle.index]
            sA_stage[tidx] = AB_DTYPE(k)  # one element per thread stands for the tile
            if cutlass.const_expr(bug != 1):
                cute.arch.fence_proxy("async.shared", space="cta")
            handle.commit()
        producer.tail()

    if warp_idx == MMA_WARP:  # tcgen05 MMA issuer
        tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
        acc_shape = tiled_mma.partition_shape_C(MMA_TILER[:2])
        tCtAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(acc_shape).layout)
        tCrA = tiled_mma.make_fragment_A(sA)  # (MMA, MMA_M, MMA_K, STAGE)
        tCrB = tiled_mma.make_fragment_B(sB)  # (MMA, MMA_N, MMA_K, 1)
        _, consumer = p.make_participants()
        for k in range(k_tiles):
            handle = consumer.wait_and_advance()
            if cutlass.const_expr(bug == 2):
                handle.release()
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(
                    tiled_mma,
                    tCtAcc,
                    tCrA[None, None, kb, handle.index],
                    tCrB[None, None, kb, 0],
                    tCtAcc,
                )
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            if cutlass.const_expr(bug != 2):
                handle.release()

    tmem.relinquish_alloc_permit()
    cta_bar.arrive_and_wait()  # producers pass this after producer.tail(): MMAs are done
    if warp_idx == MMA_WARP:
        tmem.free(tmem.retrieve_ptr(ACC_DTYPE))


@cute.jit
def pipeline_async_umma_host(
    stages: cutlass.Constexpr, k_tiles: cutlass.Constexpr, bug: cutlass.Constexpr
):
    tiled_mma = _tiled_mma()
    a_smem_layout = sm100_utils.make_smem_layout_a(tiled_mma, MMA_TILER, AB_DTYPE, stages)
    b_smem_layout = sm100_utils.make_smem_layout_b(tiled_mma, MMA_TILER, AB_DTYPE, 1)
    smem_bytes = (
        _storage(stages).size_in_bytes()
        + cute.size_in_bytes(AB_DTYPE, a_smem_layout)
        + cute.size_in_bytes(AB_DTYPE, b_smem_layout)
        + 256
    )
    pipeline_async_umma_kernel(
        tiled_mma, a_smem_layout, b_smem_layout, stages, k_tiles, bug
    ).launch(grid=(1, 1, 1), block=(THREADS, 1, 1), smem=smem_bytes)


def pipeline_async_umma(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    return cute.compile(pipeline_async_umma_host, stages, k_tiles, bug)
