"""Global memory shared by the CTAs of several clusters: flags and data buffers.

Not pipeline classes: what a grid of clusters uses to order work between CTAs that share
no barrier (split-K / stream-K partial-sum fixups, serial reductions, tile counters).

* ``gmem_flags(count=N)``: an array of N 32-bit counters in global memory, zero at
  launch (CUTLASS's lock workspace, ``cutlass/barrier.h`` ``GenericBarrier``,
  ``cutlass/semaphore.h`` ``Semaphore``).  Methods, with CUTLASS's names:

  - ``arrive_inc(index, value=1, sem="release")``: ``red.release.gpu.global.add`` by every
    active lane (inside ``elect_one()`` one lane adds ``value``; a whole warp adds
    ``32 * value``, as the hardware does);
  - ``store(index, value, sem="release")``: ``st.release.gpu.global`` (``Semaphore::release``);
  - ``wait_eq(index, value, sem="acquire")``: spin with ``ld.acquire.gpu`` until the word
    equals ``value`` (``GenericBarrier::wait_eq``, ``Semaphore::wait``);
  - ``wait_ge(index, value, sem="acquire")``: spin until the word is at least ``value``
    (CUTLASS's ``GenericBarrier::wait_lt`` spins while it is less than the count).

  ``sem="relaxed"`` gives the relaxed forms, which order nothing (reported as
  ``gmem-race`` where data depends on them).  CUTLASS's helpers put a ``__syncthreads``
  around the one thread's atomic; in ``.pipe`` that barrier is the kernel's own
  (``NamedBarrier``/``sync_threads``).

* ``gmem_buffer(stages=1)``: a global-memory data region (a partial-sum workspace), one
  copy for the whole grid, read and written with ``read``/``write`` like a shared-memory
  region (``smem_buffer.py``); the ghost checks of ``model/system.py`` report
  ``gmem-race`` when CTAs access it without a gpu-scope release/acquire between them.

Sources: PTX ISA "Memory Consistency Model" (scopes, release and acquire patterns,
release sequences), "red", "atom", "ld" (``.acquire``), "st" (``.release``); CUTLASS
``include/cutlass/barrier.h``, ``include/cutlass/semaphore.h``, the stream-K fixup of
``include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program import GMEM_CTA, BufRef, FlagRef, GmemAtomic, GmemWait
from .base import PipelineBase, PipelineDecl, release_point_effects
from .dispatch import call_method
from .smem_buffer import SmemBuffer

#: ``PipelineDecl.cls`` of a flag array and of a global data region
GMEM_FLAGS = "gmem_flags"
GMEM_BUFFER = "gmem_buffer"


@dataclass(frozen=True)
class GmemBuffer(SmemBuffer):
    """A global-memory data region: its stages are ``BufRef(GMEM_CTA, ...)``."""

    CLASS = GMEM_BUFFER

    @classmethod
    def declare_global(cls, cx: Any, var: str, stages: int) -> "GmemBuffer":
        decl = cx.register(PipelineDecl(var, cls.CLASS, stages, (), var, "none"))
        cx.compiler.uses_gmem = True
        return cls(decl, cx.cta)

    def buf(self, stage: int, cta: Any = None) -> BufRef:
        return BufRef(GMEM_CTA, self.decl.buffer, stage)

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        cx.error(f"gmem_buffer {self.decl.var} has no methods (use read/write on it)")


@dataclass(frozen=True)
class GmemFlags(PipelineBase):
    """One warp's view of a global flag array of ``decl.stages`` words."""

    CLASS = GMEM_FLAGS

    @classmethod
    def declare(cls, cx: Any, var: str, count: int) -> "GmemFlags":
        decl = cx.register(PipelineDecl(var, cls.CLASS, count, (), "", "none"))
        cx.compiler.uses_gmem = True
        return cls(decl, cx.cta)

    def flag(self, cx: Any, index: Any, what: str) -> FlagRef:
        i = cx.as_int(index, "index")
        if not 0 <= i < self.decl.stages:
            cx.error(f"{self.decl.var}.{what}: index {i} is outside the flag array "
                     f"(count={self.decl.stages})")
        return FlagRef(self.decl.var, i)

    @staticmethod
    def _sem(cx: Any, sem: Any, allowed: tuple[str, ...], what: str) -> str:
        if sem not in allowed:
            cx.error(f"{what}: sem={sem!r}, expected one of "
                     f"{', '.join(repr(s) for s in allowed)}")
        return str(sem)

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        fn = getattr(self, "m_" + name, None)
        if fn is None:
            cx.error(f"gmem_flags {self.decl.var} has no method {name}() (expected "
                     "arrive_inc, store, wait_eq or wait_ge)")
        return call_method(cx, "gmem_flags", name, fn, args, kwargs)

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "count":
            return self.decl.stages
        cx.error(f"gmem_flags {self.decl.var} has no attribute {name!r} (methods: "
                 "arrive_inc, store, wait_eq, wait_ge; attribute: count)")

    def _update(self, cx: Any, op: str, index: Any, value: Any, sem: Any) -> None:
        what = "arrive_inc" if op == "add" else "store"
        f = self.flag(cx, index, what)
        v = cx.as_int(value, "value")
        s = self._sem(cx, sem, ("release", "relaxed"), f"{self.decl.var}.{what}")
        # a release ends the warp's open writes and held reads, as every release does
        pre = release_point_effects(cx) if s == "release" else ()
        ptx = (f"red.{s}.gpu.global.add.s32" if op == "add"
               else f"st.{s}.gpu.global.b32")
        cx.emit(GmemAtomic(flag=f, op=op, value=v, lanes=len(cx.lanes), sem=s, loc=cx.loc,
                           label=f"{self.decl.var}.{what}({f.index}, {v}) ({ptx})",
                           pre=pre))

    def m_arrive_inc(self, cx: Any, index: Any, value: Any = 1, sem: Any = "release") -> None:
        self._update(cx, "add", index, value, sem)

    def m_store(self, cx: Any, index: Any, value: Any, sem: Any = "release") -> None:
        self._update(cx, "store", index, value, sem)

    def _wait(self, cx: Any, cmp: str, index: Any, value: Any, sem: Any) -> None:
        what = f"wait_{cmp}"
        f = self.flag(cx, index, what)
        v = cx.as_int(value, "value")
        s = self._sem(cx, sem, ("acquire", "relaxed"), f"{self.decl.var}.{what}")
        op = "==" if cmp == "eq" else ">="
        cx.emit(GmemWait(flag=f, cmp=cmp, value=v, sem=s, loc=cx.loc,
                         label=f"{self.decl.var}.{what}({f.index}, {v}) (ld.{s}.gpu spin "
                               f"until {f} {op} {v})"))

    def m_wait_eq(self, cx: Any, index: Any, value: Any, sem: Any = "acquire") -> None:
        self._wait(cx, "eq", index, value, sem)

    def m_wait_ge(self, cx: Any, index: Any, value: Any, sem: Any = "acquire") -> None:
        self._wait(cx, "ge", index, value, sem)
