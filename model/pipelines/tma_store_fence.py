"""``TmaStoreFence`` (``cutlass/pipeline/helpers.py``, research note 4.3): the sync object
of ``PipelineTmaStore``, usable directly.  ``arrive`` is ``cp.async.bulk.commit_group``,
``wait`` is ``cp.async.bulk.wait_group.read num_stages-1``, ``tail`` waits for every group.
Bulk-group state belongs to the issuing thread (PTX ISA ``cp.async.bulk.commit_group``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program import BulkCommit, BulkWaitRead
from ..errors import did_you_mean, methods_of
from .dispatch import call_method


@dataclass(frozen=True)
class TmaStoreFence:
    num_stages: int

    CLASS = "TmaStoreFence"

    @classmethod
    def construct(cls, cx: Any, args: tuple, kw: dict) -> "TmaStoreFence":
        n = args[0] if args else kw.pop("num_stages", 0)
        cx.no_more_kwargs(kw, "TmaStoreFence(...)")
        if not isinstance(n, int) or n < 0:
            cx.error("TmaStoreFence(num_stages) needs a static int >= 0")
        return cls(n)

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        fn = getattr(self, "m_" + name, None)
        if fn is None:
            cx.error(f"TmaStoreFence has no method {name}()",
                     did_you_mean(name, methods_of(self)))
        return call_method(cx, "TmaStoreFence", name, fn, args, kwargs)

    def attribute(self, cx: Any, name: str) -> Any:
        cx.error(f"TmaStoreFence has no attribute {name!r}")

    def m_arrive(self, cx: Any) -> None:
        cx.emit(BulkCommit(loc=cx.loc, label="TmaStoreFence.arrive(): commit_group"))

    def m_wait(self, cx: Any) -> None:
        n = max(self.num_stages - 1, 0)
        cx.emit(BulkWaitRead(n=n, loc=cx.loc, label=f"TmaStoreFence.wait(): wait_group.read {n}"))

    def m_arrive_and_wait(self, cx: Any) -> None:
        self.m_arrive(cx)
        self.m_wait(cx)

    def m_tail(self, cx: Any) -> None:
        cx.emit(BulkWaitRead(n=0, loc=cx.loc, label="TmaStoreFence.tail(): wait_group.read 0"))
