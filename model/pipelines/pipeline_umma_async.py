"""``PipelineUmmaAsync``: a tcgen05 MMA producer feeding AsyncThread consumers -- the
Blackwell accumulator pipeline (``cutlass/pipeline/sm100.py``, research note 6.8).

``full[i]`` counts the producer group (one MMA commit); ``empty[i]`` counts the consumer
group (examples: one elected release per epilogue warp of both CTAs, ``4 * V``).
``producer_commit`` is an elected ``tcgen05.commit`` to the CTAs of the pair
(``make_layout_image_mask(mode 0)``; local for a cluster of one).  ``consumer_release``
arrives, per calling thread, on the pair leader's ``empty`` (``rank // 2 * 2``) when V ==
2, locally otherwise.  ``producer_tail`` runs only on even ranks: it advances S-1 times
and waits once -- for the release of the last produced iteration only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from ..cluster import mask_ranks
from ..pipeline_state import fill_tag_for_acquire
from ..program import GhostEffect
from .base import (ArrayDecl, PipelineDecl, create_effects, elected, emit_umma_commit,
                   emit_wait, group_count, wait_unless)
from .pipeline_async import PipelineAsync
from .pipeline_tma_async import cluster_mask, vmnk_of


@dataclass(frozen=True)
class PipelineUmmaAsync(PipelineAsync):
    producer_mask: Optional[int] = None
    cta_group: int = 1
    peer: int = 0

    CLASS = "PipelineUmmaAsync"
    SYNC = "cluster"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineUmmaAsync":
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
            f"{var}.acc", cls.SYNC))
        pmask = None if vmnk.size == 1 else cluster_mask(
            cx, vmnk, lambda: vmnk.pair_mask(cx.cta), "the TMEM sync mask (_compute_tmem_sync_mask)")
        cdst = None if vmnk.V == 1 else cx.cta // 2 * 2
        obj = cls(decl, cx.cta, None, cdst, False, False, pmask, 2 if vmnk.V == 2 else 1,
                  vmnk.peer(cx.cta))
        create_effects(cx, decl, defer)
        return obj

    def acc_bufs(self, stage: int) -> tuple:
        """The accumulator stage the MMA writes: in both CTAs of a 2-CTA pair."""
        if self.cta_group == 2:
            return tuple(sorted({self.buf(stage), self.buf(stage, self.peer)}))
        return (self.buf(stage),)

    def m_producer_acquire(self, cx: Any, state: Any, try_acquire_token: Any = None) -> None:
        st = self.check_state(cx, state, "producer_acquire")
        tag = fill_tag_for_acquire(st)
        bufs = self.acc_bufs(st.index)
        post = tuple(GhostEffect("write_begin", b, tag) for b in bufs)
        cx.add_umma_effects(tuple(GhostEffect("write_end", b, tag) for b in bufs))
        wait_unless(cx, try_acquire_token, self.bar("empty", st.index), st,
                    f"{self.decl.var}.producer_acquire({st.describe()}): wait empty", post)

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "producer_commit")
        if not elected(cx, f"{self.decl.var}.producer_commit (tcgen05.commit)"):
            return
        targets = mask_ranks(self.producer_mask) if self.producer_mask is not None else (self.cta,)
        emit_umma_commit(cx, tuple(self.bar("full", st.index, r) for r in targets),
                         f"{self.decl.var}.producer_commit({st.describe()}): tcgen05.commit "
                         f"-> full at cta {', '.join(map(str, targets))}",
                         cta_group=self.cta_group)

    def m_producer_tail(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "producer_tail")
        if self.cta % 2 == 0:
            for _ in range(self.decl.stages - 1):
                st = st.advance()
            emit_wait(cx, self.bar("empty", st.index), st,
                      f"{self.decl.var}.producer_tail: wait empty ({st.describe()})")
        cx.set_arg(0, st)
