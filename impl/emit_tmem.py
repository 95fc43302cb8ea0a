"""PTX lowering of the tensor-memory allocation steps (``TmemAlloc``, ``TmemDealloc``,
``TmemRelinquish``, ``TmemWait``; ``spec/primitives.md`` section 12) for ``impl/emit.py``.

Sources: PTX ISA 9.0, section 9.7.16 "TensorCore 5th Generation Family Instructions":
9.7.16.1.2 "Tensor Memory Allocation" and 9.7.16.7.1 "Tensor Memory Allocation and
Management Instructions: tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit".

* ``tcgen05.alloc.cta_group::{1,2}.sync.aligned.shared::cta.b32 [dst], nCols`` writes the
  allocation's address into the shared-memory word ``dst``; ``tcgen05.dealloc.cta_group::
  {1,2}.sync.aligned.b32 taddr, nCols`` frees it; ``tcgen05.relinquish_alloc_permit.
  cta_group::{1,2}.sync.aligned`` gives up the CTA's right to allocate.  All three are
  ``.sync.aligned``: every lane of the warp executes them, converged, so they are emitted
  outside the lane-0 block of the step (as ``bar.sync`` is for ``NamedBarrierOp``).
* tcgen05 exists only on ``sm_100a`` (and its family); for ``sm_90a`` the emitter refuses
  with ``Unsupported`` ("tcgen05 needs sm_100a"): unlike ``tcgen05.commit`` there is no
  Hopper emulation with the same effect (the allocation's rules are about tensor memory
  itself).

Each step records one trace event like every other step, so ``impl/replay.py`` replays
it through ``System.exec_agent`` unchanged: ``TmemAlloc``/``TmemDealloc``/
``TmemRelinquish`` are signals (ticket taken *before* the instruction issues), ``TmemWait``
(the second half of a ``cta_group::2`` collective, the model's rendezvous, choice C-T1)
is a wait (ticket taken *after* the collective instruction returned).  A GPU on which a
``cta_group::2`` ``tcgen05.alloc`` returns before the peer CTA issued its own would leave a
trace the model rejects: the conformance run tests C-T1 rather than assuming it.

The address word of allocator ``k`` (the ``k``-th ``<var>.tmem_addr`` buffer, by name) is
the shared-memory header word at ``TMEM_ADDR_OFF + 4 k`` (``impl/layout.HEADER_BYTES``):
the real ``tcgen05.alloc`` store, apart from the data stamp the model's ghost store on the
address buffer writes.  ``TmemDealloc`` loads ``taddr`` from it (the allocator warp reads
its own store back in program order, as ``TmemAllocator.free`` does with the pointer
``retrieve_ptr`` loaded).
"""

from __future__ import annotations

from typing import Any

from ..model.errors import Unsupported
from ..model.program import AgentProgram, Instr, TmemAlloc, TmemDealloc, TmemRelinquish, TmemWait
from . import events as E
from .layout import HEADER_BYTES

#: the TMEM steps this module lowers
TMEM_STEPS = (TmemAlloc, TmemDealloc, TmemRelinquish, TmemWait)
#: first header byte of the allocation address words (words 0-1: exit count, ticket)
TMEM_ADDR_OFF = 64
#: allocators (address words) one CTA can have in the header
MAX_ALLOCATORS = (HEADER_BYTES - TMEM_ADDR_OFF) // 4

_PTX = {TmemAlloc: "tcgen05.alloc", TmemDealloc: "tcgen05.dealloc",
        TmemRelinquish: "tcgen05.relinquish_alloc_permit", TmemWait: "tcgen05 (cta_group::2)"}


def is_tmem(ins: Instr) -> bool:
    return isinstance(ins, TMEM_STEPS)


def _addr_buffer(ins: TmemAlloc) -> str:
    """The allocator's address buffer: the target of the alloc's ghost store."""
    names = {e.buf.buffer for e in ins.post + ins.pre if e.buf.buffer.endswith(".tmem_addr")}
    if len(names) != 1:
        raise Unsupported(f"unsupported: tcgen05.alloc ({ins.label or 'TmemAlloc'}) without "
                          "one TmemAllocator address word")
    return names.pop()


