"""The state-independent part of the stubborn-set closure as integer tables.

``por.Footprints`` holds, per warp and pc, footprints (sets of ``(object, mode)``),
segment successors, barrier operations and arrival counts as Python objects; the closure
(``por._Ctx``) looks them up in every state.  A closure in native code (issue 26: the
stubborn sets inside the native engine's breadth-first search) needs the same tables as
flat integer arrays.  ``PorTables`` is that encoding, and nothing more: every entry is a
re-coding of a ``Footprints`` entry (``decode_*`` turns it back, and
tests/test_por_tables.py checks that the round trip gives the Python tables on the
bundled examples); no rule is restated here.

Coding:

* objects (``("bar", BarRef)``, ``("arr", cta, name)``, ``("buf", ...)``, ...) and modes
  (``"A"``, ``"WE3"``, ...) are numbered in the order of their ``repr``; a footprint is a
  sorted tuple of *pair ids* ``object_id * len(modes) + mode_id``;
* ``conflict[i * len(modes) + j]`` is ``por.conflicts(modes[i], modes[j])``: the
  relation evaluated once per mode pair;
* barriers (``BarRef``) have their own numbering (``bars``); a barrier operation is
  ``(bar id, kind, count, tx)`` with kind 0 = "A" (arrive), 1 = "X" (complete_tx),
  2 = "W" (anything else), as in ``Footprints.bar_ops``; ``seg_ops`` is None where a loop
  makes a segment's operations unbounded; ``seg_arr`` is ``((bar id, count), ...)`` with
  ``por.INF`` for unbounded counts.

* try_waits: ``try_bar`` / ``try_tok`` per pc; ``known_*`` re-code
  ``Footprints.known_segment`` for every pc and every non-empty mask of the warp's tokens
  known to be 0 (rows ``pc * 2**n_tok + mask`` per agent; ``known_next`` as ``(pc, mask)``).

``flat()`` gives the compressed-row arrays (offsets and data, int64) a C closure reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...model.program import (ClusterWait, NamedWait, TryWait, Wait, WgmmaWait,
                             control_successors)
from .footprints import Footprints
from .modes import conflicts

#: try_wait tokens a warp may have for its known segments to be tabled whatever its
#: length (2**k masks a pc); a warp with more has them tabled only while it has at most
#: ``MORE_TOKENS`` and ``KNOWN_ROWS`` rows (pcs x masks: a walk's visited set has that
#: many entries), else none (``n_tok`` -1: a native walk that needs one gives up and the
#: Python closure answers).  NVIDIA's Blackwell GEMMs, lifted: the CLC one has warps of 6
#: tokens and up to 86 pcs, the 2-CTA one at 4 k-tiles warps of 8 tokens and up to 69 pcs
#: (2 x 69 x 256 known segments: 3.3 s to table); at 4 tokens most of their seeds fell
#: back to the Python closure
MAX_TOKENS = 4
MORE_TOKENS = 8
KNOWN_ROWS = 1 << 16


def tabled_tokens(n_tokens: int, n_pcs: int) -> bool:
    """Are a warp's known segments tabled (see ``MAX_TOKENS``)?"""
    return n_tokens <= MAX_TOKENS or (n_tokens <= MORE_TOKENS
                                      and n_pcs << n_tokens <= KNOWN_ROWS)

#: operation kinds of ``Footprints.bar_ops`` -> small ints
KINDS = ("A", "X", "W")
_KIND_ID = {k: i for i, k in enumerate(KINDS)}

Table = tuple  # per agent, per pc


