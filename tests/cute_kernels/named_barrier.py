"""NamedBarrier: a producer warpgroup (warps 0-3) writes a shared buffer and signals a
consumer warpgroup (warps 4-7) through named barrier 1 (``full.arrive()``, bar.arrive,
on one side; ``full.arrive_and_wait()``, bar.sync, on the other; the count covers both
sides: 256 threads); the consumers read the buffer, and both warpgroups meet on named
barrier 2 (``done``) before the next round overwrites it.

Twin: examples/textbook/named_barrier.pipe
Config: block=256, cluster 1x1x1, rounds=2, NamedBarrier(1, 256) and NamedBarrier(2, 256).
named_barrier.pipe verdict: PROVEN (unbounded)

Planted bugs (``bug=N``):
  1. the consumers sync barrier 1 with NamedBarrier(barrier_id=1, num_threads=128):
     the two sides use different counts in one generation.
     Twin named_barrier_bug1.pipe: VIOLATED named-barrier-misuse
  2. the consumers skip the ``done`` barrier in the last round: the producers wait at
     barrier 2 for 128 threads that never come.
     Twin named_barrier_bug2.pipe: VIOLATED deadlock
  3. ``done`` is NamedBarrier(barrier_id=1, ...), the id of ``full``: a producer warp
     arrives twice at barrier 1 in one generation.
     Twin named_barrier_bug3.pipe: VIOLATED named-barrier-misuse
"""
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
import cutlass.utils
from cutlass.pipeline import NamedBarrier

ARCH = "sm_90a"
BUGS = (1, 2, 3)

THREADS = 256
HALF = 128


def _storage():
    @cute.struct
    class SharedStorage:
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, HALF], 128]
        out: cute.struct.MemRange[cutlass.Float32, HALF]

    return SharedStorage


@cute.kernel
def named_barrier_kernel(mOut: cute.Tensor, rounds: cutlass.Constexpr, bug: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage())
    sbuf = storage.buf.get_tensor(cute.make_layout(HALF))
    sout = storage.out.get_tensor(cute.make_layout(HALF))

    full = NamedBarrier(barrier_id=1, num_threads=THREADS)
    done_id = 2
    if cutlass.const_expr(bug == 3):
        done_id = 1
    done = NamedBarrier(barrier_id=done_id, num_threads=THREADS)

    if warp_idx < 4:  # producer warpgroup
        for r in range(rounds):
            sbuf[tidx] = cutlass.Float32(r)
            full.arrive()
            done.arrive_and_wait()

    if warp_idx >= 4:  # consumer warpgroup
        t = tidx - HALF
        acc = cutlass.Float32(0.0)
        for r in range(rounds):
            if cutlass.const_expr(bug == 1):
                NamedBarrier(barrier_id=1, num_threads=HALF).arrive_and_wait()
            else:
                full.arrive_and_wait()
            acc += sbuf[t]
            if cutlass.const_expr(bug == 2):
                if r < rounds - 1:
                    done.arrive_and_wait()
            else:
                done.arrive_and_wait()
        sout[t] = acc
        mOut[t] = acc  # global memory: the exported kernel's checkable output


@cute.jit
def named_barrier_host(mOut: cute.Tensor, rounds: cutlass.Constexpr, bug: cutlass.Constexpr):
    named_barrier_kernel(mOut, rounds, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage().size_in_bytes()
    )


def named_barrier(rounds: int = 2, bug: int = 0):
    mOut = make_fake_compact_tensor(cutlass.Float32, (HALF,), assumed_align=16)
    return cute.compile(named_barrier_host, mOut, rounds, bug)
