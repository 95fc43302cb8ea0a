"""The property catalogue: what each property means for a kernel author.

The conditions themselves are computed by the model's transition functions
(``model/mbarrier.py``, ``model/system.py``); this module only documents them.  The
long form with sources is ``spec/properties.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.properties import ALL_PROPERTIES, CATALOGUE_RANK, Prop


@dataclass(frozen=True)
class PropertyInfo:
    name: str
    summary: str
    source: str


CATALOGUE: tuple[PropertyInfo, ...] = (
    PropertyInfo(Prop.READ_BEFORE_FULL,
                 "a consumer reads a stage (or a TMA store/MMA reads smem) before its data is "
                 "complete, or reads another fill than the one it waited for",
                 "CUTLASS pipeline contract; PTX ISA mbarrier acquire semantics"),
    PropertyInfo(Prop.OVERWRITE_BEFORE_RELEASE,
                 "a producer (thread stores, TMA, MMA) starts writing a stage a consumer still "
                 "owns (between its wait and its release)",
                 "CUTLASS pipeline contract"),
    PropertyInfo(Prop.USE_BEFORE_INIT,
                 "an mbarrier is used before its init is visible (missing fence.mbarrier_init "
                 "+ cluster barrier for other CTAs, or CTA barrier for local threads)",
                 "PTX ISA mbarrier.init, fence.mbarrier_init"),
    PropertyInfo(Prop.DOUBLE_INIT, "mbarrier.init on a barrier that is already valid",
                 "PTX ISA mbarrier.init"),
    PropertyInfo(Prop.ARRIVAL_OVERFLOW,
                 "more arrivals than the phase expects (pending count below zero): a double "
                 "release, or per-thread arrivals where the count is per warp",
                 "PTX ISA mbarrier count ranges"),
    PropertyInfo(Prop.TX_OVERFLOW, "the tx-count leaves [-(2^20-1), 2^20-1]",
                 "PTX ISA mbarrier tx-count range"),
    PropertyInfo(Prop.COUNT_OUT_OF_RANGE, "an arrival count outside [1, 2^20-1]",
                 "PTX ISA mbarrier.init, cp.async.mbarrier.arrive"),
    PropertyInfo(Prop.ARRIVE_DROP_TO_ZERO, "arrive_drop lowers the expected count to zero",
                 "PTX ISA mbarrier.arrive_drop"),
    PropertyInfo(Prop.UNSPECIFIED_EXPECT_TX,
                 "a bare expect_tx brings tx to 0 with no arrival pending (the PTX ISA does "
                 "not say whether the phase completes)", "PTX ISA mbarrier.expect_tx"),
    PropertyInfo(Prop.STALE_PARITY,
                 "a waiter two or more phases behind its barrier (parity aliasing), or "
                 "waiting for a phase that has not begun", "PTX ISA mbarrier.try_wait.parity"),
    PropertyInfo(Prop.PHASE_OVERRUN,
                 "an arrive-on in phase k+1 before any wait returned True for phase k",
                 "PTX ISA mbarrier usage rule"),
    PropertyInfo(Prop.REMOTE_WAIT, "a wait on another CTA's mbarrier (not supported)",
                 "PTX ISA mbarrier.try_wait"),
    PropertyInfo(Prop.DEADLOCK,
                 "no warp can move and no asynchronous operation is in flight, but some warp "
                 "has not exited", "liveness"),
    PropertyInfo(Prop.STARVATION,
                 "a reachable loop in which some warp waits for ever although everything "
                 "asynchronous completes (lasso)", "liveness under fairness"),
    PropertyInfo(Prop.DANGLING_ARRIVE_AT_EXIT,
                 "asynchronous work (TMA bytes, a commit, cp.async, a bulk store) lands in or "
                 "reads a CTA after that CTA exited", "PTX ISA async operations; CUTLASS tail"),
    PropertyInfo(Prop.REMOTE_OP_TO_EXITED_CTA,
                 "a remote arrive, multicast copy or commit targets a CTA that has exited",
                 "PTX ISA shared::cluster lifetime; CUTLASS producer_tail"),
    PropertyInfo(Prop.MASK_OUTSIDE_CLUSTER,
                 "a multicast mask or destination rank names a CTA outside the cluster",
                 "PTX ISA ctaMask"),
    PropertyInfo(Prop.NAMED_BARRIER_MISUSE,
                 "named barrier id outside 0..15, count not a multiple of 32 or above the "
                 "block, differing counts in one generation, a warp arriving twice, an aligned "
                 "barrier in divergent code", "PTX ISA bar/barrier"),
    PropertyInfo(Prop.CLUSTER_BARRIER_MISUSE,
                 "barrier.cluster arrive twice before waiting, or wait without arrive",
                 "PTX ISA barrier.cluster"),
    PropertyInfo(Prop.ROLE_MISUSE,
                 "a warp calls both sides of one pipeline without being declared a "
                 "ProducerConsumer (e.g. a producer waiting as a consumer), or a CLC query "
                 "after a failed response",
                 "CUTLASS sm90_pipeline.hpp Params::role / ThreadCategory, "
                 "pipeline_check_is_producer/consumer; PTX ISA clusterlaunchcontrol"),
    PropertyInfo(Prop.ELECT_MISUSE,
                 "elect.sync reached by one lane (election nested in elect_one())",
                 "PTX ISA elect.sync"),
    PropertyInfo(Prop.MISSING_PROXY_FENCE,
                 "shared memory written with ordinary stores is read by the async proxy (TMA "
                 "store, MMA) without fence.proxy.async", "PTX ISA memory consistency: proxies"),
    PropertyInfo(Prop.TMEM_MISUSE,
                 "tensor memory used outside its allocation (an accumulator written or read "
                 "before tcgen05.alloc or after tcgen05.dealloc, the address loaded before "
                 "the allocating warp published it), freed while an MMA or a reader still "
                 "uses it, freed twice or never (a CTA exits with it allocated), allocated "
                 "after relinquish_alloc_permit, or a cta_group::2 alloc/dealloc its peer CTA "
                 "never takes part in",
                 "PTX ISA tcgen05.alloc/dealloc/relinquish_alloc_permit, Tensor Memory "
                 "Allocation; CuTe DSL TmemAllocator"),
    PropertyInfo(Prop.GMEM_RACE,
                 "global memory shared by CTAs of the grid accessed without a gpu-scope "
                 "release/acquire pair between them: a partial read (or overwritten) before "
                 "its writer's stores were released through a flag this warp acquired (no "
                 "wait, a relaxed spin, a relaxed or early flag update), stores of two CTAs "
                 "in flight at once, or data read before anything was written",
                 "PTX ISA memory consistency model (gpu scope, release/acquire patterns, "
                 "release sequences), red/atom/ld.acquire/st.release; CUTLASS "
                 "cutlass/barrier.h, cutlass/semaphore.h"),
    PropertyInfo(Prop.INSUFFICIENT_SCOPE,
                 "(--memory-model strict) data visible only inside one CTA is read by "
                 "another: ordinary stores released only at .cta scope (the default of "
                 "mbarrier.arrive, remote arrives included), or TMA bytes forwarded by a "
                 "thread of the CTA whose barrier they completed on without a "
                 ".release.cluster",
                 "PTX ISA memory consistency model: scope, morally strong, release patterns"),
)

assert {p.name for p in CATALOGUE} == set(ALL_PROPERTIES), \
    set(ALL_PROPERTIES) ^ {p.name for p in CATALOGUE}

BY_NAME = {p.name: p for p in CATALOGUE}

#: what a deadlock is called, and how every engine words it
DEADLOCK = "deadlock"
DEADLOCK_MSG = ("no warp can move and no asynchronous operation is in flight, but some "
                "warps have not exited")
#: the order among counterexamples of one length (catalogue order): every engine reports
#: the first, so the answer does not depend on the search order
PRIORITY = CATALOGUE_RANK
