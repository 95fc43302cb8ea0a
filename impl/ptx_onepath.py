"""Compare a CuTe DSL kernel whose warps share one code path with pipeproof's per-warp
programs (``ptx_diff.compare``'s last resort).

The DSL compiles one kernel body for every warp and every CTA of a cluster: role blocks
(``if warp_idx == 4:``), leader-only code (``if is_leader_cta:``), the TMEM allocator
warp's free (``if warp_idx == allocator_warp``) are branches on run-time values, while
pipeproof's compiler specialises each warp's program to what that warp runs.  To compare
them op for op, this module *runs* the DSL's role predicates for each of pipeproof's
programs: a predicate computed from the warp index (``%tid.x >> 5``), the CTA's rank
(``%cluster_ctarank``, ``%ctaid``) and constants only -- through ``make_warp_uniform``'s
``shfl.sync.idx`` from lane 0 and integer arithmetic -- is evaluated for the program's
(CTA, warp), and the synchronisation ops inside a forward branch that the predicate
takes are the ops that warp skips.  A lane predicate (the lane index, ``elect.sync``) is
not evaluated: the DSL's single-thread steps are every warp's.

``compare_one_path`` then splits the DSL's code after its set-up among pipeproof's
distinct role bodies (the DSL's role blocks in any order: their order in the text is
layout, not synchronisation), the last part being the DSL's code after the roles (the
end of every program), and requires each program's body to be exactly the ops its
(CTA, warp) runs in its part.  ``%ctaid.x`` is taken to be the CTA's rank and
``%ctaid.y``/``.z`` zero (a grid of one cluster along x, as the kernels of
``tests/cute_kernels/`` launch); a predicate on anything else is not a role predicate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from .ptx_sync import (Program, RoleDiff, SyncOp, _collapse, _head, pipeproof_programs,
                       sync_ops)

#: (warp, cta rank) -> value
Env = tuple[int, int]
_Val = Callable[[Env], int]

_SRC = re.compile(r"^\s*mov\.u32\s+(%\w+),\s*%(tid\.x|cluster_ctarank|ctaid\.[xyz])\s*;")
_INSN = re.compile(r"^\s*([a-z][\w.]*)\s+(%\w+),\s*(.*?);")
_PBRA = re.compile(r"^\s*@(!?)(%p\w*)\s+bra(?:\.uni)?\s+(\$?\w+);")
_LABEL = re.compile(r"^(\$?\w+):")
_IMM = re.compile(r"-?\d+|0x[0-9a-fA-F]+")
_M32 = 0xFFFFFFFF


def _s32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x >> 31 else x


def _arith(op: str, a: list[_Val]) -> Optional[_Val]:
    base, signed = op.split(".")[0], ".s" in op
    f: Optional[Callable[..., int]] = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y,
        "shl": lambda x, y: x << (y & 31), "min": min, "max": max,
        "neg": lambda x: -x, "not": lambda x: ~x, "mov": lambda x: x, "cvt": lambda x: x,
    }.get(base)
    if base == "shr":
        f = (lambda x, y: _s32(x) >> (y & 31)) if signed else \
            (lambda x, y: (x & _M32) >> (y & 31))
    elif base in ("div", "rem"):
        def f(x: int, y: int, r: bool = base == "rem") -> int:
            if signed:
                x, y = _s32(x), _s32(y)
                q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                return x - q * y if r else q
            return (x & _M32) % (y & _M32) if r else (x & _M32) // (y & _M32)
    if f is None or (base in ("div", "rem") and len(a) != 2):
        return None
    fn = f
    return lambda e: fn(*(v(e) for v in a)) & _M32


def _cmp(op: str, a: list[_Val]) -> Optional[_Val]:
    parts = op.split(".")
    if len(parts) < 3 or len(a) != 2:
        return None
    c, signed = parts[1], parts[2].startswith("s")
    conv = _s32 if signed else (lambda x: x & _M32)
    f = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
         "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
         "ge": lambda x, y: x >= y}.get(c)
    if f is None:
        return None
    return lambda e: int(f(conv(a[0](e)), conv(a[1](e))))


@dataclass(frozen=True)
class Region:
    """The lines strictly between a forward branch on a role predicate and its label:
    skipped by the warps for which ``taken`` is true."""

    start: int
    end: int
    taken: _Val

    def holds(self, ln: int) -> bool:
        return self.start < ln < self.end


def role_regions(ptx: str) -> list[Region]:
    """Every forward branch of ``ptx`` on a role predicate (see the module docstring)."""
    lines = ptx.splitlines()
    tid: set[str] = set()
    val: dict[str, _Val] = {}
    pred: dict[str, _Val] = {}
    labels: dict[str, int] = {}
    for ln, raw in enumerate(lines):
        line = raw.split("//")[0]
        m = _LABEL.match(line)
        if m:
            labels[m.group(1)] = ln
            continue
        m = _SRC.match(line)
        if m:
            what = m.group(2)
            if what == "tid.x":
                tid.add(m.group(1))
            elif what in ("cluster_ctarank", "ctaid.x"):
                val[m.group(1)] = lambda e: e[1]
            else:
                val[m.group(1)] = lambda e: 0
            continue
        m = _INSN.match(line)
        if not m:
            continue
        op, dst, srcs = m.group(1), m.group(2), [x.strip() for x in m.group(3).split(",")]
        if op.startswith("shr.") and srcs[0] in tid and srcs[1:] == ["5"]:
            val[dst] = lambda e: e[0]  # the warp index (threads of a block along x)
            continue
        if op.startswith("shfl.sync.idx") and srcs[0] in val and srcs[1:2] == ["0"]:
            val[dst] = val[srcs[0]]  # make_warp_uniform: lane 0's value
            continue
        if op.endswith(".pred") and op.split(".")[0] in ("not", "and", "or", "xor"):
            if all(s in pred for s in srcs):
                ps = [pred[s] for s in srcs]
                g = {"not": lambda v: 1 - v[0], "and": lambda v: v[0] & v[1],
                     "or": lambda v: v[0] | v[1], "xor": lambda v: v[0] ^ v[1]}[
                    op.split(".")[0]]
                pred[dst] = lambda e, ps=ps, g=g: g([p(e) for p in ps])
            continue
        args: list[_Val] = []
        for s in srcs:
            if s in val:
                args.append(val[s])
            elif _IMM.fullmatch(s):
                args.append(lambda e, k=int(s, 0): k)
            else:
                args = []
                break
        if not args:
            continue
        if op.startswith("setp."):
            f = _cmp(op, args)
            if f is not None:
                pred[dst] = f
        else:
            f = _arith(op, args)
            if f is not None:
                val[dst] = f
    out = []
    for ln, raw in enumerate(lines):
        m = _PBRA.match(raw.split("//")[0])
        if m and m.group(2) in pred and labels.get(m.group(3), -1) > ln:
            p = pred[m.group(2)]
            taken = (lambda e, p=p: 1 - p(e)) if m.group(1) else p
            out.append(Region(ln, labels[m.group(3)], taken))
    return out


def runs(seg: list[tuple[int, str]], env: Env, regions: list[Region]) -> tuple[str, ...]:
    """The ops of ``seg`` that the warp ``env`` runs: those in no region it skips."""
    return tuple(op for ln, op in seg
                 if not any(r.holds(ln) and r.taken(env) for r in regions))


def _collapse_lines(pairs: list[tuple[int, SyncOp]]) -> list[tuple[int, SyncOp]]:
    """``ptx_sync._collapse`` keeping each op's line."""
    out: list[tuple[int, SyncOp]] = []
    for ln, o in pairs:
        if out and o.op.startswith("cp.async.arrive") and out[-1][1] == o:
            continue
        out.append((ln, o))
    return out


