"""PipelineClcFetchAsync (Blackwell cluster launch control, a persistent kernel with a
dynamic scheduler, cluster (2,1,1)): warp 1 of CTA 0 is the scheduler: it acquires the
response slot (producer_acquire: lanes 0 and 1 arm the full barrier of CTA 0 and CTA 1
with 16 bytes each), issues one elected multicast ``clusterlaunchcontrol.try_cancel``
(``cute.arch.issue_clc_query``) and then, as a consumer itself, waits for the response,
reads it and releases.  Warp 0 of every CTA is a worker: it waits for each response,
reads it (``cute.arch.clc_response``: ``clusterlaunchcontrol.query_cancel``) and
releases to CTA 0's empty barrier, whose count is every consumer thread of the cluster
(the scheduler warp and one worker warp per CTA: 32 * (1 + 2)).  Every loop is
``while valid:`` on the response just read, as in CUTLASS's dynamic persistent GEMM
(the validity is a run-time value read from shared memory).  The first work tile is the
CTA's own (valid), so every loop runs at least once.

Twin: tests/cute_kernels/pipeline_clc_fetch_async.pipe (the textbook skeleton with the
grid of 3 clusters this kernel launches: examples/textbook/pipeline_clc_fetch_async.pipe
has an unbounded grid)
Config: block=64 (warp 0 worker, warp 1 scheduler in CTA 0), cluster 2x1x1, stages=1,
producer group 1, consumer group 32*(1+2), tx_count=16, cta_layout_vmnk=(1,2,1,1),
defer_sync=True + pipeline_init_arrive/wait(cluster_shape_mn=(2, 1)).
pipeline_clc_fetch_async.pipe verdict: PROVEN (unbounded)
Lifted (bug=0 and every bug, exit code 3): UNKNOWN unsupported op
  nvvm.clusterlaunchcontrol.query.cancel (tests/cute_kernels/pipeline_clc_fetch_async.py:
  133: m, _, _, is_valid = cute.arch.clc_response(response + consumer.index)): pipeproof
  does not know what it does to synchronisation
(expected: the worker warp is interpreted first and stops at the response read; the
scheduler also issues nvvm.clusterlaunchcontrol.try.cancel, and both loops are scf.while
whose condition is the i1 of query.cancel carried through scf.yield -- a while whose
exit is read from memory, which ops.py's scf.while also rejects today).

Planted bugs (``bug=N``):
  1. consumer_group is CooperativeGroup(Agent.Thread, 32 * 2): the scheduler warp, which
     also consumes the response, is not counted.
     Lifted: UNKNOWN (as above)
     Twin pipeline_clc_fetch_async_bug1.pipe: VIOLATED arrival-overflow (cta0.w1 arrive
     on clc.full[0]@cta1)
  2. the workers release from one elected lane (elect_one) while the empty barrier counts
     every lane of every consumer warp: the empty phase never completes and the
     scheduler blocks in its next producer_acquire.
     Lifted: UNKNOWN (as above)
     Twin pipeline_clc_fetch_async_bug2.pipe: VIOLATED deadlock
  3. the scheduler does not call producer_tail: CTA 0 may exit while CTA 1's worker
     still has to release the last response to CTA 0's empty barrier.
     Lifted: UNKNOWN (as above)
     Twin pipeline_clc_fetch_async_bug3.pipe: VIOLATED remote-op-to-exited-cta (cta1.w0
     arrive targets clc.empty[0]@cta0 after CTA 0 exited)
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass.pipeline import (
    Agent,
    CooperativeGroup,
    PipelineClcFetchAsync,
    PipelineUserType,
    make_pipeline_state,
    pipeline_init_arrive,
    pipeline_init_wait,
)

ARCH = "sm_100a"
BUGS = (1, 2, 3)

THREADS = 64
WORKER_WARP = 0
SCHED_WARP = 1
CLUSTER = (2, 1, 1)
RESPONSE_BYTES = 16


def _storage(stages):
    @cute.struct
    class SharedStorage:
        clc_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]
        clc_response: cute.struct.Align[cute.struct.MemRange[cutlass.Int128, stages], 16]
        out: cute.struct.MemRange[cutlass.Int32, 32]

    return SharedStorage


@cute.kernel
def pipeline_clc_fetch_async_kernel(stages: cutlass.Constexpr, bug: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    lane = tidx % 32
    warp_idx = cute.arch.warp_idx()
    warp_idx = cute.arch.make_warp_uniform(warp_idx)
    cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cluster_size = CLUSTER[0] * CLUSTER[1]

    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(_storage(stages))
    response = storage.clc_response.data_ptr()
    sout = storage.out.get_tensor(cute.make_layout(32))

    consumer_threads = 32 * (1 + cluster_size)
    if cutlass.const_expr(bug == 1):
        consumer_threads = 32 * cluster_size
    clc = PipelineClcFetchAsync.create(
        barrier_storage=storage.clc_mbar.data_ptr(),
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, consumer_threads),
        tx_count=RESPONSE_BYTES,
        cta_layout_vmnk=cute.make_layout((1, cluster_size, 1, 1)),
        defer_sync=True,
    )
    pipeline_init_arrive(cluster_shape_mn=CLUSTER[:2])
    pipeline_init_wait(cluster_shape_mn=CLUSTER[:2])

    if warp_idx == SCHED_WARP:
        if cta_rank == 0:  # the scheduler: producer and consumer of the responses
            producer = make_pipeline_state(PipelineUserType.ProducerConsumer, stages)
            consumer = make_pipeline_state(PipelineUserType.Consumer, stages)
            valid = cutlass.Boolean(True)
            while valid:
                clc.producer_acquire(producer)
                with cute.arch.elect_one():
                    cute.arch.issue_clc_query(
                        clc.producer_get_barrier(producer), response + producer.index
                    )
                producer.advance()
                clc.consumer_wait(consumer)
                _, _, _, is_valid = cute.arch.clc_response(response + consumer.index)
                valid = is_valid != 0
                clc.consumer_release(consumer)
                consumer.advance()
            if cutlass.const_expr(bug != 3):
                clc.producer_tail(producer)

    if warp_idx == WORKER_WARP:  # one worker warp per CTA
        consumer = make_pipeline_state(PipelineUserType.Consumer, stages)
        tiles = cutlass.Int32(1)  # the CTA's own first tile
        valid = cutlass.Boolean(True)
        while valid:
            clc.consumer_wait(consumer)
            m, _, _, is_valid = cute.arch.clc_response(response + consumer.index)
            valid = is_valid != 0
            tiles += m
            if cutlass.const_expr(bug == 2):
                with cute.arch.elect_one():
                    clc.consumer_release(consumer)
            else:
                clc.consumer_release(consumer)
            consumer.advance()
        sout[lane] = tiles


@cute.jit
def pipeline_clc_fetch_async_host(stages: cutlass.Constexpr, bug: cutlass.Constexpr,
                                  clusters: cutlass.Constexpr):
    pipeline_clc_fetch_async_kernel(stages, bug).launch(
        grid=(CLUSTER[0] * clusters, CLUSTER[1], CLUSTER[2]),
        block=(THREADS, 1, 1),
        cluster=CLUSTER,
        smem=_storage(stages).size_in_bytes(),
    )


def pipeline_clc_fetch_async(stages: int = 1, bug: int = 0, clusters: int = 3):
    """``clusters``: clusters in the grid (a grid of n lets n - 1 try_cancel calls
    succeed, so the scheduler loop runs up to n times)."""
    return cute.compile(pipeline_clc_fetch_async_host, stages, bug, clusters)
