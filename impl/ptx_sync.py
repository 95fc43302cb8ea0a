"""The synchronisation a PTX kernel performs, op by op, for comparing two writers' PTX.

pipeproof's emitter and ``cute.compile`` (the CuTe DSL) write the same synchronisation in
different text.  ``sync_ops`` reduces a PTX file to its synchronisation instructions
(``mbarrier.*``, fences, ``bar``/``barrier``, ``cp.async*``, ``tcgen05.commit``,
``elect.sync``) with their qualifiers in a canonical form and the one operand that
matters resolved where it is a constant (PTX ISA 9.7.13.15 ``mbarrier``: the ``parity``
of ``try_wait.parity``, the ``count`` of ``init`` and ``arrive``, the byte count of
``expect_tx``):

* qualifiers PTX lets a writer leave out are made explicit: ``.shared`` is
  ``.shared::cta``; an ``mbarrier.arrive``/``expect_tx`` without semantics is
  ``.release.cta``, a ``try_wait``/``test_wait`` ``.acquire.cta``; ``.b64`` is dropped;
* the qualifiers after the first are sorted (writers order them differently);
* an ``mbarrier.arrive`` without a count operand arrives with count 1;
* a register operand is resolved through the last ``mov`` of an immediate into it before
  the use, in text order (both writers materialise these constants right before use).

``pipeproof_programs`` splits pipeproof's PTX into its per-warp programs (the ``$Pk``
labels of ``impl/emit.py``).  ``tests/test_cute_ptx_diff.py`` compares the two, role by
role; ``bench/diff_cute_ptx.py`` prints the diff.  Where text cannot be matched (one
code path for several warps, run-time loops), ``impl/ptx_exec.py`` runs both kernels
lane by lane (``ptx_diff.compare_executed``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OP = re.compile(r"^\s*(?:@!?%?\w+\s+)?((?:mbarrier|fence|barrier|bar|cp\.async|tcgen05\.commit|"
                 r"elect)(?:\.[\w:]+)*)(?=[\s;]|$)\s*(.*?);?\s*$")
_MOV = re.compile(r"^\s*mov\.[bus]32\s+(%\w+),\s*(-?\d+|0x[0-9a-fA-F]+)\s*;")
#: the register an instruction writes (its first operand), for counting definitions
_DEF = re.compile(r"^\s*(?:@!?%?\w+\s+)?[a-z][\w.:]*\s+(%\w+)\s*[,;]")
_PROG = re.compile(r"^\$P(\d+):")
_WHO = re.compile(r"^\s*// ---- cta (\d+) warp (\d+) role (\S+)")


@dataclass(frozen=True)
class SyncOp:
    """One synchronisation instruction: canonical opcode and its resolved operand."""

    op: str
    #: parity (try_wait), count (init, arrive), bytes (expect_tx); "?" where a register
    #: holds a value not set by an immediate ``mov``; "" where nothing is compared
    arg: str = ""

    def __str__(self) -> str:
        return f"{self.op} {self.arg}" if self.arg else self.op


def canonical(op: str) -> str:
    """Canonical opcode text (see the module docstring)."""
    op = re.sub(r"\.shared(?=\.|$)", ".shared::cta", op)
    op = re.sub(r"\.b64(?=\.|$)", "", op)
    if op.startswith(("mbarrier.arrive", "mbarrier.expect_tx")) and ".release" not in \
            op and ".relaxed" not in op:
        op += ".release.cta"
    if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")) and ".acquire" not in op \
            and ".relaxed" not in op:
        op += ".acquire.cta"
    if op.startswith("cp.async.bulk") and "mbarrier::complete_tx::bytes" in op:
        # a load completing bytes on an mbarrier: the DSL's tensor-map copy (``.tensor.Nd
        # .tile``, an L2 hint, ``shared::cta`` destination) and pipeproof's 1-D bulk copy
        # into ``shared::cluster`` have the same barrier effect; multicast is kept
        mc = ".multicast::cluster" if ".multicast::cluster" in op else ""
        return "cp.async.bulk.global.mbarrier::complete_tx::bytes" + mc
    if op.startswith("cp.async.bulk") and ".bulk_group" in op and ".global.shared" in op:
        # a store from shared memory in a bulk group: tensor-map (``.tensor.1d.tile``, L2
        # hint) or 1-D bulk copy, the same group semantics
        return "cp.async.bulk.bulk_group.global.shared::cta"
    # ``.aligned``: every thread of the warp executes the same barrier instruction, a
    # promise about the code, not different synchronisation
    op = op.replace(".aligned", "")
    parts = op.split(".")
    # the opcode proper is the first two names (mbarrier.arrive, cp.async, ...)
    n = 2 if len(parts) > 1 else 1
    return ".".join(parts[:n] + sorted(parts[n:]))


def _operands(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _value(x: str, consts: dict[str, int]) -> str:
    x = x.strip()
    if re.fullmatch(r"-?\d+|0x[0-9a-fA-F]+", x):
        return str(int(x, 0))
    return str(consts[x]) if x in consts else "?"


def _arg(op: str, operands: list[str], consts: dict[str, int]) -> str:
    if op.startswith("mbarrier.init"):
        return _value(operands[1], consts) if len(operands) > 1 else "?"
    if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")) and ".parity" in op:
        return "p" + _value(operands[2], consts) if len(operands) > 2 else "?"
    if op.startswith(("mbarrier.arrive", "mbarrier.expect_tx", "mbarrier.complete_tx")):
        # arrive[_drop][.expect_tx] state, [addr](, count|tx)
        args = [o for o in operands if not o.startswith("[")]
        if op.startswith("mbarrier.arrive"):
            args = args[1:]  # the state destination
        v = _value(args[0], consts) if args else "1"
        return ("tx=" if "expect_tx" in op or "complete_tx" in op else "n=") + v
    if op.startswith(("bar.", "barrier.")) and not op.startswith("barrier.cluster"):
        return ",".join(_value(o, consts) for o in operands)
    if op.startswith("cp.async.wait_group") or op.startswith("cp.async.bulk.wait_group"):
        return _value(operands[0], consts) if operands else "?"
    return ""


def sync_ops(ptx: str) -> list[tuple[int, SyncOp]]:
    """(line number, op) of every synchronisation instruction of ``ptx``, in text order;
    warp convergence (``bar.warp.sync``) is not synchronisation between warps."""
    # a register is a constant (its last immediate, in text order) only where every
    # definition of it moves an immediate: a loop's phase register (set once, flipped by
    # an xor or selp each wrap) is a run-time value
    lines = [raw.split("//")[0] for raw in ptx.splitlines()]
    computed = {d.group(1) for line in lines if not _MOV.match(line)
                for d in [_DEF.match(line)] if d}
    consts: dict[str, int] = {}
    out = []
    for ln, line in enumerate(lines):
        m = _MOV.match(line)
        if m:
            if m.group(1) not in computed:
                consts[m.group(1)] = int(m.group(2), 0)
            continue
        m = _OP.match(line)
        if not m or m.group(1).startswith("bar.warp"):
            continue
        op = canonical(m.group(1))
        out.append((ln, SyncOp(op, _arg(op, _operands(m.group(2)), consts))))
    return out


@dataclass(frozen=True)
class Program:
    """One warp's program of pipeproof's PTX and its synchronisation ops."""

    index: int
    cta: int
    warp: int
    role: str
    ops: tuple[SyncOp, ...]


def pipeproof_programs(ptx: str) -> tuple[list[SyncOp], list[Program]]:
    """(the prologue's ops, each ``$Pk`` program's ops); the shared exit code after the
    last program (``$STUCK_EXIT``) is left out."""
    lines = ptx.splitlines()
    starts: list[tuple[int, int]] = []
    who: dict[int, tuple[int, int, str]] = {}
    end = len(lines)
    for ln, line in enumerate(lines):
        m = _PROG.match(line)
        if m:
            starts.append((ln, int(m.group(1))))
        w = _WHO.match(line)
        if w and starts:
            who[starts[-1][1]] = (int(w.group(1)), int(w.group(2)), w.group(3))
        if line.startswith("$STUCK_EXIT:"):
            end = ln
    ops = sync_ops(ptx)
    first = starts[0][0] if starts else end
    prologue = [o for ln, o in ops if ln < first]
    progs = []
    for i, (ln, k) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else end
        cta, warp, role = who.get(k, (0, 0, "?"))
        progs.append(Program(k, cta, warp, role,
                             tuple(o for l2, o in ops if ln <= l2 < stop)))
    return prologue, progs


#: the set-up ops before the roles: barrier initialisation made visible, then the CTA
#: (and cluster) meet (``PipelineAsync.create``'s ``mbarrier_init_fence`` + sync)
SETUP = ("mbarrier.init", "fence.mbarrier_init", "bar.sync", "barrier.sync",
         "barrier.cluster")


def _head(ops: list[SyncOp]) -> int:
    """Length of the set-up at the start of ``ops``: ``mbarrier.init`` ops, then (only
    after a ``fence.mbarrier_init``) the CTA/cluster barrier that publishes them.  Several
    groups of inits, each with its fence, count as one set-up (a TMEM allocator's
    dealloc barrier fenced on its own before the pipeline's)."""
    n = 0
    while n < len(ops) and ops[n].op.startswith("mbarrier.init"):
        n += 1
    if n < len(ops) and ops[n].op.startswith("fence.mbarrier_init"):
        n += 1
        while True:  # further init groups, each closed by its fence
            k = n
            while k < len(ops) and ops[k].op.startswith("mbarrier.init"):
                k += 1
            if k == len(ops) or not ops[k].op.startswith("fence.mbarrier_init"):
                break
            n = k + 1
        while n < len(ops) and ops[n].op.startswith(SETUP[2:]):
            n += 1
    return n


def _collapse(ops: list) -> list:
    """Runs of the same ``cp.async.mbarrier.arrive`` are one: the DSL's threads each
    arrive once (one instruction in the text, executed by every lane), pipeproof's lane
    0 arrives ``count`` times after issuing the warp's copies (``count`` instructions);
    the same arrivals, each gated by the copies of the thread that issued them.  ``ops``
    are ``SyncOp``s or their texts (the executed reading's, with barrier names)."""
    out: list = []
    for o in ops:
        if out and str(o).startswith("cp.async.arrive") and out[-1] == o:
            continue
        out.append(o)
    return out


def _same(cute: str, mine: str) -> bool:
    """Op texts equal; a DSL operand computed at run time (``?``) matches any value."""
    if cute == mine:
        return True
    c, m = cute.rsplit(" ", 1), mine.rsplit(" ", 1)
    return len(c) == len(m) == 2 and c[0] == m[0] and "?" in c[1] and \
        c[1].replace("?", "") == m[1].rstrip("0123456789")


def _match(cute: tuple[str, ...], mine: tuple[str, ...]) -> bool:
    return len(cute) == len(mine) and all(_same(a, b) for a, b in zip(cute, mine))


@dataclass(frozen=True)
class RoleDiff:
    """The comparison of one kernel's two PTX files (``ptx_diff.compare``)."""

    #: (name, cute.compile's ops, pipeproof's ops) for the set-up and each role's body
    parts: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]

    @property
    def equal(self) -> bool:
        return all(_match(a, b) for _, a, b in self.parts)

    def text(self) -> str:
        import difflib

        out = []
        for name, a, b in self.parts:
            mark = "=" if _match(a, b) else "DIFFERS"
            out.append(f"## {name}: {mark} ({len(a)} ops cute.compile, {len(b)} pipeproof)")
            if not _match(a, b):
                out += [ln.rstrip("\n") for ln in difflib.unified_diff(
                    list(a), list(b), "cute.compile", "pipeproof", lineterm="", n=2)][2:]
        return "\n".join(out)


