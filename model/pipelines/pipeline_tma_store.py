"""``PipelineTmaStore``: the epilogue's TMA-store pipeline (``cutlass/pipeline/sm90.py``,
research note 6.4).  It has no mbarriers: ``producer_commit`` closes the issuing thread's
bulk stores into a group (``cp.async.bulk.commit_group``), ``producer_acquire`` waits
until at most ``num_stages - 1`` groups still read shared memory
(``cp.async.bulk.wait_group.read``), ``producer_tail`` waits for all of them.  Bulk-group
state is per thread, so only the warp that issued the stores is protected by its own
acquire; another warp's acquire waits for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program import BulkCommit, BulkWaitRead
from .base import PipelineBase, PipelineDecl, group_count


@dataclass(frozen=True)
class PipelineTmaStore(PipelineBase):
    CLASS = "PipelineTmaStore"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineTmaStore":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        kw.pop("name", None)
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (), f"{var}.smem", "none"))
        return cls(decl, cx.cta)

    def m_producer_commit(self, cx: Any) -> None:
        cx.emit(BulkCommit(loc=cx.loc, label=f"{self.decl.var}.producer_commit(): "
                           "cp.async.bulk.commit_group"))

    def m_producer_acquire(self, cx: Any) -> None:
        n = self.decl.stages - 1
        cx.emit(BulkWaitRead(n=n, loc=cx.loc, label=f"{self.decl.var}.producer_acquire(): "
                             f"cp.async.bulk.wait_group.read {n}"))

    def m_producer_tail(self, cx: Any) -> None:
        cx.emit(BulkWaitRead(n=0, loc=cx.loc, label=f"{self.decl.var}.producer_tail(): "
                             "cp.async.bulk.wait_group.read 0"))

    def _no_consumer(self, cx: Any, *a: Any, **k: Any) -> None:
        cx.error("PipelineTmaStore has no consumer side (consumer_wait/consumer_release "
                 "assert in CUTLASS)")

    m_consumer_wait = _no_consumer
    m_consumer_release = _no_consumer
