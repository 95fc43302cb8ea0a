"""``PipelineClcFetchAsync``: the cluster-launch-control tile scheduler
(``cutlass/pipeline/sm100.py``, research note 6.9).

``full[i]`` (every CTA) counts the producer group -- one ``arrive.expect_tx(16)`` per CTA
per stage -- and receives the 16-byte response of a multicast ``try_cancel``;
``empty[i]`` counts every consumer thread of the *cluster*, but only CTA 0's is used:
``consumer_release`` arrives, per calling thread, on CTA 0 (``consumer_mask = 0``).
``producer_acquire`` waits on the running CTA's own ``empty`` (the scheduler warp runs in
CTA 0) and then lanes ``l < cluster_size`` each arm CTA ``l``'s ``full`` -- no election.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..pipeline_state import arrival_phase, fill_tag_for_acquire
from ..program import Delivery
from .base import ArrayDecl, PipelineDecl, create_effects, emit_arrive, group_count, wait_unless
from .pipeline_async import PipelineAsync
from .pipeline_tma_async import tx_count_of, vmnk_of

CLC_RESPONSE_BYTES = 16


@dataclass(frozen=True)
class PipelineClcFetchAsync(PipelineAsync):
    tx_count: int = CLC_RESPONSE_BYTES
    cluster_size: int = 1

    CLASS = "PipelineClcFetchAsync"
    SYNC = "cluster"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineClcFetchAsync":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        producer = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        consumer = group_count(cx, cx.need(kw, "consumer_group"), "consumer_group")
        tx = tx_count_of(cx, kw)
        vmnk = vmnk_of(cx, kw)
        for k in ("barrier_storage", "name", "producer_mask", "consumer_mask"):
            kw.pop(k, None)
        defer = bool(kw.pop("defer_sync", False))
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (
            ArrayDecl("full", num_stages, producer, tx), ArrayDecl("empty", num_stages, consumer)),
            f"{var}.response", cls.SYNC))
        obj = cls(decl, cx.cta, None, 0, False, False, tx, vmnk.size)
        create_effects(cx, decl, defer)
        return obj

    def own_write_bufs(self, cx: Any, stage: int) -> tuple:
        return ()

    def m_producer_acquire(self, cx: Any, state: Any, try_acquire_token: Any = None) -> None:
        st = self.check_state(cx, state, "producer_acquire")
        # the wait is on the running CTA's own empty barrier (only CTA 0's receives the
        # consumers' releases, so a scheduler warp in another CTA hangs, as in CUTLASS)
        wait_unless(cx, try_acquire_token, self.bar("empty", st.index), st,
                    f"{self.decl.var}.producer_acquire({st.describe()}): wait empty")
        arrivals = [(self.bar("full", st.index, lane), 1, self.tx_count)
                    for lane in cx.lanes if lane < self.cluster_size]
        if arrivals:
            emit_arrive(cx, arrivals, f"{self.decl.var}.producer_acquire({st.describe()}): "
                        f"lanes 0..{len(arrivals) - 1} arm full in every CTA "
                        f"(arrive.expect_tx {self.tx_count} B)",
                        phase=arrival_phase(st, "producer"))

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        self.check_state(cx, state, "producer_commit")  # the CLC response completes the bytes

    def m_consumer_release(self, cx: Any, state: Any) -> None:
        from .base import release_effects

        st = self.check_state(cx, state, "consumer_release")
        pre = release_effects(cx, self.read_bufs(cx, st.index))
        emit_arrive(cx, [(self.bar("empty", st.index, 0), len(cx.lanes), 0)],
                    f"{self.decl.var}.consumer_release({st.describe()}): arrive empty@cta0", pre,
                    phase=arrival_phase(st, "consumer"))

    def m_producer_tail(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "producer_tail")
        from .base import emit_wait

        for _ in range(self.decl.stages):
            emit_wait(cx, self.bar("empty", st.index), st,
                      f"{self.decl.var}.producer_tail: wait empty ({st.describe()})")
            st = st.advance()
        cx.set_arg(0, st)

    def clc_deliveries(self, cx: Any, st: Any) -> tuple:
        """``try_cancel ... multicast::cluster::all``: 16 bytes into every CTA's response
        buffer, completing tx on the barrier at the same offset in every CTA."""
        tag = fill_tag_for_acquire(st)
        # the response is always 16 bytes, whatever tx_count the pipeline expects
        # (PTX ISA clusterlaunchcontrol.try_cancel: complete-tx of the bytes stored)
        return tuple(Delivery(self.bar("full", st.index, r), CLC_RESPONSE_BYTES,
                              self.buf(st.index, r), tag) for r in range(self.cluster_size))
