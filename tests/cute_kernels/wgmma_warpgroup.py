"""A warpgroup's wgmma reading a PipelineTmaAsync stage, then one warp reusing the
stage's shared memory (the pattern of NVIDIA's non-persistent Hopper FMHA, which writes
O over Q right after its warp's ``wgmma.wait_group``).

Warp 4 loads a 64x64 fp16 tile per stage with TMA; warps 0-3 (warpgroup 0) wait for
it and issue ``cute.gemm`` with the tile as both operands (``D = A * A^T``, one
m64n64k16 wgmma per k-block), ``commit_group``, ``wait_group(0)``, then release.
After its last wait, warp 0 stores into stage 0 through a flat view of the same
memory.  Safe: the wait of warp 0 returns only once every warp of the warpgroup has
committed the last group, and then all four shares have read the stage
(``model/wgmma.py``).

Config: block=160, cluster 1x1x1, stages=2, k_tiles=3, tx_count=8192.
Verdict: PROVEN (unbounded).  No ``.pipe`` twin file: ``tests/test_wgmma_warpgroup.py``
checks the same protocol written in ``.pipe``.

Planted bugs (``bug=N``):
  1. warp 0 stores into stage 0 before its last ``wait_group``: the warpgroup's MMA
     may still be reading it.  VIOLATED overwrite-before-release
  2. ``consumer_release`` before ``wait_group``: the producer's next TMA load into the
     stage races the MMA still reading it.  VIOLATED overwrite-before-release
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup
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
BUGS = (1, 2)

THREADS = 160
TILE = 64  # M = N = K = 64, fp16: 8192 bytes per stage
DTYPE = cutlass.Float16


def _smem_layout(stages):
    return sm90_utils.make_smem_layout_a(cutlass.utils.LayoutEnum.ROW_MAJOR,
                                         (TILE, TILE, TILE), DTYPE, stages)


def _storage(stages):
    @cute.struct
    class SharedStorage:
        ab_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        sA: cute.struct.Align[cute.struct.MemRange[DTYPE, TILE * TILE * stages], 1024]

    return SharedStorage


@cute.kernel
def wgmma_warpgroup_kernel(
    tma_atom: cute.CopyAtom,
    mA: cute.Tensor,
    mO: cute.Tensor,
    tiled_mma: cute.TiledMma,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    layout = _smem_layout(stages)
    sA = storage.sA.get_tensor(layout.outer, swizzle=layout.inner)
    flat = storage.sA.get_tensor(cute.make_layout(TILE * TILE * stages))

    ab = PipelineTmaAsync.create(
        barrier_storage=storage.ab_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 4),
        tx_count=TILE * TILE * 2,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        defer_sync=True,
    )
    pipeline_init_arrive()
    pipeline_init_wait()

    gA = cute.local_tile(mA, (TILE, TILE), (0, None))
    tAsA, tAgA = cpasync.tma_partition(
        tma_atom, 0, cute.make_layout(1),
        cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))

    if warp_idx == 4:  # TMA producer
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            ab.producer_acquire(state)
            cute.copy(tma_atom, tAgA[None, k], tAsA[None, state.index],
                      tma_bar_ptr=ab.producer_get_barrier(state))
            ab.producer_commit(state)
            state.advance()
        ab.producer_tail(state)

    if warp_idx < 4:  # the MMA warpgroup
        thr_mma = tiled_mma.get_slice(tidx)
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sA)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        gO = cute.local_tile(mO, (TILE, TILE), (0, 0))
        tCgO = thr_mma.partition_C(gO)
        acc = cute.make_rmem_tensor(tCgO.shape, cutlass.Float32)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        for k in range(k_tiles):
            ab.consumer_wait(state)
            warpgroup.fence()
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, state.index],
                          tCrB[None, None, kb, state.index], acc)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
            if cutlass.const_expr(bug == 1):
                if k == k_tiles - 1:
                    if warp_idx == 0:
                        flat[tidx] = DTYPE(0.0)
            if cutlass.const_expr(bug == 2):
                ab.consumer_release(state)
            warpgroup.wait_group(0)
            if cutlass.const_expr(bug != 2):
                ab.consumer_release(state)
            state.advance()
        if warp_idx == 0:  # reuse the stage's memory (as the FMHA writes O over Q)
            flat[tidx] = DTYPE(0.0)
        cute.autovec_copy(acc, tCgO)


@cute.jit
def wgmma_warpgroup_host(mA: cute.Tensor, mO: cute.Tensor, stages: cutlass.Constexpr,
                         k_tiles: cutlass.Constexpr, bug: cutlass.Constexpr):
    smem_tile = cute.slice_(_smem_layout(stages), (None, None, 0))
    tma_atom, tma_tensor = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), mA, smem_tile, (TILE, TILE))
    tiled_mma = sm90_utils.make_trivial_tiled_mma(
        DTYPE, DTYPE, warpgroup.OperandMajorMode.K, warpgroup.OperandMajorMode.K,
        cutlass.Float32, (1, 1, 1), tiler_mn=(TILE, TILE))
    wgmma_warpgroup_kernel(tma_atom, tma_tensor, mO, tiled_mma, stages, k_tiles,
                           bug).launch(grid=(1, 1, 1), block=(THREADS, 1, 1),
                                       smem=_storage(stages).size_in_bytes())


def wgmma_warpgroup(stages: int = 2, k_tiles: int = 3, bug: int = 0):
    mA = make_fake_compact_tensor(DTYPE, (TILE, TILE * k_tiles), stride_order=(1, 0),
                                  assumed_align=16)
    mO = make_fake_compact_tensor(cutlass.Float32, (TILE, TILE), assumed_align=16)
    return cute.compile(wgmma_warpgroup_host, mA, mO, stages, k_tiles, bug)