def address_words(programs: list[AgentProgram]) -> dict[str, int]:
    """Header offset of each allocator's address word (``TMEM_ADDR_OFF + 4 k``)."""
    names = sorted({_addr_buffer(i) for p in programs for i in p.code
                    if isinstance(i, TmemAlloc)})
    if len(names) > MAX_ALLOCATORS:
        raise Unsupported(f"unsupported: {len(names)} TmemAllocators (at most "
                          f"{MAX_ALLOCATORS} address words in the header)")
    return {n: TMEM_ADDR_OFF + 4 * k for k, n in enumerate(names)}


def _allocation_of(prog: AgentProgram) -> TmemAlloc:
    """The warp's own ``TmemAlloc``: ``tcgen05.dealloc`` needs its address word and its
    column count (``TmemAllocator.free(ptr)`` with ``num_columns=0`` frees what was
    allocated; PTX needs ``nCols`` explicitly)."""
    allocs = {(_addr_buffer(i), i.columns): i for i in prog.code if isinstance(i, TmemAlloc)}
    if len(allocs) != 1:
        raise Unsupported(
            f"unsupported: tcgen05.dealloc in cta {prog.cta} warp {prog.warp}: the emitter "
            f"needs exactly one tcgen05.alloc in the same warp (found {len(allocs)}) to "
            "know the address word and the column count")
    return next(iter(allocs.values()))


def lower(em: Any, pc: int, ins: Instr, st: Any) -> None:
    """Emit step ``ins`` (a ``TMEM_STEPS`` instruction) at ``pc`` of ``em.prog``.

    ``em`` is ``impl.emit._Emitter``; ``st`` its per-step registers (``_Step``)."""
    name = _PTX[type(ins)]
    if not em.b100:
        raise Unsupported(f"unsupported: {type(ins).__name__} ({name}) on {em.o.arch}: "
                          "tcgen05 needs sm_100a (tensor memory is Blackwell's; there is "
                          "no sm_90a emulation of the allocation)", ins.loc)
    if isinstance(ins, TmemWait):
        # the collective returned (emitted with the TmemAlloc/TmemDealloc before): a wait
        em.lane0_begin(st)
        tk = em.ticket()
        em.ghost(ins.post, st, True)
        em.record(E.K_STEP, pc, tk, "0", st.flags)
        em.lane0_end(st)
        return
    words = getattr(em, "_tmem_words", None)
    if words is None:
        words = em._tmem_words = address_words(em.ck.programs)
    em.lane0_begin(st)
    em.ghost(ins.pre, st, True)
    tk = em.ticket()
    em.record(E.K_STEP, pc, tk, "0", st.flags)
    em.lane0_end(st)
    grp = f"cta_group::{ins.cta_group}"
    if isinstance(ins, TmemAlloc):
        a = em.smem_addr(words[_addr_buffer(ins)])
        em(f"tcgen05.alloc.{grp}.sync.aligned.shared::cta.b32 [{a}], {ins.columns};")
    elif isinstance(ins, TmemRelinquish):
        em(f"tcgen05.relinquish_alloc_permit.{grp}.sync.aligned;")
    else:
        alloc = _allocation_of(em.prog)
        cols = ins.columns or alloc.columns
        a = em.smem_addr(words[_addr_buffer(alloc)])
        taddr = em.r()
        em(f"ld.shared.u32 {taddr}, [{a}];")
        em(f"tcgen05.dealloc.{grp}.sync.aligned.b32 {taddr}, {cols};")
    if ins.post:  # the address word's ghost store (after the instruction wrote it)
        skip = em.fresh("tm")
        em.lead_guard(skip)
        em.ghost(ins.post, st, True)
        em.label(skip)
        em("bar.warp.sync -1;")


__all__ = ["TMEM_STEPS", "TMEM_ADDR_OFF", "is_tmem", "lower", "address_words"]