def compare_one_path(cute_ptx: str, pipeproof_ptx: str) -> Optional[RoleDiff]:
    """The comparison of the module docstring; ``None`` where no split of the DSL's code
    works.  The set-up: each program's head is its ``mbarrier.init`` ops and the DSL's
    set-up without its inits, in order; the inits of each CTA's programs together are
    the DSL's (each warp initialises the barriers its role predicate selects)."""
    pairs = _collapse_lines([(ln, o) for ln, o in sync_ops(cute_ptx) if o.op != "elect.sync"])
    cute = [(ln, str(o)) for ln, o in pairs]
    _, progs = pipeproof_programs(pipeproof_ptx)
    if not progs:
        return None
    ch = _head([o for _, o in pairs])
    setup = [o for _, o in cute[:ch] if not o.startswith("mbarrier.init")]
    inits = sorted(o for _, o in cute[:ch] if o.startswith("mbarrier.init"))
    parts: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
        ("set-up (fences and barriers)", tuple(setup), tuple(setup))]
    bodies: list[tuple[str, ...]] = []
    mine: dict[int, list[str]] = {}
    for p in progs:
        o = [str(x) for x in _collapse(list(p.ops))]
        n = k = 0
        while n < len(o) and (o[n].startswith("mbarrier.init") or
                              (k < len(setup) and o[n] == setup[k])):
            k += not o[n].startswith("mbarrier.init")
            n += 1
        if k < len(setup):
            return None
        mine.setdefault(p.cta, []).extend(x for x in o[:n] if x.startswith("mbarrier.init"))
        bodies.append(tuple(o[n:]))
    for cta, got in sorted(mine.items()):
        parts.append((f"set-up: the barriers cta {cta} initialises", tuple(inits),
                      tuple(sorted(got))))
    regions = role_regions(cute_ptx)
    rest = cute[ch:]
    groups: dict[tuple[str, tuple[str, ...]], list[Program]] = {}
    for p, body in zip(progs, bodies):
        groups.setdefault((p.role, body), []).append(p)
    for (role, body), ps in groups.items():
        who = ", ".join(f"{p.cta}.{p.warp}" for p in ps)
        ran = {runs(rest, (p.warp, p.cta), regions) for p in ps}
        for r in sorted(ran):
            parts.append((f"role {role} (cta.warp {who}: the DSL's code as this warp runs "
                          "it)", r, body))
    return RoleDiff(tuple(parts))

__all__ = ["Region", "role_regions", "runs", "compare_one_path"]
