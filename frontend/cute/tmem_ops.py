"""Tensor-memory allocation ops of the captured IR and the model instructions they become
(``spec/primitives.md`` section 12; PTX ISA 9.7.16.7.1 tcgen05.alloc / tcgen05.dealloc /
tcgen05.relinquish_alloc_permit).

``cute.compile`` prints the DSL's ``cute.arch.alloc_tmem`` / ``dealloc_tmem`` /
``relinquish_tmem_alloc_permit`` (what ``cutlass.utils.TmemAllocator`` /
``cutlass.memory.TmemAllocator`` call, or a kernel calls directly) as
``cute_nvgpu.arch.sm100.alloc_tmem(ncols, dst)``, ``dealloc_tmem(tmem_ptr, ncols)`` and
``relinquish_tmem_alloc_permit()``, with the unit attribute ``is_two_cta`` for
``cta_group::2`` (measured on nvidia-cutlass-dsl 4.8; ``tests/test_cute_tmem.py``).
They become ``TmemAlloc``/``TmemDealloc``/``TmemRelinquish`` (each followed by
``TmemWait`` for ``cta_group::2``, the model's rendezvous with the peer CTA), so the rules
R3-R10 of ``System._tmem_exec`` hold for lifted kernels as for ``.pipe``.  The
2-CTA dealloc handshake of ``TmemAllocator.free`` (an arrive on the peer's dealloc
mbarrier, a wait on its own) is ordinary mbarrier ops the lifter already follows.

All three are ``.sync.aligned``: reached by part of a warp (``elect_one``, a lane
branch) the step is ``tmem-misuse`` (R10), as ``TmemAllocator`` in ``.pipe`` reports.

Tensor-memory *accesses* (``cute.gemm`` on a tcgen05 MMA with a tmem accumulator,
``cute.copy`` of a tcgen05 ld/st atom) become a ``tmem_use`` ghost effect on the CTA's
tensor memory (``GhostEffect`` kind ``tmem_use``, ``System._tmem_use``): the CTA must hold
an allocation (R2, at issue).  Not lifted: ``retrieve_tmem_ptr`` (the address load, R1:
the address word is not a ghost buffer of the lifted kernel), and the asynchronous end of
an MMA's writes (R3's "no MMA still writing" needs the accumulator stages, which lifted
kernels do not map tensor-memory addresses to).
"""

from __future__ import annotations

import re
from typing import Any

from ...model.program import (NO_DATA, BufRef, Fail, GhostEffect, Nop, TmemAlloc,
                              TmemDealloc, TmemRelinquish, TmemWait)
from ...model.properties import Prop
from .mlir_text import Op
from .optable import op
from .values import OPAQUE, WARP, lane

#: the ops that become steps (a conformance run records them, ``sync_ops.traced_op_names``)
TRACED = frozenset(("cute_nvgpu.arch.sm100.alloc_tmem", "cute_nvgpu.arch.sm100.dealloc_tmem",
                    "cute_nvgpu.arch.sm100.relinquish_tmem_alloc_permit"))
_TMEM_TYPE = re.compile(r"memref<[^,>]*,\s*tmem\b|!memref_tmem")
#: the buffer a ``tmem_use`` effect names: the CTA's tensor memory as a whole
TMEM_BUFFER = "tmem"


def _cta_group(o: Op) -> int:
    return 2 if "is_two_cta" in o.attrs else 1


def _whole_warp(lf: Any, o: Op, mask: Any, what: str) -> bool:
    """``.sync.aligned``: every lane must execute it (else a ``tmem-misuse`` step)."""
    n = len(lf.active(mask))
    if n == WARP:
        return True
    lf.emit(lf.make(Fail, o, f"{what} by part of a warp", prop=Prop.TMEM_MISUSE,
                    message=f"{what} executed by {n} of the warp's {WARP} lanes (inside "
                            "elect_one() or a lane-dependent branch): the instruction is "
                            ".sync.aligned, every lane of the warp must execute it "
                            "(PTX ISA tcgen05.alloc/dealloc/relinquish_alloc_permit)"))
    return False


def _columns(lf: Any, o: Op, v: Any, mask: Any, what: str) -> int:
    n = lane(v, lf.active(mask)[0])
    if not isinstance(n, int):
        raise lf.error(o, f"{what} of a column count not known statically ({lf.where(o)})")
    return n


def _collective(lf: Any, o: Op, ins: Any, what: str) -> None:
    lf.emit(ins)
    if ins.cta_group == 2:
        lf.emit(lf.make(TmemWait, o, f"{what} (with the peer CTA)"))


@op("cute_nvgpu.arch.sm100.alloc_tmem")
def _alloc(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    if not lf.active(mask) or lf.phase == 1:
        return None
    g = _cta_group(o)
    what = f"tcgen05.alloc.cta_group::{g}"
    if not _whole_warp(lf, o, mask, what):
        return None
    n = _columns(lf, o, lf.operands(o, env)[0], mask, what)
    _collective(lf, o, lf.make(TmemAlloc, o, f"{what} {n} columns", cta_group=g, columns=n),
                what)
    return None


@op("cute_nvgpu.arch.sm100.dealloc_tmem")
def _dealloc(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    if not lf.active(mask) or lf.phase == 1:
        return None
    g = _cta_group(o)
    what = f"tcgen05.dealloc.cta_group::{g}"
    if not _whole_warp(lf, o, mask, what):
        return None
    vals = lf.operands(o, env)
    n = _columns(lf, o, vals[1], mask, what) if len(vals) > 1 else 0
    _collective(lf, o, lf.make(TmemDealloc, o, f"{what} {n} columns", cta_group=g,
                               columns=n), what)
    return None


@op("cute_nvgpu.arch.sm100.relinquish_tmem_alloc_permit")
def _relinquish(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    if not lf.active(mask) or lf.phase == 1:
        return None
    g = _cta_group(o)
    what = f"tcgen05.relinquish_alloc_permit.cta_group::{g}"
    if _whole_warp(lf, o, mask, what):
        lf.emit(lf.make(TmemRelinquish, o, what, cta_group=g))
    return None


def is_tmem_type(t: str) -> bool:
    """A memref type in tensor memory (``!cute.memref<f32, tmem, ...>``, or its alias
    ``!memref_tmem_...`` as the generic form prints it)."""
    return bool(_TMEM_TYPE.search(t))


def tmem_use(lf: Any, o: Op, mask: Any, what: str) -> None:
    """A tensor-memory access issued by the warp (an MMA into a tmem accumulator, a
    tcgen05.ld/st copy): a step whose ghost effect checks the CTA's allocation.  Back
    to back accesses (the k-blocks of one tile's MMAs) share one step: nothing the
    model can interleave changes between them for this warp."""
    if not lf.active(mask) or lf.phase == 1:
        return
    eff = GhostEffect("tmem_use", BufRef(lf.w.cta, TMEM_BUFFER, 0), NO_DATA)
    last = lf.w.code[-1] if lf.w.code else None
    if isinstance(last, Nop) and last.pre == (eff,):
        return
    lf.emit(lf.make(Nop, o, f"{what} (tensor memory of CTA {lf.w.cta})", pre=(eff,)))


@op("cute_nvgpu.arch.sm100.retrieve_tmem_ptr")
def _retrieve(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """The address load (R1 is not lifted, see the module docstring): a value."""
    return OPAQUE


__all__ = ["TMEM_BUFFER", "TRACED", "tmem_use"]
