"""Plain shared-memory regions: scratch, staging and aliased (union) buffers.

Not a pipeline class: a region has no barriers, only stage buffers that threads, TMA
and cp.async read and write (``read``/``write``/``tma_load``/``tma_store``/``cp_async``
in ``.pipe``).  Whatever orders the accesses -- ``bar.sync``, a raw mbarrier, a
cp.async group wait, a pipeline's own barriers -- is the kernel's business, and a race
between them is reported by the same ghost checks as for pipeline stages
(``model/system.py`` ``System.ghost``):

* a read while a write to the region is in flight, or of a region never written, is
  ``read-before-full``;
* a thread's read *holds* the region until the warp's next release (an arrive,
  ``bar.sync``/``bar.arrive``, a cluster arrive, its exit): a write by anyone else that
  starts in between is ``overwrite-before-release`` (the read may not have happened yet);
* thread stores racing a TMA or cp.async write to the same region are
  ``overwrite-before-release``.

Granularity is the stage: two warps storing to one stage are taken to store to disjoint
parts of it (a warp's slice of an epilogue tile), so they do not race each other; a
warp reading back its own unreleased stores is ordered by program order.

Aliasing: ``smem_buffer(alias=x)`` is the same memory as ``x`` (a region or a pipeline's
stage buffers): its stage ``i`` *is* stage ``i`` of ``x``, as members of a C++ union of
shared storage, or two ``@cute.struct`` views of one allocation, reuse the same bytes.
Every access to either name is checked against every access to the other.

Sources: PTX ISA 8.8, "Memory Consistency Model" (a release orders the thread's earlier
accesses; the async proxy is ordered with the generic proxy only by barriers and
``fence.proxy.async``); CUTLASS's shared storage unions (``cutlass/gemm/kernel/*``,
``SharedStorage``) for aliasing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import PipelineBase, PipelineDecl

#: ``PipelineDecl.cls`` of a region
SMEM_BUFFER = "smem_buffer"


@dataclass(frozen=True)
class SmemBuffer(PipelineBase):
    """One warp's view of a plain shared-memory region of ``decl.stages`` stages."""

    CLASS = SMEM_BUFFER

    @classmethod
    def declare(cls, cx: Any, var: str, stages: int, alias: Any = None) -> "SmemBuffer":
        buffer = var  # the region is its own buffer (named like a lifted smem field)
        if alias is not None:
            if not isinstance(alias, PipelineBase) or not alias.decl.stages:
                cx.error(f"smem_buffer(alias=...): expected a region or a pipeline with "
                         f"stage buffers, got {_show(alias)}")
            if stages > alias.decl.stages:
                cx.error(f"smem_buffer(stages={stages}, alias={alias.decl.var}): the alias "
                         f"has only {alias.decl.stages} stages")
            buffer = alias.decl.buffer
        decl = cx.register(PipelineDecl(var, cls.CLASS, stages, (), buffer, "none"))
        return cls(decl, cx.cta)

    def read_bufs(self, cx: Any, stage: int) -> tuple:
        return (self.buf(stage),)

    def tma_target_cta(self, cta: int, rank: int) -> int:
        """A TMA load lands in the region of each destination CTA (its multicast mask)."""
        return rank

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        cx.error(f"smem_buffer {self.decl.var} has no methods (use read/write/tma_load/"
                 f"tma_store/cp_async on it)")

    def attribute(self, cx: Any, name: str) -> Any:
        if name in ("num_stages", "stages"):
            return self.decl.stages
        cx.error(f"smem_buffer {self.decl.var} has no attribute {name!r}: a region has no "
                 "methods (use read/write/tma_load/tma_store/cp_async on it) and one "
                 "attribute, num_stages")


def _show(v: object) -> str:
    from ..describe import describe

    return describe(v)
