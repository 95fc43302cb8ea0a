"""PipelineState in registers: fold the unrolled copies of a structured loop into one body.

Structured compilation (``impl/structured.py``) keeps ``for k in range(k_tiles)`` a loop,
but the compiler tracks pipeline states statically, so the loop closes only once the
states repeat (``4 * stages`` iterations, the period of the model's ghost phase) and the
body is copied that many times, each copy with its own constant stage indices and
parities.  CUTLASS keeps ``PipelineState`` (index, phase) in registers instead
(``cutlass/pipeline/helpers.py``: ``advance`` adds one to the index, wraps it to 0 at
``stages`` and flips the phase).  This module finds, in one compiled warp program, the
copies of a loop body that differ only through such a state, and plans their emission as
one body whose operands are computed from registers:

* a *state class* per stage count ``N``: registers ``index`` and ``phase`` (the phase
  number modulo 2, or modulo 4 where data-stamp tags need the model's ghost phase),
  starting at the first copy's index and phase 0, advanced once per iteration by the
  model's own rule (``model.pipeline_state.advance_rule``, lowered to PTX by the
  emitter);
* every operand that varies between copies is *explained*: a stage index is
  ``advance^m(state).index`` for a fixed ``m``, a parity is ``(phase + d) mod 2``, a
  data tag ``(phase + d) mod 4`` -- checked against the compiled value of every copy, so
  the folded body computes exactly the operands each copy has;
* the trace's program counter (and the layout's per-instruction source regions) of copy
  ``j`` is ``pc + j * stride``, computed from a copy counter, so GPU traces still name
  the model's instruction of the copy that ran (``impl/replay.py`` is unchanged);
* the copy counter wraps where the model's program jumps back (``copies`` to
  ``wrap_to``), so the registers hold the state of the copy the model is in.

Anything else varying between copies (a different instruction, a branch inside the body,
an emulated ``tcgen05.commit`` deferred across iterations, a loop that continues into more
than straight-line code) keeps today's copies, and ``plan`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Optional, Union

from ..model.pipeline_state import PipelineStateVal
from ..model.program import (NO_DATA, PARITY_TAG, AgentProgram, Arrival, Arrive, BarRef, Branch,
                             BufRef, Delivery, CpAsync, Exit, GhostEffect, Instr, Jump,
                             SetLocal, TmaLoad, TmaStore, TryWait, UmmaCommit, Wait)

#: instruction fields no PTX is emitted from (model-only: the ghost phase of a wait and
#: of an arrival drive the stale-parity and surplus checks; a delivery's or cp.async's
#: tag is the stamp the runner writes into the source region of that pc)
MODEL_ONLY = {(Wait, "ghost"), (TryWait, "ghost"), (Arrival, "phase"), (Delivery, "tag"),
              (CpAsync, "tag")}
#: most copies of one body the planner looks at
MAX_COPIES = 4096


@dataclass(frozen=True)
class SymOff:
    """A shared-memory offset ``base + reg * stride`` (a stage index in a register)."""

    base: int
    stride: int
    reg: str

    def __add__(self, k: Any) -> "SymOff":
        if isinstance(k, int) and not isinstance(k, bool):
            return SymOff(self.base + k, self.stride, self.reg)
        return NotImplemented

    __radd__ = __add__


@dataclass(frozen=True)
class StageReg:
    """A stage index held in register ``reg`` (in place of a ``BarRef``/``BufRef``
    stage); ``stage * bytes`` is a ``SymOff``, so layouts compute addresses unchanged."""

    reg: str

    def __mul__(self, k: Any) -> SymOff:
        if isinstance(k, int) and not isinstance(k, bool):
            return SymOff(0, k, self.reg)
        return NotImplemented

    __rmul__ = __mul__


@dataclass(frozen=True)
class TagReg:
    """A data tag held in register ``reg``: a phase number mod 4, or (``parity``) a
    parity tag ``PARITY_TAG + reg`` compared modulo 2 (``program.tags_match``)."""

    reg: str
    parity: bool = False


@dataclass(frozen=True)
class Explain:
    """How one varying operand follows the state of class ``cls``: ``kind`` ``stage``
    (``advance^shift(state).index``), ``parity`` (``(phase_of(advance^shift) + offset) mod
    2``) or ``tag`` (mod 4, or a parity tag when ``parity_tag``)."""

    kind: str
    cls: int
    shift: int
    offset: int = 0
    parity_tag: bool = False


#: an operand slot: either a constant (the same in every copy) or an explanation
SlotVal = Union[Explain, Any]


@dataclass(frozen=True)
class Region:
    """Template pcs (those of the first folded copy) and the pc distance between copies."""

    pcs: tuple[int, ...]
    stride: int


@dataclass(frozen=True)
class Fold:
    """One folded loop of a warp program."""

    head: int                       # the loop test of the first folded copy
    body: Region                    # its body (ends just before the next copy's test)
    exit: Optional[Region]          # the continuation after the loop (None: shared code)
    copies: int                     # folded copies (n - j0)
    wrap_to: int                    # the copy the model's back edge returns to
    #: (stages, start index, start phase number) per state class
    classes: tuple[tuple[int, int, int], ...]
    phases: int                     # 2 (phase bit) or 4 (ghost phase, data tags)
    skip: frozenset                 # pcs not emitted (the other copies)
    slots: dict                     # template pc -> tuple of SlotVal, in walk order
    #: template pc -> (first copy's source/destination offset, per-copy distance)
    regions: dict
    #: whether a copy counter is needed (trace pcs, per-copy regions)
    counter: bool
    #: runs in the continuation: first pc -> (length, class, shift of its first element):
    #: consecutive instructions that are one template whose state advances once from one
    #: to the next (``producer_tail``'s wait on every stage), emitted as a PTX loop
    runs: dict = field(default_factory=dict)

    @property
    def body_end(self) -> int:
        return self.body.pcs[-1]

    def describe(self) -> str:
        n = ", ".join(f"{s} stages" for s, _, _ in self.classes) or "no state"
        return (f"{self.copies} copies of the loop at pc {self.head} folded into one body "
                f"(PipelineState in registers: {n})")


# --------------------------------------------------------------------------- shapes


#: a ghost effect that leaves no trace in the PTX (``_walk``)
_DROP = object()


def _walk(x: Any, out: list, emitted: frozenset, owner: Any = None) -> Any:
    """The shape of ``x`` with its state-dependent operands taken out into ``out``
    (``(kind, link, value)``: ``link`` is the slot of the stage the operand belongs to)."""
    if isinstance(x, BarRef):
        out.append(("stage", ("bar", x.array), x.stage))
        return ("BarRef", x.cta, x.array)
    if isinstance(x, BufRef):
        out.append(("stage", ("buf", x.buffer), x.stage))
        return ("BufRef", x.cta, x.buffer)
    if isinstance(x, GhostEffect):
        if x.kind not in emitted:
            # no PTX from it, but for the proxy fence of ``clean`` (its CTA matters);
            # whether an ``Arrive`` has ``post`` effects at all is part of its shape
            return ("effect", x.kind, x.buf.cta) if x.kind == "clean" else _DROP
        i = len(out)
        shape = ("effect", x.kind, _walk(x.buf, out, emitted))
        out.append(("tag", i, x.tag))
        return shape
    if isinstance(x, tuple):
        return tuple(y for y in (_walk(z, out, emitted) for z in x) if y is not _DROP)
    if is_dataclass(x) and not isinstance(x, type):
        t = type(x)
        parts: list = [t.__name__]
        if isinstance(x, Arrive):  # ``_Emitter.thread_arrivals``
            parts.append(("has post", bool(x.post)))
        bar_slot = None
        for f in fields(x):
            if f.name in ("loc", "label", "site") or (t, f.name) in MODEL_ONLY:
                continue
            v = getattr(x, f.name)
            if f.name == "parity" and t in (Wait, TryWait):
                out.append(("parity", bar_slot, v))
                parts.append(("parity",))
                continue
            if f.name == "bar":
                bar_slot = len(out)
            parts.append((f.name, _walk(v, out, emitted)))
        return tuple(parts)
    return x


def _rebuild(x: Any, vals: list, emitted: frozenset) -> Any:
    """``x`` with its operand slots replaced, in ``_walk`` order, by ``vals`` (popped)."""
    if isinstance(x, BarRef):
        return replace(x, stage=vals.pop(0))
    if isinstance(x, BufRef):
        return replace(x, stage=vals.pop(0))
    if isinstance(x, GhostEffect):
        if x.kind not in emitted:
            return x
        buf = _rebuild(x.buf, vals, emitted)
        return replace(x, buf=buf, tag=vals.pop(0))
    if isinstance(x, tuple):
        return tuple(_rebuild(y, vals, emitted) for y in x)
    if is_dataclass(x) and not isinstance(x, type):
        t = type(x)
        changes = {}
        for f in fields(x):
            if f.name in ("loc", "label", "site") or (t, f.name) in MODEL_ONLY:
                continue
            v = getattr(x, f.name)
            if f.name == "parity" and t in (Wait, TryWait):
                changes["parity"] = vals.pop(0)
                continue
            nv = _rebuild(v, vals, emitted)
            if nv is not v:
                changes[f.name] = nv
        return replace(x, **changes) if changes else x
    return x


def instantiate(ins: Instr, values: list, emitted: frozenset) -> Instr:
    """The template instruction ``ins`` with its slots set to ``values``."""
    vals = list(values)
    out = _rebuild(ins, vals, emitted)
    assert not vals
    return out


# --------------------------------------------------------------------------- planning


def _loop_heads(code: tuple, jump_pc: int) -> Optional[list[int]]:
    """The chain of loop tests whose bodies lead, straight-line, to the back edge at
    ``jump_pc``: ``[h_0, ..., h_{n-1}]`` (``h_i`` a ``Branch`` whose ``then`` is the next
    pc and whose body ends just before ``h_{i+1}``, the last one before ``jump_pc``)."""
    target = code[jump_pc].target
    t = code[target]
    if not isinstance(t, Branch) or t.then != target + 1:
        return None
    cond = t.cond
    heads = [pc for pc, i in enumerate(code) if isinstance(i, Branch) and i.cond == cond
             and i.then == pc + 1 and pc <= jump_pc]
    # walk back from the back edge through straight-line bodies
    chain = []
    end = jump_pc
    for h in sorted(heads, reverse=True):
        if h >= end:
            continue
        body = code[h + 1:end]
        if any(isinstance(i, (Branch, Jump, Exit)) for i in body):
            break
        chain.append(h)
        end = h
    chain.reverse()
    if target not in chain:
        return None
    return chain


def _straight(code: tuple, start: int) -> Optional[tuple[int, ...]]:
    """The pcs from ``start`` to the first ``Exit``, if straight-line."""
    pcs = []
    pc = start
    while 0 <= pc < len(code):
        i = code[pc]
        pcs.append(pc)
        if isinstance(i, Exit):
            return tuple(pcs)
        if isinstance(i, (Branch, Jump)) or (isinstance(i, SetLocal)
                                              and i.value.op == "response"):
            return None
        pc += 1
    return None


def _state(n: int, index: int, ghost: int, phases: int) -> PipelineStateVal:
    return PipelineStateVal(n, index, ghost, None, tracked=phases == 4)


def _adv(s: PipelineStateVal, m: int) -> PipelineStateVal:
    for _ in range(m):
        s = s.advance()
    return s


class _NoFold(Exception):
    pass


def plan(prog: AgentProgram, layout: Any, checks: bool, trace: bool,
         stream: bool = False, commits_deferred: bool = True) -> tuple[Optional[Fold], str]:
    """Plan the folding of ``prog``'s structured loop: ``(Fold, "")``, or ``(None, why)``.

    ``layout``: the emitter's ``impl.layout.Layout`` (stage counts and offsets);
    ``checks``: data stamps are emitted (their tags must be explained too); ``trace``:
    trace records name pcs; ``commits_deferred``: ``tcgen05.commit`` is emulated and
    deferred past the warp's next step (sm_90a), which names the next copy's pcs."""
    code = prog.code
    backs = [pc for pc, i in enumerate(code) if isinstance(i, Jump) and i.target <= pc]
    if not backs:
        return None, ""
    reasons = []
    for jpc in backs:
        try:
            return _plan_one(prog, jpc, layout, checks, trace, stream,
                             commits_deferred), ""
        except _NoFold as e:
            reasons.append(str(e))
    return None, reasons[0]


def emitted_effects(checks: bool) -> frozenset:
    """Ghost effects the emitter lowers to PTX (``_Emitter.ghost``): data stamps with checks."""
    return frozenset(("read", "write_begin", "write_end")) if checks else frozenset()


def _plan_one(prog: AgentProgram, jpc: int, layout: Any, checks: bool, trace: bool,
              stream: bool, commits_deferred: bool) -> Fold:
    code = prog.code
    heads = _loop_heads(code, jpc)
    if heads is None:
        where = next((pc for pc in range(code[jpc].target + 1, jpc)
                      if isinstance(code[pc], (Branch, Jump, Exit))), jpc)
        raise _NoFold(f"pc {where}: the loop body branches (only straight-line bodies are "
                      "folded; a run-time branch may skip the state's advance)")
    n = len(heads)
    c = heads.index(code[jpc].target)
    if n > MAX_COPIES:
        raise _NoFold(f"pc {jpc}: {n} copies")
    ends = heads[1:] + [jpc]
    lengths = {ends[i] - heads[i] for i in range(n)}
    if len(lengths) != 1:
        raise _NoFold(f"pc {jpc}: copies of the body differ in length")
    stride = lengths.pop()
    emitted = emitted_effects(checks)
    # continuations after the loop
    exits = [code[h].orelse for h in heads]
    shared = len(set(exits)) == 1
    last = None
    for j0 in range(0, c + 1):
        try:
            return _fold_from(prog, heads, j0, c, jpc, stride, exits, shared, layout,
                              emitted, checks, trace, stream, commits_deferred)
        except _NoFold as e:
            last = e
    raise last  # type: ignore[misc]


def _fold_from(prog: AgentProgram, heads: list, j0: int, c: int, jpc: int, stride: int,
               exits: list, shared: bool, layout: Any, emitted: frozenset, checks: bool,
               trace: bool, stream: bool, commits_deferred: bool) -> Fold:
    code = prog.code
    n = len(heads)
    js = range(j0, n)
    body0 = tuple(range(heads[j0] + 1, heads[j0] + stride))
    # the continuation region of each folded copy
    eregs: list = []
    estride = 0
    if not shared:
        for j in js:
            r = _straight(code, exits[j])
            if r is None:
                raise _NoFold(f"pc {jpc}: the code after the loop is not straight-line "
                              "(another loop or a branch follows)")
            eregs.append(r)
        if len({len(r) for r in eregs}) != 1:
            raise _NoFold(f"pc {jpc}: the continuations after the loop differ in length")
        dif = {eregs[i + 1][0] - eregs[i][0] for i in range(len(eregs) - 1)}
        if len(dif) > 1:
            raise _NoFold(f"pc {jpc}: the continuations after the loop are not evenly laid out")
        estride = dif.pop() if dif else 0
    # per template pc: the copies' pcs
    groups: list[tuple[int, list[int]]] = []
    for k, p in enumerate(body0):
        groups.append((p, [heads[j] + 1 + k for j in js]))
    if not shared:
        for k in range(len(eregs[0])):
            groups.append((eregs[0][k], [r[k] for r in eregs]))
    # every copy of a template pc has the template's shape
    slotvals: dict[int, list] = {}
    for p, pcs in groups:
        shapes = []
        for q in pcs:
            out: list = []
            ins = code[q]
            if isinstance(ins, UmmaCommit) and commits_deferred:
                raise _NoFold(f"pc {q}: an emulated tcgen05.commit in the loop (its "
                              "deferral crosses iterations)")
            if isinstance(ins, TmaLoad) and ins.kind == "clc":
                raise _NoFold(f"pc {q}: a CLC query in the loop")
            sh = _walk(ins, out, emitted)
            if isinstance(ins, TmaLoad):
                from .layout import delivery_key
                sh = (sh, delivery_key(prog, q, ins))
            shapes.append((sh, out))
        if any(s != shapes[0][0] for s, _ in shapes):
            bad = next(q for q, (s, _) in zip(pcs, shapes) if s != shapes[0][0])
            raise _NoFold(f"pc {bad}: the copies of the loop body differ in more than the "
                          "pipeline state (index and phase)")
        slotvals[p] = [o for _, o in shapes]
    # state classes: one per stage count, starting at the first copy's index
    stages_of = _stage_counts(layout)
    phases = 2
    if any(kind == "tag" for p, _ in groups for kind, _l, _v in slotvals[p][0]):
        phases = 4
    cls_list: list[tuple[int, int]] = []
    slots: dict[int, tuple] = {}
    for p, pcs in groups:
        per_copy = slotvals[p]
        nslots = len(per_copy[0])
        ex: list = [None] * nslots
        for s in range(nslots):
            kind, link, _ = per_copy[0][s]
            seq = [per_copy[i][s][2] for i in range(len(pcs))]
            if all(v == seq[0] for v in seq) and not (
                    kind == "stage" and stages_of.get(link) == 1 and _linked_varies(
                        per_copy, s)):
                # (a one-stage state keeps index 0 but its phase still flips: its class
                # carries the phase of the parities and tags that follow it)
                ex[s] = ("const", seq[0])
                continue
            if kind == "stage":
                nst = stages_of.get(link)
                if nst is None:
                    raise _NoFold(f"pc {p}: the stages of {link[1]} are not evenly laid out")
                ci = next((i for i, (st, _) in enumerate(cls_list) if st == nst), None)
                if ci is None:
                    if not all(isinstance(v, int) for v in seq):
                        raise _NoFold(f"pc {p}: a stage index that is not a number")
                    cls_list.append((nst, seq[0]))
                    ci = len(cls_list) - 1
                ex[s] = Explain("stage", ci, _shift_for(cls_list[ci], seq, j0, phases, p))
                continue
            # parity and tags follow the class of the stage they belong to
            if link is None or not isinstance(ex[link], Explain):
                raise _NoFold(f"pc {p}: a {kind} that varies while its stage does not")
            e = ex[link]
            ex[s] = _explain_phase(kind, e, cls_list[e.cls], seq, phases, p)
        for s in range(nslots):
            if isinstance(ex[s], tuple) and ex[s][0] == "const":
                ex[s] = _Const(ex[s][1])
        slots[p] = tuple(ex)
    # start each class at the phase of its first parity (or tag), as CUTLASS's state
    # starts at its own phase: that operand is then the phase register itself
    starts = []
    for ci in range(len(cls_list)):
        first = next((e for p, _ in groups for e in slots[p] if isinstance(e, Explain)
                      and e.cls == ci and e.kind != "stage"), None)
        d = first.offset if first is not None else 0
        starts.append(d)
        for p in slots:
            slots[p] = tuple(replace(e, offset=(e.offset - d) % (
                2 if e.kind == "parity" or e.parity_tag else phases))
                if isinstance(e, Explain) and e.cls == ci and e.kind != "stage" else e
                for e in slots[p])
    # the model's back edge: the registers after the last copy hold the state of copy c
    for nst, start in cls_list:
        s0 = _state(nst, start, 0, phases)
        if _adv(s0, n - j0) != _adv(s0, c - j0):
            raise _NoFold(f"pc {jpc}: the loop closes after {n - c} copies, not a multiple "
                          f"of the state's period")
    # per-copy source/destination regions of the layout (keyed by pc)
    regions: dict[int, tuple[int, int]] = {}
    for p, pcs in groups:
        ins = code[p]
        if isinstance(ins, (TmaLoad, CpAsync, TmaStore)):
            table = layout.dst if isinstance(ins, TmaStore) else layout.src
            offs = []
            for q in pcs:
                r = table.get((prog.cta, prog.warp, q))
                if r is None:
                    break
                offs.append(r if isinstance(r, int) else r.offset)
            if len(offs) != len(pcs):
                continue
            d = offs[1] - offs[0] if len(offs) > 1 else 0
            if any(offs[i] != offs[0] + i * d for i in range(len(offs))):
                raise _NoFold(f"pc {p}: the copies' global regions are not evenly laid out")
            regions[p] = (offs[0], d)
    skip = set()
    for j in range(j0 + 1, n):
        skip.update(range(heads[j], heads[j] + stride))
        if not shared:
            skip.update(eregs[j - j0])
    skip.add(jpc)
    _check_entries(code, skip, heads[j0] + stride - 1)
    counter = trace or checks or bool(regions) or stream
    runs = _runs(code, eregs[0], slots, emitted, regions) if not shared else {}
    return Fold(heads[j0], Region(body0, stride),
                None if shared else Region(eregs[0], estride), n - j0, c - j0,
                tuple((n_, i_, d_) for (n_, i_), d_ in zip(cls_list, starts)), phases,
                frozenset(skip), slots, regions, counter, runs)


def _runs(code: tuple, pcs: tuple, slots: dict, emitted: frozenset, regions: dict) -> dict:
    """Runs of consecutive continuation pcs that are one instruction on a state advanced
    once per element: same shape, same constants, every explained operand of one class
    with its shift one more than the element before (``Fold.runs``)."""
    def key(p: int) -> Optional[tuple]:
        exs = slots[p]
        live = [e for e in exs if isinstance(e, Explain)]
        if not live or len({e.cls for e in live}) != 1 or p in regions:
            return None
        base = min(e.shift for e in live)
        norm = tuple(replace(e, shift=e.shift - base) if isinstance(e, Explain) else e
                     for e in exs)
        return (_walk(code[p], [], emitted), norm, live[0].cls), base

    out: dict = {}
    i = 0
    while i < len(pcs):
        k = key(pcs[i])
        n = 1
        while k is not None and i + n < len(pcs) and pcs[i + n] == pcs[i] + n:
            k2 = key(pcs[i + n])
            if k2 is None or k2[0] != k[0] or k2[1] != k[1] + n:
                break
            n += 1
        if k is not None and n > 1:
            out[pcs[i]] = (n, k[0][2], k[1])
        i += n
    return out


def _linked_varies(per_copy: list, s: int) -> bool:
    """Does a parity or tag that belongs to stage slot ``s`` vary between copies?"""
    return any(link == s and any(c[t][2] != kind_v for c in per_copy)
               for t, (kind, link, kind_v) in enumerate(per_copy[0]) if kind != "stage")


@dataclass(frozen=True)
class _Const:
    value: Any


def _stage_counts(layout: Any) -> dict:
    out: dict = {}
    for name, (stages, _count) in layout.arrays.items():
        offs = [layout.bar_offset.get((name, s)) for s in range(stages)]
        if None in offs:
            continue
        step = offs[1] - offs[0] if stages > 1 else 0
        if all(offs[s] == offs[0] + s * step for s in range(stages)):
            out[("bar", name)] = stages
    for name, bl in layout.buffers.items():
        out[("buf", name)] = bl.stages
    return out


def _shift_for(cls: tuple[int, int], seq: list, j0: int, phases: int, pc: int) -> int:
    nst, start = cls
    s0 = _state(nst, start, 0, phases)
    for m in range(nst):
        sm = _adv(s0, m)
        ok = True
        s = sm
        for v in seq:
            if s.index != v:
                ok = False
                break
            s = s.advance()
        if ok:
            return m
    raise _NoFold(f"pc {pc}: a stage index that does not advance once per iteration "
                  f"({seq[:8]}...)")


def _explain_phase(kind: str, e: Explain, cls: tuple[int, int], seq: list, phases: int,
                   pc: int) -> Explain:
    nst, start = cls
    s = _adv(_state(nst, start, 0, phases), e.shift)
    ghosts = []
    for _ in seq:
        ghosts.append(s.ghost)
        s = s.advance()
    if kind == "parity":
        d = (seq[0] - ghosts[0]) % 2
        if all((g + d) % 2 == v for g, v in zip(ghosts, seq)):
            return Explain("parity", e.cls, e.shift, d)
    elif kind == "tag":
        if all(isinstance(v, int) and 0 <= v < PARITY_TAG for v in seq) and phases == 4:
            d = (seq[0] - ghosts[0]) % 4
            if all((g + d) % 4 == v for g, v in zip(ghosts, seq)):
                return Explain("tag", e.cls, e.shift, d)
        if all(isinstance(v, int) and PARITY_TAG <= v < PARITY_TAG + 2 for v in seq):
            d = (seq[0] - PARITY_TAG - ghosts[0]) % 2
            if all(PARITY_TAG + (g + d) % 2 == v for g, v in zip(ghosts, seq)):
                return Explain("tag", e.cls, e.shift, d, parity_tag=True)
        if NO_DATA in seq:
            raise _NoFold(f"pc {pc}: a data tag that is sometimes 'no data'")
    raise _NoFold(f"pc {pc}: a {kind} that does not follow the state's phase ({seq[:8]}...)")


def _check_entries(code: tuple, skip: set, body_end: int) -> None:
    """Nothing emitted may reach a pc that is not (another copy's)."""
    for pc, ins in enumerate(code):
        if pc in skip:
            continue
        if isinstance(ins, Jump):
            if ins.target in skip:
                raise _NoFold(f"pc {pc}: jumps into a copy of the loop")
        elif isinstance(ins, Branch):
            if {ins.then, ins.orelse} & skip:
                raise _NoFold(f"pc {pc}: branches into a copy of the loop")
        elif not isinstance(ins, Exit) and pc + 1 in skip and pc != body_end:
            # only the template body's end falls through into a skipped pc (the emitter
            # closes it with the advance and the jump back)
            raise _NoFold(f"pc {pc}: falls through into a copy of the loop")


__all__ = ["emitted_effects", "Explain", "Fold", "Region", "StageReg", "SymOff", "TagReg",
           "instantiate", "plan"]
