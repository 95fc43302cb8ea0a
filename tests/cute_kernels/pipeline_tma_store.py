"""PipelineTmaStore (Hopper epilogue): four epilogue warps write a 32x4 fp32 staging
buffer with ordinary smem stores, fence the generic proxy
(``cute.arch.fence_proxy("async.shared", space="cta")``) and meet at named barrier 1;
warp 0 issues a real TMA store of the buffer (``cute.copy`` of a CopyBulkTensorTileS2GOp
atom), commits the bulk group (producer_commit) and waits until at most stages-1 groups
still read shared memory (producer_acquire); a second arrive_and_wait on barrier 1 keeps
the other warps from writing a buffer early; warp 0 drains every group at the end
(producer_tail).

Twin: examples/textbook/pipeline_tma_store.pipe
Config: block=128 (warps 0-3 epilogue, warp 0 also stores), cluster 1x1x1, stages=2,
subtiles=3, producer_group of 128 threads, NamedBarrier(barrier_id=1, num_threads=128).
pipeline_tma_store.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. no fence_proxy("async.shared") between the smem stores and the TMA store.
     Twin pipeline_tma_store_bug1.pipe: VIOLATED missing-proxy-fence
  2. warp 0 skips producer_acquire (cp.async.bulk.wait_group.read stages-1): subtile
     i + stages overwrites the buffer a TMA store may still be reading.
     Twin pipeline_tma_store_bug2.pipe: VIOLATED overwrite-before-release
  3. warp 0 skips producer_tail: the CTA can exit while a bulk store still reads its
     shared memory.
     Twin pipeline_tma_store_bug3.pipe: VIOLATED dangling-arrive-at-exit
  4. no second named-barrier arrive_and_wait after the store is issued: warps 1-3
     run ahead and write buffer i + stages before warp 0 waited for its old store.
     Twin pipeline_tma_store_bug4.pipe: VIOLATED overwrite-before-release
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import Agent, CooperativeGroup, NamedBarrier, PipelineTmaStore

ARCH = "sm_90a"
BUGS = (1, 2, 3, 4)

THREADS = 128
TILE_M, TILE_N = 32, 4  # fp32, 512 bytes per subtile: one element per thread


def _storage(stages):
    @cute.struct
    class SharedStorage:
        sC: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M * TILE_N * stages], 128]

    return SharedStorage


@cute.kernel
def pipeline_tma_store_kernel(
    tma_atom: cute.CopyAtom,
    mC: cute.Tensor,
    stages: cutlass.Constexpr,
    subtiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    if warp_idx == 0:
        cpasync.prefetch_descriptor(tma_atom)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sC = storage.sC.get_tensor(cute.make_layout((TILE_M, TILE_N, stages)))

    store = PipelineTmaStore.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, THREADS),
    )
    epi_bar = NamedBarrier(barrier_id=1, num_threads=THREADS)

    gC = cute.local_tile(mC, (TILE_M, TILE_N), (0, None))  # (TILE_M, TILE_N, subtiles)
    bSG_sC, bSG_gC = cpasync.tma_partition(
        tma_atom,
        0,
        cute.make_layout(1),
        cute.group_modes(sC, 0, 2),
        cute.group_modes(gC, 0, 2),
    )

    for i in range(subtiles):  # every epilogue warp
        buf = i % stages
        sC[tidx % TILE_M, tidx // TILE_M, buf] = cutlass.Float32(i)
        if cutlass.const_expr(bug != 1):
            cute.arch.fence_proxy("async.shared", space="cta")
        epi_bar.arrive_and_wait()
        if warp_idx == 0:
            cute.copy(tma_atom, bSG_sC[None, buf], bSG_gC[None, i])
            store.producer_commit()
            if cutlass.const_expr(bug != 2):
                store.producer_acquire()
        if cutlass.const_expr(bug != 4):
            epi_bar.arrive_and_wait()
    if warp_idx == 0:
        if cutlass.const_expr(bug != 3):
            store.producer_tail()


@cute.jit
def pipeline_tma_store_host(
    mC: cute.Tensor,
    stages: cutlass.Constexpr,
    subtiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tma_atom, tma_tensor = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), mC, cute.make_layout((TILE_M, TILE_N)), (TILE_M, TILE_N)
    )
    pipeline_tma_store_kernel(tma_atom, tma_tensor, stages, subtiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_tma_store(stages: int = 2, subtiles: int = 3, bug: int = 0):
    mC = make_fake_compact_tensor(cutlass.Float32, (TILE_M, TILE_N * subtiles), assumed_align=16)
    return cute.compile(pipeline_tma_store_host, mC, stages, subtiles, bug)
