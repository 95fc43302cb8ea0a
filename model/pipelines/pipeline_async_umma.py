"""``PipelineAsyncUmma``: AsyncThread producers feeding a tcgen05 MMA consumer -- e.g.
softmax warps writing P for the MMA (``cutlass/pipeline/sm100.py``, research note 6.7).

``full[i]`` counts ``arrive_count(producer_group)`` -- in 2-CTA mode the producers of
*both* CTAs, since every producer thread arrives on the pair leader's ``full``
(``producer_mask = rank // V * V``); ``empty[i]`` counts the consumer group (one MMA
commit).  ``consumer_release`` is an elected ``tcgen05.commit`` multicast to both CTAs of
the pair (``consumer_mask = image(mode 0) | image(mode 0 at peer)``), local when V == 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..cluster import mask_ranks
from .base import (ArrayDecl, PipelineDecl, create_effects, elected, emit_umma_commit,
                   group_count, release_effects)
from .pipeline_async import PipelineAsync
from .pipeline_tma_async import cluster_mask, vmnk_of


@dataclass(frozen=True)
class PipelineAsyncUmma(PipelineAsync):
    consumer_mask: Optional[int] = None
    cta_group: int = 1
    peer: int = 0

    CLASS = "PipelineAsyncUmma"
    SYNC = "cluster"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineAsyncUmma":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        producer = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        consumer = group_count(cx, cx.need(kw, "consumer_group"), "consumer_group")
        vmnk = vmnk_of(cx, kw)
        for k in ("barrier_storage", "name"):
            kw.pop(k, None)
        defer = bool(kw.pop("defer_sync", False))
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (
            ArrayDecl("full", num_stages, producer), ArrayDecl("empty", num_stages, consumer)),
            f"{var}.buf", cls.SYNC))
        if vmnk.V == 1:
            pdst, cmask = None, None
        else:
            pdst = vmnk.leader(cx.cta)
            cmask = cluster_mask(cx, vmnk, lambda: vmnk.peer_cta_mask(cx.cta),
                                 "the peer CTA mask (_compute_peer_cta_mask)")
        obj = cls(decl, cx.cta, pdst, None, False, False, cmask, 2 if vmnk.V == 2 else 1,
                  vmnk.peer(cx.cta))
        create_effects(cx, decl, defer)
        return obj

    def read_bufs(self, cx: Any, stage: int) -> tuple:
        if self.cta_group == 2:
            return tuple(sorted({self.buf(stage), self.buf(stage, self.peer)}))
        return (self.buf(stage),)

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