@dataclass(frozen=True)
class PorTables:
    """``Footprints`` of one system re-coded as integers (see the module docstring)."""

    objects: tuple
    modes: tuple
    bars: tuple
    #: row-major ``len(modes) x len(modes)`` 0/1 bytes
    conflict: bytes
    #: per agent: the program has no back edge (``Footprints.acyclic``)
    acyclic: tuple
    #: per agent, per pc: the pc holds a blocking instruction
    blocking: Table
    step: Table
    #: ``Footprints.noncompleting``: None where the pc is no cluster arrive / exit
    noncompleting: Table
    future_env: Table
    seg_fp: Table
    seg_fp_nc: Table
    seg_next: Table
    seg_ops: Table
    seg_arr: Table
    #: object ids the warp may write from pc on
    writers_from: Table
    #: bar ids the warp may arrive at from pc on
    arrivers_from: Table
    #: the bar id an mbarrier wait (``Wait``) at pc is on, else -1
    wait_bar: Table
    #: a wait's parity, and its ghost phase (-1: none); 1 where the wait is on a
    #: barrier of its own CTA that the system has (else it never blocks)
    wait_parity: Table
    wait_ghost: Table
    wait_own: Table
    #: what ``_Ctx._block_requirement`` looks at: 0 nothing (never blocked unless now),
    #: 1 an mbarrier wait, 2 a cluster wait, 3 anything else it asks about
    block_kind: Table
    #: the control successors of each pc (``model.program.control_successors``)
    succ: Table
    #: the bar id of a ``TryWait`` at pc, else -1 (its parity, ghost phase and own-CTA
    #: flag are in ``wait_parity``, ``wait_ghost``, ``wait_own``)
    try_bar: Table
    #: the bit of a ``TryWait``'s token in its warp's ``tokens``, else -1
    try_tok: Table
    #: per agent: ``Footprints.tokens`` in bit order (sorted)
    tokens: tuple
    #: per agent: ``len(tokens)``, or -1 where ``tabled_tokens`` says no (no known rows)
    n_tok: tuple
    #: ``Footprints.known_segment`` per agent, for each pc and each non-empty mask of
    #: its tokens known to be 0 (row ``pc * 2**n_tok + mask``; mask 0 rows are empty):
    #: the footprint (plain and non-completing), arrival counts, operations (None
    #: after a loop) and the nodes where it stops, ``(pc, mask)`` each
    known_fp: Table
    known_fp_nc: Table
    known_arr: Table
    known_ops: Table
    known_next: Table

    @property
    def n_modes(self) -> int:
        return len(self.modes)

    def conflicts(self, p: int, q: int) -> bool:
        """Do pair ids ``p`` and ``q`` conflict (same object, conflicting modes)?"""
        n = self.n_modes
        return p // n == q // n and self.conflict[(p % n) * n + q % n] == 1

    def decode_fp(self, fp: Optional[tuple]) -> Optional[frozenset]:
        if fp is None:
            return None
        n = self.n_modes
        return frozenset((self.objects[p // n], self.modes[p % n]) for p in fp)

    def decode_ops(self, ops: Optional[tuple]) -> Optional[tuple]:
        if ops is None:
            return None
        return tuple((self.bars[b], KINDS[k], c, tx) for b, k, c, tx in ops)

    def decode_arr(self, arr: tuple) -> dict:
        return {self.bars[b]: c for b, c in arr}

    def flat(self) -> dict[str, list[int]]:
        """Compressed rows for native code: for each per-pc table ``T``, ``T_off`` (one
        offset per (agent, pc) in agent-major order, plus the end) and ``T`` (the data);
        ``pc_base`` (the first row of each agent, plus the end).  Operations are four
        ints each; None (unbounded operations) is offset -1 in ``seg_ops_off``."""
        out: dict[str, list[int]] = {"pc_base": [0]}
        for rows in self.step:
            out["pc_base"].append(out["pc_base"][-1] + len(rows))
        out["blocking"] = [int(x) for rows in self.blocking for x in rows]
        for name in ("wait_bar", "wait_parity", "wait_ghost", "wait_own", "block_kind",
                     "try_bar", "try_tok"):
            out[name] = [x for rows in getattr(self, name) for x in rows]
        out["acyclic"] = [int(x) for x in self.acyclic]
        out["n_tok"] = list(self.n_tok)
        out["known_base"] = [0]
        for rows in self.known_fp:
            out["known_base"].append(out["known_base"][-1] + len(rows))
        out["conflict"] = list(self.conflict)
        for name in ("step", "future_env", "seg_fp", "seg_fp_nc", "seg_next", "succ",
                     "writers_from", "arrivers_from", "noncompleting", "seg_ops", "seg_arr",
                     "known_fp", "known_fp_nc", "known_arr", "known_ops", "known_next"):
            off: list[int] = []
            data: list[int] = []
            for rows in getattr(self, name):
                for row in rows:
                    if row is None:
                        off.append(-1)
                        continue
                    off.append(len(data))
                    for x in row:
                        if isinstance(x, tuple):
                            data.extend(x)
                        else:
                            data.append(x)
            off.append(len(data))
            out[name + "_off"] = off
            out[name] = data
        return out


def build(fp: Footprints) -> PorTables:
    """Number the objects, modes and barriers of ``fp``'s tables and re-code them."""
    sysm = fp.sys
    n = len(sysm.agents)
    pcs = [range(len(sysm.code(a))) for a in range(n)]
    fps: list = []
    ops_rows: list = []
    for a in range(n):
        for pc in pcs[a]:
            fps += [fp.step[a][pc], fp.future_env[a][pc], fp.seg_fp[a][pc],
                    fp.seg_fp_nc[a][pc]]
            if fp.noncompleting[a][pc] is not None:
                fps.append(fp.noncompleting[a][pc])
            ops_rows.append(fp.seg_ops[a][pc] or ())
    objs = {o for f in fps for o, _m in f}
    objs |= {o for a in range(n) for pc in pcs[a] for o in fp.writers_from[a][pc]}
    # the known segments' footprints are the steps' own (``known_segment``): no new
    # objects or modes; their barriers are those of the steps' operations
    objects = tuple(sorted(objs, key=repr))
    # the modes a closure round may add (promotions "M", release flags "MR") or asks
    # about are numbered even where no footprint has them
    modes = tuple(sorted({m for f in fps for _o, m in f} | {"A", "X", "O", "W", "R", "M", "MR",
                                                             "NA"}))
    bar_set = {op[0] for ops in ops_rows for op in ops}
    bar_set |= {b for a in range(n) for pc in pcs[a] for b in fp.seg_arr[a][pc]}
    bar_set |= {b for a in range(n) for pc in pcs[a] for b in fp.arrivers_from[a][pc]}
    bar_set |= set(sysm.bar)
    bar_set |= {ins.bar for a in range(n) for ins in sysm.code(a)
                if isinstance(ins, (Wait, TryWait))}
    bars = tuple(sorted(bar_set, key=repr))
    oid = {o: i for i, o in enumerate(objects)}
    mid = {m: i for i, m in enumerate(modes)}
    bid = {b: i for i, b in enumerate(bars)}
    nm = len(modes)

    def code(f: Optional[frozenset]) -> Optional[tuple]:
        if f is None:
            return None
        return tuple(sorted(oid[o] * nm + mid[m] for o, m in f))

    def ops(o: Optional[tuple]) -> Optional[tuple]:
        if o is None:
            return None
        return tuple((bid[b], _KIND_ID[k], c, tx) for b, k, c, tx in o)

    def per_pc(f: Any) -> Table:
        return tuple(tuple(f(a, pc) for pc in pcs[a]) for a in range(n))

    tokens = tuple(tuple(sorted(fp.tokens[a])) for a in range(n))
    n_tok = tuple(len(t) if tabled_tokens(len(t), len(pcs[a])) else -1
                  for a, t in enumerate(tokens))
    known: list = [[], [], [], [], []]
    for a in range(n):
        rows: list = [[], [], [], [], []]
        if n_tok[a] > 0:
            bit = {name: i for i, name in enumerate(tokens[a])}
            for pc in pcs[a]:
                for mask in range(1 << n_tok[a]):
                    if mask == 0:
                        for r in rows:
                            r.append(())
                        continue
                    zero = frozenset(name for name, i in bit.items() if mask >> i & 1)
                    kf, karr, kops, nxt = fp.known_segment(a, pc, zero, False)
                    kf_nc = fp.known_segment(a, pc, zero, True)[0]
                    rows[0].append(code(kf))
                    rows[1].append(code(kf_nc))
                    rows[2].append(tuple(sorted((bid[b], c) for b, c in karr.items())))
                    rows[3].append(ops(kops))
                    rows[4].append(tuple((q, sum(1 << bit[x] for x in z)) for q, z in nxt))
        for k in range(5):
            known[k].append(tuple(rows[k]))

    return PorTables(
        objects=objects, modes=modes, bars=bars,
        conflict=bytes(int(conflicts(m1, m2)) for m1 in modes for m2 in modes),
        acyclic=tuple(fp.acyclic),
        blocking=per_pc(lambda a, pc: fp.blocking[a][pc]),
        step=per_pc(lambda a, pc: code(fp.step[a][pc])),
        noncompleting=per_pc(lambda a, pc: code(fp.noncompleting[a][pc])),
        future_env=per_pc(lambda a, pc: code(fp.future_env[a][pc])),
        seg_fp=per_pc(lambda a, pc: code(fp.seg_fp[a][pc])),
        seg_fp_nc=per_pc(lambda a, pc: code(fp.seg_fp_nc[a][pc])),
        seg_next=per_pc(lambda a, pc: tuple(fp.seg_next[a][pc])),
        seg_ops=per_pc(lambda a, pc: ops(fp.seg_ops[a][pc])),
        seg_arr=per_pc(lambda a, pc: tuple(sorted((bid[b], c)
                                                  for b, c in fp.seg_arr[a][pc].items()))),
        writers_from=per_pc(lambda a, pc: tuple(sorted(oid[o] for o in fp.writers_from[a][pc]))),
        arrivers_from=per_pc(lambda a, pc: tuple(sorted(bid[b]
                                                        for b in fp.arrivers_from[a][pc]))),
        wait_bar=per_pc(lambda a, pc: bid[sysm.code(a)[pc].bar]
                        if isinstance(sysm.code(a)[pc], Wait) else -1),
        wait_parity=per_pc(lambda a, pc: _wait(sysm, a, pc).parity if _wait(sysm, a, pc) else 0),
        wait_ghost=per_pc(lambda a, pc: -1 if not _wait(sysm, a, pc) or
                          _wait(sysm, a, pc).ghost is None else _wait(sysm, a, pc).ghost),
        wait_own=per_pc(lambda a, pc: int(bool(_wait(sysm, a, pc)) and
                                          _wait(sysm, a, pc).bar.cta == sysm.agents[a].cta
                                          and _wait(sysm, a, pc).bar in sysm.bar)),
        block_kind=per_pc(lambda a, pc: _block_kind(sysm.code(a)[pc])),
        succ=per_pc(lambda a, pc: tuple(control_successors(sysm.code(a), pc))),
        try_bar=per_pc(lambda a, pc: bid[sysm.code(a)[pc].bar]
                       if isinstance(sysm.code(a)[pc], TryWait) else -1),
        try_tok=per_pc(lambda a, pc: tokens[a].index(sysm.code(a)[pc].dest)
                       if isinstance(sysm.code(a)[pc], TryWait) and n_tok[a] > 0 else -1),
        tokens=tokens, n_tok=n_tok,
        known_fp=tuple(known[0]), known_fp_nc=tuple(known[1]), known_arr=tuple(known[2]),
        known_ops=tuple(known[3]), known_next=tuple(known[4]),
    )


def _block_kind(ins: Any) -> int:
    if isinstance(ins, Wait):
        return 1
    if isinstance(ins, ClusterWait):
        return 2
    if isinstance(ins, (NamedWait, WgmmaWait)):
        return 3
    return 0


def _wait(sysm: Any, a: int, pc: int) -> Optional[Any]:
    """The ``Wait`` or ``TryWait`` at pc (a try_wait asks what a wait on its barrier
    asks: ``_Ctx._block_requirement``)."""
    ins = sysm.code(a)[pc]
    return ins if isinstance(ins, (Wait, TryWait)) else None
