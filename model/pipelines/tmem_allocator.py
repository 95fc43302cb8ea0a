"""``TmemAllocator`` (CuTe DSL ``cutlass.memory.TmemAllocator``, formerly
``cutlass.utils.TmemAllocator``): the tensor-memory allocation protocol of Blackwell
kernels, in terms of the model's instructions.

What the DSL object does, method by method (read from the DSL's Python source; the
instructions are the PTX ISA's "Tensor Memory Allocation and Management Instructions"):

* ``TmemAllocator(alloc_result_dst_smem_ptr=None, *, barrier_for_retrieve,
  allocator_warp_id=0, is_two_cta=False, num_allocated_columns=0,
  two_cta_tmem_dealloc_mbar_ptr=None, arch="sm_100", initialize_mbarrier=True)``: with
  ``is_two_cta`` (and ``initialize_mbarrier``) the allocator warp initialises the dealloc
  mbarrier with 32 arrivals (one elected lane) and every warp runs
  ``mbarrier_init_fence``; the kernel's own cluster barrier makes the init visible.
* ``allocate(n)``: the allocator warp alone issues ``tcgen05.alloc.cta_group::{1,2}`` of
  ``n`` columns (a power of 2 in [32, 512]); the address lands in a shared-memory word.
* ``wait_for_alloc()``: ``barrier_for_retrieve.arrive_and_wait()`` (a named barrier that
  the allocator warp and the warps that use tensor memory take part in).
* ``retrieve_ptr(dtype)``: every calling warp loads the address from the word.
* ``reserve(n)``: ``allocate``, ``wait_for_alloc``, ``retrieve_ptr``.
* ``relinquish_alloc_permit()``: the allocator warp issues
  ``tcgen05.relinquish_alloc_permit``.
* ``free(ptr, n=0)``: the allocator warp; with ``is_two_cta`` it first arrives (all 32
  lanes) on the *peer* CTA's dealloc mbarrier (``rank ^ 1``) and waits for phase 0 of its
  own, then issues ``tcgen05.dealloc``.

Modelled here: the address word is a one-stage shared-memory buffer ``<var>.tmem_addr``
(the ``alloc`` stores into it like a thread write, released with the allocator warp's
next release; ``retrieve_ptr`` checks the store is there and released: ``tmem-misuse``
otherwise); the dealloc mbarrier is ``<var>.dealloc_mbar``; the TMEM rules themselves
(live allocations, relinquished permit, the pair's collectives) are in
``model/system.py`` (``System._tmem_exec``).  Column counts are checked statically as
the DSL does; how many columns are live is not tracked (only how many allocations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..groups import WARP_SIZE
from ..program import (NO_DATA, Arrival, Arrive, BarRef, BufRef, FenceMbarInit, GhostEffect,
                       MbarInit, TmemAlloc, TmemDealloc, TmemRelinquish, TmemWait, Wait)
from ..properties import Prop
from .base import ArrayDecl, PipelineDecl, release_point_effects, write_begin_effects
from ..errors import did_you_mean, methods_of
from .dispatch import call_method
from .named_barrier import NamedBarrier

#: ``PipelineDecl.cls`` of an allocator (its address word and dealloc mbarrier)
TMEM_ALLOCATOR = "TmemAllocator"
#: tag of the address store (any fill: the word is only checked for being written)
_ANY_FILL = -2
#: ``get_max_tmem_alloc_cols`` / ``get_min_tmem_alloc_cols`` by architecture
MAX_COLUMNS = {"sm_100": 512, "sm_103": 512, "sm_107": 576, "sm_120": 512}
MIN_COLUMNS = 32


@dataclass(frozen=True)
class TmemPtr:
    """What ``retrieve_ptr``/``reserve`` return: the allocation's base address."""

    allocator: str

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        cx.error(f"a tensor-memory pointer has no method {name}() in .pipe (pass it to "
                 "TmemAllocator.free)")

    def attribute(self, cx: Any, name: str) -> Any:
        cx.error(f"a tensor-memory pointer has no attribute {name!r} in .pipe")


