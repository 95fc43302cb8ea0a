"""PipelineAsync whose every mbarrier wait is a timed, retried try_wait: the idiom of
NVIDIA's Hopper FMHA example.  The entry replaces ``cute.arch.mbarrier_wait`` (which
the pipeline's ``producer_acquire``/``consumer_wait``/``producer_tail`` call) with
``timed_wait``: ``mbarrier.try_wait.parity`` with a suspend-time hint (``nvvm.
mbarrier_try_wait_parity_timelimit``), tried again once if it fails, then spun on in a
``while`` until it succeeds.  Otherwise the kernel of ``pipeline_async.py``.

Twin: examples/textbook/pipeline_async.pipe
Config: block=64 (warp 0 producer, warp 1 consumer), cluster 1x1x1, stages=2, k_tiles=4.
pipeline_async.pipe verdict: PROVEN (unbounded)

The lifter reads a retry of the same try_wait as the first attempt made later and the
spin as a blocking wait (``frontend/cute/sync_ops.py``: a failed try_wait has no effect),
so the lifted programs are those of ``pipeline_async.py``.

Planted bugs (``bug=N``): those of ``pipeline_async.py``.
  1. consumer_group counts 64 threads, one warp (32) releases: deadlock.
     Twin pipeline_async_timed_wait_bug1.pipe: VIOLATED deadlock
  2. no consumer_release on the last iteration: the producer blocks in producer_tail.
     Twin pipeline_async_timed_wait_bug2.pipe: VIOLATED deadlock
  3. the producer stores into the stage before producer_acquire.
     Twin pipeline_async_timed_wait_bug3.pipe: VIOLATED read-before-full
"""
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
import cutlass.utils
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineAsync,
    PipelineUserType,
    make_pipeline_state,
)

from cutlass._mlir.dialects import nvvm
from cutlass._mlir.ir import IntegerType
from cutlass.cutlass_dsl import (Boolean, Int32, dsl_user_op, if_generate, not_,
                                 while_generate, yield_out)

ARCH = "sm_90a"
BUGS = (1, 2, 3)

THREADS = 64
ELEMS = 32  # one Float32 per producer lane per stage


# the suspend-time hint in nanoseconds (any value: the model ignores it)
TIME_HINT_NS = 1_000_000


@dsl_user_op
def timed_wait(mbar_ptr, phase, *, loc=None, ip=None):
    """Wait for ``phase`` of the mbarrier at ``mbar_ptr``: a timed try_wait, once more if
    it failed, then a spin on it.  (Written with the DSL's generators: a user op is
    not rewritten from Python control flow.)"""
    ptr = mbar_ptr.llvm_ptr
    par = Int32(phase).ir_value(loc=loc, ip=ip)
    hint = Int32(TIME_HINT_NS).ir_value(loc=loc, ip=ip)

    def attempt():
        return nvvm.mbarrier_try_wait_parity_timelimit(
            ptr, par, hint, results=[IntegerType.get_signless(1)], loc=loc, ip=ip)

    def succeeded():
        return Boolean(True).ir_value(loc=loc, ip=ip)

    ok = if_generate(Boolean(attempt()), succeeded, attempt, None, [Boolean], loc=loc, ip=ip)

    def spin():
        start = Boolean(False).ir_value(loc=loc, ip=ip)
        with while_generate([start], lambda done: not_(done, loc=loc, ip=ip),
                            loc=loc, ip=ip) as (_,):
            yield_out([Boolean(attempt())], loc=loc, ip=ip)
        return succeeded()

    if_generate(ok, succeeded, spin, None, [Boolean], loc=loc, ip=ip)


def _storage(stages):
    @cute.struct
    class SharedStorage:
        pipe_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, ELEMS * stages], 128]
        out: cute.struct.MemRange[cutlass.Float32, ELEMS]

    return SharedStorage


@cute.kernel
def pipeline_async_timed_wait_kernel(
    mOut: cute.Tensor,
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
    sbuf = storage.buf.get_tensor(cute.make_layout((ELEMS, stages)))
    sout = storage.out.get_tensor(cute.make_layout(ELEMS))

    consumer_threads = 32
    if cutlass.const_expr(bug == 1):
        consumer_threads = 64
    pipe = PipelineAsync.create(
        barrier_storage=storage.pipe_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_threads),
    )

    if warp_idx == 0:  # producer
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            if cutlass.const_expr(bug == 3):
                sbuf[lane, state.index] = cutlass.Float32(k)
            pipe.producer_acquire(state)
            if cutlass.const_expr(bug != 3):
                sbuf[lane, state.index] = cutlass.Float32(k)
            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)

    if warp_idx == 1:  # consumer
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        acc = cutlass.Float32(0.0)
        for k in range(k_tiles):
            pipe.consumer_wait(state)
            acc += sbuf[lane, state.index]
            if cutlass.const_expr(bug == 2):
                if k < k_tiles - 1:
                    pipe.consumer_release(state)
            else:
                pipe.consumer_release(state)
            state.advance()
        sout[lane] = acc
        mOut[lane] = acc  # global memory: the exported kernel's checkable output


@cute.jit
def pipeline_async_timed_wait_host(mOut: cute.Tensor, stages: cutlass.Constexpr,
                        k_tiles: cutlass.Constexpr, bug: cutlass.Constexpr):
    pipeline_async_timed_wait_kernel(mOut, stages, k_tiles, bug).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1), smem=_storage(stages).size_in_bytes()
    )


def pipeline_async_timed_wait(stages: int = 2, k_tiles: int = 4, bug: int = 0):
    mOut = make_fake_compact_tensor(cutlass.Float32, (ELEMS,), assumed_align=16)
    saved = cute.arch.mbarrier_wait
    cute.arch.mbarrier_wait = timed_wait  # what the pipeline's waits call
    try:
        return cute.compile(pipeline_async_timed_wait_host, mOut, stages, k_tiles, bug)
    finally:
        cute.arch.mbarrier_wait = saved
