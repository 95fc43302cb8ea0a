"""``PipelineTmaUmma``: a TMA producer feeding a tcgen05 MMA consumer -- the Blackwell
mainloop, optionally 2-CTA (``cutlass/pipeline/sm100.py``, research note 6.6), with
FlashAttention's ``extra_tx_count``.

Barriers: ``full[i]`` counts ``arrive_count(producer_group)`` and expects ``tx_count``
bytes per stage *in the pair leader* (2-CTA TMA completions go to the leader's barrier);
``empty[i]`` counts the user's consumer group (``N + M - 1`` in the examples) or, with
``enable_multicast_signaling``, ``mcast_size * mma_warps``.

Derived at ``create``: ``consumer_mask = _compute_mcast_arrival_mask`` (a | b | a_peer |
b_peer) for clusters > 1, ``is_leader_cta = (v == 0)``, ``cta_group`` 2 iff V == 2.
``producer_acquire`` waits on the *local* empty barrier in every CTA, and only the leader
arms ``full``; ``consumer_release`` is one elected ``tcgen05.commit`` that arrives on
``empty`` in every CTA of ``consumer_mask`` once the MMAs issued before it complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..cluster import ClusterVMNK, mask_ranks
from ..program import BufRef
from ..pipeline_state import arrival_phase
from .base import (ArrayDecl, PipelineDecl, create_effects, elected, emit_arrive,
                   emit_umma_commit, group_count, release_effects, wait_unless)
from .pipeline_async import PipelineAsync
from .pipeline_tma_async import (cluster_mask, mcast_mode_of, multicast_consumer_count,
                                 tx_count_of, vmnk_of)


@dataclass(frozen=True)
class PipelineTmaUmma(PipelineAsync):
    tx_count: int = 0
    leader: bool = True
    consumer_mask: Optional[int] = None
    cta_group: int = 1
    peer: int = 0
    leader_rank: int = 0

    CLASS = "PipelineTmaUmma"
    SYNC = "cluster"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineTmaUmma":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        producer = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        consumer = group_count(cx, cx.need(kw, "consumer_group"), "consumer_group")
        tx = tx_count_of(cx, kw)
        vmnk = vmnk_of(cx, kw)
        mode = mcast_mode_of(cx, kw)
        if kw.pop("enable_multicast_signaling", False):
            consumer = multicast_consumer_count(cx, vmnk, mode, consumer)
        for k in ("barrier_storage", "name"):
            kw.pop(k, None)
        defer = bool(kw.pop("defer_sync", False))
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (
            ArrayDecl("full", num_stages, producer, tx), ArrayDecl("empty", num_stages, consumer)),
            f"{var}.buf", cls.SYNC))
        obj = cls(decl, cx.cta, None, None, False, False, tx, *_umma_side(cx, vmnk, cx.cta, mode))
        create_effects(cx, decl, defer)
        return obj

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "is_leader_cta":
            return self.leader
        if name == "cta_group":
            return self.cta_group
        return super().attribute(cx, name)

    def read_bufs(self, cx: Any, stage: int) -> tuple:
        """The MMA of a 2-CTA pair reads the stage in both CTAs."""
        if self.cta_group == 2:
            return tuple(sorted({self.buf(stage), self.buf(stage, self.peer)}))
        return (self.buf(stage),)

    def own_write_bufs(self, cx: Any, stage: int) -> tuple:
        return ()

    def m_producer_acquire(self, cx: Any, state: Any, try_acquire_token: Any = None,
                           expected_tx: Any = None, extra_tx_count: Any = 0) -> None:
        st = self.check_state(cx, state, "producer_acquire")
        wait_unless(cx, try_acquire_token, self.bar("empty", st.index), st,
                    f"{self.decl.var}.producer_acquire({st.describe()}): wait empty")
        if not self.leader:
            return
        if not elected(cx, f"{self.decl.var}.producer_acquire"):
            return
        tx = self.tx_count if expected_tx is None else cx.as_int(expected_tx, "expected_tx")
        tx += cx.as_int(extra_tx_count, "extra_tx_count")
        emit_arrive(cx, [(self.bar("full", st.index), 1, tx)],
                    f"{self.decl.var}.producer_acquire({st.describe()}): leader arms full "
                    f"(arrive.expect_tx {tx} B)", phase=arrival_phase(st, "producer"))

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        self.check_state(cx, state, "producer_commit")  # no-op: the TMA completes the bytes

    def m_consumer_release(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "consumer_release")
        unhold = release_effects(cx, self.read_bufs(cx, st.index))
        if not elected(cx, f"{self.decl.var}.consumer_release (tcgen05.commit)"):
            return
        targets = mask_ranks(self.consumer_mask) if self.consumer_mask is not None else (self.cta,)
        emit_umma_commit(cx, tuple(self.bar("empty", st.index, r) for r in targets),
                         f"{self.decl.var}.consumer_release({st.describe()}): tcgen05.commit "
                         f"-> empty at cta {', '.join(map(str, targets))}", unhold,
                         cta_group=self.cta_group)

    def tma_target_cta(self, issuing_cta: int, dest_cta: int) -> int:
        """``cta_group::2``: the bytes landing in ``dest_cta`` complete on the barrier of the
        CTA of its pair with the parity of the barrier's CTA -- CUTLASS clears the peer bit,
        so that is the pair leader (PTX ISA cp.async.bulk.tensor .cta_group::2)."""
        if self.cta_group == 2:
            return dest_cta & ~1
        return dest_cta


def _umma_side(cx: Any, vmnk: ClusterVMNK, cta: int, mode: tuple[int, int]) -> tuple:
    """consumer_mask, is_leader_cta, cta_group, peer and leader rank of ``cta``."""
    if vmnk.size == 1:
        mask, leader = None, True
    else:
        mask = cluster_mask(cx, vmnk, lambda: vmnk.mcast_arrival_mask(cta, mode),
                            "the multicast arrival mask (_compute_mcast_arrival_mask)")
        leader = vmnk.is_leader(cta)
    return (leader, mask, 2 if vmnk.V == 2 else 1, vmnk.peer(cta), vmnk.leader(cta))


__all__ = ["PipelineTmaUmma", "BufRef"]
