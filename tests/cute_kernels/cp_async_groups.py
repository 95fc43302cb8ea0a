"""cp.async commit groups without an mbarrier (an Ampere-style multistage mainloop):
both warps copy their slice of each stage from global memory with cp.async (a tiled
copy of CopyG2SOp atoms over the 64 threads), commit one group per stage, wait with
cp_async_wait_group(stages - 2) and then a CTA barrier (bar.sync 0) before reading;
each lane reads an element of the *other* warp's slice, so the barrier matters.

Twin: examples/textbook/cp_async_groups.pipe
Config: block=64 (two warps, both copy and read), cluster 1x1x1, stages=3, k_tiles=6.
cp_async_groups.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. cp_async_wait_group(stages - 1): with stages - 1 groups in flight the wait returns
     at once and the stage about to be read may not have landed.
     Twin cp_async_groups_bug1.pipe: VIOLATED read-before-full
  2. no CTA barrier between the wait and the read: a lane reads the other warp's slice,
     whose copies that warp has not waited for.
     Twin cp_async_groups_bug2.pipe: VIOLATED read-before-full
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor

ARCH = "sm_90a"
BUGS = (1, 2)

THREADS = 64
VEC = 4  # Float32 per lane per stage: one 16-byte cp.async
TILE = THREADS * VEC


def _storage(stages):
    @cute.struct
    class SharedStorage:
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE * stages], 128]
        out: cute.struct.MemRange[cutlass.Float32, THREADS]

    return SharedStorage


@cute.kernel
def cp_async_groups_kernel(
    mA: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    sA = storage.buf.get_tensor(cute.make_layout((TILE, stages)))
    sout = storage.out.get_tensor(cute.make_layout(THREADS))

    atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32 * VEC)
    tiled_copy = cute.make_tiled_copy_tv(atom, cute.make_layout(THREADS), cute.make_layout(VEC))
    thr_copy = tiled_copy.get_slice(tidx)
    tAgA = thr_copy.partition_S(mA)  # (CPY, 1, k_tiles)
    tAsA = thr_copy.partition_D(sA)  # (CPY, 1, stages)

    for s in cutlass.range_constexpr(stages - 1):
        cute.copy(tiled_copy, tAgA[None, None, s], tAsA[None, None, s])
        cute.arch.cp_async_commit_group()
    acc = cutlass.Float32(0.0)
    other = (tidx * VEC + TILE // 2) % TILE  # an element of the other warp's slice
    for k in cutlass.range_constexpr(k_tiles):
        if cutlass.const_expr(bug == 1):
            cute.arch.cp_async_wait_group(stages - 1)
        else:
            cute.arch.cp_async_wait_group(stages - 2)
        if cutlass.const_expr(bug != 2):
            cute.arch.barrier()
        acc += sA[other, k % stages]
        if cutlass.const_expr(k + stages - 1 < k_tiles):
            nxt = (k + stages - 1) % stages
            cute.copy(tiled_copy, tAgA[None, None, k + stages - 1], tAsA[None, None, nxt])
        cute.arch.cp_async_commit_group()
    # drain: commit whatever is pending, then wait for every group (the twin's
    # cp_async_wait_all(), PTX cp.async.wait_all; CUTLASS's sm80 multistage mainloop
    # ends the same way, cp_async_fence + cp_async_wait<0>)
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    sout[tidx] = acc


@cute.jit
def cp_async_groups_host(
    mA: cute.Tensor,
    stages: cutlass.Constexpr,
    k_tiles: cutlass.Constexpr,
    bug: cutlass.Constexpr,
):
    cp_async_groups_kernel(mA, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def cp_async_groups(stages: int = 3, k_tiles: int = 6, bug: int = 0):
    mA = make_fake_compact_tensor(cutlass.Float32, (TILE, k_tiles), assumed_align=16)
    return cute.compile(cp_async_groups_host, mA, stages, k_tiles, bug)
