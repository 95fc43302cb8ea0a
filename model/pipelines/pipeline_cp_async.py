"""``PipelineCpAsync``: ``cp.async`` producers feeding AsyncThread consumers
(``cutlass/pipeline/sm90.py``, research note 6.2), with FlashAttention's
``elect_one_release``/``syncwarp_before_release`` options.

Same barriers as ``PipelineAsync``; ``producer_commit`` is ``cp.async.mbarrier.arrive.noinc``
by every calling producer thread: each arrival is deferred until that thread's earlier
``cp.async`` copies complete and counts toward ``full``'s expected count, so ``full``
counts the committing threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import emit_cp_async_arrive
from .pipeline_async import PipelineAsync


@dataclass(frozen=True)
class PipelineCpAsync(PipelineAsync):
    CLASS = "PipelineCpAsync"

    def own_write_bufs(self, cx: Any, stage: int) -> tuple:
        return ()  # the cp.async copies write the stage (cp_async builtin)

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "producer_commit")
        if self.producer_dst is not None:
            cx.error("PipelineCpAsync commits on the local barrier (cp.async.mbarrier.arrive "
                     "has no remote form); drop producer_mask")
        emit_cp_async_arrive(cx, self.bar("full", st.index),
                             f"{self.decl.var}.producer_commit({st.describe()}): "
                             f"cp.async.mbarrier.arrive.noinc x{len(cx.lanes)} lanes")