def compare_roles(cute_ptx: str, pipeproof_ptx: str, with_tail: bool) -> RoleDiff:
    """Role by role, after normalisation (``sync_ops``) and these accepted differences:

    * ``elect.sync`` (the DSL elects one thread) is dropped: pipeproof's single-thread
      steps run in lane 0 between ``bar.warp.sync`` ops;
    * pipeproof's own prologue (before the role dispatch: the exit counter's
      ``bar.sync``, the trace ticket's cluster barrier) is dropped;
    * the set-up (``mbarrier.init`` .. ``fence.mbarrier_init`` .. ``bar.sync``) happens
      once before the DSL's role dispatch and at the head of each of pipeproof's
      programs: the DSL's is compared with the first program's; the others' heads must
      be that head without the initialisation;
    * runs of one ``cp.async.mbarrier.arrive`` are one (``_collapse``);
    * an operand the DSL computes at run time (``?``: its warps of two roles share one
      code path, e.g. PipelineOrder's groups waiting on different parities) matches any
      value, and a role whose body matches such a shared segment needs no code of its
      own;
    * where it makes the two agree (``ptx_diff.compare``), ops common to the end of every
      program (code after the DSL's role dispatch) are compared once, with the end of
      the DSL's code;
    * ``.aligned`` on barriers is dropped; tensor-map bulk copies (loads completing tx on
      an mbarrier, stores in a bulk group) are compared with pipeproof's 1-D ones;
    * warps whose programs are identical (the DSL's consumer warps share one code path)
      are one role.

    The DSL's code after its set-up is split in the order of pipeproof's distinct roles
    (ordered by CTA and warp, as the DSL's ``if warp_idx == ...`` blocks are)."""
    cute = _collapse([o for _, o in sync_ops(cute_ptx) if o.op != "elect.sync"])
    _, progs = pipeproof_programs(pipeproof_ptx)
    progs = [Program(p.index, p.cta, p.warp, p.role, tuple(_collapse(list(p.ops))))
             for p in progs]
    ch = _head(cute)
    parts: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    heads = [list(p.ops[:_head(list(p.ops))]) for p in progs]
    first = heads[0] if heads else []
    parts.append(("set-up", tuple(map(str, cute[:ch])), tuple(map(str, first))))
    later = tuple(str(o) for o in first if not o.op.startswith("mbarrier.init"))
    for p, h in zip(progs[1:], heads[1:]):
        # every CTA of a cluster initialises its own barriers (one code path in the DSL)
        if tuple(map(str, h)) not in (later, tuple(map(str, first))):
            parts.append((f"set-up of cta {p.cta} warp {p.warp}", later,
                          tuple(map(str, h))))
    bodies = [tuple(map(str, p.ops[len(h):])) for p, h in zip(progs, heads)]
    # code after the role dispatch, common to every warp (the TMEM allocator's named
    # barrier before the free): once in the DSL's text, at the end of each program here
    tail: tuple[str, ...] = ()
    while with_tail and bodies and all(len(b) > len(tail) + 1 for b in bodies) and \
            len({b[len(b) - len(tail) - 1] for b in bodies}) == 1:
        tail = (bodies[0][len(bodies[0]) - len(tail) - 1],) + tail
    cute_rest = tuple(map(str, cute[ch:]))
    if tail:
        bodies = [b[:len(b) - len(tail)] for b in bodies]
        cut = len(cute_rest) - len(tail)
        parts.append(("after the roles", cute_rest[cut:], tail))
        cute_rest = cute_rest[:cut]
    seen: list[tuple[str, ...]] = []
    names: list[str] = []
    for p, body in zip(progs, bodies):
        if body in seen:
            names[seen.index(body)] += f", {p.cta}.{p.warp}"
            continue
        seen.append(body)
        names.append(f"role {p.role} (cta.warp {p.cta}.{p.warp}")
    rest = cute_rest
    pos = 0
    for i, (name, body) in enumerate(zip(names, seen)):
        if pos == len(rest) and body:
            # the DSL's warps of several roles may share one code path whose operands
            # (a parity) are computed at run time: the role matches an earlier segment
            shared = next((p for p in parts[1:] if p[0].startswith("role") and
                           _match(p[1], body)), None)
            if shared is not None:
                parts.append((f"{name}, the DSL code of {shared[0]})", shared[1], body))
                continue
        take = rest[pos:pos + len(body)] if i + 1 < len(seen) else rest[pos:]
        pos += len(take)
        parts.append((name + ")", take, body))
    if not seen and rest:
        parts.append(("roles", rest, ()))
    return RoleDiff(tuple(parts))


__all__ = ["SyncOp", "Program", "RoleDiff", "canonical", "sync_ops", "pipeproof_programs",
           "compare_roles", "SETUP"]
