"""Memory layout of an emitted kernel: shared memory per CTA and global memory per cluster.

The emitter (``impl/emit.py``) lowers a ``CompiledKernel`` to PTX; this module decides
where everything lives, from the same compiled programs:

* **mbarriers**: one 8-byte word per stage of every ``ArrayDecl`` of every pipeline, at
  the same offset in every CTA (multicast TMA and ``tcgen05.commit`` address "the same
  offset in each destination CTA": PTX ISA ``cp.async.bulk``, ``.multicast::cluster``).
* **stage buffers**: every stage buffer (``BufRef``) is cut into *slots*, one per writer
  "key" -- a TMA load statement of one issuing CTA, the generic (thread) writes, the
  cp.async copies.  Multicast copies land at the same CTA-relative offset in every
  destination, so a slot's offset is the same in all CTAs; two keys share bytes only
  when no CTA receives both (first fit).  Every slot begins with a 16-byte *stamp*
  ``STAMP_BASE | tag`` (``tag`` = the model's ghost fill tag, ``model/program.py``);
  readers compare it with the tag the model expects, so a real race is a data error.
* **sink**: bytes a delivery must complete as tx on a barrier of another CTA than the
  one holding the data (the ``cta_group::2`` routing emulated on sm_90a) land here, in
  the barrier's CTA; nobody reads them.
* **global source**: one region per (issuing warp, instruction) that loads, holding the
  stamp the instruction's deliveries carry; one copy per cluster, so that every cluster
  of a launch streams its own bytes (``bench/``).
* **global memory of the kernel** (``gmem_flags``/``gmem_buffer``, ``GmemLayout``): one
  32-bit word per flag and one 16-byte stamp per stage of every global region, each on
  its own 128-byte line, in a block the runner zeroes before every launch (flags are
  zero at launch; a zero stamp is no fill: a read of a never-written stage is a data
  error, as the model's ``gmem-race``).  One block per *instance* (the grid of clusters
  the model checks as one system).

Offsets are static: the compiler already resolved every stage index and CTA rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from ..model.compile import CompiledKernel
from ..model.pipelines.gmem import GMEM_BUFFER, GMEM_FLAGS
from ..model.system import ANY_FILL
from ..model.program import (GMEM_CTA, NO_DATA, PARITY_TAG, BufRef, CpAsync, CpAsyncArrive,
                             FlagRef, GhostEffect, Instr, TmaLoad, TmaStore, UmmaCommit)

#: bytes of a stamp (first 16 bytes of every slot; ``cp.async``/bulk granule)
STAMP_BYTES = 16
#: a written stamp: ``STAMP_BASE | (tag & 0xff)``
STAMP_BASE = 0x5A000000
#: the stamp of a slot nobody has written (the model's ``NO_DATA``)
POISON = 0xDEADBEEF
#: shared memory an H100/H200 CTA can use (227 KB)
SMEM_LIMIT = 232448
#: a 16-byte response of an emulated CLC query: word 1 holds the validity
CLC_VALID_WORD = 1
#: shared-memory header: word 0 counts exited warps of the CTA
HEADER_BYTES = 128

GEN_KEY = ("gen",)


def stamp_of(tag: int) -> int:
    """The 32-bit stamp a write of fill ``tag`` leaves (``NO_DATA`` -> ``POISON``)."""
    if tag == NO_DATA:
        return POISON
    return STAMP_BASE | (tag & 0xFF)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass
class Slot:
    key: tuple
    size: int
    receivers: set[int] = field(default_factory=set)   # logical CTAs (BufRef.cta)
    offset: int = 0          # within a stage of the buffer
    phys: dict[int, int] = field(default_factory=dict)  # logical CTA -> CTA holding it
    #: the fill tags its writers stamp (-2: "any fill", a plain region's stores)
    tags: set[int] = field(default_factory=set)

    def region_only(self) -> bool:
        """Written only by stores to a plain region (``smem_buffer``, tag "any fill"):
        a read that expects a pipeline fill does not look at it.  With aliasing the
        region's stores and the pipeline's TMA bytes are the same memory, which the
        emulation keeps in two slots; the replay judges their order."""
        return bool(self.tags) and self.tags <= {ANY_FILL}

    def home(self, cta: int) -> int:
        """The CTA whose shared memory holds this slot for logical CTA ``cta``."""
        return self.phys.get(cta, cta)

    def homes(self) -> set[int]:
        return {self.home(c) for c in self.receivers}


@dataclass
class BufferLayout:
    name: str
    stages: int
    slots: dict[tuple, Slot] = field(default_factory=dict)
    stage_bytes: int = 0
    base: int = 0

    def slot_addr(self, stage: int, key: tuple) -> int:
        return self.base + stage * self.stage_bytes + self.slots[key].offset

    def slots_for(self, cta: int) -> list[Slot]:
        """The slots a reader in (or of) CTA ``cta`` checks, in offset order."""
        return sorted((s for s in self.slots.values() if cta in s.receivers),
                      key=lambda s: s.offset)


@dataclass
class SrcRegion:
    """A region of the per-cluster global source read by one loading instruction."""

    offset: int
    size: int
    stamp: int               # the stamp word at offset 0 (and, for CLC, the response)
    clc: bool = False


#: bytes between two global words of ``GmemLayout`` (one L2 line each: no false sharing
#: between a flag and the data it publishes)
GMEM_LINE = 128


@dataclass
class GmemLayout:
    """Byte offsets in an instance's global-memory block (``impl/emit.py`` ``%gm``)."""

    flags: dict[FlagRef, int] = field(default_factory=dict)
    #: global region -> (offset of stage 0, stages); stage ``s`` at ``+ s * GMEM_LINE``
    buffers: dict[str, tuple[int, int]] = field(default_factory=dict)
    size: int = 0

    def buf_addr(self, buf: BufRef) -> int:
        base, stages = self.buffers[buf.buffer]
        return base + buf.stage * GMEM_LINE


