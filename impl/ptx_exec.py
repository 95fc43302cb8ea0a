"""Run one warp of a PTX kernel far enough to list the synchronisation it performs.

The static readings of ``ptx_sync`` see a PTX file as text: a loop whose trip count is a
kernel argument (``for k in range(k_tiles)`` with ``k_tiles: cutlass.Int32``), a
``while`` on a cluster-launch-control response, or a wait written as a timed
``try_wait`` tried again and then spun on, have no single text order to compare.  This
module *executes* lane 0 of one warp of one CTA instead, on the integer values a kernel's
control flow and synchronisation operands are made of, and returns the synchronisation
instructions in the order that lane issues them, operands resolved
(``ptx_sync.SyncOp``, the same canonical form as the static reading).

What the run knows (``Run``): the lane, the warp, the CTA's rank and its cluster
(``%tid.x`` is ``32 * warp + lane``, ``%cluster_ctarank`` the rank, clusters along x),
the
kernel's scalar parameters by index (``ld.param``), how many
``clusterlaunchcontrol.query_cancel`` responses say a cluster was cancelled (the work a
dynamic scheduler gets), and how often each ``mbarrier.try_wait`` fails before it
succeeds.  Everything else a load, a float or an unknown instruction produces is
*unknown*; a branch or a compared synchronisation operand that depends on an unknown
value stops the run (``NotEvaluable``): this reading never guesses.  Only where a run asks
for it (``Run.spin_exits``) is a spin -- a branch back on a loaded value -- taken to end,
as every wait is taken to succeed.  Acquire loads and release stores (flags in global
memory, counters in shared memory) are listed with the synchronisation.

Lanes run one at a time.  ``elect.sync`` with a full mask elects lane 0 (the lowest
lane, the whole warp executing it); ``shfl.sync.idx`` from lane 0 with a full mask (what
``make_warp_uniform`` writes) returns, in every lane, lane 0's value of that dynamic
instance: lane 0 runs first and its results are handed to the other lanes in order
(``Run.shuffled``), which holds because a full-mask ``shfl.sync`` is executed by every
lane of the warp, in the same order.  Other masks or source lanes are not evaluated.

PTX ISA 9.7.13.15 (``mbarrier.try_wait``: a ``false`` result is a wait that has not
completed, with no effect on the barrier), 9.7.1 (``bra``), 9.7.3 (integer arithmetic),
9.7.13.20 (``clusterlaunchcontrol``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

from .ptx_sync import SyncOp, _OP, _arg, _operands, canonical


class NotEvaluable(Exception):
    """The run reached a branch or a compared operand this evaluator cannot compute."""


@dataclass(frozen=True)
class Run:
    """Where and how one warp runs (module docstring)."""

    warp: int
    #: the CTA's rank in its cluster
    cta: int = 0
    lane: int = 0
    #: which cluster of the grid (``%clusterid.x``), how many (``%nclusterid.x``), and
    #: CTAs per cluster (``%ctaid.x`` is ``cluster * cluster_size + cta``)
    cluster: int = 0
    clusters: int = 1
    cluster_size: int = 1
    #: lane 0's ``shfl.sync.idx`` results, in order, for the other lanes' runs
    shuffled: tuple[Optional[int], ...] = ()
    #: kernel parameter (its index or its name) -> value, for ``ld.param`` of scalars
    params: Mapping[object, int] = field(default_factory=dict)
    #: how many ``query_cancel.is_canceled`` answers are true before they turn false
    clc_cancelled: int = 0
    #: how many times each ``mbarrier.try_wait``/``test_wait`` fails before it succeeds
    wait_failures: int = 0
    max_steps: int = 1_000_000
    #: a branch back to an earlier instruction on a value the run does not know (a spin
    #: on a loaded flag or counter) is not taken: the awaited value has arrived, as every
    #: wait succeeds (off: such a branch is ``NotEvaluable``)
    spin_exits: bool = False
    #: labels where the run ends (pipeproof's ``$EXIT``: its exit bookkeeping is not the
    #: kernel's synchronisation)
    stop_at: tuple[str, ...] = ()


@dataclass(frozen=True)
class Issued:
    """One synchronisation instruction a run issued."""

    op: SyncOp
    #: index of the instruction in ``parse``'s code (where in the kernel it was issued)
    at: int
    #: the mbarrier's address (an ``mbarrier.*`` op's, or the barrier a copy or commit
    #: signals), None for other ops: the CTA's rank in bits 24 and up (``RANK_SHIFT``)
    addr: Optional[int]
    #: every ``[...]`` operand's address in order (data and barrier; None where the run
    #: does not know it): for comparing two emissions of one kernel, whose buffers are
    #: laid out alike (two writers' layouts differ, so ``compare_executed`` does not)
    operands: tuple[Optional[int], ...] = ()


#: a shared-memory address carries its CTA's rank from this bit up, as the hardware's
#: shared::cluster window does (a CTA's own shared::cta addresses included: CuTe DSL
#: names the even peer of a 2-CTA pair's barrier by clearing bit 24 of its own address)
RANK_SHIFT = 24


@dataclass(frozen=True)
class _Insn:
    guard: Optional[str]     # predicate register, "!" prefixed when negated
    op: str
    args: tuple[str, ...]
    text: str                # the instruction as written (for sync ops and errors)
    #: the canonical synchronisation opcode (``ptx_sync.canonical``), None for others
    sync: Optional[str] = None


_LABEL = re.compile(r"^([$\w.@]+):$")
_REGDECL = re.compile(r"^\.reg\s+\.\w+\s+(.*)$")
_GUARD = re.compile(r"^@(!?)(%?[\w@]+)\s+(.*)$")
_INT = re.compile(r"^-?(?:0[xX][0-9a-fA-F]+|\d+)$")
_FLOAT = re.compile(r"^0[fFdD][0-9a-fA-F]+$")
_ADDR = re.compile(r"^\[\s*([^\]+]+?)\s*(?:\+\s*(-?\w+))?\s*\]$")
#: loads and stores with acquire/release semantics: synchronisation through memory (a
#: flag in global memory, a counter in shared memory), listed with their addresses
_ORDERED = ("ld.acquire", "st.release")
_DEST = re.compile(r"^%?[\w@]+$")
_SPECIAL = ("%tid", "%ntid", "%laneid", "%warpid", "%ctaid", "%nctaid",
            "%cluster_ctarank", "%cluster_ctaid", "%clusterid", "%nclusterid",
            "%cluster_nctarank")


def _entry_body(ptx: str) -> tuple[list[str], list[str]]:
    """(the names of the entry's parameters, the lines of its body); one entry per file,
    as ``cute.compile`` and ``impl/emit.py`` write them."""
    m = re.search(r"\.entry\s+\w+\s*\((.*?)\)", ptx, re.S)
    start = ptx.find(".entry")
    if start < 0:
        raise NotEvaluable("no .entry in the PTX")
    params = re.findall(r"\.param\b[^,]*?(\w+)(?:\[\d+\])?\s*(?=,|$)", m.group(1)) \
        if m else []
    brace = ptx.find("{", m.end() if m else start)
    depth, i = 0, brace
    while i < len(ptx):
        depth += ptx[i] == "{"
        depth -= ptx[i] == "}"
        if depth == 0:
            break
        i += 1
    lines = [ln.split("//")[0].strip() for ln in ptx[brace + 1:i].splitlines()]
    return params, [ln for ln in lines if ln]


def _scoped(lines: list[str]) -> list[str]:
    """Statements with the registers and labels a ``{ ... }`` block declares renamed
    apart (CuTe DSL's inline-asm waits each declare ``P1`` and ``LAB_WAIT``)."""
    out: list[str] = []
    stack: list[list[str]] = []
    counter = 0

    def flush(block: list[str], tag: str) -> list[str]:
        names = set()
        for s in block:
            d = _REGDECL.match(s)
            if d:
                names |= {n.strip().split("<")[0] for n in d.group(1).rstrip(";").split(",")}
            lab = _LABEL.match(s)
            if lab:
                names.add(lab.group(1))
        if not names:
            return block
        pat = re.compile(r"(?<![\w$%])(" + "|".join(re.escape(n) for n in
                                                   sorted(names, key=len, reverse=True))
                         + r")(?![\w$])")
        return [pat.sub(lambda mm: mm.group(1) + "@" + tag, s) for s in block]

    for raw in lines:
        for s in (x.strip() for x in re.split(r"(?<=;)", raw)):
            if not s:
                continue
            if s == "{":
                stack.append([])
                continue
            if s == "}":
                counter += 1
                block = flush(stack.pop(), str(counter))
                (stack[-1] if stack else out).extend(block)
                continue
            (stack[-1] if stack else out).append(s)
    return out


@functools.lru_cache(maxsize=16)
def parse(ptx: str) -> tuple[list[str], list[_Insn], dict[str, int]]:
    """(parameter names, instructions, label -> instruction index) of the entry."""
    params, lines = _entry_body(ptx)
    code: list[_Insn] = []
    labels: dict[str, int] = {}
    for s in _scoped(lines):
        lab = _LABEL.match(s)
        if lab:
            labels[lab.group(1)] = len(code)
            continue
        s = s.rstrip(";").strip()
        if not s or s.startswith("."):
            continue  # declarations, .pragma
        guard = None
        g = _GUARD.match(s)
        if g:
            guard, s = ("!" if g.group(1) else "") + g.group(2), g.group(3)
        op, _, rest = s.partition(" ")
        m = _OP.match(s)
        sync = canonical(m.group(1)) if m and not op.startswith(("bar.warp", "elect")) \
            else op if op.startswith(_ORDERED) else None
        code.append(_Insn(guard, op, tuple(_operands(rest.strip())), s, sync))
    return params, code, labels


@functools.lru_cache(maxsize=16)
def _shared_symbols(ptx: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\.shared\s+(?:\.\w+\s+(?:\d+\s+)?)*(\w+)\s*\[", ptx))


@functools.lru_cache(maxsize=4096)
def _bits(op: str) -> int:
    m = re.findall(r"\.[bsu](8|16|32|64)\b", op)
    return int(m[-1]) if m else 32


@functools.lru_cache(maxsize=4096)
def _signed(op: str) -> bool:
    return bool(re.search(r"\.s(8|16|32|64)\b", op))


def _sx(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


class _Warp:
    def __init__(self, ptx: str, run: Run) -> None:
        self.params, self.code, self.labels = parse(ptx)
        self.run = run
        self.regs: dict[str, Optional[int]] = {}
        self.queries = 0
        self.elects = 0
        #: this run's shfl.sync.idx results, in order (lane 0's go to the other lanes)
        self.shuffles: list[Optional[int]] = []
        self.tries: dict[int, int] = {}
        syms = _shared_symbols(ptx)
        # the CTA's window, each shared-memory symbol 256 KB apart within it
        self.symbols = {s: (run.cta << RANK_SHIFT) | (i << 18) | 0x400
                        for i, s in enumerate(syms)}

    # ---- values
    def special(self, name: str) -> Optional[int]:
        r = self.run
        base, _, comp = name.partition(".")
        if base == "%tid":
            return 32 * r.warp + r.lane if comp in ("x", "") else 0
        if base in ("%laneid",):
            return r.lane
        if base == "%warpid":
            return r.warp
        if base == "%ctaid":
            return r.cluster * r.cluster_size + r.cta if comp in ("x", "") else 0
        if base == "%cluster_ctaid":
            return r.cta if comp in ("x", "") else 0
        if base == "%cluster_ctarank":
            return r.cta
        if base == "%clusterid":
            return r.cluster if comp in ("x", "") else 0
        if base == "%nclusterid":
            return r.clusters if comp in ("x", "") else 1
        return None  # sizes of the launch: not known from the PTX alone

    def value(self, x: str) -> Optional[int]:
        x = x.strip()
        if _INT.match(x):
            return int(x, 0)
        if _FLOAT.match(x):
            return None
        if x.startswith(_SPECIAL):
            return self.special(x)
        if x in self.symbols:
            return self.symbols[x]
        if x.startswith("%") or "@" in x:
            return self.regs.get(x)
        return None

    def known(self, x: str, why: str) -> int:
        v = self.value(x)
        if v is None:
            raise NotEvaluable(f"{why} depends on {x}, which this run does not compute")
        return v

    def address(self, x: str) -> Optional[int]:
        m = _ADDR.match(x.strip())
        if not m:
            return None
        base = self.value(m.group(1))
        off = int(m.group(2), 0) if m.group(2) else 0
        return None if base is None else base + off

    def set(self, dst: str, v: Optional[int], bits: int = 64) -> None:
        """Write ``dst`` (a register, ``a|b``, or a vector ``{a, b}``: unknown values)."""
        if dst.startswith("{"):
            for d in dst.strip("{}").split(","):
                self.regs[d.strip()] = None
            return
        for d in dst.split("|"):
            if _DEST.match(d):
                self.regs[d] = None if v is None else v & ((1 << bits) - 1)

    # ---- one instruction
    def step(self, ins: _Insn, out: list[Issued]) -> Optional[str]:
        """Execute ``ins``; the label to jump to, ``"$exit"``, or None to fall through."""
        op, a = ins.op, ins.args
        base = op.split(".")[0]
        if base == "bra":
            return a[0]
        if base in ("ret", "exit"):
            return "$exit"
        if base == "trap":
            raise NotEvaluable("the run reached trap")
        if base == "call":
            raise NotEvaluable(f"call ({ins.text}) is not followed")
        if ins.sync is not None:
            return self.sync(ins, ins.sync, out)
        if op.startswith("clusterlaunchcontrol.query_cancel.is_canceled"):
            self.set(a[0], int(self.queries < self.run.clc_cancelled), 1)
            self.queries += 1
            return None
        if op.startswith("elect.sync"):
            if self.value(a[1]) not in (0xFFFFFFFF, -1):
                raise NotEvaluable(f"{ins.text}: an elect over part of the warp")
            r, _, p = a[0].partition("|")
            self.set(r, 0)
            self.set(p, int(self.run.lane == 0), 1)
            self.elects += 1
            return None
        if op.startswith("shfl.sync.idx"):
            self.set(a[0].split("|")[0], self.shuffle(ins), 32)
            return None
        if not a or not (_DEST.match(a[0].split("|")[0]) or a[0].startswith("{")):
            return None  # no destination register (stores, warp syncs)
        if base == "setp":
            self.setp(op, a)
            return None
        self.set(a[0], self.compute(op, base, a), 64 if ".wide" in op else _bits(op))
        return None

    def compute(self, op: str, base: str, a: tuple[str, ...]) -> Optional[int]:
        bits, signed = _bits(op), _signed(op)
        v = [self.value(x) for x in a[1:]]
        if base in ("ld",):
            if ".param" in op:
                addr = re.match(r"\[\s*(\w+)\s*\]", a[1])
                if addr and addr.group(1) in self.params:
                    name = addr.group(1)
                    got = self.run.params.get(name, self.run.params.get(
                        self.params.index(name)))
                    return got
            return None
        if base in ("mov", "cvta"):
            if base == "mov" and (".f" in op or any(_FLOAT.match(x) for x in a[1:])):
                return None
            return v[0] if v else None
        if base == "mapa":
            if None in v:
                return None
            return (v[0] & ((1 << RANK_SHIFT) - 1)) | (v[1] << RANK_SHIFT)
        if base == "cvt":
            if re.search(r"\.f(16|32|64)|\.bf16|\.rn|\.rz|\.rm|\.rp", op):
                return None
            types = re.findall(r"\.([bsu])(8|16|32|64)\b", op)
            if v[0] is None or len(types) < 2:
                return v[0] if len(types) < 2 else None
            (dk, db), (sk, sb) = types[-2], types[-1]
            x = _sx(v[0], int(sb)) if sk == "s" else v[0] & ((1 << int(sb)) - 1)
            return x & ((1 << int(db)) - 1)
        if op in ("not.pred", "and.pred", "or.pred", "xor.pred"):
            if None in v:
                return None
            return {"not": lambda: 1 - (v[0] & 1), "and": lambda: v[0] & v[1] & 1,
                    "or": lambda: (v[0] | v[1]) & 1, "xor": lambda: (v[0] ^ v[1]) & 1}[base]()
        if base == "selp":
            p = self.value(a[3])
            return None if p is None else (v[0] if p else v[1])
        if ".f" in op.replace(".full", "") or base.startswith(("fma", "rcp", "sqrt", "ex2")):
            return None
        if None in v or base not in _ARITH:
            return None
        v = [_sx(x, bits) for x in v] if signed else [x & ((1 << bits) - 1) for x in v]
        if ".hi" in op:
            return (v[0] * v[1]) >> bits
        return _ARITH[base](*v, bits) if base in ("shl", "shr") else _ARITH[base](*v)

    def shuffle(self, ins: _Insn) -> Optional[int]:
        """``shfl.sync.idx.b32 d, a, src_lane, clamp, membermask`` (module docstring)."""
        a = ins.args
        if len(a) < 5 or self.value(a[2]) != 0 or self.value(a[4]) not in (0xFFFFFFFF, -1):
            raise NotEvaluable(f"{ins.text}: only a full-warp shuffle from lane 0 is "
                               "evaluated")
        if self.run.lane == 0:
            v = self.value(a[1])
        else:
            k = len(self.shuffles)
            if k >= len(self.run.shuffled):
                raise NotEvaluable(f"lane {self.run.lane} shuffles more often than lane 0")
            v = self.run.shuffled[k]
        self.shuffles.append(v)
        return v

    def setp(self, op: str, a: tuple[str, ...]) -> None:
        """``setp.CMP[.BOOL].TYPE p[|q], a, b[, c]``: writes p (and q, its negation)."""
        r = self._setp(op, a)
        p, _, q = a[0].partition("|")
        self.set(p, r, 1)
        if q:
            self.set(q, None if r is None else 1 - r, 1)

    def _setp(self, op: str, a: tuple[str, ...]) -> Optional[int]:
        parts = op.split(".")
        cmp, bits = parts[1], _bits(op)
        x, y = self.value(a[1]), self.value(a[2])
        if x is None or y is None or ".f" in op:
            return None
        if _signed(op):
            x, y = _sx(x, bits), _sx(y, bits)
        else:
            x, y = x & ((1 << bits) - 1), y & ((1 << bits) - 1)
        r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
             "ge": x >= y, "lo": x < y, "ls": x <= y, "hi": x > y, "hs": x >= y}.get(cmp)
        if r is None:
            return None
        if len(parts) > 2 and parts[2] in ("and", "or", "xor"):
            c = self.value(a[3].lstrip("!"))
            if c is None:
                return None
            c = 1 - c if a[3].startswith("!") else c
            r = {"and": r and c, "or": r or c, "xor": bool(r) != bool(c)}[parts[2]]
        return int(bool(r))

    def sync(self, ins: _Insn, op: str, out: list[Issued]) -> Optional[str]:
        ops = list(ins.args)
        consts = {x: v for x in ops if (v := self.value(x)) is not None}
        arg = _arg(op, ops, {k: v for k, v in consts.items() if not _INT.match(k)})
        if "?" in arg:
            raise NotEvaluable(f"the operand of {ins.text} is not computed by this run")
        if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
            key = id(ins)
            n = self.tries.get(key, 0)
            ok = n >= self.run.wait_failures
            self.tries[key] = 0 if ok else n + 1
            self.set(ops[0], int(ok), 1)
            if not ok:
                return None  # a wait that has not completed has no effect (9.7.13.15)
        elif ops and re.match(r"^%\w+$", ops[0]) and op.startswith(("mbarrier.arrive",
                                                                       "ld.")):
            self.set(ops[0], None)  # the arrival's state token; a loaded value
        # the barrier operand: the one address of an ``mbarrier.*`` op, the last of a
        # copy or commit that signals an mbarrier; data addresses are not compared
        brackets = [x for x in ops if x.startswith("[")]
        where = self.address(brackets[-1]) if "mbarrier" in op and brackets else None
        out.append(Issued(SyncOp(op, arg), self.pc - 1, where,
                          tuple(self.address(x) for x in brackets)))
        return None

    def execute(self) -> list[Issued]:
        out: list[Issued] = []
        steps = 0
        self.pc = 0
        stop = {self.labels[x] for x in self.run.stop_at if x in self.labels}
        while self.pc < len(self.code) and self.pc not in stop:
            steps += 1
            if steps > self.run.max_steps:
                raise NotEvaluable(f"warp {self.run.warp} of cta {self.run.cta} did not "
                                   f"finish within {self.run.max_steps} instructions")
            ins = self.code[self.pc]
            self.pc += 1
            if ins.guard is not None:
                neg = ins.guard.startswith("!")
                if self.run.spin_exits and ins.op.startswith("bra") and \
                        self.value(ins.guard.lstrip("!")) is None and \
                        self.labels.get(ins.args[0], len(self.code)) < self.pc:
                    continue  # the spin's awaited value has arrived (Run.spin_exits)
                p = self.known(ins.guard.lstrip("!"), f"the guard of {ins.text}")
                if bool(p) == neg:
                    continue
            to = self.step(ins, out)
            if to == "$exit":
                break
            if to is not None:
                if to not in self.labels:
                    raise NotEvaluable(f"branch to {to}, a label this run does not know")
                self.pc = self.labels[to]
        return out


def _tdiv(x: int, y: int) -> int:
    """Integer division rounding toward zero (PTX ``div``); by zero: 0 (unspecified)."""
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


_ARITH = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "mad": lambda x, y, z: x * y + z, "and": lambda x, y: x & y,
    "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y, "not": lambda x: ~x,
    "neg": lambda x: -x, "min": min, "max": max,
    "div": lambda x, y: _tdiv(x, y), "rem": lambda x, y: x - _tdiv(x, y) * y,
    "shl": lambda x, y, b: x << min(y, b), "shr": lambda x, y, b: x >> min(y, b),
}


def run_lane(ptx: str, run: Run) -> tuple[list[Issued], tuple[Optional[int], ...], int]:
    """(the synchronisation ``run``'s lane issues, in order; its ``shfl.sync.idx``
    results; how many ``elect.sync`` it executed).  Raises ``NotEvaluable`` where that
    depends on something the run does not compute."""
    w = _Warp(ptx, run)
    return w.execute(), tuple(w.shuffles), w.elects


def run_warp(ptx: str, run: Run) -> list[list[Issued]]:
    """Every lane of ``run``'s warp (``run.lane`` is ignored), lane 0 first: the
    synchronisation each issues.  Every lane must execute ``elect.sync`` equally often
    (else the elected lane is not known to be lane 0: ``NotEvaluable``)."""
    from dataclasses import replace

    first, shuffled, elects = run_lane(ptx, replace(run, lane=0, shuffled=()))
    out = [first]
    for lane in range(1, 32):
        got, _, n = run_lane(ptx, replace(run, lane=lane, shuffled=shuffled))
        if n != elects:
            raise NotEvaluable(f"warp {run.warp} of cta {run.cta}: lane {lane} executes "
                               f"elect.sync {n} times, lane 0 {elects}")
        out.append(got)
    return out


def launch_shape(ptx: str) -> tuple[Optional[int], Optional[int]]:
    """(warps per CTA from ``.reqntid``, CTAs per cluster from ``.reqnctapercluster``),
    None where the PTX does not say."""
    t = re.search(r"\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", ptx)
    c = re.search(r"\.(?:reqnctapercluster|explicitcluster)\s+(\d+)(?:\s*,\s*(\d+))?"
                  r"(?:\s*,\s*(\d+))?", ptx)

    def prod(m: Optional[re.Match]) -> Optional[int]:
        if not m:
            return None
        n = 1
        for g in m.groups():
            n *= int(g) if g else 1
        return n

    threads = prod(t)
    return (threads // 32 if threads else None), prod(c)


__all__ = ["Run", "Issued", "NotEvaluable", "RANK_SHIFT", "run_lane", "run_warp", "parse",
           "launch_shape"]