@dataclass(frozen=True)
class TmemAllocator:
    decl: PipelineDecl
    cta: int
    barrier_for_retrieve: NamedBarrier
    allocator_warp_id: int
    is_two_cta: bool
    arch: str
    dealloc_bar: Optional[BarRef]

    CLASS = "TmemAllocator"

    @classmethod
    def construct(cls, cx: Any, args: tuple, kw: dict) -> "TmemAllocator":
        names = ("alloc_result_dst_smem_ptr", "barrier_for_retrieve", "allocator_warp_id",
                 "is_two_cta", "num_allocated_columns", "two_cta_tmem_dealloc_mbar_ptr",
                 "arch", "initialize_mbarrier")
        if len(args) > 1:
            cx.error("TmemAllocator(...) takes one positional argument "
                     "(alloc_result_dst_smem_ptr); the others are keywords")
        vals = dict(zip(names, args))
        for k in list(kw):
            if k in names:
                vals[k] = kw.pop(k)
        cx.no_more_kwargs(kw, "TmemAllocator(...)")
        bar = vals.get("barrier_for_retrieve")
        if not isinstance(bar, NamedBarrier):
            cx.error("TmemAllocator needs barrier_for_retrieve=NamedBarrier(barrier_id=..., "
                     "num_threads=...) (the barrier wait_for_alloc syncs on)")
        warp = cx.as_int(vals.get("allocator_warp_id", 0), "allocator_warp_id")
        if not 0 <= warp < cx.kernel.num_warps:
            cx.error(f"TmemAllocator: allocator_warp_id={warp} is not a warp of the "
                     f"{cx.kernel.num_warps}-warp block")
        two = vals.get("is_two_cta", False)
        init = vals.get("initialize_mbarrier", True)
        for k, v in (("is_two_cta", two), ("initialize_mbarrier", init)):
            if not isinstance(v, (bool, int)):
                cx.error(f"TmemAllocator: {k} must be a static bool")
        two = bool(two)
        arch = vals.get("arch", "sm_100")
        if not isinstance(arch, str) or arch not in MAX_COLUMNS:
            cx.error(f"TmemAllocator: unsupported arch {arch!r} (expected one of "
                     f"{', '.join(MAX_COLUMNS)})")
        if two and cx.kernel.cluster_size < 2:
            cx.error("TmemAllocator(is_two_cta=True) needs a cluster with a CTA pair")
        var = cx.compiler.current_target or f"tmem_allocator_{cx.loc.line}"
        user_bar = vals.get("two_cta_tmem_dealloc_mbar_ptr")
        arrays: tuple = ()
        dealloc_bar = None
        if two:
            if user_bar is not None:
                dealloc_bar = getattr(user_bar, "bar", None)
                if not isinstance(dealloc_bar, BarRef):
                    cx.error("TmemAllocator: two_cta_tmem_dealloc_mbar_ptr must be an "
                             "mbarrier pointer (smem_mbarrier())")
            else:
                arrays = (ArrayDecl("dealloc_mbar", 1, WARP_SIZE),)
                dealloc_bar = BarRef(cx.cta, f"{var}.dealloc_mbar", 0)
        decl = cx.register(PipelineDecl(var, TMEM_ALLOCATOR, 1, arrays, f"{var}.tmem_addr",
                                        "none"))
        obj = cls(decl, cx.cta, bar, warp, two, arch, dealloc_bar)
        if two and init:
            if cx.warp == warp:
                cx.emit(MbarInit(arrays=((dealloc_bar.array, WARP_SIZE),), cta=cx.cta,
                                 loc=cx.loc, label=f"{var} = TmemAllocator(...): init the "
                                 "2-CTA dealloc mbarrier (32 arrivals)"))
            cx.emit(FenceMbarInit(cta=cx.cta, loc=cx.loc,
                                  label=f"{var} = TmemAllocator(...): mbarrier_init_fence()"))
        return obj

    # ------------------------------------------------------------------ plumbing

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        fn = getattr(self, "m_" + name, None)
        if fn is None:
            cx.error(f"TmemAllocator has no method {name}()",
                     did_you_mean(name, methods_of(self)))
        return call_method(cx, "TmemAllocator", name, fn, args, kwargs)

    def attribute(self, cx: Any, name: str) -> Any:
        if name in ("allocator_warp_id", "is_two_cta", "arch"):
            return getattr(self, name)
        cx.error(f"TmemAllocator has no attribute {name!r}")

    @property
    def cta_group(self) -> int:
        return 2 if self.is_two_cta else 1

    def addr(self) -> BufRef:
        return BufRef(self.cta, self.decl.buffer, 0)

    def _allocator(self, cx: Any) -> bool:
        return cx.warp == self.allocator_warp_id

    def _whole_warp(self, cx: Any, what: str) -> bool:
        """tcgen05.alloc/dealloc/relinquish are ``.sync.aligned``: the whole warp."""
        if len(cx.lanes) < WARP_SIZE:
            cx.fail(Prop.TMEM_MISUSE,
                    f"{what} inside elect_one(): the instruction is .sync.aligned, every "
                    "lane of the warp must execute it")
            return False
        return True

    def _columns(self, cx: Any, n: Any, what: str, allow_zero: bool = False) -> int:
        v = cx.as_int(n, "num_columns")
        if allow_zero and v == 0:
            return v
        hi = MAX_COLUMNS[self.arch]
        if v < MIN_COLUMNS or v > hi or (v & (v - 1) and not (v > 512 and self.arch == "sm_107")):
            cx.error(f"{what}: num_columns={v} must be a power of 2 between {MIN_COLUMNS} "
                     f"and {hi}")
        return v

    # ------------------------------------------------------------------ methods

    def m_check_valid_num_columns(self, cx: Any, num_columns: Any) -> bool:
        v = cx.as_int(num_columns, "num_columns")
        return 0 <= v <= MAX_COLUMNS[self.arch] and v % 32 == 0 and \
            (v & (v - 1) == 0 or (v > 512 and self.arch == "sm_107"))

    def m_allocate(self, cx: Any, num_columns: Any) -> None:
        n = self._columns(cx, num_columns, f"{self.decl.var}.allocate")
        if not self._allocator(cx) or not self._whole_warp(cx, "tcgen05.alloc"):
            return
        post = write_begin_effects(cx, (self.addr(),), _ANY_FILL)
        label = (f"{self.decl.var}.allocate({n}): tcgen05.alloc.cta_group::{self.cta_group} "
                 f"-> {self.addr()}")
        cx.emit(TmemAlloc(cta_group=self.cta_group, columns=n, loc=cx.loc, label=label,
                          post=post))
        if self.is_two_cta:
            cx.emit(TmemWait(loc=cx.loc, label=f"{self.decl.var}.allocate({n}): "
                             "tcgen05.alloc.cta_group::2 (with the peer CTA)"))

    def m_wait_for_alloc(self, cx: Any) -> None:
        self.barrier_for_retrieve.m_arrive_and_wait(cx)

    def m_retrieve_ptr(self, cx: Any, dtype: Any = None) -> TmemPtr:
        a = self.addr()
        # the allocator warp reads its own store back in program order
        if not any(b == a for b, _ in cx.ghost.writes):
            cx.attach((GhostEffect("tmem_ptr", a, NO_DATA),),
                      f"{self.decl.var}.retrieve_ptr(): load the address from {a}")
        return TmemPtr(self.decl.var)

    def m_reserve(self, cx: Any, num_columns: Any) -> TmemPtr:
        self.m_allocate(cx, num_columns)
        self.m_wait_for_alloc(cx)
        return self.m_retrieve_ptr(cx)

    def m_relinquish_alloc_permit(self, cx: Any) -> None:
        if not self._allocator(cx) or not self._whole_warp(
                cx, "tcgen05.relinquish_alloc_permit"):
            return
        cx.emit(TmemRelinquish(cta_group=self.cta_group, loc=cx.loc,
                               label=f"{self.decl.var}.relinquish_alloc_permit(): "
                               f"tcgen05.relinquish_alloc_permit.cta_group::{self.cta_group}"))

    def m_free(self, cx: Any, tmem_ptr: Any, num_columns: Any = 0) -> None:
        n = self._columns(cx, num_columns, f"{self.decl.var}.free", allow_zero=True)
        if not self._allocator(cx) or not self._whole_warp(cx, "tcgen05.dealloc"):
            return
        var = self.decl.var
        if self.is_two_cta:
            peer = cx.cta ^ 1
            if peer >= cx.kernel.cluster_size:
                cx.error(f"{var}.free: CTA {cx.cta} has no peer CTA {peer} in the cluster")
            bar = self.dealloc_bar
            remote = BarRef(peer, bar.array, bar.stage)
            cx.emit(Arrive(arrivals=(Arrival(remote, len(cx.lanes), 0),), loc=cx.loc,
                           label=f"{var}.free: arrive on the peer's dealloc mbarrier {remote}",
                           pre=release_point_effects(cx)))
            cx.emit(Wait(bar=BarRef(cx.cta, bar.array, bar.stage), parity=0, loc=cx.loc,
                         label=f"{var}.free: wait for the peer's arrival on {bar}"))
        what = f"{var}.free({'all' if n == 0 else n} columns): tcgen05.dealloc." \
               f"cta_group::{self.cta_group}"
        cx.emit(TmemDealloc(cta_group=self.cta_group, columns=n, loc=cx.loc, label=what))
        if self.is_two_cta:
            cx.emit(TmemWait(loc=cx.loc, label=what + " (with the peer CTA)"))


__all__ = ["TmemAllocator", "TmemPtr", "TMEM_ALLOCATOR"]