def gmem_layout(ck: CompiledKernel) -> GmemLayout:
    """Place every flag word and global region stage the kernel declares."""
    out = GmemLayout()
    off = 0
    for d in ck.pipelines:
        if d.cls == GMEM_FLAGS:
            for i in range(d.stages):
                out.flags[FlagRef(d.var, i)] = off
                off += GMEM_LINE
        elif d.cls == GMEM_BUFFER:
            out.buffers[d.buffer] = (off, d.stages)
            off += GMEM_LINE * d.stages
    out.size = off
    return out


@dataclass
class Layout:
    """Everything the emitter and the runner need to agree on."""

    bar_offset: dict[tuple[str, int], int]               # (array, stage) -> smem offset
    arrays: dict[str, tuple[int, int]]                    # array -> (stages, init count)
    buffers: dict[str, BufferLayout]
    sink_offset: int
    sink_bytes: int
    smem_bytes: int
    src: dict[tuple[int, int, int], SrcRegion]            # (cta, warp, pc) -> region
    src_bytes: int
    dst: dict[tuple[int, int, int], int]                  # TMA store regions
    dst_bytes: int
    compact: bool = False                                 # TMA data to the sink (smem)
    gmem: GmemLayout = field(default_factory=GmemLayout)  # flags and global regions

    def src_stamps(self) -> list[tuple[int, int, int]]:
        """(byte offset, word, value) triples the host writes into every cluster's source."""
        out = []
        for r in self.src.values():
            if r.clc:
                # two 16-byte responses: valid, then invalid
                out.append((r.offset, 0, r.stamp))
                out.append((r.offset, CLC_VALID_WORD, 1))
                out.append((r.offset + 16, 0, r.stamp))
                out.append((r.offset + 16, CLC_VALID_WORD, 0))
            else:
                out.append((r.offset, 0, r.stamp))
        return out


def iter_instrs(ck: CompiledKernel) -> Iterator[tuple[Any, int, Instr]]:
    for prog in ck.programs:
        for pc, ins in enumerate(prog.code):
            yield prog, pc, ins


