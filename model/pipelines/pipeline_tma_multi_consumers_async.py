"""``PipelineTmaMultiConsumersAsync``: one TMA producer, two kinds of consumers sharing
one ``empty`` array -- a tcgen05 MMA warp and AsyncThread warps
(``cutlass/pipeline/sm100.py``, research note 6.10).

``empty[i]`` counts ``umma_count + async_count`` (each recomputed as ``mcast_size * warps``
with ``enable_multicast_signaling``).  ``consumer_release(state, PipelineOp.TCGen05Mma)``
is an elected ``tcgen05.commit`` to ``_compute_mcast_arrival_mask``;
``consumer_release(state, PipelineOp.AsyncThread)`` arrives from the signalling lanes of
``_init_empty_barrier_arrive_signal_2sm`` (which, unlike PipelineTmaAsync, does not
compare the V coordinate) -- or, on the deprecated per-lane path (a Thread group whose
size is a multiple of 32, clusters of one only), from every lane locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..cluster import mask_ranks
from ..groups import WARP_SIZE, Agent, CooperativeGroup
from ..pipeline_state import arrival_phase
from .base import (ArrayDecl, PipelineDecl, create_effects, elected, emit_arrive,
                   emit_umma_commit, group_count, release_effects, wait_unless)
from .pipeline_async import PipelineAsync
from .pipeline_tma_async import mcast_mode_of, multicast_consumer_count, tx_count_of, vmnk_of
from .pipeline_tma_umma import _umma_side


def _show(v: object) -> str:
    """A value in a message, as a .pipe author writes it (model/compile.py describe)."""
    from ..describe import describe

    return describe(v)


@dataclass(frozen=True)
class PipelineTmaMultiConsumersAsync(PipelineAsync):
    tx_count: int = 0
    leader: bool = True
    consumer_mask: Optional[int] = None
    cta_group: int = 1
    peer: int = 0
    leader_rank: int = 0
    per_lane: bool = False
    signal_dsts: tuple[int, ...] = ()
    cluster_size: int = 1

    CLASS = "PipelineTmaMultiConsumersAsync"
    SYNC = "cluster"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineTmaMultiConsumersAsync":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        producer = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        g_umma = cx.need(kw, "consumer_group_umma")
        g_async = cx.need(kw, "consumer_group_async")
        n_umma = group_count(cx, g_umma, "consumer_group_umma")
        n_async = group_count(cx, g_async, "consumer_group_async")
        if g_umma.agent != g_async.agent:
            cx.error("UMMA and AsyncThread consumer groups must be the same agent")
        tx = tx_count_of(cx, kw)
        vmnk = vmnk_of(cx, kw)
        mode = mcast_mode_of(cx, kw)
        multicast = bool(kw.pop("enable_multicast_signaling", False))
        force = kw.pop("force_deprecated_per_lane_signaling", None)
        if multicast and force:
            cx.error("enable_multicast_signaling unsupported with "
                     "force_deprecated_per_lane_signaling")
        if multicast:
            n_umma = multicast_consumer_count(cx, vmnk, mode, n_umma)
            n_async = multicast_consumer_count(cx, vmnk, mode, n_async)

        def looks_legacy(agent: str, size: int) -> bool:
            return agent == Agent.Thread and size >= WARP_SIZE and size % WARP_SIZE == 0

        if force is None:
            force = not multicast and (looks_legacy(g_umma.agent, n_umma)
                                       or looks_legacy(g_async.agent, n_async))
        if force and vmnk.size > 1:
            cx.error("force_deprecated_per_lane_signaling (implied by a Thread consumer group "
                     "whose size is a multiple of 32) does not support clusters > 1",
                     hint="count one arrival per consumer warp and per multicast partner")
        for k in ("barrier_storage", "name", "tidx"):
            kw.pop(k, None)
        defer = bool(kw.pop("defer_sync", False))
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (
            ArrayDecl("full", num_stages, producer, tx),
            ArrayDecl("empty", num_stages, n_umma + n_async)), f"{var}.buf", cls.SYNC))
        targets = set(vmnk.tma_empty_signal_targets(cx.cta, mode, compare_v=False))
        dsts = tuple(lane if lane in targets else -1 for lane in range(min(vmnk.size, 32)))
        obj = cls(decl, cx.cta, None, None, False, False, tx,
                  *_umma_side(cx, vmnk, cx.cta, mode), bool(force), dsts, vmnk.size)
        create_effects(cx, decl, defer)
        return obj

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "is_leader_cta":
            return self.leader
        return super().attribute(cx, name)

    def own_write_bufs(self, cx: Any, stage: int) -> tuple:
        return ()

    def read_bufs(self, cx: Any, stage: int) -> tuple:
        return (self.buf(stage),)

    def m_producer_acquire(self, cx: Any, state: Any, try_acquire_token: Any = None) -> None:
        st = self.check_state(cx, state, "producer_acquire")
        wait_unless(cx, try_acquire_token, self.bar("empty", st.index), st,
                    f"{self.decl.var}.producer_acquire({st.describe()}): wait empty")
        if self.leader and elected(cx, f"{self.decl.var}.producer_acquire"):
            emit_arrive(cx, [(self.bar("full", st.index), 1, self.tx_count)],
                        f"{self.decl.var}.producer_acquire({st.describe()}): arrive.expect_tx "
                        f"{self.tx_count} B", phase=arrival_phase(st, "producer"))

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        self.check_state(cx, state, "producer_commit")

    def m_consumer_release(self, cx: Any, state: Any, op_type: Any = "TCGen05Mma") -> None:
        st = self.check_state(cx, state, "consumer_release")
        unhold = release_effects(cx, self.read_bufs(cx, st.index))
        if op_type == "TCGen05Mma":
            if not elected(cx, f"{self.decl.var}.consumer_release (tcgen05.commit)"):
                return
            targets = mask_ranks(self.consumer_mask) if self.consumer_mask is not None \
                else (self.cta,)
            emit_umma_commit(cx, tuple(self.bar("empty", st.index, r) for r in targets),
                             f"{self.decl.var}.consumer_release({st.describe()}, UMMA): "
                             f"tcgen05.commit -> empty at cta {', '.join(map(str, targets))}",
                             unhold, cta_group=self.cta_group)
            return
        if op_type != "AsyncThread":
            cx.error(f"consumer_release op_type must be PipelineOp.TCGen05Mma or "
                     f"PipelineOp.AsyncThread, got {_show(op_type)}")
        arrivals = []
        for lane in cx.lanes:
            if self.per_lane:
                arrivals.append((self.bar("empty", st.index), 1, 0))
            elif lane < len(self.signal_dsts) and self.signal_dsts[lane] >= 0:
                dst = self.signal_dsts[lane] if self.cluster_size > 1 else self.cta
                arrivals.append((self.bar("empty", st.index, dst), 1, 0))
        if arrivals:
            emit_arrive(cx, arrivals, f"{self.decl.var}.consumer_release({st.describe()}, "
                        "AsyncThread): arrive empty", unhold,
                        phase=arrival_phase(st, "consumer"))

    def m_make_participants(self, cx: Any) -> tuple:
        p, c = super().m_make_participants(cx)
        return (p, c, None)

    def tma_target_cta(self, issuing_cta: int, dest_cta: int) -> int:
        return dest_cta & ~1 if self.cta_group == 2 else dest_cta
