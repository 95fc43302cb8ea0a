"""Ghost buffer effects of a lifted kernel: who reads and writes which shared memory.

The data-race checks of the model (``read-before-full``, ``overwrite-before-release``,
``missing-proxy-fence``; ``model/system.py`` ``System.ghost``) work on stage buffers
(``BufRef``).  A lifted kernel has no declared stages, only addresses, so the buffers
are made from the accesses themselves: every access the lifter sees (thread loads and
stores, TMA destinations and sources, cp.async destinations, MMA operands) is an
interval of bytes in an allocation; the boundaries of all intervals cut each
allocation into *atoms*, and an atom is a buffer.  A pipeline's stage buffer, which
every access touches whole, is one atom; nothing is merged, so two stages are never
confused (no false race from coarse buffers).

When each effect happens, in the model's terms (``model/program.py`` ``GhostEffect``):

* a thread's reads and writes between two synchronisation instructions may happen at
  any moment of that window.  The read is checked at its start (``post`` of the
  warp's previous instruction: right after the wait that should protect it) and the
  buffer stays *held* until the warp's next release (an mbarrier arrive, ``bar.sync``
  /``bar.arrive``, ``barrier.cluster.arrive``); a write begins at the window's start
  and ends (becomes visible) at that release (PTX ISA 8.8: a release orders the
  thread's earlier accesses).  With every interleaving explored, checking at the
  window's edges finds each race an access anywhere inside it could have;
* a thread store marks the buffer *dirty* until ``fence.proxy.async`` (PTX ISA
  9.7.13.4.1); a TMA store or MMA reading a dirty buffer is ``missing-proxy-fence``;
* a TMA load writes its destination from issue to its delivery; a TMA store reads its
  source until ``cp.async.bulk.wait_group.read``; cp.async writes until the arrive
  that tracks it fires; a tcgen05 MMA reads its operands until its ``tcgen05.commit``
  fires; a wgmma's share of the warp reads them until a ``wgmma.wait_group`` of *any*
  warp of its warpgroup retires the group the warp's ``wgmma.commit_group`` closed
  (``model/wgmma.py``: the warpgroup's MMA is one collective operation).

Tags are ``ANY_FILL``: the model cannot tell which fill a lifted read expects (that
needs the pipeline state, which the IR has folded into parities), so a read of the
previous fill with nothing in flight is not reported as a race; a wait on the wrong
parity still shows up in the barrier protocol (stale parity, phase overrun).
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Any, Iterable, Optional

from ...model.program import BufRef, GhostEffect, Instr, Nop
from ...model.system import ANY_FILL
from ...model.wgmma import commit_effect, read_effects
from .values import Lanes, Ptr, View, crd2idx, flatten, lane, layout_of

RELEASES = ("Arrive", "NamedBarrierOp", "ClusterArrive")


def cosize_bytes(v: View) -> Optional[int]:
    """Bytes a view spans: ``(1 + sum((s - 1) * |d|)) * element size``."""
    lay = layout_of(v.type)
    if lay is None:
        return None
    shape, stride = flatten(lay[0]), flatten(lay[1])
    if len(shape) != len(stride) or not all(isinstance(x, int) for x in shape + stride):
        return None
    eb = v.ptr.ebytes if isinstance(v.ptr, Ptr) else v.ebytes
    return (1 + sum((s - 1) * abs(d) for s, d in zip(shape, stride))) * max(1, eb)


class Ghosts:
    """Phase 1 collects intervals; phase 2 turns accesses into effects."""

    def __init__(self, lf: Any, enabled: bool = True) -> None:
        self.lf = lf
        #: off: no buffers, so no ghost effects (the barrier protocol alone: far fewer
        #: states on large kernels; ``--data-races off``)
        self.enabled = enabled
        self.intervals: dict[int, set[tuple[int, int]]] = {}
        self.atoms: dict[int, list[tuple[int, int]]] = {}
        self.untracked: dict[int, str] = {}
        self.names: dict[tuple[int, int], tuple[str, int]] = {}
        self.sizes: dict[str, int] = {}
        self.clc: set[tuple[int, int, int]] = set()  # CLC response intervals

    # ------------------------------------------------------------------ footprints
    def view_interval(self, v: Any, mask: Any, coord: Any = None
                      ) -> Optional[tuple[int, int, int]]:
        """(alloc, lo, hi) of shared memory a view (or one element of it, at ``coord``,
        per lane) covers; None when it is not shared memory the lifter can follow."""
        if not isinstance(v, View):
            return None
        if isinstance(v.ptr, Lanes):  # a per-thread partition: the union over lanes
            ivs = [self.view_interval(View(lane(v.ptr, i), v.type, v.ebytes), 1, coord)
                   for i in self.lf.active(mask)]
            if not ivs or any(x is None for x in ivs) or len({x[0] for x in ivs}) != 1:
                return None
            return ivs[0][0], min(x[1] for x in ivs), max(x[2] for x in ivs)
        p = v.ptr
        if isinstance(p, Ptr) and p.space == "smem" and p.span is not None:
            lo, hi, _ = p.span  # a partition: the warp's region, not lane 0's
            return (p.alloc, lo, hi) if hi > lo >= 0 else None
        if coord is None:
            if not isinstance(p, Ptr) or p.space != "smem":
                return None
            n = cosize_bytes(v)
            if n is None:
                return None
            return p.alloc, p.off, p.off + n
        lay = layout_of(v.type)
        p = v.ptr
        if lay is None or not isinstance(p, Ptr) or p.space != "smem":
            return None
        offs = []
        for i in (self.lf.active(mask) if mask != 1 else [0]):
            c = lane(coord, i)
            try:
                off = crd2idx(c, lay[0], lay[1])
            except (TypeError, ValueError):
                return None
            if not isinstance(off, int):
                return None
            offs.append(off)
        if not offs:
            return None
        eb = max(1, v.ebytes)
        return p.alloc, p.off + min(offs) * eb, p.off + (max(offs) + 1) * eb

    def touch(self, iv: Optional[tuple[int, int, int]], write: bool = True,
              force: bool = False) -> None:
        """Record an access (phase 1).  ``force``: even with data races off (a CLC
        response buffer: its value steers the warps' loops)."""
        if (self.enabled or force) and iv is not None and iv[2] > iv[1]:
            self.intervals.setdefault(iv[0], set()).add((iv[1], iv[2], write))

    def finish_phase1(self) -> None:
        """Cut every allocation at the boundaries of the intervals accessed; name each
        atom after the smem field (or user variable) it lies in, numbered in order."""
        self.names: dict[tuple[int, int], tuple[str, int]] = {}
        counts: dict[str, int] = {}
        for alloc, ivs in sorted(self.intervals.items()):
            if alloc in self.untracked:
                continue
            # writes cut buffers; a read only bounds memory no write touches (a read of
            # part of a buffer every write covers whole races exactly when a read of
            # all of it would, so coarser buffers lose nothing and save states)
            writes = [(lo, hi) for lo, hi, w in ivs if w]
            cuts = {x for lo, hi in writes for x in (lo, hi)}
            cuts |= {x for lo, hi, w in ivs if not w for x in (lo, hi)
                     if not any(a < x < b for a, b in writes)}
            cuts = sorted(cuts)
            atoms = [(a, b) for a, b in zip(cuts, cuts[1:])
                     if any(lo < b and a < hi for lo, hi, _ in ivs)]
            self.atoms[alloc] = atoms
            for k, (a, _) in enumerate(atoms):
                name = self.lf.field_name(Ptr("smem", alloc, a)) or f"smem{alloc}"
                self.names[(alloc, k)] = (name, counts.get(name, 0))
                counts[name] = counts.get(name, 0) + 1
        self.sizes = counts

    def untrack(self, alloc: int, why: str) -> None:
        """An access the lifter cannot locate: no race checks on this allocation (a
        write it cannot see would make every later read look like a race)."""
        if alloc not in self.untracked:
            self.untracked[alloc] = why

    def bufs(self, iv: Optional[tuple[int, int, int]], cta: int
             ) -> list[tuple[BufRef, int]]:
        """The buffers (atoms) an interval covers, with the bytes of it in each."""
        if iv is None:
            return []
        alloc, lo, hi = iv
        atoms = self.atoms.get(alloc, [])
        i = bisect.bisect_right([a for a, _ in atoms], lo) - 1
        out = []
        for k in range(max(0, i), len(atoms)):
            a, b = atoms[k]
            if a >= hi:
                break
            if b > lo:
                name, idx = self.names[(alloc, k)]
                out.append((BufRef(cta, name, idx), min(b, hi) - max(a, lo)))
        return out

    def declarations(self) -> dict[str, int]:
        """Buffer name -> number of atoms (the model's stages of that buffer)."""
        return dict(self.sizes)

    # ------------------------------------------------------------------ effects
    def _attach_post(self, effects: Iterable[GhostEffect], op: Any) -> None:
        """Effects at the start of the current window: ``post`` of the warp's previous
        synchronisation instruction (whose label then names the access and its line,
        so a counterexample points at the load or store), else a step of their own."""
        effects = tuple(effects)
        if not effects:
            return
        code = self.lf.w.code
        last = code[-1] if code else None
        if isinstance(last, Instr) and last.is_sync and type(last).__name__ != "Exit" \
                and type(last).__name__ != "Nop":
            what = _describe(effects)
            loc = self.lf.loc(op)
            at = f" (line {loc.line})" if loc.line else ""
            code[-1] = replace(last, post=last.post + effects,
                               label=f"{last.label}; then {what}{at}" if what else last.label)
            self.lf.replaced(last, code[-1])
        elif isinstance(last, Nop):
            code[-1] = replace(last, pre=last.pre + effects)
        else:
            self.lf.emit(self.lf.make(Nop, op, "smem access", pre=effects))

    def thread_read(self, iv: Any, op: Any) -> None:
        w = self.lf.w
        new = [b for b, _ in self.bufs(iv, w.cta) if b not in w.held and b not in w.written]
        w.held.update(new)
        self._attach_post([e for b in new for e in (GhostEffect("read", b, ANY_FILL),
                                                    GhostEffect("hold", b))], op)

    def thread_write(self, iv: Any, op: Any) -> None:
        w = self.lf.w
        effects: list[GhostEffect] = []
        for b, _ in self.bufs(iv, w.cta):
            if b in w.written:
                continue
            if b in w.held:  # the warp's own read of it ends before it overwrites it
                w.held.discard(b)
                effects.append(GhostEffect("unhold", b))
            w.written.add(b)
            effects.append(GhostEffect("write_begin", b, ANY_FILL))
            if b not in w.dirty:
                w.dirty.add(b)
                effects.append(GhostEffect("dirty", b))
        self._attach_post(effects, op)

    def release_effects(self) -> tuple[GhostEffect, ...]:
        """``pre`` of a release: the window's writes end, its reads stop holding."""
        w = self.lf.w
        out = tuple(GhostEffect("write_end", b, ANY_FILL) for b in sorted(w.written))
        out += tuple(GhostEffect("unhold", b) for b in sorted(w.held))
        w.written.clear()
        w.held.clear()
        return out

    def fence_proxy(self, op: Any) -> None:
        """``fence.proxy.async``: the warp's dirty buffers are clean from its next
        instruction on (``Lifter.emit`` puts the effects first in its ``pre``).  Any
        warp ordered after the fence is ordered after a release the warp makes after
        it, so no observer can tell the difference -- and a step of its own per fence
        multiplied the interleavings of epilogue warps."""
        w = self.lf.w
        if w.dirty:
            w.pending_clean.extend(GhostEffect("clean", b) for b in sorted(w.dirty))
            w.dirty.clear()

    def mma_read(self, iv: Any, op: Any, tcgen05: bool) -> None:
        """An MMA reads its smem operands through the async proxy."""
        w = self.lf.w
        effects: list[GhostEffect] = []
        for b, _ in self.bufs(iv, w.cta):
            if not tcgen05:  # held until its wgmma-group completes (wgmma_wait)
                if b not in w.wgmma_open:
                    w.wgmma_open.add(b)
                    effects += read_effects(b, ANY_FILL)
                continue
            if b in w.mma_held:
                continue
            w.mma_held.add(b)
            effects += [GhostEffect("read", b, ANY_FILL), GhostEffect("async_read", b)]
        self._attach_post(effects, op)

    def wgmma_commit(self, op: Any) -> None:
        """``wgmma.commit_group``: the warp's wgmma reads since its last commit form its
        share of the warpgroup's next wgmma-group (at the window's start, with the reads
        it closes: nothing else of the warp's happens between them that another warp
        could observe)."""
        w = self.lf.w
        w.wgmma_open.clear()
        self._attach_post([commit_effect(w.cta)], op)

    def umma_commit_effects(self) -> tuple[GhostEffect, ...]:
        w = self.lf.w
        out = tuple(GhostEffect("unhold", b) for b in sorted(w.mma_held))
        w.mma_held.clear()
        return out

    def own_write_end(self, bufs: Iterable[BufRef]) -> tuple[GhostEffect, ...]:
        """A TMA store or cp.async of the warp's own pending writes: they end at issue."""
        w = self.lf.w
        out = []
        for b in bufs:
            if b in w.written:
                w.written.discard(b)
                out.append(GhostEffect("write_end", b, ANY_FILL))
        return tuple(out)


def _describe(effects: tuple[GhostEffect, ...]) -> str:
    verbs = {"read": "reads", "write_begin": "writes"}
    parts = []
    for e in effects:
        v = verbs.get(e.kind)
        if v:
            parts.append(f"{v} {e.buf.buffer}[{e.buf.stage}]")
    return ", ".join(dict.fromkeys(parts))


def clc_response(self: Ghosts, iv: Optional[tuple[int, int, int]], op: Any) -> Any:
    """A copy out of a CLC response buffer: the warp reads the response (a local of its
    program, ``DynExpr("response", buf)``, as ``model/compile.py`` reads one).  With a
    grid of ``n`` clusters at most ``n - 1`` try_cancel calls succeed and a warp reads
    the responses in order, so its ``n``-th read and later ones must say "no more
    work": that is checked (a ``role-misuse`` Fail on the other side, guard
    ``clc-grid``), and the read is then the constant 0, which ends the warp's loop."""
    from ...model.program import Branch, DynExpr, Fail, SetLocal
    from ...model.properties import Prop

    from .values import Dyn

    lf = self.lf
    if iv is None or not any(a == iv[0] and lo < iv[2] and iv[1] < hi
                             for a, lo, hi in self.clc):
        return 0 if lf.discovering else None

    w = lf.w
    w.clc_reads += 1
    n = lf.grid_clusters
    if lf.phase == 1:
        return Dyn(DynExpr("local", ("?",))) if w.clc_reads < n else 0
    parts = self.bufs(iv, lf.w.cta)
    if not parts:
        return None
    buf = parts[0][0]
    dest = lf.new_local("clc_valid")
    lf.emit(lf.make(SetLocal, op, f"read CLC response {buf.buffer}[{buf.stage}]", dest=dest,
                    value=DynExpr("response", (buf,)),
                    pre=(GhostEffect("read", buf, ANY_FILL),) if self.enabled else ()))
    if w.clc_reads < n:
        return Dyn(DynExpr("local", (dest,)))
    at = len(w.code)
    lf.emit(lf.make(Branch, op, "CLC response must be 'no more work'",
                    cond=DynExpr("not", (DynExpr("local", (dest,)),)), then=at + 2,
                    orelse=at + 1))
    lf.emit(lf.make(Fail, op, "CLC response past the grid", prop=Prop.ROLE_MISUSE,
                    message=f"this is the warp's CLC response number {w.clc_reads}, which "
                            f"must say 'no more work' (a grid of {n} clusters lets "
                            f"try_cancel succeed at most {n - 1} times), yet it is a valid "
                            "tile: the warp read a stale response or skipped one",
                    guard="clc-grid"))
    return 0


Ghosts.clc_response = clc_response  # type: ignore[attr-defined]