def delivery_key(prog: Any, pc: int, ins: Instr) -> tuple:
    """The slot of a TMA load: issuing CTA and the load's position within its fill.

    Loads that fill one stage together (A and B tiles after one acquire) get different
    slots; loads of different fills (a prologue and a loop body, unrolled iterations)
    share one, so that a reader checks only stamps the current fill rewrites.  The
    position counts the loads to the same stage buffer just before this one with no wait
    of the issuing warp in between.  Multicast copies land at the same CTA offset in every
    destination, so the key does not depend on the destination.
    """
    from ..model.program import TryWait, Wait

    bufs = {(d.buf.buffer, d.buf.stage) for d in ins.deliveries if d.buf is not None}
    pos = 0
    i = pc - 1
    while i >= 0:
        prev = prog.code[i]
        if isinstance(prev, (Wait, TryWait)):
            break
        if isinstance(prev, TmaLoad) and prev.kind == ins.kind and bufs & {
                (d.buf.buffer, d.buf.stage) for d in prev.deliveries if d.buf is not None}:
            pos += 1
        i -= 1
    return ("tma", prog.cta, ins.kind, pos)


def is_split(d: Any) -> bool:
    """A delivery whose data and barrier live in different CTAs (``cta_group::2``)."""
    return d.buf is not None and d.buf.cta != d.bar.cta


def _generic_writes(ins: Instr) -> list[GhostEffect]:
    """Ghost write effects that the executing warp performs with ordinary stores."""
    out: list[GhostEffect] = []
    if isinstance(ins, (TmaLoad, CpAsync)):
        effs = ins.post
    else:
        effs = ins.pre + ins.post
    out.extend(e for e in effs if e.kind in ("write_begin", "write_end"))
    if isinstance(ins, UmmaCommit):
        out.extend(e for e in ins.effects if e.kind in ("write_begin", "write_end"))
    return out


def _reads(ins: Instr) -> list[GhostEffect]:
    effs = ins.pre + ins.post
    if isinstance(ins, (UmmaCommit, CpAsyncArrive)):
        effs = effs + ins.effects
    return [e for e in effs if e.kind == "read"]


