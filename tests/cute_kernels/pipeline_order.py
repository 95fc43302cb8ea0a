"""PipelineOrder (Hopper FMHA math warpgroups): two warpgroups take turns in a critical
section (here: a read-modify-write of a shared buffer).  Group 0 starts with the token
(its state starts at phase 1); every thread of a group arrives on the next group's
barrier (CooperativeGroup(Agent.Thread, 128)).  ``group_id = warp_idx // 4`` is a
run-time value, as in the real kernels.

Twin: examples/textbook/pipeline_order.pipe
Config: block=256 (warps 0-3 group 0, warps 4-7 group 1), cluster 1x1x1, depth=1,
length=2, iterations=2.
pipeline_order.pipe verdict: PROVEN (unbounded)

The loop over iterations is ``cutlass.range_constexpr`` (unrolled while tracing):
PipelineOrder keeps its PipelineState inside the pipeline object, and ``wait`` /
``arrive`` advance that hidden state, which a run-time ``scf.for`` does not carry from
one iteration to the next (bug 4: the DSL compiles it without a word, and every
iteration waits with the initial phase).

Planted bugs (``bug=N``):
  1. producer_group is CooperativeGroup(Agent.Thread, 32) (one warp) while the whole
     warpgroup (128 threads) arrives: the next group's phase completes after one warp,
     and the other three arrive on the following phase.
     Twin pipeline_order_bug1.pipe: VIOLATED arrival-overflow (lifted: phase-overrun)
  2. ``group_id=warp_idx // 8``: both warpgroups are group 0, both start with the
     token and arrive on group 1's barrier (256 arrivals, count 128).
     Twin pipeline_order_bug2.pipe: VIOLATED arrival-overflow
  3. the critical section is entered without ``order.wait()``.
     Twin pipeline_order_bug3.pipe: VIOLATED arrival-overflow
  4. the loop is ``range(iterations)`` instead of ``cutlass.range_constexpr``: the
     compiled scf.for waits on the same parity every iteration (the state advance in
     ``order.arrive()`` is lost), so group 0 passes its wait twice and arrives twice on
     group 1's barrier before group 1 waited.
     Twin pipeline_order_bug4.pipe (raw mbarriers, as compiled): VIOLATED phase-overrun
"""
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
import cutlass.utils
from cutlass.pipeline import Agent, CooperativeGroup, PipelineOrder

ARCH = "sm_90a"
BUGS = (1, 2, 3, 4)

THREADS = 256
GROUP = 128


def _storage():
    @cute.struct
    class SharedStorage:
        order_mbar: cute.struct.MemRange[cutlass.Int64, 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, GROUP], 128]

    return SharedStorage


@cute.kernel
def pipeline_order_kernel(mOut: cute.Tensor, iterations: cutlass.Constexpr,
                          bug: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage())
    sbuf = storage.buf.get_tensor(cute.make_layout(GROUP))

    # the buffer is initialised before create()'s CTA-wide sync publishes it (else the
    # first critical section reads uninitialised shared memory: read-before-full)
    if tidx < GROUP:
        sbuf[tidx] = cutlass.Float32(0.0)
    mOut[tidx] = cutlass.Float32(iterations)  # global memory: the thread ran

    arrivals = GROUP
    if cutlass.const_expr(bug == 1):
        arrivals = 32
    order = PipelineOrder.create(
        barrier_storage=storage.order_mbar.data_ptr(),
        depth=1,
        length=2,
        group_id=warp_idx // (8 if bug == 2 else 4),
        producer_group=CooperativeGroup(Agent.Thread, arrivals),
    )

    t = tidx % GROUP
    if cutlass.const_expr(bug == 4):
        for i in range(iterations):  # BUG: a run-time loop drops order's state advance
            order.wait()
            sbuf[t] = sbuf[t] + cutlass.Float32(1.0)
            order.arrive()
    else:
        for i in cutlass.range_constexpr(iterations):  # math warpgroups 0 and 1
            if cutlass.const_expr(bug != 3):
                order.wait()
            sbuf[t] = sbuf[t] + cutlass.Float32(1.0)
            order.arrive()


@cute.jit
def pipeline_order_host(mOut: cute.Tensor, iterations: cutlass.Constexpr,
                        bug: cutlass.Constexpr):
    pipeline_order_kernel(mOut, iterations, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage().size_in_bytes()
    )


def pipeline_order(iterations: int = 2, bug: int = 0):
    mOut = make_fake_compact_tensor(cutlass.Float32, (THREADS,), assumed_align=16)
    return cute.compile(pipeline_order_host, mOut, iterations, bug)