def compute_layout(ck: CompiledKernel, force_compact: bool = False) -> Layout:
    """Allocate barriers, buffer slots, the sink and the global source regions."""
    # ---- barriers
    off = HEADER_BYTES
    bar_offset: dict[tuple[str, int], int] = {}
    arrays: dict[str, tuple[int, int]] = {}
    for d in ck.pipelines:
        for a in d.arrays:
            name = f"{d.var}.{a.name}"
            arrays[name] = (a.stages, a.count)
            for s in range(a.stages):
                bar_offset[(name, s)] = off
                off += 8
    off = _align(off, 128)

    # ---- buffer slots
    buffers: dict[str, BufferLayout] = {}
    for d in ck.pipelines:
        if d.cls in (GMEM_FLAGS, GMEM_BUFFER):
            continue  # global memory: GmemLayout
        buffers.setdefault(d.buffer, BufferLayout(d.buffer, d.stages))

    def slot(buf: BufRef, key: tuple, size: int, home: Optional[int] = None,
             tag: Optional[int] = None) -> None:
        if buf.cta == GMEM_CTA:
            return  # a global region's stamps live in GmemLayout
        bl = buffers.setdefault(buf.buffer, BufferLayout(buf.buffer, buf.stage + 1))
        bl.stages = max(bl.stages, buf.stage + 1)
        s = bl.slots.get(key)
        if s is None:
            s = bl.slots[key] = Slot(key, 0)
        s.size = max(s.size, _align(size, STAMP_BYTES))
        s.receivers.add(buf.cta)
        if tag is not None:
            s.tags.add(tag)
        if home is not None and home != buf.cta:
            s.phys[buf.cta] = home

    sink = 0
    for prog, pc, ins in iter_instrs(ck):
        if isinstance(ins, TmaLoad):
            key = delivery_key(prog, pc, ins)
            for dl in ins.deliveries:
                if dl.buf is None:
                    continue
                if is_split(dl):
                    # cta_group::2 routing, emulated: the slot lives in the barrier's CTA
                    slot(dl.buf, key + ("split",), dl.bytes, home=dl.bar.cta)
                else:
                    slot(dl.buf, key, dl.bytes)
        elif isinstance(ins, CpAsync):
            slot(ins.buf, ("cpasync",), STAMP_BYTES)
        for e in _generic_writes(ins):
            slot(e.buf, GEN_KEY, STAMP_BYTES, tag=e.tag)
    # second pass: a buffer read (or stored) but never written by anyone still needs a
    # stamp to read (it stays poison: the model's NO_DATA)
    for prog, pc, ins in iter_instrs(ck):
        refs = [e.buf for e in _reads(ins)]
        if isinstance(ins, TmaStore):
            refs.append(ins.buf)
        for b in refs:
            if b.cta == GMEM_CTA:
                continue
            bl = buffers.get(b.buffer)
            if bl is None or not any(b.cta in s.receivers for s in bl.slots.values()):
                slot(b, GEN_KEY, STAMP_BYTES)

    def place(compact: bool) -> int:
        o = off
        for bl in buffers.values():
            placed: list[Slot] = []
            for s in sorted(bl.slots.values(), key=lambda s: (-s.size, s.key)):
                size = STAMP_BYTES if compact else s.size
                cand = 0
                while True:
                    clash = [p for p in placed if p.homes() & s.homes() and
                             p.offset < cand + size and cand < p.offset + _psize(p, compact)]
                    if not clash:
                        break
                    cand = max(p.offset + _psize(p, compact) for p in clash)
                s.offset = cand
                placed.append(s)
            bl.stage_bytes = _align(max((s.offset + _psize(s, compact) for s in placed),
                                        default=STAMP_BYTES), 128)
            bl.base = o
            o += bl.stage_bytes * bl.stages
        return o

    compact = force_compact
    end = place(compact)
    sink_bytes = sink
    if compact:
        sink_bytes = max(sink, max((s.size for bl in buffers.values()
                                    for s in bl.slots.values()), default=0))
    if not compact and end + _align(sink_bytes, 128) > SMEM_LIMIT:
        compact = True
        end = place(True)
        sink_bytes = max(sink, max((s.size for bl in buffers.values()
                                    for s in bl.slots.values()), default=0))
    sink_offset = _align(end, 128)
    smem = _align(sink_offset + sink_bytes, 128)

    # ---- global source and destination regions
    src: dict[tuple[int, int, int], SrcRegion] = {}
    dst: dict[tuple[int, int, int], int] = {}
    so = 0
    do = 0
    for prog, pc, ins in iter_instrs(ck):
        if isinstance(ins, TmaLoad) and ins.deliveries:
            clc = ins.kind == "clc"
            size = 32 if clc else max(d.bytes for d in ins.deliveries)
            tag = ins.deliveries[0].tag
            src[(prog.cta, prog.warp, pc)] = SrcRegion(so, size, stamp_of(tag), clc)
            so += _align(size, 128)
        elif isinstance(ins, CpAsync):
            src[(prog.cta, prog.warp, pc)] = SrcRegion(so, STAMP_BYTES, stamp_of(ins.tag))
            so += 128
        elif isinstance(ins, TmaStore):
            dst[(prog.cta, prog.warp, pc)] = do
            do += 128
    return Layout(bar_offset, arrays, buffers, sink_offset, sink_bytes, smem, src,
                  max(so, 128), dst, max(do, 128), compact, gmem_layout(ck))


def _psize(s: Slot, compact: bool) -> int:
    return STAMP_BYTES if compact else s.size


def tag_matches(stamp: int, tag: int) -> bool:
    """Host-side version of the reader's check (mirrors ``model.program.tags_match`` and
    the ``read`` rule of ``model/system.py``)."""
    if stamp == POISON or (stamp & 0xFF000000) != STAMP_BASE:
        return False
    st = stamp & 0xFF
    if tag == ANY_FILL:
        return True
    if tag >= PARITY_TAG or st >= PARITY_TAG:
        return st % 2 == tag % 2
    return st == tag


__all__ = ["Layout", "BufferLayout", "GmemLayout", "gmem_layout", "GMEM_LINE", "Slot",
           "SrcRegion", "compute_layout", "stamp_of",
           "STAMP_BASE", "POISON", "STAMP_BYTES", "SMEM_LIMIT", "GEN_KEY", "delivery_key",
           "is_split", "tag_matches", "Optional"]
